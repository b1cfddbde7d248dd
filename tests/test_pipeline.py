"""Chapter 3's maths: the bubble closed forms against the discrete-event simulator, the
rack-boundary test against a brute-force search, the traffic table against hand byte counts."""
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from chalk import ChalkError, models, pipeline as pl, systems
from chalk.catalog import layouts
from chalk.notation import E, L_stage, P, k, m, rho, v

REL = 1e-9


# --- closed forms against the simulator, where the theory is exact ---------------------------
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("ratio", [0.5, 1.0, 2.0, 3.0])
def test_simulated_bubble_equals_closed_form(schedule, ratio):
    for stages in range(1, 7):
        for micro in range(1, 13):
            run = pl.simulate(stages, micro, schedule, t_forward=1.0, t_backward=ratio)
            assert run.idle_fraction == pytest.approx(pl.bubble_fraction(stages, micro, schedule), rel=REL, abs=1e-12)
            assert run.bubble_time == pytest.approx((stages - 1) * (1 + ratio), rel=REL, abs=1e-12)
            assert run.peak_activations == pl.activations_in_flight(stages, micro, schedule)


@pytest.mark.parametrize("ratio", [1.0, 2.0, 3.0])
def test_simulated_interleaved_bubble_equals_closed_form(ratio):
    for stages in range(2, 6):
        for chunks in range(1, 5):
            for micro in (stages, 2 * stages, 3 * stages):
                run = pl.simulate(stages, micro, "interleaved", chunks, t_forward=1.0, t_backward=ratio)
                expected = pl.bubble_fraction(stages, micro, "interleaved", chunks)
                assert run.idle_fraction == pytest.approx(expected, rel=REL)
                assert run.bubble_time == pytest.approx((stages - 1) * (1 + ratio) / chunks, rel=REL)
                assert run.peak_activations == pytest.approx(
                    pl.activations_in_flight(stages, micro, "interleaved", chunks), rel=REL)


def test_closed_forms_are_the_contract():
    assert sp.simplify(pl.BUBBLE_FRACTION - (P - 1) / (v * m + P - 1)) == 0
    assert sp.simplify(pl.BUBBLE_OVERHEAD - (P - 1) / (v * m)) == 0
    assert pl.bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert pl.bubble_overhead(4, 8, "1f1b") == pytest.approx(3 / 8)
    assert pl.bubble_fraction(4, 8, "interleaved", 2) == pytest.approx(3 / 19)
    assert pl.bubble_overhead(4, 8, "interleaved", 2) == pytest.approx(3 / 16)
    # fraction and overhead describe the same bubble: f = o / (1 + o)
    o = pl.bubble_overhead(np.arange(1, 9), 16)
    assert np.allclose(pl.bubble_fraction(np.arange(1, 9), 16), o / (1 + o))


def test_gpipe_holds_every_microbatch_1f1b_only_the_depth():
    assert pl.simulate(4, 12, "gpipe").peak_activations == 12
    assert pl.simulate(4, 12, "1f1b").peak_activations == 4
    # same bubble, a third of the memory: the reason 1F1B replaced GPipe
    assert pl.simulate(4, 12, "gpipe").idle_fraction == pytest.approx(pl.simulate(4, 12, "1f1b").idle_fraction)


# --- where the closed form stops being exact --------------------------------------------------
def test_unequal_stages_follow_the_flow_shop_bound_not_the_closed_form():
    # Identical jobs through a flow line: the last forward ends at sum(t) + (m-1) max(t), and the
    # backwards then flow back the same way (a standard flow-shop result, derived by hand).
    t_f, t_b, micro = np.array([1.0, 1.0, 1.0, 2.0]), np.array([2.0, 2.0, 2.0, 4.0]), 8
    run = pl.simulate(4, micro, "gpipe", t_forward=t_f, t_backward=t_b)
    makespan = t_f.sum() + t_b.sum() + (micro - 1) * (t_f.max() + t_b.max())
    assert run.makespan == pytest.approx(makespan)
    measured = 1 - micro * (t_f.sum() + t_b.sum()) / (4 * makespan)
    assert run.idle_fraction == pytest.approx(measured)
    assert run.idle_fraction > pl.bubble_fraction(4, micro) + 0.1
    one_f_one_b = pl.simulate(4, micro, "1f1b", t_forward=t_f, t_backward=t_b)
    assert one_f_one_b.idle_fraction > pl.bubble_fraction(4, micro, "1f1b") + 0.1


