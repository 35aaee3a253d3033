/* test_json.c — the strict JSON reader and writer (core/io/json.c): tokens and their
 * links, string escapes and decoding, integers, what strict JSON refuses, the
 * depth limit without recursion, the writer's escapes round-tripping through the
 * reader, and UTF-8 validation. Runs as the "json" case of the safetensors suite
 * (tcase_json). */
#include <stdint.h>
#include <stdlib.h>

#include "core/io/json.h"
#include "tests/test_util.h"

static int parse_json(qkv_json *doc, const char *text, int depth) {
    return qkv_json_parse(doc, (const unsigned char *)text, strlen(text), depth);
}

START_TEST(test_json_tokens) {
    qkv_json doc;
    const char *text = " {\"a\": [1, -2.5e3, true, false, null], \"b\": {\"c\": \"d\"}, \"e\": []} ";
    ck_assert_msg(parse_json(&doc, text, 3) == 0, "%s", doc.error);
    static const int types[] = {QKV_JSON_OBJECT, QKV_JSON_STRING, QKV_JSON_ARRAY, QKV_JSON_NUMBER, QKV_JSON_NUMBER,
                                QKV_JSON_TRUE, QKV_JSON_FALSE, QKV_JSON_NULL, QKV_JSON_STRING, QKV_JSON_OBJECT,
                                QKV_JSON_STRING, QKV_JSON_STRING, QKV_JSON_STRING, QKV_JSON_ARRAY};
    ck_assert_int_eq(doc.n_tokens, 14);
    for (int i = 0; i < 14; i++) ck_assert_msg(doc.tokens[i].type == types[i], "token %d", i);
    ck_assert_int_eq(doc.tokens[0].count, 3);
    ck_assert_int_eq(doc.tokens[2].count, 5);
    ck_assert_int_eq(doc.tokens[2].next, 8);
    ck_assert_int_eq(doc.tokens[9].count, 1);
    ck_assert_int_eq(doc.tokens[9].next, 12);
    ck_assert_int_eq(doc.tokens[13].count, 0);
    ck_assert_int_eq(doc.tokens[0].next, 14);
    /* walking the root's keys with next */
    static const char *keys[] = {"a", "b", "e"};
    uint32_t key = 1;
    for (int k = 0; k < 3; k++, key = doc.tokens[key + 1].next) ck_assert(qkv_json_equals(&doc, key, keys[k]));
    ck_assert_int_eq(doc.tokens[4].len, 6); /* "-2.5e3" */
    ck_assert(strncmp((const char *)doc.text + doc.tokens[4].start, "-2.5e3", 6) == 0);
    qkv_json_free(&doc);
    qkv_json_free(&doc); /* twice is harmless */
}
END_TEST

START_TEST(test_json_strings) {
    qkv_json doc;
    const char *text = "[\"plain\", \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", "
                       "\"\\u00e9\\u6ce8\\ud83d\\ude42\", \"\xc3\xa9\"]";
    ck_assert_msg(parse_json(&doc, text, 1) == 0, "%s", doc.error);
    char out[64];
    ck_assert_int_eq(qkv_json_decode(&doc, 1, out, sizeof out), 5);
    ck_assert_str_eq(out, "plain");
    ck_assert_int_eq(qkv_json_decode(&doc, 2, out, sizeof out), 12);
    ck_assert_str_eq(out, "a\"b\\c/d\b\f\n\r\t");
    ck_assert(qkv_json_equals(&doc, 2, "a\"b\\c/d\b\f\n\r\t"));
    ck_assert(!qkv_json_equals(&doc, 2, "a\"b\\c/d\b\f\n\r"));
    ck_assert(!qkv_json_equals(&doc, 2, "a\"b\\c/d\b\f\n\r\t!"));
    ck_assert_int_eq(qkv_json_decode(&doc, 3, out, sizeof out), 9);
    ck_assert_str_eq(out, "\xc3\xa9\xe6\xb3\xa8\xf0\x9f\x99\x82");
    ck_assert(qkv_json_equals(&doc, 3, "\xc3\xa9\xe6\xb3\xa8\xf0\x9f\x99\x82"));
    ck_assert(qkv_json_equals(&doc, 4, "\xc3\xa9"));
    ck_assert(!qkv_json_equals(&doc, 0, "anything")); /* not a string */
    /* a cut decode never splits a character and reports the full length */
    ck_assert_int_eq(qkv_json_decode(&doc, 3, out, 6), 9);
    ck_assert_str_eq(out, "\xc3\xa9\xe6\xb3\xa8");
    ck_assert_int_eq(qkv_json_decode(&doc, 3, out, 5), 9);
    ck_assert_str_eq(out, "\xc3\xa9");
    ck_assert_int_eq(qkv_json_decode(&doc, 3, out, 2), 9);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(qkv_json_decode(&doc, 1, out, 3), 5);
    ck_assert_str_eq(out, "pl");
    qkv_json_free(&doc);
}
END_TEST

START_TEST(test_json_numbers) {
    qkv_json doc;
    ck_assert(parse_json(&doc, "[0, 18446744073709551615, 18446744073709551616, -1, 1.0, 1e2, -0, \"7\"]", 1) == 0);
    uint64_t v = 1;
    ck_assert(qkv_json_uint(&doc, 1, &v) == QKV_JSON_UINT_OK && v == 0);
    ck_assert(qkv_json_uint(&doc, 2, &v) == QKV_JSON_UINT_OK && v == UINT64_MAX);
    ck_assert(qkv_json_uint(&doc, 3, &v) == QKV_JSON_UINT_TOO_LARGE);
    for (uint32_t i = 4; i <= 8; i++) ck_assert_msg(qkv_json_uint(&doc, i, &v) == QKV_JSON_NOT_UINT, "token %u", i);
    qkv_json_free(&doc);
}
END_TEST

