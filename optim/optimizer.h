/* optimizer.h — SGD (momentum, Nesterov, weight decay), Adam and AdamW, one
 * interface for all three, plus gradient clipping and learning-rate schedules.
 *
 * The update for parameter p with gradient g at step t (t counts from 1):
 *   SGD:    g' = g + wd p;  v = mu v + g';  p -= lr (nesterov ? g' + mu v : v)
 *           (mu = 0: p -= lr g'), as torch.optim.SGD with dampening 0.
 *   Adam:   g' = g + wd p (L2, coupled); m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2;
 *           p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps), as torch.optim.Adam.
 *   AdamW:  p -= lr wd p (decoupled, before the Adam step on g), as torch.optim.AdamW.
 * Weight decay applies only to parameters that qkv_param_decays() accepts, when
 * decay_all is 0 (the default): biases, norm gains and embedding/position tables
 * are excluded, by name and shape (see qkv_param_decays).
 *
 * The state (velocity, or first and second moments) is one buffer per parameter
 * per slot, named for checkpoints "optim.<slot>.<param name>" with slot "v",
 * "m" or "s" (the second moment). Updates are element-wise and run in parallel
 * above the work threshold; results do not depend on the thread count.
 */
#ifndef QKV_OPTIMIZER_H
#define QKV_OPTIMIZER_H

#include "core/ops/params.h"

typedef enum qkv_opt_kind { QKV_OPT_SGD, QKV_OPT_ADAM, QKV_OPT_ADAMW } qkv_opt_kind;

typedef struct qkv_optimizer_config {
    qkv_opt_kind kind;
    float lr;             /* base learning rate; a schedule scales it per step */
    float momentum;       /* SGD */
    int nesterov;         /* SGD, needs momentum > 0 */
    float beta1, beta2, eps;   /* Adam(W): 0 means 0.9, 0.999, 1e-8 */
    float weight_decay;
    int decay_all;        /* 1: decay every parameter, biases and norms too */
} qkv_optimizer_config;

typedef struct qkv_optimizer {
    qkv_optimizer_config config;
    long step;            /* steps taken */
    int n_params;
    int n_slots;          /* state buffers per parameter: 0, 1 (SGD momentum) or 2 */
    float **state;        /* state[slot * n_params + i], each params->items[i]->size floats */
    unsigned char *decays;/* per parameter: 1 if weight decay applies */
} qkv_optimizer;

/* Validates the config (a bad value is a programmer error naming it) and sizes
 * the state for these parameters, zero-filled. */
void qkv_optimizer_init(qkv_optimizer *opt, const qkv_optimizer_config *config, const qkv_params *params);
void qkv_optimizer_free(qkv_optimizer *opt);
/* The state buffers per parameter a config makes (n_slots): 2 for Adam(W), 1 for
 * SGD with momentum, else 0 (the memory budget counts them before training). */
int qkv_optimizer_slot_count(const qkv_optimizer_config *config);
/* One update with learning rate lr (the schedule's value for this step). Returns
 * how many NaN/Inf values the parameters and the optimizer's state hold after it
 * (every value of both is written by the update; each piece is counted right after
 * its update, while it is still in cache). */
size_t qkv_optimizer_step(qkv_optimizer *opt, const qkv_params *params, float lr);
/* "sgd", "adam", "adamw"; -1 when unknown. */
int qkv_opt_kind_parse(const char *name);
extern const char *const qkv_opt_kind_names[];      /* in enum order, NULL-terminated */
const char *qkv_opt_kind_name(qkv_opt_kind kind);
/* Slot name ("v", "m", "s") of state slot s. */
const char *qkv_optimizer_slot_name(const qkv_optimizer *opt, int slot);

/* Weight decay's default rule: no decay for 1-D tensors (biases, norm gains) and
 * for names containing "embed" or ending in ".table" (token and position tables). */
int qkv_param_decays(const qkv_tensor *param);

/* The global L2 norm of every parameter's gradient (a fixed-order sum). */
double qkv_grad_norm(const qkv_params *params);

/* Rescales all gradients so that their global L2 norm is at most max_norm.
 * Returns the norm before clipping. The norm is summed in double, parameter by
 * parameter in list order with fixed chunks, so it is thread-independent. */
double qkv_clip_grad_norm(const qkv_params *params, double max_norm);

/* Learning-rate schedules: the factor by which the base lr is multiplied at a
 * step (counting from 0). */
typedef enum qkv_schedule_kind { QKV_SCHED_CONSTANT, QKV_SCHED_COSINE, QKV_SCHED_STEP } qkv_schedule_kind;
typedef struct qkv_schedule {
    qkv_schedule_kind kind;
    long warmup;          /* cosine: linear warmup from 0 over this many steps */
    long total;           /* cosine: decay to min_factor at this step */
    float min_factor;     /* cosine: floor, as a fraction of the base lr (0) */
    long step_size;       /* step: multiply by gamma every step_size steps */
    float gamma;
} qkv_schedule;
/* constant: 1. cosine: (s+1)/warmup during warmup, then
 *   min + (1 - min) * 0.5 * (1 + cos(pi * (s - warmup) / (total - warmup))), min after total.
 * step: gamma^floor(s / step_size). */
float qkv_schedule_factor(const qkv_schedule *schedule, long step);
int qkv_schedule_kind_parse(const char *name);   /* "constant", "cosine", "step" */
extern const char *const qkv_schedule_kind_names[]; /* in enum order, NULL-terminated */

#endif
