"""Chapter 1's figures, drawn from ``roofline``'s formulas: one style and one drawing code.

The notebook's figures, the live explorer and the website's static twin (both in ``batching``)
all take their numbers from ``curves``, and the first two their pictures from ``RooflineFigure``,
so the three cannot disagree.
"""
import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .. import roofline
from ..catalog import hardware, models
from ..errors import ChalkError
from ..notation import n_chips, p_chip
from ..catalog.quoted import USD_PER_CHIP_HOUR
from . import canvas
from .canvas import Layers, new_figure, png, style  # png: the notebook's plotting.png

# Okabe and Ito's palette: distinguishable under every common colour-vision deficiency.
COLORS = {"t_compute": "#0072B2", "t_weights": "#E69F00", "t_kv": "#009E73", "t_mem": "#D55E00",
          "t_step": "#000000", "nofit": "#999999", "point": "#CC79A7", "balance": "#56B4E9"}
LABELS = {"t_compute": "compute (matmuls + attention)", "t_weights": "weight read (experts touched)", "t_kv": "KV read",
          "t_mem": "memory (weights + KV)", "t_step": "bound: max(compute, memory)"}

BATCHES = np.logspace(0, 5, 101)
"""Batches drawn: 1 to 100,000 sequences, 20 points per decade."""

TIMES = ("t_compute", "t_weights", "t_kv", "t_mem", "t_step")
LINESTYLES = {"t_compute": (0, (8, 2)), "t_weights": "--", "t_kv": ":", "t_mem": "-.", "t_step": "-"}
"""Each series its own dash as well as its colour, so greyscale and colour-blind readers tell them apart."""
TWIN_DASHES = {"t_compute": "10 3", "t_weights": "5 3", "t_kv": "2 2", "t_mem": "8 3 2 3", "t_step": ""}
"""The same distinction in the static twin's SVG dash arrays."""
REGIMES = ("memory-bound (weights)", "memory-bound (KV cache)", "compute-bound", "compute-bound (attention)")
"""The names ``roofline.DecodePoint.regime`` uses, indexed by ``regimes``' codes."""
NOFIT = "does not fit in HBM"

_MAX = [{"Max": np.maximum}, "numpy"]
_COST = {name: sp.lambdify(roofline.ARGS + (n_chips, p_chip),
                           1e6 * roofline.cost_per_token.subs(roofline.t_step, getattr(roofline, name)),
                           modules=_MAX)
         for name in TIMES}
"""$ per million tokens if a step lasted each time: roofline's cost_per_token with t_step replaced."""


def regimes(time: dict) -> np.ndarray:
    """Index into REGIMES at each batch: the same test as ``DecodePoint.regime``, on arrays."""
    compute_kind = np.where(2 * time["t_attn"] > time["t_compute"], 3, 2)
    return np.where(time["t_compute"] >= time["t_mem"], compute_kind,
                    np.where(time["t_weights"] >= time["t_kv"], 0, 1))


@dataclass(frozen=True)
class Curves:
    """Step time (s) and $ per million tokens of each roofline term over ``batch``."""
    batch: np.ndarray
    context: float
    time: dict
    usd_per_mtok: dict
    balance_batch: float
    """inf past the balance context L*."""
    max_batch: float
    """Largest batch whose KV cache fits beside the weights (inf at context 0)."""
    params: tuple
    chips: int
    usd_per_chip_hour: float

    @property
    def regime(self) -> np.ndarray:
        return regimes(self.time)

    def at(self, batch: float) -> tuple[float, float]:
        """(step time, $/Mtok) at one batch, fitting or not: where the widget puts its marker."""
        args = (batch, self.context, *self.params)
        return (float(roofline.numeric["t_step"](*args)),
                float(_COST["t_step"](*args, self.chips, self.usd_per_chip_hour)))


