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
 * A tensor is written as {"name":"dS", "shape":[2,3,3], "data":[...]} with data
 * row-major (the last dimension fastest); a per-head matrix has shape
 * [heads, rows, cols], one of a single head [1, rows, cols].
 *
 * The module: build/web/qkv_page.js and build/web/qkv_page.wasm (web/web.mk,
 * `make web`), emscripten -sMODULARIZE=1 -sEXPORT_NAME=createQkvPage
 * -sENVIRONMENT=web,worker (and a Node flavour build/web/node/qkv_page.js for
 * the tests). A Worker loads it with
 *     importScripts('qkv_page.js');
 *     const M = await createQkvPage();
 *     const call = (name, arg) => JSON.parse(M.ccall(name, 'string', ['string'], [JSON.stringify(arg)]));
 *     call('qkv_web_info', {});
 * Exported functions: the qkv_web_* below (and _malloc/_free); runtime methods
 * ccall, cwrap, UTF8ToString, HEAPU8. The heap grows up to QKV_WEB_MAX_HEAP; a
 * model that would not fit is refused with the session's memory estimate.
 *
 * One training session and one opened model live at a time; starting another
 * replaces the one before.
 *
 * ---- the calls --------------------------------------------------------------
 *
 * qkv_web_info({})
 *   -> {"ok":true, "version":"...", "tasks":["reverse",...], "masks":["none",
 *       "causal","padding","keep"], "schemes_qkv":["none","rope","p-rope","alibi",
 *       "t5","fire"], "schemes_tokens":[...the above, "learned","sinusoidal"],
 *       "losses":["weighted","square"], "max_heap":1073741824,
 *       "limits":{"tokens":8, "width":8, "heads":2}}
 *   The page builds its menus from these tables.
 *
 * qkv_web_attention(A)  one attention step, forward and backward.
 *   A = {
 *     "heads": 1 | 2,
 *     either typed Q, K, V (rows; a row holds every head's columns, heads * d):
 *     "q": [[..],..] (Tq <= 8 rows), "k": [[..],..] (Tk <= 8), "v": [[..],..] (Tk rows, heads * dv),
 *     or tokens embedded and projected by a tiny layer (self-attention, Tq = Tk = n):
 *     "tokens": "3 1 4 1" (symbols 0..vocab-1, at most 8), "vocab": 10, "width": 4 (heads * d),
 *     "seed": 1, "weights": {"embed":[[..]], "wq":[[..]], "wk":[[..]], "wv":[[..]]}
 *       (optional: edited weights replace the seeded ones; each [rows][cols] as returned),
 *     "mask": "none" | "causal" | "padding" | "keep",
 *     "padding": [1,1,0]  (padding: 1 a real key, 0 padding; Tk entries),
 *     "keep": [[1,0,..],..] (keep: Tq x Tk, 1 attends),
 *     "pos": one of info's schemes_qkv (typed) or schemes_tokens (tokens),
 *     "pos_seed": 1, "pos_params": {...} (optional: edited, as returned),
 *     "loss": "weighted" (L = sum_i O_i . c, c = "loss_weights", default 1, 2, ...)
 *           | "square" (L = 1/2 sum (O - target)^2, "target" Tq x heads*dv, default 0)
 *   }
 *   -> {"ok":true, "tq":3, "tk":3, "heads":1, "d":2, "dv":2, "scale":0.707106769,
 *       "loss":1.23,
 *       "inputs":[tensor q, k, v as attention sees them (after embedding,
 *                 projection and added positions; rope rotates inside: "q_rot","k_rot")],
 *       "weights":[tensor embed, wq, wk, wv, pos table...] (tokens only),
 *       "pos_params":{...the scheme's parameters, seeded, as taken back above},
 *       "forward":[S = Q K^T, scale S, bias, mask, logits = scale S + bias + mask,
 *                  P = softmax(logits), O = P V]          (tensors, in this order),
 *       "backward":[dO, D = rowsum(dO * O), dV = P^T dO, dP = dO V^T,
 *                   dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q]
 *                  (tensors; each also has "formula":"dS = P * (dP - D)")}
 *   Errors name the field and the limit: "qkv explain attention: --q: ...".
 *
 * qkv_web_attention_check(A + {"tensor":"q"|"k"|"v"|...weights, "index":[h,i,j]})
 *   -> {"ok":true, "tensor":"q", "index":[0,1,0], "analytic":0.123456791,
 *       "numeric":0.123456, "eps":0.001}
 *   The tape's gradient of L at that entry and central finite differences of L.
 *
 * qkv_web_train_start({"task":"reverse", "args":["--steps","300","--pos","rope"]})
 *   ("flags":{"--steps":300,"--pos":"rope"} is the same as args; a flag without a
 *   value takes true), and "probe":"3 1 4 1 5" (optional: the input whose maps
 *   qkv_web_train_maps draws; default the symbols 0, 1, ... of the longest trained length)
 *   -> {"ok":true, "task":"reverse", "steps":300, "settings":{...the checkpoint's
 *       description: "dim":"64", "pos":"rope", ...}, "memory":{"bytes":N, "budget":N}}
 *   Prepared as `qkv train reverse ARGS` prepares it (train/session.h): the same
 *   checks, the same one-line errors, the same memory judgment against the heap.
 *   --threads is 1; --save/--json/--csv/--plot are refused.
 *
 * qkv_web_train_step({"steps":10})
 *   -> {"ok":true, "step":40, "done":false, "losses":[[31,2.31],...,[40,2.02]],
 *       "evaluated":[{"step":40,"loss":2.02,"metrics":{"token_acc":0.5,"seq_acc":0.1}}]}
 *   Runs up to "steps" steps (the run's own evaluations included, as `qkv train`
 *   takes them: the same losses to the last digit); "done" once the run is over.
 *
 * qkv_web_train_evaluate({})
 *   -> {"ok":true, "step":40, "loss":2.02, "metrics":{"token_acc":..,"seq_acc":..}}
 *
 * qkv_web_train_maps({"input":"3 1 4"})   (input optional: the probe)
 *   -> maps (below) of the session's model now.
 *
 * qkv_web_train_lengths({"to":16, "test_size":50})   length generalization
 *   -> {"ok":true, "trained":[1,8], "lengths":[{"len":1,"exact":1,"token":1},...,
 *       {"len":16,"exact":0,"token":0.31}]}
 *   Greedy exact match and token accuracy at every length 1..to, measured as
 *   `qkv experiment lengthgen` measures them; "to" at most the model's positions.
 *
 * qkv_web_tape({"of":"train"})   the graph of one training step of the session
 *   (its next step's batch, forward and backward; the model is not changed)
 *   -> {"ok":true, "nodes":[{"id":0, "op":"embedding", "shape":[8,12,64],
 *       "value":{"min":..,"max":..,"mean":..,"norm":..}, "grad_norm":..,
 *       "inputs":[{"node":-1,"name":"enc.embed","shape":[..]}, {"node":3}], "note":""}],
 *       "loss":2.3}
 *   An input that is no node's output (a parameter, the data) has "node":-1 and
 *   its name when it has one. {"of":"attention"} is the last qkv_web_attention's tape.
 * qkv_web_tape_node({"id":5})   the tensors of one node of the last qkv_web_tape
 *   -> {"ok":true, "value":tensor, "grad":tensor (null when no gradient reached it)}
 *
 * qkv_web_buffer({"bytes":N})
 *   -> {"ok":true, "pointer":P}  P: N bytes in the heap the API owns until the next
 *   qkv_web_buffer; JavaScript copies a file there: M.HEAPU8.set(bytes, P).
 * qkv_web_model_open({"bytes":N, "name":"reverse.safetensors"})
 *   -> {"ok":true, "name":"reverse.safetensors", "task":"reverse", "step":400,
 *       "settings":{...the checkpoint's metadata...}, "vocab":10, "trained":[1,8],
 *       "longest_input":8}
 *   The checkpoint in the buffer, opened as `qkv attn NAME` opens it: a hostile
 *   or foreign file gets its one-line refusal ("qkv attn: NAME: ...").
 * qkv_web_model_attention({"input":"3 1 4", "force":false})
 *   -> maps (below) of the opened model, as `qkv attn --input` draws them (an
 *      untrained length is refused unless force; with force "warning" says so).
 *
 * maps = {"ok":true, "input":[3,1,4], "output":[4,1,3], "caption":"...",
 *         "warning":"", "heads":2,
 *         "rows":[{"what":"enc ", "layer":0, "q_labels":["0:3",..],
 *                  "k_labels":[..], "weights":tensor [heads, Tq, Tk]}, ...]}
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
