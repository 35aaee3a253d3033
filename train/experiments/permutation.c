/* permutation.c — the permutation experiment: measures the permutation
 * symmetries of random (untrained) models against the theory (docs/permutation.md),
 * prints the table and writes it as JSON and CSV. See experiments.h.
 *
 * For each configuration and seed a model is built; X [B,N,d] (and a context
 * Z [B,Nz,d] for cross-attention) are drawn N(0,1); for each random permutation pi
 * (never the identity) the model runs on X and on PX (or on Z and PZ), and the
 * worst relative errors over seeds and permutations are kept (experiments.h).
 * Everything runs without gradients; outputs are compared in double.
 *
 * Configurations (the table `configs` below, with the theory's expectation for
 * each measure): encoders with each position scheme and with a causal mask,
 * cross-attention with the context or the queries permuted, SAB, ISAB, a SAB+PMA
 * classifier, DeepSets, and the DETR decoder (layers/detr.h) with its memory
 * permuted alone, together with its position codes, or under fixed codes.
 *
 * Learned position tables are redrawn N(0,1) after init: a trained table is of
 * the order of the embeddings, while the init's N(0, 0.02) would break the
 * symmetry by only about 1e-2 and blur the verdict.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cancel.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/json.h"
#include "core/ops/ops.h"
#include "core/kernels/parallel.h"
#include "layers/detr.h"
#include "layers/set_models.h"
#include "layers/transformer.h"
#include "train/experiments/experiments.h"
#include "train/interrupt.h"
#include "train/settings.h"

#define BATCH 2

typedef enum {
    K_ENCODER, K_CROSS_CONTEXT, K_CROSS_QUERIES, K_SAB, K_ISAB, K_SET_MODEL,
    K_DETR,   /* the memory (context) is permuted; memory positions with it or not */
} kind;

typedef struct config {
    const char *name, *theory;
    kind kind;
    qkv_pos_kind pos;          /* encoder */
    int causal;                /* encoder */
    qkv_set_model_kind set;    /* K_SET_MODEL */
    qkv_perm_expect equi, inv;
    int detr_pos;              /* K_DETR: 0 no memory positions, 1 permuted with the memory, 2 left in place */
} config;

#define H QKV_EXPECT_HOLDS
#define B QKV_EXPECT_BROKEN
#define NA QKV_EXPECT_NA
static const config configs[] = {
    {"encoder, no positions", "equivariant", K_ENCODER, QKV_POS_NONE, 0, 0, H, H, 0},
    {"encoder, learned positions", "neither", K_ENCODER, QKV_POS_LEARNED, 0, 0, B, B, 0},
    {"encoder, sinusoidal positions", "neither", K_ENCODER, QKV_POS_SINUSOIDAL, 0, 0, B, B, 0},
    {"encoder, RoPE", "neither", K_ENCODER, QKV_POS_ROPE, 0, 0, B, B, 0},
    {"encoder, ALiBi", "neither", K_ENCODER, QKV_POS_ALIBI, 0, 0, B, B, 0},
    {"causal mask, no positions", "neither", K_ENCODER, QKV_POS_NONE, 1, 0, B, B, 0},
    {"cross-attention, context permuted", "invariant", K_CROSS_CONTEXT, 0, 0, 0, NA, H, 0},
    {"cross-attention, queries permuted", "equivariant", K_CROSS_QUERIES, 0, 0, 0, H, H, 0},
    {"SAB", "equivariant", K_SAB, 0, 0, 0, H, H, 0},
    {"ISAB (4 inducing points)", "equivariant", K_ISAB, 0, 0, 0, H, H, 0},
    {"SAB + PMA classifier", "invariant", K_SET_MODEL, 0, 0, QKV_SET_MODEL_SAB, NA, H, 0},
    {"DeepSets (sum)", "invariant", K_SET_MODEL, 0, 0, QKV_SET_MODEL_DEEPSETS_SUM, NA, H, 0},
    {"DeepSets (max)", "invariant", K_SET_MODEL, 0, 0, QKV_SET_MODEL_DEEPSETS_MAX, NA, H, 0},
    {"DETR decoder, memory permuted", "invariant", K_DETR, 0, 0, 0, NA, H, 0},
    {"DETR decoder, memory + positions", "invariant", K_DETR, 0, 0, 0, NA, H, 1},
    {"DETR decoder, positions fixed", "neither", K_DETR, 0, 0, 0, NA, B, 2},
};
#undef H
#undef B
#undef NA
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

