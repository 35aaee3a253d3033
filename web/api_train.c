/* api_train.c — web/api.h's training session (qkv_web_train_*) and the tape of
 * one of its steps (qkv_web_tape, qkv_web_tape_node).
 *
 * A session is `qkv train TASK FLAGS` prepared by the library's own call
 * (train/tasks/train_run.h: the same flags, checks, messages and memory
 * judgment, the heap's maximum standing for the machine's memory, train/memory.h)
 * and run one step at a time (train/session.h): the same calls in the same
 * order as the command line's loop, so the same losses to the last digit. The
 * page owns no files: a flag naming one is refused. When the steps run out the
 * session ends the run as qkv_train does (its final evaluation).
 *
 * The tape: micro-batch 0 of the session's next step, forward and backward on a
 * tape of its own, the gradients redirected into a scratch buffer (core/ops/
 * tape.h), so the model and its training are left as they were; described by
 * qkv_tape_describe and kept until the next call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/suggest.h"
#include "train/experiments/lengthgen_runs.h"
#include "train/step.h"
#include "train/tasks/train_run.h"
#include "web/api.h"
#include "web/calls.h"

static struct {
    int active, done;
    int run_begun;              /* qkv_task_run_begin called, qkv_task_run_end not yet */
    qkv_task_run run;
    qkv_session session;
    long step;                  /* steps taken */
    char *probe;                /* the maps' default input, or NULL */
    int argc;                   /* the flags, which text settings point into */
    char **argv;
    qkv_tape *tape;             /* qkv_web_tape's, and its description */
    qkv_tape_graph graph;
    float *scratch;
    float **grads;
} train;

static void tape_free(void) {
    if (!train.tape) return;
    qkv_tape_graph_free(&train.graph);
    qkv_tape_free(train.tape);
    free(train.scratch);
    free(train.grads);
    train.tape = NULL;
}

void qkv_web_train_free(void) {
    tape_free();
    if (train.active) {
        qkv_session_close(&train.session);
        qkv_task_run_end(&train.run);
    }
    free(train.probe);
    qkv_web_argv_free(train.argc, train.argv);
    memset(&train, 0, sizeof train);
}

/* After a stop: the session is left as the stop found it (not closed: its state
 * may be half made); the request's flags and the run's config are whole, so they
 * are returned (a leak checker sees no lost block). */
void qkv_web_train_forget(void) {
    if (train.run_begun) qkv_task_run_end(&train.run);
    free(train.probe);
    qkv_web_argv_free(train.argc, train.argv);
    memset(&train, 0, sizeof train);
}

/* "qkv train: unknown task 'x' (did you mean ...? known: ...)", as the command line says it. */
static const qkv_task_kind *find_kind(const char *name) {
    const qkv_task_kind *kind = name ? qkv_task_kind_find(name) : NULL;
    if (kind) return kind;
    if (!name) {
        qkv_set_error("qkv web: train_start: \"task\" is required (known: %s)", qkv_task_kind_names());
        return NULL;
    }
    char hint[96];
    qkv_suggestion near = qkv_suggestion_begin(name);
    for (int i = 0; i < qkv_task_kind_count(); i++) qkv_suggestion_consider(&near, qkv_task_kind_at(i)->name);
    qkv_set_error("qkv train: unknown task '%s' (%sknown: %s)", name, qkv_suggestion_hint(&near, hint, sizeof hint),
                  qkv_task_kind_names());
    return NULL;
}

/* A flag naming a file the run would write or read (--save, --json, --csv,
 * --plot, --dot, --resume) given: the page has none. */
static int names_a_file(const qkv_task_run *r) {
    const void *paths[] = {&r->trainer.save_path, &r->trainer.json_path, &r->trainer.csv_path,
                           &r->trainer.plot_path, &r->trainer.dot_path, &r->trainer.resume_path};
    for (int i = 0; i < r->n; i++)
        for (size_t p = 0; p < sizeof paths / sizeof *paths; p++)
            if (r->given[i] && r->args[i].target == paths[p]) {
                qkv_set_error("qkv web: train_start: %s names a file; the page reads and writes none", r->args[i].flag);
                return 1;
            }
    return 0;
}

