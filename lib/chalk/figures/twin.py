"""The static twin of Chapter 1's widget: the same two graphs in plain HTML, SVG and JavaScript.

A website reader has no kernel, so every number the twin shows is computed here, in Python, from
``plotting.curves`` and ``roofline.decode_point`` (the widget's own sources) for a grid of views,
rounded and embedded as JSON. The script only looks values up and draws them; it implements no
formula. Element classes are stable for the browser test: container ``chalk-twin``, batch slider
``chalk-twin-batch``, readout ``chalk-twin-readout``.
"""
import json
import math

import numpy as np

from .. import roofline
from ..catalog import hardware, models
from . import plotting
from ..errors import ChalkError, DoesNotFit
from ..catalog.quoted import USD_PER_CHIP_HOUR

MODELS = ("deepseek-v3", "llama-3-70b", "mixtral-8x7b", "llama-3.1-8b")
HARDWARE = (("GB200", 72), ("B200", 8), ("H200", 8), ("H100-SXM", 8), ("A100-80GB", 8))
DTYPES = ("fp8", "bf16")
CONTEXTS = (1024, 8192, 32768)
BATCHES = np.logspace(0, 5, 51)
"""The slider's stops: 1 to 100,000 sequences, 10 per decade."""
START_BATCH = 1000
DIGITS = 3
"""Significant digits kept in the JSON: plenty for a readout, and the page stays light."""


