/* api.h — the C API the page's WebAssembly module exports to JavaScript.
 *
 * Every call takes one JSON text and returns one JSON text. The returned text
 * belongs to the API: it stays valid until the next qkv_web_* call (one reused
 * buffer), so JavaScript copies it at once (ccall's 'string' return type does).
 * Every answer is an object with "ok":
 *     {"ok":true, ...the call's fields...}
 *     {"ok":false, "error":"<the command line's one-line message>"}
 * and an error is the very line the command line prints on stderr for the same
 * input ("qkv train reverse: --steps: expected an integer in [1, 10000000], got
 * 'x'", "qkv attn: --input: symbol 12 is outside the model's vocabulary 0..9").
 * A text that is not JSON, or a field of the wrong type, is refused in one line
 * ("qkv web: attention: \"q\" must be an array of rows of numbers"). Nothing
 * stops the module: after an error every call keeps working.
 *
 * Every number comes from the library's ops on a tape (the same code the command
 * line runs); JavaScript only draws. Numbers are written with 9 significant
 * digits (%.9g: a float32 reads back exactly); the non-finite ones, which JSON
 * has no literal for, as the strings "-Infinity", "Infinity", "NaN" (JavaScript's
 * Number() reads them back).
 *
 * A tensor is written as {"name":"dS", "shape":[3,3], "data":[...]} with data
 * row-major (the last dimension fastest).
 *
 * The module: build/web/qkv_page.js and build/web/qkv_page.wasm (web/api.mk,
 * `make web`), emscripten -sMODULARIZE=1 -sEXPORT_NAME=createQkvPage
 * -sENVIRONMENT=web,worker; build/web/node/qkv_page.js is the same for Node (the
 * tests, `make test-web-api`). A Worker loads it with
 *     importScripts('qkv_page.js');
 *     const M = await createQkvPage();
 *     const call = (name, arg) => JSON.parse(M.ccall(name, 'string', ['string'], [JSON.stringify(arg)]));
 *     call('qkv_web_info', {});
 * Exported: every qkv_web_* function below, _malloc and _free; runtime methods
 * ccall, cwrap, UTF8ToString, HEAPU8. The heap grows up to QKV_WEB_MAX_HEAP (1
 * GiB), the page's memory budget: a run too big for it is refused with the
 * session's estimate, or stopped while its model is made ({"ok":false, "error":
 * "qkv: making the task takes more memory than ...", "stopped":true}: what was
 * made by then stays allocated, so the page's worker starts a fresh instance of
 * the module after a stop: web/worker.js). Any library stop is such a refusal; the
 * module keeps answering.
 *
 * One training session and one opened model live at a time; starting another
 * replaces the one before.
 *
 * ---- the calls --------------------------------------------------------------
 *
 * qkv_web_info({})
 *   -> {"ok":true, "version":"0.3.0", "tasks":["reverse",...], "masks":["none",
 *       "causal","padding","keep"], "schemes_qkv":["none","rope","alibi","t5",
 *       "p-rope","fire"], "schemes_tokens":[...with "learned","sinusoidal"],
 *       "pos_params":{"none":[], "rope":[{"name":"rope_base", "flag":"--rope-base",
 *         "label":"rope, p-rope: the base (0: 10000)", "default":"10000", "min":0,
 *         "max":1000000000, "list":false}], ..., "alibi":[{"name":"slopes", ...,
 *         "list":true}], ...} (for every scheme of schemes_tokens),
 *       "losses":["dot","mse"], "max_heap":1073741824,
 *       "limits":{"tokens":8, "width":8, "heads":2, "vocab":64}}
 *   The page builds its menus and the schemes' parameter fields from these
 *   tables; pos_params are train/experiments/explain.h's QKV_EXPLAIN_POS_PARAMS,
 *   the rows `qkv explain attention`'s flags are (name: the flag without dashes,
 *   the attention request's key; default: what absent or 0 means; min..max: the
 *   flag's range; list: one positive number per head).
 *
 * qkv_web_attention(A)  one attention step, forward and backward: what
 *   `qkv explain attention` prints for the same flags (A's keys are its flags
 *   without the dashes, '-' as '_'), from train/experiments/explain.h's
 *   qkv_explain_step. Absent keys take the command's defaults. The scalar keys
 *   (a number, or its text; "slopes" also an array) are read by the command's
 *   own flag rows (train/experiments/explain_fields.h), so a bad one gets the
 *   command line's line ("qkv explain attention: --heads: expected an integer
 *   in [1, 2], got '3'").
 *   A = {
 *     typed: "q", "k", "v": rows, as a string in the command line's syntax
 *       "1,0; 0,1" or as [[1,0],[0,1]] (up to 8 rows; heads * d columns, d <= 8),
 *     or tokens (self-attention): "tokens": "3 1 4" or [3,1,4] (symbols
 *       0..vocab-1, at most 8), "vocab": 10, "width": 4 (Q/K/V columns, heads * d),
 *       "weights": {"embed": rows, "wq", "wk", "wv", "pos": rows} (optional: the
 *       edited values of the seeded ones, shapes as returned),
 *     "heads": 1 | 2,
 *     "mask": "none" | "causal" | "padding" | "keep", "key_length": N (padding:
 *       keys 0..N-1 real; default all but the last), "keep": rows [Tq][Tk] of 1/0,
 *     "pos": a name of info's schemes_qkv (typed) or schemes_tokens (tokens),
 *       with its parameters as info's pos_params name them ("rope_base",
 *       "p_rope", "slopes": [one per head], "t5_buckets", "t5_max_distance",
 *       "fire_width", "fire_c", "fire_l"; absent or 0: the default),
 *     "scale": the scores' scale (absent or 0: 1/sqrt(d)),
 *     "loss": "dot" (L = sum O * C) | "mse" (L = 1/2 sum (O - Y)^2), "target":
 *       rows (C or Y; default drawn from "seed"), "seed": 1
 *   }
 *   -> {"ok":true, "mask":"causal", "tq":3, "tk":3, "heads":1, "d_head":2,
 *       "dv_head":2, "scale":0.707106769, "loss":1.23, "fused_diff":0 (max
 *       |fused op - composed ops| over O, dQ, dK, dV), "setup":"one line per
 *       fact\n...",
 *       "matrices":[{"section":"inputs"|"positions"|"forward"|"backward",
 *                    "formula":"P * (dP - D)", "head":0 (-1: all heads),
 *                    "tensor":{"name":"dS","shape":[3,3],"data":[...]}}, ...],
 *       with tokens also "tokens":[3,1,4], "x":tensor X (embedded, positions
 *       added), "weights":[{"name":"embed"|"wq"|"wk"|"wv"|"pos", "shape", "data",
 *       "grad": dL/dW}]}
 *   "matrices" come in the order the command line prints them, by section:
 *     inputs     Q, K, V (all heads' columns), C (dot) or Y (mse);
 *     positions  the scheme's own (alibi: slopes; t5: bucket, table; fire: u and
 *                its network's parameters); absent for none, rope, p-rope;
 *     forward    scale, M (the mask, -Infinity where hidden), then per head S0 =
 *                Q K^T, S (scaled), B (bias, when the scheme has one), S', P, O,
 *                and with two heads O of all heads;
 *     backward   dO (all heads), then per head dO, dO*O, D = rowsum(dO * O), dV,
 *                dP, dS, dB (when B), dQ, dK; with two heads dQ, dK, dV of all
 *                heads; then the gradients of the scheme's parameters (dtable...).
 *
 * qkv_web_attention_check(A + {"tensor":"q"|"k"|"v", "row":I, "col":J})
 *   -> {"ok":true, "tensor":"q", "row":1, "col":0, "analytic":-0.2275973,
 *       "numeric":-0.2276966, "difference":9.9e-05, "h":0.001}
 *   The tape's dL/dX[I][J] and the central difference (L(x+h) - L(x-h)) / 2h
 *   (`qkv explain attention ... --check dq:I,J`); I and J index the all-heads
 *   matrix (0..15 read, the step refuses an entry outside it). With tokens, X is
 *   the projected Q, K or V.
 *
 * qkv_web_train_start({"task":"reverse", "args":["--steps","300","--pos","rope"]})
 *   ("flags":{"--steps":300,"--pos":"rope","--quiet":true} is the same as args),
 *   "probe":"3 1 4 1" (optional: the maps' default input; else the symbols 0, 1,
 *   ... of the longest trained length)
 *   -> {"ok":true, "task":"reverse", "steps":300, "eval_every":50,
 *       "settings":{...the checkpoint's description: "dim":"64", "pos":"rope"...},
 *       "memory":{"bytes":47698396, "budget":1073741824}, "parameters":102797}
 *   Prepared as `qkv train reverse ARGS` prepares it (train/tasks/train_run.h):
 *   the same checks and one-line errors, the memory judged against the heap.
 *   --save, --json, --csv, --plot, --dot and --resume are refused (no files).
 *
 * qkv_web_train_step({"steps":10})
 *   -> {"ok":true, "losses":[[31,2.31],...,[40,2.02]],
 *       "evaluated":[{"step":40, "metrics":{"token_acc":0.5, "seq_acc":0.1}},
 *                    {"step":300, "final":true, "metrics":{...}}],
 *       "step":40, "loss":2.02, "done":false}
 *   Up to "steps" steps with the run's own evaluations (--eval-every), as
 *   `qkv train` takes them: the same losses to the last digit. At the last
 *   step the run ends as qkv_train ends it (the final evaluation) and "done".
 *
 * qkv_web_train_evaluate({})
 *   -> {"ok":true, "step":40, "loss":2.02, "metrics":{"token_acc":..,"seq_acc":..}}
 *
 * qkv_web_train_maps({"input":"3 1 4"})   (input optional: the probe)
 *   -> maps (below) of the session's model now (reverse, copy, sort).
 *
 * qkv_web_train_lengths({"to":16, "test_size":50})   length generalization
 *   -> {"ok":true, "step":40, "trained":[1,8], "lengths":[{"len":1,"exact":1,
 *       "token":1}, ..., {"len":16,"exact":0,"token":0.31}]}
 *   Greedy exact match and token accuracy at every length 1..to (default twice
 *   the longest trained), measured as `qkv experiment lengthgen` measures them
 *   (qkv_seq_model_accuracy_at); "to" at most what the model's positions allow.
 *
 * qkv_web_tape({})   the graph of one training step of the session: micro-batch
 *   0 of its next step, forward and backward (its gradients kept apart: the
 *   model and its training are not changed)
 *   -> {"ok":true, "step":41, "loss":2.3, "n_nodes":48,
 *       "nodes":[{"id":0, "leaf":0, "op":"embedding", "note":null, "shape":[16,9,32],
 *                 "inputs":[48], "input_names":[null], "value":{"min":..,"max":..,
 *                 "mean":..,"norm":..}, "grad_norm":0.0218}, ...]}
 *   Entries 0..n_nodes-1 are the nodes in tape order; the rest are the leaves
 *   (leaf 1: a parameter, its name as "op"; 2: another input); "inputs" are entry
 *   ids (-1: an absent optional input); "grad_norm" null when no gradient.
 * qkv_web_tape_node({"id":5})   one entry of the last qkv_web_tape
 *   -> {"ok":true, "node":{...as above}, "value":tensor, "grad":tensor or null}
 *
 * qkv_web_buffer({"bytes":N})
 *   -> {"ok":true, "pointer":P, "bytes":N}  N bytes the API owns (until the next
 *   qkv_web_buffer); JavaScript copies a file there: M.HEAPU8.set(bytes, P).
 * qkv_web_model_open({"name":"reverse.safetensors", "bytes":N (default: all)})
 *   -> {"ok":true, "name":"reverse.safetensors", "task":"reverse", "step":400,
 *       "settings":{...the checkpoint's config...}, "training":{...its train.
 *       settings...}, "vocab":10, "trained":[1,8], "longest_input":8}
 *   The buffer's bytes opened as `qkv attn NAME` opens the file: a hostile or
 *   foreign file gets its line ("qkv attn: NAME: header length ... runs past
 *   the end of the file (300 bytes)").
 * qkv_web_model_attention({"input":"3 1 4", "force":false, "grads":false})
 *   -> maps (below) of the opened model, as `qkv attn --input` draws them (an
 *      untrained length refused unless force; then "warning" says so); with
 *      grads, as `qkv attn --grads`: every row also has "dP", "dS" [heads, Tq,
 *      Tk], "dQ", "dK", "dV" [heads, rows, head width] under the training loss
 *      on the input and its target, and the answer "loss" and "target".
 *
 * maps = {"ok":true, "task":"reverse", "arch":"encoder", "pos":"learned",
 *         "step":60, "input":["3","1","4"], "output":["4","1","3"],
 *         "warning":"", "heads":4,
 *         "rows":[{"what":"" | "enc " | "dec self " | "dec cross ", "layer":0,
 *                  "q_labels":["0:3",..], "k_labels":[..],
 *                  "weights":{"shape":[heads, Tq, Tk], "data":[...]}}, ...]}
 *   (`qkv attn`'s grid: one row per layer, one map per head.)
 *
 * qkv_web_reset()   frees every session, model, tape and buffer (tests).
 */
#ifndef QKV_WEB_API_H
#define QKV_WEB_API_H

#include <stddef.h>

#include "train/viz/attn_maps.h"

/* The heap's maximum (-sMAXIMUM_MEMORY): the page's memory budget. */
#define QKV_WEB_MAX_HEAP ((size_t)1 << 30)
/* A map's side at most (train/viz/attn_maps.h's, as `qkv attn` draws). */
#define QKV_WEB_MAPS_MAX_TOKENS QKV_ATTN_MAX_TOKENS

const char *qkv_web_info(const char *json);
const char *qkv_web_attention(const char *json);
const char *qkv_web_attention_check(const char *json);
const char *qkv_web_train_start(const char *json);
const char *qkv_web_train_step(const char *json);
const char *qkv_web_train_evaluate(const char *json);
const char *qkv_web_train_maps(const char *json);
const char *qkv_web_train_lengths(const char *json);
const char *qkv_web_tape(const char *json);
const char *qkv_web_tape_node(const char *json);
const char *qkv_web_buffer(const char *json);
const char *qkv_web_model_open(const char *json);
const char *qkv_web_model_attention(const char *json);
/* Frees everything the API holds (session, model, tapes, buffers); the tests call it. */
void qkv_web_reset(void);

#endif
