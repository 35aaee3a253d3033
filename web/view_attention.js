/* view_attention.js — view (1), one attention step: reads the form into api.h's
 * attention request, asks the module (qkv.attention), draws every matrix it
 * returns, spells out D_i = rowsum(dO ∘ O) from the module's own dO, O and D,
 * and runs the finite-difference check of a picked entry (qkv.check).
 */
'use strict';

qkv.views.attention = (() => {
  const $ = id => document.getElementById(id);
  let info = null, last = null, lastRequest = null, picked = null;
  let posParams = null, posDirty = false, weightsDirty = false;

  /* "1 2\n3 x" -> [[1,2],[3,"x"]]: what is not a number is passed on as text, for
   * the module to refuse with the message the command line gives. */
  function rows(text) {
    return text.trim().split(/\n+/).filter(l => l.trim()).map(l => l.trim().split(/[\s,]+/).map(s => {
      const v = Number(s);
      return s !== '' && Number.isFinite(v) ? v : s;
    }));
  }
  function vec(text) { const r = rows(text); return r.length ? r.flat() : []; }
  const mode = () => document.querySelector('input[name=att-mode]:checked').value;

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
    $('att-lw-l').classList.toggle('hidden', $('att-loss').value !== 'weighted');
    $('att-target-l').classList.toggle('hidden', $('att-loss').value !== 'square');
  }

  /* The form -> api.h's A. */
  function request() {
    const a = { heads: Number($('att-heads').value), mask: $('att-mask').value, pos: $('att-pos').value,
      pos_seed: Number($('att-pos-seed').value), loss: $('att-loss').value };
    if (mode() === 'tokens') {
      Object.assign(a, { tokens: $('att-toks').value, vocab: Number($('att-vocab').value),
        width: Number($('att-width').value), seed: Number($('att-seed').value) });
      if (weightsDirty && last && last.weights) {
        a.weights = {};
        document.querySelectorAll('#att-weights textarea').forEach(t => { a.weights[t.dataset.name] = rows(t.value); });
      }
    } else {
      a.q = rows($('att-q').value); a.k = rows($('att-k').value); a.v = rows($('att-v').value);
    }
    if (a.mask === 'padding') a.padding = vec($('att-padding').value);
    if (a.mask === 'keep') a.keep = rows($('att-keep').value);
    if (a.loss === 'weighted' && $('att-lw').value.trim()) a.loss_weights = vec($('att-lw').value);
    if (a.loss === 'square' && $('att-target').value.trim()) a.target = rows($('att-target').value);
    if (posDirty && posParams) {
      a.pos_params = {};
      document.querySelectorAll('#att-pos-params input').forEach(i => {
        const v = i.value.trim();
        a.pos_params[i.dataset.key] = i.dataset.array ? vec(v) : Number.isFinite(Number(v)) && v !== '' ? Number(v) : v;
      });
    }
    return a;
  }

  function showPosParams(p) {
    posParams = p || {};
    const box = $('att-pos-params');
    box.innerHTML = '';
    const keys = Object.keys(posParams);
    if (!keys.length) { box.textContent = 'no parameters'; return; }
    for (const k of keys) {
      const v = posParams[k], arr = Array.isArray(v);
      const l = document.createElement('label');
      l.textContent = k + ' ';
      const i = document.createElement('input');
      i.dataset.key = k;
      if (arr) i.dataset.array = '1';
      i.value = arr ? v.flat(Infinity).map(x => typeof x === 'number' ? +x.toPrecision(6) : x).join(' ') : v;
      i.size = arr ? Math.min(48, i.value.length + 2) : 8;
      i.addEventListener('input', () => { posDirty = true; });
      l.appendChild(i);
      box.appendChild(l);
    }
  }

  function showWeights(ws) {
    const box = $('att-weights');
    box.innerHTML = '';
    for (const w of ws || []) {
      const cols = w.shape[w.shape.length - 1];
      const editable = ['embed', 'wq', 'wk', 'wv'].includes(w.name);
      const fig = document.createElement('div');
      fig.className = 'weight';
      qkvDraw.heatmap(fig, { name: w.name, shape: w.shape, data: w.data, cellSize: 14, onCell: idx => pick(w.name, idx, w.shape) });
      if (editable) {
        const t = document.createElement('textarea');
        t.dataset.name = w.name;
        t.rows = Math.min(6, w.data.length / cols);
        t.cols = cols * 8;
        const lines = [];
        for (let i = 0; i < w.data.length; i += cols) lines.push(w.data.slice(i, i + cols).map(x => +Number(x).toPrecision(5)).join(' '));
        t.value = lines.join('\n');
        t.addEventListener('input', () => { weightsDirty = true; });
        fig.appendChild(t);
      }
      box.appendChild(fig);
    }
  }

  /* A click on a cell of Q, K, V, a weight, or their gradient dQ, dK, dV picks
   * that entry of the input for the finite-difference check. */
  function pick(name, idx, shape) {
    let tensor = name;
    const m = /^d([QKV])$/i.exec(name);
    if (m) tensor = m[1];
    tensor = tensor.toLowerCase();
    const index = shape.length === 3 && idx.length === 2 ? [0, ...idx] : idx;
    picked = { tensor, index };
    $('att-check-what').textContent = `entry ${tensor}[${index.join(',')}]`;
    $('att-check-go').disabled = false;
    $('att-check-out').textContent = '';
  }

  function spellD(out) {
    const box = $('att-D');
    box.innerHTML = '';
    const O = out.forward.find(t => t.name === 'O') || out.forward[out.forward.length - 1];
    const dO = out.backward.find(t => t.name === 'dO'), D = out.backward.find(t => t.name === 'D');
    if (!O || !dO || !D) return;
    const dv = O.shape[O.shape.length - 1], tq = O.shape[O.shape.length - 2], H = O.data.length / (tq * dv);
    const f = v => { const s = qkvDraw.fmt(v); return s.startsWith('-') ? `(${s})` : s; };
    const lines = ['D_i = rowsum(dO ∘ O) = Σ_c dO[i,c] · O[i,c]: the shift softmax\'s backward subtracts (dS = P ∘ (dP − D)).'];
    for (let h = 0; h < H; h++) for (let i = 0; i < tq; i++) {
      const terms = [];
      for (let c = 0; c < dv; c++) terms.push(`${f(dO.data[(h * tq + i) * dv + c])}·${f(O.data[(h * tq + i) * dv + c])}`);
      lines.push(`${H > 1 ? `head ${h}: ` : ''}D_${i} = ${terms.join(' + ')} = ${qkvDraw.fmt(D.data[h * tq + i])}`);
    }
    const pre = document.createElement('pre');
    pre.textContent = lines.join('\n');
    box.appendChild(pre);
  }

  function draw(out) {
    for (const id of ['att-inputs', 'att-forward', 'att-backward']) $(id).innerHTML = '';
    for (const t of out.inputs) qkvDraw.heatmap($('att-inputs'), Object.assign({}, t, { onCell: idx => pick(t.name, idx, t.shape) }));
    for (const t of out.forward) qkvDraw.heatmap($('att-forward'), Object.assign({}, t, { note: t.formula }));
    for (const t of out.backward) {
      const grad = /^d[QKV]$/i.test(t.name);
      qkvDraw.heatmap($('att-backward'), Object.assign({}, t, { note: t.formula, onCell: grad ? idx => pick(t.name, idx, t.shape) : null }));
    }
    spellD(out);
    const sub = document.createElement('div');
    sub.className = 'state';
    sub.textContent = `Tq ${out.tq}, Tk ${out.tk}, ${out.heads} head${out.heads > 1 ? 's' : ''}, d ${out.d}, dv ${out.dv}, scale ${out.scale}, loss L = ${out.loss}`;
    $('att-inputs').prepend(sub);
  }

  async function run(ev) {
    if (ev) ev.preventDefault();
    const msg = $('att-msg');
    const a = request();
    try {
      const out = await qkv.attention(a);
      msg.textContent = ''; msg.className = 'msg';
      last = out; lastRequest = a;
      showPosParams(out.pos_params);
      if (out.weights && !weightsDirty) showWeights(out.weights);
      draw(out);
      picked = null; $('att-check-go').disabled = true; $('att-check-out').textContent = '';
      $('att-check-what').textContent = 'click a cell of Q, K, V, dQ, dK, dV or a weight to pick an entry';
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
      out.innerHTML = `tape (analytic) <b>${r.analytic}</b> · finite differences (eps ${r.eps}) <b>${r.numeric}</b>`;
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
    document.querySelectorAll('input[name=att-mode]').forEach(r => r.addEventListener('change', () => { posDirty = false; syncControls(); run(); }));
    for (const id of ['att-mask', 'att-loss']) $(id).addEventListener('change', () => { syncControls(); run(); });
    $('att-pos').addEventListener('change', () => { posDirty = false; run(); });
    $('att-pos-seed').addEventListener('change', () => { posDirty = false; run(); });
    $('att-heads').addEventListener('change', () => run());
    $('att-reseed').addEventListener('click', () => { weightsDirty = false; run(); });
    $('att-seed').addEventListener('change', () => { weightsDirty = false; run(); });
    $('att-width').addEventListener('change', () => { weightsDirty = false; run(); });
    $('att-vocab').addEventListener('change', () => { weightsDirty = false; run(); });
    $('att-form').addEventListener('submit', run);
    $('att-check-go').addEventListener('click', check);
    await run();
  }

  /* For scripts: set the form from an object and run, as a learner would. */
  async function set(fields) {
    for (const [k, v] of Object.entries(fields)) {
      if (k === 'mode') { document.querySelector(`input[name=att-mode][value=${v}]`).checked = true; continue; }
      const e = $('att-' + k);
      if (!e) throw new Error(`no field att-${k}`);
      e.value = v;
    }
    posDirty = false; weightsDirty = false;
    syncControls();
    return run();
  }

  return { init, run, set, check, pick, request, last: () => last };
})();