def curves(chip, model, context=0, dtype="bf16", chips=1, usd_per_chip_hour=USD_PER_CHIP_HOUR,
           kv_bytes_per_element=2, batches=BATCHES) -> Curves:
    """Evaluate the roofline terms on ``batches``; raises DoesNotFit if the weights alone do not fit."""
    chip = hardware.get(chip) if isinstance(chip, str) else chip
    model = models.get(model) if isinstance(model, str) else model
    if dtype not in chip.dtypes:  # say what the chip has, in the widget's words
        raise ChalkError(f"dtype: the catalog has no {dtype} rate for {chip.name}; "
                         f"it has {', '.join(chip.dtypes)}")
    params = roofline.replica_params(chip, model, dtype, chips, kv_bytes_per_element, context)
    fit = roofline.max_batch(chip, model, context, dtype, chips, kv_bytes_per_element)
    batches = np.asarray(batches, dtype=float)
    args = (batches, context, *params)
    shape = np.shape(batches)
    time = {t: np.broadcast_to(roofline.numeric[t](*args), shape) for t in TIMES + ("t_attn",)}
    cost = {t: np.broadcast_to(_COST[t](*args, chips, usd_per_chip_hour), shape) for t in TIMES}
    return Curves(batches, float(context), time, cost,
                  roofline.balance_batch(chip, model, dtype, context, kv_bytes_per_element),
                  fit, params, chips, float(usd_per_chip_hour))


