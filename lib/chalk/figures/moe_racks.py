"""Chapter 2's figures, live explorer and static twin: an MoE model placed on a scale-up domain.

Every number comes from ``chalk.moe``: memory per chip from ``placement``, the all-to-all and the
expert work of one layer from ``layer_times``, the experts each chip holds from
``experts_per_chip``; the load-balance figures set ``simulate_routing`` beside the closed forms.
"""
import html
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .. import moe
from ..roofline import HEADROOM
from ..catalog import hardware, models, systems
from ..errors import ChalkError, lookup
from . import explorer, twin
from .canvas import describe, fast_png, new_figure, style
from .explorer import Dropdown, catalog_options, log_slider

# Okabe-Ito colours; every series also has its own line style, marker or hatch.
COLORS = {"replicated": "#999999", "experts": "#0072B2", "kv": "#E69F00", "usable": "#D55E00",
          "up": "#0072B2", "out": "#D55E00", "outd": "#E69F00", "matmul": "#009E73", "weights": "#CC79A7",
          "chip_full": "#0072B2", "chip_less": "#56B4E9", "idle": "#DDDDDD", "switch": "#F0E442"}
HATCH = {"replicated": "xx", "experts": "//", "kv": "..", "up": "", "out": "//", "outd": "..", "matmul": "\\\\",
         "weights": ".."}
TIME_LABELS = {"up": "all-to-all, 1 domain", "out": "2 domains, per choice",
               "outd": "2 domains, per domain", "matmul": "expert matmuls", "weights": "weight reads"}
"""The all-to-all over two domains counted both ways (``chalk.moe``): every expert choice sent on
its own (DeepEP's low-latency kernels), or a token sent once per domain and fanned out there (its
normal kernels)."""
MEMORY_LABELS = {"replicated": "weights copied on every chip", "experts": "its routed experts",
                 "kv": "KV cache of its sequences"}
USABLE_LABEL = f"usable HBM ({1 - HEADROOM:.0%})"
"""The usable-HBM line's label: what the course's headroom leaves of a chip's HBM."""

