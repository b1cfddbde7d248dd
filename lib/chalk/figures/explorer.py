"""The base of every chapter's live explorer (ipywidgets): controls declared as data, one
``update`` that validates, draws and shows errors in the widget, one redraw path.

A chapter declares its controls and writes ``draw``; the base builds the widgets, keeps them and
the parameters in step, checks every value with chalk's errors and turns a ChalkError into a
message shown in the widget, in the same layout, rather than a traceback. ``update`` runs without
a browser, which is how ``bench/bench.py`` times it.

Sliders are ``SelectionSlider`` widgets over fixed stops, plus the exact value the caller gave
when it is not a stop: the slider then shows the value asked for (1,024, not the nearest stop)
until the reader moves it.
"""
import bisect
import html
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import numpy as np
from traitlets import TraitError

from ..errors import ChalkError, in_range, lookup
from .canvas import outline

# ipywidgets is imported where a widget is built: a kernel that only draws a chapter's static
# figures (a graded problem set) never loads it.

LABEL_STYLE = {"description_width": "initial"}
"""Every control's description at its full width: ipywidgets' default (about 80 px) cut "batch
(sequences)" to "batch (se…" in JupyterLab."""


def number(value) -> str:
    """A parameter as a reader typed it: thousands separators, no invented decimals."""
    value = float(value)
    if value.is_integer() or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


@cache
def catalog_names() -> MappingProxyType:
    """{catalog id: the name a menu shows}: models, systems, price entries and loss fits by their
    catalog display names, chips by vendor and name, number formats in capitals."""
    from ..catalog import hardware, models, prices, systems
    from ..catalog.overtraining import FITS

    names = {d: d.upper() for d in hardware.BYTES_PER_ELEMENT}
    names |= {n: f"{c.vendor} {n}" for n, c in hardware.catalog_chips().items()}
    names |= {n: s.display for n, s in systems.catalog_systems().items()}
    names |= {n: m.display for n, m in models.catalog_models().items()}
    names |= {n: p.model for n, p in prices.catalog_prices().items()}
    names |= {n: f.display for n, f in FITS.items()}
    return MappingProxyType(names)


def catalog_options(ids) -> tuple:
    """(display name, id) pairs for a menu of catalog entries, the one place menus name them."""
    names = catalog_names()
    unknown = [i for i in ids if i not in names]
    if unknown:
        raise ChalkError(f"catalog_options: {unknown} are not catalog ids")
    return tuple((names[i], i) for i in ids)


@dataclass(frozen=True)
class Dropdown:
    name: str
    label: str
    options: tuple
    """(label, value) pairs; ``catalog_options`` makes them for catalog entries."""

    def widget(self):
        import ipywidgets as widgets
        return widgets.Dropdown(options=list(self.options), description=self.label, style=LABEL_STYLE)

    def check(self, value):
        return lookup(self.label, value, {v: v for _, v in self.options}, param=self.name)

    def show(self, widget, value):
        widget.value = value


@dataclass(frozen=True)
class Slider:
    """A slider over ``stops``; any value in ``valid`` is accepted and shown exactly."""
    name: str
    label: str
    stops: tuple
    valid: tuple
    """(low, high): the range ``check`` accepts, which may reach past the stops."""

    def widget(self):
        import ipywidgets as widgets
        return widgets.SelectionSlider(options=self._options(self.stops), description=self.label,
                                       continuous_update=True, style=LABEL_STYLE,
                                       layout=widgets.Layout(width="440px"))

    @staticmethod
    def _options(values):
        return [(number(v), v) for v in values]

    def check(self, value):
        in_range(self.name, value, *self.valid)
        return float(value)

    def show(self, widget, value):
        stops = list(self.stops)
        if value not in stops:
            bisect.insort(stops, value)
        if len(widget.options) != len(stops) or value not in [v for _, v in widget.options]:
            widget.options = self._options(stops)
        widget.value = value


def log_slider(name, label, low, high, per_decade=20, valid=None) -> Slider:
    """Stops evenly spaced in log from ``low`` to ``high``; ``valid`` defaults to that range."""
    decades = np.log10(high) - np.log10(low)
    stops = np.logspace(np.log10(low), np.log10(high), round(decades * per_decade) + 1)
    return Slider(name, label, tuple(float(f"{s:.3g}") for s in stops), valid or (low, high))


def linear_slider(name, label, low, high, step, valid=None) -> Slider:
    """Stops every ``step`` from ``low`` to ``high``, rounded so that a value typed in the prose
    (1.9) is the stop itself and not a neighbour of 1.9000000000000001."""
    stops = np.arange(low, high + step / 2, step)
    return Slider(name, label, tuple(float(f"{s:.12g}") for s in stops), valid or (low, high))


