"""The answer key of problem set 1: every check behaves, and the key agrees with hand calculations.

The hand calculations use spec-sheet figures and model configurations typed here, not chalk's
catalog, so a wrong formula or a wrong catalog entry in chalk shows up as a disagreement. The
parameter counts are done by hand from each published config.json (embeddings, MLA projections,
dense and expert FFNs, routers; norms left out, as the catalog does).
"""
import math
import re

import pytest

from chalk import hardware, models, roofline
from chalk.teaching.exercises import RIGHT, WRONG, judge, problem_set
from chalk.teaching.problems import ch01_batching

EXERCISES = problem_set("01_batching")


def close(a, b, rel_tol):
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=0.0)


# --- independent inputs -----------------------------------------------------------------------
# Spec sheets (dense rates; NVIDIA's headline "with sparsity" figures are twice these):
H100_BF16, H100_BW = 989.4e12, 3.35e12   # H100 SXM datasheet (nvidia.com/en-us/data-center/h100)
H800_BF16, H800_BW = 989.4e12, 3.35e12   # as H100 SXM: DeepSeek's FlashMLA deep dive (990 TFLOP/s, 3.35 TB/s)
H800_FP8 = 2 * H800_BF16                 # Hopper's FP8 tensor rate is twice BF16
H200_BF16, H200_BW = 989.4e12, 4.8e12    # H200 datasheet (nvidia.com/en-us/data-center/h200)
H100_FP8 = H200_FP8 = 2 * H200_BF16      # Hopper's FP8 tensor rate is twice BF16
B200_BF16, B200_BW = 2250e12, 8e12       # HGX B200 datasheet: 18 PFLOP/s dense FP8 for 8 GPUs, half in BF16
H100_RENT, H200_RENT = 1.99, 2.50        # low ends of the catalog's rental ranges (its sources, 2026-05)
H100_SPARSE_BF16 = 1979e12              # the same datasheet's headline BF16 figure, "with sparsity"
NVL72_BW = 576e12                        # GB200 NVL72 page: 576 TB/s of HBM bandwidth per rack
MI300X_BF16, MI300X_FP8, MI300X_BW = 1307.4e12, 2614.9e12, 5.3e12  # AMD ROCm MI300 peak table
R_H100 = H100_BF16 / H100_BW


def moe_mla_params(d, vocab, layers, dense_layers, d_ff, d_expert, experts, shared, k, heads,
                   q_rank, kv_rank, nope, rope, v_head):
    """(active, total, routed) parameters of a DeepSeek-V3-style model, counted by hand."""
    embeddings = 2 * vocab * d  # untied input and output tables
    attention = (d * q_rank + q_rank * heads * (nope + rope) + d * (kv_rank + rope)
                 + kv_rank * heads * (nope + v_head) + heads * v_head * d)
    expert = 3 * d * d_expert   # gated: up, gate, down
    shared_part = embeddings + layers * attention + dense_layers * 3 * d * d_ff
    moe_layers = layers - dense_layers
    active = shared_part + moe_layers * ((k + shared) * expert + d * experts)
    total = shared_part + moe_layers * ((experts + shared) * expert + d * experts)
    return active, total, moe_layers * experts * expert


# moonshotai/Kimi-K2-Instruct config.json
KIMI_ACT, KIMI_TOT, _ = moe_mla_params(7168, 163840, 61, 1, 18432, 2048, 384, 1, 8, 64, 1536, 512, 128, 64, 128)
KIMI_KV = 61 * (512 + 64) * 2                    # BF16 latent + RoPE key per layer
KIMI_F_ATT = 61 * 2 * 64 * (2 * 512 + 64)        # absorbed MLA: scores over d_c + d_R, values over d_c
# deepseek-ai/DeepSeek-V3 config.json
V3_ACT, V3_TOT, V3_ROUTED = moe_mla_params(7168, 129280, 61, 3, 18432, 2048, 256, 1, 8, 128, 1536, 512, 128, 64, 128)
V3_KV = 61 * (512 + 64) * 2
V3_F_ATT = 61 * 2 * 128 * (2 * 512 + 64)
V3_REPORT_TOT, V3_REPORT_ACT = 671e9, 37e9       # DeepSeek-V3 technical report (arXiv 2412.19437), abstract
# Llama 3.1 model cards and config.json: K and V, 8 KV heads x 128, BF16; 4 n_h d_head FLOPs per layer.
LLAMA8_PARAMS, LLAMA8_KV, LLAMA8_F = 8.03e9, 2 * 32 * 8 * 128 * 2, 32 * 4 * 32 * 128
LLAMA70_PARAMS, LLAMA70_KV, LLAMA70_F = 70.6e9, 2 * 80 * 8 * 128 * 2, 80 * 4 * 64 * 128
LLAMA405_PARAMS, LLAMA405_KV = 405.8e9, 2 * 126 * 8 * 128 * 2


