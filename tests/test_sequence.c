/* test_sequence.c — the sequence tasks: targets, symbol ranges and lengths,
 * determinism in (seed, index), padding and layout for each architecture, batch
 * buffer reuse, names and config validation. */
#include "tests/test_util.h"

#include <stdlib.h>

#include "data/sequence.h"

enum { MAX_LEN = 64 };

static qkv_seq_config make_config(qkv_seq_task task, qkv_seq_arch arch, int vocab, int min_len,
                                  int max_len) {
    qkv_seq_config config = {task, arch, vocab, min_len, max_len};
    return config;
}

/* ---- targets ---------------------------------------------------------------- */

/* Independent statement of each task's target: y is reverse(x), x, or x's symbols
 * in ascending order (nondecreasing, same counts per symbol). */
static void assert_target_of(qkv_seq_task task, const int32_t *x, const int32_t *y, int len,
                             int vocab) {
    switch (task) {
    case QKV_TASK_REVERSE:
        for (int i = 0; i < len; i++) ck_assert_int_eq(y[i], x[len - 1 - i]);
        break;
    case QKV_TASK_COPY:
        for (int i = 0; i < len; i++) ck_assert_int_eq(y[i], x[i]);
        break;
    case QKV_TASK_SORT: {
        int count_x[64] = {0}, count_y[64] = {0};
        ck_assert_int_le(vocab, 64 - QKV_SEQ_FIRST_SYMBOL);
        for (int i = 0; i < len; i++) {
            count_x[x[i]]++;
            count_y[y[i]]++;
            if (i > 0) ck_assert_int_le(y[i - 1], y[i]);
        }
        ck_assert_int_eq(memcmp(count_x, count_y, sizeof count_x), 0);
        break;
    }
    }
}

START_TEST(targets_by_hand) {
    /* The three tasks share the source stream: the same (seed, index) gives the
     * same x, so one hand-checked x pins all three targets. Vocab 3 and length 5
     * make repeats likely, which the sort must keep. */
    int32_t x[3][MAX_LEN], y[3][MAX_LEN];
    int found = 0;
    for (uint64_t index = 0; index < 200 && !found; index++) {
        for (int task = 0; task < 3; task++) {
            qkv_seq_config config = make_config(task, QKV_ARCH_ENCODER, 3, 5, 5);
            ck_assert_int_eq(qkv_seq_example(&config, 7, index, x[task], y[task]), 5);
        }
        ck_assert_int_eq(memcmp(x[0], x[1], 5 * sizeof(int32_t)), 0);
        ck_assert_int_eq(memcmp(x[0], x[2], 5 * sizeof(int32_t)), 0);
        /* Find an x that is neither sorted nor a palindrome, with a repeat. */
        int sorted = 1, palindrome = 1, repeat = 0;
        for (int i = 0; i < 5; i++) {
            if (i > 0 && x[0][i - 1] > x[0][i]) sorted = 0;
            if (x[0][i] != x[0][4 - i]) palindrome = 0;
            for (int j = 0; j < i; j++) repeat |= x[0][i] == x[0][j];
        }
        found = !sorted && !palindrome && repeat;
    }
    ck_assert_msg(found, "no unsorted, non-palindromic source with a repeat in 200 examples");
    const int32_t *src = x[0];
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(y[QKV_TASK_REVERSE][i], src[4 - i]);
        ck_assert_int_eq(y[QKV_TASK_COPY][i], src[i]);
    }
    /* Sort by hand: count each symbol 3, 4, 5 and write them out in order. */
    int32_t sorted[5];
    int k = 0;
    for (int32_t symbol = 3; symbol <= 5; symbol++)
        for (int i = 0; i < 5; i++)
            if (src[i] == symbol) sorted[k++] = symbol;
    ck_assert_int_eq(k, 5);
    ck_assert_int_eq(memcmp(y[QKV_TASK_SORT], sorted, sizeof sorted), 0);
}
END_TEST

START_TEST(targets_follow_sources_over_many_examples) {
    int32_t x[MAX_LEN], y[MAX_LEN];
    for (int task = 0; task < 3; task++) {
        qkv_seq_config config = make_config(task, QKV_ARCH_SEQ2SEQ, 10, 1, 20);
        for (uint64_t index = 0; index < 500; index++) {
            int len = qkv_seq_example(&config, 123, index, x, y);
            assert_target_of(task, x, y, len, config.vocab);
        }
    }
}
END_TEST

