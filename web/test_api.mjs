// test_api.mjs — the page's C API (web/api.h) in its WebAssembly build under Node,
// held to the native command line: node web/test_api.mjs MODULE.js ./qkv
//
// Every qkv_web_* call web/api.h declares is exported; the attention step's
// matrices and its finite-difference check are the numbers `qkv explain attention`
// prints; a 20-step reverse session's loss and metrics are `qkv train reverse`'s
// to the last printed digit; a checkpoint written by ./qkv opens from its bytes
// and predicts what `qkv attn` captions; bad input (a flag, a matrix, a symbol, a
// cut file) gets the command line's very line; a model too big for the heap is
// refused and the module keeps working. Exits 1 on the first failure.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const [modulePath, qkv] = process.argv.slice(2);
if (!modulePath || !qkv) {
  console.error('usage: node web/test_api.mjs build/web/node/qkv_page.js ./qkv');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const M = await require(path.resolve(modulePath))();
const call = (name, arg) => JSON.parse(M.ccall(name, 'string', ['string'], [JSON.stringify(arg)]));
const qkvBin = path.resolve(qkv);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'qkv-web-api-'));
let checks = 0;

function fail(what) {
  console.error(`test_api: FAILED: ${what}`);
  process.exit(1);
}
function expect(cond, what) {
  checks++;
  if (!cond) fail(what);
}
function cli(args, cwd = tmp) {
  const r = spawnSync(qkvBin, args, { cwd, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.trim().split('\n') };
}
// The command line's refusal line for args (its last stderr line, exit 2).
function cliError(args, cwd) {
  const r = cli(args, cwd);
  expect(r.status === 2, `qkv ${args.join(' ')} exits 2 (got ${r.status})`);
  return r.stderr[r.stderr.length - 1];
}
function sameRefusal(answer, args, what, cwd) {
  const line = cliError(args, cwd);
  expect(answer.ok === false && answer.error === line, `${what}: page "${answer.error}" vs command line "${line}"`);
}
const num = (x) => (typeof x === 'string' ? Number(x) : x);
const cnum = (s) => (s === '-inf' ? -Infinity : s === 'inf' ? Infinity : s === 'nan' || s === '-nan' ? NaN : Number(s));

// ---- every call exported -------------------------------------------------------
const header = fs.readFileSync(new URL('./api.h', import.meta.url), 'utf8');
const names = [...header.matchAll(/^(?:const char \*|void )(qkv_web_[a-z_]+)\(/gm)].map((m) => m[1]);
expect(names.length >= 14, `api.h declares the calls (${names.length})`);
for (const n of names) expect(typeof M['_' + n] === 'function', `${n} is exported`);
const info = call('qkv_web_info', {});
expect(info.ok && info.tasks.includes('reverse') && info.max_heap === 1073741824, 'info');
{ // the schemes' parameters: the rows `qkv explain attention`'s flags are (one list, explain.h)
  const help = cli(['explain', 'attention', '--help']).stdout;
  const pp = info.pos_params;
  expect(pp && info.schemes_tokens.every((s) => Array.isArray(pp[s])) && pp.none.length === 0 &&
    ['rope', 'p-rope', 'alibi', 't5', 'fire'].every((s) => pp[s].length > 0), `info.pos_params ${JSON.stringify(pp)}`);
  for (const p of Object.values(pp).flat())
    expect(p.name === p.flag.slice(2).replaceAll('-', '_') && help.includes(`${p.flag} `) && help.includes(p.label) &&
      p.default !== '' && num(p.min) <= num(p.max), `pos param ${JSON.stringify(p)} is a flag of explain attention's help`);
  const t5 = call('qkv_web_attention', { q: '1,0', k: '1,0; 0,1', v: '1; 2', pos: 't5', t5_buckets: 4 });
  expect(t5.ok && t5.matrices.find((m) => m.tensor.name === 'table').tensor.shape[0] === 4, `t5_buckets read: ${t5.error}`);
}

// ---- one attention step: the numbers `qkv explain attention` prints ----------------
// Its printout: "  NAME [r,c]  formula" then r rows of %9.4f numbers.
function parseExplain(text) {
  const out = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^ {2}(\S+)\s+\[(\d+),(\d+)\]/);
    if (!m) continue;
    const rows = +m[2], cols = +m[3], values = [];
    for (let r = 1; r <= rows; r++) values.push(...lines[i + r].trim().split(/\s+/).map(cnum));
    expect(values.length === rows * cols, `explain's ${m[1]} has ${rows}x${cols} numbers`);
    out.push({ name: m[1], values });
    i += rows;
  }
  return out;
}
const steps = [
  { req: { q: '1,0; 0,1; 1,1', k: '1,0; 0,1; 1,1', v: '1,2; 3,4; 5,6', mask: 'causal', pos: 'rope', loss: 'dot', seed: 3 },
    args: ['--q', '1,0; 0,1; 1,1', '--k', '1,0; 0,1; 1,1', '--v', '1,2; 3,4; 5,6', '--mask', 'causal', '--pos', 'rope',
      '--loss', 'dot', '--seed', '3'] },
  { req: { q: [[1, 0, 0.5, 1]], k: [[1, 0, 0, 1], [0, 1, 1, 0]], v: '1,2; 3,4', heads: 2, pos: 't5', loss: 'mse' },
    args: ['--q', '1,0,0.5,1', '--k', '1,0,0,1; 0,1,1,0', '--v', '1,2; 3,4', '--heads', '2', '--pos', 't5', '--loss', 'mse'] },
  { req: { q: '1,2', k: '1,0; 0,1; 1,1', v: '1; 2; 3', mask: 'padding', key_length: 2, pos: 'alibi' },
    args: ['--q', '1,2', '--k', '1,0; 0,1; 1,1', '--v', '1; 2; 3', '--mask', 'padding', '--key-length', '2', '--pos', 'alibi'] },
];
for (const s of steps) {
  const page = call('qkv_web_attention', s.req);
  expect(page.ok, `attention ${JSON.stringify(s.req)}: ${page.error}`);
  const r = cli(['explain', 'attention', ...s.args]);
  expect(r.status === 0, `qkv explain attention ${s.args.join(' ')}: ${r.stderr.join(' ')}`);
  const printed = parseExplain(r.stdout);
  expect(printed.length === page.matrices.length,
    `${printed.length} matrices printed, ${page.matrices.length} answered (${s.args.join(' ')})`);
  page.matrices.forEach((m, i) => {
    const p = printed[i];
    expect(p.name === m.tensor.name, `matrix ${i}: ${p.name} vs ${m.tensor.name}`);
    m.tensor.data.map(num).forEach((x, j) => {
      const y = p.values[j];
      const same = (x === y) || (Math.abs(x - y) <= 5.001e-5) || (Number.isNaN(x) && Number.isNaN(y));
      expect(same, `${m.tensor.name}[${j}]: page ${x}, command line ${y} (${s.args.join(' ')})`);
    });
  });
  const loss = r.stdout.match(/qkv_backward of L = (-?[\d.]+)/);
  expect(loss && Math.abs(num(page.loss) - Number(loss[1])) <= 5.001e-5, `loss ${page.loss} vs ${loss && loss[1]}`);
}
{ // the finite-difference check of one entry
  const req = { ...steps[0].req, tensor: 'q', row: 2, col: 1 };
  const page = call('qkv_web_attention_check', req);
  const r = cli(['explain', 'attention', ...steps[0].args, '--check', 'dq:2,1']);
  const m = r.stdout.match(/analytic \(the tape's backward\) (-?[\d.]+), numeric \(central difference, h = 1e-3\) (-?[\d.]+)/);
  expect(page.ok && m, `check: ${page.error} / ${r.stdout.slice(-300)}`);
  expect(num(page.analytic).toFixed(6) === Number(m[1]).toFixed(6) && num(page.numeric).toFixed(6) === Number(m[2]).toFixed(6),
    `check dq:2,1: page ${page.analytic} ${page.numeric}, command line ${m[1]} ${m[2]}`);
}
{ // tokens: embedded, projected; every weight with its gradient
  const t = call('qkv_web_attention', { tokens: '3 1 4 1', pos: 'sinusoidal', heads: 2, width: 4, mask: 'causal' });
  expect(t.ok && t.weights.map((w) => w.name).join() === 'embed,wq,wk,wv' && t.matrices.length > 10, `tokens: ${t.error}`);
  const edited = call('qkv_web_attention', { tokens: '3 1 4 1', pos: 'sinusoidal', heads: 2, width: 4, mask: 'causal',
    weights: { wq: t.weights[1].data.reduce((rows, x, i) => (i % 4 ? rows[rows.length - 1].push(x) : rows.push([x]), rows), []) } });
  expect(edited.ok && JSON.stringify(edited.matrices[0]) === JSON.stringify(t.matrices[0]), 'the returned weights, given back, give the same Q');
}
// the scalar fields go through the command's own flag rows (train/experiments/explain_fields.h)
for (const [key, flag, value] of [['heads', '--heads', 3], ['t5_buckets', '--t5-buckets', 2000], ['scale', '--scale', -1],
  ['fire_c', '--fire-c', 'x'], ['key_length', '--key-length', 9], ['seed', '--seed', 1.5]])
  sameRefusal(call('qkv_web_attention', { q: '1', k: '1', v: '1', pos: key.startsWith('t5') ? 't5' : 'none', [key]: value }),
    ['explain', 'attention', '--q', '1', '--k', '1', '--v', '1', '--pos', key.startsWith('t5') ? 't5' : 'none', flag, String(value)],
    `"${key}": ${value}`);
sameRefusal(call('qkv_web_attention', { q: '1,x', k: '1', v: '1' }), ['explain', 'attention', '--q', '1,x', '--k', '1', '--v', '1'], 'a bad matrix');
sameRefusal(call('qkv_web_attention', { q: '1', k: '1', v: '1', pos: 'ropee' }),
  ['explain', 'attention', '--q', '1', '--k', '1', '--v', '1', '--pos', 'ropee'], 'an unknown scheme');
sameRefusal(call('qkv_web_attention', { q: '1,2,3', k: '1,2', v: '1' }),
  ['explain', 'attention', '--q', '1,2,3', '--k', '1,2', '--v', '1'], 'sizes that disagree');

// ---- watch it learn: `qkv train reverse` to the last digit --------------------------
{
  const args = ['--steps', '20', '--eval-every', '0', '--threads', '1'];
  const start = call('qkv_web_train_start', { task: 'reverse', args });
  expect(start.ok && start.memory.budget > 0, `train_start: ${start.error}`);
  let answer;
  for (let i = 0; i < 3; i++) answer = call('qkv_web_train_step', { steps: 10 });
  expect(answer.ok && answer.done && answer.step === 20, `20 steps: ${JSON.stringify(answer).slice(0, 300)}`);
  const final = cli(['train', 'reverse', ...args]).stdout.match(/final: .* loss=([\d.]+) token_acc=([\d.]+) seq_acc=([\d.]+)/);
  const ev = answer.evaluated[answer.evaluated.length - 1].metrics;
  expect(final && num(answer.loss).toFixed(4) === final[1], `loss ${answer.loss} vs qkv train's ${final && final[1]}`);
  expect(num(ev.token_acc).toFixed(4) === final[2] && num(ev.seq_acc).toFixed(4) === final[3],
    `metrics ${JSON.stringify(ev)} vs ${final[2]} ${final[3]}`);
  const maps = call('qkv_web_train_maps', {});
  expect(maps.ok && maps.rows.length === 2 && maps.rows[0].weights.shape.join() === '4,16,16', `train_maps: ${maps.error}`);
}
{ // length generalization in miniature, and the tape of a step
  const start = call('qkv_web_train_start', { task: 'reverse',
    flags: { '--steps': 40, '--len': 4, '--arch': 'decoder', '--pos': 'rope', '--dim': 32, '--layers': 1 } });
  expect(start.ok, `train_start decoder: ${start.error}`);
  call('qkv_web_train_step', { steps: 5 });
  const lengths = call('qkv_web_train_lengths', { to: 8, test_size: 20 });
  expect(lengths.ok && lengths.lengths.length === 8 && lengths.trained.join() === '4,4', `train_lengths: ${lengths.error}`);
  const tape = call('qkv_web_tape', {});
  expect(tape.ok && tape.nodes.length > tape.n_nodes && tape.nodes.some((n) => n.op === 'attention'), `tape: ${tape.error}`);
  const node = call('qkv_web_tape_node', { id: tape.n_nodes - 1 });
  expect(node.ok && node.value.data.length >= 1, `tape_node: ${node.error}`);
}
sameRefusal(call('qkv_web_train_start', { task: 'reverse', args: ['--steps', 'x'] }), ['train', 'reverse', '--steps', 'x'], 'a bad flag');
sameRefusal(call('qkv_web_train_start', { task: 'reverse', flags: { '--heads': 3 } }), ['train', 'reverse', '--heads', '3'], 'a bad combination');
{ // too big for the heap: refused, and the module goes on
  const big = call('qkv_web_train_start', { task: 'reverse', flags: { '--dim': 2048, '--layers': 24 } });
  expect(!big.ok && /memory/.test(big.error), `a model too big for the heap: ${JSON.stringify(big).slice(0, 300)}`);
  console.log(`test_api: too big: ${big.error}`);
  expect(call('qkv_web_info', {}).ok, 'the module keeps working after the refusal');
}

// ---- open a model ------------------------------------------------------------------
function openBytes(bytes, name) {
  const b = call('qkv_web_buffer', { bytes: bytes.length });
  expect(b.ok, `buffer: ${b.error}`);
  M.HEAPU8.set(bytes, b.pointer);
  return call('qkv_web_model_open', { name });
}
{
  const saved = cli(['train', 'reverse', '--steps', '40', '--len', '4', '--dim', '32', '--layers', '1', '--quiet',
    '--save', 'r.safetensors', '--threads', '1']);
  expect(saved.status === 0, `a checkpoint: ${saved.stderr.join(' ')}`);
  const bytes = fs.readFileSync(path.join(tmp, 'r.safetensors'));
  const opened = openBytes(bytes, 'r.safetensors');
  expect(opened.ok && opened.task === 'reverse' && opened.settings.dim === '32' && opened.step === 40, `model_open: ${opened.error}`);
  const maps = call('qkv_web_model_attention', { input: '3 1 4 1' });
  const caption = cli(['attn', 'r.safetensors', '--input', '3 1 4 1', '--out', 'a.png']).stdout.match(/input 3 1 4 1 -> ([\d ]+)/);
  expect(maps.ok && caption && maps.output.join(' ') === caption[1].trim(), `maps: ${maps.error} / ${caption}`);
  const grads = call('qkv_web_model_attention', { input: '3 1 4 1', grads: true });
  expect(grads.ok && grads.target.join(' ') === '1 4 1 3' && Number.isFinite(num(grads.loss)) &&
    ['dP', 'dS', 'dQ', 'dK', 'dV'].every((k) => grads.rows.every((r) => r[k] && r[k].shape[0] === 4)),
    `model_attention with grads (qkv attn --grads): ${grads.error}`);
  sameRefusal(call('qkv_web_model_attention', { input: '3 1 44 1' }), ['attn', 'r.safetensors', '--input', '3 1 44 1'], 'a symbol');
  sameRefusal(call('qkv_web_model_attention', { input: '3 1 4' }), ['attn', 'r.safetensors', '--input', '3 1 4'], 'an untrained length');
  fs.writeFileSync(path.join(tmp, 'cut.safetensors'), bytes.subarray(0, 300));
  sameRefusal(openBytes(bytes.subarray(0, 300), 'cut.safetensors'), ['attn', 'cut.safetensors', '--input', '1'], 'a cut file');
  const flipped = Buffer.from(bytes);
  flipped.write('{"x', 8);
  fs.writeFileSync(path.join(tmp, 'bad.safetensors'), flipped);
  sameRefusal(openBytes(flipped, 'bad.safetensors'), ['attn', 'bad.safetensors', '--input', '1'], 'a corrupted header');
  expect(cli(['train', 'spirals', '--steps', '2', '--quiet', '--save', 'sp.safetensors']).status === 0, 'a spirals checkpoint');
  sameRefusal(openBytes(fs.readFileSync(path.join(tmp, 'sp.safetensors')), 'sp.safetensors'),
    ['attn', 'sp.safetensors', '--input', '1'], 'a foreign checkpoint');
  expect(call('qkv_web_info', {}).ok, 'the module keeps working after the refusals');
}
M._qkv_web_reset();
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`test_api: ${checks} checks passed`);