def _dense_balance(params, kv, f_att, context, r):
    """B* of a dense BF16 model: 2 B N / F + B L f / F = (2 N + B L kv) / W, solved for B."""
    return params * 2 / (2 * params / r + context * f_att / r - context * kv)


def _mi300x_step():
    """DeepSeek-V3 on 8 x MI300X, FP8 matmuls, BF16 attention and cache, 1,024 x 8,192 tokens."""
    B, L = 1024, 8192
    t_compute = 2 * B * V3_ACT / (8 * MI300X_FP8) + B * L * V3_F_ATT / (8 * MI300X_BF16)
    t_mem = (V3_TOT * 1 + B * L * V3_KV) / (8 * MI300X_BW)  # every expert is read at B = 1,024
    return max(t_compute, t_mem)


def _h800_balance(n_act, n_tot, L=4096):
    """B* of DeepSeek-V3 on an H800, FP8 weights and matmuls, BF16 attention, BF16 cache."""
    return n_tot * 1 / H800_BW / (2 * n_act / H800_FP8 + L * V3_F_ATT / H800_BF16 - L * V3_KV / H800_BW)


def _price_cost(batch, bandwidth=H200_BW, rent=H200_RENT):
    """Decode rent per token on 16 GPUs, short context: the read of the experts B tokens touch, FP8."""
    read = V3_TOT - V3_ROUTED * (1 - 8 / 256) ** batch
    return read * 1 / (16 * bandwidth) * 16 * rent / 3600 / batch


def _price_batch_by_hand(bandwidth=H200_BW, rent=H200_RENT):
    """Smallest batch whose rent per token on 16 GPUs is within DeepSeek-R1's output price, $2.19 per
    million tokens (api-docs.deepseek.com/quick_start/pricing-details-usd, 2025-02)."""
    return next(b for b in range(1, 10_000) if _price_cost(b, bandwidth, rent) <= 2.19e-6)


def _regime_times():
    """(matmuls, attention, weights, cache) in seconds: DeepSeek-V3 on 16 H200, FP8 weights and cache,
    BF16 attention, 2,048 sequences of 16,384 tokens; every expert read at that batch."""
    B, L, chips = 2048, 16384, 16
    return (2 * B * V3_ACT / (chips * H200_FP8), B * L * V3_F_ATT / (chips * H200_BF16),
            V3_TOT * 1 / (chips * H200_BW), B * L * (V3_KV / 2) / (chips * H200_BW))


def _llama8_cost(batch, flops, bandwidth, rent, L=256):
    """$ per token of Llama 3.1 8B on one GPU, FP8 weights and cache, BF16 attention; and whether the
    step is compute-bound."""
    compute = 2 * batch * LLAMA8_PARAMS / flops + batch * L * LLAMA8_F / (flops / 2)
    memory = (LLAMA8_PARAMS * 1 + batch * L * LLAMA8_KV / 2) / bandwidth
    return max(compute, memory) * rent / 3600 / batch, compute > memory


def _fast_shrink_by_hand():
    """Llama 3.1 70B on 8 H100 at 32k context, 40 sequences: the batch ratio for a 2.5x faster step."""
    t_w, t_seq = LLAMA70_PARAMS * 2 / (8 * H100_BW), 32768 * LLAMA70_KV / (8 * H100_BW)
    t0 = t_w + 40 * t_seq
    return 40 / ((t0 / 2.5 - t_w) / t_seq)


