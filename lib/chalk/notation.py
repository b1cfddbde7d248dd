"""The course's symbols, defined once.

Every equation in the book, every formula in ``chalk`` and the notation page use these objects,
so a symbol cannot drift between chapters. All symbols are positive reals: SymPy then simplifies
ratios and square roots without case splits.
"""
from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Entry:
    symbol: sp.Symbol
    meaning: str
    unit: str


def _sym(name: str) -> sp.Symbol:
    return sp.Symbol(name, positive=True)


B = _sym("B")
L = _sym("L")
N_act = _sym(r"N_\text{act}")
N_tot = _sym(r"N_\text{tot}")
s = _sym("s")
b_w = _sym("b_w")
b_kv = _sym(r"b_\text{kv}")
F = _sym("F")
W = _sym("W")
C = _sym("C")
r = _sym("r")
n_layers = _sym(r"n_\text{layers}")
d_model = _sym(r"d_\text{model}")
d_head = _sym(r"d_\text{head}")
n_kv = _sym(r"n_\text{kv}")
n_heads = _sym(r"n_\text{heads}")
d_ff = _sym(r"d_\text{ff}")
n_vocab = _sym(r"n_\text{vocab}")
d_c = _sym("d_c")
d_cq = _sym("d_c'")
d_R = _sym("d_R")
b_el = _sym(r"b_\text{el}")
k = _sym("k")
E = _sym("E")
P = _sym("P")
m = _sym("m")
S = _sym("S")
D = _sym("D")
n = _sym("n")
p_chip = _sym(r"p_\text{chip}")
n_chips = _sym(r"n_\text{chips}")
w = _sym("w")
n_G = _sym(r"n_\text{G}")
n_loc = _sym(r"n_\text{loc}")
g_kv = _sym(r"g_\text{kv}")
d_state = _sym(r"d_\text{state}")
d_conv = _sym(r"d_\text{conv}")
d_inner = _sym(r"d_\text{inner}")
r_dt = _sym(r"r_{\Delta}")
N_emb = _sym(r"N_\text{emb}")
eta_c = _sym(r"\eta_\text{c}")
eta_m = _sym(r"\eta_\text{m}")
p_in = _sym(r"p_\text{in}")
p_out = _sym(r"p_\text{out}")
L_star = _sym(r"L^\star")
T_hold = _sym(r"T_\text{hold}")
T = _sym("T")
lam = _sym(r"\lambda")
ell = _sym(r"\ell")
E_0 = _sym("E_0")
A = _sym("A")
B_0 = _sym("B_0")
alpha = _sym(r"\alpha")
beta = _sym(r"\beta")
C_train = _sym(r"C_\text{train}")
D_RL = _sym(r"D_\text{RL}")
D_inf = _sym(r"D_\text{inf}")
kappa = _sym(r"\kappa")
eta_RL = _sym(r"\eta_\text{RL}")
eta_inf = _sym(r"\eta_\text{inf}")
u = _sym("u")
x = _sym("x")
a = _sym("a")
b = _sym("b")
p = _sym("p")
q = _sym("q")
n_tok = _sym(r"n_\text{tok}")
b_act = _sym(r"b_\text{act}")
b_logit = _sym(r"b_\text{logit}")
n_bits = _sym(r"n_\text{bits}")
n_exp = _sym(r"n_\text{exp}")
n_red = _sym(r"n_\text{red}")
n_step = _sym(r"n_\text{step}")
W_up = _sym(r"W_\text{up}")
W_out = _sym(r"W_\text{out}")
z_E = _sym("z_E")
n_sh = _sym(r"n_\text{sh}")
v = _sym("v")
L_stage = _sym(r"L_\text{stage}")
t_F = _sym("t_F")
t_B = _sym("t_B")
rho = _sym(r"\rho")
n_DP = _sym(r"n_\text{DP}")
n_TP = _sym(r"n_\text{TP}")
n_CP = _sym(r"n_\text{CP}")
b_g = _sym("b_g")
f_att = _sym(r"f_\text{att}")
F_att = _sym(r"F_\text{att}")
N_rout = _sym(r"N_\text{routed}")
c_chip = _sym("c")
W_chip = _sym(r"W_\text{chip}")
b_opt = _sym(r"b_\text{opt}")
gamma = _sym(r"\gamma")
n_dim = _sym(r"n_\text{dim}")
n_side = _sym(r"n_\text{side}")
z_gamma = _sym(r"z_\gamma")
p_hold = _sym(r"p_\text{hold}")
M_dom = _sym("M")
alpha_link = _sym(r"\alpha_\text{link}")
eta_link = _sym(r"\eta_\text{link}")

