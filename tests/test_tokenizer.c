/* test_tokenizer.c — data/tokenizer.h: byte and BPE tokens and their text form
 * (test_text.c tests the corpus they are made from).
 *
 * BPE training is checked against a reference written the slow, obvious way (a
 * full recount of the pairs before every merge) on generated texts; encoding
 * against training (encoding the training text gives training's tokens); the text
 * form by round trips and by a mutation loop that must never crash and never
 * accept a text it would not write itself. Every text is generated here.
 */
#include <stdio.h>
#include <stdlib.h>

#include "data/tokenizer.h"
#include "tests/test_util.h"

/* The tokenizer is large (its decoding table): one per test, not on the stack. */
static qkv_tokenizer *tokenizer_new(void) {
    qkv_tokenizer *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    return t;
}

static uint8_t *random_bytes(size_t n, uint32_t alphabet, uint64_t seed) {
    uint8_t *bytes = malloc(n ? n : 1);
    qkv_rng rng = qkv_rng_make(seed);
    for (size_t i = 0; i < n; i++) bytes[i] = (uint8_t)qkv_rng_below(&rng, alphabet);
    return bytes;
}

/* Text made of "words" drawn from a few syllables, so BPE has structure to find. */
static uint8_t *wordy_text(size_t n, uint64_t seed) {
    static const char *const parts[] = {"the ", "qu", "ick ", "br", "own ", "fox", "\n", "\xff\xfe", "\0\x01", "ab"};
    uint8_t *text = malloc(n);
    qkv_rng rng = qkv_rng_make(seed);
    for (size_t i = 0; i < n;) {
        const char *part = parts[qkv_rng_below(&rng, 10)];
        size_t len = part[0] == '\0' ? 2 : strlen(part);
        for (size_t k = 0; k < len && i < n; k++) text[i++] = (uint8_t)part[k];
    }
    return text;
}

/* The generated texts of the round-trip tests: every byte, invalid UTF-8, binary. */
typedef struct sample_text {
    const char *name;
    uint8_t *bytes;
    size_t n;
} sample_text;

enum { N_SAMPLES = 5 };

static void make_samples(sample_text s[N_SAMPLES]) {
    static const uint8_t bad_utf8[] = {0xc0, 0x80, 0xff, 0xfe, 0x80, 0xe2, 0x82, 0x00, 0xed, 0xa0, 0x80,
                                       0xf4, 0x90, 0x80, 0x80, 'x', 0xc3, 0xc3, 0xa9, 0xff};
    uint8_t *all = malloc(256 * 3), *utf8 = malloc(20 * 50);
    for (int i = 0; i < 256 * 3; i++) all[i] = (uint8_t)(i * 7 % 256);
    for (int i = 0; i < 20 * 50; i++) utf8[i] = bad_utf8[i % 20];
    s[0] = (sample_text){"every byte", all, 256 * 3};
    s[1] = (sample_text){"invalid UTF-8", utf8, 20 * 50};
    s[2] = (sample_text){"random binary", random_bytes(5000, 256, 11), 5000};
    s[3] = (sample_text){"words", wordy_text(6000, 12), 6000};
    s[4] = (sample_text){"one byte", random_bytes(1, 256, 13), 1};
}

static void free_samples(sample_text s[N_SAMPLES]) {
    for (int i = 0; i < N_SAMPLES; i++) free(s[i].bytes);
}

/* encode then decode gives text back, and every id is in the vocabulary. */
static void assert_round_trip(const qkv_tokenizer *t, const uint8_t *text, size_t n, const char *what) {
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    uint8_t *back = malloc(n + 1);
    long k = qkv_tokenizer_encode(t, text, n, 0, ids);
    ck_assert_msg(k >= 0 && (size_t)k <= n, "%s: encode gave %ld for %zu bytes (%s)", what, k, n, qkv_last_error());
    for (long i = 0; i < k; i++) ck_assert_msg(ids[i] >= 0 && ids[i] < qkv_tokenizer_vocab(t), "%s: id", what);
    ck_assert_msg(qkv_tokenizer_decode(t, ids, (size_t)k, back, n + 1) == n, "%s: decoded length", what);
    ck_assert_msg(n == 0 || memcmp(back, text, n) == 0, "%s: decode(encode(x)) != x", what);
    free(ids);
    free(back);
}