INDEPENDENT = {
    # Kimi K2 routing each token to 16 experts: 8 more gated experts in each of its 60 MoE layers.
    "sparsity_k16": (KIMI_TOT / (KIMI_ACT + 8 * 60 * 3 * 7168 * 2048), 1e-3),
    "balance_h100": (R_H100 * KIMI_TOT / KIMI_ACT, 1e-3),
    # FP8 cache (half the BF16 bytes) and two query tokens per cached latent (twice the FLOPs).
    "mla_flops_per_byte": (2 * KIMI_F_ATT / (KIMI_KV / 2), 1e-6),
    "lstar_h100": (2 * KIMI_ACT / (R_H100 * KIMI_KV - KIMI_F_ATT), 1e-3),
    "balance_kv_h800": (_h800_balance(V3_ACT, V3_TOT), 1e-3),
    "min_batch_compute": (math.ceil(_dense_balance(LLAMA8_PARAMS, LLAMA8_KV, LLAMA8_F, 256, H200_BF16 / H200_BW)), 0.005),
    "latency_floor_ms": (1e3 * KIMI_ACT * 1 / NVL72_BW, 1e-3),
    "experts_read_qwen3": (1 - (1 - 8 / 128) ** 12, 1e-9),  # Qwen3-235B-A22B config: 8 of 128 experts
    "b1_cost_ratio": (R_H100 * 0.5 / 2, 1e-3),
    "usd_per_mtok": (1e6 * _mi300x_step() * 8 * 2.0 / 3600 / 1024, 1e-3),
    "tokens_per_s_h200": (2048 / max(sum(_regime_times()[:2]), sum(_regime_times()[2:])), 1e-3),
    "batch_from_price": (_price_batch_by_hand(), 1e-9),
    "kink_batch": (_dense_balance(LLAMA70_PARAMS, LLAMA70_KV, LLAMA70_F, 512, R_H100), 0.01),
    "fast_batch_shrink": (_fast_shrink_by_hand(), 0.01),
}


CHOICE_KEYS = {"lstar_exists", "regime_h200", "cheaper_chip", "fast_premium_405b"}


def test_every_exercise_has_an_independent_check():
    assert set(INDEPENDENT) | CHOICE_KEYS == set(EXERCISES) and len(EXERCISES) >= 12


@pytest.mark.parametrize("ex_id", INDEPENDENT)
def test_key_matches_hand_calculation(ex_id):
    by_hand, tol = INDEPENDENT[ex_id]
    assert close(EXERCISES[ex_id].expected(), by_hand, tol), (EXERCISES[ex_id].expected(), by_hand)


# --- published figures and the physics the key encodes ---------------------------------------
def test_hand_counts_reproduce_the_published_totals():
    # Kimi K2 README: "32 billion activated parameters and 1 trillion total parameters";
    # DeepSeek-V3 report: 671 B total, 37 B active. Both rounded, hence the tolerances.
    assert close(KIMI_TOT, 1e12, 0.05) and close(KIMI_ACT, 32e9, 0.05)
    assert close(V3_TOT, V3_REPORT_TOT, 0.001) and close(V3_ACT, V3_REPORT_ACT, 0.02)


def test_the_published_rounded_inputs_pass_balance_kv_despite_its_conditioning():
    # Near L* the answer amplifies input errors by 1 / (1 - L/L*), L* = 2 N_act / F / (b_kv/W -
    # f_att/F_att): about 1.7 here. The report's 37 B active is 1.5% below the config's count.
    lstar = 2 * V3_ACT / H800_FP8 / (V3_KV / H800_BW - V3_F_ATT / H800_BF16)
    assert 1 / (1 - 4096 / lstar) == pytest.approx(1.70, abs=0.01)
    published = _h800_balance(V3_REPORT_ACT, V3_REPORT_TOT)
    ex = EXERCISES["balance_kv_h800"]
    assert published / ex.expected() == pytest.approx(1 + 1.70 * (1 - V3_REPORT_ACT / V3_ACT), abs=0.003)
    assert judge(ex, published).status == RIGHT


def test_without_attention_flops_balance_kv_has_no_finite_answer():
    # The lecture's model (matmuls only) puts L* at 2 N_act / (r_fp8 b_kv), below 4,096 tokens.
    assert 2 * V3_ACT / (H800_FP8 / H800_BW * V3_KV) < 4096


