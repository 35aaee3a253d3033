/* explain.h — `qkv explain attention`: one attention step shown matrix by matrix,
 * forward and backward, for the command line (cli/cmd_explain.c) and the page (web/).
 *
 * Two entry points:
 *   - qkv_explain_attention(mask, pos): the fixed worked example (train/experiments/
 *     explain.c): one query [1]; keys [0], [log 2], [log 3]; values [1,0], [0,2],
 *     [2,2]; printed with every gradient checked against the tape's backward, the
 *     fused op's backward and finite differences. What `qkv explain attention`
 *     prints without inputs of its own.
 *   - qkv_explain_step(input, result) (train/experiments/explain_step.c): the step
 *     of the caller's Q, K and V (up to QKV_EXPLAIN_MAX_T queries and keys, 1 or 2
 *     heads of width up to QKV_EXPLAIN_MAX_D), a mask, a position scheme acting
 *     inside attention and a loss. Every matrix of the forward (S0 = Q K^T, the
 *     scale, S, the position bias B, the mask M, the logits S' = S + B + M, P, O)
 *     and of the backward (dO, dO * O, D_i = rowsum(dO * O), dV, dP, dS, dQ, dK)
 *     comes from qkv's ops on a tape and its backward (nothing is recomputed by
 *     hand); they are kept, named and shaped, in one result the caller walks.
 *     qkv_explain_check(input, which, row, col, ...) gives one entry's gradient
 *     from the tape next to its central finite difference.
 *   Bad input (sizes out of range, a head count that does not divide the width, an
 *   unknown scheme or a parameter it refuses) is -1 with a one-line
 *   qkv_last_error() (core/error.h); nothing stops the program.
 *
 * Positions (qkv_explain_step): a query i sits at position i + Tk - Tq, a key j at j
 * (the library's alignment). rope and p-rope rotate Q and K per head (qkv_rope, base
 * 10000 unless given; p-rope turns the first floor(p * d/2) pairs, p = 0.75 unless
 * given); alibi adds -slope_h * |i - j| (one slope per head; default the first H of
 * an eight-head model's slopes 2^(-8h/8), i.e. 1/2 and 1/4, as the worked example
 * uses 1/2); t5 adds table[bucket(j - i)][h] (layers/positions.h's buckets, table
 * drawn N(0, 1) from the seed so that it visibly moves P); fire adds the MLP
 * f(psi(i - j) / psi(max(i, L))) (layers/positions.h: width 4 unless given, the MLP's
 * init drawn from the seed, c and L as given or the defaults 0.1 and 512). Every such
 * parameter is one of the result's matrices (section "positions").
 *
 * Losses: QKV_EXPLAIN_LOSS_DOT, L = sum_ij O_ij C_ij (C given, or drawn N(0, 1) from
 * the seed; dO = C); QKV_EXPLAIN_LOSS_MSE, L = 1/2 sum_ij (O_ij - Y_ij)^2 (Y given or
 * drawn; dO = O - Y). With two heads O is [Tq, dv] with head h's output in columns
 * h*dv/2.., and C or Y has that shape too.
 */
#ifndef QKV_EXPERIMENTS_EXPLAIN_H
#define QKV_EXPERIMENTS_EXPLAIN_H

#include "layers/positions.h"

/* The masks, in enum order (names: qkv_explain_mask_names, NULL-terminated):
 * padding hides keys j >= key_length; keep hides (i, j) where keep[i][j] == 0. */
enum { QKV_EXPLAIN_MASK_NONE, QKV_EXPLAIN_MASK_CAUSAL, QKV_EXPLAIN_MASK_PADDING, QKV_EXPLAIN_MASK_KEEP,
       QKV_EXPLAIN_MASK_COUNT };
extern const char *const qkv_explain_mask_names[];

/* ---- the worked example --------------------------------------------------------- */

/* The position schemes the worked example explains: the rows of layers/positions.h's
 * table without a trained table (none, sinusoidal, rope, alibi), in table order.
 * names[0..n) (NULL at names[n]) and, if not NULL, kinds[0..n); names needs
 * QKV_POS_COUNT + 1 entries. Returns n. */
