"""Answer key of problem set 7 (ciphers and reversible networks): ``exercises/07_ciphers_revnets.ipynb``.

Expected values and typical wrong answers are computed from ``chalk.reversible`` and the catalog
when a check runs. The scenario constants below are the inputs the problem set states; they
differ from the chapter's examples (and from the explorer's menus) so that no answer is printed
there.
"""

import numpy as np

from ... import reversible as rv
from ...catalog import models
from ..exercises import Choice, Choices, Exercise, Mistake

SMALL_BLOCK_BITS = 4
"""Block width of ``flip_random_4bit``: small enough that the answer is visibly not 1/2."""
PMF_BITS = 6
"""Block width of ``pmf_one_bit``."""

RESIDUAL = dict(depth=24, width=32, scale=3.0)
"""The untrained residual network of ``residual_regime`` (``rv.residual_sensitivity``'s)."""
RESIDUAL_SEEDS = range(10)
"""The seeds the prompt of ``residual_regime`` asks about."""

PRESENT_SBOX = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)
"""The PRESENT cipher's S-box (Bogdanov et al., CHES 2007), as the problem set prints it."""
TRAIL_INPUT, TRAIL_ROUNDS = 0x00A0, 2
"""``characteristic_prob``: the input difference and rounds of the characteristic followed through
a 16-bit SPN with PRESENT's S-box and Heys' bit permutation (``rv.HEYS_PBOX``)."""
LOSSY_TABLE = (0x7, 0x2, 0xC, 0x7, 0x9, 0x0, 0xE, 0x2, 0x5, 0xB, 0xC, 0x3, 0x9, 0xF, 0x6, 0x2)
"""``spn_or_feistel``: a 4-bit table that is not a permutation (several nibbles share an output)."""

COUPLINGS = (
    rv.Coupling(np.sin, lambda t: t ** 2 / 2),
    rv.Coupling(lambda t: np.tanh(3 * t), lambda t: np.exp(-t ** 2)),
)
"""``coupling_inverse``: two RevNet couplings, applied in this order; neither F is invertible."""
COUPLED_OUTPUT = (0.4, 0.3)
"""The output (y1, y2) of the two couplings."""

PEAK_MODEL, PEAK_TOKENS = "chinchilla-70b", 4 * 2048
"""``peak_ratio``: a GPT-style layer (no gated MLP, so Korthikanti's 34 bytes apply) that the
chapter's explorer does not offer. The ratio does not depend on the tokens."""
POLICY_MODEL, POLICY_TOKENS, POLICY_BUDGET_GB = "gpt-3-175b", 2 * 2048, 11.0
"""``memory_policy``: GPT-3 175B, a micro-batch of two 2,048-token sequences, 11 GB for activations."""
REUSE_MODEL, REUSE_BUDGET = "llama-2-13b", 1.0e23
"""``reuse_tokens``: a compute budget in FLOPs for a model of Llama 2 13B's shape."""
SMALL, SMALL_SEQ = "llama-3.1-8b", 32768
"""Model and sequence length of ``selective_overhead``."""


def _ideal(bits):
    return float(rv.RANDOM_PERMUTATION_FLIP.subs(rv.n_bits, bits))


# --- mixing ----------------------------------------------------------------------------------------
def residual_amplification() -> np.ndarray:
    """The factor by which the ``RESIDUAL`` network amplifies a small input change, one per seed."""
    return np.array([rv.residual_sensitivity(**RESIDUAL, seed=s)[-1] for s in RESIDUAL_SEEDS])


# --- differences ---------------------------------------------------------------------------------
def characteristic():
    """(probability, block differences) of the ``characteristic_prob`` trail."""
    return rv.greedy_characteristic(TRAIL_INPUT, TRAIL_ROUNDS, sbox=PRESENT_SBOX)


def active_sboxes() -> int:
    """S-boxes the ``characteristic_prob`` trail passes a nonzero difference through, all rounds."""
    return sum(d >> s & 0xF != 0 for d in characteristic()[1][:-1] for s in range(0, 16, 4))


