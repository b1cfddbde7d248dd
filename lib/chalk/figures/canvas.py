"""What every chapter's figures share: the course style, PNG output, alternative text and a
layered fast redraw.

Figures are plain ``matplotlib.figure.Figure`` objects on an Agg canvas, not pyplot figures:
nothing is displayed behind the caller's back and an explorer can redraw one figure in place.

Alternative text, for readers who cannot see the figure
--------------------------------------------------------
A function that draws a figure also says what it shows, from the numbers it drew::

    fig = ...                                   # draw it
    return describe(fig, f"the bubble falls from {hi:.0%} at m = 1 to {lo:.0%} at m = 64")

and a notebook shows it with ``picture``, never with ``IPython.display.Image``::

    from chalk.figures.canvas import picture
    display(picture(pipelining.bubble_figure()))  # or picture(...) as the cell's last expression

``alt_text(fig)`` is what a screen reader reads: an outline read from the figure itself (each
panel's title, its y label against its x label, the series its legend names) followed by what
``describe`` said. ``picture`` returns a ``Picture``, which gives Jupyter both an ``<img>`` with that
alt text (``text/html``, which the website and JupyterLab render) and the plain PNG (for any other
front end). The image travels inside the page as a data URI, in a 256-colour palette: about a third
of the bytes of Agg's full-colour PNG, so the page is lighter than with myst-nb's separate PNG file,
which carries no alt text but its file name. (myst-nb's other route, the cell metadata
``mystnb: image: alt:``, is a fixed string typed into the notebook, not computed from the data, and
JupyterLab ignores it.)
"""
import base64
import html
import io
import re
import struct
import zlib
from collections import OrderedDict

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.text import Text
from PIL import Image

from ..errors import ChalkError

STYLE = {"font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9, "legend.fontsize": 8,
         "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True,
         "grid.alpha": 0.25, "lines.linewidth": 1.4}
DPI = 100
"""Modest resolution: the chapter pages, images included, must stay light."""


def style():
    """The course's matplotlib settings, for a ``with`` block around artist creation."""
    return matplotlib.rc_context(STYLE)


def new_figure(width: float, height: float, ncols: int = 1):
    """A figure in the course style on its own Agg canvas, with ``ncols`` axes side by side."""
    fig = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(fig)
    with style():
        axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def png(fig) -> bytes:
    """The figure as PNG bytes, drawn by Agg at its own size and the course's resolution."""
    buf = io.BytesIO()
    fig.canvas.print_png(buf)
    return buf.getvalue()


def palette_png(fig) -> bytes:
    """The figure as a PNG in a 256-colour palette: flat plot colours and their anti-aliased edges
    survive, at about a third of ``png``'s bytes (what a page carries inline)."""
    rgb = Image.open(io.BytesIO(png(fig))).convert("RGB")
    buf = io.BytesIO()
    rgb.quantize(256, method=Image.Quantize.MEDIANCUT).save(buf, "PNG", optimize=True)
    return buf.getvalue()


# --- alternative text ---------------------------------------------------------------------------
def describe(fig, text: str):
    """Give ``fig`` the words that say what it shows (trends, crossings, the numbers that matter),
    computed from the data it was drawn from; returns ``fig``. ``alt_text`` puts them after the
    figure's outline."""
    words = " ".join(str(text).split())
    if not words:
        raise ChalkError("describe: text must say what the figure shows, got an empty string")
    fig.chalk_description = words
    return fig


def _clean(label) -> str:
    """A matplotlib label as words: no mathtext dollars or backslashes, no private "_child" names."""
    text = str(label or "")
    if text.startswith("_"):
        return ""
    text = re.sub(r"\\(?:text|mathrm|mathit)\{([^}]*)\}", r"\1", text)  # N_\text{act} -> N_act
    text = re.sub(r"\^?\\star", "*", text)                                  # B^\star -> B*
    if text.count("$") % 2 == 0:  # mathtext comes in pairs of dollars; a lone one is money
        text = text.replace("$", "")
    return " ".join(text.replace("\\", "").split())


