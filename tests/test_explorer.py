"""The explorer base and Chapter 1's explorer and twin data, without a browser.

tests/test_twins.py moves every twin's controls on the built pages; here the readouts, the
controls and the embedded JSON are checked against hand-computed values and roofline's own
``decode_point``.
"""
import importlib
import io
import json
import math
import re
from pathlib import Path

import pytest
from PIL import Image

import chalk.figures
from chalk import hardware, models, roofline
from chalk.errors import ChalkError
from chalk.figures import batching, explorer, twin
from chalk.figures.batching import Explorer

PNG = b"\x89PNG\r\n\x1a\n"


def hand_usd_per_mtok(chip, model, batch, context, dtype, chips, usd):
    c, m = hardware.get(chip), models.get(model)
    b_w = hardware.BYTES_PER_ELEMENT[dtype]
    compute = 2 * batch * m.active_params / (chips * c.flops(dtype))
    memory = (m.total_params * b_w + batch * context * m.kv_bytes_per_token(2)) / (chips * c.hbm_bandwidth)
    return 1e6 * max(compute, memory) * chips * usd / 3600 / batch


def image_size(e):
    return Image.open(io.BytesIO(bytes(e.image.value))).size


@pytest.fixture(scope="module")
def ex():
    return Explorer(model="llama-3-70b", chip="H100-SXM", chips=8, dtype="bf16", context=1024,
                    batch=100, usd_per_chip_hour=2.0)