def _round(values, digits=DIGITS):
    """Floats to ``digits`` significant digits; NaN and inf (not JSON) become None."""
    return [float(f"{v:.{digits}g}") if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def _readout(chip, model, context, dtype, chips, usd_per_chip_hour):
    """Per slider stop: what ``roofline.decode_point`` says, or how far the batch is from fitting."""
    out = {"regime": [], "mfu": [], "tokens_per_s": [], "usd_per_mtok": [], "short_gb": []}
    for batch in BATCHES:
        try:
            p = roofline.decode_point(chip, model, batch, context, dtype, chips, usd_per_chip_hour)
        except DoesNotFit as e:
            values = (-1, math.nan, math.nan, math.nan, e.shortfall / 1e9)
        else:
            values = (plotting.REGIMES.index(p.regime), p.mfu, p.tokens_per_second,
                      p.usd_per_million_tokens, 0.0)
        for key, v in zip(out, values):
            out[key].append(v)
    return {key: v if key == "regime" else _round(v) for key, v in out.items()}


def view(model, chip, chips, dtype, context, usd_per_chip_hour=USD_PER_CHIP_HOUR) -> dict:
    """One view's curves and readouts, or ``{"message": ...}`` when it cannot run at all."""
    try:
        c = plotting.curves(chip, model, context, dtype, chips, usd_per_chip_hour, batches=BATCHES)
    except ChalkError as e:  # the weights alone do not fit, or the chip lacks the dtype
        return {"message": str(e)}
    ms, usd = plotting.plotted(c)
    return {
        "time": {t: _round(ms[t]) for t in plotting.TIMES},
        "cost": {t: _round(usd[t]) for t in plotting.TIMES},
        "ylim": [list(lim) for lim in plotting.y_limits(ms, usd)],
        "balance_batch": _round([c.balance_batch])[0],
        "max_batch": _round([c.max_batch])[0],
        "hbm_gb": _round([chips * hardware.get(chip).hbm_capacity / 1e9])[0],
        **_readout(chip, model, context, dtype, chips, usd_per_chip_hour),
    }


def twin_data(model_names=MODELS, systems=HARDWARE, dtypes=DTYPES, contexts=CONTEXTS,
              usd_per_chip_hour=USD_PER_CHIP_HOUR) -> dict:
    """Every view of the grid, keyed ``model|chip|chips|dtype|context``."""
    return {
        "batch": _round(BATCHES),
        "start": int(np.argmin(abs(BATCHES - START_BATCH))),
        "usd_per_chip_hour": usd_per_chip_hour,
        "series": list(plotting.TIMES),
        "labels": plotting.LABELS,
        "colors": plotting.COLORS,
        "regimes": list(plotting.REGIMES),
        "models": [[m, models.get(m).display] for m in model_names],
        "hardware": [[f"{chip}|{n}", f"{n} x {chip}"] for chip, n in systems],
        "dtypes": list(dtypes),
        "contexts": list(contexts),
        "views": {f"{m}|{chip}|{n}|{d}|{ctx}": view(m, chip, n, d, ctx, usd_per_chip_hour)
                  for m in model_names for chip, n in systems for d in dtypes for ctx in contexts},
    }


def _select(name, options, label):
    opts = "".join(f'<option value="{v}">{text}</option>' for v, text in options)
    return f'<label>{label} <select class="chalk-twin-{name}">{opts}</select></label>'


def twin_html(data: dict | None = None, element_id: str = "chalk-twin-01") -> str:
    """The twin as one self-contained HTML fragment (styles, data and script inline)."""
    data = twin_data() if data is None else data
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    controls = "".join([
        _select("model", data["models"], "model"),
        _select("hardware", data["hardware"], "chips"),
        _select("dtype", [(d, d) for d in data["dtypes"]], "weights"),
        _select("context", [(c, f"{c:,}") for c in data["contexts"]], "context (tokens)"),
    ])
    n = len(data["batch"]) - 1
    return (
        f'<div class="chalk-twin" id="{element_id}">'
        f'<style>{_CSS}</style>'
        f'<div class="chalk-twin-controls">{controls}</div>'
        f'<label class="chalk-twin-slider">batch B (sequences per step) '
        f'<input type="range" class="chalk-twin-batch" min="0" max="{n}" step="1" value="{data["start"]}"></label>'
        f'<div class="chalk-twin-readout" aria-live="polite"></div>'
        f'<div class="chalk-twin-figures"><svg class="chalk-twin-time" role="img" aria-label="step time against batch"></svg>'
        f'<svg class="chalk-twin-cost" role="img" aria-label="cost per token against batch"></svg></div>'
        f'<div class="chalk-twin-legend"></div>'
        f'<script type="application/json" class="chalk-twin-data">{payload}</script>'
        f'<script>{_JS}</script>'
        f'</div>'
    )


# Scoped to the container so the page's theme is untouched.
_CSS = """
.chalk-twin{font-size:0.85rem;border:1px solid #ddd;border-radius:6px;padding:0.6rem;margin:1rem 0}
.chalk-twin-controls{display:flex;flex-wrap:wrap;gap:0.4rem 1rem;margin-bottom:0.4rem}
.chalk-twin select{font-size:0.85rem}
.chalk-twin-slider{display:flex;align-items:center;gap:0.6rem}
.chalk-twin-batch{flex:1}
.chalk-twin-readout{font-family:var(--pst-font-family-monospace,monospace);min-height:2.6em;margin:0.3rem 0;padding:0.3rem;background:#f6f6f6;border-radius:4px}
.chalk-twin-readout.nofit{background:#fdecea}
.chalk-twin-figures{display:flex;flex-wrap:wrap;gap:0.5rem}
.chalk-twin-figures svg{flex:1 1 420px;max-width:100%;height:auto}
.chalk-twin-legend{display:flex;flex-wrap:wrap;gap:0.2rem 1rem;font-size:0.78rem}
.chalk-twin-legend span::before{content:"";display:inline-block;width:1.4em;height:0.25em;margin-right:0.3em;vertical-align:middle;background:var(--c)}
"""

# Looks values up in the JSON and draws them; every number it shows was computed in Python.
_JS = r"""
(function () {
  const root = document.currentScript.closest('.chalk-twin');
  const D = JSON.parse(root.querySelector('.chalk-twin-data').textContent);
  const pick = (name) => root.querySelector('.chalk-twin-' + name);
  const slider = pick('batch'), readout = pick('readout');
  const NS = 'http://www.w3.org/2000/svg', W = 440, H = 270, M = {l: 52, r: 24, t: 22, b: 36};
  const X0 = Math.log10(D.batch[0]), X1 = Math.log10(D.batch[D.batch.length - 1]);
  const fmt = (v, d = 3) => v >= 1e4 ? Math.round(v).toLocaleString('en-US')
                                      : Number(v.toPrecision(d)).toLocaleString('en-US', {maximumSignificantDigits: d});
  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  const sx = (v) => M.l + (Math.log10(v) - X0) / (X1 - X0) * (W - M.l - M.r);
  const sy = (v, lim) => H - M.b - (Math.log10(v) - Math.log10(lim[0])) /
                         (Math.log10(lim[1]) - Math.log10(lim[0])) * (H - M.t - M.b);
  function axes(svg, lim, title, ylabel) {
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    el('text', {x: W / 2, y: 14, 'text-anchor': 'middle', 'font-size': 12}, svg, title);
    for (let e = Math.round(X0); e <= X1; e++) {
      const x = sx(10 ** e);
      el('line', {x1: x, x2: x, y1: M.t, y2: H - M.b, stroke: '#e5e5e5'}, svg);
      el('text', {x: x, y: H - M.b + 13, 'text-anchor': 'middle', 'font-size': 10}, svg, fmt(10 ** e));
    }
    for (let e = Math.round(Math.log10(lim[0])); e <= Math.log10(lim[1]) + 1e-9; e++) {
      const y = sy(10 ** e, lim);
      el('line', {x1: M.l, x2: W - M.r, y1: y, y2: y, stroke: '#e5e5e5'}, svg);
      el('text', {x: M.l - 4, y: y + 3, 'text-anchor': 'end', 'font-size': 10}, svg, fmt(10 ** e));
    }
    el('text', {x: (M.l + W - M.r) / 2, y: H - 4, 'text-anchor': 'middle', 'font-size': 10}, svg,
       'batch B (sequences per step)');
    el('text', {x: 11, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', 'font-size': 10,
                transform: `rotate(-90 11 ${(M.t + H - M.b) / 2})`}, svg, ylabel);
  }
  function graph(svg, v, ys, lim, i, title, ylabel) {
    svg.textContent = '';
    axes(svg, lim, title, ylabel);
    // Curves leave the plot area at the decade limits: clip them to it.
    const clipId = `${root.id}-${svg.classList[0]}-clip`;
    el('rect', {x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b},
       el('clipPath', {id: clipId}, el('defs', {}, svg)));
    const plot = el('g', {'clip-path': `url(#${clipId})`}, svg);
    if (v.max_batch !== null && v.max_batch < D.batch[D.batch.length - 1]) {
      const x = Math.max(M.l, sx(v.max_batch));
      el('rect', {x: x, y: M.t, width: W - M.r - x, height: H - M.t - M.b, fill: D.colors.nofit, opacity: 0.3}, plot);
      el('text', {x: W - M.r - 4, y: H - M.b - 6, 'text-anchor': 'end', 'font-size': 9, fill: '#555'}, svg,
         'does not fit in HBM');
    }
    if (v.balance_batch !== null) {
      const x = sx(v.balance_batch);
      el('line', {x1: x, x2: x, y1: M.t, y2: H - M.b, stroke: D.colors.balance, 'stroke-dasharray': '2 3'}, plot);
    }
    for (const s of D.series) {
      const pts = [];
      ys[s].forEach((y, j) => { if (y !== null) pts.push(`${sx(D.batch[j]).toFixed(1)},${sy(y, lim).toFixed(1)}`); });
      el('polyline', {points: pts.join(' '), fill: 'none', stroke: D.colors[s],
                      'stroke-width': s === 't_step' ? 3 : 1.4,
                      'stroke-dasharray': (s === 't_step' || s === 't_compute') ? '' : '5 3'}, plot);
    }
    // Outside the clip group, so a marker at the last batch is drawn whole.
    el('circle', {class: 'chalk-twin-point', cx: sx(D.batch[i]), cy: sy(ys.t_step[i], lim), r: 5,
                  fill: D.colors.point, stroke: 'black'}, svg);
  }
  function render() {
    const key = ['model', 'hardware', 'dtype', 'context'].map((n) => pick(n).value).join('|');
    const v = D.views[key], i = +slider.value, b = D.batch[i];
    const svgs = [pick('time'), pick('cost')];
    readout.classList.remove('nofit');
    if (v.message) {
      svgs.forEach((s) => { s.textContent = ''; });
      readout.classList.add('nofit');
      readout.textContent = v.message;
      return;
    }
    graph(svgs[0], v, v.time, v.ylim[0], i, 'A: step time (lower bound)', 'time per decode step (ms)');
    graph(svgs[1], v, v.cost, v.ylim[1], i, 'B: cost per token', '$ per million output tokens');
    const head = `B = ${fmt(b)} sequences: `;
    if (v.regime[i] < 0) {
      readout.classList.add('nofit');
      readout.textContent = head + `does not fit in HBM, short by ${fmt(v.short_gb[i])} GB ` +
        `(the chips hold ${fmt(v.hbm_gb)} GB)`;
      return;
    }
    readout.textContent = head + `step ≥ ${fmt(v.time.t_step[i])} ms, ${D.regimes[v.regime[i]]}, ` +
      `MFU ≤ ${fmt(100 * v.mfu[i], 2)}%, ${fmt(v.tokens_per_s[i])} tokens/s per replica, ` +
      `$${fmt(v.usd_per_mtok[i])} per million tokens at $${D.usd_per_chip_hour}/chip-hour` +
      (v.balance_batch === null ? ' (past L*: no batch is compute-bound)' : `; B* = ${fmt(v.balance_batch)}`);
  }
  const legend = pick('legend');
  for (const s of D.series) {
    const span = document.createElement('span');
    span.style.setProperty('--c', D.colors[s]);
    span.textContent = D.labels[s];
    legend.appendChild(span);
  }
  [['balance', 'balance batch B*'], ['nofit', 'does not fit in HBM'], ['point', 'operating point']].forEach(([c, t]) => {
    const span = document.createElement('span');
    span.style.setProperty('--c', D.colors[c]);
    span.textContent = t;
    legend.appendChild(span);
  });
  root.querySelectorAll('select, input').forEach((e) => e.addEventListener('input', render));
  root.querySelectorAll('select').forEach((e) => e.addEventListener('change', render));
  render();
})();
"""
