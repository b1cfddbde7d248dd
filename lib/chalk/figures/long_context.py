"""Chapter 6's figures, live explorer and static twin: cost per token against context (graph C)
with a provider's price steps over it, passes of n tokens (graph D), and what holding a prompt
cache costs in each memory tier against recomputing it.

Every curve comes from ``chalk.pricing`` (which reads Chapter 1's roofline and the calculator's
pass formulas); the figures only draw and label it.
"""
import html
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import pricing
from ..catalog import models, prices, tiers
from ..catalog.quoted import USD_PER_CHIP_HOUR
from ..errors import ChalkError
from . import explorer, twin
from .canvas import Layers, describe, new_figure, style
from .explorer import Dropdown, catalog_options, log_slider

CONTEXTS = np.logspace(2, 6, 41)
"""Contexts of graph C: 100 to a million tokens, ten stops a decade."""
HOLDS = np.logspace(-3, 7, 51)
"""Hold times of the cache panel: a millisecond to about four months."""
COLORS = {"compute": "#0072B2", "memory": "#D55E00", "cost": "#222222", "input": "#009E73",
          "output": "#CC79A7", "kink": "#E69F00", "remat": "#999999"}
TIER_STYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)))
TIER_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
"""One dash pattern and marker per tier, so that the tiers stay apart without colour."""
TIER_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#555555")
REMAT_PROMPT = 32_768
# The envelope and the recompute level need dashes of their own: solid and "--" are taken by the
# cost curves and the first tiers, and a reader without colour must still tell them apart.
ENVELOPE = dict(color="black", lw=3, alpha=0.25, ls=(0, (8, 2)))
REMAT = dict(color=COLORS["remat"], lw=1.4, ls=(0, (6, 2, 1, 2, 1, 2)))
"""Prompt whose prefill the cache panels price as the alternative to holding its cache."""


def _short(name: str) -> str:
    """A tier's legend label: its display name up to the first parenthesis."""
    return name.split(" (")[0]


# --- graph C ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Curves:
    """Graph C's two costs per token for one model, system, format and batch, on ``contexts`` up
    to the model's published maximum context (``top``); each ``pricing.ContextCost`` is NaN where
    not one sequence fits."""
    contexts: np.ndarray
    top: float
    decode: pricing.ContextCost
    """per output token: ``batch`` sequences per step, or as many as fit"""
    prefill: pricing.ContextCost
    """per input token, of a prompt of each length"""

    def on(self, contexts) -> dict[str, np.ndarray]:
        """Each drawn series in USD per million tokens at the roofline and the rental, on ``contexts``
        (the grid's own points; NaN past the model's maximum context): prices are dollars too, so a
        price line sits above or below cost as it does on the bill."""
        contexts = np.asarray(contexts, dtype=float)
        index = {float(x): i for i, x in enumerate(self.contexts)}
        d = self.decode
        usd = 1e6 * d.chips * d.usd_per_chip_hour / 3600
        series = {"compute": d.compute * usd, "memory": d.memory * usd,
                  "cost": d.usd_per_million_tokens, "prefill": self.prefill.usd_per_million_tokens}
        pick = [index.get(float(x)) for x in contexts]
        return {k: np.array([v[i] if i is not None else np.nan for i in pick]) for k, v in series.items()}


def curves(model, target, dtype, batch, contexts=CONTEXTS) -> Curves:
    """Decode and prefill cost per token on the points of ``contexts`` up to ``model``'s maximum
    context, that maximum added as the last point."""
    top = float(models.get(model).max_context or contexts[-1])
    grid = np.append(contexts[contexts < top], top) if top <= contexts[-1] else contexts
    return Curves(grid, top, pricing.cost_against_context(model, target, grid, batch, dtype),
                  _prefill(model, target, dtype, tuple(grid)))


@lru_cache(maxsize=64)
def _prefill(model, target, dtype, grid: tuple) -> pricing.ContextCost:
    """Prefill's cost does not depend on the decode batch: the explorer's batch slider reuses it."""
    return pricing.prefill_cost_against_context(model, target, np.array(grid), dtype)