typedef struct model {
    qkv_params params;
    qkv_encoder enc;
    qkv_mha mha;
    qkv_sab sab;
    qkv_isab isab;
    qkv_set_model set;
    qkv_detr detr;
    float *memory_pos;         /* K_DETR with positions: [Nz,d] N(0,1), the pos of memory row j */
    const float *pos_in_use;   /* memory_pos, or its permuted copy */
} model;

static void build(model *m, const config *c, const qkv_perm_options *o, qkv_rng *rng) {
    memset(m, 0, sizeof *m);
    qkv_set_block_config set_cfg = {.d = o->dim, .n_heads = o->heads};
    switch (c->kind) {
    case K_ENCODER: {
        qkv_stack_config stack = {.block = {.d_model = o->dim, .n_heads = o->heads, .d_ff = 2 * o->dim, .activation = QKV_ACT_GELU},
                                  .n_layers = 2, .positions = c->pos, .max_len = o->tokens};
        qkv_encoder_init(&m->enc, &m->params, "enc", &stack, c->causal, rng);
        if (m->enc.pos.table) qkv_fill_normal(m->enc.pos.table->data, m->enc.pos.table->size, rng, 0.0f, 1.0f);
        break;
    }
    case K_CROSS_CONTEXT:
    case K_CROSS_QUERIES: qkv_mha_init(&m->mha, &m->params, "cross", o->dim, o->heads, 0, 0, 1, rng); break;
    case K_SAB: qkv_sab_init(&m->sab, &m->params, "sab", o->dim, &set_cfg, rng); break;
    case K_ISAB: qkv_isab_init(&m->isab, &m->params, "isab", o->dim, 4, &set_cfg, rng); break;
    case K_SET_MODEL: {
        qkv_set_model_config sc = {.kind = c->set, .d_in = o->dim, .width = o->dim, .n_heads = o->heads,
                                   .n_outputs = 5};
        qkv_set_model_init(&m->set, &m->params, "set", &sc, rng);
        break;
    }
    case K_DETR: {
        qkv_detr_config dc = {{.d_model = o->dim, .n_heads = o->heads, .d_ff = 2 * o->dim, .activation = QKV_ACT_RELU}, 2, 5, 3};
        qkv_detr_init(&m->detr, &m->params, "detr", &dc, rng);
        if (c->detr_pos) {
            size_t n = (size_t)(o->tokens + 3) * o->dim;
            m->memory_pos = malloc(n * sizeof(float));
            QKV_CHECK(m->memory_pos, "experiment permutation: out of memory");
            qkv_fill_normal(m->memory_pos, n, rng, 0.0f, 1.0f);
            m->pos_in_use = m->memory_pos;
        }
        break;
    }
    }
}

static void release(model *m, const config *c) {
    if (c->kind == K_ENCODER) qkv_encoder_free(&m->enc);
    free(m->memory_pos);
    qkv_params_free(&m->params);
}

/* The model's output for queries x [B,N,d] and context z [B,Nz,d]. */
static qkv_tensor *forward(qkv_tape *tape, const model *m, const config *c, qkv_tensor *x, qkv_tensor *z) {
    switch (c->kind) {
    case K_ENCODER: return qkv_encoder_forward(tape, &m->enc, x, NULL);
    case K_CROSS_CONTEXT:
    case K_CROSS_QUERIES: return qkv_mha_forward(tape, &m->mha, x, z, NULL);
    case K_SAB: return qkv_sab_forward(tape, &m->sab, x, NULL);
    case K_ISAB: return qkv_isab_forward(tape, &m->isab, x, NULL);
    case K_SET_MODEL: return qkv_set_model_forward(tape, &m->set, x, NULL);
    case K_DETR: {
        qkv_tensor *pos = NULL;
        if (m->pos_in_use) {
            pos = qkv_tape_tensor(tape, 2, (int[]){z->shape[1], z->shape[2]});
            memcpy(pos->data, m->pos_in_use, pos->size * sizeof(float));
        }
        return qkv_detr_forward(tape, &m->detr, z, pos, NULL).hidden;   /* [B,queries,d] */
    }
    }
    return NULL;
}