static void write_metrics(qkv_json_out *o, const qkv_metrics *m) {
    qkv_web_key(o, "metrics");
    qkv_json_out_text(o, "{");
    for (int i = 0; m && i < m->n; i++) {
        if (i) qkv_json_out_text(o, ",");
        qkv_json_out_string(o, m->key[i]);
        qkv_json_out_text(o, ":");
        qkv_web_number(o, m->value[i]);
    }
    qkv_json_out_text(o, "}");
}

const char *qkv_web_call_train_start(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "train_start", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_web_train_free();
    char *task = NULL, *probe = NULL, **argv = NULL;
    int argc = 0, rc = -1;
    const qkv_task_kind *kind = NULL;
    int got = qkv_web_get_string(&r, "task", &task) == 0 && qkv_web_get_string(&r, "probe", &probe) == 0 &&
              qkv_web_get_argv(&r, &argc, &argv) == 0;
    train.probe = probe;   /* held where a stop's qkv_web_train_forget finds them */
    train.argc = argc;
    train.argv = argv;
    if (got && (kind = find_kind(task)) != NULL) {
        qkv_task_run_begin(&train.run, kind);
        train.run_begun = 1;
        int read = qkv_task_run_read(&train.run, argc, argv);
        if (read > 0) qkv_set_error("qkv web: train_start: --help is the command line's");
        if (read < 0) {
            char line[1100];
            snprintf(line, sizeof line, "qkv %s", qkv_last_error());
            qkv_set_error("%s", line);
        }
        rc = read != 0 || names_a_file(&train.run) ? -1 : 0;
        if (rc != 0) qkv_task_run_end(&train.run);
    }
    qkv_web_request_free(&r);
    free(task);
    if (rc == 0) {
        qkv_session_spec spec;
        qkv_task_run_spec(&train.run, 0, &spec);
        spec.config.quiet = 1;   /* no progress lines: the page draws them */
        int prepared = qkv_session_prepare(&train.session, &spec);
        if (prepared != 0) {
            char line[1100];
            snprintf(line, sizeof line, "qkv %s: %s", train.run.command,
                     prepared > 0 ? "the task's own run did all there was to do" : qkv_last_error());
            qkv_set_error("%s", line);
            qkv_task_run_end(&train.run);
            rc = -1;
        }
    }
    if (rc != 0) {
        qkv_web_argv_free(argc, argv);
        free(probe);
        memset(&train, 0, sizeof train);
        return qkv_web_refuse_error(NULL);
    }
    train.argc = argc;   /* a text flag's value (--max-memory) points into argv: kept while the session lives */
    train.argv = argv;
    train.active = 1;
    train.probe = probe;
    qkv_json_out *o = qkv_web_reply();
    qkv_web_text(o, "task", kind->name);
    qkv_web_key(o, "steps");
    qkv_web_int(o, train.session.config.steps);
    qkv_web_key(o, "eval_every");
    qkv_web_int(o, train.session.config.eval_every);
    qkv_web_settings(o, "settings", train.session.description);
    qkv_web_key(o, "memory");
    char memory[160];
    snprintf(memory, sizeof memory, "{\"bytes\":%zu,\"budget\":%zu}", train.session.memory.total,
             train.session.memory.available);
    qkv_json_out_text(o, memory);
    qkv_web_key(o, "parameters");
    qkv_web_int(o, (long long)qkv_params_count(train.session.task->params));
    return qkv_web_reply_end();
}

static const char *no_session(const char *call) {
    char line[160];
    snprintf(line, sizeof line, "qkv web: %s: no training session (qkv_web_train_start first)", call);
    return qkv_web_refuse(line);
}

/* The run's end, as qkv_train ends it (its final evaluation); 0 or -1. */
static int finish(void) {
    qkv_train_result result;
    train.done = 1;
    return qkv_train(&train.session, &result);
}

