"""The train timetable: the SymPy closed form against hand values, and the serving loop against
hand-worked schedules, statistics, conservation laws and the closed form where it applies.

Every expected number is worked out here from published inputs: the models' config.json files
(parameter counts and KV bytes by hand) and the H100 SXM datasheet (3.35 TB/s, 989.4 dense BF16
TFLOP/s; 80 GB nominal, 81,559 MiB as nvidia-smi reports it), never read back from the code under test.
"""
import math

import numpy as np
import pytest
import sympy as sp

from chalk import roofline, timetable
from chalk.errors import ChalkError, DoesNotFit
from chalk.notation import T, lam

W_H100, F_H100, HBM_H100 = 3.35e12, 989.4e12, 81_559 * 2**20
# Llama 3.1 8B (config.json): 32 layers, d 4096, 32 query and 8 KV heads of 128, FFN 14336 gated,
# vocabulary 128256 untied; norms left out (66 vectors, 0.003%), as the catalog leaves them out.
N_8B = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 2 * 128256 * 4096
KV_8B = 2 * 8 * 128 * 32 * 2            # K and V, 8 heads of 128, 32 layers, 2 bytes: per token
ATT_8B = 4 * 32 * 128 * 32              # QK^T and the sum over V: 2 d_head each, 32 heads, 32 layers
# Llama 3 70B: 80 layers, d 8192, 64 query and 8 KV heads of 128, FFN 28672, vocabulary 128256.
N_70B = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 2 * 128256 * 8192
KV_70B = 2 * 8 * 128 * 80 * 2
LLAMA_8B = dict(chip="H100-SXM", model="llama-3.1-8b", dtype="bf16", chips=1)
LLAMA_70B = dict(chip="H100-SXM", model="llama-3-70b", dtype="bf16", chips=8)
ATT_70B = 4 * 64 * 128 * 80             # QK^T and the sum over V: 2 d_head each, 64 heads, 80 layers
T_70B = 2 * N_70B / (8 * W_H100)        # the 70B replica's weight read, 5.27 ms


def weight_bound_8b(kv_tokens):
    """A pass of the 8B model on one H100 that is memory-bound: weights plus the KV it touches."""
    return (2 * N_8B + kv_tokens * KV_8B) / W_H100


def test_closed_form_matches_hand_derivation():
    # Wait uniform on (0, T]: mean T/2, worst T; the pass that prefills the prompt adds T.
    hand = {"wait_mean": T / 2, "wait_worst": T, "ttft_mean": 3 * T / 2, "ttft_worst": 2 * T}
    for name, expr in hand.items():
        assert sp.simplify(timetable.CLOSED_FORM[name] - expr) == 0, name
    assert sp.simplify(timetable.batch_mean - lam * T) == 0
    assert timetable.closed_form(0.02) == pytest.approx(
        {"wait_mean": 0.01, "wait_worst": 0.02, "ttft_mean": 0.03, "ttft_worst": 0.04})


def test_three_requests_worked_by_hand():
    # Llama 3.1 8B on one H100, prompts of 100 tokens, 3 output tokens each. Every pass is
    # memory-bound: the largest compute, a 100-token prefill, is 100 * 2 * 8.03e9 / 989.4e12 =
    # 1.62 ms (+ 3 us of attention) against a weight read of 2 * 8.03e9 / 3.35e12 = 4.79 ms.
    #   pass 0 at 0:   A prefills 100                  -> A's 1st token
    #   pass 1:        A decodes at 101, B prefills 100 -> A 2nd, B 1st   (B arrived at 1 ms, in pass 0)
    #   pass 2:        A at 102, B at 101               -> A 3rd, done; B 2nd  (C arrives at 12 ms, in pass 2)
    #   pass 3:        B at 102, C prefills 100          -> B 3rd, done; C 1st
    #   pass 4, 5:     C at 101, then 102                -> C done
    p = [weight_bound_8b(k) for k in (100, 201, 203, 202, 101, 102)]
    end = np.cumsum(p)
    run = timetable.simulate(**LLAMA_8B, arrivals=[0.0, 0.001, 0.012], prompt=100, output=3)
    np.testing.assert_allclose(run.pass_length, p, rtol=1e-9)
    assert np.all(run.pass_compute < run.pass_length)
    np.testing.assert_allclose(run.ttft, [end[0], end[1] - 0.001, end[3] - 0.012], rtol=1e-9)
    np.testing.assert_allclose(run.departures, [0.0, end[0], end[2]], rtol=1e-9)
    np.testing.assert_allclose(run.finished, [end[2], end[3], end[5]], rtol=1e-9)
    np.testing.assert_allclose(run.tpot, [(p[1] + p[2]) / 2, (p[2] + p[3]) / 2, (p[4] + p[5]) / 2], rtol=1e-9)
    np.testing.assert_array_equal(run.pass_batch, [1, 2, 2, 2, 1, 1])
    # A pass with no prefill is exactly the roofline's decode step at the batch's mean context.
    rep = roofline.replica(**LLAMA_8B)
    assert run.pass_length[4] == pytest.approx(roofline.numeric["t_step"](1, 101, *rep.params(101)), rel=1e-12)


