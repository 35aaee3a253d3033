/* draw.js — the page's pictures: heat maps on canvas (value on hover, the numbers
 * as text beside them), line charts, bar charts and the tape's layered graph in
 * SVG. Layout and colours only: every number drawn here came from the
 * WebAssembly module; nothing is computed but positions and colours.
 */
'use strict';

const qkvDraw = (() => {
  const NS = 'http://www.w3.org/2000/svg';

  /* The CLI prints a matrix row by row, each entry "%10.4f": the same text here,
   * so a reader (and the test) can hold the page against `qkv explain`. printf
   * keeps the sign of -0 and rounds an exact tie to even; toFixed does neither.
   * A float is exactly halfway between two 4-decimal numbers only when it is a
   * multiple of 1/32 (2e4 = 2^5 * 625), so that is the only case handled here. */
  function fmt(v) {
    if (v === null || v === undefined) return '';
    const x = Number(v); /* the module writes "-Infinity", "Infinity", "NaN" as strings */
    if (Number.isNaN(x)) return 'nan';
    if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
    const neg = x < 0 || Object.is(x, -0), y = Math.abs(x) * 1e4, f = Math.floor(y);
    if (!Number.isInteger(Math.abs(x) * 32) || y - f !== 0.5) { const s = Math.abs(x).toFixed(4); return (neg ? '-' : '') + s; }
    const n = f % 2 === 0 ? f : f + 1;
    return (neg ? '-' : '') + Math.floor(n / 1e4) + '.' + String(n % 1e4).padStart(4, '0');
  }
  const num = Number;
  function matrixText(rows, cols, data, offset) {
    const lines = [];
    for (let i = 0; i < rows; i++) {
      let line = '';
      for (let j = 0; j < cols; j++) line += fmt(data[offset + i * cols + j]).padStart(10);
      lines.push(line);
    }
    return lines.join('\n');
  }

  /* Diverging blue-white-red around 0 for signed data; white-to-orange for data
   * that is never negative (weights, probabilities); grey for -inf (masked). */
  function colour(v, lo, hi) {
    if (!isFinite(v)) return v < 0 ? '#555' : '#000';
    if (lo >= 0) {
      const t = hi > 0 ? Math.min(1, v / hi) : 0;
      return `rgb(${255 - 20 * t | 0},${255 - 140 * t | 0},${255 - 235 * t | 0})`;
    }
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    const t = Math.max(-1, Math.min(1, v / m));
    if (t >= 0) return `rgb(255,${255 - 190 * t | 0},${255 - 200 * t | 0})`;
    return `rgb(${255 + 200 * t | 0},${255 + 140 * t | 0},255)`;
  }

  let tip = null;
  function tooltip() {
    if (!tip) { tip = document.createElement('div'); tip.className = 'tip'; document.body.appendChild(tip); }
    return tip;
  }

  /* heatmap(parent, {name, shape, data, rowLabels, colLabels, note, onCell, cellSize})
   * draws one figure per leading index (a [H,T,T] tensor: one map per head). */
  function heatmap(parent, t) {
    const shape = t.shape.length ? t.shape : [1];
    const cols = shape[shape.length - 1];
    const rows = shape.length > 1 ? shape[shape.length - 2] : 1;
    const maps = t.data.length / (rows * cols) | 0;
    const vals = t.data.map(num);
    let lo = Infinity, hi = -Infinity;
    for (const v of vals) if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (lo === Infinity) { lo = 0; hi = 0; }
    const figs = [];
    for (let m = 0; m < maps; m++) {
      const fig = document.createElement('figure');
      fig.className = 'heat';
      fig.dataset.name = t.name + (maps > 1 ? `.${m}` : '');
      const cap = document.createElement('figcaption');
      cap.innerHTML = `<b>${t.name}${maps > 1 ? ` <small>(${t.slice || 'head'} ${m})</small>` : ''}</b> <span class="shape">[${rows},${cols}]</span>` +
        (t.note ? `<div class="note">${t.note}</div>` : '');
      fig.appendChild(cap);
      const cell = t.cellSize || Math.max(10, Math.min(44, Math.floor(300 / Math.max(rows, cols))));
      /* column labels stand upright when the cells are narrower than the text */
      const upright = t.colLabels && cell < 30;
      const padL = t.rowLabels ? 34 : 0, padT = t.colLabels ? (upright ? 32 : 16) : 0;
      const cv = document.createElement('canvas');
      const dpr = window.devicePixelRatio || 1;
      const W = padL + cols * cell, H = padT + rows * cell;
      cv.width = W * dpr; cv.height = H * dpr; cv.style.width = W + 'px'; cv.style.height = H + 'px';
      const g = cv.getContext('2d');
      g.scale(dpr, dpr);
      g.font = `${Math.max(8, Math.min(11, cell / 4))}px sans-serif`;
      g.textAlign = 'center'; g.textBaseline = 'middle';
      const off = m * rows * cols;
      for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) {
        const v = vals[off + i * cols + j];
        g.fillStyle = colour(v, lo, hi);
        g.fillRect(padL + j * cell, padT + i * cell, cell, cell);
        if (cell >= 36) { g.fillStyle = isFinite(v) ? '#222' : '#fff'; g.fillText(fmt(t.data[off + i * cols + j]), padL + j * cell + cell / 2, padT + i * cell + cell / 2); }
      }
      g.strokeStyle = '#bbb'; g.lineWidth = 0.5;
      g.strokeRect(padL + 0.5, padT + 0.5, cols * cell - 1, rows * cell - 1);
      g.fillStyle = '#444';
      if (t.rowLabels) { g.textAlign = 'right'; t.rowLabels.forEach((s, i) => g.fillText(s, padL - 3, padT + i * cell + cell / 2)); }
      if (t.colLabels && upright) {
        g.textAlign = 'left';
        t.colLabels.forEach((s, j) => { g.save(); g.translate(padL + j * cell + cell / 2, padT - 3); g.rotate(-Math.PI / 2); g.fillText(s, 0, 0); g.restore(); });
      } else if (t.colLabels) { g.textAlign = 'center'; t.colLabels.forEach((s, j) => g.fillText(s, padL + j * cell + cell / 2, padT / 2)); }
      const at = ev => {
        const r = cv.getBoundingClientRect();
        const j = Math.floor((ev.clientX - r.left - padL) / cell), i = Math.floor((ev.clientY - r.top - padT) / cell);
        return i >= 0 && j >= 0 && i < rows && j < cols ? [i, j] : null;
      };
      cv.addEventListener('mousemove', ev => {
        const p = at(ev), tp = tooltip();
        if (!p) { tp.style.display = 'none'; return; }
        const idx = maps > 1 ? `${m},${p[0]},${p[1]}` : `${p[0]},${p[1]}`;
        const raw = t.data[off + p[0] * cols + p[1]];
        tp.textContent = `${t.name}[${idx}] = ${Number.isFinite(Number(raw)) ? Number(raw).toPrecision(7) : fmt(raw)}`;
        tp.style.display = 'block'; tp.style.left = ev.pageX + 12 + 'px'; tp.style.top = ev.pageY + 12 + 'px';
      });
      cv.addEventListener('mouseleave', () => { tooltip().style.display = 'none'; });
      if (t.onCell) {
        cv.style.cursor = 'pointer';
        cv.addEventListener('click', ev => { const p = at(ev); if (p) t.onCell(maps > 1 ? [m, p[0], p[1]] : [p[0], p[1]], fig); });
      }
      fig.appendChild(cv);
      const pre = document.createElement('pre');
      pre.className = 'values';
      pre.textContent = matrixText(rows, cols, t.data, off);
      fig.appendChild(pre);
      parent.appendChild(fig);
      figs.push(fig);
    }
    return figs;
  }

  /* lineChart(canvas, series [{name, colour, points [[x,y]...]}], {yMin, yMax, log}) */
  function lineChart(cv, series, opt = {}) {
    const dpr = window.devicePixelRatio || 1;
    const W = cv.clientWidth || 360, H = cv.clientHeight || 180;
    cv.width = W * dpr; cv.height = H * dpr;
    const g = cv.getContext('2d');
    g.scale(dpr, dpr);
    g.clearRect(0, 0, W, H);
    const L = 44, R = 8, T = 18, B = 22;
    let xMax = 1, yMin = opt.yMin, yMax = opt.yMax;
    const ty = v => opt.log ? Math.log10(Math.max(v, 1e-6)) : v;
    for (const s of series) for (const [x, y] of s.points) {
      xMax = Math.max(xMax, x);
      if (opt.yMin === undefined) yMin = yMin === undefined ? ty(y) : Math.min(yMin, ty(y));
      if (opt.yMax === undefined) yMax = yMax === undefined ? ty(y) : Math.max(yMax, ty(y));
    }
    if (yMin === undefined) { yMin = 0; yMax = 1; }
    if (yMax - yMin < 1e-9) yMax = yMin + 1;
    const px = x => L + (W - L - R) * x / xMax, py = y => T + (H - T - B) * (1 - (ty(y) - yMin) / (yMax - yMin));
    g.strokeStyle = '#ccc'; g.fillStyle = '#555'; g.font = '10px sans-serif'; g.lineWidth = 1;
    g.strokeRect(L, T, W - L - R, H - T - B);
    g.textAlign = 'right'; g.textBaseline = 'middle';
    for (let k = 0; k <= 4; k++) {
      const yv = yMin + (yMax - yMin) * k / 4, y = T + (H - T - B) * (1 - k / 4);
      g.fillText(opt.log ? String(+Math.pow(10, yv).toPrecision(2)) : yv.toFixed(2), L - 4, y);
    }
    g.textAlign = 'center'; g.textBaseline = 'top';
    g.fillText('0', L, H - B + 4); g.fillText(String(xMax), W - R - 10, H - B + 4);
    g.fillText(opt.xLabel || 'step', (L + W - R) / 2, H - B + 4);
    g.textAlign = 'left';
    series.forEach((s, k) => {
      g.strokeStyle = s.colour; g.lineWidth = 1.5; g.beginPath();
      s.points.forEach(([x, y], i) => (i ? g.lineTo(px(x), py(y)) : g.moveTo(px(x), py(y))));
      g.stroke();
      g.fillStyle = s.colour; g.fillText(s.name, L + 6 + 90 * k, 3);
    });
  }

  /* barChart(canvas, bars [{label, value (0..1), colour}]) */
  function barChart(cv, bars, opt = {}) {
    const dpr = window.devicePixelRatio || 1;
    const W = cv.clientWidth || 360, H = cv.clientHeight || 160;
    cv.width = W * dpr; cv.height = H * dpr;
    const g = cv.getContext('2d');
    g.scale(dpr, dpr);
    g.clearRect(0, 0, W, H);
    const L = 34, T = 16, B = 30, n = Math.max(1, bars.length), bw = (W - L - 6) / n;
    g.font = '10px sans-serif'; g.fillStyle = '#555'; g.textAlign = 'right'; g.textBaseline = 'middle';
    for (const v of [0, 0.5, 1]) g.fillText(v.toFixed(1), L - 4, T + (H - T - B) * (1 - v));
    bars.forEach((b, i) => {
      const h = (H - T - B) * Math.max(0, Math.min(1, b.value));
      g.fillStyle = b.colour || '#4a7';
      g.fillRect(L + i * bw + 2, T + (H - T - B) - h, bw - 4, h);
      g.fillStyle = '#333'; g.textAlign = 'center'; g.textBaseline = 'top';
      g.fillText(b.label, L + i * bw + bw / 2, H - B + 3);
      g.textBaseline = 'bottom';
      if (bw > 22) g.fillText((b.value * 100).toFixed(0), L + i * bw + bw / 2, T + (H - T - B) - h - 1);
    });
    if (opt.xLabel) { g.textAlign = 'center'; g.textBaseline = 'bottom'; g.fillStyle = '#555'; g.fillText(opt.xLabel, (L + W) / 2, H); }
    if (opt.marker !== undefined) {
      const x = L + opt.marker * bw;
      g.strokeStyle = '#c33'; g.setLineDash([4, 3]); g.beginPath(); g.moveTo(x, T - 8); g.lineTo(x, H - B); g.stroke(); g.setLineDash([]);
      g.fillStyle = '#c33'; g.textAlign = 'left'; g.textBaseline = 'top'; g.fillText(opt.markerLabel || '', x + 3, 0);
    }
  }

  function el(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  /* tapeGraph(svgParent, nodes [{id, op, shape, inputs, summary, grad_norm, leaf}], onClick):
   * an op's column is one more than its deepest input's; a parameter or input
   * (no inputs of its own) sits one column before its first reader. */
  function tapeGraph(parent, nodes, onClick) {
    const depth = new Map();
    for (const n of nodes) if (!(n.inputs || []).length) depth.set(n.id, 0);
    for (const n of nodes) {
      if (!(n.inputs || []).length) continue;
      let d = 0;
      for (const i of n.inputs || []) if (depth.has(i)) d = Math.max(d, depth.get(i) + 1);
      depth.set(n.id, d);
    }
    const readers = new Map();
    for (const n of nodes) for (const i of n.inputs || []) readers.set(i, Math.min(readers.has(i) ? readers.get(i) : Infinity, depth.get(n.id)));
    for (const n of nodes) if (!(n.inputs || []).length && readers.has(n.id)) depth.set(n.id, Math.max(0, readers.get(n.id) - 1));
    const cols = [];
    for (const n of nodes) (cols[depth.get(n.id)] = cols[depth.get(n.id)] || []).push(n);
    const NW = 150, NH = 58, GX = 46, GY = 12;
    const rowsMax = Math.max(...cols.map(c => c.length));
    const W = cols.length * (NW + GX) + 10, H = rowsMax * (NH + GY) + 10;
    const svg = el('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'tape' }, parent);
    const pos = new Map();
    cols.forEach((c, d) => c.forEach((n, r) => pos.set(n.id, [5 + d * (NW + GX), 5 + r * (NH + GY) + (rowsMax - c.length) * (NH + GY) / 2])));
    const edges = el('g', { class: 'edges' }, svg);
    for (const n of nodes) for (const i of n.inputs || []) {
      if (!pos.has(i)) continue;
      const [x0, y0] = pos.get(i), [x1, y1] = pos.get(n.id);
      el('path', { d: `M${x0 + NW},${y0 + NH / 2} C${x0 + NW + GX / 2},${y0 + NH / 2} ${x1 - GX / 2},${y1 + NH / 2} ${x1},${y1 + NH / 2}` }, edges);
    }
    for (const n of nodes) {
      const [x, y] = pos.get(n.id);
      const g = el('g', { class: 'node' + (n.param ? ' param' : n.inputs && n.inputs.length ? '' : ' leaf'), transform: `translate(${x},${y})`, 'data-id': n.id }, svg);
      el('rect', { width: NW, height: NH, rx: 5 }, g);
      const lines = [`${n.op}${n.name ? ' ' + n.name : ''}`, `[${n.shape.join(',')}]`, n.summary || '', n.grad_norm !== undefined && n.grad_norm !== null ? `|grad| ${Number(n.grad_norm).toPrecision(3)}` : ''];
      lines.forEach((s, k) => { const t = el('text', { x: 6, y: 14 + 13 * k, class: k ? 'sub' : 'op' }, g); t.textContent = s.length > 26 ? s.slice(0, 25) + '…' : s; });
      const title = el('title', {}, g); title.textContent = lines.join('\n');
      g.addEventListener('click', () => {
        svg.querySelectorAll('.node.sel').forEach(e => e.classList.remove('sel'));
        g.classList.add('sel');
        onClick(n);
      });
    }
    return svg;
  }

  return { fmt, matrixText, heatmap, lineChart, barChart, tapeGraph };
})();