int qkv_explain_schemes(const char **names, qkv_pos_kind *kinds);

/* Prints the worked example for a mask (none, causal or padding) and one of those
 * schemes (a programmer error otherwise); 0 when every check agrees within the
 * tolerance, 1 otherwise (also when a signal cut the fused op short: core/cancel.h). */
int qkv_explain_attention(int mask, qkv_pos_kind pos);

/* ---- one attention step of the caller's inputs ----------------------------------- */

typedef struct qkv_explain_input qkv_explain_input;

/* The worked example's matrices into in (below) for those of Q, K and V that
 * missing names (bits 1, 2, 4): one query [1] (three under in's causal mask);
 * keys [0], [log 2], [log 3]; values [1,0], [0,2], [2,2]. Q and K are in->dk wide
 * (width when dk is not set yet), the numbers in their first column. */
void qkv_explain_worked_example(qkv_explain_input *in, int missing, int width);
/* The worked example's Q, K and V for those the user left out (given: bits 1, 2,
 * 4 for q, k, v), as wide as in's position scheme needs (an even head for rope,
 * two pairs for p-rope): the command line and the page fill them alike. */
void qkv_explain_fill_missing(qkv_explain_input *in, int given);

#define QKV_EXPLAIN_MAX_T 8        /* queries, keys */
#define QKV_EXPLAIN_MAX_D 8        /* a head's width (of Q/K and of V) */
#define QKV_EXPLAIN_MAX_HEADS 2
#define QKV_EXPLAIN_MAX_W (QKV_EXPLAIN_MAX_D * QKV_EXPLAIN_MAX_HEADS)   /* all heads' columns */

typedef enum qkv_explain_loss { QKV_EXPLAIN_LOSS_DOT, QKV_EXPLAIN_LOSS_MSE, QKV_EXPLAIN_LOSS_COUNT } qkv_explain_loss;
extern const char *const qkv_explain_loss_names[];   /* "dot", "mse"; NULL-terminated */

/* The schemes qkv_explain_step takes (those acting inside attention: none, rope,
 * alibi, t5, p-rope, fire), in table order, as qkv_explain_schemes. */
int qkv_explain_step_schemes(const char **names, qkv_pos_kind *kinds);

struct qkv_explain_input {
    int tq, tk;                    /* 1..QKV_EXPLAIN_MAX_T */
    int heads;                     /* 1 or 2: Q/K and V columns split evenly into heads */
    int dk, dv;                    /* columns of Q and K, of V (all heads): heads * d_head */
    float q[QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_W];   /* [tq, dk] row-major */
    float k[QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_W];   /* [tk, dk] */
    float v[QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_W];   /* [tk, dv] */
    int mask;                      /* QKV_EXPLAIN_MASK_* */
    int key_length;                /* padding: keys 0..key_length-1 are real (1..tk) */
    int keep_given;                /* 1: keep was set (qkv_explain_input_set); --mask keep needs it */
    float keep[QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_T];   /* keep: [tq, tk], nonzero = may attend */
    qkv_pos_kind pos;              /* one of qkv_explain_step_schemes */
    float scale;                   /* 0: 1/sqrt(d_head) */
    /* the schemes' parameters; 0 means the default named in the file's comment */
    float rope_base;               /* rope, p-rope */
    float prope;                   /* p-rope: the share p of pairs that turn, in (0, 1] */
    float alibi_slopes[QKV_EXPLAIN_MAX_HEADS];   /* alibi: per head; 0: the default */
    int t5_buckets, t5_max_distance;             /* t5: 0 = 8 buckets and 16 (small, so that
                                                  * 8 positions already reach the log-spaced buckets) */
    int fire_width;                /* fire: the MLP's hidden width; 0 = 4 */
    float fire_c, fire_l;          /* fire: c and L's initial values; 0 = 0.1 and 512 */
    qkv_explain_loss loss;
    int target_given;              /* 1: target holds C (dot) or Y (mse); 0: drawn from seed */
    float target[QKV_EXPLAIN_MAX_T * QKV_EXPLAIN_MAX_W];   /* [tq, dv] */
    unsigned long long seed;       /* the t5 table, fire's MLP, an undrawn target */
};

