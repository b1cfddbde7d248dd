"""Chapter 5's figures, live explorer and static twin: how inference and RL move the best model
away from Chinchilla's frontier.

Every number comes from ``chalk.scaling``: the loss contours are ``scaling.loss`` on a grid, the
frontier ``scaling.optimal_tokens``, the chosen point ``scaling.lifetime_optimal``. The closed forms
the figures draw (the iso-FLOP line, the heuristic's terms, its minimum and equal-cost point) are
evaluated through ``overtraining_numeric``, their plain-Python form written from the SymPy
expressions (``NUMERIC``, ``python -m chalk.figures.overtraining``), so that importing this module
solves and lambdifies nothing: problem set 5 imports it, and a graded notebook paid 1.9 s for it.
"""
import html
from functools import lru_cache

import contourpy
import numpy as np
import sympy as sp

from .. import scaling
from ..catalog import models
from ..catalog.overtraining import LECTURE
from ..errors import ChalkError, in_range
from ..notation import C_train, D, N_act, a, b, p, q, x
from . import explorer, twin
from . import overtraining_numeric as numeric
from .canvas import Layers, describe, new_figure, png, style
from .explorer import Dropdown, catalog_options, linear_slider, log_slider

SHOWN_FITS = ("epoch", "hoffmann")
N_RANGE, D_RANGE = (1e8, 1e13), (1e9, 1e17)
"""The (N, D) plane drawn: 100 M to 10 T parameters, 1 B to 100 P tokens."""
LEVELS = (1.9, 2.0, 2.1, 2.3, 2.6, 3.0)
"""Loss contours drawn (nats per token); all lie above both fits' irreducible loss."""
ISO_FLOPS = tuple(10.0**k for k in range(20, 30))
GOPHER_BUDGET = 5.76e23
"""Gopher's training FLOPs, at which Hoffmann et al. (2022, section 3.3) quote Approach 3's optimum."""
INFERENCE_TOKENS = np.logspace(11, 17, 25)
"""Lifetime inference tokens the curves and the twin's slider run over: 100 B to 100 P."""
COLORS = {"contour": "#9aa7b8", "target": "#1f4e9c", "iso": "#c8c8c8", "frontier": "#2a9d3a",
          "chinchilla": "#2a9d3a", "lifetime": "#d62728", "N": "#1f4e9c", "D_pre": "#e07b00",
          "vs_rule": "#d62728", "vs_fit": "#7b3fa0"}


@lru_cache(maxsize=4)
def loss_grid(fit: str, points: int = 160):
    """(N, D, loss) on a log grid of the plane: what the contours are traced on."""
    n = np.logspace(*np.log10(N_RANGE), points)
    d = np.logspace(*np.log10(D_RANGE), points)
    with scaling.extrapolating():  # the plane runs to 1e17 tokens, past every fit's data, on purpose
        return n, d, scaling.loss(n[None, :], d[:, None], fit)


@lru_cache(maxsize=64)
def contour(fit: str, level: float):
    """The curve L(N, D) = ``level`` as (N, D) arrays, pieces separated by NaN."""
    n, d, z = loss_grid(fit)
    pieces = contourpy.contour_generator(np.log10(n), np.log10(d), z).lines(level)
    if not pieces:
        return np.array([]), np.array([])
    joined = np.concatenate([np.vstack([p, [np.nan, np.nan]]) for p in pieces])
    return 10 ** joined[:, 0], 10 ** joined[:, 1]


class Scenario:
    """One set of explorer inputs, checked by ``chalk.scaling`` (efficiencies are 1/inefficiency)."""

    def __init__(self, fit, target_loss, rl_tokens, rl_flops_per_param_token, rl_inefficiency,
                 inference_inefficiency):
        self.fit, self.target_loss = fit, target_loss
        for name, value in (("rl_inefficiency", rl_inefficiency), ("inference_inefficiency", inference_inefficiency)):
            in_range(name, value, 1, np.inf)
        self.use = dict(inference_efficiency=1 / inference_inefficiency, rl_tokens=rl_tokens,
                        rl_flops_per_param_token=rl_flops_per_param_token, rl_efficiency=1 / rl_inefficiency)

    def optimum(self, inference_tokens):
        """(N, D_pre, lifetime FLOPs) at the lifetime optimum (arrays broadcast)."""
        return scaling.lifetime_optimal(self.target_loss, inference_tokens, self.fit, **self.use)

    def compute_optimal(self, inference_tokens):
        """(N, D, lifetime FLOPs) of the model Chinchilla picks for the same loss."""
        n, d = scaling.loss_optimal(self.target_loss, self.fit)
        eta = self.use["inference_efficiency"]
        life = scaling.lifetime_flops(n, d, inference_tokens, eta, **{k: v for k, v in self.use.items()
                                                                       if k != "inference_efficiency"})
        return n, d, life.total


