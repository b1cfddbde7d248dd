// Draws every static twin (.chalk-twin) on a page from its JSON (chalk.figures.twin).
// It looks values up and draws them; every number it shows was computed in Python.
(function () {
  'use strict';
  const NS = 'http://www.w3.org/2000/svg';
  const W = 440, H = 270, M = {l: 52, r: 24, t: 22, b: 36};
  // Styles live here, once per site, scoped to the twins so the theme is untouched.
  const CSS = `
.chalk-twin{font-size:0.85rem;border:1px solid #ddd;border-radius:6px;padding:0.6rem;margin:1rem 0}
.chalk-twin-controls{display:flex;flex-wrap:wrap;gap:0.4rem 1rem;margin-bottom:0.4rem}
.chalk-twin select{font-size:0.85rem}
.chalk-twin-slider{display:flex;align-items:center;gap:0.6rem}
.chalk-twin-slider input{flex:1}
.chalk-twin-readout{font-family:var(--pst-font-family-monospace,monospace);min-height:2.6em;margin:0.3rem 0;padding:0.3rem;background:#f6f6f6;border-radius:4px}
.chalk-twin-readout.nofit{background:#fdecea}
.chalk-twin-panels{display:flex;flex-wrap:wrap;gap:0.5rem}
.chalk-twin-panels svg{flex:1 1 420px;max-width:100%;height:auto}
.chalk-twin-legend{display:flex;flex-wrap:wrap;gap:0.2rem 1rem;font-size:0.78rem}
.chalk-twin-legend span svg{margin-right:0.3em;vertical-align:middle}
.chalk-twin-legend span.area::before,.chalk-twin-legend span.point::before{content:"";display:inline-block;margin-right:0.3em;vertical-align:middle;background:var(--c)}
.chalk-twin-legend span.area::before{width:1.4em;height:0.8em;opacity:0.5}
.chalk-twin-legend span.point::before{width:0.7em;height:0.7em;border-radius:50%;border:1px solid #000}
.chalk-twin select:focus-visible,.chalk-twin input:focus-visible{outline:3px solid #0072B2;outline-offset:2px}
.chalk-twin-panels:focus-visible{outline:3px solid #0072B2;outline-offset:2px}
@media (max-width:720px){
.chalk-twin-panels{flex-wrap:nowrap;overflow-x:auto}
.chalk-twin-panels svg{flex:0 0 var(--w);width:var(--w);max-width:none}
.chalk-twin-slider{flex-wrap:wrap}
.chalk-twin-slider input{flex:1 1 100%;min-height:44px}
.chalk-twin select{min-height:44px;max-width:100%}
}
`;
  // On a narrow screen a panel keeps its drawn size (its smallest text 9 px, as a figure's) and
  // the row of panels scrolls sideways; the CSS above reads that size from --w. The row takes a
  // tab stop only while it scrolls, so the keyboard can scroll it.
  const NARROW = window.matchMedia('(max-width: 720px)');

  const fmt = (v) => {
    if (v === null || v === undefined) return '–';
    if (typeof v === 'string') return v;
    return Math.abs(v) >= 1e4 ? Math.round(v).toLocaleString('en-US')
                              : v.toLocaleString('en-US', {maximumSignificantDigits: 3});
  };

  function el(tag, attrs, parent, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) if (attrs[k] !== undefined && attrs[k] !== '') e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    parent.appendChild(e);
    return e;
  }

  // A scale maps data to pixels on a log or linear axis; ticks at decades or round steps.
  function scale(kind, lim, p0, p1) {
    const f = kind === 'log' ? Math.log10 : (v) => v;
    const a = f(lim[0]), b = f(lim[1]);
    const map = (v) => p0 + (f(v) - a) / (b - a) * (p1 - p0);
    let ticks = [];
    if (kind === 'log') {
      const decades = [], shown = (t) => f(t) >= a - 1e-9 && f(t) <= b + 1e-9;
      for (let e = Math.floor(a + 1e-9); e <= b + 1e-9; e++) decades.push(e);
      ticks = decades.map((e) => 10 ** e).filter(shown);
      // An axis spanning less than two decades would show one or two labels: add 2 and 5 of each.
      if (ticks.length < 3) ticks = decades.flatMap((e) => [1, 2, 5].map((m) => m * 10 ** e)).filter(shown);
    } else {
      const step = 10 ** Math.floor(Math.log10((b - a) / 4 || 1));
      const n = (b - a) / step > 8 ? 2 * step : step;
      for (let v = Math.ceil(a / n) * n; v <= b + 1e-9; v += n) ticks.push(v);
    }
    return {map, ticks};
  }

  // A title wider than its panel is set smaller, down to 10 px (the axes' size), to fit it.
  function title(svg, width, text) {
    const t = el('text', {x: width / 2, y: 14, 'text-anchor': 'middle', 'font-size': 12}, svg, text);
    const drawn = t.getBBox().width;  // 0 where the panel is not laid out (hidden): left at 12 px
    if (drawn > width - 4) t.setAttribute('font-size', Math.max(10, Math.floor(12 * (width - 4) / drawn * 10) / 10));
  }

  function chart(svg, panel, v, shared, D, i, xs, uid) {
    const sy = scale(panel.yscale, v.ylim, H - M.b, M.t);
    title(svg, W, panel.title);
    // The plot starts right of the widest y label ("1,000,000" is 52 px at 10 px) and of the axis
    // title beside it (20 px), so that no label runs off the panel's left edge.
    const yLabels = sy.ticks.map((t) => el('text', {y: sy.map(t) + 3, 'text-anchor': 'end', 'font-size': 10}, svg, fmt(t)));
    const L = Math.max(M.l, 24 + Math.ceil(Math.max(0, ...yLabels.map((e) => e.getBBox().width))));
    yLabels.forEach((e) => e.setAttribute('x', L - 4));
    const sx = scale(panel.xscale, [xs[0], xs[xs.length - 1]], L, W - M.r);
    for (const t of sx.ticks) {
      el('line', {x1: sx.map(t), x2: sx.map(t), y1: M.t, y2: H - M.b, stroke: '#e5e5e5'}, svg);
      // A label at either end of the axis is anchored inward so that the panel does not clip it.
      const x = sx.map(t), edge = x > W - M.r - 16 ? 'end' : x < L + 16 ? 'start' : 'middle';
      el('text', {x: edge === 'end' ? Math.min(x + 8, W - 2) : edge === 'start' ? x - 8 : x, y: H - M.b + 13,
                  'text-anchor': edge, 'font-size': 10}, svg, fmt(t));
    }
    for (const t of sy.ticks) {
      el('line', {x1: L, x2: W - M.r, y1: sy.map(t), y2: sy.map(t), stroke: '#e5e5e5'}, svg);
    }
    el('text', {x: (L + W - M.r) / 2, y: H - 4, 'text-anchor': 'middle', 'font-size': 10}, svg, panel.xlabel);
    el('text', {x: 11, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', 'font-size': 10,
                transform: `rotate(-90 11 ${(M.t + H - M.b) / 2})`}, svg, panel.ylabel);
    // Curves leave the plot area at the axis limits: clip them to it.
    const clip = el('clipPath', {id: uid}, el('defs', {}, svg));
    el('rect', {x: L, y: M.t, width: W - L - M.r, height: H - M.t - M.b}, clip);
    const plot = el('g', {'clip-path': `url(#${uid})`}, svg);
    const xAt = (x) => Math.min(W - M.r, Math.max(L, sx.map(x)));
    for (const r of v.regions || shared.regions || []) {
      const s = D.styles[r.style];
      const x0 = r.x0 === null ? L : xAt(r.x0), x1 = r.x1 === null ? W - M.r : xAt(r.x1);
      if (x1 <= x0) continue;
      el('rect', {x: x0, y: M.t, width: x1 - x0, height: H - M.t - M.b, fill: s.color, opacity: s.opacity}, plot);
      el('text', {x: x1 - 4, y: H - M.b - 6, 'text-anchor': 'end', 'font-size': 9, fill: '#555'}, svg, s.label);
    }
    for (const m of v.vlines || shared.vlines || []) {
      if (m.x === null) continue;
      const s = D.styles[m.style];
      el('line', {x1: sx.map(m.x), x2: sx.map(m.x), y1: M.t, y2: H - M.b, stroke: s.color,
                  'stroke-width': s.width, 'stroke-dasharray': s.dash || '2 3'}, plot);
    }
    for (const name in v.series) {
      const s = D.styles[name], pts = [];
      v.series[name].forEach((y, j) => { if (y !== null) pts.push(`${sx.map(xs[j]).toFixed(1)},${sy.map(y).toFixed(1)}`); });
      el('polyline', {points: pts.join(' '), fill: 'none', stroke: s.color, 'stroke-width': s.width,
                      'stroke-dasharray': s.dash}, plot);
    }
    const p = panel.point;
    if (p && v.series[p.series][i] !== null) {
      // Outside the clip group, so a marker at the first or last stop is drawn whole.
      el('circle', {class: 'chalk-twin-point', cx: sx.map(xs[i]), cy: sy.map(v.series[p.series][i]), r: 5,
                    fill: D.styles[p.style].color, stroke: 'black'}, svg);
    }
  }

  // What a panel shows, in words for a screen reader (its aria-label): the chart's axes, each
  // series from its first value to its last, and the marked point; from the view's own numbers.
  function chartWords(panel, v, D, i, xs) {
    const words = [`${panel.title}: ${panel.ylabel} against ${panel.xlabel}`];
    for (const name in v.series) {
      const ys = v.series[name], js = ys.map((y, j) => (y === null ? -1 : j)).filter((j) => j >= 0);
      if (!js.length) continue;
      const a = js[0], b = js[js.length - 1];
      words.push(`${D.styles[name].label}: ${fmt(ys[a])} at ${fmt(xs[a])}, ${fmt(ys[b])} at ${fmt(xs[b])}`);
    }
    const p = panel.point;
    if (p && v.series[p.series][i] !== null) {
      words.push(`marked: ${fmt(v.series[p.series][i])} at ${panel.xlabel} ${fmt(xs[i])}`);
    }
    return words.join('; ');
  }

  function shapes(svg, panel, v, i) {
    title(svg, panel.width, panel.title);
    const frame = v.frames.length > 1 ? v.frames[i] : v.frames[0];
    for (const s of frame) {
      if (s.shape === 'rect') {
        const r = el('rect', {x: s.x, y: s.y, width: s.w, height: s.h, fill: s.fill, stroke: '#333', 'stroke-width': 0.5}, svg);
        if (s.label) el('title', {}, r, s.label);
      } else if (s.shape === 'line') {
        el('line', {x1: s.x1, y1: s.y1, x2: s.x2, y2: s.y2, stroke: s.stroke, 'stroke-dasharray': s.dash}, svg);
      } else if (s.shape === 'text') {
        el('text', {x: s.x, y: s.y, 'text-anchor': s.anchor, 'font-size': s.size}, svg, s.text);
      }
    }
  }

  function fill(template, fields) {
    return template.replace(/\{([^}]+)\}/g, (_, name) => fmt(fields(name)));
  }

  function setup(root, n) {
    const D = JSON.parse(root.querySelector('.chalk-twin-data').textContent);
    const selects = D.controls.filter((c) => c.kind === 'select');
    const slider = D.controls.find((c) => c.kind === 'slider');
    const pick = (name) => root.querySelector('.chalk-twin-' + name);
    const readout = pick('readout');
    const svgs = Array.from(root.querySelectorAll('svg.chalk-twin-panel'));
    const xs = slider ? slider.values : [0];

    // The view a reader chose, in words: each control's label and its value as shown.
    function chosen(i) {
      return D.controls.map((c) => {
        if (c.kind === 'slider') return `${c.label} ${fmt(xs[i])}`;
        const e = pick(c.name);
        return `${c.label} ${e.options[e.selectedIndex].text}`;
      }).join(', ');
    }

    function render() {
      const v = D.views[selects.map((c) => pick(c.name).value).join('|')];
      const i = slider ? +pick(slider.name).value : 0;
      // A screen reader says the slider's value, not the index of its stop.
      if (slider) pick(slider.name).setAttribute('aria-valuetext', fmt(xs[i]));
      svgs.forEach((svg, k) => {
        svg.textContent = '';
        const panel = D.panels[k];
        svg.setAttribute('viewBox', `0 0 ${panel.width || W} ${panel.height || H}`);
        svg.style.setProperty('--w', `${panel.width || W}px`);
        if (v.message) {  // the same boxes, saying why there is nothing to draw
          el('text', {x: (panel.width || W) / 2, y: (panel.height || H) / 2, 'text-anchor': 'middle',
                      'font-size': 12, fill: '#b00'}, svg, 'nothing to draw: see the message above');
          svg.setAttribute('aria-label', `${panel.title}: nothing to draw, ${v.message}`);
        } else if (panel.kind === 'chart') {
          chart(svg, panel, v.panels[k], v, D, i, xs, `chalk-twin-${n}-clip-${k}`);
          svg.setAttribute('aria-label', chartWords(panel, v.panels[k], D, i, xs));
        } else {
          shapes(svg, panel, v.panels[k], i);
          svg.setAttribute('aria-label', `${panel.title}, for ${chosen(i)}; its numbers are in the readout`);
        }
      });
      readout.classList.toggle('nofit', !!v.message);
      if (v.message) { readout.textContent = v.message; return; }
      const r = v.readout, template = D.templates[r.pick[i]];
      readout.classList.toggle('nofit', template.startsWith('!'));
      readout.textContent = fill(template.replace(/^!/, ''), (name) => {
        if (slider && name === slider.name) return xs[i];
        if (r.values && name in r.values) return r.values[name][i];
        if (r.constants && name in r.constants) return r.constants[name];
        const dot = name.match(/^(\d+)\.(.+)$/);
        if (dot) return v.panels[+dot[1]].series[dot[2]][i];
        return D.constants[name];
      });
    }

    const legend = pick('legend');
    for (const name of D.legend) {
      const s = D.styles[name], span = document.createElement('span');
      span.className = s.kind;
      span.style.setProperty('--c', s.color);
      if (s.kind === 'line') {  // drawn with its dashes: the lines differ by more than colour
        const key = el('svg', {width: 24, height: 8, 'aria-hidden': 'true'}, span);
        el('line', {x1: 0, y1: 4, x2: 24, y2: 4, stroke: s.color, 'stroke-width': Math.max(s.width, 1.5),
                    'stroke-dasharray': s.dash}, key);
      }
      span.appendChild(document.createTextNode(s.label));
      legend.appendChild(span);
    }
    root.querySelectorAll('select, input').forEach((e) => {
      e.addEventListener('input', render);
      e.addEventListener('change', render);
    });
    render();
    const row = root.querySelector('.chalk-twin-panels');
    const scrollable = () => {
      if (row.scrollWidth > row.clientWidth) {
        row.tabIndex = 0;
        row.setAttribute('role', 'group');
        row.setAttribute('aria-label', 'figure panels, scrolled sideways');
      } else {
        row.removeAttribute('tabindex');
      }
    };
    NARROW.addEventListener('change', scrollable);
    window.addEventListener('resize', scrollable);
    scrollable();
  }

  function init() {
    const twins = document.querySelectorAll('.chalk-twin');
    if (!twins.length) return;
    const style = document.createElement('style');
    style.textContent = CSS;
    document.head.appendChild(style);
    twins.forEach(setup);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