/* The table is what the alphabet and the merges say it is. */
static void assert_consistent(const qkv_tokenizer *t) {
    ck_assert(t->n_bytes >= 1 && t->n_bytes <= 256 && qkv_tokenizer_vocab(t) <= QKV_TOKENIZER_MAX_VOCAB);
    for (int b = 0, seen = 0; b < 256; b++) {
        if (t->byte_token[b] < 0) continue;
        ck_assert_int_eq(t->byte_token[b], seen);
        ck_assert_int_eq(t->alphabet[seen++], b);
        if (b == 255) ck_assert_int_eq(seen, t->n_bytes);
    }
    for (int m = 0; m < t->n_merges; m++) {
        int32_t l = t->merges[m][0], r = t->merges[m][1];
        ck_assert(l >= 0 && l < t->n_bytes + m && r >= 0 && r < t->n_bytes + m);
        size_t nl, nr, n;
        const uint8_t *bl = qkv_tokenizer_token_bytes(t, l, &nl), *br = qkv_tokenizer_token_bytes(t, r, &nr);
        const uint8_t *b = qkv_tokenizer_token_bytes(t, t->n_bytes + m, &n);
        ck_assert(n == nl + nr && n <= QKV_TOKENIZER_MAX_TOKEN_BYTES);
        ck_assert(memcmp(b, bl, nl) == 0 && memcmp(b + nl, br, nr) == 0);
    }
}

/* ---- bytes ---------------------------------------------------------------------------- */

START_TEST(bytes_tokens_round_trip) {
    sample_text s[N_SAMPLES];
    make_samples(s);
    qkv_tokenizer *t = tokenizer_new();
    for (int i = 0; i < N_SAMPLES; i++) {
        qkv_tokenizer_init_bytes(t, s[i].bytes, s[i].n);
        ck_assert_int_eq(t->kind, QKV_TOKENIZER_BYTES);
        assert_consistent(t);
        assert_round_trip(t, s[i].bytes, s[i].n, s[i].name);
        assert_round_trip(t, s[i].bytes, 0, "empty text"); /* an empty text is zero tokens */
    }
    qkv_tokenizer_init_bytes(t, s[0].bytes, s[0].n);
    ck_assert_int_eq(qkv_tokenizer_vocab(t), 256);
    ck_assert_int_eq(qkv_tokenizer_encode(t, NULL, 0, 0, NULL), 0);
    free_samples(s);
    free(t);
}
END_TEST

START_TEST(alphabet_is_the_distinct_bytes_in_order) {
    qkv_tokenizer *t = tokenizer_new();
    qkv_tokenizer_init_bytes(t, (const uint8_t *)"hello\xff\x00", 7);
    ck_assert_int_eq(t->n_bytes, 6);
    ck_assert_mem_eq(t->alphabet, "\x00" "ehlo\xff", 6);
    ck_assert_int_eq(t->byte_token['l'], 3);
    ck_assert_int_eq(t->byte_token['z'], -1);
    int32_t ids[7];
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"hello", 5, 0, ids), 5);
    ck_assert(ids[0] == 2 && ids[1] == 1 && ids[2] == 3 && ids[3] == 3 && ids[4] == 4);
    free(t);
}
END_TEST

START_TEST(unknown_bytes_are_skipped_or_named) {
    qkv_tokenizer *t = tokenizer_new();
    qkv_tokenizer_init_bytes(t, (const uint8_t *)"abcabc", 6);
    int32_t ids[8];
    uint8_t back[8];
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"ab\xff" "c\x00", 5, 1, ids), 3);
    ck_assert_int_eq(qkv_tokenizer_decode(t, ids, 3, back, sizeof back), 3);
    ck_assert_mem_eq(back, "abc", 3);
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"ab\xff" "c", 4, 0, ids), -1);
    expect_last_error("byte 0xff at offset 2", "is not in the vocabulary");
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"abc\x00", 4, 0, ids), -1);
    expect_last_error("byte 0x00 at offset 3", "is not in the vocabulary");
    /* BPE: the merges apply to what is left once unknown bytes are dropped */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"abcabc", 6, 4), 0);
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"a!bc", 4, 1, ids), 2);
    ck_assert_int_eq(ids[0], 3);
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"abc!", 4, 0, ids), -1);
    expect_last_error("byte 0x21 at offset 3", "is not in the vocabulary");
    free(t);
}
END_TEST