@lru_cache(maxsize=64)
def curves(fit, target_loss, rl_tokens, rl_flops_per_param_token, rl_inefficiency, inference_inefficiency):
    """The optimum along ``INFERENCE_TOKENS`` for one scenario: dict of arrays."""
    s = Scenario(fit, target_loss, rl_tokens, rl_flops_per_param_token, rl_inefficiency, inference_inefficiency)
    n, d, total = s.optimum(INFERENCE_TOKENS)
    n0, d0, total0 = s.compute_optimal(INFERENCE_TOKENS)
    return {"N": n, "D_pre": d, "total": total, "N0": n0, "D0": d0, "saving": 1 - total / total0,
            "vs_rule": scaling.overtraining_ratio(n, d), "vs_fit": d / scaling.optimal_tokens(n, fit)}


def point(scenario: Scenario, inference_tokens) -> dict:
    """The readout's numbers at one inference volume."""
    n, d, total = scenario.optimum(inference_tokens)
    _, _, total0 = scenario.compute_optimal(inference_tokens)
    return {"N": n, "D_pre": d, "total": total, "saving": 1 - total / total0,
            "vs_rule": scaling.overtraining_ratio(n, d), "vs_fit": d / scaling.optimal_tokens(n, scenario.fit)}


def readout(p: dict, inference_tokens) -> str:
    return (f"D<sub>inf</sub> = {inference_tokens / 1e12:,.3g} T tokens: <b>N* = {p['N'] / 1e9:,.3g} B</b> "
            f"parameters on <b>D<sub>pre</sub> = {p['D_pre'] / 1e12:,.3g} T</b> tokens "
            f"({p['D_pre'] / p['N']:,.0f} per parameter: {p['vs_rule']:,.3g}&times; the 20:1 rule, "
            f"{p['vs_fit']:,.3g}&times; this fit's own frontier) &middot; lifetime {p['total']:.3g} FLOPs, "
            f"{100 * p['saving']:.3g}% less than Chinchilla's model for the same loss")