const char *qkv_web_call_train_step(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "train_step", json) != 0) return qkv_web_refuse_error(NULL);
    long long steps = 1;
    int bad = qkv_web_get_int(&r, "steps", 1, 1000000, &steps);
    qkv_web_request_free(&r);
    if (bad) return qkv_web_refuse_error(NULL);
    if (!train.active) return no_session("train_step");
    tape_free();   /* its batch and tensors are of a step gone by */
    qkv_json_out *o = qkv_web_reply();
    qkv_web_key(o, "losses");
    qkv_json_out_text(o, "[");
    qkv_json_out evaluated = {0};
    qkv_json_out_text(&evaluated, "[");
    int rc = 0;
    for (long long i = 0; i < steps && !train.done && rc == 0; i++) {
        rc = qkv_session_step(&train.session);
        if (rc == 1) {
            rc = finish();
            if (rc == 0) {
                if (evaluated.len > 1) qkv_json_out_text(&evaluated, ",");
                char head[64];
                snprintf(head, sizeof head, "{\"step\":%ld,\"final\":true", train.step);
                qkv_json_out_text(&evaluated, head);
                write_metrics(&evaluated, &train.session.result.metrics);
                qkv_json_out_text(&evaluated, "}");
            }
            break;
        }
        if (rc != 0) break;
        train.step++;
        char row[80];
        snprintf(row, sizeof row, "%s[%ld,", i > 0 ? "," : "", train.step);
        qkv_json_out_text(o, row);
        qkv_web_number(o, train.session.result.final_loss);
        qkv_json_out_text(o, "]");
        if (qkv_session_evaluation_due(&train.session) && qkv_session_evaluate(&train.session) == 0) {
            if (evaluated.len > 1) qkv_json_out_text(&evaluated, ",");
            char head[64];
            snprintf(head, sizeof head, "{\"step\":%ld", train.step);
            qkv_json_out_text(&evaluated, head);
            write_metrics(&evaluated, qkv_session_metrics(&train.session));
            qkv_json_out_text(&evaluated, "}");
        }
    }
    qkv_json_out_text(&evaluated, "]");
    if (rc < 0) {
        qkv_json_out_free(&evaluated);
        train.done = 1;
        return qkv_web_refuse_error("qkv: ");   /* as the command line's qkv_train_exit says it */
    }
    qkv_json_out_text(o, "]");
    qkv_web_key(o, "evaluated");
    qkv_json_out_bytes(o, evaluated.data, evaluated.len);
    qkv_json_out_free(&evaluated);
    qkv_web_key(o, "step");
    qkv_web_int(o, train.step);
    qkv_web_key(o, "loss");
    qkv_web_number(o, train.session.result.final_loss);
    qkv_web_key(o, "done");
    qkv_json_out_text(o, train.done ? "true" : "false");
    return qkv_web_reply_end();
}

const char *qkv_web_call_train_evaluate(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "train_evaluate", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_web_request_free(&r);
    if (!train.active) return no_session("train_evaluate");
    const qkv_metrics *metrics = &train.session.result.metrics;   /* a finished run's final evaluation */
    if (!train.done) {
        if (train.step == 0) return qkv_web_refuse("qkv web: train_evaluate: no step taken yet");
        if (qkv_session_evaluate(&train.session) != 0) return qkv_web_refuse_error("qkv: ");
        metrics = qkv_session_metrics(&train.session);
    }
    qkv_json_out *o = qkv_web_reply();
    qkv_web_key(o, "step");
    qkv_web_int(o, train.step);
    qkv_web_key(o, "loss");
    qkv_web_number(o, train.session.result.final_loss);
    write_metrics(o, metrics);
    return qkv_web_reply_end();
}

/* The session's model when its task is a sequence task (reverse, copy, sort). */
static qkv_seq_model *sequence_model(const char *call) {
    if (!train.active) {
        no_session(call);
        qkv_set_error("qkv web: %s: no training session (qkv_web_train_start first)", call);
        return NULL;
    }
    const qkv_task_kind *k = train.run.kind;
    if (k != &qkv_task_kind_reverse && k != &qkv_task_kind_copy && k != &qkv_task_kind_sort) {
        qkv_set_error("qkv web: %s: a %s model has no sequence attention maps (reverse, copy and sort have)", call,
                      k->name);
        return NULL;
    }
    return train.session.task->self;
}