MODELS = ("deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "mixtral-8x7b")
SYSTEMS = ("hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "gb300-nvl72", "mi355x-8")
DTYPES = ("fp8", "bf16", "fp4")
SPLITS = {"even": "the most chips that split the experts evenly", "all": "every chip of the domain"}
KV_BYTES = 2
"""KV cache elements in BF16, whatever the weights' format (the explorer's stated input)."""
ACT_BYTES = 2
"""Activations sent in BF16 in both directions (DeepSeek dispatches in FP8: half of this one way)."""
def per_row(count: int) -> int:
    """Chips per row of the domain picture: two trays of four in a rack (an NVL72's 18 trays of 4
    GPUs, 10 above its switch trays and 8 below), one baseboard row of four in an 8-GPU box."""
    return 8 if count > 8 else 4


def expert_chips(model, system, split: str) -> int:
    """The chips of ``system`` that hold ``model``'s experts: every chip (``"all"``), or the most
    that hold equal numbers of them (``"even"``: DeepSeek-V3's 256 on 64 of an NVL72's 72)."""
    m, sys_ = models.get(model), systems.get(system)
    split = lookup("split", split, {s: s for s in SPLITS}, param="split")
    n = m.moe["n_routed_experts"]
    return sys_.count if split == "all" else max(d for d in range(1, sys_.count + 1) if n % d == 0)


# --- one view: every number the explorer and the twin show ----------------------------------------
@dataclass(frozen=True)
class View:
    placement: moe.Placement
    times: moe.LayerTimes | None
    """None when the chip has no published FLOP rate in the weights' format."""
    two_domains: moe.LayerTimes | None
    """The same layer spread over two domains, each keeping this batch: tokens per chip unchanged."""
    two_dedup: moe.LayerTimes | None
    """The same, a token crossing once per domain instead of once per expert choice."""
    chips: int
    domain: int
    why_no_times: str = ""


DECODE_TOKENS_PER_CHIP = 64
"""The chapter's decode micro-batch: 64 tokens on each expert chip."""


def decode_layer(system, domains=1, tokens_per_chip=DECODE_TOKENS_PER_CHIP, model="deepseek-v3", dtype="fp8",
                 **kw) -> moe.LayerTimes:
    """One MoE layer of a decode micro-batch of ``tokens_per_chip`` tokens on each of the most chips of
    ``system`` that split ``model``'s experts evenly, in each of ``domains`` copies of it
    (``moe.layer_times``'s other options in ``kw``): the chapter's and its deeper page's tables."""
    chips = expert_chips(model, system, "even")
    return moe.layer_times(model, system, domains * tokens_per_chip * chips, dtype, domains=domains, chips=chips, **kw)


@dataclass(frozen=True)
class SkewStudy:
    """The busiest chip over the mean under skewed routing, by redundant copies and drift."""
    tokens: int
    skew: float
    copies_tried: tuple
    drifts: tuple
    moved: float
    """the drift the chapter quotes: the share of experts whose popularity moved"""
    imbalance: dict
    """(redundant copies, drift) -> busiest chip's load over the mean chip's"""

    @property
    def copies(self) -> int:
        return max(self.copies_tried)


@lru_cache(maxsize=8)
def skew_study(model="deepseek-v3", chips=64, tokens=4096, skew=0.5, copies=(0, 16, 32), drifts=(0.0, 0.25, 1.0),
               moved=0.25, trials=6, seed=3) -> SkewStudy:
    """``moe.simulate_routing`` under a Zipf-like popularity (the i-th expert weighted by i to the power
    ``-skew``): copies and placement chosen from one earlier step's loads, then measured on fresh steps
    whose popularity has held or has since moved for a share ``drift`` of the experts. The chapter
    quotes its result; its deeper page shows the table."""
    if moved not in drifts:
        raise ChalkError(f"moved must be one of the drifts {drifts}, got {moved!r}")
    result = {(red, drift): moe.simulate_routing(model, chips, tokens, redundant=red, skew=skew, trials=trials,
                                                  seed=seed, drift=drift).imbalance
              for red in copies for drift in drifts}
    return SkewStudy(tokens, skew, tuple(copies), tuple(drifts), moved, result)


@lru_cache(maxsize=512)
def view(model: str, system: str, dtype: str, batch: float, context: float, split: str) -> View:
    chips = expert_chips(model, system, split)
    p = moe.placement(model, system, batch, context, dtype, chips=chips, kv_bytes_per_element=KV_BYTES)
    try:
        one = moe.layer_times(model, system, batch, dtype, bytes_per_element=ACT_BYTES, chips=chips)
        two = moe.layer_times(model, system, 2 * batch, dtype, domains=2, bytes_per_element=ACT_BYTES, chips=chips)
        dedup = moe.layer_times(model, system, 2 * batch, dtype, domains=2, bytes_per_element=ACT_BYTES,
                                chips=chips, dedup=True)
        why = ""
    except ChalkError as e:
        one = two = dedup = None
        why = str(e).split(":", 1)[-1].split(";")[0].strip()
    return View(p, one, two, dedup, chips, systems.get(system).count, why)


ALPHA_US = f"{1e6 * moe.MEASURED.alpha:.0f}"
"""The fixed cost of one dispatch or combine call that the nominal times leave out (µs, DeepEP)."""


def readout(model: str, system: str, dtype: str, batch: float, context: float, v: View) -> str:
    m, sys_, p = models.get(model), systems.get(system), v.placement
    head = (f"{html.escape(m.display)} in {hardware.dtype_name(dtype).upper()} on {html.escape(sys_.display)}: "
            f"{explorer.number(batch)} sequences of {explorer.number(context)} tokens, experts on "
            f"{v.chips} of {v.domain} chips, up to {p.experts_per_chip} each")
    mem = (f"per chip {p.weight_bytes / 1e9:,.1f} GB of weights + {p.kv_bytes / 1e9:,.1f} GB of KV against "
           f"{p.usable / 1e9:,.0f} GB usable: ")
    if p.fits:
        mem += f"<b>fits</b>, {p.margin / 1e9:,.1f} GB to spare (at most {explorer.number(p.max_batch)} sequences)"
    elif p.max_batch == 0:
        mem += f'<b style="color:#b00">the weights alone do not fit</b> ({-p.margin / 1e9:,.1f} GB short)'
    else:
        mem += (f'<b style="color:#b00">does not fit</b>, {-p.margin / 1e9:,.1f} GB short '
                f"(at most {explorer.number(p.max_batch)} sequences)")
    if v.times is None:
        return f"{head}<br>{mem}<br>no layer times: {html.escape(v.why_no_times)}"
    t, two = v.times, v.two_domains
    verdict = "hidden (with a second micro-batch in flight) behind" if t.hidden else "longer than"
    us = {name: explorer.number(1e6 * x) for name, x in
          (("one", t.communication), ("two", two.communication), ("dedup", v.two_dedup.communication),
           ("work", t.work), ("serial", t.communication + t.work))}
    layer = (f"one MoE layer: all-to-all {us['one']} µs in one domain; over two (each with this batch) "
             f"{us['two']} µs sending every choice, {us['dedup']} µs once per domain; expert work {us['work']} µs "
             f"(the one-domain all-to-all is {verdict} it; one micro-batch in series takes {us['serial']} µs). "
             f"Nominal link rates, bandwidth only: real calls add about {ALPHA_US} µs each, two per layer")
    return f"{head}<br>{mem}<br>{layer}"


# --- the domain picture ----------------------------------------------------------------------------
def domain_layout(count: int) -> tuple[list[tuple[int, int]], int, int]:
    """Grid cell (row, column) of each chip, rows of ``per_row`` with the switch band after the
    upper half; (cells, rows including the band, columns)."""
    width = per_row(count)
    rows = math.ceil(count / width)
    band = rows // 2 + rows % 2
    cells = []
    for c in range(count):
        r = c // width
        cells.append((r + (r >= band), c % width))
    return cells, rows + 1, width


def domain_pixels(held: list[int], cell: int = 24) -> np.ndarray:
    """RGB picture of a domain: each chip a cell of ``cell`` pixels, its experts as small squares
    (dark: the busiest chips, light: one expert fewer, grey: idle), the switch band across the middle."""
    rgb = {k: np.array([int(COLORS[k][i:i + 2], 16) for i in (1, 3, 5)], np.uint8) for k in COLORS}
    cells, rows, cols = domain_layout(len(held))
    img = np.full((rows * cell, cols * cell, 3), 255, np.uint8)
    band_row = next(r for r in range(rows) if r not in {row for row, _ in cells})
    top = max(held)
    img[band_row * cell + 4:(band_row + 1) * cell - 4, 2:-2] = rgb["switch"]
    for (r, c), g in zip(cells, held):
        y, x = r * cell, c * cell
        img[y + 1:y + cell - 1, x + 1:x + cell - 1] = rgb["idle"] if g == 0 else 250
        if g == 0:
            continue
        side = math.ceil(math.sqrt(g))
        step = (cell - 4) / side
        colour = rgb["chip_full"] if g == top else rgb["chip_less"]
        for e in range(g):
            ey, ex = divmod(e, side)
            y0, x0 = int(y + 2 + ey * step), int(x + 2 + ex * step)
            img[y0:max(y0 + 1, int(y0 + step) - 1), x0:max(x0 + 1, int(x0 + step) - 1)] = colour
    return img


def held_summary(held: list[int]) -> str:
    """Words for a placement: how many chips hold the most experts, one fewer, none."""
    top = max(held)
    full, less, idle = held.count(top), sum(1 for g in held if 0 < g < top), held.count(0)
    parts = [f"{full} chips hold {top} experts"]
    if less:
        parts.append(f"{less} hold {top - 1}")
    if idle:
        parts.append(f"{idle} hold none")
    return ", ".join(parts)


def domain_alt(model: str, system: str, chips: int) -> str:
    """What the domain picture shows, from its data: for alt text and the figure's caption."""
    m, sys_ = models.get(model), systems.get(system)
    held = moe.experts_on_chips(m, chips, sys_.count)
    return f"{m.display}'s {m.moe['n_routed_experts']} routed experts on {sys_.display}: {held_summary(held)}."


# --- the live explorer's figure --------------------------------------------------------------------
TIME_LIMITS = (1e-1, 1e5)
"""Microseconds: the time panel's fixed axis, 0.1 µs to 100 ms."""


@lru_cache(maxsize=32)
def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], np.uint8)


