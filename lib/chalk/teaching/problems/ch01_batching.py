"""Answer key of problem set 1 (batching): ``exercises/01_batching.ipynb``.

Each exercise's id is the variable the student assigns. Expected values and the typical wrong
answers are computed from ``chalk`` when a check runs, so a change to the catalog or a formula
moves the key with it. The scenario constants below are the inputs the problem set states. They
differ from the chapter's and the cards' (other models, chips, number formats and contexts), so
no answer is printed there: the chapter works DeepSeek-V3 on H100, H200 and GB200 and Llama 3 70B
on H100; here come Kimi K2, Qwen3-235B-A22B and Llama 3.1, and DeepSeek-V3 on H800 and MI300X.

The step time is the roofline of ``chalk.roofline``: matmuls and attention (at the BF16 rate
unless a prompt says otherwise) against the weights a step touches and the KV cache it reads.
"""
import dataclasses
import math

import numpy as np

from ... import moe, roofline
from ...catalog import hardware, models, prices
from ...catalog.quoted import USD_PER_CHIP_HOUR
from ...errors import ChalkError
from ...notation import F_att, N_act, W, b_kv, f_att, r
from ..exercises import Choice, Choices, Exercise, Mistake

DEEPSEEK, KIMI, QWEN3 = "deepseek-v3", "kimi-k2", "qwen3-235b-a22b"
LLAMA_8B, LLAMA_70B = "llama-3.1-8b", "llama-3.1-70b"
H100, H200, H800, GB200, MI300X = "H100-SXM", "H200", "H800", "GB200", "MI300X"

K16 = dict(models.get(KIMI).moe, experts_per_token=16)
"""``sparsity_k16``: Kimi K2 with each token routed to 16 of its 384 experts, a hypothetical model
(every catalog model's s is printed on the site's model page)."""
BALANCE = dict(chip=H100, model=KIMI, dtype="bf16")
"""``balance_h100``: B* without KV, Kimi K2 in BF16 on an H100 (an NVIDIA chip, for the sparse-FLOP/s slip)."""
LSTAR = dict(chip=H100, model=KIMI, dtype="bf16")
"""``lstar_h100``: an MLA model with half DeepSeek-V3's heads, so half its attention FLOPs."""
KV = dict(chip=H800, model=DEEPSEEK, dtype="fp8", context=4096)
"""``balance_kv_h800``: DeepSeek's own deployment, FP8 matmuls and BF16 attention (FlashMLA)."""
SCAN = dict(chip=H200, model=LLAMA_8B, context=256)
"""The system of ``min_batch_compute``, the exercise solved by a scan."""
FLOOR = dict(chip=GB200, model=KIMI, dtype="fp8", chips=hardware.get(GB200).scale_up_domain)
"""``latency_floor_ms``: one sequence of Kimi K2 on a whole GB200 NVL72 rack."""
SHARE = dict(model=QWEN3, batch=12)
"""``experts_read_qwen3``: the routed experts a step of 12 tokens touches."""
W4A16 = dict(chip=H100, model=QWEN3, dtype="bf16", b_w=hardware.bytes_per_weight("fp4"))
"""``b1_cost_ratio``: 4-bit weights (half a byte) dequantised to BF16 for the matmuls, a format
pair no chip table in the course prints."""
SERVE = dict(chip=MI300X, model=DEEPSEEK, batch=1024, context=8192, dtype="fp8", chips=8,
             usd_per_chip_hour=USD_PER_CHIP_HOUR)
"""The replica of ``usd_per_mtok``: one 8-GPU MI300X server."""
PRICED = dict(chip=H200, model=DEEPSEEK, dtype="fp8", chips=16,
              usd_per_chip_hour=hardware.get(H200).rental_usd_per_hour[0])