def test_one_seat_makes_the_next_request_wait_for_the_first_to_finish():
    # As above with one seat: B finds A running at its next departure (end of pass 0) and boards
    # when A's last token is out (end of pass 2); C, arriving during pass 2, waits for B the same way.
    p = [weight_bound_8b(k) for k in (100, 101, 102) * 3]
    end = np.cumsum(p)
    run = timetable.simulate(**LLAMA_8B, arrivals=[0.0, 0.001, 0.012], prompt=100, output=3, seats=1)
    np.testing.assert_allclose(run.pass_length, p, rtol=1e-9)
    np.testing.assert_allclose(run.departures, [0.0, end[0], end[2]], rtol=1e-9)
    np.testing.assert_allclose(run.boarded, [0.0, end[2], end[5]], rtol=1e-9)
    np.testing.assert_allclose(run.ttft, [end[0], end[3] - 0.001, end[6] - 0.012], rtol=1e-9)
    assert run.summary().seat_waited == pytest.approx(2 / 3)


@pytest.fixture(scope="module")
def weight_bound_run():
    # 190 requests/s of 16 + 32 tokens on Llama 3 70B, 8 x H100: about one arrival per pass and
    # some 30 sequences in flight, so every pass is dominated by the weight read, the KV cache adds
    # under 1% and seats are plentiful. The closed form's assumptions hold; nothing in the loop
    # knows them.
    return timetable.simulate(**LLAMA_70B, rate=190, n_requests=20_000, prompt=16, output=32, seed=7)


def test_weight_bound_loop_recovers_the_closed_form(weight_bound_run):
    run = weight_bound_run
    n = len(run.arrivals)
    # Every pass weight-bound: at most batch_max + 16 per prefill tokens of 17.8 us against 5.27 ms.
    assert run.pass_compute.max() < T_70B
    # Passes last T (1 + eps): KV of at most batch_max sequences of 48 tokens beside 141 GB of weights.
    eps = run.pass_batch.max() * 48 * KV_70B / (2 * N_70B)
    assert eps < 0.01
    np.testing.assert_array_less(T_70B * (1 - 1e-12), run.pass_length)
    np.testing.assert_array_less(run.pass_length, T_70B * (1 + eps))
    # Waits uniform on (0, T]: standard error T / sqrt(12 n) = 0.2% of T/2 here; allow 4 of them.
    se = T_70B / math.sqrt(12 * n)
    waits, ttft = run.departure_waits, run.ttft
    assert T_70B / 2 - 4 * se < waits.mean() < T_70B * (1 + eps) / 2 + 4 * se
    assert 1.5 * T_70B - 4 * se < ttft.mean() < 1.5 * T_70B * (1 + eps) + 4 * se
    # The longest of n uniform waits falls short of T by about T/n; short by more than 0.1% has
    # probability (1 - 1e-3)^20000 ~ 2e-9.
    assert T_70B * (1 - 1e-3) < waits.max() <= T_70B * (1 + eps)
    assert 2 * T_70B * (1 - 1e-3) < ttft.max() <= 2 * T_70B * (1 + eps)
    assert np.all(run.boarded == run.departures)  # nobody waited for a seat


def test_littles_law_holds_in_the_event_log(weight_bound_run):
    # Sequences in the replica, integrated over the pass log, equal each request's time in the
    # batch summed from its own timestamps: the time average of the batch is throughput x time.
    for run in (weight_bound_run, _seat_bound_run()):
        s = run.summary()
        in_passes = np.dot(run.pass_batch, run.pass_length)
        per_request = np.sum(run.finished - run.boarded)
        assert in_passes == pytest.approx(per_request, rel=1e-9)
        assert s.batch_mean == pytest.approx(s.throughput * s.time_in_batch_mean, rel=1e-9)


