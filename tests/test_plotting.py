"""Chapter 1's figure code: the plotted values against hand formulas, and the redraw machinery.

Expected values use the catalog's published figures and formulas written out here, never the
numbers ``plotting`` computes.
"""
import io
import math

import numpy as np
import pytest
from PIL import Image

from chalk import hardware, models, roofline
from chalk.figures import plotting
from chalk.errors import ChalkError, DoesNotFit

H100, LLAMA70 = hardware.get("H100-SXM"), models.get("llama-3-70b")
PNG = b"\x89PNG\r\n\x1a\n"


def hand_times(batch, context, chips=8, b_w=2.0):
    """Step-time terms of Llama 3 70B in BF16 on `chips` H100s, written out."""
    F, W = chips * H100.flops("bf16"), chips * H100.hbm_bandwidth
    # Attention: 4 FLOPs per head dimension per cached token (scores and values), 64 heads of
    # 128 in each of 80 layers, in BF16 like the weights here.
    compute = batch * (2 * LLAMA70.active_params + 4 * 64 * 128 * 80 * context) / F
    memory = (LLAMA70.total_params * b_w + batch * context * LLAMA70.kv_bytes_per_token(2)) / W
    return compute, memory


def test_curves_match_the_written_out_roofline():
    c = plotting.curves(H100, LLAMA70, context=1024, dtype="bf16", chips=8, usd_per_chip_hour=2.0)
    compute, memory = hand_times(c.batch, 1024)
    np.testing.assert_allclose(c.time["t_compute"], compute, rtol=1e-12)
    np.testing.assert_allclose(c.time["t_mem"], memory, rtol=1e-12)
    np.testing.assert_allclose(c.time["t_step"], np.maximum(compute, memory), rtol=1e-12)
    # $ per million tokens: the step's rental for 8 chips at $2/h, shared by B tokens.
    np.testing.assert_allclose(c.usd_per_mtok["t_step"],
                               1e6 * np.maximum(compute, memory) * 8 * 2.0 / 3600 / c.batch, rtol=1e-12)
    # Largest batch whose cache fits: 8 x 80 GB with roofline's headroom kept free, less 141 GB
    # of weights, in 1,024-token caches.
    free = 8 * H100.hbm_capacity * (1 - roofline.HEADROOM) - 2 * LLAMA70.total_params
    assert c.max_batch == math.floor(free / (1024 * LLAMA70.kv_bytes_per_token(2)))


def test_balance_batch_of_a_dense_model_in_bf16_is_the_chips_flop_per_byte():
    # B* = r b_w s / 2 with s = 1 and b_w = 2: r, about 295 for the H100 (989 TFLOP/s, 3.35 TB/s).
    c = plotting.curves(H100, LLAMA70, context=0, dtype="bf16", chips=8)
    assert c.balance_batch == pytest.approx(989.4 / 3.35, rel=0.01)


def test_regimes_follow_the_batch():
    c = plotting.curves(H100, LLAMA70, context=0, dtype="bf16", chips=8)
    names = [plotting.REGIMES[k] for k in c.regime]
    assert names[0] == "memory-bound (weights)"
    assert names[-1] == "compute-bound"
    # At long context the KV read outgrows the weight read before compute can catch up.
    c_long = plotting.curves(H100, LLAMA70, context=32768, dtype="bf16", chips=8)
    assert plotting.REGIMES[c_long.regime[-1]] == "memory-bound (KV cache)"
    assert c_long.balance_batch == math.inf


def test_curves_refuse_what_cannot_run():
    with pytest.raises(DoesNotFit, match="short by"):
        plotting.curves("H100-SXM", "deepseek-v3", context=0, dtype="bf16", chips=1)
    with pytest.raises(ChalkError, match="dtype.*A100-80GB.*bf16"):
        plotting.curves("A100-80GB", "llama-3-70b", context=0, dtype="fp8", chips=8)


def test_figure_marks_point_fit_limit_and_regions():
    c = plotting.curves(H100, LLAMA70, context=1024, dtype="bf16", chips=8)
    f = plotting.RooflineFigure()
    f.draw(c, point=(100.0, 0.01, 1.0))
    x, y = f.points[f.ax_time].get_data()
    assert (x[0], y[0]) == (100.0, pytest.approx(10.0))  # plotted in ms
    assert f.spans[f.ax_time].get_x() == c.max_batch
    shown = {t.get_text() for t in f.texts[f.ax_time] if t.get_visible()}
    assert "memory-bound\n(weights)" in shown and "does not fit\nin HBM" in shown
    assert plotting.png(f.fig).startswith(PNG)


def pixels(png_bytes):
    return np.asarray(Image.open(io.BytesIO(png_bytes)).convert("RGB"), dtype=int)


def test_fast_render_reuses_its_layers_and_draws_what_a_full_draw_does():
    f = plotting.RooflineFigure()
    c = plotting.curves(H100, LLAMA70, context=1024, dtype="bf16", chips=8)
    f.draw(c, (10.0, *c.at(10.0)))
    first = f.render()
    f.draw(c, (500.0, *c.at(500.0)))
    second = f.render()
    assert first.startswith(PNG) and second.startswith(PNG) and first != second
    assert len(f.layers._backgrounds) == 1
    # The layered picture is the figure: compare with Agg drawing everything from scratch.
    full = pixels(plotting.png(f.fig))
    fast = pixels(second)
    assert full.shape == fast.shape
    differs = np.abs(full - fast).max(axis=2) > 60
    assert differs.mean() < 0.002, f"{differs.sum()} pixels differ"


def test_marker_at_the_last_batch_is_not_clipped():
    f = plotting.RooflineFigure()
    c = plotting.curves(H100, LLAMA70, context=0, dtype="bf16", chips=8)
    f.draw(c, (plotting.BATCHES[-1], *c.at(plotting.BATCHES[-1])))
    assert not f.points[f.ax_time].get_clip_on()
    # Marker colour found right of the axes' edge: half the marker is drawn outside.
    img = pixels(f.render())
    edge = int(f.ax_time.get_window_extent().x1)
    point = np.array([int(plotting.COLORS["point"][i:i + 2], 16) for i in (1, 3, 5)])
    assert (np.abs(img[:, edge + 2:edge + 6] - point).sum(axis=2) < 30).any()


def test_balance_context_figure_stops_each_curve_at_its_asymptote():
    fig = plotting.balance_context_figure([("H100-SXM", "llama-3-70b", "bf16")])
    (line,) = fig.axes[0].get_lines()[:1]
    # L* = 2 N_act / (r b_kv - f_att), f_att = 4 x 64 heads x 128 x 80 layers FLOP per cached token.
    l_star = 2 * LLAMA70.active_params / (H100.intensity("bf16") * LLAMA70.kv_bytes_per_token(2) - 4 * 64 * 128 * 80)
    assert line.get_xdata().max() < l_star
    # The label rounds to three significant figures (1,499 -> 1,500): the model is no finer.
    assert f"{float(f'{l_star:.3g}'):,.0f}" in line.get_label()
