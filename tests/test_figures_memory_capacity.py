"""Chapter 4's explorer, twin and figures: their numbers are chalk.memory's, bad choices show a
message instead of a chart, and every static figure says what it shows."""
import json
import re

import numpy as np
import pytest

from chalk import memory as mem, systems
from chalk.figures import memory_capacity as mc
from chalk.figures.canvas import alt_text
from chalk.roofline import HEADROOM

GB = 1e9


@pytest.fixture(scope="module")
def explorer():
    return mc.Explorer()


def gb_numbers(text):
    """The three GB figures of the readout: weights, cache and their sum per chip."""
    m = re.search(r"<b>([\d,.]+) GB of weights \+ ([\d,.]+) GB of cache = ([\d,.]+) GB</b>", text)
    return [float(x.replace(",", "")) for x in m.groups()]


def busy(params):
    """The micro-batches the explorer keeps in flight: those that keep the stages busy with its hop."""
    t_hop = mem.hop_time(params["model"], params["system"], params["batch"], params["hop"])
    return mem.busy_microbatches(params["model"], params["system"], params["batch"], params["context"],
                                 params["stages"], t_hop, params["dtype"])


@pytest.mark.parametrize("params", [
    dict(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", stages=4, batch=16.0, context=32768.0, hop=10e-6),
    dict(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", stages=1, batch=1000.0, context=8192.0, hop=10e-6),
    dict(model="gemma-2-9b", system="hgx-b200", dtype="bf16", stages=16, batch=100.0, context=100000.0, hop=1e-3),
    dict(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", stages=4, batch=4096.0, context=8192.0, hop=2.5e-3),
])
def test_readout_is_chalk_memory(explorer, params):
    text = explorer.update(**params)
    weights, cache, total = gb_numbers(text)
    count = systems.get(params["system"]).count
    w, k = mem.per_chip_parts(params["model"], params["batch"], params["context"], params["dtype"], count,
                              params["stages"], busy(params))
    assert weights == pytest.approx(w / GB, abs=0.006) and cache == pytest.approx(k / GB, abs=0.006)
    assert total == pytest.approx((w + k) / GB, abs=0.006)
    floor = mem.weight_floor(params["model"], params["system"], params["dtype"])
    assert f"{1e3 * floor:,.3g} ms on S = {count}" in text


def test_slow_hops_raise_the_cache_by_m_over_p(explorer):
    # Same view, the lecture's 2.5 ms hops against none: the cache grows by m / P, the weights stay.
    params = dict(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", stages=4, batch=4096.0, context=8192.0)
    fast = gb_numbers(explorer.update(**params, hop=0.0))
    slow_text = explorer.update(**params, hop=2.5e-3)
    slow = gb_numbers(slow_text)
    m_slow = busy(dict(params, hop=2.5e-3))
    assert m_slow > 2 * params["stages"]
    assert slow[0] == fast[0] and slow[1] == pytest.approx(fast[1] * m_slow / busy(dict(params, hop=0.0)), rel=2e-3)
    assert f"m = {m_slow:.3g}" in slow_text


def test_bars_are_the_formula_as_a_share_of_usable_hbm(explorer):
    explorer.update(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", stages=2, batch=64.0, context=32768.0,
                    hop=1e-3)
    usable = systems.get("hgx-h100").chip.hbm_capacity * (1 - HEADROOM)
    t_hop = mem.hop_time("llama-3.1-405b", "hgx-h100", 64, 1e-3)
    m = mem.busy_microbatches("llama-3.1-405b", "hgx-h100", 64, 32768, np.array(mc.STAGES), t_hop, "bf16")
    w, k = mem.per_chip_parts("llama-3.1-405b", 64, 32768, "bf16", 8, np.array(mc.STAGES), m)
    tops = [max(y for _, y in path.vertices) for path in explorer.figure.k_bars.get_paths()]
    np.testing.assert_allclose(tops, np.minimum(100 * (w + k) / usable, mc.PERCENT_TOP), rtol=1e-9)
    # The one-stage bar is past the axis and says by how much; the others are drawn whole.
    assert explorer.figure.over[0].get_text() == f"{(w[0] + k[0]) / usable:.3g}×"
    assert all(t.get_text() == "" for t, total in zip(explorer.figure.over, (w + k) / usable) if total <= 2)


def test_does_not_fit_is_said_and_still_drawn(explorer):
    text = explorer.update(model="llama-3.1-405b", system="hgx-h100", dtype="bf16", stages=1, batch=16.0,
                           context=32768.0)
    assert "does not fit" in text and "short by" in text
    assert explorer.image.value[:4] == b"\x89PNG"


def test_a_bad_value_shows_a_message_not_a_traceback(explorer):
    text = explorer.update(context=-5)
    assert "color:#b00" in text and "context" in text
    ok = explorer.update(context=8192.0)
    assert "color:#b00" not in ok or "does not fit" in ok


def test_controls_are_labelled():
    ex = mc.Explorer()
    for control in mc.Explorer.controls:
        assert ex.widgets[control.name].description == control.label and control.label


def test_session_is_replayable():
    ex = mc.Explorer()
    for params in mc.SESSION:
        text = ex.update(**params)
        assert "Traceback" not in text
    assert ex.params["system"] == "tpu-v5p-cube"


@pytest.fixture(scope="module")
def twins():
    return mc.twin_data(), mc.floor_twin_data()


def test_the_twins_stay_small_and_offer_every_control(twins):
    data, floor = twins
    # Both ship in the chapter's page, whose budget is 2.5 MB in all (bench/budgets.toml).
    assert sum(len(json.dumps(d, separators=(",", ":"))) for d in twins) < 250_000
    contexts = next(c for c in data["controls"] if c["name"] == "context")["options"]
    assert len(contexts) >= 4 and [int(v) for v, _ in contexts] == sorted(int(v) for v, _ in contexts)
    assert len(data["views"]) == 4 * 4 * 2 * len(contexts) * 2
    assert [c["kind"] for c in floor["controls"]] == ["select", "select", "slider"]
    assert floor["panels"][0]["xscale"] == "log" and len(floor["views"]) == 4 * 2


FIELD = re.compile(r"\{([^}]+)\}")


@pytest.mark.parametrize("which", [0, 1])
def test_every_readout_field_is_in_every_view(twins, which):
    # The shared script prints a missing field as a dash: each must resolve in every view.
    data = twins[which]
    slider = next(c["name"] for c in data["controls"] if c["kind"] == "slider")
    for key, view in data["views"].items():
        for template in data["templates"]:
            for name in FIELD.findall(template):
                panel, _, series = name.partition(".")
                known = (name == slider or name in view["readout"].get("values", {})
                         or name in view["readout"].get("constants", {})
                         or (panel.isdigit() and series in view["panels"][int(panel)]["series"]))
                assert known, (key, name)


def test_floor_twin_is_the_weight_read_over_the_domain(twins):
    _, floor = twins
    stops = floor["controls"][-1]["values"]
    view = floor["views"]["deepseek-v3|fp8"]
    series = view["panels"][0]["series"]
    # 671 B one-byte weights read by S GB200s at 8 TB/s each, or S H100s at 3.35 TB/s.
    for i, size in enumerate(stops):
        assert series["GB200"][i] == pytest.approx(1e3 * 671e9 / (size * 8e12), rel=0.01)
        assert series["H100-SXM"][i] == pytest.approx(1e3 * 671e9 / (size * 3.35e12), rel=0.01)
    assert 72 in stops and "gb200-nvl72" in view["readout"]["values"]["systems"][stops.index(72)]
    # Every catalog domain size is marked: HGX boards, NVL72 racks, TPU pods.
    assert {8, 72, 256, 9216} <= {v["x"] for v in view["vlines"]}
    assert all(y == 20 for y in series["step"])           # the lecture's 20 ms step


def test_the_lecture_hop_comes_from_the_catalog():
    # The lecture: about 10 ms added over 4 stages, 2.5 ms a hop.
    assert mc.lecture_hop() == pytest.approx(10e-3 / 4)
    assert mc.HOPS[-1] == ("2.5 ms (the lecture's)", pytest.approx(2.5e-3))
    assert "the lecture's 2.5 ms hops" in mc.twin_data()["styles"]["lecture"]["label"]


def test_twin_views_are_chalk_memory(twins):
    data = twins[0]
    stops = data["controls"][-1]["values"]
    assert stops == list(mc.STAGES)
    for key in ("llama-3.1-405b|hgx-h100|bf16|131072|512", "deepseek-v3|gb200-nvl72|fp8|8192|64"):
        model, system, dtype, context, batch = key.split("|")
        view = data["views"][key]
        count = systems.get(system).count
        measured = mem.hop_time(model, system, int(batch), mc.TWIN_LINK)
        series = view["panels"][0]["series"]
        for i, p in enumerate(stops):
            m = mem.busy_microbatches(model, system, int(batch), int(context), p, measured, dtype)
            m_lecture = mem.busy_microbatches(model, system, int(batch), int(context), p, mc.lecture_hop(), dtype)
            w, k = mem.per_chip_parts(model, int(batch), int(context), dtype, count, p, m)
            k_lecture = mem.per_chip_parts(model, int(batch), int(context), dtype, count, p, m_lecture)[1]
            # The twin keeps three significant digits.
            assert series["weights"][i] == pytest.approx(w / GB, rel=5e-3)
            assert series["kv"][i] == pytest.approx(k / GB, rel=5e-3)
            assert series["total_lecture"][i] == pytest.approx((w + k_lecture) / GB, rel=5e-3)
            assert view["readout"]["values"]["m_lecture"][i] == pytest.approx(m_lecture, rel=5e-3)
            usable = systems.get(system).chip.hbm_capacity * (1 - HEADROOM)
            assert view["readout"]["pick"][i] == (0 if w + k <= usable else 1)
            reads = mem.token_time(model, system, int(batch), int(context), p, 0.0, dtype)
            assert view["panels"][1]["series"]["reads"][i] == pytest.approx(1e3 * reads, rel=5e-3)
        # Slower hops never hold less: the lecture's line is at or above the measured one at every depth.
        assert all(a >= b for a, b in zip(series["total_lecture"], series["total"]))
    # With instant hops P cancels from the cache: the same at every depth.
    _, k = mc.stage_parts("deepseek-v3", "gb200-nvl72", "fp8", 64, 8192)
    np.testing.assert_allclose(k, k[0], rtol=1e-12)


def test_every_twin_view_draws(twins):
    for data in twins:
        assert not [k for k, v in data["views"].items() if "message" in v]


@pytest.mark.parametrize("figure, numbers", [
    (lambda: mc.stages_figure("llama-3.1-405b", "hgx-h100", "bf16", 16, 32768), ["101.5 GB", "33.8 GB"]),
    (lambda: mc.context_figure(), ["longest context"]),
    (lambda: mc.floor_figure(), ["ms on hgx-h100"]),
    (lambda: mc.layout_figure(), ["the mean is 1.000"]),
    (lambda: mc.wall_figure(), ["52%", "63%"]),
    (lambda: mc.training_figure(), ["stage 0 stays at"]),
])
def test_static_figures_say_what_they_show(figure, numbers):
    text = alt_text(figure())
    for n in numbers:
        assert n in text, (n, text)


def test_layout_figure_is_the_placement_over_the_formula():
    fig = mc.layout_figure("deepseek-v3", 64, 8192, "fp8", 8, 4)
    shown = fig.axes[0].images[0].get_array()
    expected = mem.layout_bytes("deepseek-v3", 64, 8192, "fp8", 8, 4) / mem.per_chip("deepseek-v3", 64, 8192, "fp8", 8, 4)
    np.testing.assert_allclose(shown, expected, rtol=1e-12)


def test_floor_twin_says_what_its_line_leaves_out_past_the_experts(twins):
    # DeepSeek-V3 has 256 routed experts per layer: wider than that, the line reads split experts whose
    # collectives it does not count; a dense model is that wide only tensor parallel (all-reduces).
    _, floor = twins
    stops = floor["controls"][-1]["values"]
    moe_notes = floor["views"]["deepseek-v3|fp8"]["readout"]["values"]["note"]
    assert moe_notes[stops.index(256)] == "" and "collectives" in moe_notes[stops.index(512)]
    dense_notes = floor["views"]["llama-3.1-405b|fp8"]["readout"]["values"]["note"]
    assert dense_notes[stops.index(1)] == "" and "all-reduces" in dense_notes[stops.index(72)]


# DeepSeek-V3 config.json: hidden 7,168, 61 layers (3 dense, d_ff 18,432), 58 MoE layers of 256 routed
# experts of d_ff 2,048 and one shared, vocabulary 129,280, MLA (q rank 1,536, kv rank 512, 128 heads,
# 128 + 64 query-key and 128 value dimensions); Section 3.4.2 of its report: decode attention TP4, 64 of
# 320 GPUs for redundant and shared experts.
def test_deepseeks_decode_layout_reads_one_expert_and_a_quarter_of_attention_per_gpu():
    d = 7168
    attention = 61 * (d * 1536 + 1536 * 128 * 192 + d * (512 + 64) + 512 * 128 * 256 + 128 * 128 * d)
    dense, head, router = 3 * 3 * d * 18432, 129280 * d, 58 * 256 * d
    expert = 58 * 3 * d * 2048                      # one expert, every MoE layer, FP8
    copies = dense + head + router + attention / 4  # no shared expert, no input embedding
    h800, gb200 = 3.35e12, 8e12
    read, copied = mc.decode_layout_read("hgx-h800", 320, 64)
    assert abs(read - (expert + copies) / h800) / read < 0.002
    assert abs(copied - copies / h800) / copied < 0.002
    # On a GB200 NVL72, 256 routed experts and the shared one over 72 GPUs: 4 on the busiest.
    read, copied = mc.decode_layout_read("gb200-nvl72", 72, 1)
    assert abs(read - (4 * expert + copies) / gb200) / read < 0.002