def outline(fig) -> str:
    """What a figure plots, read from its own artists: per panel, the title, the y label against
    the x label, and the series the legends name (a colour bar reads as its label's scale)."""
    panels = []
    for ax in fig.axes:
        if hasattr(ax, "_colorbar"):
            panels.append(f"colour scale: {_clean(ax.get_ylabel() or ax.get_xlabel())}")
            continue
        title, x, y = _clean(ax.get_title()), _clean(ax.get_xlabel()), _clean(ax.get_ylabel())
        part = ": ".join(filter(None, [title, " against ".join(filter(None, [y, x]))]))
        if part:
            panels.append(part)
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    series = [_clean(t.get_text()) for lg in legends if lg is not None for t in lg.get_texts()]
    series = list(dict.fromkeys(filter(None, series)))  # panels sharing a legend name it once
    return ". ".join(panels + ([f"Series: {'; '.join(series)}"] if series else []))


def alt_text(fig) -> str:
    """The figure's alternative text: its outline, then what ``describe`` said of it."""
    said = getattr(fig, "chalk_description", "")
    text = ". ".join(filter(None, [outline(fig), said]))
    if not text:
        raise ChalkError("alt_text: the figure has no title, labels or legend and no describe(): "
                         "say what it shows with canvas.describe(fig, text)")
    return text


class Picture:
    """A figure as a notebook shows it: an ``<img>`` with alt text for HTML front ends (the site,
    JupyterLab), the PNG for the others."""

    def __init__(self, png_bytes: bytes, alt: str, width: int, height: int):
        self.png, self.alt, self.width, self.height = png_bytes, alt, width, height

    def _repr_png_(self):
        return self.png

    def _repr_html_(self) -> str:
        data = base64.b64encode(self.png).decode("ascii")
        return (f'<img class="chalk-figure" src="data:image/png;base64,{data}" alt="{html.escape(self.alt)}" '
                f'width="{self.width}" height="{self.height}" style="max-width:100%;height:auto">')


def picture(fig, alt: str | None = None) -> Picture:
    """``fig`` ready for display with its alternative text (``alt_text(fig)`` unless ``alt`` is given)."""
    width, height = fig.canvas.get_width_height()
    return Picture(palette_png(fig), alt or alt_text(fig), width, height)


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def fast_png(rgba) -> bytes:
    """A PNG of an (h, w, 4) RGBA pixel buffer, built for speed: no row filters and zlib's
    fastest level. A plot is mostly flat colour, so this is about as small as a tuned encoder's
    output at a fraction of its time; the explorer makes one per update and throws it away. (RGB
    would compress a millisecond faster, but dropping alpha copies the buffer byte by byte for
    three.)"""
    pixels = np.asarray(rgba)
    height, width = pixels.shape[:2]
    rows = np.zeros((height, 1 + 4 * width), np.uint8)  # each row: filter byte 0, then RGBA
    rows[:, 1:] = pixels.reshape(height, 4 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows, 1)) + _chunk(b"IEND", b""))


def _legend_key(legend: Legend) -> tuple:
    """What a legend's pixels depend on, besides its place: its words and each entry's style."""
    def look(h):
        colour = h.get_color() if isinstance(h, Line2D) else h.get_facecolor()
        return (type(h).__name__, str(colour), str(h.get_linestyle()), str(getattr(h, "get_marker", str)()))
    return ("legend", tuple(t.get_text() for t in legend.get_texts()), tuple(map(look, legend.legend_handles)))