def test_every_token_is_computed_once_with_causal_attention():
    # Over a run each request costs p + o - 1 tokens of matmuls (the prefill yields the first
    # output token) and attention over p (p + 1) / 2 tokens in its prefill plus p + j for its j-th
    # decode step, j = 1 .. o - 1.
    p, o, n = 300, 40, 400
    run = timetable.simulate(**LLAMA_8B, rate=30.0, n_requests=n, prompt=p, output=o, seed=3)
    matmul = (p + o - 1) * 2 * N_8B
    attention = ATT_8B * (p * (p + 1) / 2 + (o - 1) * p + o * (o - 1) / 2)
    assert run.pass_compute.sum() == pytest.approx(n * (matmul + attention) / F_H100, rel=1e-9)


def _seat_bound_run():
    # Llama 3.1 8B on one H100 with 90% of its 85.52 GB usable: 60.9 GB beside the weights, 4096 + 1024
    # tokens of 131 kB each reserve 0.67 GB: 90 seats. A sequence lives ~1024 passes of ~20 ms,
    # so seats turn over at ~4.4 requests/s, below the 5/s offered.
    return timetable.simulate(**LLAMA_8B, rate=5.0, n_requests=300, prompt=4096, output=1024, seed=5)


def test_hbm_seats_are_never_exceeded_and_do_fill():
    run = _seat_bound_run()
    seats = (0.9 * HBM_H100 - 2 * N_8B) // (5120 * KV_8B)
    assert seats == 90
    assert run.pass_batch.max() == seats
    # Reserved KV of the requests in each pass, from their own board and finish times.
    inside = (run.boarded[None, :] <= run.pass_start[:, None]) & (run.pass_start[:, None] < run.finished[None, :])
    np.testing.assert_array_equal(inside.sum(axis=1), run.pass_batch)
    assert np.max(inside @ run.reserved) <= run.kv_budget
    s = run.summary()
    assert s.seat_waited > 0.1 and s.wait_worst > 10 * s.step_mean  # queued for seats, not a step


def test_scheduler_seat_cap():
    run = timetable.simulate(**LLAMA_8B, rate=200.0, n_requests=500, prompt=64, output=64, seats=10, seed=1)
    assert run.pass_batch.max() == 10


def test_more_load_never_means_less_wait():
    # p = 128, o = 256 on the 70B replica: the matmuls alone use 383 x 2 N_act / F = 6.8 ms of
    # peak FLOPs per request, so 140/s needs 96% of the FLOPs and 14/s needs 10%.
    rates = [14, 50, 100, 140]
    runs = timetable.sweep("rate", rates, **LLAMA_70B, n_requests=1500, prompt=128, output=256, seed=2)
    for name in ("departure_wait_mean", "step_mean", "ttft_mean", "batch_mean"):
        values = [getattr(s, name) for s in runs]
        assert values == sorted(values), name
    low, high = runs[0], runs[-1]
    assert low.compute_bound < 0.01 and low.step_mean < 1.05 * T_70B
    assert high.compute_bound > 0.3 and high.step_mean > 1.2 * T_70B and high.mfu > 0.8
    prompts = timetable.sweep("prompt", [128, 1024, 4096], **LLAMA_70B, rate=4.0, n_requests=300,
                              output=128, seed=2)
    ttft = [s.ttft_mean for s in prompts]
    assert ttft == sorted(ttft)
    # A 4096-token prefill alone is 4096 x 17.8 us = 73 ms of matmuls: 14 times the weight read.
    assert prompts[-1].prefill_pass_mean > 4096 * 2 * N_70B / (8 * F_H100)