def draw_cost(ax, model, target, dtype, batch, price=None, contexts=CONTEXTS, mark_kink=True) -> Curves:
    """Decode's compute, memory and cost per output token against context, and prefill's cost per
    input token, in USD per million tokens; the kink marked; ``price``'s output price (with its
    step) over the decode cost and its input price over the prefill cost."""
    c = curves(model, target, dtype, batch, contexts)
    rel = c.on(c.contexts)
    ax.plot(c.contexts, rel["compute"], color=COLORS["compute"], ls="--", lw=1, label="decode compute")
    ax.plot(c.contexts, rel["memory"], color=COLORS["memory"], ls=":", lw=1.6, label="decode memory (weights + KV reads)")
    ax.plot(c.contexts, rel["cost"], color=COLORS["cost"], lw=2.2, label="decode: cost per output token")
    ax.plot(c.contexts, rel["prefill"], color=COLORS["input"], lw=2.2, marker="s", markevery=5, ms=3.5,
            label="prefill: cost per input token")
    if mark_kink and np.isfinite(c.decode.kink):
        ax.axvline(c.decode.kink, color=COLORS["kink"], lw=1, ls="-.", label=f"decode kink, L ≈ {c.decode.kink:,.0f}")
    if price is not None:
        _draw_price(ax, prices.get(price) if isinstance(price, str) else price, contexts)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(contexts[0], contexts[-1])
    ax.set_xlabel("context L (tokens): the prompt, or the cache a decode token reads")
    ax.set_ylabel(f"USD per million tokens ({c.decode.usd_per_chip_hour:g} USD per GPU-hour)")
    return c


def price_steps(price, contexts=CONTEXTS) -> tuple[list, list, list]:
    """(x, input, output) of a price list's lines in USD per million tokens over ``contexts``: flat,
    or stepping at its long-context threshold."""
    if not price.long_context:
        return [contexts[0], contexts[-1]], [price.input] * 2, [price.output] * 2
    step = price.long_context["above_tokens"]
    lc = price.long_context
    return ([contexts[0], step, step, contexts[-1]], [price.input, price.input, lc["input"], lc["input"]],
            [price.output, price.output, lc["output"], lc["output"]])


def _draw_price(ax, price, contexts):
    xs, ins, outs = price_steps(price, contexts)
    where = f" above {price.long_context['above_tokens']:,}" if price.long_context else ", flat"
    ax.plot(xs, ins, color=COLORS["input"], lw=1.2, ls=(0, (1, 1.5)),
            label=f"{price.model}: input price{where}")
    ax.plot(xs, outs, color=COLORS["output"], lw=1.6, ls=(0, (4, 2)), label=f"output price{where}")