START_TEST(stream_is_pinned) {
    /* Regression guard: this source was produced by this implementation; if it
     * changes, every saved experiment's data changes with it. The targets are
     * written by hand from the source. */
    static const int32_t source[6] = {11, 5, 8, 10, 5, 5};
    static const int32_t target[3][6] = {
        [QKV_TASK_REVERSE] = {5, 5, 10, 8, 5, 11},
        [QKV_TASK_COPY] = {11, 5, 8, 10, 5, 5},
        [QKV_TASK_SORT] = {5, 5, 5, 8, 10, 11},
    };
    int32_t x[MAX_LEN], y[MAX_LEN];
    for (int task = 0; task < 3; task++) {
        qkv_seq_config config = make_config(task, QKV_ARCH_ENCODER, 10, 3, 8);
        ck_assert_int_eq(qkv_seq_example(&config, 2024, 2, x, y), 6);
        ck_assert_int_eq(memcmp(x, source, sizeof source), 0);
        ck_assert_int_eq(memcmp(y, target[task], sizeof target[task]), 0);
    }
}
END_TEST

/* ---- symbols and lengths ---------------------------------------------------- */

START_TEST(symbols_in_range_and_all_used) {
    qkv_seq_config config = make_config(QKV_TASK_REVERSE, QKV_ARCH_ENCODER, 7, 4, 12);
    int32_t x[MAX_LEN], y[MAX_LEN];
    long seen[7] = {0}, total = 0;
    for (uint64_t index = 0; index < 2000; index++) {
        int len = qkv_seq_example(&config, 9, index, x, y);
        for (int i = 0; i < len; i++) {
            ck_assert_int_ge(x[i], QKV_SEQ_FIRST_SYMBOL);
            ck_assert_int_lt(x[i], QKV_SEQ_FIRST_SYMBOL + config.vocab);
            ck_assert_int_ge(y[i], QKV_SEQ_FIRST_SYMBOL);
            ck_assert_int_lt(y[i], QKV_SEQ_FIRST_SYMBOL + config.vocab);
            seen[x[i] - QKV_SEQ_FIRST_SYMBOL]++;
            total++;
        }
    }
    /* Uniform symbols: each within 10% of total / vocab (~2300 draws each). */
    for (int s = 0; s < config.vocab; s++)
        ck_assert_msg(labs(seen[s] * config.vocab - total) < total / 10,
                      "symbol %d drawn %ld times of %ld", s, seen[s], total);
}
END_TEST

START_TEST(fixed_length_is_fixed) {
    qkv_seq_config config = make_config(QKV_TASK_SORT, QKV_ARCH_DECODER, 5, 9, 9);
    int32_t x[MAX_LEN], y[MAX_LEN];
    for (uint64_t index = 0; index < 300; index++)
        ck_assert_int_eq(qkv_seq_example(&config, 1, index, x, y), 9);
}
END_TEST

START_TEST(range_lengths_cover_min_to_max_uniformly) {
    enum { MIN = 2, MAX = 7, N = 6000 };
    qkv_seq_config config = make_config(QKV_TASK_COPY, QKV_ARCH_ENCODER, 4, MIN, MAX);
    int32_t x[MAX_LEN], y[MAX_LEN];
    int count[MAX + 1] = {0};
    for (uint64_t index = 0; index < N; index++) {
        int len = qkv_seq_example(&config, 77, index, x, y);
        ck_assert_int_ge(len, MIN);
        ck_assert_int_le(len, MAX);
        count[len]++;
    }
    /* 1000 expected per length; the binomial std is ~29, allow 15%. */
    for (int len = MIN; len <= MAX; len++)
        ck_assert_msg(abs(count[len] - N / (MAX - MIN + 1)) < 150, "length %d drawn %d times",
                      len, count[len]);
}
END_TEST

/* ---- determinism ------------------------------------------------------------ */

