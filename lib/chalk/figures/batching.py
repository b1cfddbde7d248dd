"""Chapter 1's live explorer and its static twin: model x chip x chips x batch x context x dtype x
price, as graphs A and B of ``plotting.RooflineFigure`` and ``roofline.decode_point``'s numbers."""
import html
import math
from functools import lru_cache

from .. import roofline
from ..catalog import hardware, models
from ..catalog.quoted import USD_PER_CHIP_HOUR
from ..errors import ChalkError, DoesNotFit
from . import explorer, plotting, twin
from .explorer import Dropdown, Number, catalog_options, error_html, log_slider, number

CHIP_COUNTS = (1, 2, 4, 8, 16, 32, 64, 72, 128, 256)

GRAPHS_AB = dict(chip="H100-SXM", model="llama-3-70b", dtype="bf16", chips=8, context=1024)
"""The replica of Chapter 1's graphs A and B (Llama 3 70B in BF16 on one 8-GPU H100 server), on
which its deeper page also runs the serving loop."""

SESSION = [
    {"batch": 10}, {"batch": 30}, {"batch": 100}, {"batch": 300}, {"batch": 3000},
    {"context": 1000}, {"context": 8000}, {"context": 32000}, {"batch": 20000}, {"batch": 500},
    {"dtype": "bf16"}, {"batch": 800}, {"context": 2000}, {"usd_per_chip_hour": 3.5},
    {"chip": "B200", "chips": 8}, {"batch": 50}, {"batch": 5000}, {"context": 16000},
    {"model": "llama-3-70b"}, {"batch": 200}, {"batch": 2000}, {"context": 500},
    {"chip": "H100-SXM"}, {"dtype": "fp8"}, {"batch": 64}, {"batch": 640}, {"context": 4000},
    {"model": "mixtral-8x7b"}, {"batch": 5}, {"batch": 12000},
]
"""A reader's session for the benchmark: one control moved at a time, batch and context most often."""


@lru_cache(maxsize=64)
def _curves(chip, model, context, dtype, chips, usd_per_chip_hour) -> plotting.Curves:
    """One view's curves, kept: moving the batch slider re-evaluates nothing."""
    return plotting.curves(chip, model, context, dtype, chips, usd_per_chip_hour)


def readout(chip, model, batch, context, dtype, chips, usd_per_chip_hour, balance_batch) -> str:
    """The explorer's text for one operating point (HTML), or why there is none."""
    try:
        p = roofline.decode_point(chip, model, batch, context, dtype, chips, usd_per_chip_hour)
    except ChalkError as e:  # DoesNotFit names the shortfall; others name the bad input
        return error_html(str(e))
    balance = ("past L*: memory-bound at every batch" if balance_batch == math.inf
               else f"balance batch B* = {balance_batch:,.0f}")
    return (f"B = {number(batch)}: <b>{p.regime}</b> &middot; step &ge; {1e3 * p.t_step:.3g} ms &middot; "
            f"MFU &le; {number(float(f'{100 * p.mfu:.2g}'))}% &middot; {p.tokens_per_second:,.0f} tokens/s per replica &middot; "
            f"${p.usd_per_million_tokens:.3g} per million tokens &middot; {balance}")


class Explorer(explorer.Explorer):
    """Chapter 1's explorer. ``update(**params)`` sets any of ``defaults``' keys and redraws."""
    controls = (
        Dropdown("model", "model", catalog_options(models.names())),
        Dropdown("chip", "chip", catalog_options(hardware.names())),
        Dropdown("chips", "chips", tuple((str(n), n) for n in CHIP_COUNTS)),
        Dropdown("dtype", "weights", catalog_options(hardware.BYTES_PER_ELEMENT)),
        Number("usd_per_chip_hour", "$/chip-hour", 0.01, 100, 0.25),
        log_slider("batch", "batch B", 1, 1e5),
        log_slider("context", "context L", 100, 1e6, valid=(0, 1e6)),
    )
    defaults = dict(model="deepseek-v3", chip="GB200", chips=72, batch=1000.0, context=4096.0,
                    dtype="fp8", usd_per_chip_hour=USD_PER_CHIP_HOUR)
    rows = (("model", "chip", "chips"), ("dtype", "usd_per_chip_hour"), ("batch", "context"))

    def make_figure(self):
        return plotting.RooflineFigure()

    def draw(self, model, chip, chips, dtype, batch, context, usd_per_chip_hour) -> str:
        c = _curves(chip, model, context, dtype, chips, usd_per_chip_hour)
        self.figure.draw(c, (batch, *c.at(batch)))
        # The description goes in the HTML readout, not the figure: text is slow to rasterise.
        description = plotting.describe(chip, model, context, dtype, chips)
        return (f"{html.escape(description)}<br>"
                f"{readout(chip, model, batch, context, dtype, chips, usd_per_chip_hour, c.balance_batch)}")

    def explain(self, error, params):
        if not isinstance(error, DoesNotFit):
            return str(error), "nothing to draw: see the message above"
        return (weights_do_not_fit(error, params["chip"], params["chips"],
                                   f"for batch {number(params['batch'])} x context {number(params['context'])}"),
                "weights do not fit in HBM")


