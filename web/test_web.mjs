/* test_web.mjs — `make test-web`'s driver: serves the built site on 127.0.0.1
 * with a small static server, drives Debian's chromium headless through every
 * view of the page with playwright-core (pinned in web/package.json), compares
 * the numbers the page shows with the native command line's, and fails on any
 * console error, page error or request that leaves 127.0.0.1. A screenshot of
 * each view goes to build/web-shots/. Waits have generous timeouts; nothing
 * asserts how long anything took.
 *
 * usage: node web/test_web.mjs [SITE=build/web] [QKV=./qkv] [SHOTS=build/web-shots]
 * Ends with "N passed, N failed"; exit 0 only when none failed.
 */
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const site = path.resolve(process.argv[2] || path.join(root, 'build/web'));
const qkvBin = path.resolve(process.argv[3] || path.join(root, 'qkv'));
const shots = path.resolve(process.argv[4] || path.join(root, 'build/web-shots'));
const WAIT = 600000; /* the longest any wait may take before the test gives up (not an assertion of speed) */

let passed = 0, failed = 0;
function check(ok, what, detail) {
  if (ok) { passed++; console.log(`ok   ${what}`); } else { failed++; console.log(`FAIL ${what}${detail ? ': ' + detail : ''}`); }
  return ok;
}

