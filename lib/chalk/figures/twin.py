"""The static twin of any chapter's explorer: precomputed views as JSON, drawn by one shared script.

A website reader has no kernel, so a chapter computes every number its twin shows in Python, from
the functions its live explorer uses, for a grid of views (one per combination of its dropdowns,
each with one value per stop of its slider). ``twin_html`` writes that JSON and the markup; the
script ``static/chalk-twin.js``, shipped once with the site (``_config.yml``: html_static_path,
html_js_files), looks values up and draws them. It implements no formula.

A view is ``{"message": why}`` or ``{"panels": [...], "readout": {...}}`` with one entry per panel:

* chart panels: ``{"ylim", "series": {style: [y per x]}}``; the chart declaration's ``point``
  sits on its series at the slider's stop, so a chart's x values are the slider's stops. Shaded
  ``"regions": [{"x0", "x1", "style"}]`` (None: the axis' end) and ``"vlines": [{"x", "style"}]``
  go in the panel, or in the view for every chart panel at once;
* shape panels (a Gantt chart, a rack): ``{"frames": [[shape, ...] per slider stop]}`` (or one
  frame for every stop), shapes being ``rect(...)``, ``line(...)``, ``text(...)`` in the panel's
  own coordinates.

The readout is ``{"pick": [template index per stop], "values": {field: [per stop]}, "constants":
{field: value}}``; templates name fields as ``{field}``, ``{<slider name>}`` or ``{<panel>.<series>}``,
and a template starting with ``!`` is shown as a warning (a point that does not fit).
Stable classes for the browser test: ``chalk-twin``, ``chalk-twin-<control name>``,
``chalk-twin-readout``, ``chalk-twin-panel``.

For a reader who cannot see the drawing, the script keeps words beside it, all from the same view:
the readout is a live region (``aria-live``) that a screen reader speaks after each move; each panel's
``aria-label`` gives its axes, every series from its first value to its last and the marked point;
the slider announces its value (``aria-valuetext``), not its stop's index. Every control is a native
``<select>`` or range input inside its ``<label>``, so the keyboard reaches and moves it. Line styles
carry a dash pattern wherever two series share a chart, and the legend draws it.
"""
import html
import itertools
import json
import math
from pathlib import Path

import numpy as np

from ..errors import ChalkError

SCRIPT = Path(__file__).with_name("static") / "chalk-twin.js"
DIGITS = 3
"""Significant digits kept in the JSON: plenty for a readout, and the page stays light."""


def _short(v: float, digits: int):
    v = float(f"{v:.{digits}g}")
    return int(v) if v.is_integer() else v  # 1200, not 1200.0: the page carries thousands


def rounded(values, digits=DIGITS):
    """Floats to ``digits`` significant digits; NaN and inf (not JSON) become None."""
    return [_short(v, digits) if math.isfinite(v) else None
            for v in np.atleast_1d(np.asarray(values, dtype=float))]


def select(name: str, label: str, options, start=None) -> dict:
    """A dropdown; ``options`` are (value, label) pairs. Views are keyed by the selected values. It
    opens at the option whose value is ``start`` (the first when None), as the code beside it does."""
    options = [[str(v), t] for v, t in options]
    if start is not None and str(start) not in [v for v, _ in options]:
        raise ChalkError(f"select {name!r}: start {start!r} is not one of its values {[v for v, _ in options]}")
    return {"kind": "select", "name": name, "label": label, "options": options,
            **({"start": str(start)} if start is not None else {})}


def slider(name: str, label: str, values, start) -> dict:
    """A slider over ``values``, starting at the stop nearest ``start``."""
    values = rounded(values)
    return {"kind": "slider", "name": name, "label": label, "values": values,
            "start": int(np.argmin(np.abs(np.asarray(values) - start)))}


def chart(title: str, xlabel: str, ylabel: str, xscale="log", yscale="log", point=None) -> dict:
    """A chart; ``point`` = (series, style) marks the series at the slider's stop."""
    return {"kind": "chart", "title": title, "xlabel": xlabel, "ylabel": ylabel, "xscale": xscale,
            "yscale": yscale, **({"point": {"series": point[0], "style": point[1]}} if point else {})}


def shapes(title: str, width: int, height: int) -> dict:
    return {"kind": "shapes", "title": title, "width": width, "height": height}


def line_style(label: str, color: str, width=1.4, dash="") -> dict:
    return {"kind": "line", "label": label, "color": color, "width": width, "dash": dash}


def area_style(label: str, color: str, opacity=0.3) -> dict:
    return {"kind": "area", "label": label, "color": color, "opacity": opacity}


