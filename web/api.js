/* api.js — window.qkv: the page's calls, the very ones its views use, for tests
 * and users to script (docs/web.md lists them). Each returns a Promise of the
 * WebAssembly module's answer (web/api.h) with "ok" true; a refusal rejects
 * with an Error whose message is the command line's one-line message. The module
 * lives in a Web Worker (worker.js); calls queue there and run one at a time.
 */
'use strict';

(() => {
  const worker = new Worker('worker.js');
  const pending = new Map();
  let next = 1;
  worker.onmessage = ev => {
    const m = ev.data, p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.fault) p.reject(new Error(m.fault));
    else if (!m.result || !m.result.ok) p.reject(new Error(m.result && m.result.error || 'qkv web: no answer'));
    else p.resolve(m.result);
  };
  worker.onerror = ev => {
    ev.preventDefault();
    for (const p of pending.values()) p.reject(new Error('the worker failed: ' + (ev.message || 'unknown')));
    pending.clear();
  };
  function post(msg, transfer) {
    return new Promise((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      worker.postMessage(Object.assign({ id }, msg), transfer || []);
    });
  }
  const c = (name, arg) => post({ call: 'qkv_web_' + name, arg: arg || {} });

  const qkv = {
    /* module tables: tasks, masks, schemes, losses, limits, heap budget */
    info: () => c('info'),
    /* one attention step (api.h's A) -> {mask, tq, tk, heads, d_head, dv_head, scale, loss, fused_diff, setup, matrices by section} */
    attention: a => c('attention', a),
    /* A + {tensor: 'q'|'k'|'v', row, col} -> {tensor, row, col, analytic, numeric, difference, h} */
    check: a => c('attention_check', a),
    /* {task, args | flags, probe} -> settings and memory of a new training session */
    trainStart: s => c('train_start', s),
    /* {steps} -> {step, done, losses, evaluated} */
    trainStep: n => c('train_step', { steps: n }),
    trainEvaluate: () => c('train_evaluate'),
    /* {input} (optional) -> maps of the session's model */
    trainMaps: input => c('train_maps', input ? { input } : {}),
    /* up to length `to`: exact-match and token accuracy per length */
    trainLengths: (to, testSize) => c('train_lengths', { to, test_size: testSize || 50 }),
    /* the next training step of the session, forward and backward (the model unchanged) -> {step, loss, n_nodes, nodes} */
    tape: () => c('tape'),
    tapeNode: id => c('tape_node', { id }),
    /* a checkpoint's bytes (ArrayBuffer, Uint8Array or Blob) -> its settings */
    open: async (bytes, name) => {
      if (bytes instanceof Blob) bytes = await bytes.arrayBuffer();
      const buf = bytes instanceof ArrayBuffer ? bytes.slice(0) : new Uint8Array(bytes).buffer.slice(0);
      return post({ call: 'open', name: name || 'model.safetensors', bytes: buf }, [buf]);
    },
    /* input "3 1 4", force, grads -> maps of the opened model (with grads: dP, dS, dQ, dK, dV per row) */
    modelAttention: (input, force, grads) => c('model_attention', { input, force: !!force, grads: !!grads }),
    /* the views, for scripts: qkv.show('learn'), and each view's own calls */
    show: null,
    views: {},
  };
  window.qkv = qkv;
})();
