"""Chapter 1, second edition: attention FLOPs in decode and the experts a small batch touches,
pinned to figures computed by hand from published model configurations and spec sheets."""
import math

import numpy as np
import pytest

from chalk import hardware, models, moe, roofline
from chalk.errors import ChalkError

V3 = models.get("deepseek-v3")
# DeepSeek-V3 config.json (huggingface.co/deepseek-ai/DeepSeek-V3): 61 layers, 128 heads,
# kv_lora_rank d_c = 512, qk_rope_head_dim d_R = 64, 256 routed experts, 8 per token.
V3_F_ATT = 61 * 2 * 128 * (2 * 512 + 64)
V3_KV = 61 * (512 + 64) * 2
H100_R = 989.4e12 / 3.35e12  # H100 SXM datasheet: 989.4 dense BF16 TFLOP/s, 3.35 TB/s


def test_mla_attention_flops_per_cached_token_and_per_byte():
    # Issue #8: about 17 MFLOP per cached token against 70 KB, about 240 FLOP per byte.
    assert V3.attention_flops_per_cached_token() == V3_F_ATT
    assert V3_F_ATT == pytest.approx(17e6, rel=0.01)
    assert V3.kv_bytes_per_token(2) == V3_KV
    assert V3_F_ATT / V3_KV == pytest.approx(240, rel=0.02)


def test_gqa_attention_is_a_few_flops_per_byte():
    # Llama 3 70B: 80 layers, 64 query heads, 8 KV heads of 128. Scores and values: 4 x 64 x 128
    # FLOPs per layer per cached token against 2 x 8 x 128 x 2 bytes: 8 FLOP/B.
    m = models.get("llama-3-70b")
    assert m.attention_flops_per_cached_token() == 80 * 4 * 64 * 128
    assert m.attention_flops_per_cached_token() / m.kv_bytes_per_token(2) == pytest.approx(8)


def test_sliding_window_layers_attend_to_their_window_only():
    # Gemma 2 9B alternates local (w = 4,096) and global layers: 21 of each, 16 heads of 256.
    g = models.get("gemma-2-9b")
    per_layer = 4 * 16 * 256
    assert g.attention_flops_per_cached_token() == 21 * per_layer
    assert g.attention_flops_windowed(10_000) == 21 * per_layer * 4096
    assert g.attention_flops_windowed(1_000) == 21 * per_layer * 1000


def test_deepseek_v3_balance_context_on_h100_is_about_20k_not_3_6k():
    # L* = 2 N_act / (r b_kv - f_att) with BF16 weights and attention.
    rep = roofline.replica("H100-SXM", "deepseek-v3", "bf16")
    hand = 2 * V3.active_params / (H100_R * V3_KV - V3_F_ATT)
    assert rep.balance_context() == pytest.approx(hand, rel=1e-3)
    assert rep.balance_context() == pytest.approx(20_000, rel=0.05)  # issue #8's figure
    # Without the attention term the lecture's model gives 2 N_act / (r b_kv): about 3,600.
    assert 2 * V3.active_params / (H100_R * V3_KV) == pytest.approx(3_619, rel=0.01)


def test_fp8_weights_with_bf16_attention_halve_the_mla_balance_context():
    # FP8 doubles F for the matmuls while attention stays at the BF16 rate F/2:
    # L* = 2 N_act / (2 r b_kv - 2 f_att), half the BF16 figure.
    bf16 = roofline.replica("H100-SXM", "deepseek-v3", "bf16").balance_context()
    fp8 = roofline.replica("H100-SXM", "deepseek-v3", "fp8").balance_context()
    assert fp8 == pytest.approx(bf16 / 2, rel=1e-3)


def test_no_balance_context_where_attention_flops_outrun_kv_bytes():
    # H200: 989.4 TFLOP/s over 4.8 TB/s = 206 FLOP/B < 242: MLA decode stays compute-bound at any
    # context, so B* never diverges.
    assert 989.4e12 / 4.8e12 < V3_F_ATT / V3_KV
    assert roofline.balance_context_for("H200", "deepseek-v3", "bf16") == math.inf
    assert roofline.balance_batch("H200", "deepseek-v3", "bf16", context=1_000_000) < math.inf
    # A GQA model on the same chip does cross over.
    assert roofline.balance_context_for("H200", "llama-3-70b", "bf16") < 3_000