START_TEST(decode_reports_the_length_it_needs) {
    qkv_tokenizer *t = tokenizer_new();
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"xyzxyzxyz", 9, 5), 0);
    int32_t ids[9];
    long k = qkv_tokenizer_encode(t, (const uint8_t *)"xyzxyzxyz", 9, 0, ids);
    ck_assert_int_eq(k, 3); /* xy, then xyz */
    uint8_t out[4] = {0, 0, 0, '#'};
    ck_assert_int_eq(qkv_tokenizer_decode(t, ids, (size_t)k, out, 3), 9); /* only 3 fit */
    ck_assert_mem_eq(out, "xyz#", 4);
    ck_assert_int_eq(qkv_tokenizer_decode(t, ids, (size_t)k, NULL, 0), 9);
    size_t len;
    ck_assert_mem_eq(qkv_tokenizer_token_bytes(t, 4, &len), "xyz", 3);
    ck_assert_int_eq(len, 3);
    EXPECT_FATAL(qkv_tokenizer_token_bytes(t, 5, &len), "token 5 outside the vocabulary of 5");
    EXPECT_FATAL(qkv_tokenizer_token_bytes(t, -1, &len), "outside the vocabulary");
    int32_t bad = 9;
    EXPECT_FATAL(qkv_tokenizer_decode(t, &bad, 1, out, 4), "token 9 outside");
    free(t);
}
END_TEST

/* ---- BPE ------------------------------------------------------------------------------ */

START_TEST(bpe_tokens_round_trip) {
    sample_text s[N_SAMPLES];
    make_samples(s);
    qkv_tokenizer *t = tokenizer_new();
    const int vocabs[] = {0, 1, 40, 300, QKV_TOKENIZER_MAX_VOCAB}; /* added to the alphabet's size, capped */
    for (int i = 0; i < N_SAMPLES; i++)
        for (int v = 0; v < 5; v++) {
            qkv_tokenizer_init_bytes(t, s[i].bytes, s[i].n);
            int vocab = t->n_bytes + vocabs[v];
            if (vocab > QKV_TOKENIZER_MAX_VOCAB) vocab = QKV_TOKENIZER_MAX_VOCAB;
            ck_assert_int_eq(qkv_tokenizer_train_bpe(t, s[i].bytes, s[i].n, vocab), 0);
            ck_assert_int_eq(t->kind, QKV_TOKENIZER_BPE);
            ck_assert_int_le(qkv_tokenizer_vocab(t), vocab);
            assert_consistent(t);
            assert_round_trip(t, s[i].bytes, s[i].n, s[i].name);
            for (int j = 0; j < N_SAMPLES; j++) { /* other texts, with the bytes they share */
                int32_t *ids = malloc(s[j].n * sizeof *ids);
                uint8_t *kept = malloc(s[j].n);
                size_t n_kept = 0;
                for (size_t k = 0; k < s[j].n; k++)
                    if (t->byte_token[s[j].bytes[k]] >= 0) kept[n_kept++] = s[j].bytes[k];
                assert_round_trip(t, kept, n_kept, "another text");
                long k = qkv_tokenizer_encode(t, s[j].bytes, s[j].n, 1, ids);
                long k_kept = qkv_tokenizer_encode(t, kept, n_kept, 0, ids);
                ck_assert_int_eq(k, k_kept);
                free(ids);
                free(kept);
            }
        }
    free_samples(s);
    free(t);
}
END_TEST

