"""chalk.measure: the analysis on synthetic step times with known answers, bad input, and the real
measurement once as a smoke test (it asserts nothing that load on the machine could break)."""
import math

import numpy as np
import pytest

from chalk import ChalkError, measure
from chalk.cli import main
from chalk.teaching import lab
from chalk.teaching.exercises import RIGHT, UNANSWERED, WRONG

F, W = 60e9, 12e9  # r = 5 FLOP/byte; float32 (4 bytes): B* = r b_w / 2 = 10 by hand
N = 8 * 2048 * 2048  # weights of the dense step
BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128])


def dense(seconds, batches=BATCHES):
    return measure.StepSweep(np.asarray(batches), np.asarray(seconds, dtype=float), float(N), float(N))


def roofline_times(flops=F, bandwidth=W, batches=BATCHES):
    """max(2 B N / F, 4 N / W), written out by hand."""
    return np.maximum(2 * batches * N / flops, 4 * N / bandwidth)


def test_exact_roofline_gives_back_its_balance_batch_and_ratios():
    cmp = measure.compare(dense(roofline_times()), F, W, fit_from=1)
    assert cmp.predicted_balance_batch == pytest.approx(10)
    assert cmp.knee.verdict == "knee"
    assert cmp.knee.balance_batch == pytest.approx(10, rel=0.01)  # the knee grid's resolution
    assert cmp.balance_ratio == pytest.approx(1, rel=0.01)
    assert cmp.end_ratios == pytest.approx((1, 1))
    np.testing.assert_allclose(cmp.predicted_seconds, roofline_times())
    # Memory-bound below B* = 10 reads at W, compute-bound above it runs at F.
    assert cmp.bandwidth_fractions[:4] == pytest.approx([1, 1, 1, 1])
    assert cmp.flops_fractions[4:] == pytest.approx([1, 1, 1, 1])
    assert cmp.flops_fractions[0] == pytest.approx(1 / 10)  # 2 N / F over 4 N / W at B = 1


def test_a_machine_at_half_its_flops_shows_half_the_balance_batch():
    # Measured steps that run at F/2: the knee at 5, the top end twice the prediction, F half used.
    cmp = measure.compare(dense(roofline_times(flops=F / 2)), F, W, fit_from=1)
    assert cmp.knee.balance_batch == pytest.approx(5, rel=0.01)
    assert cmp.balance_ratio == pytest.approx(0.5, rel=0.01)
    assert cmp.end_ratios == pytest.approx((1, 2))
    assert cmp.flops_fractions[-1] == pytest.approx(0.5)


def test_noise_moves_the_knee_little():
    rng = np.random.default_rng(1)
    noisy = roofline_times() * np.exp(rng.normal(0, 0.05, BATCHES.size))
    knee = measure.fit_roofline(BATCHES, noisy)
    assert knee.verdict == "knee" and knee.balance_batch == pytest.approx(10, rel=0.15)


def test_no_overlap_still_has_a_knee_near_where_the_terms_cross():
    # t = a + c B: reads and arithmetic one after the other. The terms cross at a/c = 16.
    knee = measure.fit_roofline(BATCHES, 1 + BATCHES / 16)
    assert knee.verdict == "knee" and 16 / 1.5 < knee.balance_batch < 16 * 1.5


@pytest.mark.parametrize("times, verdict", [
    (3e-3 * BATCHES, "rising over the whole sweep"),
    (np.full(BATCHES.size, 7e-3), "flat over the whole sweep"),
    (1e-3 * BATCHES ** 0.5, "one power law"),
])
def test_a_curve_without_a_knee_is_reported_as_such(times, verdict):
    knee = measure.fit_roofline(BATCHES, times)
    assert knee.balance_batch is None and verdict in knee.verdict
    assert measure.compare(dense(times), F, W, fit_from=1).balance_ratio is None


def test_fit_from_leaves_the_smallest_batch_out_of_the_knee_only():
    # A batch of one twice as fast as the floor (another kernel) would drag a fitted knee down.
    times = roofline_times()
    times[0] /= 2
    cmp = measure.compare(dense(times), F, W)
    assert cmp.knee.balance_batch == pytest.approx(10, rel=0.01)
    assert cmp.end_ratios[0] == pytest.approx(0.5)


def test_moe_predictions_count_only_the_experts_touched():
    # 2 layers of 16 experts of 1024^2 weights, top-2: by hand, B tokens touch 16 (1 - (7/8)^B).
    layers, experts, k, d = 2, 16, 2, 1024
    batches = np.array([1, 2, 4, 64])
    touched = np.array([2, 16 * (1 - (7 / 8) ** 2), 16 * (1 - (7 / 8) ** 4), 16 * (1 - (7 / 8) ** 64)])
    assert measure.predicted_experts_touched(batches, k, experts) == pytest.approx(touched)
    sweep = measure.StepSweep(batches, np.ones(4), layers * k * d * d, layers * experts * d * d, experts, k)
    np.testing.assert_allclose(measure.predicted(sweep, F, W, "t_weights"), layers * touched * d * d * 4 / W)
    # B* with every expert read: r b_w s / 2, s = 8 the total over active weights.
    assert measure.compare(sweep, F, W).predicted_balance_batch == pytest.approx(5 * 4 * 8 / 2)