/* ---- the static server: files under `site` only, nothing else ---- */
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm', '.png': 'image/png' };
function serve(dir) {
  const server = http.createServer((req, res) => {
    const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = path.join(dir, rel.endsWith('/') ? rel + 'index.html' : rel);
    if (!file.startsWith(dir + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/* ---- the command line's numbers: "  NAME [r,c] ..." then rows of numbers ---- */
function cliMatrices(text) {
  const out = {};
  let cur = null;
  for (const line of text.split('\n')) {
    const h = /^ {2}(\w+)\s+\[(\d+(?:,\d+)*)\]/.exec(line);
    if (h) { cur = out[h[1]] = []; continue; }
    if (cur && /^\s+-?\d+\.\d+(\s+-?\d+\.\d+)*\s*$/.test(line)) { cur.push(line.trim().split(/\s+/).join(' ')); continue; }
    cur = null;
  }
  return out;
}
function runQkv(args, cwd) {
  const r = spawnSync(qkvBin, args, { cwd: cwd || root, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr.trim() };
}

const server = await serve(site);
const url = `http://127.0.0.1:${server.address().port}/`;
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'qkv-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1360, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const page = context.pages()[0] || await context.newPage();
page.setDefaultTimeout(WAIT);
const errors = [];
page.on('console', m => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
page.on('pageerror', e => errors.push('page error: ' + e.message));
await context.route('**/*', r => {
  const u = new URL(r.request().url());
  if (u.hostname !== '127.0.0.1') { errors.push('request left 127.0.0.1: ' + u.href); return r.abort(); }
  return r.continue();
});
fs.mkdirSync(shots, { recursive: true });
/* the whole page as PNG, and its first screen as a small JPEG (docs/img/web_*.jpg are such) */
const shot = async name => {
  await page.screenshot({ path: path.join(shots, name + '.png'), fullPage: true });
  await page.screenshot({ path: path.join(shots, name + '.jpg'), type: 'jpeg', quality: 70 });
};
const msgOf = id => page.locator('#' + id).textContent();
const shown = async (sel, name) => (await page.locator(`${sel} figure.heat[data-name="${name}"] pre.values`).first().textContent())
  .split('\n').map(l => l.trim().split(/\s+/).join(' '));

try {
  await page.goto(url);
  const info = await page.evaluate(() => qkv.ready);
  check(info && info.ok, 'the page loads the WebAssembly module', info ? '' : await msgOf('status'));

  /* ---- (1) one attention step: typed Q, K, V against `qkv explain attention` ---- */
  const Q = '1 0\n0.5 -1\n2 1', K = '1 0\n0 1\n-1 0.5', V = '1 0\n0 2\n2 2';
  await page.fill('#att-q', Q); await page.fill('#att-k', K); await page.fill('#att-v', V);
  await page.selectOption('#att-mask', 'causal');
  await page.selectOption('#att-loss', 'dot');
  await page.fill('#att-target', '1 2\n1 2\n1 2');
  await page.click('#att-form button[type=submit]');
  await page.waitForFunction(() => qkv.views.attention.last() && qkv.views.attention.last().tq === 3);
  const flat = s => s.split('\n').map(r => r.trim().split(/\s+/).join(',')).join(';');
  /* the loss weights C typed on the page are the command line's --target */
  const cli = runQkv(['explain', 'attention', '--mask', 'causal', '--q', flat(Q), '--k', flat(K), '--v', flat(V),
    '--loss', 'dot', '--target', '1,2;1,2;1,2']);
  if (check(cli.code === 0, 'qkv explain attention takes the same Q, K, V', cli.err)) {
    const want = cliMatrices(cli.out);
    for (const name of ['P', 'O', 'dO', 'D', 'dP', 'dS', 'dQ', 'dK', 'dV']) {
      if (!want[name]) { check(false, `the command line prints ${name}`); continue; }
      const got = await shown('#view-attention', name).catch(() => null);
      check(got && got.join('|') === want[name].join('|'), `page's ${name} equals the command line's`,
        `page ${got && got.join('|')} cli ${want[name].join('|')}`);
    }
  }
  const dLines = (await page.locator('#att-D pre').textContent()).split('\n').filter(l => /^D_\d/.test(l));
  const dCli = cli.out.split('\n').map(l => l.trim()).filter(l => /^D_\d/.test(l));
  check(dLines.length === 3 && dLines.join('|') === dCli.join('|'), 'D_i = rowsum(dO ∘ O) is written out as the command line writes it',
    `page ${dLines.join('|')} cli ${dCli.join('|')}`);
  /* the finite-difference check of one entry, picked by a click on dQ */
  const dq = page.locator('#att-backward figure.heat[data-name="dQ"] canvas');
  await dq.click({ position: { x: 5, y: 5 } });
  await page.click('#att-check-go');
  await page.waitForFunction(() => /finite differences/.test(document.getElementById('att-check-out').textContent));
  const nums = (await msgOf('att-check-out')).match(/-?\d+(\.\d+)?(e-?\d+)?/g).map(Number);
  check(Math.abs(nums[0] - nums[2]) <= 1e-2 * Math.max(1, Math.abs(nums[0])), 'check: the tape and finite differences agree on dQ[0,0,0]', nums.join(' '));
  /* two heads and tokens with the seeded layer */
  await page.check('input[name=att-mode][value=tokens]');
  await page.waitForFunction(() => qkv.views.attention.last() && qkv.views.attention.last().weights);
  await page.selectOption('#att-heads', '2');
  await page.waitForFunction(() => qkv.views.attention.last().heads === 2);
  check(await page.locator('#att-weights textarea').count() >= 4, 'tokens: the seeded weights are shown and editable');
  await page.check('input[name=att-mode][value=qkv]');
  await page.selectOption('#att-heads', '1');
  await page.fill('#att-q', Q); await page.fill('#att-k', K); await page.fill('#att-v', V);
  await page.selectOption('#att-pos', 'alibi');
  await page.click('#att-form button[type=submit]');
  await page.waitForFunction(() => qkv.views.attention.last().tq === 3 && qkv.views.attention.last().heads === 1);
  check(await page.locator('#att-pos-params input').count() > 0, 'a position scheme shows its parameters');
  await shot('attention');
  /* bad input: not a number, then too many rows; the page keeps working */
  await page.fill('#att-q', '1 0\nzero 1\n2 1');
  await page.click('#att-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('att-msg').textContent.length > 0);
  check(/q/i.test(await msgOf('att-msg')), 'not a number: a message on the page', await msgOf('att-msg'));
  await page.fill('#att-q', Array(9).fill('1 0').join('\n'));
  await page.click('#att-form button[type=submit]');
  await page.waitForFunction(() => /8/.test(document.getElementById('att-msg').textContent));
  check(true, 'nine queries: refused with the limit named', await msgOf('att-msg'));
  await page.fill('#att-q', Q);
  await page.click('#att-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('att-msg').textContent === '');
  check(true, 'after bad input the page computes again');
  /* K and V left empty: the worked example's, as `qkv explain attention --q 1` */
  await page.fill('#att-q', '1'); await page.fill('#att-k', ''); await page.fill('#att-v', '');
  await page.selectOption('#att-pos', 'none');
  await page.click('#att-form button[type=submit]');
  await page.waitForFunction(() => qkv.views.attention.last().tk === 3 && qkv.views.attention.last().tq === 1);
  check(await msgOf('att-msg') === '', 'empty K and V boxes: the worked example fills them, no message');

  /* ---- (2) watch it learn: reversal to 100% in the worker ---- */
  await page.evaluate(() => qkv.show('learn'));
  /* a model too big for the heap: refused with the estimate, as the command line refuses it */
  await page.fill('#learn-flags', '--dim 4096 --layers 64 --heads 2 --ff 16384');
  await page.click('#learn-start');
  await page.waitForFunction(() => document.getElementById('learn-msg').textContent.length > 0);
  check(/MiB|memory/.test(await msgOf('learn-msg')), 'a model too big for the page\'s heap is refused with its estimate', await msgOf('learn-msg'));
  await page.fill('#learn-flags', '');
  const r = await page.evaluate(() => qkv.views.learn.start());
  check(r && r.ok, 'training starts in the worker', await msgOf('learn-msg'));
  await page.waitForFunction(() => qkv.views.learn.state().step >= 3);
  await page.click('#learn-pause');
  await page.waitForFunction(() => !qkv.views.learn.state().busy);
  const before = (await page.evaluate(() => qkv.views.learn.state())).step;
  await page.click('#learn-step');
  await page.waitForFunction(b => qkv.views.learn.state().step === b + 1 && !qkv.views.learn.state().busy, before);
  check(true, 'pause, then one single step');
  const clicks = await page.evaluate(() => { let n = 0; const b = document.getElementById('tabs'); b.addEventListener('click', () => n++); b.querySelector('button').click(); b.querySelectorAll('button')[1].click(); return n; });
  await page.click('#learn-resume');
  /* the page answers while the worker trains */
  const t0 = Date.now();
  await page.evaluate(() => new Promise(r => setTimeout(r, 50)));
  check(clicks === 2 && Date.now() - t0 < WAIT, 'the page stays responsive while training');
  await page.waitForFunction(() => qkv.views.learn.state().done && qkv.views.learn.state().lengths, null, { timeout: WAIT, polling: 500 });
  const s = await page.evaluate(() => qkv.views.learn.state());
  const acc = s.accuracy.length ? s.accuracy[s.accuracy.length - 1][1] : 0;
  check(acc === 1, 'reversal reaches 100% held-out sequence accuracy', `at step ${s.step}: ${acc}`);
  console.log(`# trained to ${acc * 100}% in ${s.step} steps, ${s.seconds.toFixed(1)} s of worker time`);
  check(s.lengths.lengths.length >= 2 * s.lengths.trained[1], 'accuracy per length up to 2L', JSON.stringify(s.lengths.trained));
  check(await page.locator('#learn-maps figure.heat').count() >= 2, 'every layer and head has its attention map');
  await shot('learn');

  /* ---- (3) the tape of one training step ---- */
  /* the run is over, so the tape is refused with a message; a new run's next step is drawn */
  await page.evaluate(() => qkv.show('tape'));
  await page.click('#tape-train');
  await page.waitForFunction(() => document.getElementById('tape-msg').textContent.length > 0);
  check(/over/.test(await msgOf('tape-msg')), 'the tape of a finished run: a message on the page', await msgOf('tape-msg'));
  await page.evaluate(() => { qkv.show('learn'); return qkv.views.learn.start(); });
  await page.click('#learn-pause');
  await page.waitForFunction(() => !qkv.views.learn.state().busy);
  await page.evaluate(() => qkv.show('tape'));
  await page.click('#tape-train');
  await page.waitForSelector('#tape-graph svg .node');
  const nodes = await page.locator('#tape-graph svg .node').count();
  check(nodes > 10, 'the tape is drawn, one box per node', String(nodes));
  await page.locator('#tape-graph svg .node:not(.leaf):not(.param)').nth(2).click();
  await page.waitForSelector('#tape-node figure.heat');
  check(await page.locator('#tape-node figure.heat').count() >= 2, 'a click shows the node\'s tensor and gradient');
  await shot('tape');

  /* ---- (4) open a model: the fixture checkpoint against `qkv attn`, then a corrupted copy ---- */
  await page.evaluate(() => qkv.show('open'));
  const ckpt = path.join(root, 'tests/ref/tasks/reverse.safetensors');
  const input = '3 1 4 1 5 9 2 6 5 3 5 8 9 7 9 3';
  await page.fill('#open-input', input);
  await page.setInputFiles('#open-file', ckpt);
  await page.waitForSelector('#open-maps figure.heat');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qkv-web-'));
  const a = runQkv(['attn', ckpt, '--input', input, '--out', path.join(tmp, 'a.png')]);
  const line = a.out.split('\n').find(l => l.startsWith('input '));
  const want = line ? line.split('->')[1].trim() : '?';
  const got = (await msgOf('open-output')).split('→ the model\'s output')[1] || '';
  check(got.trim() === want, 'the opened model predicts what `qkv attn` predicts', `page '${got}' cli '${want}'`);
  const title = a.out.split('\n')[0];
  check((await msgOf('open-output')).startsWith(title + ':'), 'the maps are titled as `qkv attn` titles them', title);
  check(await page.locator('#open-settings tr').count() > 3, 'the checkpoint\'s settings are shown');
  await page.check('#open-grads');
  await page.waitForSelector('#open-maps figure.heat[data-name^="dS"]');
  check(/loss/.test(await msgOf('open-output')), 'the opened model\'s attention gradients under its training loss', await msgOf('open-output'));
  await page.uncheck('#open-grads');
  await page.waitForFunction(() => !document.querySelector('#open-maps figure.heat[data-name^="dS"]'));
  await shot('open');
  const bad = path.join(tmp, 'broken.safetensors');
  fs.writeFileSync(bad, fs.readFileSync(ckpt).subarray(0, 300));
  const refusal = runQkv(['attn', 'broken.safetensors', '--input', input, '--out', 'a.png'], tmp);
  await page.setInputFiles('#open-file', bad);
  await page.waitForFunction(() => document.getElementById('open-msg').textContent.length > 0);
  check(await msgOf('open-msg') === refusal.err, 'a corrupted file gets the command line\'s one-line refusal',
    `page '${await msgOf('open-msg')}' cli '${refusal.err}'`);
  await page.setInputFiles('#open-file', ckpt);
  await page.waitForSelector('#open-maps figure.heat');
  check((await msgOf('open-msg')) === '', 'after a refused file the page opens a good one');
  fs.rmSync(tmp, { recursive: true, force: true });
} catch (e) {
  check(false, 'the run went through', e.message.split('\n')[0]);
  await shot('failure').catch(() => {});
} finally {
  check(errors.length === 0, 'no console error, page error or outside request', errors.join(' | '));
  await context.close();
  server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(`test-web: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