@lru_cache(maxsize=4)
def _hatch_masks(height: int, width: int) -> dict:
    """Where each hatch leaves white, over a whole canvas: bars slice these rather than build a grid."""
    y, x = np.mgrid[0:height, 0:width]
    up, down = (x + y) % 7 < 2, (x - y) % 7 < 2
    return {"//": up, "\\\\": down, "xx": up | down, "..": (x % 5 < 2) & (y % 5 < 2)}


def paint(pixels: np.ndarray, box, colour: str, hatch: str = ""):
    """Fill ``box`` = (left, top, right, bottom) in pixels with ``colour``; a hatch leaves white
    stripes ("//", "\\\\"), crossed stripes ("xx") or dots ("..") so that bars differ by more than
    their colour."""
    height, width = pixels.shape[:2]
    left, top, right, bottom = (int(round(v)) for v in box)
    left, right = max(left, 0), min(right, width)
    top, bottom = max(top, 0), min(bottom, height)
    if right <= left or bottom <= top:
        return
    region = pixels[top:bottom, left:right, :3]
    region[:] = _rgb(colour)
    if hatch:
        region[_hatch_masks(height, width)[hatch][top:bottom, left:right]] = 255


class MoeFigure:
    """Memory of the busiest chip (a stacked bar against usable HBM), one MoE layer's times (bars
    on a log axis) and the domain with its experts (a picture). Axes, legend and picture are drawn
    once per model and system; the bars and lines are painted into those pixels on every update."""

    def __init__(self):
        self.fig, (self.ax_mem, self.ax_time, self.ax_dom) = new_figure(8.8, 3.4, 3)
        for ax, box in zip((self.ax_mem, self.ax_time, self.ax_dom),
                           ((0.075, 0.3, 0.17, 0.58), (0.42, 0.3, 0.31, 0.58), (0.76, 0.26, 0.23, 0.62))):
            ax.set_position(box)
        a, b, c = self.ax_mem, self.ax_time, self.ax_dom
        with style():
            a.set_xlim(-0.7, 0.7)
            a.set_xticks([])
            a.set_ylabel("GB per chip")
            a.set_title("memory of the busiest chip")
            a.grid(axis="x", visible=False)
            b.set_xscale("log")
            b.set_xlim(*TIME_LIMITS)
            b.set_ylim(len(TIME_LABELS) - 0.4, -0.6)
            b.set_yticks(range(len(TIME_LABELS)), [TIME_LABELS[k] for k in TIME_LABELS])
            b.set_xlabel("µs per MoE layer")
            b.set_title("one MoE layer, per chip")
            b.grid(axis="y", visible=False)
            c.set_title("the domain: experts on chips")
            c.axis("off")
            self.time_note = b.text(0.5, 0.5, "", transform=b.transAxes, ha="center", va="center", color="#b00",
                                    fontsize=9, bbox=dict(facecolor="white", edgecolor="none"))
            self.picture = c.imshow(np.full((8, 8, 3), 255, np.uint8), interpolation="nearest", aspect="equal")
            self.caption = c.text(0.5, -0.04, "", transform=c.transAxes, ha="center", va="top", fontsize=7.5)
            hatch = {k: HATCH[k] * 2 for k in HATCH}
            self.fig.legend(handles=[Patch(facecolor=COLORS[k], hatch=hatch[k], edgecolor="white", label=MEMORY_LABELS[k])
                                     for k in MEMORY_LABELS]
                            + [Line2D([], [], color=COLORS["usable"], ls="--", label=USABLE_LABEL),
                               Line2D([], [], color="black", label="HBM"),
                               Patch(facecolor=COLORS["chip_full"], label="the busiest chips' experts"),
                               Patch(facecolor=COLORS["switch"], label="switch trays")],
                            loc="lower center", ncol=4, frameon=False, fontsize=7.5)
            self.note = self.fig.text(0.5, 0.5, "", ha="center", va="center", color="#b00", fontsize=11,
                                      bbox=dict(facecolor="white", edgecolor="#b00"))
        self._keyed = [a.yaxis, self.time_note, self.picture, self.caption, self.note]
        self._frame, self._backgrounds, self._key, self._bars = None, {}, None, []

    def _background(self, key):
        canvas = self.fig.canvas
        if key not in self._backgrounds:
            if self._frame is None:
                for artist in self._keyed:
                    artist.set_visible(False)
                canvas.draw()
                for artist in self._keyed:
                    artist.set_visible(True)
                self._frame = canvas.copy_from_bbox(self.fig.bbox)
            canvas.restore_region(self._frame)
            for artist in self._keyed:
                self.fig.draw_artist(artist)
            self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
        return self._backgrounds[key]

    def _box(self, ax, x0, y0, x1, y1):
        """(left, top, right, bottom) in pixels of a rectangle given in ``ax``'s data coordinates."""
        height = self.fig.canvas.get_width_height()[1]
        (px0, py0), (px1, py1) = ax.transData.transform([(x0, y0), (x1, y1)])
        return min(px0, px1), height - max(py0, py1), max(px0, px1), height - min(py0, py1)

    def draw(self, model, system, v: View):
        p, chip = v.placement, systems.get(system).chip
        top = 1.3 * chip.hbm_capacity / 1e9
        m = models.get(model)
        held = moe.experts_on_chips(m, v.chips, v.domain)
        self._key = (model, system, v.chips, v.why_no_times)
        self.ax_mem.set_ylim(0, top)   # the bars are painted through this axis' transform
        if self._key not in self._backgrounds:
            self.note.set_text("")
            self.time_note.set_text(f"no layer times:\n{v.why_no_times}" if v.why_no_times else "")
            self.picture.set_data(_pixels(tuple(held)))
            rows, cols = self.picture.get_array().shape[:2]
            self.picture.set_extent((-0.5, cols - 0.5, rows - 0.5, -0.5))
            self.ax_dom.set_xlim(-0.5, cols - 0.5)
            self.ax_dom.set_ylim(rows - 0.5, -0.5)
            self.caption.set_text(f"{v.chips} of {v.domain} chips hold experts, up to {p.experts_per_chip} each")
        bars, bottom = [], 0.0
        for k, value in (("replicated", p.replicated_bytes), ("experts", p.expert_bytes), ("kv", p.kv_bytes)):
            bars.append((self._box(self.ax_mem, -0.35, bottom, 0.35, min(bottom + value / 1e9, top)), COLORS[k], HATCH[k]))
            bottom = min(bottom + value / 1e9, top)
        for level, colour in ((p.usable / 1e9, COLORS["usable"]), (chip.hbm_capacity / 1e9, "#000000")):
            left, y, right, _ = self._box(self.ax_mem, -0.6, level, 0.6, level)
            bars.append(((left, y - 1, right, y + 1), colour, ".." if colour == COLORS["usable"] else ""))
        if v.times is not None:
            values = {"up": v.times.communication, "out": v.two_domains.communication,
                      "outd": v.two_dedup.communication, "matmul": v.times.compute, "weights": v.times.weights}
            for i, (k, value) in enumerate(values.items()):
                value *= 1e6
                shown = min(max(value, TIME_LIMITS[0]), TIME_LIMITS[1])
                bars.append((self._box(self.ax_time, TIME_LIMITS[0], i - 0.32, shown, i + 0.32), COLORS[k], HATCH[k]))
        self._bars = bars

    def message(self, text: str):
        self._key, self._bars = ("message", text), []
        self.note.set_text(text)
        self.caption.set_text("")
        self.time_note.set_text("")
        self.picture.set_data(np.full((8, 8, 3), 255, np.uint8))

    def render(self) -> bytes:
        canvas = self.fig.canvas
        canvas.restore_region(self._background(self._key))
        pixels = np.asarray(canvas.buffer_rgba())
        for box, colour, hatch in self._bars:
            paint(pixels, box, colour, hatch)
        return fast_png(canvas.buffer_rgba())