def test_update_reports_the_operating_point(ex):
    text = ex.update(batch=100, context=1024)
    assert "memory-bound (weights)" in text
    usd = hand_usd_per_mtok("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 2.0)
    assert f"${usd:.3g} per million tokens" in text
    assert bytes(ex.image.value).startswith(PNG)
    assert ex.widgets["batch"].value == 100


def test_readout_numbers_are_decode_points(ex):
    text = ex.update(batch=64, context=4000)
    p = roofline.decode_point("H100-SXM", "llama-3-70b", 64, 4000, "bf16", 8, 2.0)
    for shown in (f"{1e3 * p.t_step:.3g} ms", f"{p.mfu:.0%}", f"{p.tokens_per_second:,.0f} tokens/s",
                  f"${p.usd_per_million_tokens:.3g}", p.regime):
        assert shown in text


def test_price_parameter_scales_the_cost(ex):
    text = ex.update(batch=100, context=1024, usd_per_chip_hour=4.0)
    usd = hand_usd_per_mtok("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 4.0)
    assert f"${usd:.3g} per million tokens" in text
    ex.update(usd_per_chip_hour=2.0)


def test_moving_a_control_redraws(ex):
    ex.update(batch=100)
    before = ex.image.value
    ex.widgets["batch"].value = 1000.0  # a stop of the slider, as a reader's drag gives
    assert ex.params["batch"] == 1000
    assert ex.image.value != before


def test_starts_at_the_values_asked_for_not_the_nearest_stop():
    e = Explorer(model="deepseek-v3", chip="GB200", chips=72, dtype="fp8", batch=1024, context=34_800)
    assert (e.widgets["batch"].value, e.widgets["batch"].label) == (1024, "1,024")
    assert (e.widgets["context"].value, e.widgets["context"].label) == (34_800, "34,800")
    assert "B = 1,024:" in e.text.value and "context 34,800 tokens" in e.text.value
    # Moving on and back: the reader's value is still on the slider, among the fixed stops.
    e.update(batch=1000)
    assert e.widgets["batch"].label == "1,000"


def test_does_not_fit_is_said_instead_of_numbers(ex):
    text = ex.update(batch=20000, context=32768)
    assert "does not fit" in text and "short by" in text
    assert "tokens/s" not in text
    ex.update(chip="H100-SXM", dtype="bf16", batch=100, context=1024)


def test_error_keeps_the_layout_and_names_the_readers_values(ex):
    size = image_size(ex)
    text = ex.update(model="deepseek-v3", chips=1, batch=1024, context=34_800)
    assert "does not fit" in text and "batch 1,024 x context 34,800" in text
    assert "batch 0" not in text
    assert image_size(ex) == size
    text = ex.update(model="llama-3-70b", chip="A100-80GB", chips=8, dtype="fp8")
    assert "A100-80GB" in text and "bf16" in text
    assert image_size(ex) == size
    ex.update(chip="H100-SXM", dtype="bf16", batch=100, context=1024)


@pytest.mark.parametrize("params, words", [
    ({"batch": 0}, ["batch", "between 1 and"]),
    ({"batch": -5}, ["batch", "between 1 and"]),
    ({"context": 2e6}, ["context", "between 0 and"]),
    ({"usd_per_chip_hour": 0}, ["usd_per_chip_hour", "between 0.01 and 100"]),
    ({"chips": 3}, ["chips", "unknown"]),
    ({"model": "gpt-9"}, ["model", "unknown"]),
])
def test_bad_values_are_shown_in_the_widget_not_raised(ex, params, words):
    size = image_size(ex)
    text = ex.update(**params)
    assert 'color:#b00' in text
    for word in words:
        assert word in text
    assert image_size(ex) == size
    ex.update(**{k: explorer_default(ex, k) for k in params})
    assert "tokens/s" in ex.text.value


def explorer_default(ex, name):
    return {"batch": 100, "context": 1024, "usd_per_chip_hour": 2.0, "chips": 8,
            "model": "llama-3-70b"}[name]


def test_unknown_parameter_is_refused(ex):
    with pytest.raises(ChalkError, match="colour"):
        ex.update(colour="red")


def test_an_update_that_changes_nothing_does_not_redraw(ex):
    ex.update(batch=300)
    image = ex.image.value
    ex.image.value = b""  # a redraw would put a PNG back
    ex.update(batch=300)
    assert ex.image.value == b""
    ex.image.value = image


# --- the base, with a fixture explorer ----------------------------------------------------------
class Recorder:
    """A stand-in figure that records what the base asks of it."""

    def __init__(self):
        self.calls = []

    def message(self, text):
        self.calls.append(("message", text))

    def render(self):
        self.calls.append(("render",))
        return PNG


class Tiny(explorer.Explorer):
    controls = (explorer.Dropdown("shape", "shape", (("Square", "square"), ("Circle", "circle"))),
                explorer.linear_slider("size", "size", 1, 10, 1),
                explorer.Number("scale", "scale", 0.5, 2, 0.1))
    defaults = dict(shape="square", size=3.0, scale=1.0)
    rows = (("shape",), ("size", "scale"))

    def make_figure(self):
        return Recorder()

    def draw(self, shape, size, scale):
        return f"{shape} {size * scale:g}"


def test_a_chapter_explorer_is_controls_plus_draw():
    t = Tiny(size=4.5)
    assert t.text.value == "square 4.5"
    assert t.widgets["size"].label == "4.5"  # not a stop, shown exactly
    assert t.update(shape="CIRCLE", scale=2) == "circle 9"  # names match as the catalog's do
    t.widgets["size"].value = 7.0
    assert t.text.value == "circle 14"
    assert "scale" in t.update(scale=5) and t.figure.calls[-2][0] == "message"
    assert len(t.widget().children) == 2 + 2  # two rows, the readout, the image


def test_number_formatting_keeps_what_was_typed():
    assert [explorer.number(v) for v in (1024, 34_800, 0.5, 2.25, 35481.4)] == \
        ["1,024", "34,800", "0.5", "2.25", "35,481"]


# --- Chapter 1's twin data --------------------------------------------------------------------
SMALL = dict(model_names=("llama-3-70b", "deepseek-v3"), systems=(("H100-SXM", 8), ("A100-80GB", 8)),
             dtypes=("bf16", "fp8"), contexts=(1024,))


@pytest.fixture(scope="module")
def small():
    data = batching.twin_data(usd_per_chip_hour=2.0, **SMALL)
    return data, twin.twin_html(data)


def embedded_json(html):
    m = re.search(r'<script type="application/json" class="chalk-twin-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_twin_html_holds_markup_and_data_but_no_script(small):
    data, html = small
    assert 'class="chalk-twin"' in html
    slider = re.search(r'<input type="range" class="chalk-twin-batch" min="0" max="(\d+)"', html)
    assert slider and int(slider.group(1)) == len(batching.BATCHES) - 1
    assert 'class="chalk-twin-readout" aria-live="polite"' in html
    assert html.count("<svg") == 2
    assert embedded_json(html) == json.loads(json.dumps(data))
    assert "<script>" not in html  # the drawing code is the site's one shared file


def test_twin_hides_itself_in_jupyterlab(small):
    _, html = small
    assert ".jp-OutputArea-output .chalk-twin-body{display:none}" in html
    assert ".jp-OutputArea-output .chalk-twin-note{display:block}" in html
    assert 'class="chalk-twin-note"' in html


def test_twin_json_has_one_view_per_combination_of_the_right_shape(small):
    data, _ = small
    assert len(data["views"]) == 2 * 2 * 2 * 1
    n = len(batching.BATCHES)
    ok = data["views"]["llama-3-70b|H100-SXM|8|bf16|1024"]
    for panel in ok["panels"]:
        assert set(panel["series"]) == set(("t_compute", "t_weights", "t_kv", "t_mem", "t_step"))
        assert all(len(ys) == n for ys in panel["series"].values())
    assert len(ok["readout"]["pick"]) == n


def test_twin_values_match_hand_formulas(small):
    data, _ = small
    view = data["views"]["llama-3-70b|H100-SXM|8|bf16|1024"]
    stops = data["controls"][-1]["values"]
    i = stops.index(100.0)
    usd = hand_usd_per_mtok("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 2.0)
    assert view["readout"]["values"]["usd_per_mtok"][i] == pytest.approx(usd, rel=5e-3)  # 3 digits
    assert view["panels"][1]["series"]["t_step"][i] == pytest.approx(usd, rel=5e-3)
    p = roofline.decode_point("H100-SXM", "llama-3-70b", 100, 1024, "bf16", 8, 2.0)
    assert view["readout"]["values"]["mfu"][i] == pytest.approx(100 * p.mfu, rel=5e-2)  # 2 digits
    assert p.regime in data["templates"][view["readout"]["pick"][i]]
    # Past the fit limit the readout carries the shortfall, not a price.
    last = len(stops) - 1
    assert data["templates"][view["readout"]["pick"][last]].startswith("!")
    assert view["readout"]["values"]["usd_per_mtok"][last] is None
    assert view["readout"]["values"]["short_gb"][last] > 0


def test_twin_explains_views_that_cannot_run(small):
    data, _ = small
    assert "does not fit" in data["views"]["deepseek-v3|H100-SXM|8|bf16|1024"]["message"]
    assert "bf16" in data["views"]["llama-3-70b|A100-80GB|8|fp8|1024"]["message"]


def test_twin_text_has_no_dollar_sign_for_mathjax(small):
    data, html = small
    assert "$" not in html
    assert "USD" in " ".join(data["templates"])
    with pytest.raises(ChalkError, match="USD"):
        twin.twin_data([], [], {}, [], ["costs $5"], {"": {"message": "no dropdowns: one view"}})


def test_twin_refuses_views_that_do_not_match_the_controls():
    controls = [twin.select("a", "a", [("x", "x")]), twin.slider("s", "s", [1, 2, 3], 1)]
    good = {"panels": [{"frames": [[twin.text(1, 1, "hi")]]}], "readout": {"pick": [0, 0, 0]}}
    panels = [twin.shapes("t", 100, 50)]
    assert twin.twin_data(controls, panels, {}, [], ["t"], {"x": good})
    with pytest.raises(ChalkError, match="views"):
        twin.twin_data(controls, panels, {}, [], ["t"], {"y": good})
    with pytest.raises(ChalkError, match="3 entries"):
        twin.twin_data(controls, panels, {}, [], ["t"], {"x": {**good, "readout": {"pick": [0]}}})


def test_twin_script_only_looks_values_up():
    # No catalog figure or physical constant appears in the script: it indexes the JSON.
    script = twin.SCRIPT.read_text()
    for needle in ("3600", "1e6", "flops", "bandwidth", "capacity", "active", "kv_bytes", "t_step"):
        assert needle not in script


def test_full_twin_stays_light():
    html = twin.twin_html(batching.twin_data())
    assert len(html.encode()) < 600_000
    assert not math.isnan(sum(embedded_json(html)["controls"][-1]["values"]))


def test_linear_slider_stops_hold_the_values_a_reader_types():
    # 1.85 + 0.05 in floating point is 1.9000000000000001: a default of 1.9 must be that stop.
    from chalk.figures.explorer import linear_slider
    stops = linear_slider("x", "x", 1.85, 2.6, 0.05).stops
    assert 1.9 in stops and 2.6 in stops and len(stops) == 16


EXPLORERS = ["batching", "long_context", "memory_capacity", "moe_racks", "overtraining", "pipelining", "revnets"]


def test_explorer_list_is_every_chapters():
    found = {p.stem for p in (Path(chalk.figures.__file__).parent).glob("*.py")
             if "class Explorer(explorer.Explorer)" in p.read_text()}
    assert found == set(EXPLORERS)


@pytest.mark.parametrize("module", EXPLORERS)
def test_moving_the_first_widget_changes_the_picture(module):
    """What a student does in JupyterLab, without the browser (tests/test_lab.py does it in a real
    JupyterLab for one chapter): move the first control's widget one stop, or pick another option,
    and the explorer draws a new picture and readout."""
    ex = importlib.import_module(f"chalk.figures.{module}").Explorer()
    name = ex.controls[0].name
    widget = ex.widgets[name]
    before, text = bytes(ex.image.value), ex.text.value
    values = [v for _, v in widget.options]
    here = values.index(widget.value)
    widget.value = values[here - 1 if here == len(values) - 1 else here + 1]
    assert ex.params[name] == widget.value
    assert bytes(ex.image.value) != before and ex.text.value != text


# --- every chapter's explorer: labels, menus, figure, work per move ----------------------------
@pytest.fixture(scope="module")
def chapter_explorers():
    """One explorer per chapter, built once: the checks below only read them or move them."""
    return {module: importlib.import_module(f"chalk.figures.{module}").Explorer() for module in EXPLORERS}


@pytest.mark.parametrize("module", EXPLORERS)
def test_every_control_shows_its_whole_label(chapter_explorers, module):
    """ipywidgets gives a description about 80 px and cuts the rest ("batch (se…" in JupyterLab):
    each control must size its description to its text."""
    ex = chapter_explorers[module]
    for c in ex.controls:
        w = ex.widgets[c.name]
        assert w.description == c.label and c.label.strip(), c.name
        assert w.style.description_width == "initial", f"{module}: {c.label!r} is cut at ipywidgets' default width"


def catalog_ids() -> set:
    from chalk.catalog import prices, systems
    from chalk.catalog.overtraining import FITS
    return (set(models.names()) | set(systems.names()) | set(hardware.names()) | set(prices.names())
            | set(FITS) | set(hardware.BYTES_PER_ELEMENT))


@pytest.mark.parametrize("module", EXPLORERS)
def test_menus_show_names_not_catalog_ids(chapter_explorers, module):
    ex = chapter_explorers[module]
    ids = catalog_ids()
    for c in ex.controls:
        if isinstance(c, explorer.Dropdown):
            labels = [label for label, _ in ex.widgets[c.name].options]
            assert not ids & set(labels), f"{module}'s {c.label} menu shows catalog ids {sorted(ids & set(labels))}"
            assert len(set(labels)) == len(labels), f"{module}'s {c.label} menu names two entries alike"


def test_catalog_options_are_the_catalogs_own_names():
    from chalk.catalog import prices, systems
    assert explorer.catalog_options(["hgx-h100", "llama-3-70b", "fp8", "anthropic/claude-sonnet-4.5"]) == (
        (systems.get("hgx-h100").display, "hgx-h100"), (models.get("llama-3-70b").display, "llama-3-70b"),
        ("FP8", "fp8"), (prices.get("anthropic/claude-sonnet-4.5").model, "anthropic/claude-sonnet-4.5"))
    label, _ = explorer.catalog_options(["H100-SXM"])[0]
    assert label == "NVIDIA H100-SXM"  # a chip has no display name: its vendor makes the label differ
    with pytest.raises(ChalkError, match="gpt-9"):
        explorer.catalog_options(["gpt-9"])


def texts_outside(fig) -> list[str]:
    """The text artists a full draw of ``fig`` paints that reach past the figure's edges."""
    from unittest import mock
    from matplotlib.text import Text
    drawn, draw = [], Text.draw

    def record(self, renderer):
        draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)

    with mock.patch.object(Text, "draw", record):
        fig.canvas.draw()
    renderer, edge = fig.canvas.get_renderer(), fig.bbox
    return [f"{t.get_text()!r} spans x {b.x0:.0f}-{b.x1:.0f}, y {b.y0:.0f}-{b.y1:.0f} of {edge.width:.0f} x {edge.height:.0f}"
            for t in drawn for b in [t.get_window_extent(renderer)]
            if b.x0 < -0.5 or b.y0 < -0.5 or b.x1 > edge.x1 + 0.5 or b.y1 > edge.y1 + 0.5]


def test_texts_outside_sees_a_clipped_label():
    from chalk.figures.canvas import new_figure
    fig, (ax,) = new_figure(3, 2)
    ax.set_xlabel("a label far too long to fit a figure three inches wide, cut at both ends")
    assert texts_outside(fig) and "far too long" in texts_outside(fig)[0]


@pytest.mark.parametrize("module", EXPLORERS)
def test_explorer_figure_is_not_clipped(chapter_explorers, module):
    """Every label, tick and legend entry lies inside the picture, as built and along the reader's
    session (other models, systems and axis limits)."""
    ex = chapter_explorers[module]
    assert texts_outside(ex.figure.fig) == []
    for params in importlib.import_module(f"chalk.figures.{module}").SESSION[::6]:
        ex.update(**params)
        assert texts_outside(ex.figure.fig) == [], params


@pytest.mark.parametrize("module", EXPLORERS)
def test_a_move_compiles_nothing_and_redraws_only_what_moved(chapter_explorers, module):
    """What keeps a slider under a frame or two: no SymPy lambdify after the explorer is built
    (the reader's whole session), no full redraw of the figure on a slider move, and, once a view
    has been seen, no text drawn again (labels are pasted from cached pixels)."""
    import sys
    from unittest import mock
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    ex = chapter_explorers[module]
    session = importlib.import_module(f"chalk.figures.{module}").SESSION
    moves = []
    for c in ex.controls:
        if isinstance(c, explorer.Slider):
            i = c.stops.index(min(c.stops, key=lambda s: abs(s - ex.params[c.name])))
            j = i - 1 if i else i + 1
            moves += [{c.name: c.stops[j]}, {c.name: c.stops[i]}]
    counts = {"lambdify": 0, "full draw": 0, "text": 0}

    def counting(name, f):
        def wrapped(*args, **kwargs):
            counts[name] += 1
            return f(*args, **kwargs)
        return wrapped

    lambdify = sys.modules["sympy.utilities.lambdify"]
    import sympy
    with mock.patch.object(sympy, "lambdify", counting("lambdify", sympy.lambdify)), \
            mock.patch.object(lambdify, "lambdify", counting("lambdify", lambdify.lambdify)), \
            mock.patch.object(FigureCanvasAgg, "draw", counting("full draw", FigureCanvasAgg.draw)):
        for params in session:
            ex.update(**params)
        assert counts["lambdify"] == 0
        counts["full draw"] = 0  # a first view of a new layout may draw it whole (Chapter 3's stages)
        for params in moves:
            ex.update(**params)
        assert counts == {"lambdify": 0, "full draw": 0, "text": 0}
        with mock.patch.object(Text, "draw", counting("text", Text.draw)):
            for params in moves:  # seen once above: every label is a cached stamp now
                ex.update(**params)
    assert counts == {"lambdify": 0, "full draw": 0, "text": 0}, module