/* The merges of the example in every BPE tutorial, with this file's tie rule. */
START_TEST(bpe_learns_the_known_merges) {
    qkv_tokenizer *t = tokenizer_new();
    const char *text = "aaabdaaabac"; /* a b c d = tokens 0 1 2 3 */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)text, 11, 100), 0);
    /* aa occurs 4 times (overlaps count); then (aa, a) and (a, b) twice each: the
     * smaller pair (a, b) wins; then (aa, ab) twice; then no pair twice. */
    ck_assert_int_eq(t->n_merges, 3);
    ck_assert(t->merges[0][0] == 0 && t->merges[0][1] == 0);
    ck_assert(t->merges[1][0] == 0 && t->merges[1][1] == 1);
    ck_assert(t->merges[2][0] == 4 && t->merges[2][1] == 5);
    int32_t ids[11];
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)text, 11, 0, ids), 5);
    ck_assert(ids[0] == 6 && ids[1] == 3 && ids[2] == 6 && ids[3] == 0 && ids[4] == 2);
    /* left to right: aaa is (aa, a), aaaa is (aa, aa) */
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"aaa", 3, 0, ids), 2);
    ck_assert(ids[0] == 4 && ids[1] == 0);
    ck_assert_int_eq(qkv_tokenizer_encode(t, (const uint8_t *)"aaaa", 4, 0, ids), 2);
    ck_assert(ids[0] == 4 && ids[1] == 4);
    /* vocab stops it early */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)text, 11, 5), 0);
    ck_assert_int_eq(t->n_merges, 1);
    free(t);
}
END_TEST

START_TEST(bpe_ties_go_to_the_smallest_pair) {
    qkv_tokenizer *t = tokenizer_new();
    /* (c, d) and (a, b) twice each, (c, d) first in the text: (a, b) is merged first */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"cdcdabab", 8, 6), 0);
    ck_assert(t->n_merges == 2 && t->merges[0][0] == 0 && t->merges[0][1] == 1);
    ck_assert(t->merges[1][0] == 2 && t->merges[1][1] == 3);
    /* same left token: the smaller right one */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"acacabab", 8, 4), 0);
    ck_assert(t->n_merges == 1 && t->merges[0][0] == 0 && t->merges[0][1] == 1);
    /* counts first: (c, a) three times beats (a, b) twice */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"ababcacaca", 10, 4), 0);
    ck_assert(t->n_merges == 1 && t->merges[0][0] == 2 && t->merges[0][1] == 0);
    /* a pair that occurs once is never merged */
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"abcdefg", 7, 100), 0);
    ck_assert_int_eq(t->n_merges, 0);
    free(t);
}
END_TEST

/* ---- the slow reference ---------------------------------------------------------------- */

enum { REF_VOCAB = 64 };

/* BPE the obvious way: recount every pair before each merge, then merge left to
 * right. Writes the merges and the final tokens; returns the token count. */
static size_t reference_bpe(const uint8_t *text, size_t n, int vocab, int n_bytes, const int16_t *byte_token,
                            int32_t (*merges)[2], int *n_merges, int32_t *seq) {
    static int count[REF_VOCAB][REF_VOCAB];
    int length[REF_VOCAB]; /* of each token, in bytes: no pair longer than the limit is merged */
    size_t len = n;
    for (size_t i = 0; i < n; i++) seq[i] = byte_token[text[i]];
    for (int k = 0; k < n_bytes; k++) length[k] = 1;
    *n_merges = 0;
    while (n_bytes + *n_merges < vocab) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i + 1 < len; i++) count[seq[i]][seq[i + 1]]++;
        int best_l = -1, best_r = -1, best = 1;
        for (int l = 0; l < REF_VOCAB; l++)
            for (int r = 0; r < REF_VOCAB; r++)
                if (count[l][r] > best && length[l] + length[r] <= QKV_TOKENIZER_MAX_TOKEN_BYTES)
                    best = count[l][r], best_l = l, best_r = r;
        if (best_l < 0) break;
        int32_t ab = n_bytes + *n_merges;
        length[ab] = length[best_l] + length[best_r];
        merges[*n_merges][0] = best_l;
        merges[(*n_merges)++][1] = best_r;
        size_t out = 0;
        for (size_t i = 0; i < len; i++) {
            if (i + 1 < len && seq[i] == best_l && seq[i + 1] == best_r) seq[out++] = ab, i++;
            else seq[out++] = seq[i];
        }
        len = out;
    }
    return len;
}