class Layers:
    """Redraw a figure in three layers, each cached while it does not change.

    * the background (axes, ticks, labels, legend), cached per ``background_key`` (for example
      the axis limits): ticks and text are most of Agg's time. Only the ``keyed`` artists (the
      axes whose limits make the key) are drawn for a new key, over a frame drawn once;
    * the view (curves, shaded regions, labels of one parameter set), cached for the last
      ``view_key``: moving a slider along a curve leaves it alone;
    * the moving artists (a marker), drawn on every render.

    Text and legends in the view and moving layers are pasted from cached pixels (``_stamp``); a
    legend must stay at one place (a fixed ``loc``, not "best").
    """

    def __init__(self, fig, view_artists, moving_artists, keyed_artists=(), backgrounds: int = 32):
        self.fig, self.view, self.moving = fig, list(view_artists), list(moving_artists)
        self.keyed, self._frame = list(keyed_artists), None
        self._backgrounds = OrderedDict()
        self._backgrounds_kept = backgrounds
        self._view_key, self._view_pixels = None, None
        self._stamps = {}

    def _draw(self, artists):
        for a in artists:
            if not a.get_visible():
                continue
            if isinstance(a, Text):
                if not a.get_text():  # an empty label of this view: nothing to paint
                    continue
                key = (a.get_text(), a.get_fontsize(), a.get_color(), a.get_ha(), a.get_va(), a.get_rotation())
                self._stamp(a, key, a.get_transform().transform(a.get_position()))
            elif isinstance(a, Legend):
                self._stamp(a, _legend_key(a), (0, 0))
            else:
                self.fig.draw_artist(a)

    def _stamp(self, t, key, anchor):
        """Draw a text label or a legend from a cache of its pixels, placed relative to ``anchor``
        (display pixels): rasterising glyphs costs far more than pasting them, and a label's words
        repeat from view to view while its place changes."""
        canvas = self.fig.canvas
        x, y = anchor
        pixels = np.asarray(canvas.buffer_rgba())
        height = pixels.shape[0]
        if key not in self._stamps:
            saved = canvas.copy_from_bbox(self.fig.bbox)
            canvas.get_renderer().clear()  # transparent: the label's pixels come out alone
            self.fig.draw_artist(t)
            box = t.get_window_extent()
            top, left = int(height - box.y1) - 2, int(box.x0) - 2
            bottom, right = int(height - box.y0) + 3, int(box.x1) + 3
            patch = pixels[max(top, 0):bottom, max(left, 0):right].astype(np.float32)
            self._stamps[key] = (patch, max(left, 0) - round(x), max(top, 0) - round(height - y))
            canvas.restore_region(saved)
        patch, dx, dy = self._stamps[key]
        top, left = round(height - y) + dy, round(x) + dx
        region = pixels[max(top, 0):top + patch.shape[0], max(left, 0):left + patch.shape[1]]
        src = patch[max(-top, 0):max(-top, 0) + region.shape[0], max(-left, 0):max(-left, 0) + region.shape[1]]
        alpha = src[..., 3:] / 255  # Agg's buffer holds straight (not premultiplied) alpha
        region[..., :3] = src[..., :3] * alpha + region[..., :3] * (1 - alpha)

    def _background(self, key):
        canvas = self.fig.canvas
        if key in self._backgrounds:
            self._backgrounds.move_to_end(key)
            return self._backgrounds[key]
        if self._frame is None:
            shown = [(a, a.get_visible()) for a in self.keyed + self.view + self.moving]
            for a, _ in shown:
                a.set_visible(False)
            canvas.draw()
            for a, visible in shown:
                a.set_visible(visible)
            self._frame = canvas.copy_from_bbox(self.fig.bbox)
        canvas.restore_region(self._frame)
        for a in self.keyed:
            self.fig.draw_artist(a)
        self._backgrounds[key] = canvas.copy_from_bbox(self.fig.bbox)
        if len(self._backgrounds) > self._backgrounds_kept:
            self._backgrounds.popitem(last=False)
        return self._backgrounds[key]

    def render(self, background_key, view_key) -> bytes:
        """PNG of the current state; ``view_key`` must change whenever a view artist does."""
        canvas = self.fig.canvas
        key = (background_key, view_key)
        if key != self._view_key:
            canvas.restore_region(self._background(background_key))
            self._draw(self.view)
            self._view_key, self._view_pixels = key, canvas.copy_from_bbox(self.fig.bbox)
        else:
            canvas.restore_region(self._view_pixels)
        self._draw(self.moving)
        return fast_png(canvas.buffer_rgba())