@lru_cache(maxsize=64)
def _pixels(held: tuple) -> np.ndarray:
    return domain_pixels(list(held))


BATCH = log_slider("batch", "batch (sequences)", 1, 65536, per_decade=10, valid=(1, 1e7))
CONTEXT = log_slider("context", "context (tokens)", 1024, 131072, per_decade=10, valid=(0, 1e7))


def _stop(slider, value) -> float:
    """The slider's stop nearest ``value``: where a reader's drag lands."""
    return min(slider.stops, key=lambda s: abs(math.log(s / value)))


SESSION = [
    {"batch": _stop(BATCH, 1000)}, {"batch": _stop(BATCH, 2000)}, {"batch": _stop(BATCH, 4000)},
    {"context": _stop(CONTEXT, 65536)}, {"context": _stop(CONTEXT, 131072)}, {"dtype": "bf16"}, {"dtype": "fp8"},
    {"system": "hgx-h200"}, {"batch": _stop(BATCH, 250)}, {"batch": _stop(BATCH, 64)}, {"system": "hgx-h100"},
    {"model": "qwen3-235b-a22b"}, {"batch": _stop(BATCH, 500)}, {"context": _stop(CONTEXT, 8192)},
    {"system": "gb300-nvl72"}, {"model": "kimi-k2"}, {"batch": _stop(BATCH, 8000)}, {"split": "all"},
    {"split": "even"}, {"dtype": "fp4"}, {"system": "hgx-b200"}, {"batch": _stop(BATCH, 16000)},
    {"model": "mixtral-8x7b"}, {"system": "mi355x-8"}, {"context": _stop(CONTEXT, 32768)},
    {"batch": _stop(BATCH, 128)}, {"model": "deepseek-v3"}, {"system": "gb200-nvl72"},
    {"batch": _stop(BATCH, 1000)}, {"context": _stop(CONTEXT, 4096)},
]
"""A reader's session for the benchmark: batch and context most often, every model and system once."""