"""``batch_from_price``: two 8-GPU H200 nodes at the low end of the H200's published rental range.
The first covered batch clears the price by 0.7% and the one before misses it by 0.7%, so inputs a
little off (a rounded parameter count) still land on it; on H800s at $2 the answer sat 0.03% inside
the price (tests/test_problems_ch01.py)."""
PRICE = prices.get("deepseek/deepseek-reasoner@2025-02")
"""The published output price ``batch_from_price`` starts from (DeepSeek-R1, V3's architecture)."""
PLOT = dict(chip=H100, model=LLAMA_70B, context=512, chips=8)
"""The system drawn in the plot-reading exercise ``kink_batch``."""
FAST = dict(chip=H100, model=LLAMA_70B, dtype="bf16", chips=8, context=32768, batch=40)
"""``fast_batch_shrink``: normal service past L*, a batch of 32k-token sequences near the most that fit."""
FAST_TIER = prices.get("anthropic/claude-opus-4.6")
"""The fast mode the lecture quotes; its speed and price ratios come from the price list."""
FAST_SPEED, FAST_PRICE = FAST_TIER.fast_speedup, FAST_TIER.fast_multipliers[1]
REGIME = dict(chip=H200, model=DEEPSEEK, batch=2048, context=16384, dtype="fp8", chips=16, kv_bytes_per_element=1)
"""``regime_h200`` and ``tokens_per_s_h200``: DeepSeek-V3 on two 8-GPU H200 nodes with an FP8 cache
and attention at the BF16 rate, long contexts, as many sequences as a large deployment runs."""
LSTAR_CASES = dict(
    a=dict(chip=H200, model=KIMI, kv_bytes_per_element=2, attention_dtype="bf16"),
    b=dict(chip=H200, model=KIMI, kv_bytes_per_element=1, attention_dtype="bf16"),
    c=dict(chip=H200, model=KIMI, kv_bytes_per_element=1, attention_dtype="fp8"),
    d=dict(chip="B200", model=DEEPSEEK, kv_bytes_per_element=1, attention_dtype="bf16"),
    e=dict(chip=H100, model=LLAMA_70B, kv_bytes_per_element=1, attention_dtype="fp8"),
)
"""``lstar_exists``: the configurations its options list (FP8 weights throughout), by letter."""
CHEAPER = dict(model=LLAMA_8B, batch=2048, context=256, dtype="fp8", kv_bytes_per_element=1, chips=(H100, H200))
"""``cheaper_chip``: one GPU of each kind at the low end of its published rental range."""
PREMIUM = dict(chip=H200, model="llama-3.1-405b", batch=128, context=4096, dtype="fp8", chips=8)
"""``fast_premium_405b``: a dense model whose weight read is most of its step."""

PARAMS = ("N_act", "N_tot", "b_w", "b_kv", "F", "W", "f_att", "F_att", "N_routed", "k", "n_exp")
"""The names of ``Replica.params``, in its order, so a typical mistake can change one of them."""


# --- helpers ----------------------------------------------------------------------------------
def _kimi_k16() -> models.Model:
    return dataclasses.replace(models.get(KIMI), moe=K16)


def _rep(scenario):
    return roofline.replica(scenario["chip"], scenario["model"], scenario.get("dtype", "bf16"),
                            scenario.get("chips", 1))


def _params(rep, context=0.0, **override) -> tuple:
    """``rep.params(context)`` with named entries replaced, to build a typical wrong answer."""
    p = dict(zip(PARAMS, rep.params(context)))
    p.update(override)
    return tuple(p.values())


def _t(name, scenario, batch, context=0.0, **override) -> float:
    rep = _rep(scenario)
    return float(roofline.numeric[name](batch, context, *_params(rep, context, **override)))


def _balance(scenario, context=0.0, **override) -> float:
    """B* of the scenario's replica, with one input overridden for a typical wrong answer."""
    rep = _rep(scenario)
    return float(roofline.numeric["balance_batch"](0, context, *_params(rep, context, **override)))


def _lstar(scenario, **override) -> float:
    """L* of the scenario's replica (``roofline.balance_context``), inputs overridden by name."""
    p = dict(zip(PARAMS, _params(_rep(scenario), **override)))
    return float(roofline.balance_context.subs({N_act: p["N_act"], r: p["F"] / p["W"], b_kv: p["b_kv"],
                                                W: p["W"], f_att: p["f_att"], F_att: p["F_att"]}))


def _root(f, lo, hi) -> float:
    """The x in [lo, hi] where the increasing function f crosses zero, by bisection in log space."""
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return lo


def _serve():
    return roofline.decode_point(**SERVE)


def _serve_step(**params) -> float:
    """Step time of the ``SERVE`` point with ``Replica.params`` entries overridden (a wrong answer)."""
    return _t("t_step", SERVE, SERVE["batch"], SERVE["context"], **params)