/* The position schemes' parameters the step takes: the one list `qkv explain
 * attention`'s flag rows (cli/cmd_explain.c), the web API's reader and the page's
 * fields (web/: qkv_web_info's "pos_params") all expand. A row is
 *   X(SCHEME, SCHEME2, "--flag", member, KIND, lo, hi, "default", "help")
 * SCHEME, SCHEME2: the qkv_pos_kind suffixes it belongs to (twice when one);
 * member: of qkv_explain_input and of the command's options (LIST: the command's
 * text; the input's alibi_slopes); KIND: INT, FLOAT or LIST (one positive number per head); lo..hi: the
 * range read (0: the default); "default": what 0 or absent means, as text. */
#define QKV_EXPLAIN_POS_PARAMS(X)                                                                             \
    X(ROPE, PROPE, "--rope-base", rope_base, FLOAT, 0, 1e9, "10000", "rope, p-rope: the base (0: 10000)")      \
    X(PROPE, PROPE, "--p-rope", prope, FLOAT, 0, 1, "0.75", "p-rope: the share of pairs that turn (0: 0.75)")  \
    X(ALIBI, ALIBI, "--slopes", slopes, LIST, 0, 1e9, "1/2, 1/4", "alibi: one slope per head (default 1/2, 1/4)") \
    X(T5, T5, "--t5-buckets", t5_buckets, INT, 0, QKV_T5_MAX_BUCKETS, "8", "t5: buckets (0: 8)")               \
    X(T5, T5, "--t5-max-distance", t5_max_distance, INT, 0, 1 << 20, "16", "t5: max distance (0: 16)")          \
    X(FIRE, FIRE, "--fire-width", fire_width, INT, 0, 64, "4", "fire: the MLP's hidden width (0: 4)")           \
    X(FIRE, FIRE, "--fire-c", fire_c, FLOAT, 0, 1e6, "0.1", "fire: c (0: 0.1)")                                \
    X(FIRE, FIRE, "--fire-l", fire_l, FLOAT, 0, 1e9, "512", "fire: L (0: 512)")

/* Zeroes in and sets the defaults: mask none, pos none, loss dot, seed 1, no sizes. */
void qkv_explain_input_init(qkv_explain_input *in);

/* Parses a matrix typed as rows of numbers, rows separated by ';', numbers by ','
 * or spaces ("1,0; 0,1"), into out (row-major, at most max_rows x max_cols).
 * what names it in the error ("--q"). 0 with *rows, *cols set, or -1 with a
 * one-line qkv_last_error(): not a number, ragged rows, too many rows or columns, empty. */
int qkv_explain_parse_matrix(const char *what, const char *text, float *out, int max_rows, int max_cols,
                             int *rows, int *cols);

/* Sets the matrix name ("q", "k", "v", "keep" or "target") of in from typed text
 * (qkv_explain_parse_matrix; what names it in errors: "--q", "f.txt line 3") and
 * the sizes it gives (q: tq, dk; k: tk, dk; v: tk, dv), which must agree with
 * those already set; keep and target come after q, k and v (target sets
 * target_given). 0, or -1 with qkv_last_error(). */
int qkv_explain_input_set(qkv_explain_input *in, const char *name, const char *what, const char *text);

/* The matrices by name, in the order they are set: "q", "k", "v", "keep", "target". */
#define QKV_EXPLAIN_N_MATRICES 5
extern const char *const qkv_explain_matrix_names[];   /* NULL-terminated */

/* A text file of lines "name = rows" (name one of qkv_explain_matrix_names, rows as
 * qkv_explain_parse_matrix reads them, e.g. "q = 1,0; 0,1"; blank lines and lines
 * starting with '#' skipped; at most 64 KB): texts[i] is the malloc'd text of
 * matrix i, or NULL when the file does not give it. 0, or -1 with qkv_last_error()
 * naming the file and line (texts all NULL). */