class OvertrainingFigure:
    """Left: the (N, D) plane with loss contours, iso-FLOP lines, the compute-optimal frontier, the
    target loss and the two models reaching it. Right: N* and D_pre* against inference tokens."""

    def __init__(self, width=9.0, height=4.3):
        self.fig, (self.ax_plane, self.ax_opt) = new_figure(width, height, 2)
        self.fig.subplots_adjust(left=0.08, right=0.98, bottom=0.27, top=0.9, wspace=0.28)
        a, b = self.ax_plane, self.ax_opt
        with style():
            for ax in (a, b):
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.minorticks_off()
            a.set_xlim(*N_RANGE)
            a.set_ylim(*D_RANGE)
            a.set_xlabel("parameters N (active)")
            a.set_ylabel("pre-training tokens D")
            a.set_title("loss contours and iso-FLOP lines")
            n_line = np.array(N_RANGE)
            for c in ISO_FLOPS:
                a.plot(n_line, numeric.ISO_TOKENS(C_train=c, N_act=n_line), color=COLORS["iso"], lw=0.8, ls=":", zorder=1)
            self.contours = [a.plot([], [], color=COLORS["contour"], lw=0.9)[0] for _ in LEVELS]
            self.target = a.plot([], [], color=COLORS["target"], lw=2.2, label="target loss")[0]
            self.frontier = a.plot([], [], color=COLORS["frontier"], lw=1.4, ls="--",
                                   label="compute-optimal frontier")[0]
            self.chinchilla = a.plot([], [], "s", ms=7, color=COLORS["chinchilla"], mec="black",
                                     label="Chinchilla's model", zorder=5)[0]
            self.lifetime = a.plot([], [], "o", ms=8, color=COLORS["lifetime"], mec="black",
                                   label="lifetime optimum", zorder=6, clip_on=False)[0]
            b.set_xlim(INFERENCE_TOKENS[0], INFERENCE_TOKENS[-1])
            b.set_xlabel("lifetime inference tokens D_inf")
            b.set_ylabel("parameters or tokens")
            b.set_title("the lifetime optimum")
            # One legend holds both panels' lines: each has a style of its own, not only a colour.
            self.n_curve = b.plot([], [], color=COLORS["N"], lw=2, marker="^", ms=4, markevery=4, label="N*")[0]
            self.d_curve = b.plot([], [], color=COLORS["D_pre"], lw=2, ls="-.", label="D_pre*")[0]
            self.n_flat = b.plot([], [], color="#555", lw=1, ls=":", label="Chinchilla's N, D (same loss)")[0]
            self.d_flat = b.plot([], [], color="#555", lw=1, ls=":")[0]
            self.marks = b.plot([], [], "o", ms=7, color=COLORS["lifetime"], mec="black", zorder=5,
                                clip_on=False)[0]
            self.cursor = b.axvline(INFERENCE_TOKENS[0], color="#555", lw=0.8, ls=":")
            self.fig.legend(handles=[self.target, self.frontier, self.chinchilla, self.lifetime,
                                     self.n_curve, self.d_curve, self.n_flat], loc="lower center", ncol=4,
                            frameon=False)
            self.note = self.fig.text(0.5, 0.5, "", ha="center", va="center", fontsize=11, color="#b00")
        self.layers = Layers(self.fig, [*self.contours, self.target, self.frontier, self.chinchilla,
                                        self.n_curve, self.d_curve, self.n_flat, self.d_flat, self.note],
                             [self.lifetime, self.marks, self.cursor], [b.yaxis])
        self._view, self._ylim = None, (1e8, 1e17)

    def draw(self, fit, target_loss, c: dict, here: dict, inference_tokens):
        view = (fit, target_loss, id(c))
        if view != self._view:
            self._view = view
            self.note.set_text("")
            for line, level in zip(self.contours, LEVELS):
                line.set_data(*contour(fit, level))
            self.target.set_data(*contour(fit, target_loss))
            n_line = np.logspace(*np.log10(N_RANGE), 50)
            self.frontier.set_data(n_line, scaling.optimal_tokens(n_line, fit))
            self.chinchilla.set_data([c["N0"]], [c["D0"]])
            x = INFERENCE_TOKENS
            self.n_curve.set_data(x, c["N"])
            self.d_curve.set_data(x, c["D_pre"])
            self.n_flat.set_data(x[[0, -1]], [c["N0"]] * 2)
            self.d_flat.set_data(x[[0, -1]], [c["D0"]] * 2)
            low, high = min(c["N"].min(), c["N0"]), max(c["D_pre"].max(), c["D0"])
            self._ylim = (10 ** np.floor(np.log10(low)), 10 ** np.ceil(np.log10(high)))
            self.ax_opt.set_ylim(*self._ylim)
        self.lifetime.set_data([here["N"]], [here["D_pre"]])
        self.marks.set_data([inference_tokens] * 2, [here["N"], here["D_pre"]])
        self.cursor.set_xdata([inference_tokens] * 2)

    def message(self, text: str):
        self._view = ("message", text)
        for a in (*self.contours, self.target, self.frontier, self.chinchilla, self.n_curve, self.d_curve,
                  self.n_flat, self.d_flat, self.lifetime, self.marks):
            a.set_data([], [])
        self.note.set_text(text)

    def render(self) -> bytes:
        return self.layers.render(self._ylim, self._view)