def weights_do_not_fit(error: DoesNotFit, chip, chips, workload: str) -> str:
    """Why a view cannot run when the weights alone overflow HBM, in the reader's own terms (a
    batch is drawn, in the grey region, when only its KV cache does not fit)."""
    return (f"does not fit: the weights alone need {error.needed / 1e9:,.0f} GB and {chips} x {chip} "
            f"hold {error.available / 1e9:,.0f} GB usable (short by {error.shortfall / 1e9:,.0f} GB) "
            f"before any KV cache {workload}")


# --- static twin ------------------------------------------------------------------------------
MODELS = ("deepseek-v3", "llama-3-70b", "mixtral-8x7b", "llama-3.1-8b")
HARDWARE = (("GB200", 72), ("B200", 8), ("H200", 8), ("H100-SXM", 8), ("A100-80GB", 8))
DTYPES = ("fp8", "bf16")
CONTEXTS = (1024, 8192, 32768)
BATCHES = plotting.BATCHES[::2]
"""The twin slider's stops: 1 to 100,000 sequences, 10 per decade."""
START_BATCH = 1000

_OK = "batch B = {batch}: step ≥ {0.t_step} ms, %s, MFU ≤ {mfu}%%, {tokens_per_s} tokens/s per " \
      "replica, USD {usd_per_mtok} per million tokens at USD {usd_per_chip_hour}/chip-hour"
TEMPLATES = ([_OK % r + "; B* = {balance_batch}" for r in plotting.REGIMES]
             + [_OK % r + " (past L*: no batch is compute-bound)" for r in plotting.REGIMES]
             + ["!batch B = {batch}: does not fit in HBM, short by {short_gb} GB of the {usable_gb} GB "
                "usable (the chips hold {hbm_gb} GB, {kept_free} percent kept free)"])
"""Readouts: one per regime with B* finite, one per regime past L*, and 'does not fit' last."""
NOFIT = len(TEMPLATES) - 1


def _readout(chip, model, context, dtype, chips, usd_per_chip_hour, past_l_star) -> dict:
    """Per slider stop: what ``roofline.decode_point`` says, or how far the batch is from fitting."""
    pick, out = [], {"mfu": [], "tokens_per_s": [], "usd_per_mtok": [], "short_gb": []}
    for batch in BATCHES:
        try:
            p = roofline.decode_point(chip, model, batch, context, dtype, chips, usd_per_chip_hour)
        except DoesNotFit as e:
            pick.append(NOFIT)
            values = (math.nan, math.nan, math.nan, e.shortfall / 1e9)
        else:
            pick.append(plotting.REGIMES.index(p.regime) + (len(plotting.REGIMES) if past_l_star else 0))
            values = (100 * p.mfu, p.tokens_per_second, p.usd_per_million_tokens, math.nan)
        for key, v in zip(out, values):
            out[key].append(v)
    values = {key: twin.rounded(v, 2 if key == "mfu" else twin.DIGITS) for key, v in out.items()}
    return {"pick": pick, "values": {k: v for k, v in values.items() if any(x is not None for x in v)}}


