"""What every chapter's figures share: the course style, PNG output and a layered fast redraw.

Figures are plain ``matplotlib.figure.Figure`` objects on an Agg canvas, not pyplot figures:
nothing is displayed behind the caller's back and an explorer can redraw one figure in place.
"""
import io
import struct
import zlib
from collections import OrderedDict

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

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


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def fast_png(rgba) -> bytes:
    """A PNG of an (h, w, 4) RGBA pixel buffer, built for speed: no row filters and zlib's
    fastest level. A plot is mostly flat colour, so this is about as small as a tuned encoder's
    output at a fraction of its time; the explorer makes one per update and throws it away."""
    pixels = np.asarray(rgba)
    height, width = pixels.shape[:2]
    rows = np.zeros((height, 1 + 4 * width), np.uint8)  # each row: filter byte 0, then RGBA
    rows[:, 1:] = pixels.reshape(height, 4 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows, 1)) + _chunk(b"IEND", b""))


class Layers:
    """Redraw a figure in three layers, each cached while it does not change.

    * the background (axes, ticks, labels, legend), cached per ``background_key`` (for example
      the axis limits): ticks and text are most of Agg's time. Only the ``keyed`` artists (the
      axes whose limits make the key) are drawn for a new key, over a frame drawn once;
    * the view (curves, shaded regions, labels of one parameter set), cached for the last
      ``view_key``: moving a slider along a curve leaves it alone;
    * the moving artists (a marker), drawn on every render.

    Text in the view and moving layers is pasted from cached pixels (``_stamp``).
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
            if isinstance(a, Text) and a.get_text():
                self._stamp(a)
            else:
                self.fig.draw_artist(a)

    def _stamp(self, t: Text):
        """Draw a text label from a cache of its pixels: rasterising glyphs costs far more than
        pasting them, and a label's words repeat from view to view while its place changes."""
        canvas = self.fig.canvas
        key = (t.get_text(), t.get_fontsize(), t.get_color(), t.get_ha(), t.get_va(), t.get_rotation())
        x, y = t.get_transform().transform(t.get_position())
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