START_TEST(test_json_rejects) {
    static const char *bad[] = {"", " ", "[1,]", "[1 2]", "{\"a\"}", "{\"a\":}", "{1:2}", "01", "1.", ".5", "+1",
                                "--1", "1e+", "0x10", "\"\\x\"", "[\"\t\"]", "tru", "nul", "True", "[", "]", "{}}",
                                "\"\xe0\x80\xaf\"", "\"\\uD800\"", "[] []", "\"abc", "\"\\", "\"\\u12\"", "Infinity"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        qkv_json doc;
        ck_assert_msg(parse_json(&doc, bad[k], 8) == -1, "accepted: %s", bad[k]);
        ck_assert_msg(doc.error[0] != '\0' && strchr(doc.error, '\n') == NULL, "message for %s", bad[k]);
        ck_assert(doc.tokens == NULL);
    }
    static const char *good[] = {"0", "-0", "1.5E+3", "\"\"", "[]", "{}", " null ", "[[],{}]", "\"\x7f\""};
    for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
        qkv_json doc;
        ck_assert_msg(parse_json(&doc, good[k], 8) == 0, "%s: %s", good[k], doc.error);
        qkv_json_free(&doc);
    }
}
END_TEST

/* The depth limit holds without recursion, however deep the text. */
START_TEST(test_json_depth) {
    qkv_json doc;
    ck_assert(parse_json(&doc, "[[{\"a\":[]}]]", 4) == 0);
    qkv_json_free(&doc);
    ck_assert(parse_json(&doc, "[[{\"a\":[]}]]", 3) == -1);
    ck_assert(strstr(doc.error, "nesting deeper than 3 at offset 7") != NULL);
    size_t n = 1 << 20;
    char *deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    ck_assert(parse_json(&doc, deep, QKV_JSON_MAX_DEPTH) == -1);
    ck_assert(strstr(doc.error, "nesting deeper than 64") != NULL);
    deep[QKV_JSON_MAX_DEPTH] = '\0';
    memset(deep, '[', QKV_JSON_MAX_DEPTH / 2);
    memset(deep + QKV_JSON_MAX_DEPTH / 2, ']', QKV_JSON_MAX_DEPTH / 2);
    ck_assert_msg(parse_json(&doc, deep, QKV_JSON_MAX_DEPTH / 2) == 0, "%s", doc.error);
    qkv_json_free(&doc);
    free(deep);
}
END_TEST

/* The writer's escapes, and every byte 1..127 plus multibyte characters through
 * the writer and back through the reader. */
START_TEST(test_json_writer) {
    qkv_json_out out = {0};
    qkv_json_out_string(&out, "a\"b\\c\n\x01\x1f\t\x7f\xc3\xa9");
    qkv_json_out_text(&out, ",");
    qkv_json_out_uint(&out, UINT64_MAX);
    ck_assert(!out.failed);
    ck_assert_str_eq(out.data, "\"a\\\"b\\\\c\\n\\u0001\\u001f\\t\x7f\xc3\xa9\",18446744073709551615");
    qkv_json_out_free(&out);

    char all[128 + 16];
    for (int c = 1; c < 128; c++) all[c - 1] = (char)c;
    strcpy(all + 127, "\xc3\xa9\xe6\xb3\xa8\xf0\x9f\x99\x82");
    qkv_json_out_string(&out, all);
    qkv_json doc;
    ck_assert_msg(qkv_json_parse(&doc, (const unsigned char *)out.data, out.len, 1) == 0, "%s", doc.error);
    char back[sizeof all];
    ck_assert_int_eq(qkv_json_decode(&doc, 0, back, sizeof back), strlen(all));
    ck_assert_str_eq(back, all);
    ck_assert(qkv_json_equals(&doc, 0, all));
    qkv_json_free(&doc);
    qkv_json_out_free(&out);
}
END_TEST

START_TEST(test_utf8_valid) {
    static const char *valid[] = {"", "abc", "\xc3\xa9", "\xe6\xb3\xa8", "\xf0\x9f\x99\x82", "\xef\xbf\xbf",
                                  "\xf4\x8f\xbf\xbf"};
    static const char *invalid[] = {"\x80", "\xc3", "\xc0\x80", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xa0\x80",
                                    "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xe6\xb3"};
    for (size_t k = 0; k < sizeof valid / sizeof valid[0]; k++) ck_assert(qkv_utf8_valid(valid[k], strlen(valid[k])));
    for (size_t k = 0; k < sizeof invalid / sizeof invalid[0]; k++)
        ck_assert_msg(!qkv_utf8_valid(invalid[k], strlen(invalid[k])), "invalid case %zu accepted", k);
}
END_TEST

TCase *tcase_json(void) {
    TCase *json = tcase_create("json");
    tcase_add_test(json, test_json_tokens);
    tcase_add_test(json, test_json_strings);
    tcase_add_test(json, test_json_numbers);
    tcase_add_test(json, test_json_rejects);
    tcase_add_test(json, test_json_depth);
    tcase_add_test(json, test_json_writer);
    tcase_add_test(json, test_utf8_valid);
    return json;
}