START_TEST(bpe_matches_the_slow_reference) {
    qkv_tokenizer *t = tokenizer_new();
    int32_t merges[REF_VOCAB][2], *seq = malloc(3000 * sizeof *seq), *ids = malloc(3000 * sizeof *ids);
    int cases = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        qkv_rng rng = qkv_rng_make(seed);
        size_t n = 1 + qkv_rng_below(&rng, 3000);
        uint32_t letters = 1 + qkv_rng_below(&rng, 6); /* few letters: long runs, many ties */
        uint8_t *text = random_bytes(n, letters, seed * 977);
        for (size_t i = 0; i < n; i++) text[i] = (uint8_t)(text[i] * 37 + 5); /* spread over the byte range */
        qkv_tokenizer_init_bytes(t, text, n);
        int vocab = t->n_bytes + (int)qkv_rng_below(&rng, (uint32_t)(REF_VOCAB - t->n_bytes + 1));
        int n_merges;
        int16_t byte_token[256];
        memcpy(byte_token, t->byte_token, sizeof byte_token);
        size_t len = reference_bpe(text, n, vocab, t->n_bytes, byte_token, merges, &n_merges, seq);
        ck_assert_int_eq(qkv_tokenizer_train_bpe(t, text, n, vocab), 0);
        ck_assert_msg(t->n_merges == n_merges, "seed %d: %d merges, the reference %d", (int)seed, t->n_merges,
                      n_merges);
        ck_assert_msg(memcmp(t->merges, merges, (size_t)n_merges * sizeof merges[0]) == 0, "seed %d: merges",
                      (int)seed);
        /* encoding the training text gives training's tokens */
        ck_assert_int_eq(qkv_tokenizer_encode(t, text, n, 0, ids), (long)len);
        ck_assert(memcmp(ids, seq, len * sizeof *seq) == 0);
        cases += n_merges > 5;
        free(text);
    }
    ck_assert_int_gt(cases, 30);
    free(seq);
    free(ids);
    free(t);
}
END_TEST

START_TEST(bpe_vocab_limits) {
    qkv_tokenizer *t = tokenizer_new();
    const uint8_t *text = (const uint8_t *)"abracadabra";
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, text, 11, 4), -1);
    expect_last_error("BPE vocab 4", "need 5 (the text's distinct bytes) to 1024");
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, text, 11, QKV_TOKENIZER_MAX_VOCAB + 1), -1);
    expect_last_error("BPE vocab 1025", "to 1024");
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, text, 11, 5), 0);
    ck_assert(t->kind == QKV_TOKENIZER_BPE && t->n_merges == 0);
    /* random bytes: the vocabulary fills up to exactly the maximum */
    uint8_t *bytes = random_bytes(40000, 256, 5);
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, bytes, 40000, QKV_TOKENIZER_MAX_VOCAB), 0);
    ck_assert_int_eq(t->n_bytes, 256);
    ck_assert_int_eq(qkv_tokenizer_vocab(t), QKV_TOKENIZER_MAX_VOCAB);
    assert_consistent(t);
    assert_round_trip(t, bytes, 40000, "random bytes at vocab 1024");
    free(bytes);
    free(t);
}
END_TEST

/* One byte repeated: merges would double a token's length forever; they stop at the limit. */
START_TEST(bpe_tokens_stay_within_the_length_limit) {
    qkv_tokenizer *t = tokenizer_new();
    size_t n = 100000;
    uint8_t *text = malloc(n);
    memset(text, 'z', n);
    text[n / 2] = 'y';
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, text, n, 200), 0);
    assert_consistent(t);
    size_t longest = 0, len;
    for (int id = 0; id < qkv_tokenizer_vocab(t); id++) {
        qkv_tokenizer_token_bytes(t, id, &len);
        if (len > longest) longest = len;
    }
    ck_assert_int_eq(longest, QKV_TOKENIZER_MAX_TOKEN_BYTES);
    assert_round_trip(t, text, n, "a run of one byte");
    free(text);
    free(t);
}
END_TEST

/* ---- the text form ---------------------------------------------------------------------- */

/* to_text fits, is printable, and parses back into the same table, byte for byte. */
static void assert_text_round_trip(const qkv_tokenizer *t, size_t expected_len) {
    char text[QKV_TOKENIZER_TEXT_MAX], again[QKV_TOKENIZER_TEXT_MAX];
    qkv_tokenizer_to_text(t, text);
    size_t len = strlen(text);
    ck_assert_int_lt(len, QKV_TOKENIZER_TEXT_MAX);
    if (expected_len) ck_assert_int_eq(len, expected_len);
    for (size_t i = 0; i < len; i++) ck_assert(text[i] >= ' ' && text[i] <= '~');
    qkv_tokenizer *back = tokenizer_new();
    ck_assert_msg(qkv_tokenizer_from_text(back, text) == 0, "%s", qkv_last_error());
    ck_assert(memcmp(back, t, sizeof *t) == 0);
    qkv_tokenizer_to_text(back, again);
    ck_assert_str_eq(again, text);
    free(back);
}

