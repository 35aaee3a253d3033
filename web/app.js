/* app.js — starts the page: switches views, reads the module's tables
 * (qkv.info) and hands them to each view. qkv.show(name) switches views for
 * scripts; qkv.ready resolves once the first attention step is drawn.
 */
'use strict';

(() => {
  const $ = id => document.getElementById(id);
  function show(name) {
    document.querySelectorAll('.view').forEach(v => v.classList.toggle('on', v.id === 'view-' + name));
    document.querySelectorAll('#tabs button').forEach(b => b.classList.toggle('on', b.dataset.view === name));
    if (location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
  }
  qkv.show = show;
  document.querySelectorAll('#tabs button').forEach(b => b.addEventListener('click', () => show(b.dataset.view)));
  const first = location.hash.slice(1);
  if (['attention', 'learn', 'tape', 'open'].includes(first)) show(first);

  qkv.ready = (async () => {
    try {
      const info = await qkv.info();
      qkv.views.learn.init(info);
      qkv.views.tape.init(info);
      qkv.views.open.init(info);
      await qkv.views.attention.init(info);
      $('status').textContent = `ready · WebAssembly heap budget ${(info.max_heap / 2 ** 20).toFixed(0)} MiB`;
      $('version').textContent = `qkv ${info.version}`;
      return info;
    } catch (e) {
      $('status').textContent = e.message;
      $('status').classList.add('error');
      return null;
    }
  })();
})();