TABLE: tuple[Entry, ...] = (
    Entry(B, "batch: sequences in one decode step (one new token each)", "sequences"),
    Entry(L, "context length", "tokens"),
    Entry(N_act, "active parameters (used for each token)", "parameters"),
    Entry(N_tot, "total parameters (all experts)", "parameters"),
    Entry(s, r"sparsity factor $N_\text{tot}/N_\text{act}$", "–"),
    Entry(b_w, "bytes per weight (BF16 2, FP8 1, FP4 0.5)", "B"),
    Entry(b_kv, "KV-cache bytes per token, all layers", "B/token"),
    Entry(F, "peak dense FLOP/s of the chips serving one replica", "FLOP/s"),
    Entry(W, "HBM bandwidth of those chips", "B/s"),
    Entry(C, "memory capacity (of a tier)", "B"),
    Entry(r, "hardware intensity $F/W$", "FLOP/B"),
    Entry(n_layers, "number of layers", "–"),
    Entry(d_model, "model (residual) width", "–"),
    Entry(d_head, "width of one attention head", "–"),
    Entry(n_kv, "key/value heads per layer", "–"),
    Entry(n_heads, "query heads per layer", "–"),
    Entry(d_ff, "hidden width of a feed-forward block (of one expert in an MoE)", "–"),
    Entry(n_vocab, "vocabulary size", "tokens"),
    Entry(d_c, "MLA: width of the compressed key/value latent that is cached", "–"),
    Entry(d_cq, "MLA: width of the compressed query latent", "–"),
    Entry(d_R, "MLA: width of the decoupled RoPE key, cached beside the latent", "–"),
    Entry(b_el, "bytes per cached key/value element", "B"),
    Entry(k, "experts activated per token", "–"),
    Entry(E, "expert-parallel degree", "chips"),
    Entry(P, "pipeline stages", "–"),
    Entry(m, "micro-batches", "–"),
    Entry(S, "scale-up domain size", "chips"),
    Entry(D, r"training tokens ($D_\text{pre}$, $D_\text{RL}$, $D_\text{inf}$)", "tokens"),
    Entry(n, "new tokens per sequence in one pass (decode 1, prefill many)", "tokens"),
    Entry(p_chip, "rental price of one chip", "$/h"),
    Entry(n_chips, "chips serving one model replica", "chips"),
    Entry(w, "sliding-window width of a local attention layer", "tokens"),
    Entry(n_G, "layers with full (global) attention, whose KV cache grows with context", "–"),
    Entry(n_loc, "layers with sliding-window (local) attention, whose KV cache stops at $w$", "–"),
    Entry(g_kv, "layers sharing one KV cache (cross-layer sharing; 1 = none)", "–"),
    Entry(d_state, "state-space (Mamba) layer: state width per channel", "–"),
    Entry(d_conv, "state-space layer: causal convolution width", "–"),
    Entry(d_inner, "state-space layer: inner (expanded) width", "–"),
    Entry(r_dt, r"state-space layer: rank of the step-size ($\Delta$) projection", "–"),
    Entry(N_emb, "input-embedding parameters: a table lookup, no FLOPs (0 when tied to the output layer)", "parameters"),
    Entry(eta_c, "compute efficiency: achieved over peak FLOP/s (MFU); 1 = roofline bound", "–"),
    Entry(eta_m, "memory efficiency: achieved over peak HBM bandwidth; 1 = roofline bound", "–"),
    Entry(p_in, "API list price of input tokens", "$/Mtok"),
    Entry(p_out, "API list price of output tokens", "$/Mtok"),
    Entry(L_star, "context where a provider's price steps up, read as the balance context", "tokens"),
    Entry(T_hold, "how long a provider holds a prompt cache", "s"),
    Entry(T, "interval between departing decode steps (the train timetable)", "s"),
    Entry(lam, "arrival rate of new requests", "requests/s"),
    Entry(ell, "pre-training loss (cross-entropy), or the loss a model must reach", "nats/token"),
    Entry(E_0, "Chinchilla fit: irreducible loss, the entropy of text", "nats/token"),
    Entry(A, "Chinchilla fit: coefficient of the parameter term $A/N^\\alpha$", "nats/token"),
    Entry(B_0, "Chinchilla fit: coefficient of the data term $B_0/D^\\beta$", "nats/token"),
    Entry(alpha, "Chinchilla fit: exponent of the parameter term", "–"),
    Entry(beta, "Chinchilla fit: exponent of the data term", "–"),
    Entry(C_train, r"training compute budget, $6 N_\text{act} D$", "FLOP"),
    Entry(D_RL, "tokens generated in RL rollouts", "tokens"),
    Entry(D_inf, "tokens served over the model's life (inference)", "tokens"),
    Entry(kappa, "RL FLOPs per active parameter per rollout token: 2 (generate only) to 6 (train on all)", "FLOP"),
    Entry(eta_RL, "efficiency of RL machine time relative to pre-training (1 = as efficient)", "–"),
    Entry(eta_inf, "efficiency of inference machine time relative to pre-training (1 = as efficient)", "–"),
    Entry(u, r"share of the reducible loss $\ell - E_0$ in the parameter term $A/N^\alpha$", "–"),
    Entry(x, "equal-cost heuristic: the quantity traded off (for example $N$)", "–"),
    Entry(a, r"equal-cost heuristic: coefficient of the rising cost $a x^p$", "–"),
    Entry(b, r"equal-cost heuristic: coefficient of the falling cost $b x^{-q}$", "–"),
    Entry(p, "equal-cost heuristic: exponent of the rising cost", "–"),
    Entry(q, "equal-cost heuristic: exponent of the falling cost", "–"),
    Entry(n_tok, "tokens in one training micro-batch (sequences × sequence length)", "tokens"),
    Entry(b_act, "bytes per stored activation element (BF16 2, FP32 4)", "B"),
    Entry(b_logit, "bytes per logit (FP32 4, BF16 2)", "B"),
    Entry(n_bits, "bits in one cipher block", "bits"),
    Entry(n_exp, "routed experts in one MoE layer", "–"),
    Entry(n_red, "redundant expert copies placed beside the routed experts (hot experts served twice)", "–"),
    Entry(n_step, "tokens one forward step pushes through an MoE layer, over all its chips ($B n$)", "tokens"),
    Entry(W_up, "scale-up bandwidth of one chip (NVLink, ICI), per direction", "B/s"),
    Entry(W_out, "scale-out bandwidth of one chip (its NIC or data-centre share), per direction", "B/s"),
    Entry(z_E, "expected largest of $E$ independent standard normal draws", "–"),
    Entry(n_sh, "shared experts in one MoE layer, which every token passes through", "–"),
    Entry(v, "model chunks per device in an interleaved pipeline schedule (1 = not interleaved)", "–"),
    Entry(L_stage, "MoE layers in one pipeline stage", "–"),
    Entry(t_F, "forward time of one micro-batch on one pipeline stage", "s"),
    Entry(t_B, "backward time of one micro-batch on one pipeline stage", "s"),
    Entry(rho, r"scale-up over scale-out bandwidth per chip, per direction: $W_\text{up}/W_\text{out}$", "–"),
    Entry(n_DP, "data-parallel degree", "chips"),
    Entry(n_TP, "tensor-parallel degree", "chips"),
    Entry(n_CP, "context (sequence) parallel degree", "chips"),
    Entry(b_g, "bytes per gradient element in the data-parallel all-reduce (BF16 2, FP32 4)", "B"),
    Entry(f_att, "decode attention FLOPs per cached token, for one new token, all layers", "FLOP/token"),
    Entry(F_att, "peak FLOP/s of one replica's chips in the number format attention runs in (BF16)", "FLOP/s"),
    Entry(N_rout, "parameters of all routed experts, all MoE layers (0 for a dense model)", "parameters"),
    Entry(c_chip, "memory one chip must hold: its share of the weights and of the KV cache", "B"),
    Entry(W_chip, "HBM bandwidth of one chip ($W$ of a replica of $S$ chips is $S\\,W_\\text{chip}$)", "B/s"),
    Entry(b_opt, "optimizer-state bytes per parameter, master copy included (mixed-precision Adam 12)", "B"),
    Entry(gamma, "capacity factor: the tokens an expert copy may take, over its mean load", "–"),
    Entry(n_dim, "dimensions of a torus scale-up network (ICI: 2 or 3)", "–"),
    Entry(n_side, "chips along the longest side of a torus", "chips"),
    Entry(z_gamma, "an expert's capacity above its mean load, in standard deviations of that load", "–"),
    Entry(p_hold, "price of holding one byte for one second in a memory or storage tier", "$/(B s)"),
    Entry(M_dom, "most scale-up domains one token's routed experts may span (node-limited routing; "
                 "all $E/S$ of them when routing is not limited)", "domains"),
    Entry(alpha_link, "fixed time of one dispatch or one combine call, whatever bytes it moves", "s"),
    Entry(eta_link, "share of a link's nominal per-direction rate that an all-to-all achieves", "–"),
)


def latex(expr) -> str:
    """LaTeX of a symbol or expression, as the book prints it."""
    return sp.latex(expr)
