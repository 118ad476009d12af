/* test_json_str.c -- the one JSON string decoder (json_str.c) and the
 * former owners of a decoder of their own (kobj fields, watch events,
 * json_tok copies) giving the same answer through it. Go's encoding/json
 * (kube-apiserver, client-go) is the reference: a lone surrogate decodes
 * to U+FFFD. The Lua decoder's side is in spec/json_spec.lua. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_str.h"
#include "json_tok.h"
#include "kin.h"
#include "kobj.h"
#include "watch_decoder.h"

#define FFFD "\xEF\xBF\xBD"

/* Decodes the string body in (a C literal, as it stands between the JSON
 * quotes) and checks the result is want[0..want_len). */
static void check_len(const char *in, const char *want, size_t want_len) {
  size_t n = strlen(in), len = 12345;
  char *dst = malloc(n ? n : 1);
  assert_non_null(dst);
  int rc = kin__json_unescape(in, n, dst, &len);
  if (rc != 0) fail_msg("%s: rc %d at %zu", in, rc, len);
  assert_int_equal(len, want_len);
  assert_memory_equal(dst, want, want_len);
  free(dst);
  /* the copying form agrees and terminates */
  char *o = NULL;
  size_t l2 = 0;
  assert_int_equal(kin__json_unescape_dup(in, n, &o, &l2), 0);
  assert_int_equal(l2, want_len);
  assert_memory_equal(o, want, want_len);
  assert_int_equal(o[l2], 0);
  free(o);
}

#define CHECK(in, want) check_len(in, want, sizeof(want) - 1)

/* in is rejected with KIN_EINVAL, naming the backslash at offset at. */
static void check_bad(const char *in, size_t at) {
  size_t n = strlen(in), len = 12345;
  char *dst = malloc(n);
  assert_non_null(dst);
  assert_int_equal(kin__json_unescape(in, n, dst, &len), KIN_EINVAL);
  assert_int_equal(len, at);
  free(dst);
  char *o = (char *)1;
  assert_int_equal(kin__json_unescape_dup(in, n, &o, NULL), KIN_EINVAL);
  assert_null(o);
}

static void test_json_str_plain(void **st) {
  (void)st;
  CHECK("", "");
  CHECK("plain", "plain");
  CHECK("h\xC3\xA9llo \xF0\x9F\x98\x80", "h\xC3\xA9llo \xF0\x9F\x98\x80"); /* raw UTF-8 */
  /* invalid raw UTF-8 passes unchanged, as json_check.c lets it through */
  CHECK("a\xFF\xC3z", "a\xFF\xC3z");
  /* a long run without escapes around one escape (the memchr fast path) */
  char in[300], want[300];
  memset(in, 'x', 299);
  in[299] = 0;
  memcpy(in + 150, "\\n", 2);
  memset(want, 'x', 298);
  want[150] = '\n';
  check_len(in, want, 298);
}

static void test_json_str_every_escape(void **st) {
  (void)st;
  CHECK("\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t");
  CHECK("a\\nb\\tc", "a\nb\tc");
  CHECK("\\u0041\\u00e9\\u00E9\\u20AC\\uFFFF", "A\xC3\xA9\xC3\xA9\xE2\x82\xAC\xEF\xBF\xBF");
  CHECK("\\u007f\\u0080\\u07ff\\u0800", "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80");
  CHECK("\\u003chtml\\u003e \\u0026", "<html> &"); /* Go's HTML-safe escapes */
}

static void test_json_str_surrogate_pairs(void **st) {
  (void)st;
  CHECK("\\ud83d\\ude00", "\xF0\x9F\x98\x80");         /* U+1F600 */
  CHECK("\\uD800\\uDC00", "\xF0\x90\x80\x80");         /* U+10000 */
  CHECK("\\uDBFF\\uDFFF", "\xF4\x8F\xBF\xBF");         /* U+10FFFF */
  CHECK("a\\ud83d\\ude00b\\ud83d\\ude00", "a\xF0\x9F\x98\x80" "b\xF0\x9F\x98\x80");
}

