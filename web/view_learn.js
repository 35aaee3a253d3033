/* view_learn.js — view (2), watch it learn: a reversal run (qkv train reverse's
 * own session, web/api.h) stepped a few steps per call in the worker, so the page
 * stays responsive; loss and accuracy curves, every layer's and head's attention
 * map, pause / step / resume, and length generalization in miniature (trained
 * on lengths 1..L, tested on 1..2L). Also draws the maps for view (4).
 */
'use strict';

qkv.views.learn = (() => {
  const $ = id => document.getElementById(id);
  /* A configuration that reaches 100% held-out sequence accuracy in the page
   * (docs/web.md gives the time measured): small, so a step is cheap. */
  const BASE = '--layers 2 --heads 2 --dim 16 --ff 32 --vocab 6 --batch 16 --lr 0.02 --warmup 50 ' +
               '--test-size 200 --eval-every 50 --log-every 0 --target 1';
  const st = { running: false, busy: false, started: false, done: false, step: 0, steps: 0, L: 0,
    losses: [], acc: [], tok: [], lengths: null, t0: 0, seconds: 0, chunk: 5, lastMaps: 0, settings: null };

  function args() {
    const L = Number($('learn-len').value), pos = $('learn-pos').value;
    const a = ['--min-len', '1', '--max-len', String(L), '--pos', pos, '--steps', String($('learn-steps').value)];
    if (pos === 'learned') a.push('--max-pos', String(2 * L));
    return a.concat(($('learn-flags').value.trim() || BASE).split(/\s+/));
  }
  function buttons() {
    $('learn-pause').disabled = !st.running;
    $('learn-step').disabled = !st.started || st.running || st.done;
    $('learn-resume').disabled = !st.started || st.running || st.done;
    $('learn-lengths').disabled = !st.started || st.running;
    $('learn-start').textContent = st.started ? 'restart' : 'start';
  }
  function message(text) { const m = $('learn-msg'); m.textContent = text || ''; m.className = text ? 'msg error' : 'msg'; }

  function drawCurves() {
    qkvDraw.lineChart($('learn-loss'), [{ name: 'training loss', colour: '#c55', points: st.losses }], { log: true });
    qkvDraw.lineChart($('learn-acc'), [{ name: 'sequences', colour: '#27a', points: st.acc },
      { name: 'tokens', colour: '#8a4', points: st.tok }], { yMin: 0, yMax: 1 });
    const last = st.acc.length ? st.acc[st.acc.length - 1][1] : 0;
    const lastLoss = st.losses.length ? st.losses[st.losses.length - 1][1] : NaN;
    $('learn-state').textContent = `step ${st.step} of ${st.steps} · loss ${Number.isFinite(lastLoss) ? lastLoss.toFixed(4) : '–'}` +
      ` · held-out sequences right ${(100 * last).toFixed(1)}% · ${st.seconds.toFixed(1)} s in the worker` +
      (st.done ? ' · done' : st.running ? ' · training' : st.started ? ' · paused' : '');
  }

  /* "reverse (encoder, learned positions, step 350)", as `qkv attn` titles its maps */
  const caption = m => `${m.task} (${m.arch}, ${m.pos} positions, step ${m.step})`;

  /* maps (web/api.h) -> a row of heat maps per layer (and decoder part), a map per head */
  function drawMaps(box, maps) {
    box.innerHTML = '';
    if (maps.warning) { const w = document.createElement('div'); w.className = 'msg error'; w.textContent = maps.warning; box.appendChild(w); }
    for (const r of maps.rows) {
      const row = document.createElement('div');
      row.className = 'maprow';
      const h = document.createElement('div');
      h.className = 'rowname';
      h.textContent = `${r.what.trim() || 'layer'} ${r.layer}`;
      row.appendChild(h);
      qkvDraw.heatmap(row, { name: `${r.what.trim() || 'layer'} ${r.layer}`, shape: r.weights.shape, data: r.weights.data,
        rowLabels: r.q_labels, colLabels: r.k_labels, cellSize: 20 });
      /* with gradients (an opened model, as qkv attn --grads draws them) */
      for (const g of ['dP', 'dS', 'dQ', 'dK', 'dV']) if (r[g]) {
        const [fig] = qkvDraw.heatmap(row, { name: g, shape: r[g].shape, data: r[g].data, cellSize: 12, slice: 'head' });
        fig.dataset.name = `${g}.${r.layer}`;
      }
      box.appendChild(row);
    }
  }

  async function refreshMaps() {
    const maps = await qkv.trainMaps();
    $('learn-probe').textContent = `${caption(maps)}: input ${maps.input.join(' ')} → output ${maps.output.join(' ')}`;
    drawMaps($('learn-maps'), maps);
    st.lastMaps = performance.now();
  }

  function take(r) {
    st.step = r.step; st.done = r.done;
    for (const [s, l] of r.losses) st.losses.push([s, l]);
    for (const e of r.evaluated) {
      if (!e.metrics || e.metrics.seq_acc === undefined) continue;
      st.acc.push([e.step, e.metrics.seq_acc]);
      st.tok.push([e.step, e.metrics.token_acc]);
    }
  }

  /* One call of `n` steps; the chunk grows or shrinks so a call takes ~0.2 s. */
  async function stepOnce(n) {
    const t = performance.now();
    const r = await qkv.trainStep(n);
    const dt = (performance.now() - t) / 1000;
    st.seconds += dt;
    take(r);
    if (dt < 0.1) st.chunk = Math.min(200, st.chunk * 2); else if (dt > 0.4) st.chunk = Math.max(1, st.chunk >> 1);
    drawCurves();
    if (st.done || performance.now() - st.lastMaps > 1000) await refreshMaps();
    return r;
  }

  async function loop() {
    if (st.busy) return;
    st.busy = true;
    try {
      while (st.running && !st.done) await stepOnce(st.chunk);
      if (st.done) { st.running = false; buttons(); await lengths(); }
    } catch (e) {
      st.running = false; message(e.message);
    } finally { st.busy = false; buttons(); drawCurves(); }
  }

  async function start() {
    st.running = false;
    while (st.busy) await new Promise(r => setTimeout(r, 20));
    message('');
    try {
      const r = await qkv.trainStart({ task: 'reverse', args: args() });
      Object.assign(st, { started: true, done: false, step: 0, steps: r.steps, L: Number($('learn-len').value),
        losses: [], acc: [], tok: [], lengths: null, seconds: 0, chunk: 5, settings: r.settings, running: true });
      qkvDraw.barChart($('learn-len-chart'), []);
      buttons(); drawCurves();
      await refreshMaps();
      loop();
      return r;
    } catch (e) {
      st.running = false; buttons(); message(e.message);
      return null;
    }
  }
  function pause() { st.running = false; buttons(); drawCurves(); }
  function resume() { if (st.started && !st.done) { st.running = true; buttons(); loop(); } }
  async function single() {
    if (!st.started || st.running || st.busy || st.done) return null;
    st.busy = true;
    try { return await stepOnce(1); } catch (e) { message(e.message); return null; } finally { st.busy = false; buttons(); drawCurves(); }
  }

  /* accuracy per length 1..2L: the trained range left of the dashed line */
  async function lengths() {
    try {
      const r = await qkv.trainLengths(2 * st.L, 50);
      st.lengths = r;
      qkvDraw.barChart($('learn-len-chart'), r.lengths.map(x => ({ label: String(x.len), value: x.exact,
        colour: x.len <= r.trained[1] ? '#4a7' : '#d84' })), { xLabel: 'length (exact-match accuracy, %)', marker: r.trained[1], markerLabel: 'trained ≤ L' });
      return r;
    } catch (e) { message(e.message); return null; }
  }

  function init(info) {
    const sel = $('learn-pos');
    sel.innerHTML = info.schemes_tokens.map(n => `<option>${n}</option>`).join('');
    sel.value = info.schemes_tokens.includes('learned') ? 'learned' : info.schemes_tokens[0];
    $('learn-flags').placeholder = BASE;
    $('learn-start').addEventListener('click', start);
    $('learn-pause').addEventListener('click', pause);
    $('learn-resume').addEventListener('click', resume);
    $('learn-step').addEventListener('click', single);
    $('learn-lengths').addEventListener('click', lengths);
    buttons(); drawCurves();
  }

  const state = () => ({ running: st.running, busy: st.busy, started: st.started, done: st.done, step: st.step,
    steps: st.steps, seconds: st.seconds, losses: st.losses.slice(), accuracy: st.acc.slice(), lengths: st.lengths });
  return { init, start, pause, resume, step: single, lengths, state, drawMaps, caption, args, BASE };
})();