START_TEST(text_form_round_trips) {
    qkv_tokenizer *t = tokenizer_new();
    char text[QKV_TOKENIZER_TEXT_MAX];
    qkv_tokenizer_init_bytes(t, (const uint8_t *)"cab", 3);
    qkv_tokenizer_to_text(t, text);
    ck_assert_str_eq(text, "kind=bytes n_bytes=3 n_merges=0 alphabet=616263 merges=");
    assert_text_round_trip(t, 0);
    /* the example of tokenizer.h: (a, b), then (ab, c) */
    ck_assert_int_eq(qkv_tokenizer_from_text(t, "kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDAI"), 0);
    ck_assert(t->n_merges == 2 && t->merges[0][0] == 0 && t->merges[0][1] == 1);
    ck_assert(t->merges[1][0] == 3 && t->merges[1][1] == 2);
    assert_text_round_trip(t, 0);
    sample_text s[N_SAMPLES];
    make_samples(s);
    for (int i = 0; i < N_SAMPLES; i++) {
        qkv_tokenizer_init_bytes(t, s[i].bytes, s[i].n);
        assert_text_round_trip(t, 0);
        ck_assert_int_eq(qkv_tokenizer_train_bpe(t, s[i].bytes, s[i].n, t->n_bytes + 50), 0);
        assert_text_round_trip(t, 0);
    }
    free_samples(s);
    /* vocab 1024 with all 256 bytes: 3123 characters */
    uint8_t *bytes = random_bytes(40000, 256, 5);
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, bytes, 40000, QKV_TOKENIZER_MAX_VOCAB), 0);
    ck_assert_int_eq(qkv_tokenizer_vocab(t), QKV_TOKENIZER_MAX_VOCAB);
    assert_text_round_trip(t, 3123);
    free(bytes);
    free(t);
}
END_TEST

/* The longest text: one byte and 1023 merges (the most ids), 3462 characters. */
START_TEST(text_form_fits_the_longest_tokenizer) {
    qkv_tokenizer *t = tokenizer_new();
    ck_assert_int_eq(qkv_tokenizer_set_alphabet(t, QKV_TOKENIZER_BPE, (const uint8_t *)"\xff", 1), 0);
    for (int32_t k = 0; qkv_tokenizer_vocab(t) < QKV_TOKENIZER_MAX_VOCAB; k++) /* pairs in shells max(l, r) = k */
        for (int32_t j = 0; j <= k && qkv_tokenizer_vocab(t) < QKV_TOKENIZER_MAX_VOCAB; j++) {
            int vocab = qkv_tokenizer_vocab(t);
            if (qkv_tokenizer_add_merge(t, k, j)) ck_assert_int_eq(qkv_tokenizer_vocab(t), vocab); /* too long */
            if (j < k && qkv_tokenizer_vocab(t) < QKV_TOKENIZER_MAX_VOCAB) qkv_tokenizer_add_merge(t, j, k);
        }
    ck_assert_int_eq(t->n_merges, QKV_TOKENIZER_MAX_VOCAB - 1);
    assert_consistent(t);
    assert_text_round_trip(t, 3462);
    free(t);
}
END_TEST