def _usd_per_mtok(t_step: float) -> float:
    s = SERVE
    return 1e6 * t_step * s["chips"] * s["usd_per_chip_hour"] / 3600 / s["batch"]


def _price_batch(time="t_step", chips_rented=None, **params) -> float:
    """The smallest whole batch whose decode rent per token, at short context, is at most the
    published output price: the scan the exercise asks for, on the ``PRICED`` replica. A wrong
    answer swaps the step time for another formula, the chips rented or ``Replica.params``."""
    s = PRICED
    rent_per_second = (chips_rented or s["chips"]) * s["usd_per_chip_hour"] / 3600
    batches = np.arange(1, math.ceil(roofline.balance_batch(s["chip"], s["model"], s["dtype"])) + 1)
    step = roofline.numeric[time](batches, 0, *_params(_rep(s), **params)) * np.ones_like(batches)
    covered = step * rent_per_second / batches <= PRICE.output / 1e6
    if not covered.any():
        raise ChalkError(f"batch_from_price: no batch up to B* covers {PRICE.output} $/Mtok")
    return float(batches[np.argmax(covered)])


def _fast_ratio() -> float:
    """B_0 / B_f on the ``FAST`` replica: the batch whose step is FAST_SPEED times shorter."""
    s = FAST
    t0 = _t("t_step", s, s["batch"], s["context"])
    b_fast = _root(lambda b: _t("t_step", s, b, s["context"]) - t0 / FAST_SPEED, 1e-6, s["batch"])
    return s["batch"] / b_fast


def _regime(**override) -> roofline.DecodePoint:
    """The ``REGIME`` operating point, with arguments of ``decode_point`` overridden."""
    return roofline.decode_point(**{**REGIME, **override})


def _regime_tokens_per_s(step="t_step", **override) -> float:
    """Tokens per second of the whole ``REGIME`` replica; a wrong answer takes another time as the step."""
    p = _regime(**override)
    return p.batch / getattr(p, step)


def _lstar_case(letter) -> float:
    """L* of ``lstar_exists``'s option ``letter`` (inf where there is none)."""
    c = LSTAR_CASES[letter]
    return roofline.replica(c["chip"], c["model"], "fp8", 1, kv_bytes_per_element=c["kv_bytes_per_element"],
                            attention_dtype=c["attention_dtype"]).balance_context()


def _cheaper(chip) -> roofline.DecodePoint:
    """The ``CHEAPER`` operating point on one ``chip`` rented at the low end of its published range."""
    c = CHEAPER
    return roofline.decode_point(chip, c["model"], c["batch"], c["context"], c["dtype"], 1,
                                 usd_per_chip_hour=hardware.get(chip).rental_usd_per_hour[0],
                                 kv_bytes_per_element=c["kv_bytes_per_element"])


def _premium() -> tuple[float, float]:
    """(normal step, shortest possible step: one sequence) of the ``PREMIUM`` replica, in seconds."""
    p = PREMIUM
    normal = roofline.decode_point(**p).t_step
    return normal, roofline.decode_point(**{**p, "batch": 1}).t_step


def _mla_flops(model, heads=None, value_product=True) -> float:
    """Absorbed-MLA decode FLOPs per cached token, all layers: 2 n_h (d_c + d_R) for the scores,
    plus 2 n_h d_c for the values when ``value_product`` (a typical slip leaves them out)."""
    m = models.get(model)
    mla = m.mla
    n_h = heads or m.n_heads
    per_layer = 2 * n_h * (mla["kv_lora_rank"] + mla["rope_head_dim"])
    per_layer += 2 * n_h * mla["kv_lora_rank"] if value_product else 0
    return m.n_attention_layers * per_layer


def _spec_fp8_flops_per_byte(flops, model=KIMI, query_tokens=2) -> float:
    """Attention FLOPs per byte of an FP8 cache when ``query_tokens`` tokens attend per step."""
    return query_tokens * flops / models.get(model).kv_bytes_per_token(1)


SPARSE_OR_DROPPED_2 = (
    "twice the answer. Either the compute time lost its factor 2 (a multiply and an add: "
    "2 B N_act / F), or F is NVIDIA's headline FLOP/s 'with sparsity', which is twice the dense "
    "rate (2:4 structured sparsity that decode weights do not have). Both double B*: use the dense "
    "rate, `chip.flops(dtype)`.")