int qkv_explain_read_file(const char *path, char *texts[QKV_EXPLAIN_N_MATRICES]);

/* Checks in: sizes in range, heads dividing dk and dv with heads of width <=
 * QKV_EXPLAIN_MAX_D, the mask's data, the scheme and its parameters (through its
 * row's check, layers/positions.h), finite numbers. 0, or -1 with qkv_last_error(). */
int qkv_explain_check_input(const qkv_explain_input *in);

/* Is key j hidden from query i by in's mask (before any bias)? */
int qkv_explain_hidden(const qkv_explain_input *in, int i, int j);
/* The layers/positions.h options in's scheme parameters give, defaults filled in. */
void qkv_explain_pos_opts(const qkv_explain_input *in, qkv_pos_opts *opts);

/* One matrix of the step. Per-head matrices (head >= 0) are that head's [rows, cols];
 * head -1 marks a matrix of all heads or of none. In order (qkv_explain_find looks
 * them up by name and head):
 *   inputs     Q, K, V, and C (loss dot) or Y (loss mse): head -1, the input's layout
 *   positions  alibi: slopes [1,H]; t5: bucket [Tq,Tk], table [buckets,H]; fire: u
 *              [Tq,Tk], fc1.w, fc1.b, fc2.w, fc2.b, c, l_scale (all head -1)
 *   forward    scale [1,1] and, with a mask, M [Tq,Tk] (head -1); per head: Qr, Kr
 *              (rope, p-rope), S0, S, B (alibi, t5, fire), S' (with a bias or
 *              mask), P, O; with two heads also O of all heads [Tq,dv]
 *   backward   dO [Tq,dv] (head -1); per head: dO (two heads only), dO*O, D [Tq,1],
 *              dV, dP, dS, dB (t5, fire), dQr, dKr (rope, p-rope), dQ, dK; with two
 *              heads also dQ, dK, dV of all heads in the input's layout; t5: dtable;
 *              fire: dfc1.w, dfc1.b, dfc2.w, dfc2.b, dc, dl_scale.
 * With one head the all-heads O, dQ, dK and dV are head 0's (not repeated). */
typedef struct qkv_explain_matrix {
    const char *section;           /* "inputs", "positions", "forward", "backward" (static) */
    const char *name;              /* "Q", "S0", "B", "M", "S'", "P", "O", "dO", "D", "dS", ... (static) */
    const char *formula;           /* what it is, e.g. "P * (dP - D)" (static) */
    int head;                      /* 0.., or -1 */
    int rows, cols;
    const float *values;           /* rows * cols, row-major; owned by the result */
} qkv_explain_matrix;

typedef struct qkv_explain_result {
    int n;                         /* matrices, in the order the command line prints them */
    qkv_explain_matrix *matrices;
    int heads, d_head, dv_head;
    float scale;
    double loss;                   /* L, accumulated in double */
    float fused_diff;              /* max |fused qkv_attention - composed| over O, dQ, dK, dV */
    char setup[512];               /* one line per fact: positions and their parameters, the loss */
} qkv_explain_result;

/* Runs the step. 0 with *result filled (free with qkv_explain_result_free), or -1
 * with qkv_last_error() and *result empty (safe to free). */
int qkv_explain_step(const qkv_explain_input *in, qkv_explain_result *result);
void qkv_explain_result_free(qkv_explain_result *result);
/* The matrix named name of head (-1 for an all-heads one), or NULL. */
const qkv_explain_matrix *qkv_explain_find(const qkv_explain_result *result, const char *name, int head);

/* One entry of dL/dQ, dL/dK or dL/dV (which: 'q', 'k' or 'v'; row, col in the
 * input's layout): *analytic from the tape's backward, *numeric the central
 * difference (L(x + h) - L(x - h)) / 2h, h = 1e-3, both L in double. 0, or -1 with
 * qkv_last_error() (bad input, an entry out of range). */
int qkv_explain_check(const qkv_explain_input *in, char which, int row, int col, double *analytic,
                      double *numeric);

#endif