@pytest.mark.parametrize("call, name", [
    (lambda: measure.fit_roofline([1, 2], [1, 2]), "batches"),
    (lambda: measure.fit_roofline([1, 4, 2], [1, 2, 3]), "batches"),
    (lambda: measure.fit_roofline([0, 1, 2], [1, 2, 3]), "batches"),
    (lambda: measure.fit_roofline([1.5, 2, 3], [1, 2, 3]), "batches"),
    (lambda: measure.fit_roofline([1, 2, 4], [1, 2]), "seconds"),
    (lambda: measure.fit_roofline([1, 2, 4], [1, -2, 3]), "seconds"),
    (lambda: measure.fit_roofline([1, 2, 4], [1, math.nan, 3]), "seconds"),
    (lambda: measure.fit_roofline([1, 2, 4], "fast"), "seconds"),
    (lambda: measure.compare(dense(roofline_times()), 0, W), "flops"),
    (lambda: measure.compare(dense(roofline_times()), F, -1), "bandwidth"),
    (lambda: measure.compare(dense(roofline_times()), F, W, fit_from=0), "fit_from"),
    (lambda: measure.predicted(dense(roofline_times()), F, W, "t_kv"), "term"),
    (lambda: measure.ceilings(threads=0), "threads"),
    (lambda: measure.ceilings(repeats=1.5), "repeats"),
    (lambda: measure.ceilings(stream_bytes=1000), "stream_bytes"),
    (lambda: measure.dense_step(batches=[1, 2]), "batches"),
    (lambda: measure.dense_step(width=0), "width"),
    (lambda: measure.moe_step(experts=4, top_k=5), "top_k"),
    (lambda: measure.moe_step(layers=True), "layers"),
])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ChalkError, match=name):
        call()


def test_cli_refuses_a_bad_thread_count(capsys):
    with pytest.raises(SystemExit) as done:
        main(["measure", "--threads", "0"])
    assert done.value.code == 2 and "threads must be a whole number from 1" in capsys.readouterr().err


def test_the_real_measurement_runs():
    """Small shapes, so it is quick; load can slow it but not make these fail."""
    c = measure.ceilings(repeats=2, matmul_size=128, stream_bytes=4 * 2**20)
    assert c.threads in (1, None)
    assert all(math.isfinite(v) and v > 0 for v in (c.flops, c.bandwidth, c.ratio))
    d = measure.dense_step(batches=(1, 2, 4, 8), layers=2, width=256, repeats=2)
    m = measure.moe_step(batches=(1, 2, 4, 8), layers=2, width=128, experts=8, top_k=2, repeats=2)
    for sweep in (d, m):
        assert sweep.seconds.shape == (4,) and np.all(np.isfinite(sweep.seconds)) and np.all(sweep.seconds > 0)
    assert (d.layers, d.width, m.layers, m.width) == (2, 256, 2, 128)
    # Each token picks top_k distinct experts, and a step cannot touch more than there are.
    assert m.experts_touched[0] == 2 and np.all(m.experts_touched <= 8)
    lab = measure.Lab(c, d, m, measure.compare(d, c.flops, c.bandwidth), measure.compare(m, c.flops, c.bandwidth))
    text = measure.table(lab)
    assert "r = F/W" in text and "balance batch: predicted" in text and text.count("\n") > 15


def test_blas_threads_sets_and_restores_the_count():
    blas = measure._openblas()
    with measure.blas_threads(1) as used:
        assert used in (1, None)
    if blas is not None:  # NumPy's own OpenBLAS: the count is set inside and put back after
        setter, getter = blas
        setter(2)
        with measure.blas_threads(1) as used:
            assert used == getter() == 1
        assert getter() == 2


def test_the_lab_exercise_is_judged_against_the_readers_own_ceilings():
    # By hand: four cores at F each over one W give r = 4 x 60/12 = 20, B* = r b_w / 2 = 20 x 4 / 2 = 40.
    here = measure.Ceilings(flops=60e9, bandwidth=12e9, threads=1, matmul_size=1024, stream_bytes=2**28)
    assert lab.check("balance_four_cores", 40, here).status == RIGHT
    assert lab.check("balance_four_cores", 41, here).status == RIGHT  # within 5%
    assert lab.check("balance_four_cores", ..., here).status == UNANSWERED
    for wrong, hint in ((10, "balance batch of one core"), (20, "float32"), (80, "2 FLOPs"), (55, "Hint")):
        result = lab.check("balance_four_cores", wrong, here)
        assert result.status == WRONG and hint in result.message, (wrong, result.message)
    # Another machine, another answer: the key is not a constant.
    slower = measure.Ceilings(flops=30e9, bandwidth=12e9, threads=1, matmul_size=1024, stream_bytes=2**28)
    assert lab.check("balance_four_cores", 40, slower).status == WRONG
    assert lab.check("balance_four_cores", 20, slower).status == RIGHT
    with pytest.raises(ChalkError, match="exercise_id"):
        lab.check("balance_two_cores", 40, here)