/* out[b,i,:] = in[b,perm[i],:] for in [B,N,d]: row i of P X is row pi(i) of X. */
static void permute_rows(float *out, const float *in, const int *perm, int n, int d) {
    for (int b = 0; b < BATCH; b++)
        for (int i = 0; i < n; i++)
            memcpy(out + ((size_t)b * n + i) * d, in + ((size_t)b * n + perm[i]) * d, (size_t)d * sizeof(float));
}

/* A uniformly random permutation of 0..n-1 (Fisher-Yates), redrawn if it is the identity. */
static void random_permutation(int *perm, int n, qkv_rng *rng) {
    for (;;) {
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)qkv_rng_below(rng, (uint32_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int i = 0; i < n; i++)
            if (perm[i] != i) return;
    }
}

/* max|a - b| / max|b| over n values (0 when b is all zero and a == b). */
static double relative_error(const float *a, const float *b, size_t n) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) { /* if, not fmax: GCC 12 (aarch64) ICEs vectorizing an fmax reduction */
        double d = fabs((double)a[i] - (double)b[i]), s = fabs((double)b[i]);
        if (d > diff) diff = d;
        if (s > scale) scale = s;
    }
    return scale > 0 ? diff / scale : diff > 0 ? INFINITY : 0.0;
}

/* g: the mean over the rows of y [B,N,d] -> pooled [B,d]. */
static void mean_rows(float *pooled, const float *y, int n, int d) {
    for (int b = 0; b < BATCH; b++)
        for (int k = 0; k < d; k++) {
            double s = 0;
            for (int i = 0; i < n; i++) s += y[((size_t)b * n + i) * d + k];
            pooled[(size_t)b * d + k] = (float)(s / n);
        }
}

/* Runs config c on (x, z) and copies the output into a malloc'd buffer. */
static float *run(qkv_tape *tape, const model *m, const config *c, const float *x, const float *z,
                  const qkv_perm_options *o, int *ndim, int *rows, size_t *size) {
    int n = o->tokens, d = o->dim, nz = o->tokens + 3;
    qkv_tensor *xt = qkv_tape_tensor(tape, 3, (int[]){BATCH, n, d});
    qkv_tensor *zt = qkv_tape_tensor(tape, 3, (int[]){BATCH, nz, d});
    memcpy(xt->data, x, xt->size * sizeof(float));
    memcpy(zt->data, z, zt->size * sizeof(float));
    qkv_tensor *y = forward(tape, m, c, xt, zt);
    float *out = malloc(y->size * sizeof(float));
    QKV_CHECK(out, "experiment permutation: out of memory");
    memcpy(out, y->data, y->size * sizeof(float));
    *ndim = y->ndim;
    *rows = y->ndim == 3 ? y->shape[1] : 1;
    *size = y->size;
    qkv_tape_reset(tape);
    return out;
}