def test_sparse_headline_flops_get_the_hint_that_names_both_factors_of_two():
    ex = EXERCISES["balance_h100"]
    with_sparsity = H100_SPARSE_BF16 / H100_BW * KIMI_TOT / KIMI_ACT
    result = judge(ex, with_sparsity)
    assert result.status == WRONG and "sparsity" in result.message and "factor 2" in result.message


def test_old_physics_answers_are_typical_mistakes_not_right_answers():
    # L* without attention FLOPs, a lone token reading every expert, B* as the cost of B = 1:
    # the answers the first edition taught each get their own hint.
    old = {"lstar_h100": 2 * KIMI_ACT / (R_H100 * KIMI_KV),
           "latency_floor_ms": 1e3 * KIMI_TOT / NVL72_BW,
           "b1_cost_ratio": R_H100 * 0.5 / 2 * 235 / 22,  # Qwen3-235B-A22B: 235 B total, 22 B active
           "fast_batch_shrink": 2.5 * 6}
    for ex_id, value in old.items():
        result = judge(EXERCISES[ex_id], value)
        assert result.status == WRONG and "A typical slip" in result.message, ex_id


def test_h200_is_the_chip_where_deepseek_attention_outruns_its_cache_and_kimi_does_not():
    # What the mla_flops_per_byte solution states: 242 FLOP/B > 206 = r(H200) > 121.
    assert V3_F_ATT / V3_KV > H200_BF16 / H200_BW > KIMI_F_ATT / KIMI_KV


def test_price_deduction_is_on_the_weight_bound_side():
    # batch_from_price assumes the step is weight-bound; that holds only below B*.
    assert EXERCISES["batch_from_price"].expected() < roofline.balance_batch("H200", "deepseek-v3", "fp8")


def test_the_price_sits_off_the_edge_and_only_the_one_batch_is_right():
    # The first covered batch clears the price by more than 0.5%, and the batch before misses it by as
    # much: a rounded input cannot move the answer. On 16 H800 at $2 it cleared it by 0.03%.
    b = _price_batch_by_hand()
    assert _price_cost(b) < 2.19e-6 * 0.995 and _price_cost(b - 1) > 2.19e-6 * 1.005
    old = _price_batch_by_hand(H800_BW, 2.0)
    assert 1 - _price_cost(old, H800_BW, 2.0) / 2.19e-6 < 0.001
    ex = EXERCISES["batch_from_price"]
    assert judge(ex, b).status == RIGHT and judge(ex, float(b)).status == RIGHT
    assert judge(ex, b - 1).status == WRONG and judge(ex, b + 1).status == WRONG


# --- the judgement items: each option's verdict recomputed by hand --------------------------------
def test_regime_is_compute_bound_by_attention_and_memory_bound_without_it():
    matmuls, attention, weights, cache = _regime_times()
    assert attention > cache > weights > matmuls                    # (d)
    assert matmuls + attention > 1.5 * (weights + cache)            # far from the edge
    assert matmuls < weights + cache and cache > weights            # attention left out: (b)
    p = ch01_batching._regime()
    assert (p.t_compute - p.t_attn, p.t_attn, p.t_weights, p.t_kv) == pytest.approx(_regime_times(), rel=2e-3)
    assert p.regime == "compute-bound (attention)" and EXERCISES["regime_h200"].answer == "d"


def test_lstar_exists_where_the_cache_read_outlasts_attention():
    # attention FLOPs per cached byte against the chip's FLOP/s per byte in attention's format
    cases = {"a": (KIMI_F_ATT / KIMI_KV, H200_BF16 / H200_BW), "b": (KIMI_F_ATT / (KIMI_KV / 2), H200_BF16 / H200_BW),
             "c": (KIMI_F_ATT / (KIMI_KV / 2), H200_FP8 / H200_BW), "d": (V3_F_ATT / (V3_KV / 2), B200_BF16 / B200_BW),
             "e": (LLAMA70_F / (LLAMA70_KV / 2), H100_FP8 / H100_BW)}
    exists = {x for x, (per_byte, ratio) in cases.items() if per_byte < ratio}
    assert exists == EXERCISES["lstar_exists"].answer == {"a", "c", "e"}
    for x, (per_byte, ratio) in cases.items():
        assert abs(per_byte / ratio - 1) > 0.1, x           # no verdict near the edge
        assert math.isfinite(ch01_batching._lstar_case(x)) == (x in exists), x