class Explorer(explorer.Explorer):
    """Chapter 2's explorer: model x system x weight format x batch x context (x how many chips
    hold experts)."""
    controls = (
        Dropdown("model", "model", catalog_options(MODELS)),
        Dropdown("system", "system", catalog_options(SYSTEMS)),
        Dropdown("dtype", "weights", catalog_options(DTYPES)),
        Dropdown("split", "experts on", tuple((label, s) for s, label in SPLITS.items())),
        BATCH,
        CONTEXT,
    )
    defaults = dict(model="deepseek-v3", system="gb200-nvl72", dtype="fp8", split="even", batch=512.0,
                    context=32768.0)
    rows = (("model", "system"), ("dtype", "split"), ("batch", "context"))

    def make_figure(self):
        return MoeFigure()

    def draw(self, model, system, dtype, split, batch, context) -> str:
        v = view(model, system, dtype, batch, context, split)
        self.figure.draw(model, system, v)
        return readout(model, system, dtype, batch, context, v)


# --- static twin ------------------------------------------------------------------------------------
TWIN_MODELS = MODELS
TWIN_SYSTEMS = ("gb200-nvl72", "gb300-nvl72", "hgx-h100", "hgx-h200", "hgx-b200")
"""The lecture's rack first: the twin opens on it."""
TWIN_DTYPES = ("fp8", "bf16")
TWIN_CONTEXTS = (4096, 32768)
TWIN_BATCHES = tuple(float(2**i) for i in range(0, 15))
TWIN_START = 512
PANEL_W, PANEL_H = 440, 270
_HEAD = "{batch} sequences of {context} tokens: experts on {chips} of {domain} chips, up to {g} each. Per chip "
_LAYER = (" One MoE layer: all-to-all {up} us in one domain; over two (each with this batch) {out} us sending "
          "every choice, {outd} us once per domain; expert work (matmuls or weight reads) {work} us. Nominal "
          "link rates, bandwidth only: real calls add about {alpha} us each, two per layer.")
TEMPLATES = [
    _HEAD + "{weights} GB weights + {kv} GB KV of {usable} GB usable: fits, {margin} GB spare (at most "
            "{max_batch} sequences)." + _LAYER,
    "!" + _HEAD + "{weights} GB weights + {kv} GB KV of {usable} GB usable: does not fit, {short} GB short (at "
                  "most {max_batch} sequences)." + _LAYER,
    "!" + _HEAD + "{weights} GB of weights against {usable} GB usable: the weights alone do not fit." + _LAYER,
]


def twin_domain(model: str, system: str, chips: int) -> list:
    """The domain picture as twin shapes, turned on its side to suit a wide panel: one rectangle per
    chip (its experts in the tooltip), the switch band upright in the middle."""
    m, sys_ = models.get(model), systems.get(system)
    held = moe.experts_on_chips(m, chips, sys_.count)
    cells, rows, cols = domain_layout(sys_.count)
    cell = min(40, (PANEL_W - 20) / rows, (PANEL_H - 60) / cols)
    left, top = (PANEL_W - rows * cell) / 2, 26
    band = next(r for r in range(rows) if r not in {row for row, _ in cells})
    shapes = [twin.rect(round(left + band * cell + 3), top, round(cell - 6), round(cols * cell),
                        COLORS["switch"], "NVSwitch chips" if sys_.count <= 8 else "NVSwitch trays")]
    most = max(held)
    for (r, c), g in zip(cells, held):
        fill = COLORS["idle"] if g == 0 else COLORS["chip_full"] if g == most else COLORS["chip_less"]
        shapes.append(twin.rect(round(left + r * cell + 1), round(top + c * cell + 1), round(cell - 2),
                                round(cell - 2), fill, f"{g} experts"))
    shapes.append(twin.text(PANEL_W / 2, PANEL_H - 8, held_summary(held), anchor="middle", size=11))
    return shapes