def test_offered_load_worked_by_hand():
    # 128 + 256 tokens on the 70B replica: 383 tokens of matmuls and causal attention over
    # 1 + 2 + ... + 383 = 384 x 383 / 2 cached tokens, at 8 x 989.4 TFLOP/s: 6.85 ms a request.
    per_request = (383 * 2 * N_70B + ATT_70B * 384 * 383 / 2) / (8 * F_H100)
    chat = timetable.offered_load(**LLAMA_70B, rate=130, prompt=128, output=256)
    assert chat.compute_share == pytest.approx(130 * per_request, rel=1e-9)
    assert chat.compute_share == pytest.approx(0.891, abs=5e-4)
    # 1024 + 2048 tokens: 90% of 684.2 GB (8 x 85.52 GB as reported) less 141 GB of weights, over
    # 3072 x 327,680 B a request: 471 seats. Full, a decode pass reads the weights and 471 caches at
    # the mean context 1024 + 2048/2 = 2048 tokens (17.06 ms, its compute only 8.72 ms). A pass that
    # also prefills a whole prompt has 470 decoding and 1024 prompt tokens: its compute, 27.13 ms,
    # outlasts its memory, 17.05 ms, and stalls the pass by 10.07 ms.
    seats = (0.9 * 8 * HBM_H100 - 2 * N_70B) // (3072 * KV_70B)
    assert seats == 471
    full = (2 * N_70B + seats * 2048 * KV_70B) / (8 * W_H100)
    prefill_pass = ((seats - 1) * (2 * N_70B + 2048 * ATT_70B) + 1024 * 2 * N_70B + ATT_70B * 1024 * 1025 / 2) / (8 * F_H100)
    assert prefill_pass > (2 * N_70B + ((seats - 1) * 2048 + 1024) * KV_70B) / (8 * W_H100)
    long = timetable.offered_load(**LLAMA_70B, rate=12.5, prompt=1024, output=2048)
    assert long.seats == seats
    assert long.t_full == pytest.approx(full, rel=1e-9)
    assert long.t_stall == pytest.approx(prefill_pass - full, rel=1e-9)
    assert long.t_full_compute == pytest.approx(seats * (2 * N_70B + 2048 * ATT_70B) / (8 * F_H100), rel=1e-9)
    assert long.t_prompt == pytest.approx((1024 * 2 * N_70B + ATT_70B * 1024 * 1025 / 2) / (8 * F_H100), rel=1e-9)
    # Each request holds a seat for 2048 passes and stalls one: 471 / (2048 t_full + 471 t_stall).
    assert long.seat_turnover == pytest.approx(seats / (2048 * full), rel=1e-9)            # 13.48 /s
    assert long.seat_capacity == pytest.approx(seats / (2048 * full + seats * (prefill_pass - full)), rel=1e-9)  # 11.87 /s
    assert long.seat_turnover > 12.5 > long.seat_capacity
    assert long.seat_load == pytest.approx(12.5 / long.seat_capacity, rel=1e-12)


def test_steady_state_utilisation_equals_the_offered_load():
    # 125 requests/s of 128 + 256 tokens offer 86% of peak FLOPs: stable. Over the steady window
    # the chips' time at peak equals the FLOPs of the requests that arrived in it (their count
    # times one request's, by hand as above) within 1%: the backlog of work is the same at both
    # ends. With the warm-up kept, the batch is still filling and the MFU falls short by more.
    per_request = (383 * 2 * N_70B + ATT_70B * 384 * 383 / 2) / (8 * F_H100)
    run = timetable.simulate(**LLAMA_70B, rate=125, n_requests=5000, prompt=128, output=256, seed=11)
    start, stop = run.steady_window()
    assert start == pytest.approx(run.arrivals[0] + 2 * run.life) and stop == pytest.approx(run.arrivals[-1] - run.life)
    for lo, tolerance in ((start, 0.01), (run.arrivals[0], None)):
        s = run.summary(lo, stop)
        offered = s.requests * per_request / (stop - lo)
        assert s.busy == pytest.approx(1.0)  # never idle: the MFU is not diluted by idle time
        if tolerance:
            assert s.mfu == pytest.approx(offered, rel=tolerance)
        else:
            assert s.mfu < offered * 0.99
    # The whole run, drain included, falls further short of the nominal 86%.
    assert run.summary().mfu < 0.97 * 125 * per_request


def test_past_seat_capacity_the_seats_serve_at_capacity():
    # 12.5 requests/s of 1024 + 2048 tokens: below the 13.48/s that full seats turn over if prefill
    # were free, above the 11.87/s they turn over when each whole prompt stalls a pass (worked
    # above). Once the seats are full (the first request that waits for one) and one seat
    # lifetime later, completions run at the stalled capacity within 3% (a pass that prefills two
    # prompts costs a little more than two stalls), 12% below the prefill-free figure.
    load = timetable.offered_load(**LLAMA_70B, rate=12.5, prompt=1024, output=2048)
    run = timetable.simulate(**LLAMA_70B, rate=12.5, n_requests=3000, prompt=1024, output=2048, seed=2)
    start, stop = run.saturated_window()
    assert start == pytest.approx(run.departures[run.boarded > run.departures].min() + run.life)
    s = run.summary(start, stop)
    assert np.all(run.pass_batch[(run.pass_start >= start) & (run.pass_start < stop)] == load.seats)
    assert s.throughput == pytest.approx(load.seat_capacity, rel=0.03)
    assert s.throughput < 0.9 * load.seat_turnover
    free_seats = timetable.simulate(**LLAMA_70B, rate=100, n_requests=300, prompt=16, output=32, seed=1)
    with pytest.raises(ChalkError, match="seats"):
        free_seats.saturated_window()