START_TEST(add_merge_refuses_inconsistent_merges) {
    qkv_tokenizer *t = tokenizer_new();
    ck_assert_int_eq(qkv_tokenizer_set_alphabet(t, QKV_TOKENIZER_BPE, (const uint8_t *)"ba", 2), -1);
    expect_last_error("tokenizer", "alphabet byte 1 (0x61) does not follow 0x62");
    ck_assert_int_eq(qkv_tokenizer_set_alphabet(t, QKV_TOKENIZER_BPE, (const uint8_t *)"aa", 2), -1);
    ck_assert_int_eq(qkv_tokenizer_set_alphabet(t, QKV_TOKENIZER_BPE, (const uint8_t *)"", 0), -1);
    expect_last_error("tokenizer", "alphabet of 0 bytes");
    ck_assert_int_eq(qkv_tokenizer_set_alphabet(t, QKV_TOKENIZER_BPE, (const uint8_t *)"a", 1), 0);
    ck_assert_int_eq(qkv_tokenizer_add_merge(t, 0, 1), -1);
    expect_last_error("tokenizer: merge 0 (0, 1)", "not defined yet (1 so far)");
    ck_assert_int_eq(qkv_tokenizer_add_merge(t, -1, 0), -1);
    for (int32_t k = 0; k < 7; k++) ck_assert_int_eq(qkv_tokenizer_add_merge(t, k, k), 0); /* 2, 4, ..., 128 bytes */
    ck_assert_int_eq(qkv_tokenizer_add_merge(t, 7, 7), -1);
    expect_last_error("tokenizer: merge 7", "a token of 256 bytes (the limit is 128)");
    ck_assert_int_eq(qkv_tokenizer_add_merge(t, 3, 3), -1);
    expect_last_error("tokenizer: merge 7 (3, 3)", "repeats merge 3");
    ck_assert_int_eq(t->n_merges, 7);
    assert_consistent(t);
    free(t);
}
END_TEST

START_TEST(text_form_refuses_bad_texts) {
    static const struct {
        const char *text, *reason;
    } cases[] = {
        {"", "expected \"kind=\" at offset 0"},
        {"kind=bpx n_bytes=1 n_merges=0 alphabet=61 merges=", "unknown kind"},
        {"kind=bytes n_bytes=0 n_merges=0 alphabet= merges=", "n_bytes=0 is outside [1, 256]"},
        {"kind=bytes n_bytes=257 n_merges=0 alphabet= merges=", "n_bytes=257 is outside"},
        {"kind=bytes n_bytes=01 n_merges=0 alphabet=61 merges=", "not a plain decimal number"},
        {"kind=bytes n_bytes=+1 n_merges=0 alphabet=61 merges=", "not a plain decimal number"},
        {"kind=bytes n_bytes=99999 n_merges=0 alphabet=61 merges=", "not a plain decimal number"},
        {"kind=bytes n_bytes=1 n_merges=1 alphabet=61 merges=AAAA", "kind=bytes with n_merges=1"},
        {"kind=bpe n_bytes=256 n_merges=769 alphabet=00 merges=", "n_merges=769 is outside [0, 768]"},
        {"kind=bytes  n_bytes=1 n_merges=0 alphabet=61 merges=", "expected \" n_bytes=\" at offset 10"},
        {"kind=bytes n_bytes=1 n_merges=0 alphabet=61", "expected \" merges=\""},
        {"kind=bytes n_bytes=1 n_merges=0 alphabet=61 merges= ", "merges have 1 base-64 digits"},
        {"kind=bytes n_bytes=2 n_merges=0 alphabet=6261 merges=", "does not follow 0x62"},
        {"kind=bytes n_bytes=2 n_merges=0 alphabet=6161 merges=", "does not follow 0x61"},
        {"kind=bytes n_bytes=1 n_merges=0 alphabet=6A merges=", "not a lowercase hex digit"},
        {"kind=bytes n_bytes=2 n_merges=0 alphabet=616 merges=", "alphabet has 3 hex digits; n_bytes=2 needs 4"},
        {"kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDA", "6 base-64 digits; n_merges=2 needs 7"},
        {"kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDAJ", "padding bits that are not zero"},
        {"kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDA=", "not a base-64 digit"},
        {"kind=bpe n_bytes=3 n_merges=1 alphabet=616263 merges=AMAA", "merge 0 (3, 0) refers to a token not defined"},
        {"kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQAAE", "merge 1 (0, 1) repeats merge 0"},
        {"kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDAI\t", "not printable ASCII"},
        {"kind=bpe n_bytes=3 n_merges=2 alphabet=616263 merges=AAAQDAI\xc3\xa9", "character 0xc3 at offset 60"},
    };
    qkv_tokenizer *t = tokenizer_new();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memset(t, 0x5a, sizeof *t);
        ck_assert_msg(qkv_tokenizer_from_text(t, cases[k].text) == -1, "accepted \"%s\"", cases[k].text);
        expect_last_error("tokenizer: ", cases[k].reason);
        ck_assert(t->n_bytes == 0 && t->n_merges == 0 && t->byte_token[0] == 0); /* zeroed */
    }
    char *long_text = malloc(QKV_TOKENIZER_TEXT_MAX + 1);
    memset(long_text, 'A', QKV_TOKENIZER_TEXT_MAX);
    long_text[QKV_TOKENIZER_TEXT_MAX] = '\0';
    ck_assert_int_eq(qkv_tokenizer_from_text(t, long_text), -1);
    expect_last_error("tokenizer: ", "longer than 4095 characters");
    free(long_text);
    free(t);
}
END_TEST