def twin_view(model: str, system: str, dtype: str, context: float) -> dict:
    """Every slider stop of one view: the memory and time curves against the batch, the readout."""
    rows = [view(model, system, dtype, b, context, "even") for b in TWIN_BATCHES]
    p0 = rows[0].placement
    gb = lambda x: twin.rounded(np.asarray(x) / 1e9)   # noqa: E731
    us = lambda x: twin.rounded(1e6 * np.asarray(x))   # noqa: E731
    weights = [r.placement.weight_bytes for r in rows]
    used = [r.placement.used for r in rows]
    hbm = systems.get(system).chip.hbm_capacity
    top = float(f"{max(1.3 * hbm, 1.15 * p0.weight_bytes) / 1e9:.3g}")
    # Past the top of the chart the line stops (and its marker with it); the readout gives the number.
    shown = [x if x <= top else None for x in gb(used)]
    memory = {"ylim": [0, top], "series": {"weights": gb(weights), "used": shown, "usable": gb([p0.usable] * len(rows))}}
    t = {"up": [r.times.communication for r in rows], "out": [r.two_domains.communication for r in rows],
         "outd": [r.two_dedup.communication for r in rows], "matmul": [r.times.compute for r in rows],
         "wread": [r.times.weights for r in rows]}
    low = min(min(v) for v in t.values())
    high = max(max(v) for v in t.values())
    times = {"ylim": [float(10 ** math.floor(math.log10(1e6 * low))), float(10 ** math.ceil(math.log10(1e6 * high)))],
             "series": {k: us(v) for k, v in t.items()}}
    values = {"kv": gb([r.placement.kv_bytes for r in rows]),
              "margin": gb([max(r.placement.margin, 0) for r in rows]),
              "short": gb([max(-r.placement.margin, 0) for r in rows]),
              "up": us(t["up"]), "out": us(t["out"]), "outd": us(t["outd"]), "work": us([r.times.work for r in rows])}
    return {"panels": [memory, times, {"frames": [twin_domain(model, system, rows[0].chips)]}],
            "readout": {"pick": [0 if r.placement.fits else 1 if r.placement.max_batch else 2 for r in rows],
                        "values": values,
                        "constants": {"context": f"{context:,.0f}", "chips": rows[0].chips, "domain": rows[0].domain,
                                      "g": p0.experts_per_chip, "usable": twin.rounded(p0.usable / 1e9)[0],
                                      "weights": twin.rounded(p0.weight_bytes / 1e9)[0],
                                      "max_batch": twin.rounded(p0.max_batch, 4)[0], "alpha": ALPHA_US}}}


def twin_data() -> dict:
    """Every view of the twin, keyed ``model|system|dtype|context``, experts split evenly."""
    controls = [
        twin.select("model", "model", [(m, models.get(m).display) for m in TWIN_MODELS]),
        twin.select("system", "system", [(s, systems.get(s).display) for s in TWIN_SYSTEMS]),
        twin.select("dtype", "weights", [(d, d.upper()) for d in TWIN_DTYPES]),
        twin.select("context", "context (tokens)", [(c, f"{c:,}") for c in TWIN_CONTEXTS]),
        twin.slider("batch", "batch (sequences in one decode step)", TWIN_BATCHES, TWIN_START),
    ]
    xlabel = "batch (sequences)"
    panels = [twin.chart("memory of the busiest chip", xlabel, "GB per chip", yscale="linear", point=("used", "point")),
              twin.chart("one MoE layer, per chip", xlabel, "microseconds", point=("up", "point")),
              twin.shapes("the domain: experts on chips", PANEL_W, PANEL_H)]
    styles = {"weights": twin.line_style("weights per chip", COLORS["experts"], 1.6, "6 3"),
              "used": twin.line_style("weights + KV per chip", COLORS["kv"], 2.2),
              "usable": twin.line_style(USABLE_LABEL, COLORS["usable"], 1.4, "2 3"),
              "up": twin.line_style(TIME_LABELS["up"], COLORS["up"], 2.2),
              "out": twin.line_style(TIME_LABELS["out"], COLORS["out"], 2, "7 3"),
              "outd": twin.line_style(TIME_LABELS["outd"], COLORS["outd"], 2, "3 2"),
              "matmul": twin.line_style(TIME_LABELS["matmul"], COLORS["matmul"], 1.8, "2 2"),
              "wread": twin.line_style(TIME_LABELS["weights"], COLORS["weights"], 1.8, "8 3 2 3"),
              "point": twin.point_style("chosen batch", "#000000"),
              "full": twin.area_style("chips holding the most experts", COLORS["chip_full"], 0.9),
              "less": twin.area_style("chips holding one fewer", COLORS["chip_less"], 0.9),
              "idle": twin.area_style("chips holding none", COLORS["idle"], 0.9),
              "switch": twin.area_style("switch trays", COLORS["switch"], 0.9)}
    views = {f"{m}|{s}|{d}|{c}": twin_view(m, s, d, c)
             for m in TWIN_MODELS for s in TWIN_SYSTEMS for d in TWIN_DTYPES for c in TWIN_CONTEXTS}
    return twin.twin_data(controls, panels, styles, legend=list(styles), templates=TEMPLATES, views=views)


# --- the chapter's figures -------------------------------------------------------------------------
TOKENS = np.logspace(0, 6, 25)
DESCRIBED_TOKENS = 4096
"""The step the figures' alternative text reads its numbers at."""