NO_BYTES = "a BF16 weight is 2 bytes: the weight read takes N_tot b_w / W, not N_tot / W."
ALL_EXPERTS_AT_B1 = ("a single token reads only the experts it is routed to (plus the shared "
                     "and dense weights): N_act, not N_tot. Every expert is read only once the "
                     "batch is large enough that some token picks each one.")

EXERCISES = (
    Exercise(
        id="sparsity_k16",
        topic="sparsity of an MoE",
        expected=lambda: _kimi_k16().sparsity,
        unit="dimensionless ratio", rel_tol=0.03,
        hint="doubling k adds 8 more routed experts per MoE layer to N_act (each 3 d_model d_ff_expert "
             "weights); N_tot does not change. Then s = N_tot / N_act.",
        mistakes=(
            Mistake("that is the ratio of expert counts (384 / 16). Attention, embeddings, the "
                    "dense layer and the shared expert are used by every token: count parameters.",
                    value=lambda: K16["n_routed_experts"] / K16["experts_per_token"]),
            Mistake("halving Kimi K2's s doubles all of N_act; only its routed part doubles, while "
                    "attention, embeddings, the dense layer and the shared expert stay as they are.",
                    value=lambda: models.get(KIMI).sparsity / 2),
            Mistake("s = N_tot / N_act is above 1: it is total over active.",
                    value=lambda: 1 / _kimi_k16().sparsity),
        )),
    Exercise(
        id="balance_h100",
        topic="the balance batch",
        expected=lambda: roofline.balance_batch(**BALANCE),
        unit="sequences", rel_tol=0.02,
        hint="set 2 B N_act / F equal to N_tot b_w / W and solve for B: B* = (F/W) (b_w/2) s, "
             "with F the dense BF16 rate.",
        mistakes=(
            Mistake(SPARSE_OR_DROPPED_2, factor=2),
            Mistake(NO_BYTES, factor=0.5),
            Mistake("at the balance batch some token picks every expert, so the weight read uses "
                    "N_tot, not N_act.", value=lambda: _balance(BALANCE, N_tot=models.get(KIMI).active_params)),
            Mistake("s counts parameters, not experts: N_tot / N_act, not 384 / 8.",
                    value=lambda: _balance(BALANCE) / models.get(KIMI).sparsity
                    * models.get(KIMI).moe["n_routed_experts"] / models.get(KIMI).moe["experts_per_token"]),
        )),
    Exercise(
        id="mla_flops_per_byte",
        topic="attention FLOPs per cached byte",
        # Kimi K2 with an FP8 cache and one speculative token per step: each cached latent (1 byte
        # per element) is attended by two query tokens. The chapter and Chapter 6 print the BF16,
        # one-token figure; this scenario is not printed anywhere.
        expected=lambda: _spec_fp8_flops_per_byte(models.get(KIMI).attention_flops_per_cached_token()),
        unit="FLOP per byte of KV cache", rel_tol=0.02,
        hint="per layer and cached token, absorbed MLA does 2 n_h (d_c + d_R) FLOPs for the scores "
             "and 2 n_h d_c for the values, for each query token; the cache holds (d_c + d_R) "
             "elements of 1 byte in FP8.",
        mistakes=(
            Mistake("half the answer: one of the two changes is missing. The FP8 cache halves the "
                    "bytes per cached token, and the second query token doubles the FLOPs.", factor=0.5),
            Mistake("a quarter of the answer: that is Kimi K2's BF16 cache with one query token; "
                    "apply both changes.", factor=0.25),
            Mistake("twice the answer: 128 heads were used (DeepSeek-V3's; Kimi K2 has 64).", factor=2),
            Mistake("that counts the scores only; each cached latent is also multiplied into the "
                    "weighted sum of values, another 2 n_h d_c FLOPs per layer.",
                    value=lambda: _spec_fp8_flops_per_byte(_mla_flops(KIMI, value_product=False))),
            Mistake("that is the grouped-query count 4 n_h d_head. With absorbed projections MLA "
                    "scores and sums over the latent of width d_c (+ d_R), not over d_head.",
                    value=lambda: _spec_fp8_flops_per_byte(4 * models.get(KIMI).n_heads * models.get(KIMI).d_head
                                                           * models.get(KIMI).n_attention_layers)),
        )),
    Exercise(
        id="lstar_h100",
        topic="the balance context",
        expected=lambda: roofline.balance_context_for(**LSTAR),
        unit="tokens", rel_tol=0.02,
        hint="at infinite batch the weights are free: per sequence, 2 N_act / F + L f_att / F "
             "of compute against L b_kv / W of cache reads. Solve for L.",
        mistakes=(
            Mistake("that leaves out attention's FLOPs: each cached token also costs f_att FLOPs "
                    "to attend to, a good part of the time its bytes take to read, which moves L* out.",
                    value=lambda: _lstar(LSTAR, f_att=0.0)),
            Mistake("a matmul costs 2 FLOPs per parameter per token (multiply and add): the "
                    "numerator is 2 N_act.", factor=0.5),
            Mistake("a BF16 cache element is 2 bytes: b_kv = n_layers (d_c + d_R) x 2 B.",
                    value=lambda: _lstar(LSTAR, b_kv=models.get(KIMI).kv_bytes_per_token(1))),
            Mistake("the matmuls of one token use N_act, not N_tot.",
                    value=lambda: _lstar(LSTAR, N_act=models.get(KIMI).total_params)),
        )),
    Choices(
        id="lstar_exists",
        topic="whether L* exists",
        options={
            "a": "Kimi K2 on an H200 · BF16 cache · BF16 attention",
            "b": "Kimi K2 on an H200 · FP8 cache · BF16 attention",
            "c": "Kimi K2 on an H200 · FP8 cache · FP8 attention",
            "d": "DeepSeek-V3 on a B200 · FP8 cache · BF16 attention",
            "e": "Llama 3.1 70B on an H100 · FP8 cache · FP8 attention",
        },
        answer={"a", "c", "e"},
        feedback={
            "a": "applies: with a BF16 cache Kimi K2's attention does fewer FLOPs per cached byte than the "
                 "H200 does per byte of HBM at the BF16 rate, so past some context the cache read is the "
                 "longer part whatever the batch.",
            "b": "an FP8 cache halves the bytes of a cached token but not its attention FLOPs, still run at "
                 "the BF16 rate: Kimi K2's attention then outruns the H200's BF16 ratio, so each token of "
                 "context adds more compute than reading, and no context is memory-bound at every batch. "
                 "It would exist with attention in FP8.",
            "c": "applies: FP8 attention runs the same FLOPs twice as fast, which brings them back below the "
                 "H200's ratio; L* returns, further out than with a BF16 cache.",
            "d": "DeepSeek-V3 has twice Kimi K2's heads: with an FP8 cache its attention does more FLOPs per "
                 "cached byte than the B200's BF16 ratio, so attention outruns the cache read at every context.",
            "e": "applies: grouped-query attention does few FLOPs per cached byte, far below any chip's ratio, "
                 "whatever the formats: a dense GQA model always has an L*.",
        },
        hint="L* exists where, per cached token, reading the cache takes longer than attending to it: "
             "b_kv / W > f_att / F_att, with F_att the rate of attention's format. Compare the two per option "
             "(roofline.replica(chip, model, 'fp8', 1, kv_bytes_per_element, attention_dtype).balance_context()).",
    ),
    Exercise(
        id="balance_kv_h800",
        topic="the balance batch with the KV cache",
        expected=lambda: roofline.balance_batch(**KV),
        # Near L* the answer amplifies input errors by 1 / (1 - L/L*), 1.7 here (L* is about 10k):
        # the prompt says to use the catalog's N_act and N_tot, and 4% also admits the report's
        # rounded 37 B active (1.5% low, so about 2.5% high here; tests/test_problems_ch01.py).
        unit="sequences", rel_tol=0.04,
        hint="count attention's FLOPs at the BF16 rate and the KV read: 2 B N_act / F + B L f_att "
             "/ F_att = (N_tot b_w + B L b_kv) / W; solve for B.",
        mistakes=(
            Mistake("that is B* at zero context; at 4,096 tokens the KV read and attention both "
                    "grow with the batch.", value=lambda: _balance(KV)),
            Mistake("the weights are FP8, 1 byte each, and the matmuls run at the FP8 rate; only "
                    "attention runs at the BF16 rate.",
                    value=lambda: roofline.balance_batch(KV["chip"], KV["model"], "bf16", KV["context"])),
            Mistake("FP8 weights are 1 byte: the weight read takes N_tot b_w / W with b_w = 1.",
                    value=lambda: _balance(KV, KV["context"], b_w=hardware.bytes_per_weight("bf16"))),
            Mistake("the cache is BF16, 2 bytes per element: b_kv = 61 x 576 x 2 B.",
                    value=lambda: _balance(KV, KV["context"], b_kv=models.get(DEEPSEEK).kv_bytes_per_token(1))),
            Mistake("at the balance batch every expert is read, so the weight read uses N_tot.",
                    value=lambda: _balance(KV, KV["context"], N_tot=models.get(DEEPSEEK).active_params)),
        )),
    Exercise(
        id="min_batch_compute",
        topic="the balance batch by a scan",
        expected=lambda: float(math.ceil(roofline.balance_batch(SCAN["chip"], SCAN["model"],
                                                                context=SCAN["context"]))),
        unit="sequences", exact=True, rel_tol=0.005,
        hint="scan B = 1, 2, 3, ... and stop at the first B where t_compute >= t_mem "
             "(roofline.numeric['t_compute'] and ['t_mem'] with (B, L, *rep.params(L))).",
        mistakes=(
            Mistake("that leaves out the KV read of each sequence; at this context it matters.",
                    value=lambda: float(math.ceil(_balance(SCAN)))),
            Mistake(NO_BYTES, value=lambda: float(math.ceil(_balance(SCAN, SCAN["context"], b_w=1.0)))),
        )),
    Exercise(
        id="latency_floor_ms",
        topic="the latency floor",
        # the roofline alone, as the prompt asks: no tensor-parallel all-reduce (step_time adds one)
        expected=lambda: 1e3 * _t("t_step", FLOOR, 1),
        unit="ms", rel_tol=0.02,
        hint="one sequence at short context: the step is the read of the weights its one token "
             "touches, with the whole rack's bandwidth, N_act b_w / (72 W).",
        mistakes=(
            Mistake(ALL_EXPERTS_AT_B1, value=lambda: 1e3 * _t("t_weights_all", FLOOR, 1)),
            Mistake("the answer is asked in milliseconds.", factor=1e-3),
            Mistake("the weights are FP8, 1 byte each.", factor=2),
            Mistake("the weights are spread over all 72 GPUs, which read them in parallel.",
                    factor=FLOOR["chips"]),
        )),
    Exercise(
        id="experts_read_qwen3",
        topic="experts a small batch reads",
        expected=lambda: moe.expected_experts_touched(SHARE["model"], SHARE["batch"])
        / models.get(SHARE["model"]).moe["n_routed_experts"],
        unit="fraction of the routed experts", rel_tol=0.02,
        hint="one token misses a given expert with probability 1 - k/n_exp; with uniform routing "
             "all B tokens miss it with probability (1 - k/n_exp)^B.",
        mistakes=(
            Mistake("B k / n_exp counts an expert once for every token that picks it; tokens "
                    "overlap, so fewer distinct experts are read.",
                    value=lambda: SHARE["batch"] * models.get(QWEN3).moe["experts_per_token"]
                    / models.get(QWEN3).moe["n_routed_experts"]),
            Mistake("that is the share left unread, (1 - k/n_exp)^B; the question asks for the "
                    "share read.", value=lambda: (1 - models.get(QWEN3).moe["experts_per_token"]
                                                  / models.get(QWEN3).moe["n_routed_experts"]) ** SHARE["batch"]),
            Mistake("that is one token's share, k / n_exp; the step carries 12 tokens.",
                    value=lambda: models.get(QWEN3).moe["experts_per_token"] / models.get(QWEN3).moe["n_routed_experts"]),
        )),
    Exercise(
        id="b1_cost_ratio",
        topic="what no batching costs",
        expected=lambda: _t("t_weights", W4A16, 1, b_w=W4A16["b_w"]) / _t("t_matmul", W4A16, 1),
        unit="ratio (cost per token at B = 1 / compute-bound cost per token)", rel_tol=0.02,
        hint="at B = 1 a token pays the read of its own N_act weights, N_act b_w / W; compute-bound, "
             "it pays its matmuls, 2 N_act / F. The ratio is r b_w / 2 for any model.",
        mistakes=(
            Mistake("that is B* = r b_w s / 2: what a lone token would pay if it read every expert. "
                    "At B = 1 it reads only its own (N_act), so sparsity cancels.",
                    value=lambda: _t("t_weights_all", W4A16, 1, b_w=W4A16["b_w"]) / _t("t_matmul", W4A16, 1)),
            Mistake("twice the answer: a 4-bit weight is half a byte, not 1, and the matmuls run "
                    "at the BF16 rate (the weights are dequantised to BF16), not at FP8's.", factor=2),
            Mistake("that is r alone, as if the weights were BF16 (b_w = 2); they are 4-bit here.",
                    factor=4),
        )),
    Exercise(
        id="usd_per_mtok",
        topic="cost per token",
        expected=lambda: _serve().usd_per_million_tokens,
        unit="$ per million tokens", rel_tol=0.02,
        hint="the step lasts max(t_compute, t_mem), with t_mem the weights plus every sequence's "
             "cache; it costs t_step x 8 chips x $2/h / 3600 s/h and makes one token per sequence.",
        mistakes=(
            Mistake("that leaves out the KV read, B L b_kv / W: at 8,192 tokens the 1,024 caches "
                    "take almost as long to read as the weights, and the step is the memory time.",
                    value=lambda: _usd_per_mtok(_serve_step(b_kv=0.0))),
            Mistake("that is dollars per token; the question asks per million tokens.", factor=1e-6),
            Mistake("the replica rents 8 GPUs, not one.", factor=1 / SERVE["chips"]),
            Mistake("a step makes one token for each of the B sequences: divide by the batch.",
                    factor=SERVE["batch"]),
            Mistake("the rental is per hour: divide $2 by 3600 s.", factor=3600),
        )),
    Choice(
        id="regime_h200",
        topic="which regime a step is in",
        options={
            "a": "Memory-bound: the weight read is the longest part.",
            "b": "Memory-bound: the KV cache read is the longest part.",
            "c": "Compute-bound: the weight matmuls are most of the compute.",
            "d": "Compute-bound: attention is most of the compute.",
        },
        answer="d",
        feedback={
            "a": "that would hold at a short context or a small batch. Here 16 GPUs share the weight read, "
                 "and at this batch and context both the cache read and attention take longer than it.",
            "b": "that holds if attention's FLOPs are left out. An FP8 cache takes half the bytes of a BF16 "
                 "one but the same FLOPs to attend to, at the BF16 rate: for DeepSeek-V3's 128-head latent "
                 "attention those FLOPs take longer than the bytes.",
            "c": "that would hold at a short context and a large batch. A token's weight matmuls cost "
                 "2 N_act FLOPs once; its attention costs f_att for each of its 16,384 cached tokens, many "
                 "times more.",
        },
        hint="compute the three times of one step: the matmuls and attention (t_compute, attention at the "
             "BF16 rate), the weight read and the cache read (t_mem). roofline.decode_point(...) with "
             "kv_bytes_per_element=1 gives them all.",
    ),
    Exercise(
        id="tokens_per_s_h200",
        topic="throughput in the regime found",
        judgement=True,
        expected=_regime_tokens_per_s,
        unit="tokens/s", rel_tol=0.02,
        hint="a step lasts the longer of compute (matmuls plus attention) and memory (weights plus cache) "
             "and yields one token per sequence.",
        mistakes=(
            Mistake("that takes the memory time as the step, as if attention's FLOPs were left out or ran at "
                    "the FP8 rate. FlashMLA attends at the BF16 rate, and then the step is compute-bound and "
                    "lasts longer.", value=lambda: _regime_tokens_per_s("t_mem")),
            Mistake("that takes attention alone as the compute time. The weight matmuls run on the same tensor "
                    "cores: their times add.", value=lambda: REGIME["batch"] / max(_regime().t_attn, _regime().t_mem)),
            Mistake("that is per GPU; the question asks for the whole 16-GPU replica.",
                    factor=1 / REGIME["chips"]),
            Mistake("that is steps per second; each step yields one token for each sequence.",
                    factor=1 / REGIME["batch"]),
        ),
    ),
    Choice(
        id="cheaper_chip",
        topic="which chip serves cheaper",
        options={
            "a": "The H200: its step is shorter.",
            "b": "The H200: it has more HBM bandwidth per dollar of rent.",
            "c": "The H100: both steps are compute-bound at the same FLOP/s and the H100 rents for less.",
            "d": "Neither: both cost the same per token.",
        },
        answer="c",
        feedback={
            "a": "the H200's step is shorter only when it is memory-bound. At this batch both steps are "
                 "compute-bound, and the two chips have the same dense FP8 rate, so the steps are equal.",
            "b": "bandwidth per dollar decides when the step is memory-bound, as at a batch of a few hundred. "
                 "Here compute bounds the step on both chips.",
            "d": "that would hold if the two rented for the same: the steps are equally long, but the H200 "
                 "rents for more per hour.",
        },
        hint="find each chip's regime at this batch (t_compute against t_mem), then its cost per token: "
             "t_step x rent per second / batch.",
    ),
    Exercise(
        id="batch_from_price",
        topic="a batch deduced from a price",
        judgement=True,
        expected=lambda: _price_batch(),
        unit="sequences", exact=True, rel_tol=0.02,
        hint="scan B = 1, 2, 3, ...: a step of B sequences at short context lasts the read of the "
             "weights its tokens touch (roofline.numeric['t_step']); its rent over B is the cost "
             "per token. Stop at the first B whose cost is at most the price.",
        mistakes=(
            Mistake("that reads every expert at every batch. At a few dozen sequences a good share "
                    "of DeepSeek-V3's 256 experts is untouched in each layer, so the step is "
                    "shorter and fewer sequences pay for it.",
                    value=lambda: _price_batch("t_weights_all")),
            Mistake("that reads only N_act at every batch, as a single token would. B tokens "
                    "touch N_tot - N_routed (1 - k/n_exp)^B weights: more experts as the batch grows.",
                    value=lambda: _price_batch(N_tot=models.get(DEEPSEEK).active_params, N_routed=0.0)),
            Mistake("the replica rents 16 GPUs: a step costs 16 x $2 / 3600 s per second of its length.",
                    value=lambda: _price_batch(chips_rented=1)),
        )),
    Exercise(
        id="kink_batch",
        topic="reading graph A",
        expected=lambda: roofline.balance_batch(PLOT["chip"], PLOT["model"], context=PLOT["context"]),
        unit="sequences", rel_tol=0.10,
        hint="follow the bold curve from the left: the batch where it leaves the sloped memory "
             "line and joins the compute line.",
        mistakes=(
            Mistake("that is B* without the KV read (r s); on the plot the memory line slopes "
                    "because of the cache, which moves the crossing right.",
                    value=lambda: roofline.balance_batch(PLOT["chip"], PLOT["model"])),
        )),
    Choice(
        id="fast_premium_405b",
        topic="fast mode and batching",
        options={
            "a": "Yes: a batch 15 times smaller is 2.5 times faster and accounts for 6 times the price.",
            "b": "Partly: a smaller batch streams 2.5 times faster but accounts for less than 6 times the price.",
            "c": "No: no batch streams 2.5 times faster on this replica.",
        },
        answer="c",
        feedback={
            "a": "that would need a step proportional to the batch. Price ratio x speed ratio = B_0 / B_f is "
                 "an identity of a cost proportional to t_step / B and places no batch; here the step is "
                 "mostly the weight read, which no smaller batch shortens.",
            "b": "that holds where the weight read is a small part of the step, as in fast_batch_shrink. Here "
                 "even one sequence takes longer than a step 2.5 times shorter than the normal one.",
        },
        hint="a smaller batch shortens only the cache read and the compute; the weight read of a dense "
             "model stays. Compare the step at B = 1 with the normal step divided by 2.5.",
    ),
    Exercise(
        id="fast_batch_shrink",
        topic="fast mode past L*",
        judgement=True,
        expected=_fast_ratio,
        unit="ratio (normal batch / fast batch)", rel_tol=0.02,
        hint="past L* the step is memory-bound: t = (N_tot b_w + B L b_kv) / W. Find the batch "
             "B_f whose step is 2.5 times shorter than the step at B_0 = 40.",
        mistakes=(
            Mistake("that is speed x quoted price, the identity B_0/B_f = speed x price, which holds "
                    "only if batching alone sets the quoted price. Here the roofline places B_f "
                    "itself: find the batch whose step is 2.5 times shorter.",
                    value=lambda: FAST_SPEED * FAST_PRICE),
            Mistake("the step is not proportional to the batch: the weight read stays whatever "
                    "the batch, so the batch must shrink more than the step.", value=lambda: FAST_SPEED),
            Mistake("that is the quoted price ratio; the question asks how much the batch shrinks.",
                    value=lambda: FAST_PRICE),
        )),
)
