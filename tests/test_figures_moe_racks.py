"""Chapter 2's explorer, twin and figures: their numbers are chalk.moe's, their pictures the
placement's, and bad choices show a message instead of a chart."""
import json
import math
import re

import numpy as np
import pytest

from chalk import ChalkError, moe, systems
from chalk.figures import canvas, moe_racks as mr


@pytest.fixture(scope="module")
def explorer():
    return mr.Explorer()


def numbers_after(text, label):
    return float(re.search(label + r" ([\d,.]+)", text).group(1).replace(",", ""))


def test_readout_is_the_placement_and_the_layer_times(explorer):
    text = explorer.update(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", split="even",
                           batch=mr._stop(mr.BATCH, 1000), context=mr._stop(mr.CONTEXT, 32768))
    batch, context = explorer.params["batch"], explorer.params["context"]
    p = moe.placement("deepseek-v3", "gb200-nvl72", batch, context, "fp8", chips=64)
    assert "experts on 64 of 72 chips, up to 4 each" in text
    assert numbers_after(text, "per chip") == pytest.approx(p.weight_bytes / 1e9, abs=0.05)
    assert numbers_after(text, r"weights \+") == pytest.approx(p.kv_bytes / 1e9, abs=0.05)
    one = moe.layer_times("deepseek-v3", "gb200-nvl72", batch, "fp8", chips=64)
    assert numbers_after(text, "all-to-all") == pytest.approx(1e6 * one.communication, rel=5e-3)
    two = {dedup: moe.layer_times("deepseek-v3", "gb200-nvl72", 2 * batch, "fp8", domains=2, chips=64, dedup=dedup)
           for dedup in (False, True)}
    assert numbers_after(text, r"this batch\)") == pytest.approx(1e6 * two[False].communication, rel=5e-3)
    assert numbers_after(text, "every choice,") == pytest.approx(1e6 * two[True].communication, rel=5e-3)
    # the readout names what the nominal times leave out, with the fitted fixed cost per call
    assert f"add about {1e6 * moe.MEASURED.alpha:.0f} µs each" in text


def test_a_model_that_does_not_fit_says_so(explorer):
    text = explorer.update(model="deepseek-v3", system="hgx-h100", dtype="bf16")
    assert "the weights alone do not fit" in text and "color:#b00" in text
    assert explorer.image.value[:4] == b"\x89PNG"


def test_a_format_the_chip_cannot_compute_in_keeps_the_memory_and_says_why(explorer):
    text = explorer.update(system="hgx-h100", dtype="fp4")
    assert "no layer times" in text and "fp4" in text and "GB of weights" in text


def test_bad_input_shows_a_message_in_the_widget(explorer):
    text = explorer.update(batch=-3.0)
    assert "color:#b00" in text and "batch" in text
    ok = explorer.update(batch=512.0, system="gb200-nvl72", dtype="fp8")
    assert "color:#b00" not in ok