def scenario_figure(fit="hoffmann", target_loss=2.0, inference_tokens=None, **use):
    """The chapter's static figure for one scenario (defaults: the lecture's inputs), described
    from the optimum it marks."""
    params = {**Explorer.defaults, "fit": fit, "target_loss": target_loss, **use}
    if inference_tokens is not None:
        params["inference_tokens"] = inference_tokens
    f = OvertrainingFigure()
    Explorer.draw_on(f, **params)
    p = params
    s = Scenario(p["fit"], p["target_loss"], p["rl_tokens"], p["rl_flops_per_param_token"], p["rl_inefficiency"],
                 p["inference_inefficiency"])
    here, (n0, d0, _) = point(s, p["inference_tokens"]), s.compute_optimal(p["inference_tokens"])
    c = curves(p["fit"], p["target_loss"], p["rl_tokens"], p["rl_flops_per_param_token"], p["rl_inefficiency"],
               p["inference_inefficiency"])
    return describe(f.fig, (
        f"Under {scaling.get_fit(p['fit']).display}, the target loss {p['target_loss']:g} nats per token is "
        f"reached by Chinchilla's model, {n0 / 1e9:,.3g} B parameters on {d0 / 1e12:,.3g} T tokens, and, at "
        f"{p['inference_tokens'] / 1e12:,.3g} T inference tokens, by the lifetime optimum, {here['N'] / 1e9:,.3g} B "
        f"on {here['D_pre'] / 1e12:,.3g} T tokens, {100 * here['saving']:.3g}% fewer lifetime FLOPs. As inference "
        f"grows from {INFERENCE_TOKENS[0] / 1e12:,.3g} T to {INFERENCE_TOKENS[-1] / 1e12:,.3g} T tokens, N* falls "
        f"from {c['N'][0] / 1e9:,.3g} B to {c['N'][-1] / 1e9:,.3g} B and D_pre* rises from "
        f"{c['D_pre'][0] / 1e12:,.3g} T to {c['D_pre'][-1] / 1e12:,.3g} T."))


def figure(fit="hoffmann", target_loss=2.0, inference_tokens=None, **use) -> bytes:
    """``scenario_figure`` as PNG bytes."""
    return png(scenario_figure(fit, target_loss, inference_tokens, **use))


SESSION = [
    {"inference_tokens": 1e13}, {"inference_tokens": 3.16e13}, {"inference_tokens": 1e14},
    {"inference_tokens": 3.16e15}, {"inference_tokens": 1e16}, {"target_loss": 2.1},
    {"inference_tokens": 1e12}, {"inference_tokens": 1e15}, {"fit": "hoffmann"}, {"inference_tokens": 3.16e14},
    {"rl_tokens": 1e13}, {"rl_tokens": 1e14}, {"inference_tokens": 1e17}, {"inference_inefficiency": 1},
    {"inference_tokens": 1e11}, {"inference_tokens": 3.16e12}, {"target_loss": 1.95}, {"inference_tokens": 1e14},
    {"rl_inefficiency": 5}, {"inference_tokens": 1e15}, {"fit": "epoch"}, {"inference_tokens": 3.16e16},
    {"rl_flops_per_param_token": 6}, {"inference_tokens": 1e13}, {"inference_tokens": 3.16e13},
    {"target_loss": 2.3}, {"inference_tokens": 1e16}, {"inference_inefficiency": 3}, {"inference_tokens": 1e14},
    {"inference_tokens": 3.16e11},
]
"""A reader's session for the benchmark: the inference volume most often."""


def power10(x: float, digits: int = 2) -> str:
    """A large number as Chapter 5 prints it in its prose, its deeper page and its cards:
    'm × 10ᵏ', with ``digits`` significant digits and the exponent in superscript."""
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    return f"{mantissa} × 10" + str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


LECTURE_INFERENCE = scaling.served_tokens(LECTURE["tokens_per_second_all_models"] / LECTURE["models_per_family"],
                                          LECTURE["days_live"])
"""The lecture's D_inf: 50 M tokens/s per model for two months."""
LECTURE_RL = LECTURE_INFERENCE / scaling.token_split()[0] * scaling.token_split()[1]
"""RL tokens of the lecture's thirds for that D_inf: D_RL = D_pre/1.5 with D_pre = D_inf."""


LECTURE_USE = dict(inference_efficiency=1 / LECTURE["inference_inefficiency"], rl_tokens=LECTURE_RL,
                   rl_flops_per_param_token=LECTURE["rl_flops_per_param_token"],
                   rl_efficiency=1 / LECTURE["rl_inefficiency"])