static void test_json_str_lone_surrogates(void **st) {
  (void)st;
  CHECK("\\ud800", FFFD);                          /* high at the end */
  CHECK("\\udc00", FFFD);                          /* low alone */
  CHECK("\\udfffx", FFFD "x");
  CHECK("a\\ud800b", "a" FFFD "b");                /* high then a raw char */
  CHECK("\\ud800\\n", FFFD "\n");                  /* high then another escape */
  CHECK("\\ud800\\u0041", FFFD "A");               /* high then a non-surrogate \u */
  CHECK("\\ud800\\ud800", FFFD FFFD);              /* two highs */
  CHECK("\\ud800\\ud83d\\ude00", FFFD "\xF0\x9F\x98\x80"); /* high, then a pair */
  CHECK("\\udc00\\ud800", FFFD FFFD);              /* low then high: no pair */
}

static void test_json_str_truncated_and_invalid(void **st) {
  (void)st;
  check_bad("\\u", 0);
  check_bad("\\u12", 0);
  check_bad("ab\\u123", 2);
  check_bad("\\u12G4", 0);
  check_bad("x\\u-123", 1);
  check_bad("\\u 123", 0);
  check_bad("\\ud800\\u12", 6);   /* a high surrogate, then a truncated \u */
  check_bad("\\ud800\\uZZZZ", 6); /* ... then invalid hex: no pair, then error */
  check_bad("\\x41", 0);          /* unknown escape */
  check_bad("ok\\'", 2);
  check_bad("\\U0041", 0);        /* \U is not JSON */
  check_bad("end\\", 3);          /* trailing backslash */
}

/* Where kin__json_str_end stops for the string at offset 0 of in, and
 * whether it says the body is escaped. */
static void check_end(const char *in, int want_rc, size_t want_p, int want_esc) {
  size_t p = 0;
  int esc = -1;
  int rc = kin__json_str_end(in, strlen(in), &p, &esc);
  if (rc != want_rc || p != want_p)
    fail_msg("%s: rc %d at %zu, want %d at %zu", in, rc, p, want_rc, want_p);
  assert_int_equal(esc, want_esc);
}

/* The one rule for a string's end (json_check.c, watch_decoder.c and
 * ljson.c use it): the offset after the quote, or the offending byte. */
static void test_json_str_end(void **st) {
  (void)st;
  check_end("\"\"", 0, 2, 0);
  check_end("\"abc\" , 1", 0, 5, 0);
  check_end("\"a\\\"b\"x", 0, 6, 1);          /* "a\"b" */
  check_end("\"\\u00e9\\/\\n\"", 0, 12, 1);
  check_end("\"abc", KIN_EINVAL, 4, 0);       /* unterminated: n */
  check_end("\"a\nb\"", KIN_EINVAL, 2, 0);    /* a raw control character */
  check_end("\"ab\\x\"", KIN_EINVAL, 3, 1);   /* unknown escape: its backslash */
  check_end("\"\\u12G4\"", KIN_EINVAL, 1, 1); /* bad \u */
  check_end("\"\\u12", KIN_EINVAL, 1, 1);     /* truncated \u */
  check_end("\"ab\\", KIN_EINVAL, 3, 1);      /* a backslash at the end */
  /* a string that is not at offset 0 */
  const char *doc = "{\"k\":\"v\\\"\"}";
  size_t p = 5;
  assert_int_equal(kin__json_str_end(doc, strlen(doc), &p, NULL), 0);
  assert_int_equal(p, 10);
}

/* kin__json_str_skip (watch_decoder.c's skip of an event's object) agrees
 * with kin__json_str_end on valid strings; it only needs the quote. */
