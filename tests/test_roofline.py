"""The roofline formulas: symbolic results checked against hand derivations, and limits."""
import math

import numpy as np
import pytest
import sympy as sp

from chalk import roofline
from chalk.notation import B, F, L, N_act, N_tot, W, b_kv, b_w, r, s


def test_balance_batch_solves_compute_equals_memory():
    # Hand derivation: 2 B N_act / F = (N_tot b_w + B L b_kv) / W.
    hand = N_tot * b_w / (2 * N_act / r - L * b_kv)
    assert sp.simplify(roofline.balance_batch_r - hand) == 0
    assert sp.simplify(roofline.balance_batch_no_kv - r * b_w * s / 2) == 0


def test_balance_context_and_mfu_limit():
    assert sp.simplify(roofline.balance_context - 2 * N_act / (r * b_kv)) == 0
    # Past L*, the best MFU at infinite batch is L*/L.
    assert sp.simplify(roofline.mfu_beyond_balance - roofline.balance_context / L) == 0


def test_step_time_is_max_of_compute_and_memory_numerically():
    args = dict(B=np.array([1.0, 100.0, 1e4]), L=1000.0, N_act=1e10, N_tot=1e11, b_w=1.0,
                b_kv=1e5, F=1e15, W=1e12)
    t = roofline.numeric["t_step"](*args.values())
    compute = 2 * args["B"] * 1e10 / 1e15
    memory = (1e11 + args["B"] * 1000 * 1e5) / 1e12
    np.testing.assert_allclose(t, np.maximum(compute, memory), rtol=1e-12)


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


def test_fast_mode_inversion_matches_lecture_exercise():
    # Lecture notes §11: 6x price for 2.5x speed -> normal at 2.5 B*, fast at B*/6, 15x fewer.
    normal, fast = roofline.fast_mode(2.5, 6)
    assert normal == 2.5 and fast == pytest.approx(1 / 6)
    assert normal / fast == pytest.approx(15)


def test_step_time_vectorised_over_batch():
    batches = np.array([1, 10, 100])
    t = roofline.step_time("H100-SXM", "llama-3.1-8b", batches, 1024, chips=1)
    assert t.shape == (3,) and np.all(np.diff(t) >= 0)