START_TEST(examples_are_a_function_of_seed_and_index) {
    qkv_seq_config config = make_config(QKV_TASK_REVERSE, QKV_ARCH_ENCODER, 10, 3, 12);
    int32_t x1[MAX_LEN], y1[MAX_LEN], x2[MAX_LEN], y2[MAX_LEN];
    int same_across_seeds = 0, same_across_indices = 0;
    for (uint64_t index = 0; index < 100; index++) {
        /* Same (seed, index), asked in a different order: same example. */
        int len1 = qkv_seq_example(&config, 5, index, x1, y1);
        qkv_seq_example(&config, 5, 1000 + index, x2, y2);
        int len2 = qkv_seq_example(&config, 5, index, x2, y2);
        ck_assert_int_eq(len1, len2);
        ck_assert_int_eq(memcmp(x1, x2, (size_t)len1 * sizeof *x1), 0);
        ck_assert_int_eq(memcmp(y1, y2, (size_t)len1 * sizeof *y1), 0);
        /* Neighbouring seeds and neighbouring indices: unrelated examples. */
        len2 = qkv_seq_example(&config, 6, index, x2, y2);
        same_across_seeds += len1 == len2 && memcmp(x1, x2, (size_t)len1 * sizeof *x1) == 0;
        len2 = qkv_seq_example(&config, 5, index + 1, x2, y2);
        same_across_indices += len1 == len2 && memcmp(x1, x2, (size_t)len1 * sizeof *x1) == 0;
    }
    ck_assert_int_eq(same_across_seeds, 0);
    ck_assert_int_eq(same_across_indices, 0);
}
END_TEST

/* Row b of the batch holds example first + b: compares every position of every
 * row with the layout sequence.h promises for the architecture. */
static void assert_batch_layout(const qkv_seq_config *config, uint64_t seed, uint64_t first,
                                const qkv_seq_batch *batch) {
    int32_t x[MAX_LEN], y[MAX_LEN];
    int longest = 0;
    for (int b = 0; b < batch->batch; b++) {
        int len = qkv_seq_example(config, seed, first + (uint64_t)b, x, y);
        ck_assert_int_eq(batch->lengths[b], len);
        if (len > longest) longest = len;
    }
    int decoder = config->arch == QKV_ARCH_DECODER, seq2seq = config->arch == QKV_ARCH_SEQ2SEQ;
    ck_assert_int_eq(batch->src_len, decoder ? 2 * longest + 1 : longest);
    ck_assert_int_eq(batch->tgt_len, seq2seq ? longest : 0);
    ck_assert(seq2seq ? batch->tgt_in != NULL : batch->tgt_in == NULL);
    ck_assert(seq2seq ? batch->tgt_mask != NULL : batch->tgt_mask == NULL);
    int T = batch->src_len;
    for (int b = 0; b < batch->batch; b++) {
        int L = qkv_seq_example(config, seed, first + (uint64_t)b, x, y);
        const int32_t *src = batch->src + b * T, *out = batch->tgt_out + b * T;
        const float *mask = batch->src_mask + b * T;
        for (int t = 0; t < T; t++) {
            int32_t want_src, want_out;
            if (decoder) {
                want_src = t < L ? x[t] : t == L ? QKV_SEQ_SEP : t <= 2 * L ? y[t - L - 1]
                                                                            : QKV_SEQ_PAD;
                want_out = t >= L && t < 2 * L ? y[t - L] : QKV_SEQ_IGNORE;
                ck_assert_float_eq(mask[t], t <= 2 * L ? 1.0f : 0.0f);
            } else {
                want_src = t < L ? x[t] : QKV_SEQ_PAD;
                want_out = t < L ? y[t] : QKV_SEQ_IGNORE;
                ck_assert_float_eq(mask[t], t < L ? 1.0f : 0.0f);
            }
            ck_assert_msg(src[t] == want_src, "row %d pos %d: src %d, expected %d", b, t, src[t],
                          want_src);
            ck_assert_msg(out[t] == want_out, "row %d pos %d: tgt_out %d, expected %d", b, t,
                          out[t], want_out);
            if (seq2seq) {
                int32_t want_in = t == 0 ? QKV_SEQ_BOS : t < L ? y[t - 1] : QKV_SEQ_PAD;
                ck_assert_int_eq(batch->tgt_in[b * T + t], want_in);
                ck_assert_float_eq(batch->tgt_mask[b * T + t], t < L ? 1.0f : 0.0f);
            }
        }
    }
}