def layer_time_figure(model="deepseek-v3", names=("hgx-h100", "gb200-nvl72"), dtype="fp8", width=9.0):
    """One MoE layer's times against the tokens of a step, one panel per system: the all-to-all
    inside the domain and across two (each domain keeping its tokens, every choice sent or once per
    domain), against the expert matmuls and weight reads. Nominal link rates, bandwidth only."""
    fig, axes = new_figure(width, 3.6, len(names))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.32, top=0.88, wspace=0.25)
    styles = {"up": ("-", "o"), "out": ("--", "s"), "outd": ((0, (3, 2)), "D"), "matmul": ("-.", "^"),
              "weights": (":", "v")}

    def times(name, tokens):
        chips = expert_chips(model, name, "even")
        kw = dict(bytes_per_element=ACT_BYTES, chips=chips)
        one = moe.layer_times(model, name, tokens, dtype, **kw)
        return {"up": one.communication,
                "out": moe.layer_times(model, name, 2 * tokens, dtype, domains=2, **kw).communication,
                "outd": moe.layer_times(model, name, 2 * tokens, dtype, domains=2, dedup=True, **kw).communication,
                "matmul": one.compute, "weights": one.weights}

    for ax, name in zip(axes, names):
        rows = [times(name, t) for t in TOKENS]
        with style():
            for k in styles:
                ls, marker = styles[k]
                ax.plot(TOKENS, [1e6 * r[k] for r in rows], ls=ls, marker=marker, markevery=4, ms=4,
                        color=COLORS[k], label=TIME_LABELS[k])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("tokens in the step, per domain")
            ax.set_title(f"{systems.get(name).display.split(' (')[0]}: experts on "
                         f"{expert_chips(model, name, 'even')} chips", fontsize=9)
    axes[0].set_ylabel("µs per MoE layer, per chip")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, frameon=False, fontsize=8)
    said = []
    for name in names:
        us = {k: explorer.number(1e6 * x) for k, x in times(name, DESCRIBED_TOKENS).items()}
        said.append(f"{systems.get(name).display.split(' (')[0]} at {DESCRIBED_TOKENS:,} tokens: all-to-all "
                    f"{us['up']} µs in one domain, over two {us['out']} µs sending every choice and {us['outd']} µs "
                    f"once per domain, expert matmuls {us['matmul']} µs, weight reads {us['weights']} µs")
    return describe(fig, "All lines but the weight reads rise in proportion to the tokens. " + "; ".join(said) + ".")


def memory_figure(model="deepseek-v3", names=("hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "gb300-nvl72"),
                  dtype="fp8", batch=512, context=32768, width=8.0):
    """Memory of the busiest chip on each system, stacked (copied weights, routed experts, KV),
    against its usable HBM."""
    fig, (ax,) = new_figure(width, 3.3)
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.2, top=0.9)
    x = np.arange(len(names))
    said = []
    with style():
        for i, name in enumerate(names):
            p = moe.placement(model, name, batch, context, dtype, chips=expert_chips(model, name, "even"),
                              kv_bytes_per_element=KV_BYTES)
            said.append(f"{systems.get(name).display.split(' (')[0]}: {p.used / 1e9:,.0f} GB against "
                        f"{p.usable / 1e9:,.0f} GB usable, {'fits' if p.fits else 'does not fit'}")
            bottom = 0.0
            for k, value in (("replicated", p.replicated_bytes), ("experts", p.expert_bytes), ("kv", p.kv_bytes)):
                ax.bar(i, value / 1e9, bottom=bottom, color=COLORS[k], hatch=HATCH[k], edgecolor="white",
                       width=0.6, label=MEMORY_LABELS[k] if i == 0 else None)
                bottom += value / 1e9
            ax.plot([i - 0.38, i + 0.38], [p.usable / 1e9] * 2, color=COLORS["usable"], ls="--", lw=1.6,
                    label=USABLE_LABEL if i == 0 else None)
            ax.text(i, bottom, "fits" if p.fits else "does not fit", ha="center", va="bottom", fontsize=8,
                    color="black" if p.fits else "#b00")
        ax.set_xticks(x, [systems.get(n).display.split(" (")[0] for n in names])
        ax.set_ylabel("GB per chip")
        ax.set_title(f"{models.get(model).display}, {dtype.upper()} weights, {batch:,} sequences of {context:,} tokens")
        ax.grid(axis="x", visible=False)
        fig.legend(loc="lower center", ncol=4, frameon=False, fontsize=7.5)
    return describe(fig, "; ".join(said) + ".")


def domain_figure(model="deepseek-v3", system="gb200-nvl72", splits=("even",), width=3.0):
    """The lecture's drawing redrawn from the placement, one panel per way of splitting the experts:
    chips in trays of four around the switch trays, each chip's experts as small squares."""
    m, sys_ = models.get(model), systems.get(system)
    chips = [expert_chips(model, system, split) for split in splits]
    images = [domain_pixels(moe.experts_on_chips(m, c, sys_.count)) for c in chips]
    rows, cols = images[0].shape[:2]
    fig, axes = new_figure(width * len(splits), width * rows / cols + 0.5, len(splits))
    with style():
        for ax, img, c in zip(axes, images, chips):
            ax.imshow(img, interpolation="nearest")
            ax.axis("off")
            ax.set_title(f"experts on {c} of {sys_.count} chips", fontsize=8.5)
        fig.suptitle(f"{m.display} on {sys_.display.split(' (')[0]}", fontsize=9)
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.02, top=0.86, wspace=0.08)
    return describe(fig, "Chips drawn in trays of four around the switch trays, each chip's experts as small "
                         "squares. " + " ".join(domain_alt(model, system, c) for c in chips))