static void test_json_str_skip(void **st) {
  (void)st;
  static const char *const valid[] = {"\"\"", "\"abc\" x", "\"a\\\"b\"", "\"a\\\\\"x\"",
                                      "\"a\\\\\\\"b\"", "\"\\u00e9\\/\\n\"", "\"\\\\\\\\\""};
  for (size_t k = 0; k < sizeof(valid) / sizeof(valid[0]); k++) {
    const char *s = valid[k];
    size_t p = 0;
    assert_int_equal(kin__json_str_end(s, strlen(s), &p, NULL), 0);
    if (kin__json_str_skip(s, strlen(s), 0) != p)
      fail_msg("%s: skip %zu, end %zu", s, kin__json_str_skip(s, strlen(s), 0), p);
  }
  assert_int_equal(kin__json_str_skip("\"abc", 4, 0), 0);     /* unterminated */
  assert_int_equal(kin__json_str_skip("\"ab\\\"", 5, 0), 0);  /* only an escaped quote */
  assert_int_equal(kin__json_str_skip("x\"a\"", 4, 1), 4);     /* from offset 1 */
}

/* \u0000 decodes to a 0 byte counted in the length (Go does the same);
 * C-string callers see the value end there. */
static void test_json_str_embedded_nul(void **st) {
  (void)st;
  check_len("a\\u0000b", "a\0b", 3);
  check_len("\\u0000", "\0", 1);
  char *o;
  size_t l;
  assert_int_equal(kin__json_unescape_dup("a\\u0000b", 8, &o, &l), 0);
  assert_int_equal(l, 3);
  assert_string_equal(o, "a");
  free(o);
}

/* 1 when s[0..n) is valid UTF-8 (no surrogate code points, no overlong
 * forms, at most U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], k, cp;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; }
    else return 0;
    if (i + k >= n) return 0; /* truncated sequence */
    for (unsigned j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (s[i + j] & 0x3F);
    }
    if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    i += k + 1;
  }
  return 1;
}

/* Random bodies made of escape fragments: the output never exceeds the
 * input (dst is exactly n bytes, so ASan sees any overrun), and whatever
 * surrogates are combined, a successful decode of ASCII input is valid
 * UTF-8 (no surrogate's own 3 bytes). */
static void test_json_str_random_fragments(void **st) {
  (void)st;
  static const char *frag[] = {"\\ud800", "\\udbff", "\\udc00", "\\udfff", "\\ud83d", "\\ude00",
                               "\\u0041", "\\u00e9", "\\u20ac", "\\u0000", "\\n", "\\\"",
                               "\\\\", "\\/", "a", "xyz", "\\u12", "\\uZZZZ", "\\q", "\\",
                               "\\u", "0", "d", "plain text run longer than eight"};
  const size_t nfrag = sizeof(frag) / sizeof(frag[0]);
  /* the checker itself: a surrogate's own 3 bytes (what json_tok and the
   * watch decoder used to write) are not UTF-8 */
  assert_false(utf8_valid((const unsigned char *)"\xED\xA0\x80", 3));
  assert_false(utf8_valid((const unsigned char *)"\xF0\x9F\x98", 3));
  assert_true(utf8_valid((const unsigned char *)"a\xF0\x9F\x98\x80" FFFD, 8));
  unsigned seed = 12345;
  for (int iter = 0; iter < 20000; iter++) {
    char in[256];
    size_t n = 0;
    int parts = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 8;
    for (int p = 0; p < parts; p++) {
      const char *f = frag[((seed = seed * 1103515245u + 12345u) >> 16) % nfrag];
      size_t l = strlen(f);
      memcpy(in + n, f, l);
      n += l;
    }
    char *dst = malloc(n ? n : 1);
    assert_non_null(dst);
    size_t len = 0;
    int rc = kin__json_unescape(in, n, dst, &len);
    if (rc == 0) {
      assert_true(len <= n);
      if (!utf8_valid((unsigned char *)dst, len))
        fail_msg("invalid UTF-8 from %.*s", (int)n, in);
    } else {
      assert_int_equal(rc, KIN_EINVAL);
      assert_true(len < n);
      assert_int_equal(in[len], '\\');
    }
    free(dst);
  }
}

