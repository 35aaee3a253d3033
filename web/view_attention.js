/* view_attention.js — view (1), one attention step: reads the form into web/api.h's
 * attention request (typed matrices go as the command line's text, "1 0; 0 1", so
 * the command line's parser reads and refuses them), asks the module
 * (qkv.attention), draws every matrix of the answer by section (inputs,
 * positions, forward, backward), writes D_i = rowsum(dO ∘ O) out as `qkv explain
 * attention` does from the module's dO, O and D, and runs the finite-difference
 * check of a picked entry (qkv.check).
 */
'use strict';

qkv.views.attention = (() => {
  const $ = id => document.getElementById(id);
  const fmt = qkvDraw.fmt;
  /* Each scheme's parameters come from the module (info.pos_params: the rows of
   * train/experiments/explain.h's list, which the command line's flags are):
   * {name, flag, label, default, min, max, list}; empty is the default, shown greyed. */
  const posParams = pos => (info && info.pos_params[pos]) || [];
  const SECTIONS = ['inputs', 'positions', 'forward', 'backward'];
  let info = null, last = null, lastRequest = null, picked = null, weightsDirty = false;

  const mode = () => document.querySelector('input[name=att-mode]:checked').value;
  /* textarea rows -> the command line's matrix text "1 0; 0 1" */
  const rowsText = text => text.trim().split(/\n+/).map(l => l.trim()).filter(Boolean).join('; ');
  /* A matrix box's rows into a[name], or nothing when the box is empty (left out). */
  const putRows = (a, name, id) => { const t = rowsText($(id).value); if (t) a[name] = t; };
  const words = text => text.trim().split(/[\s,;]+/).filter(Boolean).map(w => (Number.isFinite(Number(w)) ? Number(w) : w));

  function fill(select, names, keep) {
    const was = select.value;
    select.innerHTML = names.map(n => `<option>${n}</option>`).join('');
    if (keep && names.includes(was)) select.value = was;
  }
  function syncControls() {
    const tokens = mode() === 'tokens';
    $('att-qkv').classList.toggle('hidden', tokens);
    $('att-tokens').classList.toggle('hidden', !tokens);
    if (info) fill($('att-pos'), tokens ? info.schemes_tokens : info.schemes_qkv, true);
    $('att-padding-l').classList.toggle('hidden', $('att-mask').value !== 'padding');
    $('att-keep-l').classList.toggle('hidden', $('att-mask').value !== 'keep');
    $('att-target-what').textContent = $('att-loss').value === 'mse' ? 'target Y, L = ½ Σ (O − Y)² ' : 'C, L = Σ O ∘ C ';
    const box = $('att-pos-params'), params = posParams($('att-pos').value);
    if (box.dataset.pos !== $('att-pos').value) {
      box.dataset.pos = $('att-pos').value;
      box.innerHTML = params.map(p => `<label title="${p.flag}: ${p.label}${p.list ? '' : `, ${p.min}..${p.max}`}">${p.name} ` +
        `<input data-key="${p.name}" placeholder="${p.default}" size="${Math.max(6, p.default.length)}"></label>`).join('');
    }
  }

  /* The form -> api.h's request. */
  function request() {
    const a = { heads: Number($('att-heads').value), mask: $('att-mask').value, pos: $('att-pos').value,
      seed: Number($('att-seed').value), loss: $('att-loss').value };
    if (mode() === 'tokens') {
      Object.assign(a, { tokens: $('att-toks').value, vocab: Number($('att-vocab').value), width: Number($('att-width').value) });
      if (weightsDirty) {
        a.weights = {};
        document.querySelectorAll('#att-weights textarea').forEach(t => { a.weights[t.dataset.name] = rowsText(t.value); });
      }
    } else {
      /* a box left empty is left out: the worked example's Q, K or V, as on the command line */
      for (const m of ['q', 'k', 'v']) putRows(a, m, 'att-' + m);
    }
    if (a.mask === 'padding') a.key_length = Number($('att-key-length').value);
    if (a.mask === 'keep') putRows(a, 'keep', 'att-keep');
    putRows(a, 'target', 'att-target');
    for (const p of posParams(a.pos)) {
      const v = document.querySelector(`#att-pos-params input[data-key="${p.name}"]`).value.trim();
      if (v) a[p.name] = p.list ? words(v) : Number.isFinite(Number(v)) ? Number(v) : v;
    }
    return a;
  }

  /* The tiny layer's weights: each with its gradient, and its values to edit. */
  function showWeights(out) {
    $('att-weights-box').classList.toggle('hidden', !out.weights);
    const box = $('att-weights');
    box.innerHTML = '';
    if (out.x) qkvDraw.heatmap(box, Object.assign({}, out.x, { cellSize: 16, note: `tokens ${out.tokens.join(' ')}` }));
    for (const w of out.weights || []) {
      const fig = document.createElement('div');
      fig.className = 'weight';
      const cols = w.shape[w.shape.length - 1];
      qkvDraw.heatmap(fig, { name: w.name, shape: w.shape, data: w.data, cellSize: 14 });
      qkvDraw.heatmap(fig, { name: 'dL/d' + w.name, shape: w.shape, data: w.grad, cellSize: 14 });
      const t = document.createElement('textarea');
      t.dataset.name = w.name;
      t.rows = Math.min(8, w.data.length / cols);
      t.cols = Math.min(60, cols * 8);
      const lines = [];
      for (let i = 0; i < w.data.length; i += cols) lines.push(w.data.slice(i, i + cols).map(x => +Number(x).toPrecision(6)).join(' '));
      t.value = lines.join('\n');
      t.title = `edit ${w.name} and press run`;
      t.addEventListener('input', () => { weightsDirty = true; });
      fig.appendChild(t);
      box.appendChild(fig);
    }
  }

  /* A click on a cell of Q, K, V or of dQ, dK, dV picks that entry of the input
   * (its row and column in the all-heads matrix) for the finite-difference check. */
  function pick(name, head, dHead, idx) {
    const tensor = name.replace(/^d/, '').toLowerCase();
    const row = idx[0], col = (head > 0 ? head * dHead : 0) + idx[1];
    picked = { tensor, row, col };
    $('att-check-what').textContent = `entry ${tensor}[${row},${col}]: dL/d${tensor}[${row},${col}]`;
    $('att-check-go').disabled = false;
    $('att-check-out').textContent = '';
  }

  function find(out, name, head) { return out.matrices.find(m => m.tensor.name === name && m.head === head); }

  /* D_i = dO_i0 x O_i0 + ... = D_i, the module's numbers as the command line writes them. */
  function spellD(out) {
    const lines = ['D_i = rowsum(dO ∘ O): the shift the softmax backward subtracts, dS = P ∘ (dP − D); it equals rowsum(dP ∘ P) because O = P V.'];
    for (let h = 0; h < out.heads; h++) {
      const O = find(out, 'O', h), D = find(out, 'D', h);
      /* dO per head, or the all-heads one (a row holds every head's columns) */
      const own = find(out, 'dO', h), all = find(out, 'dO', -1);
      if (!O || !D || !(own || all)) continue;
      const [rows, cols] = O.tensor.shape;
      const dO = (i, c) => (own ? own.tensor.data[i * cols + c] : all.tensor.data[i * all.tensor.shape[1] + h * cols + c]);
      for (let i = 0; i < rows; i++) {
        const terms = [];
        for (let c = 0; c < cols; c++) terms.push(`${fmt(dO(i, c))} x ${fmt(O.tensor.data[i * cols + c])}`);
        lines.push(`${out.heads > 1 ? `head ${h}: ` : ''}D_${i} = ${terms.join(' + ')} = ${fmt(D.tensor.data[i])}`);
      }
    }
    $('att-D').innerHTML = '';
    const pre = document.createElement('pre');
    pre.textContent = lines.join('\n');
    $('att-D').appendChild(pre);
  }

  function draw(out) {
    for (const s of SECTIONS) $('att-' + s).innerHTML = '';
    for (const m of out.matrices) {
      const box = $('att-' + m.section);
      if (!box) continue;
      const t = m.tensor, input = m.section === 'inputs' && /^[QKV]$/.test(t.name), grad = /^d[QKV]$/.test(t.name);
      const dHead = t.shape[1];
      const [fig] = qkvDraw.heatmap(box, { name: t.name, shape: t.shape, data: t.data, note: m.formula,
        onCell: input || grad ? idx => pick(t.name, input ? 0 : m.head, dHead, idx) : null });
      if (m.head >= 0 && out.heads > 1) {
        fig.dataset.name = `${t.name}.${m.head}`;
        fig.querySelector('b').insertAdjacentHTML('beforeend', ` <small>(head ${m.head})</small>`);
      }
    }
    $('att-positions-box').classList.toggle('hidden', !out.matrices.some(m => m.section === 'positions'));
    spellD(out);
    $('att-setup').textContent = `Tq ${out.tq}, Tk ${out.tk}, ${out.heads} head${out.heads > 1 ? 's' : ''} of d ${out.d_head} (dv ${out.dv_head}), ` +
      `mask ${out.mask}, scale ${fmt(out.scale)}, loss L = ${fmt(out.loss)}; the fused attention op agrees with these composed ops to ${Number(out.fused_diff).toExponential(2)}`;
  }

  async function run(ev) {
    if (ev) ev.preventDefault();
    const msg = $('att-msg');
    const a = request();
    try {
      const out = await qkv.attention(a);
      msg.textContent = ''; msg.className = 'msg';
      last = out; lastRequest = a;
      if (!weightsDirty || !out.weights) showWeights(out);
      draw(out);
      picked = null; $('att-check-go').disabled = true; $('att-check-out').textContent = '';
      $('att-check-what').textContent = 'click a cell of Q, K, V, dQ, dK or dV to pick an entry';
      return out;
    } catch (e) {
      msg.textContent = e.message; msg.className = 'msg error';
      return null;
    }
  }

  async function check() {
    if (!picked || !lastRequest) return null;
    const out = $('att-check-out');
    try {
      const r = await qkv.check(Object.assign({}, lastRequest, picked));
      out.innerHTML = `tape (analytic) <b>${fmt(r.analytic)}</b> · finite differences (h ${r.h}) <b>${fmt(r.numeric)}</b> · |difference| ${Number(r.difference).toExponential(2)}`;
      out.className = '';
      return r;
    } catch (e) {
      out.textContent = e.message; out.className = 'error';
      return null;
    }
  }

  async function init(i) {
    info = i;
    fill($('att-mask'), info.masks);
    fill($('att-loss'), info.losses);
    syncControls();
    const rerun = () => { syncControls(); run(); };
    const reseed = () => { weightsDirty = false; rerun(); };
    /* another mode has other sizes: C or Y is drawn from the seed until typed again */
    document.querySelectorAll('input[name=att-mode]').forEach(r => r.addEventListener('change', () => { $('att-target').value = ''; reseed(); }));
    for (const id of ['att-mask', 'att-loss', 'att-pos', 'att-heads']) $(id).addEventListener('change', rerun);
    for (const id of ['att-reseed']) $(id).addEventListener('click', reseed);
    for (const id of ['att-seed', 'att-width', 'att-vocab']) $(id).addEventListener('change', reseed);
    $('att-form').addEventListener('submit', run);
    $('att-check-go').addEventListener('click', check);
    await run();
  }

  /* For scripts: set fields of the form (q, k, v, mask, pos, loss, target, ...) and run. */
  async function set(fields) {
    for (const [k, v] of Object.entries(fields)) {
      if (k === 'mode') { document.querySelector(`input[name=att-mode][value=${v}]`).checked = true; continue; }
      const e = $('att-' + k);
      if (!e) throw new Error(`no field att-${k}`);
      e.value = v;
    }
    weightsDirty = false;
    syncControls();
    return run();
  }

  return { init, run, set, check, request, last: () => last };
})();