"""The lecture's RL and inference, as ``scaling.lifetime_flops`` and ``lifetime_optimal`` take them."""


def lecture_tokens(inference_inefficiency=LECTURE["inference_inefficiency"], shares=(1, 1, 1)) -> dict:
    """The lecture's model by its own rule: D_inf from its traffic guess, and the D_pre and D_RL that
    split the lifetime compute in ``shares`` (the thirds by default) when a served token costs
    ``inference_inefficiency`` (1/eta, FLOP-weighted: ``scaling.served_mix``)."""
    split_rl, split_inf = scaling.token_split(inference_inefficiency=inference_inefficiency, shares=shares)
    d_pre = LECTURE_INFERENCE * split_inf
    return {"D_inf": LECTURE_INFERENCE, "D_pre": d_pre, "D_RL": d_pre / split_rl,
            "ratio": scaling.overtraining_ratio(LECTURE["active_params"], d_pre)}


def lecture_lifetime(fit="hoffmann", target_tokens=None,
                     inference_inefficiency=LECTURE["inference_inefficiency"]) -> dict:
    """The lecture's scenario solved exactly: the loss of its 100 B model trained on ``target_tokens``
    reached with the fewest lifetime FLOPs, serving its D_inf and running the thirds' D_RL.

    By default the target is the lecture's own model, trained on the D_pre its thirds give;
    ``target_tokens = 20 N`` asks instead for the quality of a Chinchilla-trained 100 B model. Served
    tokens cost ``inference_inefficiency`` (FLOP-weighted, below 1 when cache hits are free): they are
    charged as that many tokens at training's efficiency, the same FLOPs. Returns the target, the
    optimum (N, D_pre), Chinchilla's model for that loss (N0, D0) and the lifetime FLOPs of the
    optimum (life), of Chinchilla's model (life0) and of the 100 B model on target_tokens (life_ref)."""
    n_ref = LECTURE["active_params"]
    tokens = lecture_tokens(inference_inefficiency)
    d_ref = tokens["D_pre"] if target_tokens is None else target_tokens
    with scaling.extrapolating():  # the lecture's model trains on 2.6e14 tokens, near the fits' edge
        target = scaling.loss(n_ref, d_ref, fit)
    use = dict(rl_tokens=tokens["D_RL"], rl_flops_per_param_token=LECTURE["rl_flops_per_param_token"],
               rl_efficiency=1 / LECTURE["rl_inefficiency"])
    served = LECTURE_INFERENCE * inference_inefficiency
    n, d, _ = scaling.lifetime_optimal(target, served, fit, 1.0, **use)
    n0, d0 = scaling.loss_optimal(target, fit)
    return {"target": target, "N": n, "D_pre": d, "N0": n0, "D0": d0, "N_ref": n_ref, "D_ref": d_ref,
            "life": scaling.lifetime_flops(n, d, served, 1.0, **use),
            "life0": scaling.lifetime_flops(n0, d0, served, 1.0, **use),
            "life_ref": scaling.lifetime_flops(n_ref, d_ref, served, 1.0, **use)}