START_TEST(batch_rows_do_not_depend_on_where_the_batch_starts) {
    for (int arch = 0; arch < 3; arch++) {
        qkv_seq_config config = make_config(QKV_TASK_SORT, arch, 6, 1, 9);
        qkv_seq_batch whole = {0}, part = {0};
        qkv_seq_make_batch(&config, 31, 0, 16, &whole);
        qkv_seq_make_batch(&config, 31, 9, 4, &part);
        assert_batch_layout(&config, 31, 0, &whole);
        assert_batch_layout(&config, 31, 9, &part);
        /* Real tokens of part's rows equal rows 9..12 of whole (widths differ). */
        for (int b = 0; b < 4; b++) {
            int len = part.lengths[b];
            ck_assert_int_eq(len, whole.lengths[9 + b]);
            int real = arch == QKV_ARCH_DECODER ? 2 * len + 1 : len;
            ck_assert_int_eq(memcmp(part.src + b * part.src_len,
                                    whole.src + (9 + b) * whole.src_len,
                                    (size_t)real * sizeof(int32_t)), 0);
        }
        qkv_seq_batch_free(&whole);
        qkv_seq_batch_free(&part);
    }
}
END_TEST

/* ---- layout per architecture ------------------------------------------------ */

START_TEST(padding_for_every_arch_and_task) {
    for (int arch = 0; arch < 3; arch++) {
        for (int task = 0; task < 3; task++) {
            qkv_seq_config config = make_config(task, arch, 8, 1, 10);
            qkv_seq_batch batch = {0};
            qkv_seq_make_batch(&config, 4, 100, 12, &batch);
            ck_assert_int_eq(batch.batch, 12);
            /* Lengths 1..10 over 12 rows: the test must see real padding. */
            int shortest = MAX_LEN, longest = 0;
            for (int b = 0; b < 12; b++) {
                if (batch.lengths[b] < shortest) shortest = batch.lengths[b];
                if (batch.lengths[b] > longest) longest = batch.lengths[b];
            }
            ck_assert_int_lt(shortest, longest);
            assert_batch_layout(&config, 4, 100, &batch);
            qkv_seq_batch_free(&batch);
        }
    }
}
END_TEST

START_TEST(seq2seq_teacher_forcing_by_hand) {
    qkv_seq_config config = make_config(QKV_TASK_REVERSE, QKV_ARCH_SEQ2SEQ, 9, 3, 3);
    int32_t x[3], y[3];
    qkv_seq_example(&config, 11, 0, x, y);
    qkv_seq_batch batch = {0};
    qkv_seq_make_batch(&config, 11, 0, 1, &batch);
    ck_assert_int_eq(batch.src_len, 3);
    ck_assert_int_eq(batch.tgt_len, 3);
    const int32_t want_src[3] = {x[0], x[1], x[2]};
    const int32_t want_in[3] = {QKV_SEQ_BOS, x[2], x[1]};
    const int32_t want_out[3] = {x[2], x[1], x[0]};
    ck_assert_int_eq(memcmp(batch.src, want_src, sizeof want_src), 0);
    ck_assert_int_eq(memcmp(batch.tgt_in, want_in, sizeof want_in), 0);
    ck_assert_int_eq(memcmp(batch.tgt_out, want_out, sizeof want_out), 0);
    qkv_seq_batch_free(&batch);
}
END_TEST

START_TEST(decoder_stream_by_hand) {
    /* Two examples, lengths 2 and 3 found by search; stream width 2*3+1 = 7. */
    qkv_seq_config config = make_config(QKV_TASK_REVERSE, QKV_ARCH_DECODER, 9, 2, 3);
    int32_t a[3], ay[3], c[3], cy[3];
    uint64_t first = 0;
    while (qkv_seq_example(&config, 3, first, a, ay) != 2 ||
           qkv_seq_example(&config, 3, first + 1, c, cy) != 3) {
        first++;
        ck_assert_msg(first < 1000, "no lengths 2 then 3 in 1000 neighbouring examples");
    }
    qkv_seq_batch batch = {0};
    qkv_seq_make_batch(&config, 3, first, 2, &batch);
    ck_assert_int_eq(batch.src_len, 7);
    ck_assert_int_eq(batch.tgt_len, 0);
    const int32_t P = QKV_SEQ_PAD, S = QKV_SEQ_SEP, I = QKV_SEQ_IGNORE;
    const int32_t want_src[14] = {a[0], a[1], S, a[1], a[0], P, P,
                                  c[0], c[1], c[2], S, c[2], c[1], c[0]};
    const int32_t want_out[14] = {I, I, a[1], a[0], I, I, I,
                                  I, I, I, c[2], c[1], c[0], I};
    const float want_mask[14] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1};
    for (int t = 0; t < 14; t++) {
        ck_assert_int_eq(batch.src[t], want_src[t]);
        ck_assert_int_eq(batch.tgt_out[t], want_out[t]);
        ck_assert_float_eq(batch.src_mask[t], want_mask[t]);
    }
    qkv_seq_batch_free(&batch);
}
END_TEST

