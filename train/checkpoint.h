/* checkpoint.h — a training run's state in one safetensors file.
 *
 * Tensors: every model parameter under its own name, and every optimizer state
 * buffer as "optim.<slot>.<param name>". Metadata (strings): "format" =
 * "qkv-checkpoint-1", "step", "rng.seed" and "rng.counter" (the tape's dropout
 * stream), "optim.kind", "optim.step", "config.<key>" for each entry of the
 * task's config, "train.<key>" for the run's settings (train/trainer_fields.c),
 * and "history": the run's record up to the step as CSV text (train/history.h,
 * without the seconds, so that the bytes do not depend on the clock), which a
 * resumed run continues. A checkpoint saved without an optimizer (--save-weights-
 * only) has optim.kind "none" and no state: it evaluates, it does not resume.
 * Python's safetensors and torch can read the tensors.
 *
 * A checkpoint is parsed once: qkv_checkpoint_open reads its header (names,
 * shapes, metadata) without the tensors' bytes and keeps what it says (the task's
 * config, the trainer's settings); qkv_checkpoint_restore then reads the tensors
 * into a model (train/tasks/registry.h's qkv_task_checkpoint_open adds the task:
 * its kind, its config parsed and checked). qkv_checkpoint_load and _read_config
 * are both in one call.
 *
 * Restoring validates the whole file against the model before touching it: every
 * expected tensor present with its shape, nothing unexpected, metadata well-formed
 * and the optimizer kind the same, and every tensor in the file (parameters and
 * optimizer state) finite. Any problem: -1 and a one-line qkv_last_error(); the
 * model, the optimizer and the outputs are unchanged. Saving refuses the same way
 * (-1, nothing written) when a parameter or optimizer value is NaN/Inf: a
 * checkpoint on disk is never a diverged one.
 *
 * Saving goes through the atomic writer (core/fileio.h): a crash at any moment
 * leaves the previous checkpoint intact. Test hook: the environment variable
 * QKV_TEST_KILL_SAVE="N:BYTES" makes the N-th checkpoint this process saves
 * raise SIGKILL once BYTES bytes of its temporary file are written (for the
 * crash-safety tests: a deterministic kill in the middle of a checkpoint write).
 */
#ifndef QKV_CHECKPOINT_H
#define QKV_CHECKPOINT_H

#include "core/io/safetensors.h"
#include "core/rng.h"
#include "optim/optimizer.h"
#include "train/task.h"

/* settings (may be NULL): the run's optimization settings (trainer.h), stored as
 * "train.<key>" metadata; history (may be NULL): the "history" text; opt NULL:
 * the parameters only. */
int qkv_checkpoint_save(const char *path, const qkv_params *params, const qkv_optimizer *opt, long step,
                        const qkv_rng *rng, const qkv_config_kv *config, const qkv_config_kv *settings,
                        const char *history);
/* An opened checkpoint: what its header says. */
typedef struct qkv_checkpoint {
    char *path;
    qkv_safetensors file;      /* the header; the data is read by the first restore */
    qkv_config_kv *config;     /* the "config." entries (the task's), without the prefix */
    qkv_config_kv *settings;   /* the "train." entries (none before they existed) */
    const char *history;       /* the "history" text, or NULL (a checkpoint from before it) */
    long step;                 /* "step" */
    int optim_kind;            /* "optim.kind": a qkv_opt_kind, or -1: none (the parameters only) */
    long optim_step;           /* "optim.step": step, or 0 with no optimizer */
    uint64_t rng_seed, rng_counter;
} qkv_checkpoint;

/* Opens and parses path's header: 0, or -1 with a one-line qkv_last_error()
 * naming path (a bad file, not a qkv checkpoint, a metadata key no reader knows,
 * a number not written as flags are (core/number.h), an optimizer kind qkv does
 * not have, an "optim.step" other than the step, or 0 without an optimizer).
 * Close with qkv_checkpoint_close. */
int qkv_checkpoint_open(const char *path, qkv_checkpoint *out);
/* The tensors into params (and opt's state, step, rng): opt may be NULL
 * (evaluation): optimizer tensors are then ignored; step and rng may be NULL.
 * 0, or -1 with qkv_last_error() and nothing touched. */
int qkv_checkpoint_restore(qkv_checkpoint *ckpt, const qkv_params *params, qkv_optimizer *opt, long *step,
                           qkv_rng *rng);
void qkv_checkpoint_close(qkv_checkpoint *ckpt);

/* Open, then copy the config (to rebuild its model before loading it). */
int qkv_checkpoint_read_config(const char *path, qkv_config_kv *config);
/* Open, restore, close. */
int qkv_checkpoint_load(const char *path, const qkv_params *params, qkv_optimizer *opt, long *step,
                        qkv_rng *rng);

#endif