@pytest.mark.parametrize("batch, share", [(1, 0.03), (32, 0.64), (100, 0.96)])
def test_share_of_deepseek_v3_routed_experts_a_step_reads(batch, share):
    # Issue #8: 3% of the routed experts at B = 1, 64% at 32, 96% at 100 (1 - (1 - 8/256)^B).
    rep = roofline.replica("H100-SXM", "deepseek-v3", "fp8", chips=16)
    p = rep.params(0)
    read = roofline.numeric["t_weights"](batch, 0, *p) * rep.chips * rep.chip.hbm_bandwidth
    unread = V3.total_params * 1.0 - read
    assert 1 - unread / V3.routed_expert_params == pytest.approx(share, abs=0.006)


def test_experts_touched_agrees_with_a_routing_simulation():
    # chalk.moe draws each token's 8 experts without replacement (Gumbel top-k) and counts the
    # distinct experts hit; the formula is the expectation. 64 trials: standard error < 1 expert.
    rep = roofline.replica("H100-SXM", "deepseek-v3", "fp8", chips=16)
    p = rep.params(0)
    for tokens in (4, 32, 128):
        run = moe.simulate_routing("deepseek-v3", chips=8, tokens=tokens, trials=64, seed=1)
        read = roofline.numeric["t_weights"](tokens, 0, *p) * rep.chips * rep.chip.hbm_bandwidth
        formula = 256 * (read - (V3.total_params - V3.routed_expert_params)) / V3.routed_expert_params
        sem = run.experts_touched.std(ddof=1) / math.sqrt(64)
        assert abs(run.experts_touched.mean() - formula) < 4 * sem + 0.5


def test_a_token_at_batch_one_reads_exactly_the_active_weights():
    # Routed experts skipped by one token: N_tot - N_act, so t_weights(1) = N_act b_w / W.
    rep = roofline.replica("GB200", "deepseek-v3", "fp8", chips=72)
    t1 = roofline.numeric["t_weights"](1, 0, *rep.params(0))
    assert t1 == pytest.approx(V3.active_params * 1.0 / (72 * hardware.get("GB200").hbm_bandwidth), rel=1e-9)


def test_graph_a_rises_below_a_hundred_sequences_for_deepseek_v3():
    # The weight read is not flat at small batch: from B = 1 to 100 it grows by the share of
    # experts touched, 1 - (1 - 8/256)^100 = 96% of 654 B routed weights against 37 B at B = 1.
    times = roofline.step_time("GB200", "deepseek-v3", np.array([1.0, 100.0]), 0, "fp8", chips=72, allreduce=False)
    dense_and_picked = V3.total_params - V3.routed_expert_params * (1 - 8 / 256) ** 100
    assert times[1] / times[0] == pytest.approx(dense_and_picked / V3.active_params, rel=0.01)
    assert times[1] / times[0] > 10


@pytest.mark.parametrize("model, chip, dtype, chips", [
    ("deepseek-v3", "GB200", "fp8", 72), ("mixtral-8x7b", "H100-SXM", "bf16", 2),
    ("jamba-v0.1", "H100-SXM", "bf16", 2)])
def test_closed_form_balance_batch_is_the_exact_root(model, chip, dtype, chips):
    # B* is solved with every expert read; bisect t_compute = t_mem with the experts actually
    # touched and check the closed form is the root (the dropped term is below 1e-10 there).
    rep = roofline.replica(chip, model, dtype, chips)
    p = rep.params(256)
    gap = lambda b: roofline.numeric["t_compute"](b, 256, *p) - roofline.numeric["t_mem"](b, 256, *p)
    low, high = 1.0, 1e7
    for _ in range(200):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if gap(mid) < 0 else (low, mid)
    assert roofline.balance_batch(chip, model, dtype, context=256) == pytest.approx(low, rel=1e-6)