# --- couplings -----------------------------------------------------------------------------------
def recovered_input() -> tuple[float, float]:
    """(x1, x2) whose image under ``COUPLINGS`` is ``COUPLED_OUTPUT``: invert the last coupling first."""
    y = tuple(np.asarray(v, dtype=float) for v in COUPLED_OUTPUT)
    for coupling in reversed(COUPLINGS):
        y = coupling.inverse(*y)
    return float(y[0]), float(y[1])


def _x1_inverting_in_forward_order():
    y = tuple(np.asarray(v, dtype=float) for v in COUPLED_OUTPUT)
    for coupling in COUPLINGS:
        y = coupling.inverse(*y)
    return float(y[0])


def _x1_using_y2_for_x2():
    """Each coupling undone as x1 = y1 - F(y2), x2 = y2 - G(y1): F fed the output, not the recovered x2."""
    y1, y2 = (np.asarray(v, dtype=float) for v in COUPLED_OUTPUT)
    for c in reversed(COUPLINGS):
        y1, y2 = y1 - c.f(y2), y2 - c.g(y1)
    return float(y1)


def _x1_running_forward():
    y = tuple(np.asarray(v, dtype=float) for v in COUPLED_OUTPUT)
    for coupling in COUPLINGS:
        y = coupling.forward(*y)
    return float(y[0])


# --- memory and FLOPs ------------------------------------------------------------------------------
def _peak(model, tokens, policy, **kw):
    return rv.activation_memory(model, tokens, policy, peak=True, **kw) / 1e9


def _kept(model, tokens, policy):
    return rv.activation_memory(model, tokens, policy) / 1e9


def _logits_gb(model, tokens):
    return float(rv.LOGIT_BYTES.subs({rv.n_tok: tokens, rv.n_vocab: models.get(model).vocab, rv.b_logit: 4})) / 1e9


def _inversion_gb(model, tokens):
    m = models.get(model)
    return float((rv.TRANSIENT_BYTES["reversible"] - rv.TRANSIENT_BYTES["block"]).subs(
        {rv.n_tok: tokens, rv.d_model: m.d_model, rv.b_act: 2})) / 1e9


def _stream_gb(model, tokens):
    """One layer-sized BF16 array, tokens x d_model."""
    return tokens * models.get(model).d_model * 2 / 1e9


def _ratio_without_gradients():
    """The peak ratio with no gradient buffers counted: 2 fewer arrays for block, 4 for reversible."""
    g = _stream_gb(PEAK_MODEL, PEAK_TOKENS)
    return ((_peak(PEAK_MODEL, PEAK_TOKENS, "block") - 2 * g)
            / (_peak(PEAK_MODEL, PEAK_TOKENS, "reversible") - 4 * g))


def peak_ratio(layers: int | None = None) -> float:
    """Block rematerialisation's peak over reversible layers' for ``PEAK_MODEL`` (at ``layers``)."""
    m = models.get(PEAK_MODEL)
    peak = {p: rv.activation_bytes(PEAK_TOKENS, m.d_model, layers or m.n_layers, p, peak=True, vocab=m.vocab)
            for p in ("block", "reversible")}
    return peak["block"] / peak["reversible"]


def policy_memory() -> dict[str, dict[str, float]]:
    """GB kept between layers and at the peak, per policy, in the ``memory_policy`` scenario."""
    return {kind: {p: f(POLICY_MODEL, POLICY_TOKENS, p) for p in rv.POLICIES}
            for kind, f in (("kept", _kept), ("peak", _peak))}


def policy_winner() -> str:
    """The policy of fewest training FLOPs whose peak fits ``POLICY_BUDGET_GB`` (ties: the one that
    inverts nothing), or "none"."""
    peak = policy_memory()["peak"]
    fits = [p for p in rv.POLICIES if peak[p] <= POLICY_BUDGET_GB]
    return min(fits, key=lambda p: (rv.recompute_overhead(p), p == "reversible")) if fits else "none"


NAIVE_REVERSIBLE_FLOPS = rv.TRAINING_FLOPS_BY_POLICY["reversible"] + rv.FORWARD_FLOPS
"""A reversible backward that inverts each coupling, then runs F and G again to differentiate them,
reusing nothing: one more forward than ``TRAINING_FLOPS_BY_POLICY["reversible"]``, 10ND."""


def tokens_within(budget: float, flops) -> float:
    """Tokens a compute ``budget`` trains for ``REUSE_MODEL`` at ``flops`` (an expression in N and D)."""
    per_token = float(flops.subs({rv.N_act: models.get(REUSE_MODEL).active_params, rv.D: 1}))
    return budget / per_token