def cost_figure(model="jamba-v0.1", target="hgx-h100", dtype="fp8", batch=4096, price="google/gemini-3.1-pro-preview",
                width=8.6, height=4.2, mark_kink=True):
    """Graph C for one model, system and batch (cut to what fits), up to the model's maximum
    context, with a provider's price steps (none if ``price`` is None)."""
    fig, (ax,) = new_figure(width, height)
    with style():
        c = draw_cost(ax, model, target, dtype, batch, price, mark_kink=mark_kink)
        ax.set_title(f"{models.get(model).display} on {target}, {dtype.upper()}, up to {batch:,.0f} sequences per step")
        ax.legend(fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
    if not mark_kink:  # a chart to read the kink from (a problem set's) does not say where it is
        kink = "where the reads overtake the compute is left to the reader"
    elif np.isfinite(c.decode.kink):
        kink = f"the reads overtake the compute at {c.decode.kink:,.0f} tokens"
    else:
        kink = "the reads never overtake the compute in this range"
    over = ""
    if price is not None:
        p = prices.get(price) if isinstance(price, str) else price
        _, ins, outs = price_steps(p)
        over = (f" {p.model}'s output price is {outs[-1] / c.decode.usd_per_million_tokens[-1]:,.3g} times decode's "
                f"cost there and its input price {ins[-1] / c.prefill.usd_per_million_tokens[-1]:,.3g} times "
                "prefill's.")
    return describe(fig, f"Decode cost per output token is flat while compute-bound, then rises in proportion to the "
                         f"context: {kink}, and at the model's maximum context of {c.top:,.0f} tokens an output token "
                         f"costs {c.decode.usd_per_million_tokens[-1]:,.3g} USD per million, {c.decode.relative[-1]:,.3g} "
                         f"times what it costs at {c.contexts[0]:,.0f}. Prefill cost per input token rises only through "
                         f"attention, {c.prefill.relative[-1]:,.3g} times over the same range.{over}")


# --- graph D ----------------------------------------------------------------------------------
def pass_figure(model="llama-3.1-70b", target="hgx-h100", dtype="fp8", cached=0, width=6.4, height=3.6):
    """Graph D: time per token of a pass of n new tokens of one sequence, compute and memory."""
    ns = 2 ** np.arange(0, 15)
    pt = pricing.pass_times(model, target, ns, cached=cached, dtype=dtype)
    fig, (ax,) = new_figure(width, height)
    with style():
        ax.plot(ns, 1e3 * pt.compute / ns, color=COLORS["compute"], ls="--", marker="^", ms=4,
                label="compute per token")
        ax.plot(ns, 1e3 * pt.memory / ns, color=COLORS["memory"], ls=":", marker="o", ms=4,
                label="memory per token (falls as 1/n)")
        ax.plot(ns, 1e3 * pt.per_token, color=COLORS["cost"], lw=2.2, label="time per token (the larger)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("new tokens per pass, n (decode 1, prefill many)")
        ax.set_ylabel("ms of the replica per token")
        ax.set_title(f"{models.get(model).display} on {target}, {dtype.upper()}, one sequence")
        ax.legend(fontsize=7, frameon=False)
        fig.tight_layout()
    return describe(fig, f"Decode (n = 1) takes {1e3 * pt.per_token[0]:.3g} ms per token, memory-bound; per "
                         f"token time falls as 1/n until compute takes over at n = {pt.knee:,.0f}, where prefill "
                         f"runs at {1e3 * pt.per_token[-1]:.3g} ms per token, {pt.per_token[0] / pt.per_token[-1]:,.0f} "
                         "times less.")


# --- the cache panel --------------------------------------------------------------------------
def hold_cost_grid(target, usd_per_chip_hour=USD_PER_CHIP_HOUR, wait=True) -> tuple[list, dict[str, np.ndarray]]:
    """The tiers of ``target`` and each one's dollars per byte over ``HOLDS`` (``pricing.hold_costs``;
    ``wait`` charges the GPUs that wait for the reload)."""
    held = tiers.tiers_with_hbm(target, usd_per_chip_hour)
    rows = [pricing.hold_costs(h, target, usd_per_chip_hour, wait=wait) for h in HOLDS]
    return held, {t.name: np.array([row[t.name] for row in rows]) for t in held}


def draw_tiers(ax, target, usd_per_chip_hour=USD_PER_CHIP_HOUR, remat=None):
    """Dollars per GB held against hold time for each tier of ``target``, its GPUs' wait for the
    reload included, that envelope bold, the envelope of rent alone thin, and ``remat`` (dollars per
    byte to recompute) as a level. Returns the tiers and the envelope's break-even holds."""
    held, costs = hold_cost_grid(target, usd_per_chip_hour)
    for i, t in enumerate(held):
        ax.plot(HOLDS, 1e9 * costs[t.name], color=TIER_COLORS[i % 7], ls=TIER_STYLES[i % 7], marker=TIER_MARKERS[i % 7],
                markevery=10, ms=4, lw=1.1, label=_short(t.display))
    envelope = np.min(np.vstack(list(costs.values())), axis=0)
    ax.plot(HOLDS, 1e9 * envelope, **ENVELOPE, label="cheapest tier, the GPUs' wait paid")
    _, rent = hold_cost_grid(target, usd_per_chip_hour, wait=False)
    ax.plot(HOLDS, 1e9 * np.min(np.vstack(list(rent.values())), axis=0), color="black", lw=0.9, ls=(0, (1, 1)),
            label="cheapest tier, rent alone")
    if remat is not None:
        ax.axhline(1e9 * remat, **REMAT, label="recompute the prefill")
    _, switches = pricing.tier_envelope(target, usd_per_chip_hour, wait=True)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("hold time T (s)")
    ax.set_ylabel("dollars per GB held and reloaded")
    return held, switches


def tier_figure(target="hgx-h100", model="llama-3.1-70b", prompt=REMAT_PROMPT, dtype="fp8",
                usd_per_chip_hour=USD_PER_CHIP_HOUR, width=7.0, height=4.0):
    remat = pricing.recompute_usd_per_byte(model, target, prompt, dtype, usd_per_chip_hour)
    fig, (ax,) = new_figure(width, height)
    with style():
        held, switches = draw_tiers(ax, target, usd_per_chip_hour, remat)
        ax.set_title(f"Holding a prompt cache beside {target} at {usd_per_chip_hour:g} USD per GPU-hour")
        ax.legend(fontsize=7, frameon=False, loc="upper left")
        fig.tight_layout()
    after = pricing.rematerialise_after(model, target, prompt, dtype, usd_per_chip_hour, wait=True)
    steps = "; ".join(f"{_short(s.slower.display)} from {s.hold_seconds:,.3g} s" for s in switches
                      if s.hold_seconds < after)
    rent_after = pricing.rematerialise_after(model, target, prompt, dtype, usd_per_chip_hour)
    return describe(fig, f"Each tier's cost is a line in the hold time: its rent sets the slope, the reload (the "
                         f"tier read once and the GPUs waiting for it) the floor. The cheapest tier starts with "
                         f"{_short(held[0].display) if not switches else _short(switches[0].faster.display)} and moves "
                         f"on to {steps}. Recomputing a {prompt:,}-token prompt of {models.get(model).display} beats "
                         f"every tier after {after / 86400:,.3g} days ({rent_after / 86400:,.3g} days counting rent "
                         "alone).")


# --- the live explorer ------------------------------------------------------------------------
MODELS = ("llama-3.1-70b", "llama-3.1-405b", "deepseek-v3", "qwen3-235b-a22b", "gemma-2-9b", "jamba-v0.1", "kimi-k2")
TARGETS = ("H100-SXM", "H200", "B200", "hgx-h100", "gb200-nvl72")
PRICES = tuple(name for name, p in prices.catalog_prices().items() if p.long_context or (p.context_window or 0) >= 1e6)


class LongContextFigure:
    """Left: graph C with the price steps. Right: the cache tiers with the chosen hold marked."""

    def __init__(self, width=9.0, height=3.8):
        self.fig, (self.ax_cost, self.ax_tier) = new_figure(width, height, 2)
        self.fig.subplots_adjust(left=0.07, right=0.975, bottom=0.34, top=0.9, wspace=0.25)
        with style():
            for ax in (self.ax_cost, self.ax_tier):
                ax.set_xscale("log")
                ax.set_yscale("log")
            self.ax_cost.set_xlim(CONTEXTS[0], CONTEXTS[-1])
            self.ax_tier.set_xlim(HOLDS[0], HOLDS[-1])
            self.ax_cost.set_xlabel("context L (tokens)")
            self.ax_cost.set_ylabel("USD per million tokens")
            self.ax_cost.set_title("graph C: cost per token against context")
            self.ax_tier.set_xlabel("hold time T (s)")
            self.ax_tier.set_ylabel("USD per GB held and read back")
            self.ax_tier.set_title("where to hold a prompt cache")
            a = self.ax_cost
            self.compute = a.plot([], [], color=COLORS["compute"], ls="--", label="compute")[0]
            self.memory = a.plot([], [], color=COLORS["memory"], ls=":", lw=1.8, label="memory")[0]
            self.cost = a.plot([], [], color=COLORS["cost"], lw=2.2, label="decode cost (the larger)")[0]
            self.prefill = a.plot([], [], color=COLORS["input"], lw=2.2, marker="s", markevery=5, ms=3.5,
                                  label="prefill cost")[0]
            self.step_in = a.plot([], [], color=COLORS["input"], lw=1.2, ls=(0, (1, 1.5)), label="input price step")[0]
            self.step_out = a.plot([], [], color=COLORS["output"], ls=(0, (4, 2)), label="output price step")[0]
            self.kink = a.plot([], [], color=COLORS["kink"], ls="-.", lw=1, label="kink")[0]
            self.tier_lines = [self.ax_tier.plot([], [], color=TIER_COLORS[i], ls=TIER_STYLES[i], marker=TIER_MARKERS[i],
                                                 markevery=10, ms=4, lw=1.1)[0] for i in range(7)]
            self.envelope = self.ax_tier.plot([], [], **ENVELOPE, label="cheapest tier")[0]
            self.remat = self.ax_tier.plot([], [], **REMAT, label=f"recompute a {REMAT_PROMPT:,}-token prefill")[0]
            self.here = self.ax_tier.plot([], [], "o", ms=9, color=COLORS["kink"], mec="black", zorder=5,
                                          label="chosen hold time", clip_on=False)[0]
            self.fig.legend(handles=[self.compute, self.memory, self.cost, self.prefill, self.step_in, self.step_out,
                                     self.kink, self.envelope, self.remat, self.here], loc="lower center", ncol=5,
                            frameon=False)
            self.tier_legend = None
            self.note = self.fig.text(0.5, 0.6, "", ha="center", va="center", fontsize=11, color="#b00")
        self.layers = Layers(self.fig, [self.compute, self.memory, self.cost, self.prefill, self.step_in, self.step_out,
                                        self.kink,
                                        *self.tier_lines, self.envelope, self.remat, self.note],
                             [self.here], [self.ax_cost.yaxis, self.ax_tier.yaxis])
        self._view, self._ylim, self._legend_tiers = None, None, None

    def draw(self, view, c: Curves, price, held, costs, hold, hold_cost, remat):
        if view != self._view:
            self._view = view
            self.note.set_text("")
            rel = c.on(c.contexts)
            for line, key in ((self.compute, "compute"), (self.memory, "memory"), (self.cost, "cost"),
                              (self.prefill, "prefill")):
                line.set_data(c.contexts, rel[key])
            xs, ins, outs = price_steps(price)
            self.step_in.set_data(xs, ins)
            self.step_out.set_data(xs, outs)
            top = max(np.nanmax(rel["cost"]), np.nanmax(rel["prefill"]), max(outs))
            low = min(np.nanmin(rel["compute"]), np.nanmin(rel["memory"]), np.nanmin(rel["prefill"]), min(ins))
            self.kink.set_data(([c.decode.kink] * 2, [low, top]) if np.isfinite(c.decode.kink) else ([], []))
            for line, t in zip(self.tier_lines, held + [None] * (7 - len(held))):
                if t is None:
                    line.set_data([], [])
                    line.set_label("_unused")
                else:
                    line.set_data(HOLDS, 1e9 * costs[t.name])
                    line.set_label(_short(t.display))
            self.envelope.set_data(HOLDS, 1e9 * np.min(np.vstack(list(costs.values())), axis=0))
            self.remat.set_data(HOLDS[[0, -1]], [1e9 * remat] * 2)
            self._tier_legend(held)
            ylim_cost = (10 ** np.floor(np.log10(low)), 10 ** np.ceil(np.log10(top)))
            all_costs = np.concatenate([1e9 * v for v in costs.values()] + [[1e9 * remat]])
            ylim_tier = (10 ** np.floor(np.log10(all_costs.min())), 10 ** np.ceil(np.log10(all_costs.max())))
            self._ylim = (ylim_cost, ylim_tier)
            self.ax_cost.set_ylim(*ylim_cost)
            self.ax_tier.set_ylim(*ylim_tier)
        self.here.set_data([hold], [1e9 * hold_cost])

    def _tier_legend(self, held):
        """A legend of the tiers held, made again only when they change (a new target)."""
        names = [t.name for t in held]
        if self.tier_legend is not None and names == self._legend_tiers:
            return
        if self.tier_legend is not None:
            self.layers.view.remove(self.tier_legend)
            self.tier_legend.remove()
        with style():
            self.tier_legend = self.ax_tier.legend(handles=self.tier_lines[:len(held)], fontsize=7,
                                                   frameon=True, loc="upper left")
        self.layers.view.append(self.tier_legend)
        self._legend_tiers = names

    def message(self, text: str):
        self._view = ("message", text)
        for a in (self.compute, self.memory, self.cost, self.prefill, self.step_in, self.step_out, self.kink,
                  *self.tier_lines,
                  self.envelope, self.remat, self.here):
            a.set_data([], [])
        self.note.set_text(text)

    def render(self) -> bytes:
        return self.layers.render(self._ylim, self._view)


@lru_cache(maxsize=128)
def _curves(model, target, dtype, batch) -> Curves:
    return curves(model, target, dtype, batch)


@lru_cache(maxsize=128)
def _remat(model, target, dtype) -> float:
    return pricing.recompute_usd_per_byte(model, target, REMAT_PROMPT, dtype)


def _winner(cost: float, remat: float) -> str:
    return "holding it wins" if cost < remat else "recomputing wins"


@lru_cache(maxsize=16)
def _tier_costs(target):
    return hold_cost_grid(target)


def readout(model, target, dtype, batch, price, hold, c: Curves, tier, cost, remat) -> str:
    p = prices.get(price)
    _, ins, outs = price_steps(p)
    steps = (f"steps at {p.long_context['above_tokens']:,} tokens to {ins[-1]:g} (input) and {outs[-1]:g} (output)"
             if p.long_context else "is flat at every context")
    kink = f"decode's reads overtake its compute at <b>L = {c.decode.kink:,.0f}</b>" if np.isfinite(c.decode.kink) else \
        "decode is compute-bound over the whole range"
    fits = c.decode.batch[-1]
    last = (f"{fits:,.0f} sequences fit" if np.isfinite(fits) else "not one sequence fits")
    return (f"{html.escape(models.get(model).display)} on {html.escape(explorer.catalog_names()[target])}, {dtype.upper()}, up to "
            f"{batch:,.0f} sequences per step: {kink}. At its maximum context, {c.top:,.0f} tokens ({last}), "
            f"an output token costs {c.decode.usd_per_million_tokens[-1]:,.3g} USD per million "
            f"({c.decode.relative[-1]:,.3g}x its short-context cost) and an input token "
            f"{c.prefill.usd_per_million_tokens[-1]:,.3g} ({c.prefill.relative[-1]:,.3g}x). {html.escape(p.model)} "
            f"charges {ins[0]:g} (input) and {outs[0]:g} (output) USD per million and {steps}."
            f"<br>A cache held {explorer.number(hold)} s: "
            f"cheapest in <b>{html.escape(tier.display)}</b>, {1e9 * cost:,.3g} USD per GB "
            f"(capacity rent, one read back and the GPUs waiting for it; the write, power and hosts "
            f"left out); recomputing a {REMAT_PROMPT:,}-token prefill costs {1e9 * remat:,.3g} USD per GB of its "
            f"cache: <b>{_winner(cost, remat)}</b>.")


SESSION = [
    {"hold": 3600.0}, {"hold": 1780.0}, {"hold": 300.0}, {"hold": 86400.0}, {"batch": 1e5}, {"hold": 1.0},
    {"hold": 0.01}, {"hold": 5.62}, {"model": "deepseek-v3"}, {"hold": 1e5}, {"hold": 3.16e4}, {"dtype": "bf16"},
    {"hold": 30.0}, {"hold": 56.2}, {"target": "gb200-nvl72"}, {"hold": 1e6}, {"hold": 600.0},
    {"price": "anthropic/claude-sonnet-4.5"}, {"hold": 10.0}, {"hold": 3e4}, {"model": "jamba-v0.1"},
    {"hold": 3e6}, {"hold": 0.1}, {"batch": 100.0}, {"hold": 3600.0}, {"hold": 100.0}, {"model": "llama-3.1-70b"},
    {"hold": 1e4}, {"hold": 1.78e5}, {"target": "H100-SXM"},
]
"""A reader's session for the benchmark: the hold time most often."""


class Explorer(explorer.Explorer):
    """Chapter 6's explorer: model x chip x number format x batch x price entry x hold time."""
    controls = (
        Dropdown("model", "model", catalog_options(MODELS)),
        Dropdown("target", "chip or system", catalog_options(TARGETS)),
        Dropdown("dtype", "weights", catalog_options(("bf16", "fp8"))),
        log_slider("batch", "sequences per step", 1, 1e6, per_decade=4),
        Dropdown("price", "price list", catalog_options(PRICES)),
        log_slider("hold", "cache hold time (s)", 1e-3, 1e7, per_decade=4),
    )
    defaults = dict(model="jamba-v0.1", target="hgx-h100", dtype="fp8", batch=4096,
                    price="google/gemini-3.1-pro-preview", hold=300.0)
    rows = (("model", "target", "dtype"), ("batch", "price"), ("hold",))

    def make_figure(self):
        return LongContextFigure()

    def draw(self, model, target, dtype, batch, price, hold) -> str:
        c = _curves(model, target, dtype, batch)
        held, costs = _tier_costs(target)
        tier = pricing.cheapest_tier(hold, target, wait=True)
        cost = pricing.hold_costs(hold, target, wait=True)[tier.name]
        remat = _remat(model, target, dtype)
        self.figure.draw((model, target, dtype, batch, price), c, prices.get(price), held, costs, hold, cost, remat)
        return readout(model, target, dtype, batch, price, hold, c, tier, cost, remat)


# --- static twin ------------------------------------------------------------------------------
TWIN_MODELS = ("jamba-v0.1", "llama-3.1-70b", "qwen3-235b-a22b")
TWIN_TARGETS = ("hgx-h100", "hgx-h200", "gb200-nvl72")
"""Systems every twin model fits on in FP8."""
TWIN_PRICES = ("google/gemini-3.1-pro-preview", "anthropic/claude-sonnet-4.5")
TWIN_HOLDS = ((1.0, "1 second"), (300.0, "5 minutes"), (3600.0, "1 hour"), (86400.0, "1 day"))
TWIN_BATCH = 4096
TWIN_DTYPE = "fp8"
PANEL_W, PANEL_H = 420, 230
TEMPLATES = ["L = {context} tokens: an output token costs {0.cost} USD per million at the roofline (decode compute "
             "{0.compute}, memory {0.memory}), an input token {0.prefill} (prefill); {price}'s list: "
             "{0.output} (output), {0.input} (input) USD per million, {step}. Decode kink at {kink} tokens; "
             "the model's maximum context {top} tokens (– beyond it). "
             "A cache held {hold}: cheapest in {tier}, {tier_cost} USD per GB; recomputing a {remat_prompt}-token "
             "prefill, {remat} USD per GB: {winner}."]


def _bars(model, target, hold) -> list:
    """The cache panel as bars: each tier's cost at ``hold`` and the cost of recomputing the prefill
    instead, on a log scale, the cheapest marked."""
    costs = {t.name: pricing.hold_costs(hold, target, wait=True)[t.name] for t in tiers.tiers_with_hbm(target)}
    labels = {t.name: _short(t.display) for t in tiers.tiers_with_hbm(target)}
    costs["remat"], labels["remat"] = _remat(model, target, TWIN_DTYPE), "recompute the prefill"
    logs = {name: np.log10(1e9 * cost) for name, cost in costs.items()}
    low, high = np.floor(min(logs.values())), np.ceil(max(logs.values()))
    best = min(costs, key=costs.get)
    row = (PANEL_H - 54) / len(costs)
    values = {name: f"{1e9 * cost:.2g}" + (" (cheapest)" if name == best else "") for name, cost in costs.items()}
    # Every label whole left of the bars, and bars as long as leaves every value room beside its bar
    # inside the panel: a 9 px character is at most 0.62 of it wide in the site's sans-serif. A bar
    # is 20 px plus its share of ``span``.
    chars = 0.62 * 9
    x0 = 10 + round(chars * max(map(len, labels.values())))
    share = {name: (logs[name] - low) / max(high - low, 1) for name in costs}
    span = min(((PANEL_W - 4 - x0 - 30 - chars * len(values[name])) / share[name]
                for name in costs if share[name] > 0), default=0)
    shapes = [twin.text(10, 32, f"USD per GB held {hold:g} s and reloaded (log scale, 1e{int(low)} to 1e{int(high)})",
                        size=10)]
    for i, name in enumerate(costs):
        y = 42 + i * row
        w = 20 + span * share[name]
        color = "#1b7837" if name == best else COLORS["remat"] if name == "remat" else "#9aa7b8"
        shapes.append(twin.text(x0, y + row * 0.6, labels[name], anchor="end", size=9))
        shapes.append(twin.rect(x0 + 5, round(y), round(w), round(row * 0.75), color,
                                label=f"{labels[name]}: {1e9 * costs[name]:.3g} USD per GB"))
        shapes.append(twin.text(x0 + 10 + w, y + row * 0.6, values[name], size=9))
    return shapes


def twin_view(model, target, price, hold) -> dict:
    c = _curves(model, target, TWIN_DTYPE, TWIN_BATCH)
    rel = c.on(CONTEXTS)
    p = prices.get(price)
    xs, ins, outs = price_steps(p)
    tier = pricing.cheapest_tier(hold, target, wait=True)
    cost = pricing.hold_costs(hold, target, wait=True)[tier.name]
    remat = _remat(model, target, TWIN_DTYPE)
    series = {key: twin.rounded(rel[key]) for key in ("compute", "memory", "cost", "prefill")}
    step = xs[1] if p.long_context else np.inf
    series |= {"input": twin.rounded(np.where(CONTEXTS > step, ins[-1], ins[0])),
               "output": twin.rounded(np.where(CONTEXTS > step, outs[-1], outs[0]))}
    top = max(np.nanmax(rel["cost"]), np.nanmax(rel["prefill"]), max(outs))
    low = min(np.nanmin(rel["compute"]), np.nanmin(rel["memory"]), np.nanmin(rel["prefill"]), min(ins))
    kink = c.decode.kink
    stops = len(CONTEXTS)
    return {"panels": [{"ylim": [float(10 ** np.floor(np.log10(low))), float(10 ** np.ceil(np.log10(top)))],
                        "series": series,
                        **({"vlines": [{"x": float(kink), "style": "kink"}]} if np.isfinite(kink) else {})},
                       {"frames": [_bars(model, target, hold)]}],
            "readout": {"pick": [0] * stops, "values": {},
                        "constants": {"kink": f"{kink:,.0f}" if np.isfinite(kink) else "none in range",
                                      "top": f"{c.top:,.0f}", "price": p.model,
                                      "step": (f"stepping above {p.long_context['above_tokens']:,} tokens"
                                               if p.long_context else "flat"),
                                      "hold": dict(TWIN_HOLDS)[hold], "tier": _short(tier.display),
                                      "tier_cost": f"{1e9 * cost:.3g}", "remat_prompt": f"{REMAT_PROMPT:,}",
                                      "remat": f"{1e9 * remat:.3g}", "winner": _winner(cost, remat)}}}


def twin_data() -> dict:
    controls = [
        twin.select("model", "model", [(m, models.get(m).display) for m in TWIN_MODELS]),
        twin.select("target", "chip or system", [(t, t) for t in TWIN_TARGETS]),
        twin.select("price", "price list", [(p, prices.get(p).model) for p in TWIN_PRICES]),
        twin.select("hold", "cache hold time", [(f"{h:g}", label) for h, label in TWIN_HOLDS]),
        twin.slider("context", "context L (tokens)", CONTEXTS, 200_000),
    ]
    panels = [twin.chart(f"cost per token against context (up to {TWIN_BATCH:,} sequences per step, FP8)",
                         "context L (tokens)", "USD per million tokens", point=("cost", "point")),
              twin.shapes("where to hold a prompt cache", PANEL_W, PANEL_H)]
    styles = {"compute": twin.line_style("decode compute", COLORS["compute"], 1.2, "6 3"),
              "memory": twin.line_style("decode memory", COLORS["memory"], 1.6, "2 2"),
              "cost": twin.line_style("decode: cost per output token", COLORS["cost"], 2.4),
              "prefill": twin.line_style("prefill: cost per input token", COLORS["input"], 2.4, "12 2"),
              "input": twin.line_style("input price step", COLORS["input"], 1.6, "10 2 2 2 2 2"),
              "output": twin.line_style("output price step", COLORS["output"], 1.6, "8 3"),
              "kink": twin.line_style("kink", COLORS["kink"], 1, "4 2 1 2"),
              "point": twin.point_style("chosen context", COLORS["kink"])}
    views = {f"{m}|{t}|{p}|{h:g}": twin_view(m, t, p, h)
             for m in TWIN_MODELS for t in TWIN_TARGETS for p in TWIN_PRICES for h, _ in TWIN_HOLDS}
    return twin.twin_data(controls, panels, styles, legend=list(styles), templates=TEMPLATES, views=views)