def test_a_run_too_short_has_no_steady_window():
    run = timetable.simulate(**LLAMA_70B, rate=130, n_requests=300, prompt=128, output=256, seed=1)
    with pytest.raises(ChalkError, match="n_requests"):  # 2.3 s of arrivals, lifetimes of ~1.5 s
        run.steady()
    with pytest.raises(ChalkError, match="stop"):
        run.summary(1.0, 0.5)


def test_seed_makes_runs_reproducible_and_accepts_a_generator():
    a = timetable.simulate(**LLAMA_8B, rate=100.0, n_requests=200, output=8, seed=5)
    b = timetable.simulate(**LLAMA_8B, rate=100.0, n_requests=200, output=8, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(a.arrivals, b.arrivals)
    np.testing.assert_array_equal(a.finished, b.finished)
    c = timetable.simulate(**LLAMA_8B, rate=100.0, n_requests=200, output=8, seed=6)
    assert not np.array_equal(a.arrivals, c.arrivals)


def test_per_request_lengths():
    run = timetable.simulate(**LLAMA_8B, arrivals=[0.0, 0.0], prompt=[10, 20], output=[1, 2])
    # Both prefill in pass 0; the single-token request is done there, the other decodes once more.
    np.testing.assert_array_equal(run.pass_batch, [2, 1])
    assert run.finished[0] == run.first_token[0] == run.pass_length[0]
    assert len(run.tpot) == 1


@pytest.mark.parametrize("kwargs, name", [
    (dict(rate=-1.0), "rate"),
    (dict(rate=0.0), "rate"),
    (dict(rate=10.0, arrivals=[0.0]), "rate"),
    (dict(), "rate"),
    (dict(arrivals=[0.2, 0.1]), "arrivals"),
    (dict(arrivals=[-1.0]), "arrivals"),
    (dict(rate=10.0, seats=0), "seats"),
    (dict(rate=10.0, n_requests=0), "n_requests"),
    (dict(rate=10.0, prompt=0), "prompt"),
    (dict(rate=10.0, prompt=2.5), "prompt"),
    (dict(rate=10.0, n_requests=3, output=[1, 2]), "output"),
    (dict(rate=10.0, headroom=1.5), "headroom"),
    (dict(rate=10.0, prompt=131_000), "prompt \\+ output"),  # past Llama 3.1's 131,072 tokens
    (dict(rate=10.0, chip="H99"), "chip"),
    (dict(rate=10.0, model="llama-99"), "model"),
])
def test_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ChalkError, match=name):
        timetable.simulate(**(LLAMA_8B | kwargs))


def test_what_does_not_fit_says_so():
    with pytest.raises(DoesNotFit, match="prompt \\+ output"):  # 120k tokens x 131 kB = 16 GB > 8 GB free
        timetable.simulate(**LLAMA_8B, rate=1.0, prompt=120_000, output=1000, headroom=0.7)
    with pytest.raises(DoesNotFit):  # 141 GB of weights on one 85.5 GB H100
        timetable.simulate(**(LLAMA_70B | dict(chips=1)), rate=1.0)


@pytest.mark.parametrize("kwargs, name", [
    (dict(rate=0.0), "rate"),
    (dict(prompt=0), "prompt"),
    (dict(output=1.5), "output"),
    (dict(prompt=8000, output=1000), "prompt \\+ output"),  # past Llama 3's 8,192 tokens
    (dict(headroom=1.0), "headroom"),
])
def test_offered_load_bad_input_names_the_parameter(kwargs, name):
    with pytest.raises(ChalkError, match=name):
        timetable.offered_load(**(LLAMA_70B | dict(rate=10.0, prompt=128, output=256) | kwargs))


def test_sweep_rejects_a_doubly_given_argument():
    with pytest.raises(ChalkError, match="vary"):
        timetable.sweep("rate", [1.0], **LLAMA_8B, rate=2.0)


def test_closed_form_rejects_zero_interval():
    with pytest.raises(ChalkError, match="interval"):
        timetable.closed_form(0)