static void measure(const config *c, const qkv_perm_options *o, qkv_tape *tape, qkv_perm_row *row) {
    int n = o->tokens, d = o->dim, nz = o->tokens + 3;
    int permute_context = c->kind == K_CROSS_CONTEXT || c->kind == K_DETR, np = permute_context ? nz : n;
    size_t nx = (size_t)BATCH * n * d, nzs = (size_t)BATCH * nz * d;
    float *x = malloc(nx * sizeof(float)), *z = malloc(nzs * sizeof(float));
    float *px = malloc((permute_context ? nzs : nx) * sizeof(float));
    int *perm = malloc((size_t)np * sizeof(int));
    float *ppos = malloc((size_t)nz * d * sizeof(float));
    QKV_CHECK(x && z && px && perm && ppos, "experiment permutation: out of memory");
    row->equivariance = row->invariance = 0;
    for (int s = 0; s < o->seeds; s++) {
        qkv_rng rng = qkv_rng_split_at(qkv_rng_make(o->seed), (uint64_t)s);
        model m;
        build(&m, c, o, &rng);
        qkv_fill_normal(x, nx, &rng, 0.0f, 1.0f);
        qkv_fill_normal(z, nzs, &rng, 0.0f, 1.0f);
        int ndim, rows;
        size_t ny, ny2;
        float *y = run(tape, &m, c, x, z, o, &ndim, &rows, &ny);
        int per_row = ndim == 3 && !permute_context;      /* one output row per permuted row */
        int width = ndim == 3 ? d : 0;
        float *py = malloc(ny * sizeof(float)), *g = malloc(ny * sizeof(float)), *pg = malloc(ny * sizeof(float));
        QKV_CHECK(py && g && pg, "experiment permutation: out of memory");
        if (per_row) mean_rows(g, y, rows, width);
        for (int p = 0; p < o->perms; p++) {
            random_permutation(perm, np, &rng);
            float *y2;
            if (permute_context) {
                permute_rows(px, z, perm, nz, d);
                if (c->detr_pos == 1) {   /* position j travels with memory row j */
                    for (int i = 0; i < nz; i++)
                        memcpy(ppos + (size_t)i * d, m.memory_pos + (size_t)perm[i] * d, (size_t)d * sizeof(float));
                    m.pos_in_use = ppos;
                }
                y2 = run(tape, &m, c, x, px, o, &ndim, &rows, &ny2);
            } else {
                permute_rows(px, x, perm, n, d);
                y2 = run(tape, &m, c, px, z, o, &ndim, &rows, &ny2);
            }
            QKV_CHECK(ny2 == ny, "experiment permutation: %s: output size changed", c->name);
            if (per_row) {
                permute_rows(py, y, perm, n, d);                  /* P f(X) */
                row->equivariance = fmax(row->equivariance, relative_error(y2, py, ny));
                mean_rows(pg, y2, rows, width);                   /* g(PX) */
                row->invariance = fmax(row->invariance, relative_error(pg, g, (size_t)BATCH * width));
            } else {
                row->invariance = fmax(row->invariance, relative_error(y2, y, ny));
            }
            free(y2);
            m.pos_in_use = m.memory_pos;
        }
        if (!per_row) row->equivariance = -1;
        free(py);
        free(g);
        free(pg);
        free(y);
        release(&m, c);
    }
    free(x);
    free(z);
    free(px);
    free(perm);
    free(ppos);
}

const char *qkv_perm_measured(double err) {
    if (err < 0) return "n/a";
    return err < QKV_PERM_HOLDS ? "holds" : err > QKV_PERM_BROKEN ? "broken" : "unclear";
}

/* A measure contradicts the theory when it lands on the other side of both
 * thresholds (or exists where none applies); between them it is unclear. */
static int contradicts(qkv_perm_expect expect, double err) {
    if (expect == QKV_EXPECT_NA) return err >= 0;
    return strcmp(qkv_perm_measured(err), expect == QKV_EXPECT_HOLDS ? "broken" : "holds") == 0;
}
static int unclear(double err) { return strcmp(qkv_perm_measured(err), "unclear") == 0; }

#define T qkv_perm_options
const qkv_field qkv_perm_fields[] = {
    QKV_INT_FIELD("--seeds", "seeds", T, seeds, 1, 1000, 3, "random models per configuration"),
    QKV_INT_FIELD("--perms", "perms", T, perms, 1, 1000, 5, "random permutations per model"),
    QKV_INT_FIELD("--tokens", "tokens", T, tokens, 2, 256, 8, "set size / sequence length"),
    /* heads of an even width (RoPE's pairs), at most 64 (ALiBi's slopes) */
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_DIM, T, dim, 16, 2, 512),
    QKV_SETTING_FIELD_IN(QKV_FIELD_INT, QKV_SETTING_HEADS, T, heads, 4, 1, 64),
    QKV_SEED_FIELD(T, seed, "seed for weights, inputs and permutations"),
    QKV_TEXT_FIELD("--json", NULL, T, json, NULL, "write the table as JSON"),
    QKV_TEXT_FIELD("--csv", NULL, T, csv, NULL, "write the table as CSV"),
    QKV_SETTING_FIELD(QKV_FIELD_INT, QKV_SETTING_THREADS, T, threads, 0),
};
#undef T
const int qkv_perm_n_fields = (int)(sizeof qkv_perm_fields / sizeof qkv_perm_fields[0]);

void qkv_perm_default_options(qkv_perm_options *o) {
    memset(o, 0, sizeof *o);
    qkv_fields_defaults(qkv_perm_fields, qkv_perm_n_fields, o);
}