def test_a_slow_stage_sets_the_pace():
    # Past the fill, every stage waits on the slowest: idle tends to 1 - mean(t)/max(t).
    t_f = np.array([1.0, 1.5, 1.0, 3.0])
    run = pl.simulate(4, 400, "inference", t_forward=t_f)
    assert run.idle_fraction == pytest.approx(1 - t_f.mean() / t_f.max(), rel=0.01)


# --- inference --------------------------------------------------------------------------------
def test_inference_stream_has_no_bubble_in_steady_state():
    for stages in (2, 4, 8):
        runs = [pl.simulate(stages, n, "inference") for n in (stages, 4 * stages, 64 * stages)]
        assert all(r.steady_state_idle_fraction == pytest.approx(0, abs=1e-12) for r in runs)
        idle = [r.idle_fraction for r in runs]
        assert idle[0] > idle[1] > idle[2] and idle[2] < 0.02
        assert all(r.peak_activations == 0 for r in runs)


def test_inference_latency_is_neutral_apart_from_the_hops():
    t_f = [0.3, 0.2, 0.4, 0.1]
    assert pl.simulate(4, 1, "inference", t_forward=t_f).makespan == pytest.approx(sum(t_f))
    assert pl.simulate(4, 1, "inference", t_forward=t_f, t_hop=0.05).makespan == pytest.approx(sum(t_f) + 3 * 0.05)


def test_events_carry_the_contract_fields():
    run = pl.simulate(2, 2, "interleaved", 2)
    stage, micro, chunk, kind, start, end = run.events[0]
    assert (stage, micro, chunk, kind, start) == (0, 0, 0, "forward", 0.0)
    assert end == pytest.approx(0.5)
    assert len(run.events) == 2 * 2 * 2 * 2
    assert {e.kind for e in run.events} == {"forward", "backward"}


# --- invariants of any schedule, for random stage times ---------------------------------------
SCHEDULE_CASES = st.sampled_from([("gpipe", 1), ("1f1b", 1), ("interleaved", 1), ("interleaved", 2), ("interleaved", 3)])