def test_the_cheaper_chip_turns_with_the_regime():
    h100, h100_compute = _llama8_cost(2048, H100_FP8, H100_BW, H100_RENT)
    h200, h200_compute = _llama8_cost(2048, H200_FP8, H200_BW, H200_RENT)
    assert h100_compute and h200_compute and h100 < h200      # (c)
    assert h200 / h100 == pytest.approx(H200_RENT / H100_RENT)  # equal steps: the rent decides
    small = [_llama8_cost(256, f, w, rent) for f, w, rent in ((H100_FP8, H100_BW, H100_RENT),
                                                              (H200_FP8, H200_BW, H200_RENT))]
    assert not small[0][1] and not small[1][1] and small[1][0] < small[0][0]   # what (b) would need
    costs = {c: ch01_batching._cheaper(c).usd_per_million_tokens / 1e6 for c in ("H100-SXM", "H200")}
    assert costs == pytest.approx({"H100-SXM": h100, "H200": h200}, rel=1e-3)
    assert EXERCISES["cheaper_chip"].answer == "c"


def test_no_batch_makes_the_405b_replica_fast_enough():
    per_sequence = 4096 * LLAMA405_KV / (8 * H200_BW)
    weights = LLAMA405_PARAMS * 1 / (8 * H200_BW)
    normal = max(weights + 128 * per_sequence, 2 * 128 * LLAMA405_PARAMS / (8 * H200_FP8))
    alone = weights + per_sequence
    assert alone > normal / 2.5                                 # (c): even one sequence is too slow
    assert ch01_batching._premium() == pytest.approx((normal, alone), rel=2e-3)
    assert EXERCISES["fast_premium_405b"].answer == "c"


def test_choices_are_judged_both_ways_with_their_feedback():
    for ex_id in CHOICE_KEYS:
        ex = EXERCISES[ex_id]
        right = ex.right_letters()
        assert judge(ex, ", ".join(sorted(right))).status == RIGHT, ex_id
        for letter, feedback in ex.feedback.items():
            picked = right ^ {letter} if ex.kind == "choices" else {letter}
            if not picked:
                continue
            result = judge(ex, ", ".join(sorted(picked)))
            assert result.status == WRONG and feedback in result.message, (ex_id, letter)


def test_fast_scenario_is_past_lstar_and_fills_hbm():
    f = ch01_batching.FAST
    assert f["context"] > roofline.balance_context_for(f["chip"], f["model"], f["dtype"])
    # Near the most that fit: (0.9 x 8 x 85.52 GB as reported - 141.1 GB) / (32,768 x 327,680 B) = 44.2.
    assert 0.9 * 44 <= f["batch"] <= 44 == roofline.max_batch(f["chip"], f["model"], f["context"], f["dtype"], f["chips"])


def test_scenarios_fit_in_memory():
    roofline.check_fit(**{k: v for k, v in ch01_batching.SERVE.items() if k != "usd_per_chip_hour"})
    scan = ch01_batching.SCAN
    assert EXERCISES["min_batch_compute"].expected() <= roofline.max_batch(scan["chip"], scan["model"],
                                                                             scan["context"])
    p = ch01_batching.PRICED
    roofline.check_fit(p["chip"], p["model"], EXERCISES["batch_from_price"].expected(), 0, p["dtype"], p["chips"])


def _prompts():
    """{exercise id: its prompt's Markdown} from the problem set the students get."""
    import nbformat
    from conftest import ROOT
    nb = nbformat.read(ROOT / "exercises" / "01_batching.ipynb", as_version=4)
    heads = [c.source for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("## ")]
    return {re.search(r"`(\w+)`", h.splitlines()[0]).group(1): h for h in heads}


def _n(x):
    return f"{x:,.0f}" if x >= 1000 else f"{x:g}"