def imbalance_figure(model="deepseek-v3", chips=(8, 64), tokens=(128, 512, 2048, 8192), trials=8):
    """Busiest chip over the mean chip against tokens per step: the routing simulation (markers,
    with two standard errors) and the normal approximation (lines)."""
    fig, (ax,) = new_figure(6.2, 3.4)
    ts = np.asarray(tokens, float)
    said = []
    with style():
        # each chip count has its own colour, marker and dash: no two series differ by colour alone
        for E_, colour, marker, dash in zip(chips, ("#0072B2", "#D55E00"), ("o", "s"), ("--", "-.")):
            sims = [moe.simulate_routing(model, E_, int(t), trials=trials, seed=int(t) + E_) for t in ts]
            said.append(f"{E_} chips: simulated {sims[0].imbalance:.2f} at {ts[0]:,.0f} tokens and "
                        f"{sims[-1].imbalance:.2f} at {ts[-1]:,.0f}, approximation "
                        f"{moe.imbalance_estimate(model, E_, ts[0]):.2f} and {moe.imbalance_estimate(model, E_, ts[-1]):.2f}")
            ax.errorbar(ts, [s.imbalance for s in sims], yerr=[2 * s.imbalance_stderr for s in sims], fmt=marker,
                        color=colour, ms=5, capsize=2, label=f"{E_} chips: simulated routing")
            ax.plot(ts, moe.imbalance_estimate(model, E_, ts), color=colour, ls=dash,
                    label=f"{E_} chips: normal approximation")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tokens in the step (all chips)")
        ax.set_ylabel("busiest chip / mean chip")
        ax.legend(fontsize=7.5, frameon=False)
        fig.tight_layout()
    return describe(fig, "; ".join(said) + ".")


def capacity_figure(model="deepseek-v3", chips=64, tokens=512, factors=(1.0, 1.1, 1.25, 1.5, 1.75, 2.0), trials=24):
    """What a capacity factor buys and costs at one step: the busiest chip's load with overflow
    dropped, and the share of token choices dropped (simulated, and the normal approximation)."""
    fig, (a, b) = new_figure(8.4, 3.2, 2)
    sim = moe.simulate_routing(model, chips, tokens, trials=trials, seed=tokens)
    fs = np.asarray(factors, float)
    fine = np.linspace(fs[0], fs[-1], 60)
    with style():
        a.plot(fs, [sim.capped_imbalance(f) for f in fs], "o-", color="#0072B2", label="busiest chip, overflow dropped")
        a.axhline(sim.imbalance, color="#D55E00", ls="--", label="busiest chip, no capacity limit")
        a.plot(fine, fine, color="#555555", ls=":", label="the capacity factor itself")
        a.set_xlabel("capacity factor")
        a.set_ylabel("busiest chip / mean chip")
        a.legend(fontsize=7, frameon=False)
        b.plot(fs, [100 * sim.dropped_fraction(f) for f in fs], "s", color="#009E73", label="simulated routing")
        b.plot(fine, 100 * moe.expected_dropped_fraction(model, tokens, fine), color="#009E73", ls="--",
               label="normal approximation")
        b.set_yscale("log")
        b.set_xlabel("capacity factor")
        b.set_ylabel("token choices dropped (%)")
        b.legend(fontsize=7, frameon=False)
        fig.suptitle(f"{models.get(model).display}, {tokens:,} tokens on {chips} chips", fontsize=9)
        fig.tight_layout()
    said = ", ".join(f"capacity {f:g}: busiest {sim.capped_imbalance(f):.2f}, {100 * sim.dropped_fraction(f):.2g}% dropped"
                     for f in fs[[0, len(fs) // 2, -1]])
    return describe(fig, f"Without a limit the busiest chip carries {sim.imbalance:.2f} times the mean; {said}.")


def growth_figure(width=7.0):
    """HBM of one scale-up domain by generation (log axis), with the largest model it holds in FP8,
    against the lecture's 640 GB box and 5 T-parameter rack."""
    rows = moe.domain_growth()
    fig, (ax,) = new_figure(width, 3.0)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.12, top=0.95)
    x = np.arange(len(rows))
    with style():
        ax.bar(x, [d.hbm / 1e12 for d in rows], color=["#0072B2" if d.status == "shipping" else "#56B4E9" for d in rows],
               hatch=["" if d.status == "shipping" else "//" for d in rows], edgecolor="white", width=0.6)
        for i, d in enumerate(rows):
            ax.text(i, d.hbm / 1e12 * 1.15, f"{d.packages} GPUs\n{d.max_total_params('fp8') / 1e12:,.1f} T params (FP8)",
                    ha="center", va="bottom", fontsize=7)
        ax.axhline(moe.LECTURE["rack_model_params"] / 1e12, color="#D55E00", ls="--", lw=1.2,
                   label="the lecture's 5 T-parameter model in FP8 (TB)")
        ax.set_yscale("log")
        ax.set_ylim(0.3, 1500)
        ax.set_xticks(x, [d.name.split(" (")[0] for d in rows], fontsize=7.5)
        ax.set_ylabel("HBM in one domain (TB)")
        ax.legend(handles=[Patch(facecolor="#0072B2", label="shipping"),
                           Patch(facecolor="#56B4E9", hatch="//", label="announced"),
                           *ax.get_legend_handles_labels()[0]], fontsize=7.5, frameon=False, loc="upper left")
        ax.grid(axis="x", visible=False)
    return describe(fig, "; ".join(f"{d.name}: {d.packages} GPU packages, {d.hbm / 1e12:,.2f} TB, up to "
                                   f"{d.max_total_params('fp8') / 1e12:,.1f} T parameters in FP8" for d in rows) + ".")