/* ---- buffers ---------------------------------------------------------------- */

START_TEST(batch_buffers_are_reused) {
    qkv_seq_config config = make_config(QKV_TASK_COPY, QKV_ARCH_SEQ2SEQ, 5, 2, 6);
    qkv_seq_batch batch = {0};
    qkv_seq_make_batch(&config, 1, 0, 8, &batch);
    int cap_batch = batch.capacity_batch, cap_len = batch.capacity_len;
    ck_assert_int_ge(cap_batch, 8);
    ck_assert_int_ge(cap_len, batch.src_len);
    int32_t *src = batch.src, *tgt_in = batch.tgt_in;
    for (uint64_t first = 8; first < 80; first += 8) {
        qkv_seq_make_batch(&config, 1, first, 8, &batch);
        ck_assert_int_eq(batch.capacity_batch, cap_batch);
        ck_assert_int_eq(batch.capacity_len, cap_len);
        ck_assert_ptr_eq(batch.src, src);
        ck_assert_ptr_eq(batch.tgt_in, tgt_in);
        assert_batch_layout(&config, 1, first, &batch);
    }
    /* A bigger batch grows; a smaller one after it keeps the larger capacity. */
    qkv_seq_make_batch(&config, 1, 0, 20, &batch);
    ck_assert_int_ge(batch.capacity_batch, 20);
    assert_batch_layout(&config, 1, 0, &batch);
    int grown = batch.capacity_batch;
    qkv_seq_make_batch(&config, 1, 0, 3, &batch);
    ck_assert_int_eq(batch.capacity_batch, grown);
    assert_batch_layout(&config, 1, 0, &batch);
    /* Same batch struct across architectures and longer examples. */
    qkv_seq_config longer = make_config(QKV_TASK_SORT, QKV_ARCH_DECODER, 5, 10, 12);
    qkv_seq_make_batch(&longer, 2, 0, 5, &batch);
    ck_assert_int_ge(batch.capacity_len, batch.src_len);
    assert_batch_layout(&longer, 2, 0, &batch);
    qkv_seq_make_batch(&config, 2, 0, 5, &batch);
    assert_batch_layout(&config, 2, 0, &batch);
    qkv_seq_batch_free(&batch);
    ck_assert_ptr_null(batch.src);
    ck_assert_int_eq(batch.capacity_batch, 0);
}
END_TEST

/* ---- sizes, names, errors --------------------------------------------------- */

START_TEST(token_count_and_src_len) {
    qkv_seq_config config = make_config(QKV_TASK_COPY, QKV_ARCH_ENCODER, 10, 1, 5);
    ck_assert_int_eq(qkv_seq_token_count(&config), 13);
    ck_assert_int_eq(qkv_seq_src_len(&config, 5), 5);
    config.arch = QKV_ARCH_SEQ2SEQ;
    ck_assert_int_eq(qkv_seq_src_len(&config, 5), 5);
    config.arch = QKV_ARCH_DECODER;
    ck_assert_int_eq(qkv_seq_src_len(&config, 5), 11);
    EXPECT_FATAL(qkv_seq_src_len(&config, 0), "len 0");
}
END_TEST