class Explorer(explorer.Explorer):
    """Chapter 5's explorer. ``update(**params)`` sets any of ``defaults``' keys and redraws."""
    controls = (
        Dropdown("fit", "loss fit", catalog_options(scaling.FITS)),
        linear_slider("target_loss", "target loss", 1.75, 2.6, 0.05, valid=(0.01, 10)),
        log_slider("inference_tokens", "inference tokens", 1e11, 1e17, per_decade=4),
        log_slider("rl_tokens", "RL tokens", 1e11, 1e16, per_decade=4, valid=(0, 1e17)),
        linear_slider("rl_flops_per_param_token", "RL FLOPs/param/token", *scaling.KAPPA_RANGE, 0.5),
        linear_slider("rl_inefficiency", "RL inefficiency 1/η", 1, 10, 0.5, valid=(0.01, 100)),
        linear_slider("inference_inefficiency", "decode inefficiency 1/η", 1, 10, 0.5, valid=(0.01, 100)),
    )
    # 1.9 nats: the loss of the lecture's 100 B model on the 2.6e14 tokens its thirds give, under the
    # replication (1.8 under Hoffmann's Approach 3, below the replication's irreducible loss).
    defaults = dict(fit="epoch", target_loss=1.9, inference_tokens=float(f"{LECTURE_INFERENCE:.3g}"),
                    rl_tokens=float(f"{LECTURE_RL:.3g}"),
                    rl_flops_per_param_token=LECTURE["rl_flops_per_param_token"],
                    rl_inefficiency=LECTURE["rl_inefficiency"], inference_inefficiency=LECTURE["inference_inefficiency"])
    rows = (("fit", "target_loss"), ("inference_tokens", "rl_tokens"),
            ("rl_flops_per_param_token", "rl_inefficiency", "inference_inefficiency"))

    def make_figure(self):
        return OvertrainingFigure()

    @staticmethod
    def draw_on(fig, fit, target_loss, inference_tokens, rl_tokens, rl_flops_per_param_token,
                rl_inefficiency, inference_inefficiency) -> str:
        s = Scenario(fit, target_loss, rl_tokens, rl_flops_per_param_token, rl_inefficiency, inference_inefficiency)
        here = point(s, inference_tokens)
        c = curves(fit, target_loss, rl_tokens, rl_flops_per_param_token, rl_inefficiency, inference_inefficiency)
        fig.draw(fit, target_loss, c, here, inference_tokens)
        return f"{html.escape(scaling.get_fit(fit).display)}, target loss {target_loss:g} nats/token<br>" \
               + readout(here, inference_tokens)

    def draw(self, **params) -> str:
        return self.draw_on(self.figure, **params)


# --- static twin ------------------------------------------------------------------------------
TARGETS = (1.9, 1.8, 2.0, 2.2)
RL_CHOICES = (1e14, 1e13, 0.0)
EFFICIENCIES = (("3", "a third of pre-training's"), ("1", "equal to pre-training's"))
"""The first of each menu is nearest the lecture's scenario (the target: its own model's loss under
the replication), which the twin opens on; 1.8 is that loss under Hoffmann's fit. The efficiency
menu's options read after its label, "RL and decode efficiency"."""
START_INFERENCE = LECTURE_INFERENCE
TEMPLATE = ("D_inf = {inference_tokens} T tokens: N* = {n_b} B parameters on D_pre = {d_t} T tokens "
            "({vs_rule}x the 20:1 rule, {vs_fit}x this fit's frontier); lifetime {total} x 1e24 FLOPs, "
            "{saving}% less than Chinchilla's model for the same loss ({n0_b} B on {d0_t} T)")


def view(fit, target_loss, rl_tokens, inefficiency) -> dict:
    """One view of the twin: the optimum at every slider stop, or why there is none."""
    try:
        c = curves(fit, target_loss, rl_tokens, LECTURE["rl_flops_per_param_token"], inefficiency, inefficiency)
    except ChalkError as e:
        return {"message": str(e)}
    stops = len(INFERENCE_TOKENS)

    def panel(**series):
        """A log panel over ``series`` (name -> per-stop values), its y limits on whole decades."""
        values = np.concatenate([np.atleast_1d(v) for v in series.values()])
        return {"ylim": [float(10 ** np.floor(np.log10(values.min()))), float(10 ** np.ceil(np.log10(values.max())))],
                "series": {k: twin.rounded(np.broadcast_to(v, (stops,))) for k, v in series.items()}}

    return {"panels": [panel(N=c["N"] / 1e9, N0=c["N0"] / 1e9), panel(D_pre=c["D_pre"] / 1e12, D0=c["D0"] / 1e12),
                       panel(vs_rule=c["vs_rule"], vs_fit=c["vs_fit"])],
        "readout": {"pick": [0] * stops,
                    "values": {"n_b": twin.rounded(c["N"] / 1e9), "d_t": twin.rounded(c["D_pre"] / 1e12),
                               "vs_rule": twin.rounded(c["vs_rule"]), "vs_fit": twin.rounded(c["vs_fit"]),
                               "total": twin.rounded(c["total"] / 1e24), "saving": twin.rounded(100 * c["saving"], 2)},
                    "constants": {"n0_b": twin.rounded(c["N0"] / 1e9)[0], "d0_t": twin.rounded(c["D0"] / 1e12)[0]}}}


