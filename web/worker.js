/* worker.js — the Web Worker that holds qkv's WebAssembly module (qkv_page.js,
 * web/api.h) so training and every other computation run off the page's thread.
 *
 * Messages in:  {id, call: 'qkv_web_*', arg: {...}}            one C call
 *               {id, call: 'open', name, bytes: ArrayBuffer}    a checkpoint: copied
 *                  into the API's buffer (qkv_web_buffer), then qkv_web_model_open
 * Messages out: {id, result: <the call's JSON, parsed>}  ("ok" false: the module's
 *               one-line refusal, for the page to show), or {id, fault: text} when
 *               the module itself could not run (not loaded, a trap).
 * Calls run one at a time in arrival order; a long training is many short
 * qkv_web_train_step calls from the page, so every other call gets its turn.
 * A stop inside the library ("stopped": true, e.g. a model too big for the heap
 * refused while it was made) leaves what was made by then in the module's heap:
 * the worker then starts a fresh instance of the module, whose heap is empty
 * again, and drops the old one (its session and opened model were forgotten by
 * the stop anyway).
 */
'use strict';

let module = null, loadError = null;
let ready = (async () => {
  try {
    importScripts('qkv_page.js');
    module = await createQkvPage(); /* eslint-disable-line no-undef */
  } catch (e) {
    loadError = 'the WebAssembly module did not load: ' + (e && e.message || e);
  }
})();

/* A fresh instance after a stop (see above); until it is made, calls wait. */
function restart() {
  module = null;
  ready = (async () => {
    try {
      module = await createQkvPage(); /* eslint-disable-line no-undef */
    } catch (e) {
      loadError = 'the WebAssembly module did not restart: ' + (e && e.message || e);
    }
  })();
}

function call(name, arg) {
  if (!/^qkv_web_[a-z_]+$/.test(name)) return { ok: false, error: `qkv web: no call named '${name}'` };
  const text = module.ccall(name, 'string', ['string'], [JSON.stringify(arg || {})]);
  return JSON.parse(text);
}

function open(name, bytes) {
  const data = new Uint8Array(bytes);
  const buf = call('qkv_web_buffer', { bytes: data.length });
  if (!buf.ok) return buf;
  module.HEAPU8.set(data, buf.pointer);
  return call('qkv_web_model_open', { bytes: data.length, name });
}

self.onmessage = async ev => {
  const m = ev.data;
  await ready;
  if (!module) { self.postMessage({ id: m.id, fault: loadError }); return; }
  try {
    const result = m.call === 'open' ? open(m.name, m.bytes) : call(m.call, m.arg);
    if (result && result.stopped) restart();
    self.postMessage({ id: m.id, result });
  } catch (e) {
    self.postMessage({ id: m.id, fault: 'the WebAssembly module stopped: ' + (e && e.message || e) });
  }
};