def _reuse_gain():
    return (tokens_within(REUSE_BUDGET, rv.TRAINING_FLOPS_BY_POLICY["reversible"])
            - tokens_within(REUSE_BUDGET, NAIVE_REVERSIBLE_FLOPS))


def _attention_vs_weights(model, seq_len):
    """The recompute's attention FLOPs over a step that counts the weights only (6N per token)."""
    m = models.get(model)
    attention = float(rv.ATTENTION_FORWARD_PER_TOKEN.subs(
        {rv.n_layers: m.n_attention_layers, rv.n_heads: m.n_heads, rv.d_head: m.d_head, rv.L: seq_len / 2}))
    return attention / (6 * m.active_params)



EXERCISES = (
    Exercise(
        id="flip_random_4bit", expected=lambda: _ideal(SMALL_BLOCK_BITS), topic="avalanche of a random permutation",
        unit="fraction of the output bits", rel_tol=0.01,
        hint="the new output is uniform over the 2^n - 1 blocks other than the old one: average the "
             "number of differing bits over those.",
        mistakes=(Mistake("1/2 is the limit for large blocks; the output cannot stay the same, which "
                          "excludes a block with 0 bits flipped.", value=lambda: 0.5),)),
    Exercise(
        id="pmf_one_bit", expected=lambda: float(rv.random_permutation_flip_pmf(PMF_BITS)[1]),
        topic="avalanche of a random permutation", unit="probability", rel_tol=0.005,
        hint="count the blocks one bit away from the old output, out of all the blocks it can become.",
        mistakes=(Mistake("a permutation never maps two inputs to one output: divide by 2^n - 1, not 2^n.",
                          value=lambda: PMF_BITS / 2 ** PMF_BITS),)),
    Choices(
        id="avalanche_criteria", topic="avalanche criteria",
        options={
            "a": "the avalanche criterion",
            "b": "the strict avalanche criterion",
            "c": "the bit independence criterion",
            "d": "that no statistical test tells the function from a random permutation",
        },
        answer={"a", "b"},
        feedback={
            "a": "the mean flip fraction is the average of the 256 cells; every cell within 0.01 of 1/2 puts "
                 "the average there too. The strict criterion implies the plain one.",
            "b": "that is exactly what the table measures: for every input bit, each output bit flips with "
                 "probability 1/2.",
            "c": "the table holds one output bit at a time. Copy the low byte of a good 16-bit cipher into its "
                 "high byte: every cell stays near 1/2, yet output bits j and j + 8 always flip together. Bit "
                 "independence needs the joint flips of pairs of output bits.",
            "d": "one table of marginal probabilities is one test; the copied-byte function passes it and fails "
                 "the pairwise one, and passing every avalanche test still says nothing about a differential.",
        },
        hint="ask what the table records: one flip probability per (input bit, output bit) cell. Which "
             "criteria are statements about those cells or their average, and which about several output "
             "bits at once?"),
    Choice(
        id="residual_regime", topic="does a random network avalanche",
        options={
            "a": "well-conditioned: the change stays within a few times its size, as at a trainable initialisation",
            "b": "chaotic: the change grows a hundredfold or more on every seed, a real-valued avalanche whose "
                 "gradients explode with it",
            "c": "contracting: the change shrinks layer by layer until the output ignores it",
            "d": "it depends on the seed: some of these networks are well-conditioned, others chaotic",
        },
        answer="b",
        feedback={
            "a": "that is the regime at gain 1/2 or below for this depth; each layer multiplies a small change "
                 "by I + J, with J growing with the gain, and at gain 3 that product compounds over 24 layers.",
            "c": "the identity path of a residual layer passes the change on unshrunk, and the branch adds to "
                 "it: contraction needs a plain (non-residual) network at small gain.",
            "d": "the factor spreads over orders of magnitude from seed to seed, but its smallest value over "
                 "the ten seeds is still above 100: the regime does not change.",
        },
        hint="run rv.residual_sensitivity for each seed and look at the last entry, the output change over "
             "the input change."),
    Exercise(
        id="characteristic_prob", expected=lambda: characteristic()[0], judgement=True,
        topic="following a differential characteristic", unit="probability", rel_tol=0.01,
        hint="round 1: one active S-box, its DDT entry / 16. Permute the S-box's output difference bit by "
             "bit: each set bit lands in a different S-box of round 2, and each of those is active. "
             "Multiply every active S-box's probability.",
        mistakes=(Mistake("that stops after round 1; round 2's active S-boxes multiply in too.", factor=16),
                  Mistake("the permutation sends each set bit of round 1's output to a different S-box: "
                          "round 2 has as many active S-boxes as that output has set bits.", factor=4),
                  Mistake("those are DDT counts; each is a probability once divided by the 16 inputs.",
                          value=lambda: characteristic()[0] * 16 ** active_sboxes()))),
    Choice(
        id="spn_or_feistel", topic="SPN against Feistel",
        options={
            "a": "a Feistel network whose round function applies T to each nibble of R XOR k",
            "b": "a substitution-permutation network with T as its S-box",
            "c": "both: decryption only needs each round's output, not T's inverse",
            "d": "neither: a cipher's nonlinear layer must be a bijection",
        },
        answer="a",
        feedback={
            "b": "that would hold if T were a permutation: an SPN decrypts by running the inverse S-box, and T "
                 "maps two nibbles to the same value, so the "
                 "S-box layer loses information and no key undoes it. AES and PRESENT use bijective S-boxes "
                 "for that reason.",
            "c": "true of Feistel, where decryption evaluates F again on the half passed through unchanged; an "
                 "SPN has no half passed through, so it must invert the S-box itself.",
            "d": "a Feistel round, (L, R) -> (R, L XOR F(R)), is a bijection whatever F is: F is only ever "
                 "evaluated, never inverted.",
        },
        hint="write out how each construction decrypts one round, and ask which step would need T's inverse."),
    Exercise(
        id="coupling_inverse", expected=lambda: recovered_input()[0], topic="inverting a coupling",
        unit="value of x1", rel_tol=0.005,
        hint="undo the second coupling first; within a coupling recover x2 = y2 - G(y1) first, then "
             "x1 = y1 - F(x2). F and G are only evaluated, never inverted.",
        mistakes=(Mistake("the couplings must be undone last one first: the second coupling's output is what "
                          "you were given.", value=_x1_inverting_in_forward_order),
                  Mistake("F acts on x2, which you must recover first (x2 = y2 - G(y1)); F(y2) is not F(x2).",
                          value=_x1_using_y2_for_x2),
                  Mistake("that runs the couplings forward again; the inverse subtracts F and G.",
                          value=_x1_running_forward))),
    Exercise(
        id="peak_ratio", expected=peak_ratio, topic="peak activation memory",
        unit="ratio", rel_tol=0.005,
        hint="at the peak both policies also hold the running layer's intermediates (34 bytes per token "
             "per d_model), its gradient buffers (in and out, per residual stream), the head's input (one "
             "layer-sized array) and the FP32 logits (tokens x vocab x 4); reversible layers also hold the "
             "recovered inputs beside their two kept arrays.",
        mistakes=(Mistake("that is the ratio of what is kept between layers; the peak adds the running layer "
                          "and the logits to both.",
                          value=lambda: (_kept(PEAK_MODEL, PEAK_TOKENS, "block")
                                         / _kept(PEAK_MODEL, PEAK_TOKENS, "reversible"))),
                  Mistake("the logits are held in FP32 here, 4 bytes each.",
                          value=lambda: (_peak(PEAK_MODEL, PEAK_TOKENS, "block", logit_bytes=2)
                                         / _peak(PEAK_MODEL, PEAK_TOKENS, "reversible", logit_bytes=2))),
                  Mistake("the head's logits, tokens x vocabulary, are held under every policy: add them to both.",
                          value=lambda: ((_peak(PEAK_MODEL, PEAK_TOKENS, "block") - _logits_gb(PEAK_MODEL, PEAK_TOKENS))
                                         / (_peak(PEAK_MODEL, PEAK_TOKENS, "reversible")
                                            - _logits_gb(PEAK_MODEL, PEAK_TOKENS)))),
                  Mistake("both policies hold gradient buffers while a layer's backward runs: two for block "
                          "(dy, dx), four for reversible layers (one pair per stream).", value=_ratio_without_gradients),
                  Mistake("a coupling's backward holds four more layer-sized buffers than block's: the recovered "
                          "inputs (x1, x2) and the second stream's gradients.",
                          value=lambda: (_peak(PEAK_MODEL, PEAK_TOKENS, "block")
                                         / (_peak(PEAK_MODEL, PEAK_TOKENS, "reversible")
                                            - _inversion_gb(PEAK_MODEL, PEAK_TOKENS)))))),
    Choice(
        id="memory_policy", topic="which memory policy wins",
        options={
            "a": "store every intermediate: no recomputation, 6ND",
            "b": "block rematerialisation: the layer inputs it keeps fit, at 8ND with exact gradients",
            "c": "reversible layers: the only policy whose peak fits",
            "d": "none: the running layer and the logits alone exceed the budget, so shrink the micro-batch",
        },
        answer="c",
        feedback={
            "a": "storing everything keeps 34 bytes per token per unit of width in every layer, over a hundred "
                 "GB here: it wins only when memory is plentiful.",
            "b": "the layer inputs are what block rematerialisation keeps between layers, and they do fit; but "
                 "its peak adds the layer being rebuilt, the head's input and the logits, and that does not.",
            "d": "the running layer, the head's input and the logits are shared by every policy, but they are "
                 "a few GB here; what differs is what is kept between layers, and reversible layers keep two "
                 "arrays.",
        },
        hint="compare each policy's peak, not what it keeps between layers, with the budget "
             "(rv.activation_memory(..., peak=True)); then prefer the fewest FLOPs among those that fit."),
    Exercise(
        id="reuse_tokens", expected=_reuse_gain, judgement=True, topic="8ND against 10ND",
        unit="tokens", rel_tol=0.02,
        hint="count the forward passes of each backward: the naive one inverts (one forward of F and G), runs "
             "F and G again to differentiate them (another), then backpropagates (4ND); the reusing one skips "
             "the second forward. Tokens = budget / (FLOPs per token) for each; subtract.",
        mistakes=(Mistake("that is what the naive implementation trains; the question asks how many more "
                          "reuse trains.", value=lambda: tokens_within(REUSE_BUDGET, NAIVE_REVERSIBLE_FLOPS)),
                  Mistake("that is what the reusing implementation trains; subtract the naive one's tokens.",
                          value=lambda: tokens_within(REUSE_BUDGET, rv.TRAINING_FLOPS_BY_POLICY["reversible"])),
                  Mistake("reuse saves one forward, not the whole recomputation: with reuse the step still "
                          "costs 8ND, not 6ND.",
                          value=lambda: (tokens_within(REUSE_BUDGET, rv.TRAINING_FLOPS)
                                         - tokens_within(REUSE_BUDGET, NAIVE_REVERSIBLE_FLOPS))),
                  Mistake("the naive backward recomputes twice (inversion, then F and G again): 10ND, "
                          "not 8ND against 6ND.",
                          value=lambda: (tokens_within(REUSE_BUDGET, rv.TRAINING_FLOPS)
                                         - tokens_within(REUSE_BUDGET, rv.TRAINING_FLOPS_BY_POLICY["reversible"]))))),
    Exercise(
        id="selective_overhead", expected=lambda: rv.selective_recompute_overhead(SMALL, SMALL_SEQ),
        topic="selective recomputation", unit="fraction of the step's FLOPs", rel_tol=0.01,
        hint="the recompute is one forward of the attention core: per token and layer, 4 n_heads d_head FLOPs "
             "per attended token, over seq_len / 2 tokens on average (causal). The step costs three forwards "
             "of the weights (2N) and of that attention.",
        mistakes=(Mistake("that is full recomputation, one whole forward; selective recomputes only the "
                          "attention scores and their weighted sum.", value=lambda: 1 / 3),
                  Mistake("causal attention skips the masked half: a token attends to seq_len / 2 tokens "
                          "on average.",
                          value=lambda: rv.selective_recompute_overhead(SMALL, SMALL_SEQ, causal=False)),
                  Mistake("the step also pays for attention, forward and backward: count it in the "
                          "denominator, 3 (2N + attention) per token.",
                          value=lambda: _attention_vs_weights(SMALL, SMALL_SEQ)))),
)