def twin_data(fits=SHOWN_FITS, targets=TARGETS, rl_choices=RL_CHOICES, efficiencies=EFFICIENCIES) -> dict:
    """Every view of the grid, keyed ``fit|target|rl tokens|inefficiency``."""
    controls = [
        twin.select("fit", "loss fit", [(f, scaling.get_fit(f).display) for f in fits]),
        twin.select("target", "target loss (nats/token)", [(t, f"{t:g}") for t in targets]),
        twin.select("rl", "RL tokens", [(r, "none" if r == 0 else f"{r / 1e12:,.0f} T") for r in rl_choices]),
        twin.select("inefficiency", "RL and decode efficiency", efficiencies),
        twin.slider("inference_tokens", "lifetime inference tokens (trillions)", INFERENCE_TOKENS / 1e12,
                    START_INFERENCE / 1e12),
    ]
    xlabel = "lifetime inference tokens (trillions)"
    panels = [twin.chart("model size", xlabel, "N* (billion parameters)", point=("N", "point")),
              twin.chart("pre-training tokens", xlabel, "D_pre* (trillion tokens)", point=("D_pre", "point")),
              twin.chart("over-training", xlabel, "D_pre / optimal tokens", point=("vs_rule", "point"))]
    styles = {"N": twin.line_style("N* (lifetime optimum)", COLORS["N"], 2.2),
              "D_pre": twin.line_style("D_pre* (lifetime optimum)", COLORS["D_pre"], 2.2),
              "N0": twin.line_style("Chinchilla's N for the same loss", COLORS["N"], 1, "5 3"),
              "D0": twin.line_style("Chinchilla's D for the same loss", COLORS["D_pre"], 1, "5 3"),
              "vs_rule": twin.line_style("D_pre / (20 N)", COLORS["vs_rule"], 2),
              "vs_fit": twin.line_style("D_pre / D_opt(N) under the fit", COLORS["vs_fit"], 2, "2 3"),
              "point": twin.point_style("chosen inference volume", COLORS["lifetime"])}
    views = {f"{f}|{t}|{r}|{e}": view(f, t, r, float(e))
             for f in fits for t in targets for r in rl_choices for e, _ in efficiencies}
    return twin.twin_data(controls, panels, styles, legend=list(styles), templates=[TEMPLATE], views=views)


# --- the chapter's other figures ----------------------------------------------------------------


def heuristic_figure(cases=((1.0, 1.0), (1.0, 3.0)), a=1.0, b=1.0, width=4.2, height=3.4):
    """The lecture's blackboard picture, a rising plus a falling cost, once per (p, q) in ``cases``:
    the minimum against the point where the two terms are equal (a Figure; ``png`` makes bytes)."""
    fig, axes = new_figure(width * len(cases), height, len(cases))
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.16, top=0.86, wspace=0.25)
    words = []
    for ax, (p, q) in zip(axes, cases):
        x_min, x_eq = (float(f(a=a, b=b, p=p, q=q)) for f in (numeric.X_MIN, numeric.X_EQUAL))
        x = np.linspace(0.15 * x_min, 3 * x_min, 300)
        total, rising, falling = (numeric.F(a=a, b=b, p=p, q=q, x=x), numeric.RISING(a=a, p=p, x=x),
                                  numeric.FALLING(b=b, q=q, x=x))
        f_min, f_eq = (float(numeric.F(a=a, b=b, p=p, q=q, x=v)) for v in (x_min, x_eq))
        with style():
            ax.plot(x, total, color="black", lw=2, label="total f(x)")
            ax.plot(x, rising, color="#e07b00", ls="--", label=f"rising $a x^{{{p:g}}}$")
            ax.plot(x, falling, color="#1f4e9c", ls="-.", label=f"falling $b x^{{-{q:g}}}$")
            # Each line has its own dashes as well as its colour, to be told apart in greyscale.
            ax.axvline(x_min, color="#2a9d3a", lw=1.2, ls=(0, (6, 2, 1, 2, 1, 2)), label="minimum")
            ax.axvline(x_eq, color="#d62728", lw=1.2, ls=":", label="terms equal")
            ax.set_ylim(0, 3.2 * f_min)  # headroom above the curves for the legend
            ax.set_xlabel("x")
            ax.set_title(f"p = {p:.3g}, q = {q:.3g}: at the minimum rising/falling = q/p = {q / p:.3g}", fontsize=8.5)
            # On a white ground: no line runs through the legend's text.
            ax.legend(loc="upper center", ncol=2, fontsize=7, frameon=True, facecolor="white", framealpha=1,
                      edgecolor="none")
        words.append(f"with p = {p:.3g} and q = {q:.3g} the minimum is at x = {x_min:.3g}, where f = {f_min:.3g}"
                     + (", the point where the terms are equal" if np.isclose(x_min, x_eq) else
                        f"; the terms are equal at x = {x_eq:.3g}, where f = {f_eq:.3g}, "
                        f"{100 * (f_eq / f_min - 1):.3g}% above the minimum"))
    return describe(fig, f"A falling and a rising term add up to a U-shaped total: {'; '.join(words)}.")


