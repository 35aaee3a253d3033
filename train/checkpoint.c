/* checkpoint.c — see checkpoint.h. */
#include "train/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/number.h"
#include "core/io/safetensors.h"

#define FORMAT "qkv-checkpoint-1"
#define CONFIG_PREFIX "config."
#define SETTINGS_PREFIX "train."
#define MAX_STEP 1000000000000ULL /* steps beyond this are not a real checkpoint */

/* Names of optimizer state tensors: "optim.<slot>.<param>". */
static char *state_name(const qkv_optimizer *opt, int slot, const qkv_tensor *param) {
    const char *slot_name = qkv_optimizer_slot_name(opt, slot);
    size_t len = strlen("optim..") + strlen(slot_name) + strlen(param->name) + 1;
    char *name = qkv_malloc(len, "a tensor name");
    snprintf(name, len, "optim.%s.%s", slot_name, param->name);
    return name;
}

static int n_state_tensors(const qkv_optimizer *opt) { return opt ? opt->n_slots * opt->n_params : 0; }

/* The QKV_TEST_KILL_SAVE test hook (checkpoint.h): arms the atomic writer's kill
 * for the N-th save of this process. */
static void arm_test_kill(void) {
    static long saves;
    const char *spec = getenv("QKV_TEST_KILL_SAVE");
    long n = 0;
    unsigned long long bytes = 0;
    saves++;
    if (spec && sscanf(spec, "%ld:%llu", &n, &bytes) == 2 && n == saves && bytes > 0)
        qkv_atomic_test_kill_after((size_t)bytes);
}

/* A checkpoint holds only finite values: 0, or -1 with an error naming the first
 * tensor with a NaN/Inf and how many it holds. */
static int check_finite(const char *path, const char *doing, int n, const qkv_st_tensor *tensors) {
    for (int i = 0; i < n; i++) {
        size_t count = qkv_shape_size(tensors[i].ndim, tensors[i].shape);
        size_t bad = qkv_count_nonfinite(tensors[i].data, count);
        if (bad) {
            qkv_set_error("%s: %s: tensor \"%s\" holds %zu NaN/Inf value%s of %zu (the run had diverged)", path,
                          doing, tensors[i].name, bad, bad == 1 ? "" : "s", count);
            return -1;
        }
    }
    return 0;
}

int qkv_checkpoint_save(const char *path, const qkv_params *params, const qkv_optimizer *opt, long step,
                        const qkv_rng *rng, const qkv_config_kv *config, const qkv_config_kv *settings,
                        const char *history) {
    arm_test_kill();
    int n_state = n_state_tensors(opt);
    int n = params->n + n_state;
    qkv_st_tensor *tensors = qkv_calloc((size_t)n, sizeof *tensors, "the checkpoint's tensor list");
    char **names = qkv_calloc((size_t)n_state + 1, sizeof *names, "the checkpoint's tensor names");
    for (int i = 0; i < params->n; i++) {
        const qkv_tensor *p = params->items[i];
        tensors[i] = (qkv_st_tensor){p->name, p->ndim, {0}, p->data};
        memcpy(tensors[i].shape, p->shape, sizeof p->shape);
    }
    for (int s = 0; opt && s < opt->n_slots; s++)
        for (int i = 0; i < params->n; i++) {
            int k = s * params->n + i;
            names[k] = state_name(opt, s, params->items[i]);
            tensors[params->n + k] = tensors[i];
            tensors[params->n + k].name = names[k];
            tensors[params->n + k].data = opt->state[k];
        }

    /* Metadata: fixed keys, then the config under "config.". */
    enum { FIXED = 6 };
    qkv_st_meta meta[FIXED + 2 * QKV_MAX_CONFIG + 1];
    char values[FIXED][32], keys[2 * QKV_MAX_CONFIG][48];
    snprintf(values[0], 32, "%ld", step);
    snprintf(values[1], 32, "%" PRIu64, rng ? rng->seed : 0);
    snprintf(values[2], 32, "%" PRIu64, rng ? rng->counter : 0);
    snprintf(values[3], 32, "%s", opt ? qkv_opt_kind_name(opt->config.kind) : "none");
    snprintf(values[4], 32, "%ld", opt ? opt->step : 0);
    meta[0] = (qkv_st_meta){"format", FORMAT};
    meta[1] = (qkv_st_meta){"step", values[0]};
    meta[2] = (qkv_st_meta){"rng.seed", values[1]};
    meta[3] = (qkv_st_meta){"rng.counter", values[2]};
    meta[4] = (qkv_st_meta){"optim.kind", values[3]};
    meta[5] = (qkv_st_meta){"optim.step", values[4]};
    int n_meta = FIXED;
    for (int i = 0; config && i < config->n; i++) {
        snprintf(keys[i], sizeof keys[i], CONFIG_PREFIX "%s", config->key[i]);
        meta[n_meta++] = (qkv_st_meta){keys[i], config->value[i]};
    }
    for (int i = 0; settings && i < settings->n; i++) {
        char *key = keys[QKV_MAX_CONFIG + i];
        snprintf(key, sizeof keys[0], SETTINGS_PREFIX "%s", settings->key[i]);
        meta[n_meta++] = (qkv_st_meta){key, settings->value[i]};
    }
    if (history) meta[n_meta++] = (qkv_st_meta){"history", history};
    int rc = check_finite(path, "not saved", n, tensors) == 0 ? qkv_safetensors_save(path, n, tensors, n_meta, meta) : -1;
    for (int k = 0; k < n_state; k++) free(names[k]);
    free(names);
    free(tensors);
    return rc;
}

