"""The roofline formulas: symbolic results checked against hand derivations, and limits."""
import math

import numpy as np
import pytest
import sympy as sp

from chalk import roofline
from chalk.notation import B, F, F_att, L, N_act, N_tot, W, b_kv, b_w, f_att, r, s


def test_balance_batch_solves_compute_equals_memory():
    # Hand derivation: B (2 N_act / F + f_att L / F_att) = (N_tot b_w + B L b_kv) / W, F = r W.
    hand = (N_tot * b_w / W) / (2 * N_act / (r * W) + f_att * L / F_att - L * b_kv / W)
    assert sp.simplify(roofline.balance_batch_r - hand) == 0
    assert sp.simplify(roofline.balance_batch_no_kv - r * b_w * s / 2) == 0


def test_balance_context_and_mfu_limit():
    # With attention at the weights' rate: 2 N_act / r = L (b_kv - f_att / r).
    assert sp.simplify(roofline.balance_context_same_format - 2 * N_act / (r * b_kv - f_att)) == 0
    # Without attention FLOPs the lecture's L* = 2 N_act / (r b_kv), and past it the best MFU at
    # infinite batch is L*/L.
    assert sp.simplify(roofline.balance_context.subs(f_att, 0) - 2 * N_act / (r * b_kv)) == 0
    no_attn = roofline.mfu_beyond_balance.subs(f_att, 0)
    assert sp.simplify(no_attn - roofline.balance_context.subs(f_att, 0) / L) == 0


def test_small_batch_penalty_is_r_bw_over_2_for_dense_and_moe():
    # At B = 1 a token reads N_act b_w bytes (an MoE reads only the k experts it picked) and at
    # large batch it costs 2 N_act / F: the ratio is F b_w / (2 W) = r b_w / 2, sparsity-free.
    assert sp.simplify(roofline.small_batch_penalty - r * b_w / 2) == 0
    h100 = 989.4e12 / 3.35e12  # H100 SXM datasheet: 989.4 dense BF16 TFLOP/s, 3.35 TB/s
    for model in ("deepseek-v3", "llama-3-70b", "mixtral-8x7b"):
        one = roofline.decode_point("H100-SXM", model, 1, 0, "bf16", chips=32, headroom=0)
        flat = one.t_compute  # compute time of one token at zero context
        assert one.t_step / flat == pytest.approx(h100 * 2 / 2, rel=1e-3)


def test_step_time_is_max_of_compute_and_memory_numerically():
    # A dense replica (N_routed = 0): attention 1e6 FLOP per cached token at 5e14 FLOP/s.
    args = dict(B=np.array([1.0, 100.0, 1e4]), L=1000.0, N_act=1e10, N_tot=1e11, b_w=1.0,
                b_kv=1e5, F=1e15, W=1e12, f_att=1e6, F_att=5e14, N_rout=0.0, k=1, n_exp=1)
    t = roofline.numeric["t_step"](*args.values())
    compute = args["B"] * (2 * 1e10 / 1e15 + 1e6 * 1000 / 5e14)
    memory = (1e11 + args["B"] * 1000 * 1e5) / 1e12
    np.testing.assert_allclose(t, np.maximum(compute, memory), rtol=1e-12)


def test_weight_read_counts_the_experts_a_batch_touches():
    # 64 routed experts of 1e9 parameters, 2 picked per token, 5e9 other parameters, 1 B/weight:
    # a batch of 3 misses each expert with probability (62/64)^3.
    args = dict(B=3.0, L=0.0, N_act=7e9, N_tot=69e9, b_w=1.0, b_kv=1.0, F=1e15, W=1e12,
                f_att=0.0, F_att=1e15, N_rout=64e9, k=2, n_exp=64)
    read = 69e9 - 64e9 * (62 / 64) ** 3
    assert roofline.numeric["t_weights"](*args.values()) == pytest.approx(read / 1e12, rel=1e-12)
    assert roofline.numeric["t_weights_all"](*args.values()) == pytest.approx(69e9 / 1e12)


def test_balance_batch_grows_with_context_and_diverges_at_l_star():
    l_star = roofline.balance_context_for("H100-SXM", "llama-3-70b")
    b0 = roofline.balance_batch("H100-SXM", "llama-3-70b")
    b_half = roofline.balance_batch("H100-SXM", "llama-3-70b", context=l_star / 2)
    assert b_half == pytest.approx(2 * b0, rel=1e-9)  # denominator halves
    assert roofline.balance_batch("H100-SXM", "llama-3-70b", context=l_star) == math.inf


def test_at_balance_batch_compute_equals_memory():
    b_star = roofline.balance_batch("GB200", "deepseek-v3", "fp8", context=1000)
    p = roofline.decode_point("GB200", "deepseek-v3", b_star, 1000, "fp8", chips=72)
    assert p.t_compute == pytest.approx(p.t_mem, rel=1e-9)