START_TEST(names_round_trip) {
    for (int task = 0; task < 3; task++)
        ck_assert_int_eq(qkv_seq_task_parse(qkv_seq_task_name(task)), task);
    for (int arch = 0; arch < 3; arch++)
        ck_assert_int_eq(qkv_seq_arch_parse(qkv_seq_arch_name(arch)), arch);
    ck_assert_str_eq(qkv_seq_task_name(QKV_TASK_SORT), "sort");
    ck_assert_str_eq(qkv_seq_arch_name(QKV_ARCH_SEQ2SEQ), "seq2seq");
    ck_assert_int_eq(qkv_seq_task_parse("Reverse"), -1);
    ck_assert_int_eq(qkv_seq_task_parse("encoder"), -1);
    ck_assert_int_eq(qkv_seq_task_parse(""), -1);
    ck_assert_int_eq(qkv_seq_task_parse(NULL), -1);
    ck_assert_int_eq(qkv_seq_arch_parse("transformer"), -1);
    ck_assert_int_eq(qkv_seq_arch_parse("copy"), -1);
    EXPECT_FATAL(qkv_seq_task_name((qkv_seq_task)5), "task 5");
    EXPECT_FATAL(qkv_seq_arch_name((qkv_seq_arch)-1), "arch -1");
}
END_TEST

START_TEST(bad_configs_stop_naming_the_field) {
    int32_t x[MAX_LEN], y[MAX_LEN];
    qkv_seq_batch batch = {0};
    qkv_seq_config vocab = make_config(QKV_TASK_COPY, QKV_ARCH_ENCODER, 1, 2, 4);
    EXPECT_FATAL(qkv_seq_make_batch(&vocab, 0, 0, 4, &batch), "vocab 1");
    EXPECT_FATAL(qkv_seq_example(&vocab, 0, 0, x, y), "qkv_seq_example: vocab");
    EXPECT_FATAL(qkv_seq_token_count(&vocab), "vocab");
    qkv_seq_config min_len = make_config(QKV_TASK_COPY, QKV_ARCH_ENCODER, 4, 0, 4);
    EXPECT_FATAL(qkv_seq_make_batch(&min_len, 0, 0, 4, &batch), "min_len 0");
    qkv_seq_config swapped = make_config(QKV_TASK_COPY, QKV_ARCH_ENCODER, 4, 5, 3);
    EXPECT_FATAL(qkv_seq_example(&swapped, 0, 0, x, y), "min_len 5 > max_len 3");
    qkv_seq_config task = make_config((qkv_seq_task)9, QKV_ARCH_ENCODER, 4, 1, 3);
    EXPECT_FATAL(qkv_seq_make_batch(&task, 0, 0, 4, &batch), "task 9");
    qkv_seq_config arch = make_config(QKV_TASK_COPY, (qkv_seq_arch)3, 4, 1, 3);
    EXPECT_FATAL(qkv_seq_make_batch(&arch, 0, 0, 4, &batch), "arch 3");
    qkv_seq_config good = make_config(QKV_TASK_COPY, QKV_ARCH_ENCODER, 4, 1, 3);
    EXPECT_FATAL(qkv_seq_make_batch(&good, 0, 0, 0, &batch), "n 0");
    EXPECT_FATAL(qkv_seq_make_batch(&good, 0, 0, -3, &batch), "n -3");
    EXPECT_FATAL(qkv_seq_make_batch(NULL, 0, 0, 4, &batch), "config is NULL");
    /* Nothing was allocated by the refused calls. */
    ck_assert_ptr_null(batch.src);
}
END_TEST

Suite *suite_sequence(void) {
    Suite *s = suite_create("sequence");
    TCase *tc = tcase_create("sequence");
    tcase_add_test(tc, targets_by_hand);
    tcase_add_test(tc, targets_follow_sources_over_many_examples);
    tcase_add_test(tc, stream_is_pinned);
    tcase_add_test(tc, symbols_in_range_and_all_used);
    tcase_add_test(tc, fixed_length_is_fixed);
    tcase_add_test(tc, range_lengths_cover_min_to_max_uniformly);
    tcase_add_test(tc, examples_are_a_function_of_seed_and_index);
    tcase_add_test(tc, batch_rows_do_not_depend_on_where_the_batch_starts);
    tcase_add_test(tc, padding_for_every_arch_and_task);
    tcase_add_test(tc, seq2seq_teacher_forcing_by_hand);
    tcase_add_test(tc, decoder_stream_by_hand);
    tcase_add_test(tc, batch_buffers_are_reused);
    tcase_add_test(tc, token_count_and_src_len);
    tcase_add_test(tc, names_round_trip);
    tcase_add_test(tc, bad_configs_stop_naming_the_field);
    suite_add_tcase(s, tc);
    return s;
}