def test_phases_in_series_bound_the_overlapped_step_from_above():
    # Llama 3 70B on 8 H100s at its balance context and a huge batch: overlapped, compute equals
    # memory (MFU 1); in series, matmuls (2 N B / F) then the KV read (B L b_kv / W), each with
    # the other resource idle, so MFU = t_compute / (t_matmul + t_kv) at large B.
    rep = roofline.replica("H100-SXM", "llama-3-70b", "bf16", chips=8)
    l_star = rep.balance_context()
    b = 1e7
    p = rep.params(l_star)
    t = {n: float(roofline.numeric[n](b, l_star, *p)) for n in ("t_matmul", "t_attn", "t_kv", "t_step", "t_step_phases")}
    assert t["t_step_phases"] == pytest.approx(t["t_matmul"] + t["t_kv"], rel=1e-6)
    mfu_series = (t["t_matmul"] + t["t_attn"]) / t["t_step_phases"]
    # 2 N / r per sequence against L* b_kv: at L* they are equal less the attention term, so the
    # series bound is just over one half.
    assert 0.5 < mfu_series < 0.53
    assert t["t_step"] < t["t_step_phases"]


# GB200 datasheet (NVIDIA GB200 NVL72, per GPU): 5 PFLOP/s dense FP8, 2.5 PFLOP/s dense BF16, 8 TB/s.
GB200_R_FP8 = 5e15 / 8e12


@pytest.mark.parametrize("attention, cache, f_over_f_att, kv_bytes, issue_figure", [
    ("bf16", "bf16", 2, V3_KV, 7_556),        # the chapter's default: FP8 weights, BF16 attention
    ("fp8", "bf16", 1, V3_KV, 2_800),         # FP8 attention kernels (FlashAttention-3)
    ("fp8", "fp8", 1, V3_KV / 2, 15_000),     # FP8 attention over an FP8 cache
])
def test_fp8_attention_moves_deepseek_v3_balance_context_on_gb200(attention, cache, f_over_f_att, kv_bytes,
                                                                  issue_figure):
    # Issue #24, finding 3: L* = 2 N_act / (r b_kv - f_att F/F_att), FP8 weights on a GB200.
    hand = 2 * V3.active_params / (GB200_R_FP8 * kv_bytes - V3_F_ATT * f_over_f_att)
    got = roofline.balance_context_sensitivity("GB200", "deepseek-v3", "fp8")[(attention, cache)]
    assert got == pytest.approx(hand, rel=1e-6)
    assert got == pytest.approx(issue_figure, rel=0.02)
    assert roofline.balance_context_for("GB200", "deepseek-v3", "fp8", 2 if cache == "bf16" else 1,
                                        attention_dtype=attention) == got


def test_bf16_attention_over_an_fp8_cache_has_no_balance_context_on_gb200():
    # 2 f_att = 34 MFLOP against r b_kv = 625 x 35 kB = 22 MFLOP: attention outlasts the cache read.
    assert 2 * V3_F_ATT > GB200_R_FP8 * V3_KV / 2
    assert roofline.balance_context_sensitivity("GB200", "deepseek-v3", "fp8")[("bf16", "fp8")] == math.inf


def test_sustained_clock_and_query_tokens_in_the_balance_context():
    # H800 in BF16: 989.4 TFLOP/s nominal, 865 sustained (FlashMLA's write-up), 3.35 TB/s.
    clock = 865 / 989.4
    r_sustained = 865e12 / 3.35e12
    hand = 2 * V3.active_params / (r_sustained * V3_KV - V3_F_ATT)
    assert roofline.balance_context_for("H800", "deepseek-v3", clock=clock) == pytest.approx(hand, rel=1e-6)
    # Two query tokens: 2 x f_att = 34 MFLOP against r b_kv = 295 x 70 kB = 20.8 MFLOP: no crossing.
    assert roofline.balance_context_for("H800", "deepseek-v3", query_tokens=2) == math.inf
    # Llama 3 70B on an H100 with two query tokens: 4 N_act / (r b_kv - 2 f_att).
    m = models.get("llama-3-70b")
    hand = 4 * m.active_params / (H100_R * m.kv_bytes_per_token(2) - 2 * m.attention_flops_per_cached_token())
    assert roofline.balance_context_for("H100-SXM", m, query_tokens=2) == pytest.approx(hand, rel=1e-6)


@pytest.mark.parametrize("kw", [dict(clock=0), dict(clock=1.5), dict(query_tokens=0), dict(query_tokens=1.5),
                                dict(attention_dtype="fp64")])
def test_balance_context_variants_refuse_bad_input(kw):
    with pytest.raises(ChalkError):
        roofline.balance_context_for("H800", "deepseek-v3", **kw)