@given(st.integers(1, 5), st.integers(1, 3), SCHEDULE_CASES, st.data())
def test_simulation_respects_dependencies_and_one_op_at_a_time(stages, groups, case, data):
    schedule, chunks = case
    micro = groups * stages
    times = st.lists(st.floats(0.1, 5.0), min_size=stages, max_size=stages)
    t_f, t_b = np.array(data.draw(times)), np.array(data.draw(times))
    run = pl.simulate(stages, micro, schedule, chunks, t_forward=t_f, t_backward=t_b)
    ends = {(e.kind, e.microbatch, e.chunk, e.stage): e for e in run.events}
    assert len(ends) == 2 * stages * micro * chunks
    for s in range(stages):
        ops = sorted((e for e in run.events if e.stage == s), key=lambda e: e.start)
        assert all(a.end <= b.start + 1e-9 for a, b in zip(ops, ops[1:]))
    last = chunks * stages - 1
    for (kind, j, c, s), e in ends.items():
        q = c * stages + s
        if kind == "forward" and q > 0:
            prev = ends[("forward", j, (q - 1) // stages, (q - 1) % stages)]
            assert prev.end <= e.start + 1e-9
        if kind == "backward":
            after = ends[("forward", j, c, s)] if q == last else ends[("backward", j, (q + 1) // stages, (q + 1) % stages)]
            assert after.end <= e.start + 1e-9
    # lower bounds: the busiest stage's own work, and one micro-batch's critical path
    assert run.makespan >= micro * (t_f + t_b).max() - 1e-9
    assert run.makespan >= (t_f + t_b).sum() - 1e-9
    assert -1e-12 <= run.idle_fraction < 1


@given(st.integers(1, 64), st.integers(1, 256), st.integers(1, 8))
def test_bubble_falls_with_microbatches_and_chunks(stages, micro, chunks):
    micro_p = micro * stages
    base = pl.bubble_fraction(stages, micro_p, "1f1b")
    assert pl.bubble_fraction(stages, micro_p + stages, "1f1b") <= base
    assert pl.bubble_fraction(stages, micro_p, "interleaved", chunks) <= base + 1e-15
    assert 0 <= base < 1


# --- the rack boundary ------------------------------------------------------------------------
def test_rack_ratio_derivation():
    b_d, b_c, b_b = pl.b_disp, pl.b_comb, pl.b_bnd
    # by hand: k copies out and k back per MoE layer, each in its own format, (E-1)/E of them off-chip,
    # against one crossing of the boundary in its format, rho times slower per byte
    assert sp.simplify(pl.RACK_RATIO - k * L_stage * (E - 1) * (b_d + b_c) / (E * rho * b_b)) == 0
    assert sp.simplify(pl.SAME_FORMAT_RATIO - 2 * k * L_stage * (E - 1) / (E * rho)) == 0
    assert sp.simplify(pl.LECTURE_RATIO - 2 * k * L_stage / rho) == 0
    assert sp.simplify(pl.SAME_FORMAT_RATIO.subs(L_stage, pl.MIN_LAYERS)) == 1
    assert sp.simplify(pl.k_fanout - rho) == 0
    # the local copies matter little at a rack's expert-parallel degree
    assert float((pl.SAME_FORMAT_RATIO / pl.LECTURE_RATIO).subs(E, 64)) == pytest.approx(63 / 64)


def test_deepep_formats_take_a_quarter_off_the_ratio():
    # FP8 dispatch and BF16 combine (1 + 2 bytes) against a BF16 boundary (2): (1 + 2) / (2 x 2) = 0.75
    # of the one-format ratio. By hand for DeepSeek-V3 (k = 8), one layer, E = the system's chips:
    # GB200 NVL72 (rho = 900/50 = 18, E = 72) and MI355X (rho = 10.75, E = 8).
    gb = 2 * 8 * (71 / 72) / 18
    mi = 2 * 8 * (7 / 8) / 10.75
    assert (round(gb, 2), round(0.75 * gb, 2), round(mi, 2), round(0.75 * mi, 2)) == (0.88, 0.66, 1.30, 0.98)
    for name, one in (("gb200-nvl72", gb), ("mi355x-8", mi)):
        e = systems.get(name).count
        same = pl.rack_boundary("deepseek-v3", name, expert_parallel=e)
        mixed = pl.rack_boundary("deepseek-v3", name, expert_parallel=e, **pl.DEEPEP_FORMATS)
        assert same.ratio_one_layer == pytest.approx(one, rel=REL)
        assert mixed.ratio_one_layer == pytest.approx(0.75 * one, rel=REL)
    # MI355X passes at one layer in one format and needs two with DeepEP's formats
    assert pl.min_layers_per_stage(8, 10.75, 8) == 1
    assert pl.min_layers_per_stage(8, 10.75, 8, dispatch_bytes=1, combine_bytes=2, boundary_bytes=2) == 2
    # a format for a single transfer is all that moves: FP8 at the boundary too doubles the ratio back up
    assert pl.rack_boundary_ratio(1, 8, 18, 72, 1, 2, 1) == pytest.approx(1.5 * gb, rel=REL)


def test_crossing_margin_by_hand_one_deepseek_layer_on_a_gb200():
    # DeepSeek-V3: 37.6e9 active parameters over 61 layers, d_model 7,168 (config.json); a GB200 at
    # 5 PFLOP/s FP8 dense, 400 Gb/s = 50 GB/s per direction on its ConnectX-7. Per token, training:
    # 6 x 37.55e9 / 61 FLOPs at 40% of 5e15 = 1.85 us; crossing 2 x 7,168 x 2 B / 50e9 = 0.573 us.
    ds = models.get("deepseek-v3")
    compute = 6 * ds.active_params / 61 / (0.4 * 5e15)
    crossing = 2 * 7168 * 2 / 50e9
    assert compute == pytest.approx(1.85e-6, rel=0.01) and crossing == pytest.approx(0.573e-6, rel=0.01)
    margin = pl.crossing_margin("deepseek-v3", "gb200-nvl72", 1, "fp8")
    assert margin == pytest.approx(compute / crossing, rel=REL)
    # above 1 although the rack test fails at one layer: the two tests ask different things
    assert margin > 3 and pl.rack_boundary("deepseek-v3", "gb200-nvl72", 72).min_layers == 2
    # linear in the layers, halved by a peak twice as high (BF16 -> FP8)
    assert pl.crossing_margin("deepseek-v3", "gb200-nvl72", 4, "fp8") == pytest.approx(4 * margin, rel=REL)
    assert pl.crossing_margin("deepseek-v3", "gb200-nvl72", 1, "bf16") == pytest.approx(2 * margin, rel=REL)


def test_hop_over_forward_by_hand_a_deepseek_stage_of_sixteen():
    # 61 layers in 16 stages on GB200s at 40% of FP8 peak: one activation, 7,168 x 2 B over 50 GB/s,
    # is 0.287 us per token; the stage's forward, 2 x 37.55e9 / 16 FLOPs at 2e15 FLOP/s, is 2.35 us
    ds = models.get("deepseek-v3")
    by_hand = (7168 * 2 / 50e9) / (2 * ds.active_params / 16 / (0.4 * 5e15))
    assert by_hand == pytest.approx(0.122, rel=0.01)
    assert pl.hop_over_forward("deepseek-v3", "gb200-nvl72", 61 / 16, "fp8") == pytest.approx(by_hand, rel=REL)


def test_rack_test_prices_switched_domains_with_experts_over_every_chip():
    rows = pl.rack_test()
    names = [r.system for r in rows]
    assert "gb200-nvl72" in names and "hgx-h100" in names and "mi355x-8" in names
    # TPU pods are tori (an all-to-all gets a share of the links) and a v5p cube is a slice
    assert not any(n.startswith("tpu") for n in names)
    assert all(r.expert_parallel == systems.get(r.system).count for r in rows)
    assert len(names) == len(set(names)) == sum(1 for n in systems.names() if not n.startswith("tpu"))


@pytest.mark.parametrize("experts", [1, 2, 6, 8, 9])
@pytest.mark.parametrize("ratio", [3.2, 8, 9, 16, 18, 64])
@pytest.mark.parametrize("ep", [None, 8, 64])
def test_min_layers_matches_brute_force_search(experts, ratio, ep):
    fewest = next(layers for layers in range(1, 1000)
                  if pl.rack_boundary_ratio(layers, experts, ratio, ep) >= 1 - 1e-12)
    assert pl.min_layers_per_stage(experts, ratio, ep) == fewest


def test_rack_boundary_reads_the_catalog():
    ds = models.get("deepseek-v3")
    for name in systems.names():
        result = pl.rack_boundary("deepseek-v3", name)
        ratio = systems.get(name).scale_up_to_out
        assert result.bandwidth_ratio == ratio
        assert result.ratio_one_layer == pytest.approx(2 * 8 * 1 / ratio)
        assert result.moe_layers == ds.n_moe_layers == 58
        assert result.max_stages * result.min_layers <= 58


def test_rack_ratio_vectorises():
    out = pl.rack_boundary_ratio(np.arange(1, 5), 8, 16)
    assert np.allclose(out, [1, 2, 3, 4])


# --- the parallelism table: byte counts by hand -------------------------------------------------
def test_parallelism_bytes_by_hand():
    tokens, chips = 4096.0, 8
    rows = {r.kind: r for r in pl.parallelism_table("deepseek-v3", "hgx-h100", chips, tokens)}
    ds = models.get("deepseek-v3")
    width = 7168 * 2  # d_model elements of 2 bytes
    assert rows["pipeline"].bytes_per_chip == pytest.approx(2 * tokens * width)
    assert rows["tensor"].bytes_per_chip == pytest.approx(4 * 61 * 2 * 7 / 8 * tokens * width)
    assert rows["expert"].bytes_per_chip == pytest.approx(4 * 58 * 8 * (7 / 8) * (tokens / 8) * width)
    assert rows["data"].bytes_per_chip == pytest.approx(2 * 7 / 8 * ds.total_params * 4)
    # MLA caches 512 + 64 elements per token per layer: 61 layers of 2 bytes
    assert rows["context"].bytes_per_chip == pytest.approx(3 * 7 / 8 * tokens * 61 * 576 * 2)
    chip = systems.get("hgx-h100").chip
    assert rows["data"].compute_time == pytest.approx(6 * ds.active_params * tokens / (0.4 * 8 * chip.flops("bf16")))
    full = {r.kind: r for r in pl.parallelism_table("deepseek-v3", "hgx-h100", chips, tokens, mfu=1.0)}
    assert full["data"].compute_time == pytest.approx(0.4 * rows["data"].compute_time)
    assert rows["pipeline"].scale_out_time == pytest.approx(2 * tokens * width / chip.scale_out_bandwidth)


def test_expert_traffic_matches_random_routing():
    # Route tokens to k of 256 experts placed round-robin on E chips: the share of copies whose
    # expert sits on another chip than the token's must be (E - 1)/E.
    rng = np.random.default_rng(3)
    n_exp, kk, chips, tokens = 256, 8, 16, 20_000
    home = rng.integers(0, chips, tokens)
    picks = np.argsort(rng.random((tokens, n_exp)), axis=1)[:, :kk]
    remote = (picks % chips != home[:, None]).mean()
    assert remote == pytest.approx((chips - 1) / chips, rel=0.01)
    assert float(pl.copies_per_crossing.subs({k: kk, L_stage: 1, E: chips})) == pytest.approx(2 * kk * remote, rel=0.01)


def test_dense_model_has_no_expert_row_and_kinds_pick_networks():
    rows = {r.kind: r for r in pl.parallelism_table("llama-3.1-405b", "hgx-h100", 8, 16 * 8192, mfu=1.0)}
    assert "expert" not in rows
    assert rows["tensor"].network == "scale-up" and rows["pipeline"].network == "scale-out"


def test_a_kind_neither_network_hides_says_so():
    row = pl.TrafficRow("x", "", "", 8, 1.0, compute_time=1.0, scale_up_time=2.0, scale_out_time=20.0)
    assert row.network == "neither"
    assert pl.TrafficRow("x", "", "", 8, 1.0, 1.0, 0.5, 20.0).network == "scale-up"
    # at 40% MFU (or BF16 gradients) data parallelism of DeepSeek-V3 at 8 x 4 M tokens hides over
    # scale-out; at 100% MFU with FP32 gradients it does not: the verdict rests on those inputs
    at = lambda **kw: {r.kind: r for r in pl.parallelism_table("deepseek-v3", "gb200-nvl72", 8, 4 * 2**20, **kw)}
    assert at(mfu=1.0)["data"].network != "scale-out"
    assert at()["data"].network == "scale-out"
    assert at(mfu=1.0, grad_bytes=2)["data"].network == "scale-out"


def test_data_parallel_hides_above_a_threshold_in_tokens_per_chip():
    # By hand: the ring all-reduce of FP32 gradients over scale-out, 2 (n-1)/n N_tot 4 / W_out, equals
    # the step's compute, 6 N_act t n / (MFU n F), at t tokens per chip; the other kinds' bytes grow
    # with the tokens as the compute does, so no batch changes their verdict.
    ds, chip, n = models.get("deepseek-v3"), systems.get("gb200-nvl72").chip, 8
    t = 2 * (n - 1) / n * ds.total_params * 4 / chip.scale_out_bandwidth * 0.4 * chip.flops("bf16") / (6 * ds.active_params)
    assert 4.1e5 < t < 4.2e5   # the review's "about 417k tokens per chip"
    for tokens in (16_384, 4 * 2**20):
        rows = {r.kind: r for r in pl.parallelism_table("deepseek-v3", "gb200-nvl72", n, tokens)}
        assert rows["data"].hides_above == pytest.approx(t, rel=1e-6)
        assert all(r.hides_above is None for kind, r in rows.items() if kind != "data")
        assert (rows["data"].network == "scale-out") == (tokens / n > t)


def test_data_parallel_degree():
    assert pl.data_parallel_degree(64, tensor=8) == 8
    assert pl.data_parallel_degree(7) == 7


# --- clear errors for bad input -------------------------------------------------------------------
BAD_CALLS = [
    ("stages", lambda: pl.bubble_fraction(0, 4)),
    ("stages", lambda: pl.bubble_fraction(2.5, 4)),
    ("microbatches", lambda: pl.bubble_overhead(4, -1)),
    ("microbatches", lambda: pl.bubble_fraction(4, np.array([1.5]))),
    ("schedule", lambda: pl.bubble_fraction(4, 8, "pipedream")),
    ("microbatches", lambda: pl.bubble_overhead(4, 6, "interleaved", 2)),
    ("chunks", lambda: pl.bubble_fraction(4, 8, "1f1b", 2)),
    ("chunks", lambda: pl.bubble_fraction(4, 8, "interleaved", 0)),
    ("schedule", lambda: pl.activations_in_flight(4, 8, "zb")),
    ("stages", lambda: pl.simulate(0, 4)),
    ("microbatches", lambda: pl.simulate(4, True)),
    ("schedule", lambda: pl.simulate(4, 4, "dualpipe")),
    ("microbatches", lambda: pl.simulate(4, 6, "interleaved", 2)),
    ("chunks", lambda: pl.simulate(4, 8, "gpipe", 2)),
    ("t_forward", lambda: pl.simulate(4, 4, t_forward=-1)),
    ("t_forward", lambda: pl.simulate(4, 4, t_forward=[1, 2])),
    ("t_backward", lambda: pl.simulate(4, 4, t_backward=float("nan"))),
    ("t_hop", lambda: pl.simulate(4, 4, t_hop=-0.1)),
    ("steps", lambda: pl.simulate(4, 4, "1f1b", steps=3)),
    ("steps", lambda: pl.simulate(4, 4, "decode", steps=0)),
    ("hop", lambda: pl.bubble_fraction(4, 8, hop=-1)),
    ("hop", lambda: pl.decode_microbatches_needed(4, hop=-0.5)),
    ("microbatches", lambda: pl.decode_idle_fraction(4, 0)),
    ("stages x microbatches x chunks", lambda: pl.simulate(64, 4096, "interleaved", 4)),
    ("microbatches", lambda: pl.simulate(8, 2, "inference").steady_state_idle_fraction),
    ("layers_per_stage", lambda: pl.rack_boundary_ratio(0, 8, 8)),
    ("experts_per_token", lambda: pl.rack_boundary_ratio(1, -8, 8)),
    ("bandwidth_ratio", lambda: pl.rack_boundary_ratio(1, 8, 0)),
    ("expert_parallel", lambda: pl.rack_boundary_ratio(1, 8, 8, 1)),
    ("dispatch_bytes", lambda: pl.rack_boundary_ratio(1, 8, 8, 8, dispatch_bytes=0)),
    ("combine_bytes", lambda: pl.rack_boundary("deepseek-v3", "gb200-nvl72", combine_bytes=-1)),
    ("boundary_bytes", lambda: pl.min_layers_per_stage(8, 8, boundary_bytes=0)),
    ("layers_per_stage", lambda: pl.crossing_margin("deepseek-v3", "gb200-nvl72", 0)),
    ("layers_per_stage", lambda: pl.crossing_margin("deepseek-v3", "gb200-nvl72", 62)),
    ("mfu", lambda: pl.crossing_margin("deepseek-v3", "gb200-nvl72", 1, mfu=1.5)),
    ("layout", lambda: pl.published_tokens_per_chip("llama-3.1-405b-8k-8192")),
    ("layout", lambda: pl.published_tokens_per_chip("gpt-5")),
    ("experts_per_token", lambda: pl.min_layers_per_stage(0, 8)),
    ("bandwidth_ratio", lambda: pl.min_layers_per_stage(8, "fast")),
    ("expert_parallel", lambda: pl.min_layers_per_stage(8, 8, 0)),
    ("bandwidth_ratio", lambda: pl.experts_per_crossing(-3.2)),
    ("model", lambda: pl.rack_boundary("llama-3.1-405b", "gb200-nvl72")),
    ("model", lambda: pl.rack_boundary("deepseek-v9", "gb200-nvl72")),
    ("system", lambda: pl.rack_boundary("deepseek-v3", "nvl1000")),
    ("degree", lambda: pl.parallelism_table("deepseek-v3", "hgx-h100", 1, 4096)),
    ("tokens", lambda: pl.parallelism_table("deepseek-v3", "hgx-h100", 8, 0)),
    ("grad_bytes", lambda: pl.parallelism_table("deepseek-v3", "hgx-h100", 8, 4096, grad_bytes=0)),
    ("act_bytes", lambda: pl.parallelism_table("deepseek-v3", "hgx-h100", 8, 4096, act_bytes=-2)),
    ("mfu", lambda: pl.parallelism_table("deepseek-v3", "hgx-h100", 8, 4096, mfu=1.5)),
    ("mfu", lambda: pl.parallelism_table("deepseek-v3", "hgx-h100", 8, 4096, mfu=0)),
    ("chips", lambda: pl.data_parallel_degree(100, tensor=8)),
    ("tensor", lambda: pl.data_parallel_degree(64, tensor=0)),
    ("layout", lambda: layouts.get("gpt-5")),
]


@pytest.mark.parametrize("param, call", BAD_CALLS, ids=[f"{p}-{i}" for i, (p, _) in enumerate(BAD_CALLS)])
def test_bad_input_names_the_parameter(param, call):
    with pytest.raises(ChalkError) as err:
        call()
    assert param in str(err.value)


def test_unknown_schedule_lists_the_known_ones():
    with pytest.raises(ChalkError) as err:
        pl.simulate(4, 4, "zero-bubble")
    assert all(name in str(err.value) for name in pl.SCHEDULES)
    with pytest.raises(ChalkError, match="1f1b"):
        pl.bubble_fraction(4, 4, "1F1B-ish")


def test_schedule_names_ignore_case():
    assert pl.bubble_fraction(4, 8, "GPipe") == pl.bubble_fraction(4, 8, "gpipe")
    assert not math.isnan(pl.simulate(2, 2, "1F1B").idle_fraction)


# --- hops and decode: what the closed forms leave out ----------------------------------------
@pytest.mark.parametrize("hop", [0.05, 0.1, 0.3, 1.0])
def test_hops_add_two_crossings_per_stage_to_gpipe_exactly(hop):
    for stages in (2, 4, 8):
        for micro in (1, 4, 16):
            run = pl.simulate(stages, micro, "gpipe", t_hop=hop)
            # by hand: (m+P-1)(t_F+t_B) + 2(P-1) t_hop over P m (t_F+t_B) + that bubble
            bubble = (stages - 1) * 3 + 2 * (stages - 1) * hop
            assert run.idle_fraction == pytest.approx(bubble / (micro * 3 + bubble), rel=REL)
            assert pl.bubble_fraction(stages, micro, "gpipe", hop=hop) == pytest.approx(run.idle_fraction, rel=REL)


@pytest.mark.parametrize("schedule, chunks", [("1f1b", 1), ("interleaved", 2), ("interleaved", 4)])
def test_hop_term_is_a_lower_bound_the_simulator_can_exceed(schedule, chunks):
    for hop in (0.1, 0.3):
        measured = pl.simulate(8, 32, schedule, chunks, t_hop=hop).idle_fraction
        assert measured >= pl.bubble_fraction(8, 32, schedule, chunks, hop=hop) - 1e-12
        assert measured > pl.bubble_fraction(8, 32, schedule, chunks)
    # interleaving pays its hops v times: at a hop of 0.3 t_F four chunks idle more than two
    assert (pl.simulate(8, 32, "interleaved", 4, t_hop=0.3).idle_fraction
            > pl.simulate(8, 32, "interleaved", 2, t_hop=0.3).idle_fraction)


def test_decode_idles_until_a_round_trip_of_microbatches_is_in_flight():
    for stages in (2, 4, 8):
        for micro in range(1, stages):
            run = pl.simulate(stages, micro, "decode", steps=30)
            # by hand: each stage works m t_F of every P t_F round trip
            assert run.steady_state_idle_fraction == pytest.approx(1 - micro / stages, abs=0.02)
        assert pl.simulate(stages, stages, "decode", steps=30).steady_state_idle_fraction == pytest.approx(0, abs=1e-9)
        # the same requests as independent prefill batches never wait for each other
        assert pl.simulate(stages, stages * 30, "inference").steady_state_idle_fraction == pytest.approx(0, abs=1e-9)


def test_decode_hops_raise_the_microbatches_needed():
    assert pl.decode_microbatches_needed(4) == 4
    assert pl.decode_microbatches_needed(4, hop=0.5) == 6
    assert sp.simplify(pl.DECODE_MIN_MICROBATCHES - P * (1 + pl.t_hop / pl.t_F)) == 0
    for micro, idle in [(4, 1 - 4 / 6), (5, 1 - 5 / 6), (6, 0.0), (8, 0.0)]:
        run = pl.simulate(4, micro, "decode", steps=40, t_hop=0.5)
        assert run.steady_state_idle_fraction == pytest.approx(idle, abs=0.02)
        assert pl.decode_idle_fraction(4, micro, hop=0.5) == pytest.approx(idle, abs=1e-12)


def test_decode_feeds_a_token_only_after_the_last_one_left():
    run = pl.simulate(3, 2, "decode", steps=4, t_hop=0.25)
    ends = {(e.stage, e.microbatch): e.end for e in run.events}
    for e in run.events:
        if e.stage == 0 and e.microbatch >= 2:   # step t of micro-batch j is numbered 2 t + j
            assert e.start >= ends[(2, e.microbatch - 2)] + 0.25 - 1e-12
    assert sorted({e.microbatch for e in run.events}) == list(range(8))