def point_style(label: str, color: str) -> dict:
    return {"kind": "point", "label": label, "color": color}


def rect(x, y, w, h, fill, label=None) -> dict:
    return {"shape": "rect", "x": x, "y": y, "w": w, "h": h, "fill": fill, **({"label": label} if label else {})}


def line(x1, y1, x2, y2, stroke="#333", dash="") -> dict:
    return {"shape": "line", "x1": x1, "y1": y1, "x2": x2, "y2": y2, "stroke": stroke, "dash": dash}


def text(x, y, content: str, anchor="start", size=10) -> dict:
    return {"shape": "text", "x": x, "y": y, "text": content, "anchor": anchor, "size": size}


def twin_data(controls, panels, styles, legend, templates, views, constants=None) -> dict:
    """Check a chapter's twin and assemble its JSON: one view per combination of the dropdowns'
    options, and one entry per slider stop in every per-stop list."""
    selects = [c for c in controls if c["kind"] == "select"]
    sliders = [c for c in controls if c["kind"] == "slider"]
    if len(sliders) > 1:
        raise ChalkError(f"controls: a twin has at most one slider, got {len(sliders)}")
    stops = len(sliders[0]["values"]) if sliders else 1
    keys = {"|".join(combo) for combo in itertools.product(*[[v for v, _ in s["options"]] for s in selects])}
    if set(views) != keys:
        wrong = sorted(set(views) ^ keys)[:3]
        raise ChalkError(f"views: need one view per combination of {[s['name'] for s in selects]}, "
                         f"joined by '|'; missing or unknown: {wrong}")
    for key, view in views.items():
        if "message" in view:
            continue
        if len(view["panels"]) != len(panels):
            raise ChalkError(f"views[{key!r}]: {len(view['panels'])} panels, the twin declares {len(panels)}")
        per_stop = [*view["readout"].get("values", {}).values(), view["readout"]["pick"]]
        per_stop += [ys for p in view["panels"] for ys in p.get("series", {}).values()]
        per_stop += [p["frames"] for p in view["panels"] if len(p.get("frames", [])) > 1]
        if any(len(v) != stops for v in per_stop):
            raise ChalkError(f"views[{key!r}]: every per-stop list needs {stops} entries, one per slider stop")
    data = {"controls": list(controls), "panels": list(panels), "styles": dict(styles),
            "legend": list(legend), "templates": list(templates), "constants": dict(constants or {}),
            "views": dict(views)}
    if "$" in json.dumps(data):  # MathJax would typeset the text between two dollar signs
        raise ChalkError("twin text: write USD instead of '$' (MathJax reads $...$ as mathematics)")
    return data


def _control(c: dict) -> str:
    label = html.escape(c["label"])
    if c["kind"] == "select":
        options = "".join(f'<option value="{html.escape(v)}"{" selected" if v == c.get("start") else ""}>'
                          f'{html.escape(t)}</option>' for v, t in c["options"])
        return f'<label>{label} <select class="chalk-twin-{c["name"]}">{options}</select></label>'
    return (f'<label class="chalk-twin-slider">{label} <input type="range" class="chalk-twin-{c["name"]}" '
            f'min="0" max="{len(c["values"]) - 1}" step="1" value="{c["start"]}"></label>')


# Inside JupyterLab the shared script is not loaded and the live explorer is there: show a note
# instead of an empty twin. On the website no element has the JupyterLab class.
_LAB_CSS = (".chalk-twin-note{display:none}.jp-OutputArea-output .chalk-twin-body{display:none}"
            ".jp-OutputArea-output .chalk-twin-note{display:block}")


def twin_html(data: dict) -> str:
    """The twin's markup and JSON; the drawing comes from the site's shared script."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    controls = [c for c in data["controls"] if c["kind"] == "select"]
    sliders = [c for c in data["controls"] if c["kind"] == "slider"]
    panels = "".join(f'<svg class="chalk-twin-panel" role="img" aria-label="{html.escape(p["title"])}"></svg>'
                     for p in data["panels"])
    return (
        f'<div class="chalk-twin"><style>{_LAB_CSS}</style>'
        f'<p class="chalk-twin-note">The static version of this explorer is on the course website.</p>'
        f'<div class="chalk-twin-body">'
        f'<div class="chalk-twin-controls">{"".join(map(_control, controls))}</div>'
        f'{"".join(map(_control, sliders))}'
        f'<div class="chalk-twin-readout" aria-live="polite" aria-atomic="true"></div>'
        f'<div class="chalk-twin-panels">{panels}</div>'
        f'<div class="chalk-twin-legend"></div></div>'
        f'<script type="application/json" class="chalk-twin-data">{payload}</script>'
        f'</div>'
    )
