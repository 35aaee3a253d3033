/* view_open.js — view (4), open a model: a checkpoint file the learner drops or
 * chooses goes to the module (qkv.open: the command line's checks, its one-line
 * refusal for a hostile or foreign file); its settings, and its attention maps
 * for a typed input (qkv.modelAttention), as `qkv attn` draws them.
 */
'use strict';

qkv.views.open = (() => {
  const $ = id => document.getElementById(id);
  let model = null;
  function message(text) { const m = $('open-msg'); m.textContent = text || ''; m.className = text ? 'msg error' : 'msg'; }

  function showSettings(r) {
    const box = $('open-settings');
    const esc = v => String(v).replace(/&/g, '&amp;').replace(/</g, '&lt;');
    const table = (title, kv) => `<div><h3>${title}</h3><table>` +
      Object.entries(kv || {}).map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('') + '</table></div>';
    box.innerHTML = `<h2>${esc(r.name)}: ${esc(r.task)}, step ${r.step}, symbols 0..${r.vocab - 1}, trained on lengths ${r.trained.join('..')}</h2>` +
      `<div class="row">${table('the model', r.settings)}${table('its training', r.training)}</div>`;
  }

  async function openBytes(bytes, name) {
    model = null;
    $('open-settings').innerHTML = ''; $('open-maps').innerHTML = ''; $('open-output').textContent = '';
    try {
      const r = await qkv.open(bytes, name);
      model = r;
      message('');
      showSettings(r);
      await draw();
      return r;
    } catch (e) { message(e.message); return null; }
  }

  async function draw(ev) {
    if (ev) ev.preventDefault();
    if (!model) { message('open a checkpoint first'); return null; }
    try {
      const r = await qkv.modelAttention($('open-input').value, $('open-force').checked, $('open-grads').checked);
      message('');
      $('open-output').textContent = `${qkv.views.learn.caption(r)}: input ${r.input.join(' ')} → the model's output ${r.output.join(' ')}` +
        (r.target ? ` · target ${r.target.join(' ')}, loss ${qkvDraw.fmt(r.loss)}` : '');
      qkv.views.learn.drawMaps($('open-maps'), r);
      return r;
    } catch (e) { message(e.message); return null; }
  }

  function init() {
    $('open-file').addEventListener('change', ev => { const f = ev.target.files[0]; if (f) openBytes(f, f.name); });
    const drop = $('open-drop');
    drop.addEventListener('dragover', ev => { ev.preventDefault(); drop.classList.add('over'); });
    drop.addEventListener('dragleave', () => drop.classList.remove('over'));
    drop.addEventListener('drop', ev => {
      ev.preventDefault(); drop.classList.remove('over');
      const f = ev.dataTransfer.files[0];
      if (f) openBytes(f, f.name);
    });
    $('open-form').addEventListener('submit', draw);
    $('open-grads').addEventListener('change', () => { if (model) draw(); });
  }
  return { init, open: openBytes, draw, model: () => model };
})();