/* ---- the former owners agree ------------------------------------------- */

static void test_json_str_kobj_field(void **st) {
  (void)st;
  const char *js = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
                   "\"name\":\"a\\ud800b\",\"namespace\":\"n\\udc00\","
                   "\"labels\":{\"k\":\"v\\ud83d\\ude00\\ud83d\"}}}";
  kin_obj *o;
  assert_int_equal(kin_obj_parse(js, strlen(js), &o), 0);
  assert_string_equal(kin_obj_name(o), "a" FFFD "b");
  assert_string_equal(kin_obj_namespace(o), "n" FFFD);
  assert_string_equal(kin_obj_label(o, "k"), "v\xF0\x9F\x98\x80" FFFD);
  kin_obj_unref(o);
}

typedef struct {
  int n;
  char message[64];
  char reason[64];
} ev_rec;

static int on_ev(void *ud, const kin_watch_event *ev) {
  ev_rec *r = ud;
  r->n++;
  assert_int_equal(ev->type, KIN_WATCH_ERROR);
  snprintf(r->message, sizeof r->message, "%s", ev->message);
  snprintf(r->reason, sizeof r->reason, "%s", ev->reason);
  return 0;
}

static void test_json_str_watch_decoder_event(void **st) {
  (void)st;
  const char *ev = "{\"type\":\"ERR\\u004fR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                   "\"metadata\":{},\"status\":\"Failure\",\"message\":\"m\\ud800\\u0041\","
                   "\"reason\":\"\\udc00\\ud83d\\ude00\",\"code\":500}}\n";
  ev_rec r = {0};
  kin_watch_decoder *d;
  assert_int_equal(kin_watch_decoder_new(on_ev, NULL, &r, &d), 0);
  assert_int_equal(kin_watch_decoder_feed(d, ev, strlen(ev)), 0);
  kin_watch_decoder_free(d);
  assert_int_equal(r.n, 1);
  /* before: the watch decoder wrote the surrogate's own 3 bytes (ED A0 80) */
  assert_string_equal(r.message, "m" FFFD "A");
  assert_string_equal(r.reason, FFFD "\xF0\x9F\x98\x80");
}

static void test_json_str_json_tok(void **st) {
  (void)st;
  const char *js = "{\"reason\":\"x\\ud800\",\"message\":\"\\udbff\\udfff\\udfff\"}";
  kin__json j;
  assert_int_equal(kin__json_parse(&j, js, strlen(js)), 0);
  /* before: json_tok wrote the surrogate's own 3 bytes (ED A0 80) */
  char *s = kin__json_strdup(&j, kin__json_get(&j, 0, "reason"));
  assert_string_equal(s, "x" FFFD);
  free(s);
  s = kin__json_strdup(&j, kin__json_get(&j, 0, "message"));
  assert_string_equal(s, "\xF4\x8F\xBF\xBF" FFFD);
  free(s);
  kin__json_free(&j);
}

KIN_SUITE(json_str,
          cmocka_unit_test(test_json_str_plain),
          cmocka_unit_test(test_json_str_every_escape),
          cmocka_unit_test(test_json_str_surrogate_pairs),
          cmocka_unit_test(test_json_str_lone_surrogates),
          cmocka_unit_test(test_json_str_truncated_and_invalid),
          cmocka_unit_test(test_json_str_end),
          cmocka_unit_test(test_json_str_skip),
          cmocka_unit_test(test_json_str_embedded_nul),
          cmocka_unit_test(test_json_str_random_fragments),
          cmocka_unit_test(test_json_str_kobj_field),
          cmocka_unit_test(test_json_str_watch_decoder_event),
          cmocka_unit_test(test_json_str_json_tok))