const char *qkv_web_call_train_maps(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "train_maps", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_seq_model *model = sequence_model("train_maps");
    const char *answer = model ? qkv_web_maps_answer(&r, model, train.step, "qkv web: train_maps: ", train.probe, 0)
                               : qkv_web_refuse_error(NULL);
    qkv_web_request_free(&r);
    return answer;
}

const char *qkv_web_call_train_lengths(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "train_lengths", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_seq_model *model = sequence_model("train_lengths");
    long long to = 0, count = 50;
    int bad = !model || qkv_web_get_int(&r, "to", 1, 4096, &to) || qkv_web_get_int(&r, "test_size", 1, 10000, &count);
    qkv_web_request_free(&r);
    if (bad) return qkv_web_refuse_error(NULL);
    const qkv_seq_model_config *c = &model->config;
    int longest = qkv_seq_model_longest_input(c, 1 << 20);
    if (to == 0) to = 2 * (long long)c->data.max_len;
    if (to > longest) {
        char line[200];
        snprintf(line, sizeof line, "qkv web: train_lengths: \"to\" %lld is longer than this model's positions allow (%d)",
                 to, longest);
        return qkv_web_refuse(line);
    }
    tape_free();
    qkv_tape *tape = qkv_tape_create_inference(c->seed);
    qkv_json_out *o = qkv_web_reply();
    qkv_web_key(o, "step");
    qkv_web_int(o, train.step);
    qkv_web_key(o, "trained");
    int trained[2] = {c->data.min_len, c->data.max_len};
    qkv_web_ints(o, trained, 2);
    qkv_web_key(o, "lengths");
    qkv_json_out_text(o, "[");
    for (int n = 1; n <= to; n++) {
        double exact = 0, token = 0;
        qkv_seq_model_accuracy_at(model, tape, n, (int)count, QKV_LG_TEST_SEED ^ c->seed, &exact, &token);
        char row[48];
        snprintf(row, sizeof row, "%s{\"len\":%d,\"exact\":", n > 1 ? "," : "", n);
        qkv_json_out_text(o, row);
        qkv_web_number(o, exact);
        qkv_json_out_text(o, ",\"token\":");
        qkv_web_number(o, token);
        qkv_json_out_text(o, "}");
    }
    qkv_json_out_text(o, "]");
    qkv_tape_free(tape);
    return qkv_web_reply_end();
}

/* ---- the tape ------------------------------------------------------------------ */

static void write_entry(qkv_json_out *o, const qkv_tape_entry *e) {
    qkv_json_out_text(o, "{\"id\":");
    qkv_web_int(o, e->index);
    qkv_json_out_text(o, ",\"leaf\":");
    qkv_web_int(o, e->leaf);
    qkv_web_text(o, "op", e->op);
    qkv_web_text(o, "note", e->note);
    qkv_web_key(o, "shape");
    qkv_web_ints(o, e->shape, e->ndim);
    qkv_web_key(o, "inputs");
    qkv_web_ints(o, e->inputs, e->n_inputs);
    qkv_web_key(o, "input_names");
    qkv_json_out_text(o, "[");
    for (int i = 0; i < e->n_inputs; i++) {
        if (i) qkv_json_out_text(o, ",");
        if (e->input_names && e->input_names[i]) qkv_json_out_string(o, e->input_names[i]);
        else qkv_json_out_text(o, "null");
    }
    qkv_json_out_text(o, "]");
    qkv_web_key(o, "value");
    qkv_json_out_text(o, "{\"min\":");
    qkv_web_number(o, e->min);
    qkv_json_out_text(o, ",\"max\":");
    qkv_web_number(o, e->max);
    qkv_json_out_text(o, ",\"mean\":");
    qkv_web_number(o, e->mean);
    qkv_json_out_text(o, ",\"norm\":");
    qkv_web_number(o, e->norm);
    qkv_json_out_text(o, "}");
    qkv_web_key(o, "grad_norm");
    if (e->grad_norm < 0) qkv_json_out_text(o, "null");
    else qkv_web_number(o, e->grad_norm);
    qkv_json_out_text(o, "}");
}

