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

  /* A [.., rows, cols] tensor as heat maps; a bigger one shows its last two
   * dimensions of the first leading index, said in the caption. */
  function drawTensor(box, t, title) {
    if (!t) { const p = document.createElement('p'); p.textContent = `${title}: no gradient reached this node`; box.appendChild(p); return; }
    const s = t.shape.length ? t.shape : [1];
    const cols = s[s.length - 1], rows = s.length > 1 ? s[s.length - 2] : 1, per = rows * cols;
    const lead = t.data.length / per;
    qkvDraw.heatmap(box, { name: title, shape: [rows, cols], data: t.data.slice(0, per),
      note: `[${t.shape.join(',')}]${lead > 1 ? `: the first of ${lead} [${rows},${cols}] slices` : ''}`,
      cellSize: Math.max(6, Math.min(24, Math.floor(360 / Math.max(rows, cols)))) });
  }

  async function node(id) {
    const box = $('tape-node');
    try {
      const r = await qkv.tapeNode(id);
      box.innerHTML = '';
      const n = last.nodes.find(x => x.id === id);
      const h = document.createElement('h2');
      h.textContent = `node ${id}: ${n ? n.op : ''} [${n ? n.shape.join(',') : ''}]${n && n.note ? ' — ' + n.note : ''}`;
      box.appendChild(h);
      drawTensor(box, r.value, 'value');
      drawTensor(box, r.grad, 'gradient');
      return r;
    } catch (e) { $('tape-msg').textContent = e.message; $('tape-msg').className = 'msg error'; return null; }
  }

  async function draw(of) {
    const msg = $('tape-msg');
    try {
      const r = await qkv.tape(of);
      msg.textContent = ''; msg.className = 'msg';
      last = r;
      const ids = new Set(r.nodes.map(n => n.id));
      /* inputs that are no node's output (parameters, data) become leaf boxes */
      const leaves = [], nodes = [];
      let k = 0;
      for (const n of r.nodes) {
        const inputs = [];
        for (const i of n.inputs || []) {
          if (i.node >= 0 && ids.has(i.node)) { inputs.push(i.node); continue; }
          const id = `leaf${k++}`;
          leaves.push({ id, op: i.name ? 'param' : 'data', name: i.name || '', shape: i.shape || [], inputs: [], param: !!i.name });
          inputs.push(id);
        }
        nodes.push({ id: n.id, op: n.op, shape: n.shape, inputs, summary: summary(n.value), grad_norm: n.grad_norm });
      }
      const box = $('tape-graph');
      box.innerHTML = '';
      qkvDraw.tapeGraph(box, leaves.concat(nodes), n => { if (typeof n.id === 'number') node(n.id); });
      $('tape-info').textContent = `${r.nodes.length} nodes on the tape of ${of === 'attention' ? 'the last attention step' : 'one training step'}; loss ${r.loss}. ` +
        'Columns: how far each node is from the inputs. Click a node.';
      $('tape-node').innerHTML = '';
      return r;
    } catch (e) { msg.textContent = e.message; msg.className = 'msg error'; return null; }
  }

  function init() {
    $('tape-train').addEventListener('click', () => draw('train'));
    $('tape-att').addEventListener('click', () => draw('attention'));
  }
  return { init, draw, node, last: () => last };
})();
