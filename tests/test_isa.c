/* test_isa.c — the instruction-set paths (core/kernels/isa.h, core/kernels/kernels.h) give
 * bitwise the same results: every kernel of every table this CPU runs against
 * the portable one (which runs everywhere), including the 16-float source built
 * for AVX2 (w16avx2, test-only) so that the AVX-512 code's results are checked
 * on machines without AVX-512; whole training steps in-process under each table;
 * checkpoints of ./qkv runs forced with QKV_ISA, byte for byte; QKV_ISA's
 * errors; and the WebAssembly path's multiply-add (exact_fma.h) against fmaf. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_util.h"

#include "core/kernels/block_product.h"
#include "core/kernels/exact_fma.h"
#include "core/kernels/isa.h"
#include "core/kernels/kernels.h"
#include "train/tasks/sequence.h"

#if defined(__x86_64__)
extern const qkv_kernels qkv_kernels_w16avx2;
#endif

/* The tables to compare with portable, and whether this CPU runs each. */
typedef struct path_case {
    const qkv_kernels *k;
    const char *needs; /* the path whose CPU features it needs */
} path_case;

#define PATH_CASE(name) {&qkv_kernels_##name, #name},
static const path_case cases[] = {
    QKV_ISA_PATHS(PATH_CASE)
#if defined(__x86_64__)
    {&qkv_kernels_w16avx2, "avx2"},
#endif
};
#undef PATH_CASE
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int runs(const path_case *c) { return qkv_isa_supported(c->needs); }

/* ---- gemm and block products ------------------------------------------------------ */

typedef struct product_shape {
    int M, N, K, trans_a, trans_b;
    float alpha, beta;
} product_shape;

/* Edge sizes around every path's tiles (MR 6 and 12, NR 16 and 32, KC 256), one
 * K past a K block, and the shapes of attention blocks and linear layers. */
