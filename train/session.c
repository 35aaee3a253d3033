/* session.c — a training run prepared once (checks, derived settings, --resume,
 * micro-batch, memory), then run by the loop of trainer.c one call at a time.
 * See session.h. */
#include "train/session.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/kernels/parallel.h"
#include "train/dist.h"
#include "train/interrupt.h"
#include "train/step.h"
#include "train/trainer_fields.h"

/* ---- --resume: one of this run? ------------------------------------------------------ */

/* Keys --resume leaves out of the comparison: with the data set's identity on
 * both sides, its path; without it on one side (a checkpoint written before
 * identities), the identity. */
static int skipped_on_resume(const char *key, int both_identified) {
    if (both_identified) return strcmp(key, "data") == 0;
    return strcmp(key, "data_bytes") == 0 || strcmp(key, "data_hash") == 0;
}

/* Appends "; " and one difference to list (cut short when full). */
static void add_difference(char *list, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_difference(char *list, size_t len, const char *fmt, ...) {
    size_t used = strlen(list);
    if (used + 8 >= len) return;
    if (used) used += (size_t)snprintf(list + used, len - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(list + used, len - used, fmt, ap);
    va_end(ap);
}

int qkv_session_check_resume(const qkv_checkpoint *ckpt, const qkv_config_kv *now) {
    const qkv_config_kv *saved = ckpt->config;
    char list[768] = ""; /* every difference, in one message */
    const char *hash_there = qkv_config_get(saved, "data_hash"), *hash_here = qkv_config_get(now, "data_hash");
    if (hash_there && hash_here && strcmp(hash_there, hash_here) != 0) {   /* the same bytes wherever they are */
        const char *there = qkv_config_get(saved, "data"), *here = qkv_config_get(now, "data");
        add_difference(list, sizeof list, "the data differs (%.200s there, hash %s; %.200s here, hash %s)",
                       there ? there : "?", hash_there, here ? here : "?", hash_here);
    }
    for (int i = 0; i < now->n; i++) {
        if (skipped_on_resume(now->key[i], hash_there && hash_here)) continue;
        const char *value = qkv_config_get(saved, now->key[i]);
        if (!value || strcmp(value, now->value[i]) != 0)
            add_difference(list, sizeof list, "%s is %s%.60s%s there, %.60s here", now->key[i], value ? "\"" : "",
                           value ? value : "missing", value ? "\"" : "", now->value[i]);
    }
    for (int i = 0; i < saved->n; i++)   /* a setting written only when not its default (fields.h) */
        if (!skipped_on_resume(saved->key[i], hash_there && hash_here) && !qkv_config_get(now, saved->key[i]))
            add_difference(list, sizeof list, "%s is \"%.60s\" there, the default here", saved->key[i],
                           saved->value[i]);
    if (!list[0]) return 0;
    qkv_set_error("%s: a checkpoint of another run: %s", ckpt->path, list);
    return -1;
}

/* ---- derived settings ------------------------------------------------------------------ */

/* What follows from --steps: the schedule's total (the steps, unless a program
 * gave its own), the step schedule's step size (a third of the run unless given)
 * and gamma. */
static void derive_schedule(qkv_trainer_config *c) {
    if (c->schedule.total == 0) c->schedule.total = c->steps;
    if (c->schedule.step_size == 0) c->schedule.step_size = c->steps / 3 > 0 ? c->steps / 3 : 1;
    if (c->schedule.gamma == 0) c->schedule.gamma = 0.1f;
}

/* The warmup rule (session.h): a warmup that does not fit the steps, from
 * wherever it came, is clamped to 0. Returns the warmup clamped (0: none), which
 * prepare says once every check has passed (an error stays the only line). */
static long fit_warmup(qkv_trainer_config *c) {
    long warmup = c->schedule.warmup;
    if (warmup < c->schedule.total) return 0;
    c->schedule.warmup = 0;
    return warmup;
}

/* ---- prepare ------------------------------------------------------------------------------ */

/* --resume's checkpoint, opened once (rank 0 alone reads files: train/dist.h):
 * that it is one of this run (its task's config, checked before anything is
 * said about its settings); the run's settings the command line did not give
 * are then the checkpoint's, and those it changes are said on stderr. 0, or -1
 * with qkv_last_error(). */
static int open_resume(qkv_session *s, const qkv_session_spec *spec) {
    if (!s->config.resume_path || qkv_dist_rank() != 0) return 0;
    if (qkv_checkpoint_open(s->config.resume_path, &s->resume) != 0) return -1;
    s->resumed = 1;
    if (qkv_session_check_resume(&s->resume, s->description) != 0) return -1;
    if (qkv_trainer_adopt_settings(&s->config, s->resume.settings, spec->given, spec->given_ctx) != 0) return -1;
    char changes[512];
    qkv_trainer_settings_changes(&s->config, s->resume.settings, changes, sizeof changes);
    if (changes[0]) /* allowed, but the run is then another one: say so */
        fprintf(stderr, "qkv %s: --resume with changed settings: %s; the run goes on with them and is no longer "
                "the uninterrupted one\n", spec->name ? spec->name : "train", changes);
    return 0;
}

/* No flag was given (a program's own session). */
static int none_given(const char *flag, const void *ctx) {
    (void)flag;
    (void)ctx;
    return 0;
}

/* Undoes what prepare made so far; returns -1 with s->status set. */
static int prepare_failed(qkv_session *s, int status) {
    s->status = status;
    if (s->resumed) qkv_checkpoint_close(&s->resume);
    s->resumed = 0;
    if (s->task && s->destroy) s->destroy(s->ctx, s->task);
    s->task = NULL;
    free(s->description);
    s->description = NULL;
    return -1;
}

/* Every rank settles the micro-batch and judges the memory; they agree. 0, or
 * -1 with the error (and on a signal s->status 128 + it, said by rank 0 alone). */
static int settle_and_measure(qkv_session *s) {
    int micro_batch = qkv_step_settle(s->task, s->config.micro_batch);
    int unfit = micro_batch < 0;
    if (!unfit) {
        s->config.micro_batch = micro_batch; /* as the checkpoint says it; never changed after */
        unfit = qkv_memory_check(&s->config, s->max_memory, s->task, &s->memory) != 0;
    }
    if (!qkv_dist_any(unfit)) return 0;
    int signal = qkv_dist_max(qkv_interrupt_signal()); /* a signal on any rank: one line, rank 0's */
    if (signal) qkv_memory_stopped(signal);
    else if (!unfit) qkv_set_error("rank %d: another rank could not start training", qkv_dist_rank());
    s->silent = signal && qkv_dist_rank() != 0;
    return prepare_failed(s, signal ? 128 + signal : 2);
}

int qkv_session_prepare(qkv_session *s, const qkv_session_spec *spec) {
    memset(s, 0, sizeof *s);
    s->config = spec->config;
    s->ctx = spec->ctx;
    s->destroy = spec->create ? spec->destroy : NULL;
    s->status = 2;
    qkv_trainer_config *c = &s->config;
    if ((spec->check && spec->check(spec->ctx, c) != 0) || qkv_trainer_check_outputs(c) != 0 ||
        qkv_trainer_check_target(c) != 0 ||
        (c->max_memory && qkv_memory_parse_size(c->max_memory, &s->max_memory) != 0))
        return -1;
    derive_schedule(c);
    if (spec->owns_process) c->threads = qkv_set_threads(qkv_dist_threads(c->threads)); /* MPI: cores per rank */
    int ran = spec->run ? spec->run(spec->ctx, c) : 1;
    if (ran <= 0) return ran < 0 ? -1 : 1;
    /* From here a signal ends the run cleanly (the memory's measurement below can
     * take a while on a large model): Ctrl-C, SIGTERM, SIGHUP, a closed stdout. */
    if (spec->owns_process) qkv_interrupt_install();
    s->task = spec->create ? spec->create(spec->ctx, s->max_memory) : spec->task;
    if (!s->task) {
        if (qkv_interrupt_signal()) s->status = 128 + qkv_interrupt_signal(); /* while its data was made */
        return -1;
    }
    s->description = qkv_calloc(1, sizeof *s->description, "the task's description");
    s->task->describe(s->task->self, s->description);
    qkv_session_spec given = *spec;
    if (!given.given) given.given = none_given;
    int bad = open_resume(s, &given) != 0;
    if (qkv_dist_any(bad)) {
        s->silent = !bad; /* rank 0 read the checkpoint and says what was wrong */
        if (!bad) qkv_set_error("rank %d: another rank could not start training", qkv_dist_rank());
        return prepare_failed(s, 2);
    }
    if (c->resume_path) qkv_trainer_share_settings(c); /* rank 0 read them */
    long clamped = fit_warmup(c);
    if (settle_and_measure(s) != 0) return -1;
    qkv_alloc_note_estimate(s->memory.total); /* an allocation that fails later names it */
    if (clamped > 0 && !c->quiet && qkv_dist_rank() == 0)
        fprintf(stderr, "qkv %s: --warmup %ld does not fit in --steps %ld: the run goes on without warmup\n",
                spec->name ? spec->name : "train", clamped, c->schedule.total);
    return 0;
}

/* ---- the run --------------------------------------------------------------------------- */

/* The run, started at the first call after prepare (after the caller's banner). 0, or -1. */
static int started(qkv_session *s) {
    if (s->run) return 0;
    if (s->ended) {
        qkv_set_error("the session's run is over");
        return -1;
    }
    /* The tape arenas grow within what the rest of the estimate leaves them (tape.h;
     * 0, no limit, when the machine does not say what it has). */
    const qkv_memory_estimate *m = &s->memory;
    size_t fixed = m->total - (size_t)m->tapes * m->activations - m->evaluation; /* the packed weights among it */
    qkv_run_setup setup = {.config = &s->config, .task = s->task, .description = s->description,
                           .resume = s->resumed ? &s->resume : NULL,
                           .arena_budget = m->available ? m->available - fixed : 0};
    s->run = qkv_run_start(&setup, &s->result);
    if (!s->run) s->ended = 1;
    return s->run ? 0 : -1;
}

int qkv_session_step(qkv_session *s) { return started(s) != 0 ? -1 : qkv_run_step(s->run); }

int qkv_session_evaluation_due(const qkv_session *s) { return s->run && qkv_run_evaluation_due(s->run); }

int qkv_session_evaluate(qkv_session *s) { return started(s) != 0 ? -1 : qkv_run_evaluate(s->run); }

const qkv_metrics *qkv_session_metrics(const qkv_session *s) { return s->run ? qkv_run_metrics(s->run) : NULL; }

int qkv_session_save(qkv_session *s) { return started(s) != 0 ? -1 : qkv_run_save(s->run); }

int qkv_train(qkv_session *s, qkv_train_result *result) {
    int rc = started(s);
    if (rc == 0) {
        while ((rc = qkv_run_step(s->run)) == 0)
            if (qkv_run_evaluation_due(s->run)) qkv_run_evaluate(s->run); /* a cut one: the next step ends the run */
        rc = qkv_run_finish(s->run, rc < 0 ? -1 : rc == 2 ? 2 : 0);
        s->run = NULL;
        s->ended = 1;
    }
    *result = s->result;
    return rc;
}

void qkv_session_close(qkv_session *s) {
    if (s->run) qkv_run_finish(s->run, -1);
    s->run = NULL;
    qkv_alloc_note_estimate(0);
    prepare_failed(s, s->status);
}