def test_regimes_and_money():
    small = roofline.decode_point("GB200", "deepseek-v3", 8, 0, "fp8", chips=72, usd_per_chip_hour=2)
    big = roofline.decode_point("GB200", "deepseek-v3", 20000, 0, "fp8", chips=72, usd_per_chip_hour=2)
    assert small.regime == "memory-bound (weights)" and big.regime == "compute-bound"
    # Cost per token = step time * 72 chips * $2/h / batch.
    assert small.usd_per_million_tokens == pytest.approx(1e6 * small.t_step * 72 * 2 / 3600 / 8)
    assert big.tokens_per_second == pytest.approx(20000 / big.t_step)
    assert big.mfu == 1.0 and small.mfu < 0.01


# DeepSeek-V3 in FP8 on a GB200 NVL72, by hand. Chips: 72 x (5,000 TFLOP/s FP8, 2,500 BF16, 8 TB/s,
# 186 GB), NVIDIA's GB200 NVL72 page divided by 72. Model: 671.03e9 parameters, 37.55e9 active
# (chalk's counts from the published config; the report rounds them to 671 B and 37 B), one byte
# each in FP8; its cache 61 layers x (512 + 64) x 2 B = 70,272 B per token and its absorbed
# attention 61 x 2 x 128 x (2 x 512 + 64) = 16.99e6 FLOP per cached token.
V3_RACK = dict(chip="GB200", model="deepseek-v3", dtype="fp8", chips=72, headroom=0.1)


def test_fast_mode_placement_reproduces_the_price_list_below_l_star():
    # Lecture notes 11: 6x the price for 2.5x the speed. At zero context B* = r b_w s / 2 =
    # (5,000 / 8) x 1/2 x 671.03 / 37.55 = 5,584.6; the placement puts normal service at 2.5 B* =
    # 13,961 and fast mode at B*/6 = 930.8. Fast mode still touches every expert (930 >> 256/8), so
    # its step is the full weight read, 671.03e9 B / 576e12 B/s = 1.1650 ms; normal service is
    # compute-bound, 2 x 13,961 x 37.55e9 / 360e15 = 2.912 ms.
    normal, fast = roofline.fast_mode(2.5, 6)
    b_star = 625 * 0.5 * 671.03 / 37.55
    assert roofline.balance_batch("GB200", "deepseek-v3", "fp8") == pytest.approx(b_star, rel=1e-3)
    p0 = roofline.decode_point(batch=normal * b_star, context=0, **V3_RACK)
    pf = roofline.decode_point(batch=fast * b_star, context=0, **V3_RACK)
    assert pf.t_step == pytest.approx(671.03e9 / 576e12, rel=1e-3)
    assert p0.t_step == pytest.approx(2 * 2.5 * b_star * 37.55e9 / 360e15, rel=1e-3)
    # The roofline's two steps give back the quoted ratios only because they sit on either side
    # of B*: a different model of the step (say, weights read per token) would not.
    assert p0.t_step / pf.t_step == pytest.approx(2.5, rel=1e-3)
    assert pf.usd_per_million_tokens / p0.usd_per_million_tokens == pytest.approx(6, rel=1e-3)


def test_fast_mode_placement_fails_past_l_star():
    # At 65,536 tokens (past this rack's L*) the step is KV-bound at every batch. The largest batch
    # that fits: (0.9 x 72 x 186e9 - 671.03e9) / (65,536 x 70,272) = 11,381.8e9 / 4,605.3e6 = 2,471,
    # whose step is (671.03e9 + 2,471 x 4,605.3e6) / 576e12 = 20.92 ms (compute: 2,471 x (75.10e9
    # / 360e15 + 65,536 x 16.99e6 / 180e15) = 15.80 ms). A 2.5x faster step, 8.369 ms, needs
    # B <= (8.369e-3 x 576e12 - 671.03e9) / 4,605.3e6 = 901.0: the batch shrinks 2,471 / 900 =
    # 2.75x, so batch size alone justifies 2.75 / 2.5 = 1.10x the price, not 6x.
    context = 65_536
    b0 = roofline.max_batch("GB200", "deepseek-v3", context, "fp8", 72)
    assert b0 == 2_471
    batches = np.arange(1, b0 + 1, dtype=float)
    kw = {k: v for k, v in V3_RACK.items() if k != "headroom"}
    # The placement is the roofline's own argument (Chapter 1): all-reduces left out.
    steps = roofline.step_time(batch=batches, context=context, allreduce=False, **kw)
    assert steps[-1] == pytest.approx(20.92e-3, rel=1e-3)
    bf = batches[np.flatnonzero(steps <= steps[-1] / 2.5).max()]
    assert bf == 900
    assert (b0 / bf) / 2.5 == pytest.approx(1.098, rel=1e-3)


def test_step_time_vectorised_over_batch():
    batches = np.array([1, 10, 100])
    t = roofline.step_time("H100-SXM", "llama-3.1-8b", batches, 1024, chips=1)
    assert t.shape == (3,) and np.all(np.diff(t) >= 0)
