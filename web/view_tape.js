/* view_tape.js — view (3), the tape: the graph of one training step (or of the
 * last attention step) drawn in layers as SVG, each node with its op, shape, a
 * summary of its value and its gradient's norm, all from qkv.tape; a click on a
 * node shows its tensor and gradient (qkv.tapeNode) as heat maps.
 */
'use strict';

qkv.views.tape = (() => {
  const $ = id => document.getElementById(id);
  let last = null;

  const g = v => (typeof v === 'number' ? +v.toPrecision(3) : v);
  function summary(v) { return v ? `mean ${g(v.mean)} · |x| ${g(v.norm)}` : ''; }

  /* A tensor as one heat map: [rows, cols] as it is, [n] as one row, and a bigger
   * one as its first example, [d1, d2 * ...] (the caption says so). */
  function drawTensor(box, t, title) {
    if (!t) { const p = document.createElement('p'); p.textContent = `${title}: no gradient reached this tensor`; box.appendChild(p); return; }
    const s = t.shape.length ? t.shape : [1];
    const rows = s.length === 1 ? 1 : s.length === 2 ? s[0] : s[1];
    const cols = s.length === 1 ? s[0] : s.length === 2 ? s[1] : s.slice(2).reduce((a, b) => a * b, 1);
    const first = s.length > 2 ? `: the first of ${s[0]} examples${s.length > 3 ? `, [${s.slice(1).join(',')}] as [${rows},${cols}]` : ''}` : '';
    qkvDraw.heatmap(box, { name: title, shape: [rows, cols], data: t.data.slice(0, rows * cols), note: `[${t.shape.join(',')}]${first}`,
      cellSize: Math.max(5, Math.min(24, Math.floor(480 / Math.max(rows, cols)))) });
  }

  async function node(id) {
    const box = $('tape-node');
    try {
      const r = await qkv.tapeNode(id);
      box.innerHTML = '';
      const n = r.node;
      const h = document.createElement('h2');
      h.textContent = `${n.leaf ? (n.leaf === 1 ? 'parameter' : 'input') : 'op'} ${n.op} [${n.shape.join(',')}]${n.note ? ' — ' + n.note : ''}: ` +
        `values in [${qkvDraw.fmt(n.value.min)}, ${qkvDraw.fmt(n.value.max)}], mean ${qkvDraw.fmt(n.value.mean)}` +
        (n.grad_norm === null ? ', no gradient' : `, |gradient| ${Number(n.grad_norm).toPrecision(4)}`);
      box.appendChild(h);
      drawTensor(box, r.value, 'value');
      drawTensor(box, r.grad, 'gradient');
      return r;
    } catch (e) { $('tape-msg').textContent = e.message; $('tape-msg').className = 'msg error'; return null; }
  }

  async function draw() {
    const msg = $('tape-msg');
    try {
      const r = await qkv.tape();
      msg.textContent = ''; msg.className = 'msg';
      last = r;
      /* entries: the nodes (leaf 0) and the tensors read but not made on the tape:
       * parameters (leaf 1, op their name) and data (leaf 2) */
      const nodes = r.nodes.map(n => ({ id: n.id, op: n.leaf ? (n.leaf === 1 ? 'param' : 'input') : n.op,
        name: n.leaf ? n.op : n.note || '', shape: n.shape, inputs: n.inputs.filter(i => i >= 0),
        summary: summary(n.value), grad_norm: n.grad_norm, param: n.leaf === 1 }));
      const box = $('tape-graph');
      box.innerHTML = '';
      qkvDraw.tapeGraph(box, nodes, n => node(n.id));
      $('tape-info').textContent = `${r.n_nodes} ops on the tape of training step ${r.step} (and ${r.nodes.length - r.n_nodes} parameters and inputs); loss ${qkvDraw.fmt(r.loss)}. ` +
        'Columns: how far each node is from the inputs. Click a node.';
      $('tape-node').innerHTML = '';
      return r;
    } catch (e) { msg.textContent = e.message; msg.className = 'msg error'; return null; }
  }

  function init() {
    $('tape-train').addEventListener('click', () => draw());
  }
  return { init, draw, node, last: () => last };
})();