def test_the_bars_are_painted_where_the_axes_put_them(explorer):
    explorer.update(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", batch=512.0, context=32768.0)
    fig = explorer.figure
    (left, top, right, bottom), colour, _ = fig._bars[0]   # the copied weights, from zero upward
    p = moe.placement("deepseek-v3", "gb200-nvl72", 512, 32768, "fp8", chips=64)
    height = fig.fig.canvas.get_width_height()[1]
    y0 = height - fig.ax_mem.transData.transform((0, 0))[1]
    y1 = height - fig.ax_mem.transData.transform((0, p.replicated_bytes / 1e9))[1]
    assert (bottom, top) == pytest.approx((y0, y1), abs=0.5)
    assert colour == mr.COLORS["replicated"]


def test_domain_picture_has_one_square_per_expert():
    held = moe.experts_on_chips("deepseek-v3", 64, 72)
    img = mr.domain_pixels(held)
    dark = np.all(img == [int(mr.COLORS["chip_full"][i:i + 2], 16) for i in (1, 3, 5)], axis=2)
    cells, rows, cols = mr.domain_layout(72)
    cell = img.shape[0] // rows
    for (r, c), g in zip(cells, held):
        block = dark[r * cell:(r + 1) * cell, c * cell:(c + 1) * cell]
        # squares are separated by white gaps: count the connected runs along the diagonal grid
        side = math.ceil(math.sqrt(g)) if g else 0
        assert (block.any() if g else not block.any()), (r, c, g)
        if g:
            rows_with = np.flatnonzero(block.any(axis=1))
            runs = 1 + np.count_nonzero(np.diff(rows_with) > 1)
            assert runs == math.ceil(g / side)


def test_expert_chips_split_evenly_or_use_every_chip():
    assert mr.expert_chips("deepseek-v3", "gb200-nvl72", "even") == 64
    assert mr.expert_chips("kimi-k2", "gb200-nvl72", "even") == 64   # 384 = 64 x 6
    assert mr.expert_chips("mixtral-8x7b", "gb200-nvl72", "even") == 8
    assert mr.expert_chips("deepseek-v3", "gb200-nvl72", "all") == 72


def test_twin_views_are_chalks():
    data = mr.twin_data()
    size = len(json.dumps(data, separators=(",", ":")))
    assert size < 450_000, size
    stops = data["controls"][-1]["values"]
    for key in ("deepseek-v3|gb200-nvl72|fp8|32768", "qwen3-235b-a22b|hgx-h100|bf16|4096"):
        model, system, dtype, context = key.split("|")
        view = data["views"][key]
        chips = mr.expert_chips(model, system, "even")
        for i, batch in enumerate(mr.TWIN_BATCHES):
            # the slider shows each batch to three figures; the views hold the batch itself, whose
            # sequences are dealt out whole (16,384 over 64 chips puts 256 on each; the 16,400 shown
            # would put 257 on the busiest)
            assert stops[i] == pytest.approx(batch, rel=5e-3)
            p = moe.placement(model, system, batch, float(context), dtype, chips=chips)
            assert view["readout"]["pick"][i] == (0 if p.fits else 1 if p.max_batch else 2)
            assert view["readout"]["values"]["kv"][i] == pytest.approx(p.kv_bytes / 1e9, rel=5e-3, abs=1e-3)
            t = moe.layer_times(model, system, batch, dtype, chips=chips)
            assert view["panels"][1]["series"]["up"][i] == pytest.approx(1e6 * t.communication, rel=5e-3)
            d = moe.layer_times(model, system, 2 * batch, dtype, domains=2, chips=chips, dedup=True)
            assert view["panels"][1]["series"]["outd"][i] == pytest.approx(1e6 * d.communication, rel=5e-3)
            used = view["panels"][0]["series"]["used"][i]
            assert used is None or used == pytest.approx(p.used / 1e9, rel=5e-3)
        rects = [s for s in view["panels"][2]["frames"][0] if s["shape"] == "rect"]
        assert len(rects) == systems.get(system).count + 1   # every chip and the switch band


def test_twin_memory_line_stops_where_the_chart_ends():
    view = mr.twin_view("deepseek-v3", "hgx-h200", "fp8", 32768)
    top = view["panels"][0]["ylim"][1]
    used = view["panels"][0]["series"]["used"]
    assert used[0] is not None and used[-1] is None
    assert all(u is None or u <= top for u in used)


def test_session_is_replayable():
    ex = mr.Explorer()
    for params in mr.SESSION:
        ex.update(**params)
    assert ex.params["model"] == "deepseek-v3" and "color:#b00" not in ex.text.value


@pytest.mark.parametrize("name", ["layer_time_figure", "memory_figure", "domain_figure", "growth_figure"])
def test_figures_carry_alt_text_from_their_data(name):
    fig = getattr(mr, name)()
    alt = canvas.alt_text(fig)
    assert len(alt) > 80 and re.search(r"\d", alt)


def test_memory_figure_says_which_systems_fit():
    alt = canvas.alt_text(mr.memory_figure())
    for name in ("HGX H100", "GB200 NVL72"):
        p = moe.placement("deepseek-v3", name.lower().replace(" ", "-"), 512, 32768, "fp8",
                          chips=mr.expert_chips("deepseek-v3", name.lower().replace(" ", "-"), "even"))
        assert f"{name}: {p.used / 1e9:,.0f} GB against {p.usable / 1e9:,.0f} GB usable, " \
               f"{'fits' if p.fits else 'does not fit'}" in alt


def test_paint_fills_and_hatches_inside_the_box_only():
    pixels = np.full((20, 30, 4), 255, np.uint8)
    mr.paint(pixels, (5, 4, 15, 12), "#0072B2", "//")
    inside = pixels[4:12, 5:15, :3]
    blue = np.all(inside == [0, 114, 178], axis=2)
    assert 0.5 < blue.mean() < 1.0          # striped, not solid
    assert np.all(pixels[:4] == 255) and np.all(pixels[:, 15:] == 255)



def test_no_two_imbalance_series_differ_by_colour_alone():
    fig = mr.imbalance_figure(chips=(8, 64), tokens=(128, 1024), trials=2)
    lines = [ln for ln in fig.axes[0].get_lines() if "approximation" in ln.get_label()]
    assert len(lines) == 2 and lines[0].get_linestyle() != lines[1].get_linestyle()


def test_usable_hbm_label_follows_the_headroom():
    # the course keeps a tenth of HBM free (chalk.roofline.HEADROOM): the line is labelled 90%
    assert mr.USABLE_LABEL == f"usable HBM ({round(100 * (1 - 0.1))}%)"
    alt_legend = [t.get_text() for t in mr.memory_figure().legends[0].get_texts()]
    assert mr.USABLE_LABEL in alt_legend


# --- helpers the chapter and its deeper page share ------------------------------------------------
def test_decode_layer_spreads_the_tokens_per_chip_over_every_expert_chip_of_each_domain():
    # DeepSeek-V3's 256 experts split evenly over 64 of an NVL72's 72 GPUs; two racks keep 64 tokens each
    t = mr.decode_layer("gb200-nvl72", 2)
    assert t == moe.layer_times("deepseek-v3", "gb200-nvl72", 2 * 64 * 64, "fp8", domains=2, chips=64)
    assert mr.decode_layer("hgx-h100", tokens_per_chip=8) == moe.layer_times("deepseek-v3", "hgx-h100", 64, "fp8")


def test_skew_study_copies_help_while_the_popularity_holds_and_not_after():
    s = mr.skew_study("deepseek-v3", 64, tokens=2048, trials=3)
    held, moved = s.imbalance[s.copies, 0.0], s.imbalance[s.copies, s.moved]
    assert s.imbalance[0, 0.0] > 1.5 > held          # the copies take most of the skew out
    assert moved > 1.5 * held                         # a stale balancer gives most of it back
    with pytest.raises(ChalkError, match="moved"):
        mr.skew_study("deepseek-v3", 64, tokens=2048, trials=3, moved=0.5)