def catalog_figure(fit="hoffmann", width=7.5, height=None):
    """Tokens per active parameter of every catalog model with published training tokens, against
    the 20:1 rule and the fit's own frontier at that size (a Figure)."""
    rows = sorted(scaling.catalog_overtraining(fit), key=lambda r: r.tokens_per_param)
    fig, (ax,) = new_figure(width, height or 0.32 * len(rows) + 1.2)
    fig.subplots_adjust(left=0.22, right=0.97, bottom=0.24, top=0.97)
    y = np.arange(len(rows))
    with style():
        ax.barh(y, [r.tokens_per_param for r in rows], color="#1f4e9c", height=0.6, label="tokens per parameter")
        ax.plot([r.tokens / r.active_params / r.vs_fit for r in rows], y, "|", ms=14, mew=2, color="#2a9d3a",
                label=f"{scaling.get_fit(fit).display}: compute-optimal at that N")
        ax.axvline(LECTURE["tokens_per_param"], color="#d62728", ls="--", lw=1.2, label="20 tokens per parameter")
        ax.set_yticks(y, [r.model for r in rows])
        ax.set_xscale("log")
        ax.set_xlabel("training tokens per active parameter")
        ax.grid(axis="y", visible=False)
        fig.legend(loc="lower center", ncol=2, frameon=False, fontsize=7)
    rule = LECTURE["tokens_per_param"]
    return describe(fig, (
        f"Bars, one per model, from {explorer.number(rows[0].tokens_per_param)} tokens per parameter "
        f"({_display(rows[0])}) to {explorer.number(rows[-1].tokens_per_param)} ({_display(rows[-1])}); "
        f"{sum(r.tokens_per_param > rule for r in rows)} of {len(rows)} models train past {rule:g} tokens per "
        f"parameter and {sum(r.vs_fit > 1 for r in rows)} past the fit's compute-optimal point for their size."))


def _display(row) -> str:
    return models.get(row.model).display


# --- the numeric forms ---------------------------------------------------------------------------
def numeric_forms() -> dict:
    """The SymPy expressions this module's figures evaluate, by the name of their plain-Python form
    in ``overtraining_numeric.py``: D on the iso-FLOP line 6 N D = C, the heuristic's total, rising
    and falling terms, its minimum and the point where its terms are equal. A function, not a
    table, because the last two are ``chalk.scaling``'s lazy solutions: building them is what the
    generated file spares an import."""
    return {"ISO_TOKENS": sp.solve(sp.Eq(C_train, scaling.pretraining_flops), D)[0], "F": scaling.heuristic_f,
            "RISING": a * x**p, "FALLING": b * x**-q, "X_MIN": scaling.heuristic_x_min,
            "X_EQUAL": scaling.heuristic_x_equal}


def numeric_source() -> str:
    """The text of ``overtraining_numeric.py``; keeping the file equal to it is a test."""
    from ..catalog.model_formulas import generated_source, symbol_names
    return generated_source("chalk.figures.overtraining", numeric_forms(), symbol_names(globals()),
                            "The closed forms Chapter 5's figures draw (``chalk.figures.overtraining.numeric_forms``), as plain Python, so that importing the figures solves and lambdifies nothing.")


if __name__ == "__main__":
    from ..catalog.model_formulas import write_numeric
    write_numeric(numeric_source(), __file__, "overtraining_numeric.py")