/* The options the models and inputs depend on (everything but the outputs). */
static int check_model_options(const qkv_perm_options *o) {
    if (o->seeds < 1 || o->perms < 1)
        return qkv_set_error("--seeds %d / --perms %d: expected at least 1", o->seeds, o->perms), -1;
    if (o->tokens < 2 || o->dim < 2)
        return qkv_set_error("--tokens %d / --dim %d: expected at least 2", o->tokens, o->dim), -1;
    if (o->heads < 1 || o->heads > 64) return qkv_set_error("--heads %d: expected 1..64", o->heads), -1;
    if (o->dim % o->heads != 0 || (o->dim / o->heads) % 2 != 0)
        return qkv_set_error("--heads %d: must divide --dim %d into even head widths", o->heads, o->dim), -1;
    return 0;
}

int qkv_perm_check(const qkv_perm_options *o) {
    const char *outputs[2] = {o->json, o->csv};
    return check_model_options(o) != 0 || qkv_exp_check_outputs(outputs, 2) != 0 ? -1 : 0;
}

int qkv_permutation_experiment(const qkv_perm_options *o, qkv_perm_row *rows) {
    QKV_CHECK(check_model_options(o) == 0, "experiment permutation: %s", qkv_last_error());
    qkv_tape *tape = qkv_tape_create_inference(o->seed);
    for (int i = 0; i < N_CONFIGS && !qkv_cancelled(); i++) {
        const config *c = &configs[i];
        qkv_perm_row *r = &rows[i];
        r->config = c->name;
        r->theory = c->theory;
        r->expect_equivariance = c->equi;
        r->expect_invariance = c->inv;
        measure(c, o, tape, r);
        r->agrees = !contradicts(c->equi, r->equivariance) && !contradicts(c->inv, r->invariance);
        r->inconclusive = r->agrees && (unclear(r->equivariance) || unclear(r->invariance));
    }
    qkv_tape_free(tape);
    if (qkv_cancelled()) /* a signal reached the measurement (core/cancel.h): nothing of it is kept */
        return qkv_set_error("stopped by %s while measuring; nothing was printed or written",
                             qkv_signal_name(qkv_interrupt_signal())), -1;
    return N_CONFIGS;
}

/* ---- the command ------------------------------------------------------------------- */

static void format_error(char *buf, size_t len, double err) {
    if (err < 0) snprintf(buf, len, "n/a");
    else snprintf(buf, len, "%.1e", err);
}

static const char *verdict(const qkv_perm_row *r) {
    return !r->agrees ? "DISAGREES" : r->inconclusive ? "inconclusive" : "agrees";
}

static int write_json(const char *path, const qkv_perm_options *o, const qkv_perm_row *rows, int n, int all) {
    qkv_json_out out = {0};
    char text[256];
    qkv_json_out_text(&out, "{\"experiment\": \"permutation\"");
    qkv_fields_json(qkv_perm_fields, qkv_perm_n_fields, o, 0, &out);
    snprintf(text, sizeof text, ", \"holds_below\": %g, \"broken_above\": %g, \"rows\": [", QKV_PERM_HOLDS,
             QKV_PERM_BROKEN);
    qkv_json_out_text(&out, text);
    for (int i = 0; i < n; i++) {
        const qkv_perm_row *r = &rows[i];
        qkv_json_out_text(&out, i ? ",\n  {\"config\": " : "\n  {\"config\": ");
        qkv_json_out_string(&out, r->config);
        qkv_json_out_text(&out, ", \"theory\": ");
        qkv_json_out_string(&out, r->theory);
        const double errs[2] = {r->equivariance, r->invariance};
        const char *keys[2] = {"equivariance", "invariance"};
        for (int k = 0; k < 2; k++) {
            snprintf(text, sizeof text, ", \"%s_error\": ", keys[k]);
            qkv_json_out_text(&out, text);
            if (errs[k] < 0) qkv_json_out_text(&out, "null");
            else {
                snprintf(text, sizeof text, "%.6e", errs[k]);
                qkv_json_out_text(&out, text);
            }
            snprintf(text, sizeof text, ", \"%s\": \"%s\"", keys[k], qkv_perm_measured(errs[k]));
            qkv_json_out_text(&out, text);
        }
        qkv_json_out_text(&out, ", \"verdict\": ");
        qkv_json_out_string(&out, verdict(r));
        qkv_json_out_text(&out, "}");
    }
    qkv_json_out_text(&out, all ? "\n], \"all_agree\": true}\n" : "\n], \"all_agree\": false}\n");
    int rc = out.failed ? (qkv_set_error("%s: out of memory", path), -1) : qkv_write_file_atomic(path, out.data, out.len);
    qkv_json_out_free(&out);
    return rc;
}

