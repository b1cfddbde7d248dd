"""Chapter 1's live explorer: model x chip x chips x batch x context x dtype x $/chip-hour.

A thin layer over pure functions: the curves come from ``plotting.curves``, the numbers from
``roofline.decode_point``, the picture from ``plotting.RooflineFigure``. The figure is built once
and redrawn in place to a PNG shown in an ``ipywidgets.Image`` (no browser-side plotting needed),
so an update costs a formula evaluation and a partial Agg redraw. ``Explorer.update`` runs
without a browser, which is how ``bench/bench.py`` times it.
"""
import html

import ipywidgets as widgets

from .. import roofline
from ..catalog import hardware, models
from . import plotting
from ..errors import ChalkError, DoesNotFit
from ..catalog.quoted import USD_PER_CHIP_HOUR

CHIP_COUNTS = (1, 2, 4, 8, 16, 32, 64, 72, 128, 256)
DEFAULTS = dict(model="deepseek-v3", chip="GB200", chips=72, batch=1000.0, context=4096.0,
                dtype="fp8", usd_per_chip_hour=USD_PER_CHIP_HOUR)


def _error(e: ChalkError) -> str:
    return f'<b style="color:#b00">{html.escape(str(e))}</b>'


def readout(chip, model, batch, context, dtype, chips, usd_per_chip_hour) -> str:
    """The explorer's text for one operating point (HTML), or why there is none."""
    try:
        p = roofline.decode_point(chip, model, batch, context, dtype, chips, usd_per_chip_hour)
    except ChalkError as e:  # DoesNotFit names the shortfall; others name the bad input
        return _error(e)
    bstar = roofline.balance_batch(chip, model, dtype, context)
    balance = ("past L*: memory-bound at every batch" if bstar == float("inf")
               else f"balance batch B* = {bstar:,.0f}")
    return (f"<b>{p.regime}</b> &middot; step &ge; {1e3 * p.t_step:.3g} ms &middot; "
            f"MFU &le; {p.mfu:.0%} &middot; {p.tokens_per_second:,.0f} tokens/s per replica &middot; "
            f"${p.usd_per_million_tokens:.3g} per million tokens &middot; {balance}")


class Explorer:
    """The widget. ``update(**params)`` sets any of DEFAULTS' keys and redraws."""

    def __init__(self, **params):
        self.params = dict(DEFAULTS)
        self._check(params)
        self.params.update(params)
        self.figure = plotting.RooflineFigure()
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%", max_width="960px"))
        self.text = widgets.HTML()
        self.controls = {
            "model": widgets.Dropdown(options=[(models.get(m).display, m) for m in models.names()],
                                      description="model"),
            "chip": widgets.Dropdown(options=hardware.names(), description="chip"),
            "chips": widgets.Dropdown(options=CHIP_COUNTS, description="chips"),
            "dtype": widgets.Dropdown(options=list(hardware.BYTES_PER_ELEMENT), description="weights"),
            "batch": widgets.FloatLogSlider(base=10, min=0, max=5, step=0.05, description="batch B",
                                            readout_format=",.0f", continuous_update=True),
            "context": widgets.FloatLogSlider(base=10, min=2, max=6, step=0.05, description="context L",
                                              readout_format=",.0f", continuous_update=True),
            "usd_per_chip_hour": widgets.BoundedFloatText(min=0.01, max=100, step=0.25,
                                                          description="$/chip-hour"),
        }
        self._syncing = False
        self._sync_controls()
        for name, control in self.controls.items():
            control.observe(self._on_change, names="value")
        self.update()

    def _check(self, params):
        unknown = set(params) - set(DEFAULTS)
        if unknown:
            raise ChalkError(f"unknown explorer parameter(s) {sorted(unknown)}; known: {sorted(DEFAULTS)}")

    def _sync_controls(self):
        """Show the current parameters on the controls without triggering another update."""
        self._syncing = True
        try:
            for name, control in self.controls.items():
                if control.value != self.params[name]:
                    control.value = self.params[name]
        finally:
            self._syncing = False

    def _on_change(self, change):
        if not self._syncing:
            self.update(**{name: c.value for name, c in self.controls.items()})

    def update(self, **params) -> str:
        """Set parameters, recompute and redraw; returns the readout (HTML)."""
        self._check(params)
        self.params.update(params)
        if params:
            self._sync_controls()
        p = self.params
        args = (p["chip"], p["model"], p["batch"], p["context"], p["dtype"], p["chips"],
                p["usd_per_chip_hour"])
        try:
            c = plotting.curves(p["chip"], p["model"], p["context"], p["dtype"], p["chips"],
                                p["usd_per_chip_hour"])
        except ChalkError as e:  # the weights alone do not fit, or the chip lacks the dtype
            # The full message goes in the readout; the figure only says which of the two it is.
            self.figure.message("weights do not fit in HBM" if isinstance(e, DoesNotFit)
                                else f"no {p['dtype']} rate for this chip")
            text = _error(e)
        else:
            # The description goes in the HTML readout, not the figure: text is slow to rasterise.
            self.figure.draw(c, (p["batch"], *c.at(p["batch"])))
            description = plotting.describe(p["chip"], p["model"], p["context"], p["dtype"], p["chips"])
            text = f"{html.escape(description)}<br>{readout(*args)}"
        self.image.value = self.figure.render_png()
        self.text.value = text
        return text

    def widget(self):
        c = self.controls
        rows = [widgets.HBox([c["model"], c["chip"], c["chips"]]),
                widgets.HBox([c["dtype"], c["usd_per_chip_hour"]]),
                widgets.HBox([c["batch"], c["context"]])]
        return widgets.VBox([*rows, self.text, self.image])

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget())