const char *qkv_web_call_tape(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "tape", json) != 0) return qkv_web_refuse_error(NULL);
    qkv_web_request_free(&r);
    if (!train.active) return no_session("tape");
    if (train.done) return qkv_web_refuse("qkv web: tape: the run is over: its steps are all taken");
    tape_free();
    qkv_task *task = train.session.task;
    const qkv_params *params = task->params;
    train.scratch = qkv_malloc_aligned(qkv_size_mul(qkv_step_buffer_floats(params) + 1, sizeof(float)), "the tape's gradients");
    train.grads = qkv_malloc((size_t)(params->n + 1) * sizeof *train.grads, "the tape's gradients");
    size_t at = 0;
    for (int i = 0; i < params->n; at += params->items[i]->size, i++) train.grads[i] = train.scratch + at;
    int batch = task->batch > 0 ? task->batch : 1, micro = train.session.config.micro_batch;
    train.tape = qkv_tape_create(train.session.config.seed);
    qkv_tape_set_slice(train.tape, 0, micro > 0 && batch / micro > 0 ? batch / micro : 1);
    qkv_tape_redirect_grads(train.tape, params, train.grads);
    if (task->prepare) task->prepare(task->self, train.step);   /* a pure function of the step: remade by the step */
    int diverged = task->diverged;
    qkv_tensor *loss = task->loss(task->self, train.tape, train.step);
    task->diverged = diverged;
    if (!loss) {
        tape_free();
        return qkv_web_refuse_error("qkv: ");
    }
    qkv_backward(train.tape, loss);
    qkv_tape_zero_unwritten_grads(train.tape);
    qkv_tape_describe(train.tape, &train.graph);
    qkv_json_out *o = qkv_web_reply();
    qkv_web_key(o, "step");
    qkv_web_int(o, train.step + 1);
    qkv_web_key(o, "loss");
    qkv_web_number(o, loss->data[0]);
    qkv_web_key(o, "n_nodes");
    qkv_web_int(o, train.graph.n_nodes);
    qkv_web_key(o, "nodes");
    qkv_json_out_text(o, "[");
    for (int i = 0; i < train.graph.n_nodes + train.graph.n_leaves; i++) {
        if (i) qkv_json_out_text(o, ",");
        write_entry(o, &train.graph.entries[i]);
    }
    qkv_json_out_text(o, "]");
    return qkv_web_reply_end();
}

const char *qkv_web_call_tape_node(const char *json) {
    qkv_web_request r;
    if (qkv_web_request_parse(&r, "tape_node", json) != 0) return qkv_web_refuse_error(NULL);
    long long id = -1;
    int n = train.tape ? train.graph.n_nodes + train.graph.n_leaves : 0;
    int bad = qkv_web_get_int(&r, "id", 0, n > 0 ? n - 1 : 0, &id);
    qkv_web_request_free(&r);
    if (bad) return qkv_web_refuse_error(NULL);
    if (!train.tape) return qkv_web_refuse("qkv web: tape_node: no tape (qkv_web_tape first)");
    if (id < 0) return qkv_web_refuse("qkv web: tape_node: \"id\" is required");
    const qkv_tape_entry *e = &train.graph.entries[id];
    qkv_json_out *o = qkv_web_reply();
    qkv_web_key(o, "node");
    write_entry(o, e);
    qkv_web_key(o, "value");
    qkv_web_tensor(o, e->op, e->ndim, e->shape, e->values);
    qkv_web_key(o, "grad");
    if (e->grad) qkv_web_tensor(o, e->op, e->ndim, e->shape, e->grad);
    else qkv_json_out_text(o, "null");
    return qkv_web_reply_end();
}