@dataclass(frozen=True)
class Number:
    """A number box; values outside (low, high) are refused with a message, not clamped."""
    name: str
    label: str
    low: float
    high: float
    step: float

    def widget(self):
        import ipywidgets as widgets
        return widgets.FloatText(step=self.step, description=self.label, style=LABEL_STYLE)

    def check(self, value):
        in_range(self.name, value, self.low, self.high)
        return float(value)

    def show(self, widget, value):
        widget.value = value


_SCREEN_READER_ONLY = ("position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
                       "clip:rect(0,0,0,0);white-space:nowrap;border:0")
"""Read aloud, not drawn: the usual visually-hidden pattern, inline because a notebook has no stylesheet of ours."""


def error_html(message: str) -> str:
    return f'<b style="color:#b00">{html.escape(message)}</b>'


class Explorer:
    """Base class. A chapter sets ``controls`` (a tuple of the control types above), ``defaults``
    (a value per control), ``rows`` (control names per row of the layout) and implements:

    * ``make_figure()``: an object with ``render() -> PNG bytes`` and ``message(text)``;
    * ``draw(**params) -> str``: move the figure to ``params`` and return the readout (HTML);
      raise a ChalkError if the parameters cannot run;
    * optionally ``explain(error, params) -> (readout message, short figure message)``.
    """
    controls: tuple = ()
    defaults: dict = {}
    rows: tuple = ()

    def __init__(self, **params):
        self._check_names(params)
        self.params = {**self.defaults, **params}
        self.figure = self.make_figure()
        import ipywidgets as widgets
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%", max_width="960px"))
        self.picture_words = self._image_words()
        self.caption = widgets.HTML(f'<span style="{_SCREEN_READER_ONLY}">{html.escape(self.picture_words or "")}</span>')
        self.text = widgets.HTML()
        self.widgets = {c.name: c.widget() for c in self.controls}
        self._drawn = None
        self._syncing = False
        self._show_controls()
        for w in self.widgets.values():
            w.observe(self._on_change, names="value")
        self.update()

    def _image_words(self) -> str | None:
        """What the picture shows, for a screen reader: ipywidgets' Image has no alt text, and a
        tooltip on it breaks its view in JupyterLab (ipywidgets 8.1), so the words sit in a visually
        hidden caption beside it. The axes come from the figure; the numbers of the view are in the
        readout just above it."""
        fig = getattr(self.figure, "fig", None)
        if fig is None:
            return None
        return f"{outline(fig)}. The readout above the picture gives the numbers of the view shown."

    def _check_names(self, params):
        """An unknown name is a mistake in code, not a reader's choice: raise it."""
        known = [c.name for c in self.controls]
        unknown = set(params) - set(known)
        if unknown:
            raise ChalkError(f"unknown explorer parameter(s) {sorted(unknown)}; known: {sorted(known)}")

    def _show_controls(self):
        """Put the parameters on the controls without starting another update."""
        self._syncing = True
        try:
            for c in self.controls:
                w, value = self.widgets[c.name], self.params[c.name]
                if w.value != value:
                    try:
                        c.show(w, value)
                    except (TraitError, TypeError):  # a value the widget cannot hold: update() says why
                        pass
        finally:
            self._syncing = False

    def _on_change(self, change):
        if not self._syncing:
            self.update(**{name: w.value for name, w in self.widgets.items()})

    def update(self, **params) -> str:
        """Set parameters, recompute and redraw; returns the readout (HTML)."""
        self._check_names(params)
        self.params.update(params)
        if params:
            self._show_controls()
        state = tuple(self.params[c.name] for c in self.controls)
        if state == self._drawn:  # nothing moved: the picture and the text stand
            return self.text.value
        try:
            checked = {c.name: c.check(self.params[c.name]) for c in self.controls}
            if checked != self.params:  # "CIRCLE" means "circle": show the catalog's spelling
                self.params.update(checked)
                self._show_controls()
            text = self.draw(**checked)
        except ChalkError as e:
            long, short = self.explain(e, self.params)
            self.figure.message(short)
            text = error_html(long)
        self.image.value = self.figure.render()
        self.text.value = text
        self._drawn = state
        return text

    def explain(self, error: ChalkError, params: dict) -> tuple[str, str]:
        """(readout message, figure message) for an error; the figure's is kept short."""
        return str(error), str(error).split(":")[0]

    def make_figure(self):
        raise NotImplementedError

    def draw(self, **params) -> str:
        raise NotImplementedError

    def widget(self):
        import ipywidgets as widgets
        rows = [widgets.HBox([self.widgets[name] for name in row]) for row in self.rows]
        return widgets.VBox([*rows, self.text, self.image, *([self.caption] if self.picture_words else [])])

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget())