def view(model, chip, chips, dtype, context, usd_per_chip_hour=USD_PER_CHIP_HOUR) -> dict:
    """One view's curves and readouts, or ``{"message": ...}`` when it cannot run at all."""
    try:
        c = plotting.curves(chip, model, context, dtype, chips, usd_per_chip_hour, batches=BATCHES)
    except ChalkError as e:  # the weights alone do not fit, or the chip lacks the dtype
        why = (weights_do_not_fit(e, chip, chips, f"of context {number(context)}")
               if isinstance(e, DoesNotFit) else str(e))
        return {"message": f"{plotting.describe(chip, model, context, dtype, chips)}: {why}"}
    ms, usd = plotting.plotted(c)
    past_l_star = c.balance_batch == math.inf
    readout_ = _readout(chip, model, context, dtype, chips, usd_per_chip_hour, past_l_star)
    hbm = chips * hardware.get(chip).hbm_capacity
    readout_["constants"] = {"balance_batch": twin.rounded(c.balance_batch)[0], "hbm_gb": twin.rounded(hbm / 1e9)[0],
                             # the shortfall is measured against what decode_point may fill
                             "usable_gb": twin.rounded(hbm * (1 - roofline.HEADROOM) / 1e9)[0],
                             "kept_free": twin.rounded(100 * roofline.HEADROOM)[0]}
    return {"panels": [{"ylim": list(lim), "series": {t: twin.rounded(ys[t]) for t in plotting.TIMES}}
                       for ys, lim in zip((ms, usd), plotting.y_limits(ms, usd))],
            "regions": [{"x0": twin.rounded(c.max_batch)[0], "x1": None, "style": "nofit"}]
            if math.isfinite(c.max_batch) else [],
            "vlines": [{"x": twin.rounded(c.balance_batch)[0], "style": "balance"}],
            "readout": readout_}


def twin_data(model_names=MODELS, systems=HARDWARE, dtypes=DTYPES, contexts=CONTEXTS,
              usd_per_chip_hour=USD_PER_CHIP_HOUR) -> dict:
    """Every view of the grid, keyed ``model|chip|chips|dtype|context``."""
    controls = [
        twin.select("model", "model", [(m, models.get(m).display) for m in model_names]),
        twin.select("hardware", "chips", [(f"{chip}|{n}", f"{n} x {chip}") for chip, n in systems]),
        twin.select("dtype", "weights", [(d, d) for d in dtypes]),
        twin.select("context", "context (tokens)", [(c, f"{c:,}") for c in contexts]),
        twin.slider("batch", "batch B (sequences per step)", BATCHES, START_BATCH),
    ]
    xlabel = "batch B (sequences per step)"
    point = ("t_step", "point")
    panels = [twin.chart("A: step time (lower bound)", xlabel, "time per decode step (ms)", point=point),
              twin.chart("B: cost per token", xlabel, "USD per million output tokens", point=point)]
    styles = {t: twin.line_style(plotting.LABELS[t], plotting.COLORS[t], 3 if t == "t_step" else 1.4,
                                 plotting.TWIN_DASHES[t]) for t in plotting.TIMES}
    styles.update(balance=twin.line_style("balance batch B*", plotting.COLORS["balance"], 1.2, "2 3"),
                  nofit=twin.area_style(plotting.NOFIT, plotting.COLORS["nofit"]),
                  point=twin.point_style("operating point", plotting.COLORS["point"]))
    views = {f"{m}|{chip}|{n}|{d}|{ctx}": view(m, chip, n, d, ctx, usd_per_chip_hour)
             for m in model_names for chip, n in systems for d in dtypes for ctx in contexts}
    return twin.twin_data(controls, panels, styles, legend=list(styles), templates=TEMPLATES,
                          views=views, constants={"usd_per_chip_hour": usd_per_chip_hour})


# --- what Chapter 1 and its deeper page both print ----------------------------------------------
def show(lhs: str, expr, rel: str = "=") -> None:
    """Display ``lhs rel expr`` as LaTeX printed from the SymPy expression itself."""
    import sympy as sp
    from IPython.display import Math, display
    display(Math(f"{lhs} {rel} {sp.latex(expr)}"))


def table(header, rows) -> None:
    """Display a Markdown table: both renderers (the site's and JupyterLab's) draw it as a table."""
    from IPython.display import Markdown, display
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    display(Markdown("\n".join(lines)))


def lstar_text(x: float) -> str:
    """A balance context as the chapter prints it: three significant digits, or "none"."""
    from ..teaching.corrections import sig  # imported here: the teaching package imports the figures
    return "none" if x == math.inf else sig(x, 3)