def test_prompts_state_the_scenario_the_key_uses():
    """A prompt types its scenario's inputs for the student; they must be the key's inputs."""
    k = ch01_batching
    serve, fast, share = k.SERVE, k.FAST, k.SHARE
    qwen = models.get(k.QWEN3).moe
    stated = {
        "balance_kv_h800": [f"{_n(k.KV['context'])} tokens", "H800", "FP8 weights"],
        "min_batch_compute": [f"{_n(k.SCAN['context'])} tokens", "one H200"],
        "latency_floor_ms": [f"({_n(k.FLOOR['chips'])} GPUs)", "FP8 weights"],
        "experts_read_qwen3": [f"{qwen['experts_per_token']} of the {qwen['n_routed_experts']} experts",
                               f"step of {share['batch']} sequences"],
        "usd_per_mtok": [f"{_n(serve['chips'])}-GPU MI300X", f"{_n(serve['batch'])} sequences",
                         f"{_n(serve['context'])} tokens", f"\\${_n(serve['usd_per_chip_hour'])} per GPU-hour"],
        "batch_from_price": [f"\\${k.PRICE.output:.2f} per million", f"({_n(k.PRICED['chips'])} GPUs",
                             f"\\${k.PRICED['usd_per_chip_hour']:.2f} per GPU-hour", "H200"],
        "regime_h200": [f"{_n(k.REGIME['batch'])} sequences", f"{_n(k.REGIME['context'])} tokens",
                        f"({_n(k.REGIME['chips'])} GPUs)", "H200", "cache stored in FP8", "BF16 rate"],
        "cheaper_chip": [f"{_n(k.CHEAPER['batch'])} sequences of {_n(k.CHEAPER['context'])} tokens",
                         "Llama 3.1 8B", "FP8 weights and an FP8 cache",
                         " and ".join(f"\\${hardware.get(c).rental_usd_per_hour[0]:.2f}" for c in k.CHEAPER["chips"])],
        "fast_premium_405b": [f"{_n(k.FAST_PRICE)} times the normal price", f"{_n(k.FAST_SPEED)} times faster",
                              f"{_n(k.PREMIUM['chips'])} H200", f"{_n(k.PREMIUM['batch'])} sequences",
                              f"{_n(k.PREMIUM['context'])} tokens", "Llama 3.1 405B"],
        "fast_batch_shrink": [f"{_n(k.FAST_PRICE)} times the normal price", f"{_n(k.FAST_SPEED)} times faster",
                              f"{_n(fast['context'])} tokens", f"{_n(fast['batch'])} sequences per step",
                              f"{_n(fast['chips'])} H100"],
    }
    prompts = _prompts()
    for ex_id, phrases in stated.items():
        text = " ".join(prompts[ex_id].split())
        for phrase in phrases:
            assert phrase in text, (ex_id, phrase)
    # a choice's prompt lists its options as the key words them; the premium's options quote the tier
    for ex_id in CHOICE_KEYS:
        for letter, option in EXERCISES[ex_id].options.items():
            assert f"- ({letter}) {option}" in prompts[ex_id], (ex_id, letter)
    assert f"{_n(k.FAST_SPEED * k.FAST_PRICE)} times smaller" in EXERCISES["fast_premium_405b"].options["a"]
    cases = {x: (c["chip"], c["model"], c["kv_bytes_per_element"], c["attention_dtype"])
             for x, c in k.LSTAR_CASES.items()}
    assert cases == {"a": ("H200", "kimi-k2", 2, "bf16"), "b": ("H200", "kimi-k2", 1, "bf16"),
                     "c": ("H200", "kimi-k2", 1, "fp8"), "d": ("B200", "deepseek-v3", 1, "bf16"),
                     "e": ("H100-SXM", "llama-3.1-70b", 1, "fp8")}


def test_exact_answers_refuse_their_neighbours():
    exact = [ex for ex in EXERCISES.values() if getattr(ex, "exact", False)]
    assert {ex.id for ex in exact} == {"min_batch_compute", "batch_from_price"}
    for ex in exact:
        key = ex.expected()
        assert judge(ex, key).status == RIGHT
        for near in (key - 1, key + 1, key + 0.5):
            assert judge(ex, near).status == WRONG, (ex.id, near)