def _decade_limits(values, pad=1.0):
    """Whole decades around the positive, finite values (stable ticks while the widget moves)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return 10 ** (math.floor(math.log10(v.min()) - pad + 1e-9)), 10 ** math.ceil(math.log10(v.max()) + 1e-9)


def plotted(c: Curves) -> tuple[dict, dict]:
    """What graphs A and B plot: step times in ms and $ per million tokens, NaN where a term is
    zero (the KV line at context 0), which a log axis cannot show."""
    ms = {t: 1e3 * np.where(c.time[t] > 0, c.time[t], np.nan) for t in TIMES}
    usd = {t: np.where(c.usd_per_mtok[t] > 0, c.usd_per_mtok[t], np.nan) for t in TIMES}
    return ms, usd


def y_limits(ms: dict, usd: dict):
    """(graph A, graph B) limits in whole decades. Graph A keeps a decade under its floor; graph
    B must show its floor, the per-token compute and KV costs, which can sit far below the bound
    at small batches."""
    return (_decade_limits(ms["t_step"], pad=1.0),
            _decade_limits(np.concatenate([usd["t_step"], usd["t_compute"][:1], usd["t_kv"][:1]]), pad=0.0))


def _segments(codes):
    """(start, stop, code) runs of equal codes."""
    edges = np.flatnonzero(np.diff(codes)) + 1
    starts = np.r_[0, edges]
    stops = np.r_[edges, len(codes)]
    return [(a, b, int(codes[a])) for a, b in zip(starts, stops)]


class RooflineFigure:
    """Graph A (step time against batch) and graph B (cost per token against batch).

    The artists are made once; ``draw`` moves their data and ``render`` redraws in layers
    (``canvas.Layers``): y axes per pair of y limits, curves per view, the operating point each time.
    """

    def __init__(self, width=8.0, height=4.2, with_point=True):
        """``with_point``: the legend names the operating point (a figure that never marks one
        does not)."""
        self.fig, (self.ax_time, self.ax_cost) = new_figure(width, height, 2)
        self.fig.subplots_adjust(left=0.08, right=0.97, bottom=0.25, top=0.87, wspace=0.27)
        self.lines, self.points, self.spans, self.balance, self.texts = {}, {}, {}, {}, {}
        for ax, unit in ((self.ax_time, "time per decode step (ms)"),
                         (self.ax_cost, "cost per output token ($ per million)")):
            with style():
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_xlim(BATCHES[0], BATCHES[-1])
                ax.minorticks_off()  # decades are enough to read, and ticks are Agg's slowest part
                ax.set_xlabel("batch B (sequences per step)")
                ax.set_ylabel(unit)
                self.spans[ax] = ax.axvspan(BATCHES[-1], BATCHES[-1], facecolor=COLORS["nofit"],
                                            alpha=0.3, hatch="//", edgecolor="white", lw=0,
                                            label=NOFIT)
                self.balance[ax] = ax.axvline(1, color=COLORS["balance"], ls=(0, (1, 3)), lw=1.2,
                                              label="balance batch B*")
                self.lines[ax] = {t: ax.plot([], [], color=COLORS[t], label=LABELS[t],
                                             lw=2.8 if t == "t_step" else 1.3, ls=LINESTYLES[t],
                                             zorder=3 if t == "t_step" else 2)[0] for t in TIMES}
                # Unclipped: at the first or last batch the marker is drawn whole, past the axes.
                self.points[ax] = ax.plot([], [], "o", ms=8, color=COLORS["point"], mec="black",
                                          zorder=5, label="operating point", clip_on=False)[0]
                self.texts[ax] = [ax.text(1, 0.95, "", transform=ax.get_xaxis_transform(),
                                          ha="center", va="top", fontsize=7.5, color="#333333")
                                  for _ in range(len(REGIMES) + 1)]
        handles = [*self.lines[self.ax_time].values(), self.balance[self.ax_time],
                   self.spans[self.ax_time], *([self.points[self.ax_time]] if with_point else [])]
        with style():
            self.fig.legend(handles=handles, loc="lower center", ncol=4, frameon=False)
        self.ax_time.set_title("A: step time (lower bound)")
        self.ax_cost.set_title("B: cost per token")
        self.title = self.fig.suptitle("", fontsize=10)
        axes = (self.ax_time, self.ax_cost)
        self.layers = Layers(self.fig, [a for ax in axes for a in (
            self.spans[ax], self.balance[ax], *self.lines[ax].values(), *self.texts[ax])] + [self.title],
            [self.points[ax] for ax in axes], [ax.yaxis for ax in axes])
        self._view = None

    def draw(self, c: Curves, point=None, title: str = ""):
        """Show curves ``c``; ``point`` = (batch, step time s, $/Mtok) marks the operating point."""
        self.title.set_text(title)
        view = (c.params, c.context, c.chips, c.usd_per_chip_hour, title)
        if view != self._view:
            self._view = view
            ms, usd = plotted(c)
            for ax, ys, lim in zip((self.ax_time, self.ax_cost), (ms, usd), y_limits(ms, usd)):
                for t in TIMES:
                    self.lines[ax][t].set_data(c.batch, ys[t])
                ax.set_ylim(*lim)
                self.spans[ax].set_x(min(c.max_batch, BATCHES[-1]))
                self.spans[ax].set_width(BATCHES[-1] * 10)
                self.balance[ax].set_xdata([c.balance_batch] * 2)
                self.balance[ax].set_visible(math.isfinite(c.balance_batch))
                self._label_regimes(ax, c)
        for ax in (self.ax_time, self.ax_cost):
            if point is None:
                self.points[ax].set_data([], [])
            else:
                y = 1e3 * point[1] if ax is self.ax_time else point[2]
                self.points[ax].set_data([point[0]], [y])
        return self.fig

    def _label_regimes(self, ax, c: Curves):
        """Name each run of one regime at its (log) middle, if it spans a decade or more; batches
        that do not fit are one more run."""
        texts = iter(self.texts[ax])
        logb = np.log10(c.batch)
        names = (*REGIMES, NOFIT)
        codes = np.where(c.batch > c.max_batch, len(REGIMES), c.regime)
        for a, b, code in _segments(codes):
            if logb[b - 1] - logb[a] < 1:
                continue
            text = next(texts)
            text.set_text(names[code].replace(" (", "\n(").replace(" in ", "\nin "))
            text.set_x(10 ** ((logb[a] + logb[b - 1]) / 2))
            text.set_visible(True)
        for text in texts:
            text.set_visible(False)

    def render(self) -> bytes:
        """PNG of the current state, redrawing only the layers that changed."""
        return self.layers.render((self.ax_time.get_ylim(), self.ax_cost.get_ylim()), self._view)

    def message(self, text: str):
        """Clear the curves and say why (an explorer's error state), in the same layout."""
        for ax in (self.ax_time, self.ax_cost):
            for line in (*self.lines[ax].values(), self.points[ax]):
                line.set_data([], [])
            for t in self.texts[ax]:
                t.set_visible(False)
            self.balance[ax].set_visible(False)
            self.spans[ax].set_x(BATCHES[0])
        self.title.set_text(text)
        self._view = ("message", text)
        return self.fig


def describe(chip, model, context, dtype, chips) -> str:
    chip = hardware.get(chip) if isinstance(chip, str) else chip
    model = models.get(model) if isinstance(model, str) else model
    return f"{model.display} on {chips} x {chip.name} in {dtype}, context {context:,.0f} tokens"


def roofline_figure(chip, model, context=0, dtype="bf16", chips=1, usd_per_chip_hour=USD_PER_CHIP_HOUR,
                    batch=None, kv_bytes_per_element=2):
    """Graphs A and B for one replica, with the operating point at ``batch`` if given."""
    c = curves(chip, model, context, dtype, chips, usd_per_chip_hour, kv_bytes_per_element)
    point = None if batch is None else (batch, *c.at(batch))
    fig = RooflineFigure(with_point=point is not None).draw(c, point, describe(chip, model, context, dtype, chips))
    return canvas.describe(fig, _words(c, describe(chip, model, context, dtype, chips)))


def _words(c: Curves, title: str) -> str:
    """What graphs A and B show, in numbers from the same curves."""
    step = c.time["t_step"]
    fits = c.batch <= c.max_batch
    parts = [f"{title}. Step time {1e3 * step[0]:.3g} ms at batch 1 and {1e3 * step[fits][-1]:.3g} ms at "
             f"batch {c.batch[fits][-1]:,.0f}"]
    if math.isfinite(c.balance_batch):
        parts.append(f"compute catches up with memory at the balance batch B* = {c.balance_batch:,.0f}")
    else:
        parts.append("no batch is compute-bound at this context (past L*)")
    if math.isfinite(c.max_batch):
        parts.append(f"the KV caches fill HBM at {c.max_batch:,.0f} sequences")
    usd = c.usd_per_mtok["t_step"]
    parts.append(f"cost per million tokens falls from {usd[0]:.3g} to {usd[fits].min():.3g} dollars")
    return "; ".join(parts) + "."


def balance_context_figure(cases, points=300):
    """B* against context for each (chip, model, dtype), with its asymptote at L*.

    B* does not depend on how many chips serve a replica (F and W scale together), so a case names
    one chip. Past L* no batch is compute-bound: the curve stops and the dashed line marks L*.
    """
    fig, (ax,) = new_figure(6.4, 4.4)
    palette = [COLORS[t] for t in ("t_compute", "t_weights", "t_kv", "t_mem", "point")]
    dashes = ["-", (0, (6, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1))]
    resolved = [(hardware.get(chip), models.get(model), dtype) for chip, model, dtype in cases]
    l_stars = [roofline.balance_context_for(*case) for case in resolved]
    finite = [x for x in l_stars if math.isfinite(x)]
    contexts = np.logspace(1, np.log10(2 * max(finite) if finite else 1e6), points)
    for (chip, model, dtype), l_star, color, dash in zip(resolved, l_stars, palette, dashes):
        ctx = contexts[contexts < l_star]
        bstar = [roofline.balance_batch(chip, model, dtype, x) for x in ctx]
        where = (f"L* = {float(f'{l_star:.3g}'):,.0f}" if math.isfinite(l_star)
                 else "no L*: attention FLOPs outrun KV bytes")
        with style():
            ax.plot(ctx, bstar, color=color, ls=dash, label=f"{model.display}, {chip.name}, {dtype}: {where}")
            if math.isfinite(l_star):
                ax.axvline(l_star, color=color, ls=":", lw=1)
    canvas.describe(fig, "Balance context L* per case: " + "; ".join(
        f"{m.display} on {c.name} in {d}: " + (f"B* diverges at L* = {float(f'{x:.3g}'):,.0f} tokens" if math.isfinite(x)
                                               else "B* falls with context, no L*")
        for (c, m, d), x in zip(resolved, l_stars)) + ".")
    with style():
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(top=10 ** math.ceil(math.log10(30 * ax.get_ylim()[0])) * 10)
        ax.set_xlabel("context L (tokens)")
        ax.set_ylabel("balance batch B* (sequences)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=1, frameon=False)
    fig.subplots_adjust(left=0.12, right=0.98, bottom=0.37, top=0.97)
    return fig