/* CSV: one row per configuration; a measure that does not apply is an empty field. */
static int write_csv(const char *path, const qkv_perm_row *rows, int n) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    QKV_CHECK(f, "experiment permutation: out of memory");
    fputs("config,theory,equivariance_error,invariance_error,equivariance,invariance,verdict\n", f);
    for (int i = 0; i < n; i++) {
        const qkv_perm_row *r = &rows[i];
        fprintf(f, "\"%s\",%s,", r->config, r->theory);
        if (r->equivariance >= 0) fprintf(f, "%.6e", r->equivariance);
        fputc(',', f);
        if (r->invariance >= 0) fprintf(f, "%.6e", r->invariance);
        fprintf(f, ",%s,%s,%s\n", qkv_perm_measured(r->equivariance), qkv_perm_measured(r->invariance), verdict(r));
    }
    fclose(f);
    int rc = qkv_write_file_atomic(path, text, len);
    free(text);
    return rc;
}

/* The range of the measures the theory expects to be expect, in [*lo, *hi]. */
static void expected_range(const qkv_perm_row *rows, int n, qkv_perm_expect expect, double *lo, double *hi) {
    *lo = INFINITY, *hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        const double errs[2] = {rows[i].equivariance, rows[i].invariance};
        const qkv_perm_expect expects[2] = {rows[i].expect_equivariance, rows[i].expect_invariance};
        for (int k = 0; k < 2; k++)
            if (expects[k] == expect && errs[k] >= 0) *lo = fmin(*lo, errs[k]), *hi = fmax(*hi, errs[k]);
    }
}

/* The header, one line per configuration, the ranges where the theory says a
 * symmetry holds and where it says it breaks, and the verdict. Returns whether all agree. */
static int print_table(const qkv_perm_options *o, const qkv_perm_row *rows, int n) {
    int all = 1, inconclusive = 0;
    printf("permutation symmetry of random models: %d seeds x %d permutations, %d tokens, dim %d, %d heads\n"
           "errors are max|f(PX) - P f(X)| / max|f(X)| and max|g(PX) - g(X)| / max|g(X)|;\n"
           "holds: < %.0e, broken: > %.0e\n\n",
           o->seeds, o->perms, o->tokens, o->dim, o->heads, QKV_PERM_HOLDS, QKV_PERM_BROKEN);
    printf("%-34s %-12s %12s %12s  %s\n", "configuration", "theory", "equivariance", "invariance", "verdict");
    for (int i = 0; i < n; i++) {
        char e[32], v[32];
        format_error(e, sizeof e, rows[i].equivariance);
        format_error(v, sizeof v, rows[i].invariance);
        printf("%-34s %-12s %12s %12s  %s\n", rows[i].config, rows[i].theory, e, v, verdict(&rows[i]));
        all &= rows[i].agrees;
        inconclusive += rows[i].inconclusive;
    }
    double holds_lo, holds_hi, broken_lo, broken_hi;
    expected_range(rows, n, QKV_EXPECT_HOLDS, &holds_lo, &holds_hi);
    expected_range(rows, n, QKV_EXPECT_BROKEN, &broken_lo, &broken_hi);
    printf("\nwhere the theory says a symmetry holds: %.1e to %.1e; where it says one breaks: %.1e to %.1e\n",
           holds_lo, holds_hi, broken_lo, broken_hi);
    printf("%s\n", !all           ? "SOME MEASUREMENTS DISAGREE WITH THE THEORY"
                     : inconclusive ? "no measurement disagrees with the theory; some are inconclusive (between "
                                      "the thresholds)"
                                    : "every measurement agrees with the theory");
    return all;
}

int qkv_perm_run(const qkv_perm_options *o, int *all_agree) {
    if (qkv_perm_check(o) != 0) return -1;
    qkv_perm_row rows[QKV_PERM_MAX_ROWS];
    int n = qkv_permutation_experiment(o, rows);
    if (n < 0) return -1;
    *all_agree = print_table(o, rows, n);
    if (o->json && write_json(o->json, o, rows, n, *all_agree) != 0) return -1;
    if (o->csv && write_csv(o->csv, rows, n) != 0) {   /* both outputs or neither (a full disk) */
        if (o->json) remove(o->json);
        return -1;
    }
    return 0;
}