static const product_shape shapes[] = {
    {1, 1, 1, 0, 0, 1.0f, 0.0f},      {5, 7, 3, 0, 0, 1.0f, 0.0f},
    {13, 33, 17, 0, 0, 1.0f, 1.0f},   {12, 32, 64, 0, 1, 0.125f, 0.0f},
    {64, 64, 16, 0, 1, 0.25f, 0.0f},  {64, 64, 64, 1, 0, 1.0f, 1.0f},
    {37, 70, 257, 1, 1, 0.5f, 1.0f},  {150, 45, 300, 0, 0, 1.0f, 0.0f},
    {200, 96, 64, 0, 0, 1.0f, 1.0f},  {7, 300, 19, 1, 0, -2.0f, 0.0f},
    {193, 129, 33, 0, 1, 1.0f, 0.0f}, {64, 40, 600, 0, 1, 1.0f, 1.0f},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static float *random_floats(size_t n, uint64_t seed) {
    float *x = qkv_malloc(n * sizeof(float), "test");
    fill_normal_seeded(x, n, seed, 0.0f, 1.0f);
    return x;
}

/* C for shape s under table k: gemm with batch 3 (and, once, stride_c 0, the
 * batch summed into one C) and block_product, side by side in out. */
static void products(const qkv_kernels *k, const product_shape *s, float *out, size_t per) {
    qkv_kernels_install(k);
    size_t a_n = (size_t)s->M * s->K, b_n = (size_t)s->K * s->N, c_n = (size_t)s->M * s->N;
    float *A = random_floats(3 * a_n, 1), *B = random_floats(3 * b_n, 2);
    int lda = s->trans_a ? s->M : s->K, ldb = s->trans_b ? s->K : s->N;
    for (int part = 0; part < 3; part++) {
        float *C = out + part * per;
        fill_normal_seeded(C, per, 3, 0.0f, 1.0f); /* beta = 1 starts from these */
        if (part == 0)
            qkv_gemm_batched(3, s->trans_a, s->trans_b, s->M, s->N, s->K, s->alpha, A, lda, a_n, B,
                             ldb, b_n, s->beta, C, s->N, c_n);
        else if (part == 1)
            qkv_gemm_batched(3, s->trans_a, s->trans_b, s->M, s->N, s->K, s->alpha, A, lda, a_n, B,
                             ldb, b_n, s->beta, C, s->N, 0);
        else
            qkv_block_product(s->trans_a, s->trans_b, s->M, s->N, s->K, s->alpha, A, lda, B, ldb,
                              s->beta, C, s->N);
    }
    free(A);
    free(B);
}

START_TEST(products_are_the_same_on_every_path) {
    const qkv_kernels *saved = qkv_kernels_active();
    for (int t = 0; t < 2; t++) { /* 1 and 2 threads: the team splits run too */
        qkv_set_threads(t + 1);
        for (int i = 0; i < N_SHAPES; i++) {
            const product_shape *s = &shapes[i];
            size_t per = 3 * (size_t)s->M * s->N, n = 3 * per;
            float *want = qkv_malloc(n * sizeof(float), "test"), *got = qkv_malloc(n * sizeof(float), "test");
            products(&qkv_kernels_portable, s, want, per);
            /* block_product gives qkv_gemm's bits (block_product.h) */
            ck_assert_msg(memcmp(want, want + 2 * per, (size_t)s->M * s->N * sizeof(float)) == 0,
                          "block_product != gemm for %dx%dx%d", s->M, s->N, s->K);
            for (int c = 0; c < N_CASES; c++) {
                if (!runs(&cases[c])) continue;
                products(cases[c].k, s, got, per);
                for (size_t e = 0; e < n; e++)
                    ck_assert_msg(memcmp(&got[e], &want[e], sizeof(float)) == 0,
                                  "%s: %dx%dx%d (trans %d %d, alpha %g, beta %g), %s, element %zu: "
                                  "%.9g, portable %.9g",
                                  cases[c].k->name, s->M, s->N, s->K, s->trans_a, s->trans_b,
                                  (double)s->alpha, (double)s->beta,
                                  e / per == 0 ? "batched" : e / per == 1 ? "summed batch" : "block",
                                  e % per, (double)got[e], (double)want[e]);
            }
            free(want);
            free(got);
        }
    }
    qkv_set_threads(0);
    qkv_kernels_install(saved);
}
END_TEST

/* The gemm kernels also compute the product (not only the same bits). */
START_TEST(products_match_the_reference) {
    const qkv_kernels *saved = qkv_kernels_active();
    const product_shape *s = &shapes[9]; /* alpha -2, beta 0, op(A) = A^T */
    size_t per = 3 * (size_t)s->M * s->N;
    float *got = qkv_malloc(3 * per * sizeof(float), "test");
    float *want = qkv_malloc((size_t)s->M * s->N * sizeof(float), "test");
    /* the same operands as products(): its first matrices */
    float *A = random_floats(3 * (size_t)s->M * s->K, 1), *B = random_floats(3 * (size_t)s->K * s->N, 2);
    qkv_gemm_reference(s->trans_a, s->trans_b, s->M, s->N, s->K, s->alpha, A, s->trans_a ? s->M : s->K,
                       B, s->trans_b ? s->K : s->N, s->beta, want, s->N);
    for (int c = 0; c < N_CASES; c++) {
        if (!runs(&cases[c])) continue;
        products(cases[c].k, s, got, per);
        assert_floats_close(got, want, (size_t)s->M * s->N, 1e-5, cases[c].k->name);
    }
    free(A);
    free(B);
    free(got);
    free(want);
    qkv_kernels_install(saved);
}
END_TEST

/* ---- row kernels ----------------------------------------------------------------- */

/* One row of n keys (seen: n - n / 4 of them) as an online softmax's first block
 * (m = -inf, sum 0): every path the same max, P~ and sum; the max the plain max of
 * the seen keys, P~ 0 past them, the sum P~'s in the tree of kernels.h. And the
 * table's exponential, in place and into another row, the same on every path. */
START_TEST(row_kernels_are_the_same_on_every_path) {
    const qkv_kernels *p = &qkv_kernels_portable;
    for (int n = 0; n <= 70; n++) {
        float *x = random_floats((size_t)n + 1, 10 + n);
        float *p_want = copy_floats(x, n + 1), *p_got = copy_floats(x, n + 1);
        const int seen = n - n / 4;
        float m = -INFINITY, o = 0.0f;
        double sum = 0.0;
        p->softmax_block(x, n, p_want, n, 1, n, &seen, &m, &sum, &o, 1, 1);
        for (int c = 0; c < N_CASES; c++) {
            if (!runs(&cases[c])) continue;
            const qkv_kernels *k = cases[c].k;
            float m2 = -INFINITY, o2 = 0.0f;
            double sum2 = 0.0;
            memcpy(p_got, x, ((size_t)n + 1) * sizeof(float));
            k->softmax_block(x, n, p_got, n, 1, n, &seen, &m2, &sum2, &o2, 1, 1);
            ck_assert_msg(memcmp(&m, &m2, sizeof m) == 0 && memcmp(&sum, &sum2, sizeof sum) == 0 &&
                              memcmp(p_got, p_want, ((size_t)n + 1) * sizeof(float)) == 0 && o2 == 0.0f,
                          "%s: softmax block of %d keys: max %.9g sum %.9g, portable %.9g %.9g", k->name, n,
                          (double)m2, sum2, (double)m, sum);
            if (n == 0) continue;
            float *e_want = copy_floats(x, n + 1);
            p->row_exp_shifted(e_want, e_want, n, x[0]);
            memcpy(p_got, x, ((size_t)n + 1) * sizeof(float));
            k->row_exp_shifted(p_got, p_got, n, x[0]);
            ck_assert_msg(memcmp(p_got, e_want, ((size_t)n + 1) * sizeof(float)) == 0, "%s: row exp of %d",
                          k->name, n);
            memcpy(p_got, x, ((size_t)n + 1) * sizeof(float)); /* out of place, the same bits */
            k->row_exp_shifted(x, p_got, n, x[0]);
            ck_assert_msg(memcmp(p_got, e_want, (size_t)n * sizeof(float)) == 0 && p_got[n] == x[n],
                          "%s: row exp of %d into another row", k->name, n);
            free(e_want);
        }
        float max = -INFINITY;
        for (int j = 0; j < seen; j++) max = x[j] > max ? x[j] : max;
        ck_assert_msg(memcmp(&m, &max, sizeof m) == 0, "softmax block of %d: max %.9g, want %.9g", n, (double)m,
                      (double)max);
        for (int j = seen; j < n; j++) ck_assert_msg(p_want[j] == 0.0f, "softmax block of %d: P~ past the seen", n);
        double exact = 0.0;
        for (int j = 0; j < seen; j++) exact += p_want[j];
        ck_assert_msg(fabs(sum - exact) < 1e-5 * (1 + n), "softmax block of %d: sum %g, want %g", n, sum, exact);
        /* the sum's order, spelled out (kernels.h): element j in partial j % 16, the
         * partials paired (l, l + 8), (l, l + 4), (l, l + 2), (l, l + 1) */
        float part[16] = {0};
        for (int j = 0; j < seen; j++) part[j % 16] += p_want[j];
        for (int half = 8; half >= 1; half /= 2)
            for (int l = 0; l < half; l++) part[l] = part[l] + part[l + half];
        ck_assert_msg(sum == (double)part[0], "softmax block of %d: sum %.9g, the tree gives %.9g", n, sum,
                      (double)part[0]);
        free(x);
        free(p_want);
        free(p_got);
    }
}
END_TEST

/* Each path's row dots are a scalar loop's: one sum in double per row, from +0,
 * in column order; rows and columns around the vector width, a row stride past
 * the row, and the special values in some rows (a NaN, an infinity, -0 products,
 * a product below float's range that double keeps, and a sum whose order shows:
 * 1e30 + 1 - 1e30 is 0 in column order). */
START_TEST(row_dots_are_the_scalar_sums_on_every_path) {
    static const int widths[] = {1, 3, 4, 15, 16, 17, 32, 33, 64};
    for (int wi = 0; wi < (int)(sizeof widths / sizeof widths[0]); wi++)
        for (int rows = 0; rows <= 37; rows++) {
            int n = widths[wi], ld = n + 3;
            size_t size = (size_t)rows * ld + 1;
            float *a = random_floats(size, 100 + rows), *b = random_floats(size, 200 + n);
            if (rows > 3) {
                a[1 * ld] = NAN;
                a[2 * ld + n - 1] = INFINITY;
                a[3 * ld] = -0.0f, b[3 * ld] = 1.0f;
            }
            if (rows > 5) a[5 * ld] = 1e-30f, b[5 * ld] = 1e-30f;
            for (int r = 7; r <= 8 && r < rows && n >= 3; r++) { /* 1e30 + 1 - 1e30: 0 in order */
                float *x = a + (size_t)r * ld + (r == 7 ? 0 : n - 3), *y = b + (x - a);
                x[0] = 1e30f, x[1] = 1.0f, x[2] = -1e30f;
                y[0] = y[1] = y[2] = 1.0f;
            }
            float want[40], got[40];
            for (int r = 0; r < rows; r++) {
                double sum = 0.0;
                for (int e = 0; e < n; e++) sum += (double)a[(size_t)r * ld + e] * b[(size_t)r * ld + e];
                want[r] = (float)sum;
            }
            for (int c = 0; c < N_CASES; c++) {
                if (!runs(&cases[c])) continue;
                cases[c].k->row_dots(a, b, ld, rows, n, got);
                ck_assert_msg(memcmp(got, want, (size_t)rows * sizeof(float)) == 0,
                              "%s: row dots of %d rows x %d differ from the scalar sums", cases[c].k->name,
                              rows, n);
            }
            free(a);
            free(b);
        }
}
END_TEST

/* ---- training steps ----------------------------------------------------------------- */

/* 2 AdamW steps of a small reversal encoder with dropout: every parameter and
 * the loss. */
static size_t train_floats(float *out) {
    qkv_seq_model_config config;
    qkv_seq_model_default_config(&config);
    config.test_size = 16;
    config.batch = 16;
    config.dropout = 0.1f;
    qkv_seq_model model;
    qkv_seq_model_init(&model, &config);
    qkv_optimizer_config adamw = {.kind = QKV_OPT_ADAMW, .lr = 3e-3f, .weight_decay = 0.01f};
    size_t n = train_and_dump(&model.task, 2, adamw, out);
    qkv_seq_model_free(&model);
    return n;
}

START_TEST(training_is_the_same_on_every_path) {
    const qkv_kernels *saved = qkv_kernels_active();
    size_t n = train_floats(NULL);
    float *want = qkv_malloc(n * sizeof(float), "test"), *got = qkv_malloc(n * sizeof(float), "test");
    qkv_kernels_install(&qkv_kernels_portable);
    train_floats(want);
    for (int c = 0; c < N_CASES; c++) {
        if (!runs(&cases[c]) || cases[c].k == &qkv_kernels_portable) continue;
        qkv_kernels_install(cases[c].k);
        train_floats(got);
        for (size_t e = 0; e < n; e++)
            ck_assert_msg(memcmp(&got[e], &want[e], sizeof(float)) == 0,
                          "%s: trained value %zu of %zu: %.9g, portable %.9g", cases[c].k->name, e,
                          n, (double)got[e], (double)want[e]);
    }
    free(want);
    free(got);
    qkv_kernels_install(saved);
}
END_TEST

/* ---- QKV_ISA and ./qkv ------------------------------------------------------------- */

/* ./qkv train reverse under QKV_ISA=path, checkpoint to file; its exit status. */
static int train_cli(const char *path, const char *file) {
    char args[512], env[64];
    snprintf(args, sizeof args,
             "train reverse --steps 2 --layers 1 --batch 16 --test-size 16 --dropout 0.1 --threads 2 "
             "--quiet --save %s", file);
    snprintf(env, sizeof env, "QKV_ISA=%s", path);
    int status = wait_qkv(spawn_qkv(args, env, 0, NULL));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(forced_paths_write_the_same_checkpoint) {
    ck_assert_int_eq(train_cli("portable", scratch_file("portable.safetensors")), 0);
    size_t want_len, got_len;
    unsigned char *want = read_file_bytes(scratch_file("portable.safetensors"), &want_len);
    for (int i = 0; i < qkv_isa_count(); i++) {
        const char *path = qkv_isa_path(i);
        if (!qkv_isa_supported(path) || strcmp(path, "portable") == 0) continue;
        ck_assert_int_eq(train_cli(path, scratch_file("other.safetensors")), 0);
        unsigned char *got = read_file_bytes(scratch_file("other.safetensors"), &got_len);
        ck_assert_msg(got_len == want_len && memcmp(got, want, want_len) == 0,
                      "QKV_ISA=%s: the checkpoint differs from QKV_ISA=portable's", path);
        free(got);
    }
    free(want);
}
END_TEST

START_TEST(bad_qkv_isa_is_a_one_line_error) {
    ck_assert_int_eq(train_cli("sse9", scratch_file("bad.safetensors")), 2);
    ck_assert_int_eq(access(scratch_file("bad.safetensors"), F_OK), -1); /* nothing written */
    const char *saved = qkv_isa_name();
    ck_assert_int_eq(qkv_isa_select("sse9"), -1);
    expect_last_error("QKV_ISA=sse9", "no such path");
    for (int i = 0; i < qkv_isa_count(); i++) {
        const char *path = qkv_isa_path(i);
        if (qkv_isa_supported(path)) continue; /* a path this CPU lacks */
        ck_assert_int_eq(qkv_isa_select(path), -1);
        expect_last_error(path, "this CPU lacks");
        /* ./qkv says the same, unless it runs where this process does not: under
         * valgrind, whose CPUID hides AVX-512, the child ./qkv runs natively. */
        char env[64], line[512] = "";
        snprintf(env, sizeof env, "QKV_ISA=%s", path);
        int status = wait_qkv(spawn_qkv("bench --help", env, 0, scratch_file("err.txt")));
        size_t len;
        unsigned char *err = read_file_bytes(scratch_file("err.txt"), &len);
        snprintf(line, sizeof line, "%.*s", (int)len, (const char *)err); /* not NUL-terminated */
        free(err);
        ck_assert(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0) {
            ck_assert_int_eq(WEXITSTATUS(status), 2);
            ck_assert_msg(strstr(line, "this CPU lacks") && strchr(line, '\n') == line + strlen(line) - 1,
                          "QKV_ISA=%s: %s", path, line);
        }
    }
    ck_assert_str_eq(qkv_isa_name(), saved); /* a refused choice changes nothing */
    ck_assert_int_eq(qkv_isa_select("portable"), 0);
    ck_assert_str_eq(qkv_isa_name(), "portable");
    ck_assert_int_eq(qkv_isa_select(saved), 0);
}
END_TEST

/* The paths isa.c offers are the ones the Makefile compiled (ISAS), in order. */
START_TEST(paths_are_the_ones_built) {
    char names[256] = "";
    for (int i = 0; i < qkv_isa_count(); i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? " " : "", qkv_isa_path(i));
    ck_assert_str_eq(names, QKV_BUILD_ISAS);
}
END_TEST

/* With QKV_ISA unset, the widest path the CPU runs is the one in use. */
START_TEST(default_is_the_widest_path) {
    if (getenv("QKV_ISA") && *getenv("QKV_ISA")) return;
    const char *saved = qkv_isa_name();
    ck_assert_int_eq(qkv_isa_init(), 0);
    for (int i = 0; i < qkv_isa_count(); i++)
        if (qkv_isa_supported(qkv_isa_path(i))) {
            ck_assert_str_eq(qkv_isa_name(), qkv_isa_path(i));
            break;
        }
    ck_assert_str_eq(qkv_isa_path(qkv_isa_count() - 1), "portable");
    ck_assert_int_eq(qkv_isa_select(saved), 0);
}
END_TEST

/* ---- exact_fma.h against C's fmaf ---------------------------------------------- */

static uint64_t fma_rng = 88172645463325252ull;
static uint32_t fma_next(void) { /* xorshift64 */
    fma_rng ^= fma_rng << 13;
    fma_rng ^= fma_rng >> 7;
    fma_rng ^= fma_rng << 17;
    return (uint32_t)(fma_rng >> 32);
}
static float float_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}
/* A float of random sign and mantissa, biased exponent in [lo, lo + span). */
static float random_float(int lo, int span) {
    return float_bits((fma_next() & 0x807fffffu) | (uint32_t)(lo + (int)(fma_next() % (unsigned)span)) << 23);
}
static int same_float(float x, float y) { return memcmp(&x, &y, sizeof x) == 0 || (x != x && y != y); }

/* 2M cases of five kinds: any floats (products that overflow float, underflow to
 * subnormals, and exact zeros); c near -a*b (cancellation); a*b just below half
 * an ulp of c, so the double sum rounds onto the midpoint between two floats
 * (where rounding twice goes wrong: the naive (float)(a*b + c) must disagree
 * somewhere, or the cases test nothing); zeros, infinities, NaN and subnormals; and
 * sums near and below the smallest normal float. The scalar routine and the 4-lane
 * one agree with fmaf in every case. Their fast path returns the naive result
 * unless qkv_fma_needs_odd(s) holds for the double sum s: every case where the
 * naive result is wrong must be one it flags (the proof in exact_fma.h, checked),
 * and both kinds must occur (the WebAssembly SIMD form is compared byte for byte
 * with the native build by tests/node_test.sh). */
START_TEST(exact_fma_is_fmaf) {
    long naive_wrong = 0, flagged = 0;
    const uint32_t special[] = {0, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 1, 0x80000001u, 0x00800000u};
    for (long i = 0; i < 2000000; i++) {
        float a, b, c;
        switch (i % 5) {
        case 0: a = random_float(1, 253); b = random_float(1, 253); c = random_float(0, 255); break;
        case 1:
            a = random_float(100, 56), b = random_float(100, 56);
            c = float_bits(((union { float f; uint32_t u; }){-(a * b)}).u + fma_next() % 5 - 2);
            break;
        case 2: { /* a * b = h (1 - 2^-2k), h half an ulp of c: c + a*b rounds to c's midpoint in double */
            c = random_float(110, 40);
            int k = 15 + (int)(fma_next() % 9);
            float h = ldexpf(1.0f, (int)((((union { float f; uint32_t u; }){c}).u >> 23) & 0xff) - 127 - 24);
            a = h * (1.0f + ldexpf(1.0f, -k)) * (fma_next() & 1 ? -1.0f : 1.0f);
            b = 1.0f - ldexpf(1.0f, -k);
            break;
        }
        case 3: /* sums around 2^-126 and below: products of 2^-174 .. 2^-114, c subnormal or
                 * small; or a * b = 2^-150 (1 - 2^-2k) and c subnormal, so the double sum lands
                 * on a midpoint between subnormal floats (whose low bits do not show it) */
            if (fma_next() & 1) {
                a = random_float(50, 30), b = random_float(50, 30), c = random_float(0, 4);
            } else {
                int k = 16 + (int)(fma_next() % 8);
                a = ldexpf(1.0f + ldexpf(1.0f, -k), -75) * (fma_next() & 1 ? -1.0f : 1.0f);
                b = ldexpf(1.0f - ldexpf(1.0f, -k), -75);
                c = float_bits(fma_next() & 0x807fffffu);
            }
            break;
        default:
            a = float_bits(special[fma_next() % 8]), b = random_float(0, 255), c = random_float(0, 255);
            if (fma_next() & 1) b = float_bits(special[fma_next() % 8]);
            if (fma_next() & 1) c = float_bits(special[fma_next() % 8]);
        }
        float want = fmaf(a, b, c);
        if (!same_float(qkv_fma_exact(a, b, c), want))
            ck_abort_msg("exact fma(%a, %a, %a) = %a, fmaf %a", a, b, c, qkv_fma_exact(a, b, c), want);
        qkv_f4 v = qkv_fma_exact4((qkv_f4){a, b, c, -a}, (qkv_f4){b, a, a, b}, (qkv_f4){c, c, b, -c});
        const float want4[4] = {want, fmaf(b, a, c), fmaf(c, a, b), fmaf(-a, b, -c)};
        for (int l = 0; l < 4; l++)
            if (!same_float(v[l], want4[l])) ck_abort_msg("exact fma, 4 lanes: lane %d %a, fmaf %a", l, v[l], want4[l]);
        double s = (double)a * b + c;
        int odd = qkv_fma_needs_odd(s);
        if (!same_float((float)s, want)) {
            naive_wrong++;
            if (!odd) ck_abort_msg("fast path wrong: (float)(%a * %a + %a) = %a, fmaf %a", a, b, c, (float)s, want);
        }
        flagged += odd;
    }
    ck_assert_int_gt(naive_wrong, 0);
    ck_assert_int_gt(flagged, naive_wrong - 1);
    ck_assert_int_lt(flagged, 1000000); /* the fast path is the common one */
}
END_TEST

Suite *suite_isa(void) {
    Suite *s = suite_create("isa");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 0);
    tcase_add_checked_fixture(tc, scratch_dir_create, scratch_dir_remove);
    tcase_add_test(tc, products_are_the_same_on_every_path);
    tcase_add_test(tc, products_match_the_reference);
    tcase_add_test(tc, row_kernels_are_the_same_on_every_path);
    tcase_add_test(tc, row_dots_are_the_scalar_sums_on_every_path);
    tcase_add_test(tc, training_is_the_same_on_every_path);
    tcase_add_test(tc, forced_paths_write_the_same_checkpoint);
    tcase_add_test(tc, bad_qkv_isa_is_a_one_line_error);
    tcase_add_test(tc, default_is_the_widest_path);
    tcase_add_test(tc, paths_are_the_ones_built);
    tcase_add_test(tc, exact_fma_is_fmaf);
    suite_add_tcase(s, tc);
    return s;
}