/* Mutations of valid texts: never a crash, and an accepted text is exactly what
 * to_text writes for what it parsed into (so nothing inconsistent slips through). */
START_TEST(text_form_survives_mutations) {
    enum { MUTATIONS = 20000 };
    qkv_tokenizer *t = tokenizer_new(), *parsed = tokenizer_new();
    char valid[3][QKV_TOKENIZER_TEXT_MAX], text[QKV_TOKENIZER_TEXT_MAX], again[QKV_TOKENIZER_TEXT_MAX];
    uint8_t *words = wordy_text(4000, 3);
    qkv_tokenizer_init_bytes(t, words, 4000);
    qkv_tokenizer_to_text(t, valid[0]);
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, words, 4000, t->n_bytes + 60), 0);
    qkv_tokenizer_to_text(t, valid[1]);
    ck_assert_int_eq(qkv_tokenizer_train_bpe(t, (const uint8_t *)"aaabdaaabac", 11, 20), 0);
    qkv_tokenizer_to_text(t, valid[2]);
    qkv_rng rng = qkv_rng_make(99);
    int accepted = 0;
    for (int k = 0; k < MUTATIONS; k++) {
        const char *source = valid[k % 3];
        size_t len = strlen(source);
        memcpy(text, source, len + 1);
        int flips = 1 + (int)qkv_rng_below(&rng, 3);
        for (int f = 0; f < flips; f++) {
            size_t at = qkv_rng_below(&rng, (uint32_t)len);
            text[at] = qkv_rng_below(&rng, 4) ? (char)(' ' + qkv_rng_below(&rng, 95)) : (char)(1 + qkv_rng_below(&rng, 255));
        }
        if (qkv_rng_below(&rng, 8) == 0) text[qkv_rng_below(&rng, (uint32_t)len)] = '\0';
        if (qkv_tokenizer_from_text(parsed, text) != 0) {
            ck_assert(strchr(qkv_last_error(), '\n') == NULL);
            continue;
        }
        accepted++;
        assert_consistent(parsed);
        qkv_tokenizer_to_text(parsed, again);
        ck_assert_str_eq(again, text);
    }
    /* Both outcomes happen: the loop reaches past the first check. */
    ck_assert_int_gt(accepted, MUTATIONS / 200);
    ck_assert_int_lt(accepted, MUTATIONS / 2);
    free(words);
    free(parsed);
    free(t);
}
END_TEST

Suite *suite_tokenizer(void) {
    Suite *s = suite_create("tokenizer");
    TCase *tokens = tcase_create("tokens");
    tcase_add_test(tokens, bytes_tokens_round_trip);
    tcase_add_test(tokens, alphabet_is_the_distinct_bytes_in_order);
    tcase_add_test(tokens, unknown_bytes_are_skipped_or_named);
    tcase_add_test(tokens, decode_reports_the_length_it_needs);
    tcase_add_test(tokens, bpe_tokens_round_trip);
    tcase_add_test(tokens, bpe_learns_the_known_merges);
    tcase_add_test(tokens, bpe_ties_go_to_the_smallest_pair);
    tcase_add_test(tokens, bpe_matches_the_slow_reference);
    tcase_add_test(tokens, bpe_vocab_limits);
    tcase_add_test(tokens, bpe_tokens_stay_within_the_length_limit);
    suite_add_tcase(s, tokens);
    TCase *text_form = tcase_create("text form");
    tcase_add_test(text_form, text_form_round_trips);
    tcase_add_test(text_form, text_form_fits_the_longest_tokenizer);
    tcase_add_test(text_form, add_merge_refuses_inconsistent_merges);
    tcase_add_test(text_form, text_form_refuses_bad_texts);
    tcase_add_test(text_form, text_form_survives_mutations);
    suite_add_tcase(s, text_form);
    return s;
}