/* A non-negative integer metadata value (core/number.h's syntax: "3", never
 * "03" or "+3"), in 0..max: 0, or -1 with the error. */
static int meta_u64(const qkv_safetensors *st, const char *path, const char *key, uint64_t max,
                    uint64_t *out) {
    const char *text = qkv_safetensors_meta(st, key);
    unsigned long long v;
    if (!text) {
        qkv_set_error("%s: metadata \"%s\" is missing", path, key);
        return -1;
    }
    if (qkv_parse_u64(text, max, &v) != 0) {
        qkv_set_error("%s: metadata \"%s\" is not an integer in 0..%llu: \"%.40s\"", path, key,
                      (unsigned long long)max, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* The keys a checkpoint's metadata may hold, besides the prefixed ones: a key
 * no reader knows is refused, not ignored (what would it have meant?). */
static const char *const fixed_keys[] = {"format", "step", "rng.seed", "rng.counter", "optim.kind", "optim.step",
                                         "history", NULL};

/* The fixed metadata into out, checked: every key known, the numbers strict,
 * the optimizer one of the known kinds (or "none") and its step the checkpoint's
 * (Adam's bias correction counts the updates: a run saved at step s made s of
 * them; with no optimizer state, 0). 0, or -1 with the error. */
static int read_fixed(const qkv_safetensors *st, const char *path, qkv_checkpoint *out) {
    for (int i = 0; i < st->n_meta; i++) {
        const char *key = st->meta[i].key;
        int known = strncmp(key, CONFIG_PREFIX, strlen(CONFIG_PREFIX)) == 0 ||
                    strncmp(key, SETTINGS_PREFIX, strlen(SETTINGS_PREFIX)) == 0;
        for (int k = 0; fixed_keys[k] && !known; k++) known = strcmp(key, fixed_keys[k]) == 0;
        if (!known) {
            qkv_set_error("%s: unknown metadata \"%.40s\" (a qkv checkpoint holds format, step, rng.*, optim.*, "
                          "history, config.* and train.*)", path, key);
            return -1;
        }
    }
    uint64_t step, seed, counter, optim_step;
    if (meta_u64(st, path, "step", MAX_STEP, &step) != 0 || meta_u64(st, path, "rng.seed", UINT64_MAX, &seed) != 0 ||
        meta_u64(st, path, "rng.counter", UINT64_MAX, &counter) != 0 ||
        meta_u64(st, path, "optim.step", MAX_STEP, &optim_step) != 0)
        return -1;
    const char *kind = qkv_safetensors_meta(st, "optim.kind");
    out->optim_kind = -2;
    if (kind && strcmp(kind, "none") == 0) out->optim_kind = -1;
    for (int k = 0; kind && qkv_opt_kind_names[k]; k++)
        if (strcmp(kind, qkv_opt_kind_names[k]) == 0) out->optim_kind = k;
    if (out->optim_kind == -2) {
        qkv_set_error("%s: metadata \"optim.kind\" is %s%.20s%s (expected none, %s, %s or %s)", path,
                      kind ? "\"" : "", kind ? kind : "missing", kind ? "\"" : "", qkv_opt_kind_names[0],
                      qkv_opt_kind_names[1], qkv_opt_kind_names[2]);
        return -1;
    }
    uint64_t expected_step = out->optim_kind == -1 ? 0 : step;
    if (optim_step != expected_step) {
        qkv_set_error("%s: metadata \"optim.step\" is %llu, expected %llu (%s)", path,
                      (unsigned long long)optim_step, (unsigned long long)expected_step,
                      out->optim_kind == -1 ? "no optimizer state" : "the optimizer's updates: the checkpoint's step");
        return -1;
    }
    out->step = (long)step;
    out->optim_step = (long)optim_step;
    out->rng_seed = seed;
    out->rng_counter = counter;
    return 0;
}

/* The metadata entries under prefix_text, without it, into config. */
static int read_prefixed(const qkv_safetensors *st, const char *path, const char *prefix_text, qkv_config_kv *config) {
    config->n = 0;
    size_t prefix = strlen(prefix_text);
    for (int i = 0; i < st->n_meta; i++) {
        const qkv_st_meta *m = &st->meta[i];
        if (strncmp(m->key, prefix_text, prefix) != 0) continue;
        if (config->n == QKV_MAX_CONFIG || strlen(m->key + prefix) >= sizeof config->key[0] ||
            strlen(m->value) >= sizeof config->value[0]) {
            qkv_set_error("%s: config entry \"%.40s\" too long or too many entries", path, m->key);
            return -1;
        }
        strcpy(config->key[config->n], m->key + prefix);
        strcpy(config->value[config->n], m->value);
        config->n++;
    }
    return 0;
}

int qkv_checkpoint_open(const char *path, qkv_checkpoint *out) {
    memset(out, 0, sizeof *out);
    if (qkv_safetensors_open(path, &out->file) != 0) return -1;
    const char *format = qkv_safetensors_meta(&out->file, "format");
    if (!format || strcmp(format, FORMAT) != 0) {
        qkv_set_error("%s: not a qkv checkpoint (metadata \"format\" is %s%s%s, expected \"" FORMAT "\")", path,
                      format ? "\"" : "", format ? format : "missing", format ? "\"" : "");
        qkv_safetensors_free(&out->file);
        return -1;
    }
    if (read_fixed(&out->file, path, out) != 0) {
        qkv_safetensors_free(&out->file);
        return -1;
    }
    out->path = qkv_strdup(path, "a checkpoint's path");
    out->history = qkv_safetensors_meta(&out->file, "history");
    out->config = qkv_malloc(sizeof *out->config, "a checkpoint's config");
    out->settings = qkv_malloc(sizeof *out->settings, "a checkpoint's settings");
    if (read_prefixed(&out->file, path, CONFIG_PREFIX, out->config) != 0 ||
        read_prefixed(&out->file, path, SETTINGS_PREFIX, out->settings) != 0) {
        qkv_checkpoint_close(out);
        return -1;
    }
    return 0;
}

void qkv_checkpoint_close(qkv_checkpoint *ckpt) {
    qkv_safetensors_free(&ckpt->file);
    free(ckpt->path);
    free(ckpt->config);
    free(ckpt->settings);
    memset(ckpt, 0, sizeof *ckpt);
}

int qkv_checkpoint_read_config(const char *path, qkv_config_kv *config) {
    qkv_checkpoint ckpt;
    if (qkv_checkpoint_open(path, &ckpt) != 0) return -1;
    *config = *ckpt.config;
    qkv_checkpoint_close(&ckpt);
    return 0;
}

/* The tensor named name with exactly t's shape, or NULL with an error. */
static const qkv_st_tensor *expect_tensor(const qkv_safetensors *st, const char *path, const char *name,
                                          const qkv_tensor *like) {
    const qkv_st_tensor *found = qkv_safetensors_find(st, name);
    char want[QKV_SHAPE_STR_LEN], got[QKV_SHAPE_STR_LEN];
    if (!found) {
        qkv_set_error("%s: tensor \"%s\" is missing", path, name);
        return NULL;
    }
    if (found->ndim != like->ndim || memcmp(found->shape, like->shape, (size_t)like->ndim * sizeof(int)) != 0) {
        qkv_set_error("%s: tensor \"%s\" has shape %s, the model needs %s", path, name,
                      qkv_dims_str(found->ndim, found->shape, got, sizeof got), qkv_shape_str(like, want, sizeof want));
        return NULL;
    }
    return found;
}

int qkv_checkpoint_load(const char *path, const qkv_params *params, qkv_optimizer *opt, long *step,
                        qkv_rng *rng) {
    qkv_checkpoint ckpt;
    if (qkv_checkpoint_open(path, &ckpt) != 0) return -1;
    int rc = qkv_checkpoint_restore(&ckpt, params, opt, step, rng);
    qkv_checkpoint_close(&ckpt);
    return rc;
}

int qkv_checkpoint_restore(qkv_checkpoint *ckpt, const qkv_params *params, qkv_optimizer *opt, long *step,
                           qkv_rng *rng) {
    const char *path = ckpt->path;
    const qkv_safetensors st = ckpt->file;   /* names and shapes; the data is read once they fit */
    int n_state = n_state_tensors(opt), rc = -1;
    const qkv_st_tensor **source = qkv_calloc((size_t)(params->n + n_state) + 1, sizeof *source, "the checkpoint's tensor list");
    char *name = NULL;

    /* 1. Validate everything. */
    for (int i = 0; i < params->n; i++)
        if (!(source[i] = expect_tensor(&st, path, params->items[i]->name, params->items[i]))) goto done;
    int expected = params->n;
    if (opt) {
        if (ckpt->optim_kind < 0) {
            qkv_set_error("%s: holds the parameters only (saved with --save-weights-only): it evaluates, it "
                          "cannot resume", path);
            goto done;
        }
        if (ckpt->optim_kind != (int)opt->config.kind) {
            qkv_set_error("%s: optimizer is %s, this run uses %s", path, qkv_opt_kind_names[ckpt->optim_kind],
                          qkv_opt_kind_name(opt->config.kind));
            goto done;
        }
        for (int k = 0; k < n_state; k++) {
            name = state_name(opt, k / params->n, params->items[k % params->n]);
            source[params->n + k] = expect_tensor(&st, path, name, params->items[k % params->n]);
            free(name);
            name = NULL;
            if (!source[params->n + k]) goto done;
        }
        expected += n_state;
    }
    for (int i = 0; i < st.n_tensors; i++) {
        /* Optimizer state is checked by count below, or ignored when evaluating. */
        int is_state = strncmp(st.tensors[i].name, "optim.", 6) == 0;
        if (!is_state && !qkv_params_find(params, st.tensors[i].name)) {
            qkv_set_error("%s: unexpected tensor \"%s\" (not in this model)", path, st.tensors[i].name);
            goto done;
        }
    }
    if (opt && st.n_tensors != expected) {
        qkv_set_error("%s: %d tensors, this model and optimizer have %d", path, st.n_tensors, expected);
        goto done;
    }
    if (qkv_safetensors_read_data(&ckpt->file) != 0 || check_finite(path, "refused", st.n_tensors, st.tensors) != 0)
        goto done;

    /* 2. Only now touch the model and the optimizer. */
    for (int i = 0; i < params->n; i++)
        memcpy(params->items[i]->data, source[i]->data, params->items[i]->size * sizeof(float));
    for (int k = 0; k < n_state; k++)
        memcpy(opt->state[k], source[params->n + k]->data, params->items[k % params->n]->size * sizeof(float));
    if (opt) opt->step = ckpt->optim_step;
    if (step) *step = ckpt->step;
    if (rng) {
        rng->seed = ckpt->rng_seed;
        rng->counter = ckpt->rng_counter;
    }
    rc = 0;
done:
    free(name);
    free(source);
    return rc;
}
