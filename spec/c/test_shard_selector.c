/* test_shard_selector.c -- shard selectors (KEP-5866): the cases of
 * k8s.io/apiserver pkg/sharding parser_test.go (v0.36) with the server's
 * messages, its round trips, and FNV-1a against Go's hash/fnv values. */
#include "kin_test.h"

#include <stdio.h>
#include <string.h>

#include "kin.h"
#include "shard_selector.h"

#define UID "object.metadata.uid"
#define R(a, b) "shardRange(" UID ", '" a "', '" b "')"

/* Parses s, expecting success; returns the selector. */
static kin_shard_selector *parse_ok(const char *s) {
  kin_shard_selector *sel = NULL;
  char err[256];
  int rc = kin_shard_selector_parse(s, &sel, err, sizeof err);
  if (rc) fail_msg("parse(%s): %s", s, err);
  return sel;
}

/* Parses s, expecting KIN_EINVAL with exactly msg. */
static void parse_err(const char *s, const char *msg) {
  kin_shard_selector *sel = (kin_shard_selector *)1;
  char err[512];
  assert_int_equal(kin_shard_selector_parse(s, &sel, err, sizeof err), KIN_EINVAL);
  assert_null(sel);
  assert_string_equal(err, msg);
}

static void test_shard_selector_Hash(void **state) {
  (void)state;
  /* Go: fmt.Sprintf("%016x", fnv.New64a().Sum64()) */
  assert_true(kin_shard_hash("", 0) == 0xcbf29ce484222325ULL);
  assert_true(kin_shard_hash("a", 1) == 0xaf63dc4c8601ec8cULL);
  assert_true(kin_shard_hash("foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_shard_selector_Parse(void **state) {
  (void)state;
  struct {
    const char *in;
    size_t n;
    uint64_t first0, last0;
  } ok[] = {
      {R("0x0000000000000000", "0x8000000000000000"), 1, 0, 0x7fffffffffffffffULL},
      {R("0x0000000000000000", "0x10000000000000000"), 1, 0, UINT64_MAX},
      {"shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')", 1,
       0xaa, 0xfe},
      {R("0x0000000000000000", "0x8000000000000000") " || " R("0x8000000000000000",
                                                            "0x10000000000000000"),
       2, 0, 0x7fffffffffffffffULL},
      {R("0x0000000000000000", "0x0000000000000005") " || " R("0x0000000000000005",
        "0x000000000000000a") " || " R("0x000000000000000a", "0x000000000000000f"),
       3, 0, 4},
      {"shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')", 1, 0,
       0x7fffffffffffffffULL},
      {"  shardRange( object.metadata.uid ,  '0x0000000000000000' ,  '0x8000000000000000' )  ",
       1, 0, 0x7fffffffffffffffULL},
      {"(" R("0x0000000000000000", "0x8000000000000000") ") || (" R(
           "0x8000000000000000", "0x10000000000000000") ")",
       2, 0, 0x7fffffffffffffffULL},
      {"shardRange(object.metadata.uid, \"0x0000000000000000\", \"0x8000000000000000\")", 1, 0,
       0x7fffffffffffffffULL},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    kin_shard_selector *sel = parse_ok(ok[i].in);
    assert_int_equal(kin_shard_selector_nranges(sel), ok[i].n);
    uint64_t f, l;
    kin_shard_selector_range(sel, 0, &f, &l);
    assert_true(f == ok[i].first0);
    assert_true(l == ok[i].last0);
    kin_shard_selector_free(sel);
  }
  kin_shard_selector *ns =
      parse_ok("shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')");
  assert_int_equal(kin_shard_selector_key(ns), KIN_SHARD_KEY_NAMESPACE);
  kin_shard_selector_free(ns);
}

static void test_shard_selector_Errors(void **state) {
  (void)state;
  parse_err("", "empty shard selector is not allowed; omit the parameter for unfiltered lists");
  parse_err("   ", "empty shard selector is not allowed; omit the parameter for unfiltered lists");
  parse_err(R("0000000000000000", "0x8000000000000000"),
            "hexStart must have '0x' prefix, got \"0000000000000000\"");
  parse_err(R("0x0000000000000000", "8000000000000000"),
            "hexEnd must have '0x' prefix, got \"8000000000000000\"");
  parse_err(R("0x", "0x8000000000000000"), "hexStart: hex value is required after '0x'");
  parse_err("shardRange(object.metadata.name, '0x00', '0x80')",
            "unsupported field path \"object.metadata.name\"; supported: object.metadata.uid, "
            "object.metadata.namespace");
  parse_err("invalidFunc(object.metadata.uid, '0x00', '0x80')",
            "unsupported function \"invalidFunc\"; only shardRange() and || are allowed");
  parse_err(R("0x000000000000000000", "0x80"),
            "hexStart: hex value too long (18 chars, max 17): \"000000000000000000\"");
  parse_err(R("0x0g", "0x80"), "hexStart: invalid hex character \"g\" in \"0x0g\"");
  parse_err(R("0x0", "0x8") " && " R("0x8", "0xf"),
            "unsupported function \"_&&_\"; only shardRange() and || are allowed");
  parse_err("shardRange(object.metadata.uid, 0, 8)", "hexStart must be a string literal, got int64");
  parse_err("object.metadata.uid > '0x0'",
            "unsupported function \"_>_\"; only shardRange() and || are allowed");
  parse_err("shardRange(object.metadata.uid, '0x0')",
            "shardRange() requires exactly 3 arguments, got 2");
  parse_err("shardRange(object.metadata.uid, hex(0), '0x8')",
            "hexStart must be a string literal (e.g. '0xff'), got expression kind 1");
  parse_err(R("0x0000000000000000", "0x8000000000000000") " || shardRange(object.metadata.namespace, "
            "'0x8000000000000000', '0x10000000000000000')",
            "all shard ranges must use the same field, got \"object.metadata.uid\" and "
            "\"object.metadata.namespace\"");
  parse_err(R("0x0", "0x8000000000000000"),
            "hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean "
            "\"0x0000000000000000\"?)");
  parse_err(R("0x0000000000000000", "0xff"),
            "hexEnd must be a 0x-prefixed 16-digit hex value, got \"0xff\" (did you mean "
            "\"0x00000000000000ff\"?)");
  parse_err(R("0x8000000000000000", "0x8000000000000000"),
            "shard range start 0x8000000000000000 must be less than end 0x8000000000000000");
  parse_err(R("0xffffffffffffffff", "0x0000000000000000"),
            "shard range start 0xffffffffffffffff must be less than end 0x0000000000000000");
  parse_err("object.metadata.uid", "unexpected expression kind 7; expected shardRange() call or || operator");
  parse_err("'x'", "unexpected expression kind 5; expected shardRange() call or || operator");
  /* syntax errors are ours, but refused */
  kin_shard_selector *sel = NULL;
  char err[256];
  assert_int_equal(kin_shard_selector_parse(R("0x0000000000000000", "0x8000000000000000") " ||",
                                            &sel, err, sizeof err),
                   KIN_EINVAL);
  assert_non_null(strstr(err, "CEL parse error"));
  assert_int_equal(kin_shard_selector_parse("shardRange(object.metadata.uid, '0x0", &sel, NULL, 0),
                   KIN_EINVAL);
  assert_null(sel);
}

static void test_shard_selector_RoundTrip(void **state) {
  (void)state;
  const char *in[] = {
      R("0x0000000000000000", "0x8000000000000000"),
      R("0x8000000000000000", "0x10000000000000000"),
      R("0x0000000000000000", "0x10000000000000000"),
      "shardRange(object.metadata.namespace, '0x00000000000000aa', '0x00000000000000ff')",
      R("0x0000000000000000", "0x8000000000000000") " || " R("0x8000000000000000",
                                                            "0x10000000000000000"),
  };
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
    kin_shard_selector *sel = parse_ok(in[i]);
    char buf[512];
    assert_int_equal(kin_shard_selector_string(sel, buf, sizeof buf), strlen(in[i]));
    assert_string_equal(buf, in[i]);
    kin_shard_selector_free(sel);
  }
  /* a short buffer truncates */
  kin_shard_selector *sel = parse_ok("  shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')");
  char small[12];
  assert_int_equal(kin_shard_selector_string(sel, small, sizeof small),
                   strlen(R("0x0000000000000000", "0x8000000000000000")));
  assert_string_equal(small, "shardRange(");
  kin_shard_selector_free(sel);
}

/* Four quarter ranges put every hash in exactly one; bounds are exact. */
static void test_shard_selector_Partition(void **state) {
  (void)state;
  const char *q[4] = {R("0x0000000000000000", "0x4000000000000000"),
                      R("0x4000000000000000", "0x8000000000000000"),
                      R("0x8000000000000000", "0xc000000000000000"),
                      R("0xc000000000000000", "0x10000000000000000")};
  kin_shard_selector *s[4];
  for (int i = 0; i < 4; i++) s[i] = parse_ok(q[i]);
  int count[4] = {0};
  for (int k = 0; k < 4000; k++) {
    /* random UUIDs as the API server makes them (FNV-1a's top bits are
     * not spread by a counter at the end of a short string) */
    static uint64_t x = 88172645463325252ULL;
    uint64_t a = (x ^= x << 13, x ^= x >> 7, x ^= x << 17), b = (x ^= x << 13, x ^= x >> 7, x ^= x << 17);
    char uid[40];
    snprintf(uid, sizeof uid, "%08x-%04x-4%03x-a%03x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xfff, (unsigned)(b >> 48) & 0xfff,
             (unsigned long long)b & 0xffffffffffffULL);
    int hits = 0;
    for (int i = 0; i < 4; i++)
      if (kin_shard_selector_matches(s[i], uid, NULL)) {
        hits++;
        count[i]++;
      }
    assert_int_equal(hits, 1);
  }
  for (int i = 0; i < 4; i++) assert_in_range(count[i], 850, 1150);
  assert_true(kin_shard_selector_contains(s[0], 0x3fffffffffffffffULL));
  assert_false(kin_shard_selector_contains(s[0], 0x4000000000000000ULL));
  assert_true(kin_shard_selector_contains(s[3], UINT64_MAX));
  /* namespace key: NULL is "" (a cluster-scoped object) */
  kin_shard_selector *ns = parse_ok(
      "shardRange(object.metadata.namespace, '0xcbf29ce484222325', '0xcbf29ce484222326')");
  assert_true(kin_shard_selector_matches(ns, "anything", NULL));
  assert_false(kin_shard_selector_matches(ns, "anything", "default"));
  kin_shard_selector_free(ns);
  for (int i = 0; i < 4; i++) kin_shard_selector_free(s[i]);
}

KIN_SUITE(shard_selector, cmocka_unit_test(test_shard_selector_Hash),
          cmocka_unit_test(test_shard_selector_Parse), cmocka_unit_test(test_shard_selector_Errors),
          cmocka_unit_test(test_shard_selector_RoundTrip),
          cmocka_unit_test(test_shard_selector_Partition))
