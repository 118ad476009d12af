/* test_label_selector.c -- label selectors, ported from k8s.io/apimachinery
 * pkg/labels selector_test.go (v0.36). Go tests that inspect the parser's
 * internals (TestLexer, TestParserLookahead, ...) are ported through what
 * they imply for Parse: the canonical String() of the result, or the exact
 * error message. Expected messages were taken from the Go code. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "label_selector.h"

/* The validation texts of content.IsLabelKey / IsLabelValue, v0.36. */
#define NAME_ERR                                                                            \
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and " \
  "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex " \
  "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VALUE_ERR                                                                             \
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or " \
  "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "          \
  "'my_value',  or '12345', regex used for validation is "                                    \
  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define PREFIX_ERR                                                                            \
  "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "       \
  "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "      \
  "'example.com', regex used for validation is "                                              \
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define OPS "in, notin, =, ==, !=, gt, lt"

/* A label set given as "k=v" strings, NULL-terminated. */
typedef struct {
  const char *const *kv;
} labels;

static const char *labels_get(void *ud, const char *key) {
  const labels *l = ud;
  size_t klen = strlen(key);
  for (const char *const *p = l->kv; p && *p; p++)
    if (strncmp(*p, key, klen) == 0 && (*p)[klen] == '=') return *p + klen + 1;
  return NULL;
}

static kin_label_selector *parse_ok(const char *s) {
  kin_label_selector *sel = NULL;
  char err[1024];
  int rc = kin_label_selector_parse(s, &sel, err, sizeof(err));
  if (rc != 0) fail_msg("parse(\"%s\") failed: %s", s ? s : "(null)", err);
  assert_non_null(sel);
  return sel;
}

/* Returns the canonical form in a static buffer (tests are serial). */
static const char *str_of(const kin_label_selector *sel) {
  static char buf[2048];
  size_t n = kin_label_selector_string(sel, buf, sizeof(buf));
  assert_true(n < sizeof(buf));
  assert_int_equal(strlen(buf), n);
  return buf;
}

static void assert_parses_to(const char *in, const char *canonical) {
  kin_label_selector *sel = parse_ok(in);
  if (strcmp(str_of(sel), canonical) != 0)
    fail_msg("parse(\"%s\").String() = \"%s\", want \"%s\"", in, str_of(sel), canonical);
  kin_label_selector_free(sel);
}

static void assert_parse_error(const char *in, const char *msg) {
  kin_label_selector *sel = (kin_label_selector *)1;
  char err[4096];
  int rc = kin_label_selector_parse(in, &sel, err, sizeof(err));
  if (rc != KIN_EINVAL) fail_msg("parse(\"%s\") = %d, want KIN_EINVAL", in, rc);
  assert_null(sel);
  if (msg && strcmp(err, msg) != 0) fail_msg("parse(\"%s\") error\n  got  %s\n  want %s", in, err, msg);
}

static int matches(const char *sel_s, const char *const *kv) {
  kin_label_selector *sel = parse_ok(sel_s);
  labels l = {kv};
  int m = kin_label_selector_matches(sel, labels_get, &l);
  kin_label_selector_free(sel);
  return m;
}

#define SET(...) ((const char *const[]){__VA_ARGS__, NULL})
#define EMPTY_SET ((const char *const[]){NULL})

static void expect_match(const char *sel, const char *const *kv) {
  if (!matches(sel, kv)) fail_msg("wanted \"%s\" to match", sel);
}

static void expect_no_match(const char *sel, const char *const *kv) {
  if (matches(sel, kv)) fail_msg("wanted \"%s\" not to match", sel);
}

/* TestSelectorParse: good strings restring to themselves without blanks,
 * bad strings fail. */
static void test_label_selector_SelectorParse(void **state) {
  (void)state;
  static const char *good[] = {"x=a,y=b,z=c", "",   "x!=a,y=b", "x=",  "x= ",
                               "x=,z= ",      "x= ,z= ", "!x",  "x>1", "x>1,z<5"};
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    char want[64];
    size_t k = 0;
    for (const char *p = good[i]; *p; p++)
      if (*p != ' ') want[k++] = *p;
    want[k] = 0;
    assert_parses_to(good[i], want);
  }
  static const char *bad[] = {"x=a||y=b", "x==a==b", "!x=a", "x<a"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) assert_parse_error(bad[i], NULL);
}

/* TestDeterministicParse */
static void test_label_selector_DeterministicParse(void **state) {
  (void)state;
  assert_parses_to("x=a,a=x", "a=x,x=a");
  assert_parses_to("a=x,x=a", "a=x,x=a");
}

/* TestEverything / TestSetIsEmpty / TestNilMapIsValid */
static void test_label_selector_Everything(void **state) {
  (void)state;
  const char *inputs[] = {NULL, "", "   "};
  for (size_t i = 0; i < 3; i++) {
    kin_label_selector *sel = parse_ok(inputs[i]);
    labels l = {SET("x=y")};
    assert_true(kin_label_selector_matches(sel, labels_get, &l));
    labels none = {EMPTY_SET};
    assert_true(kin_label_selector_matches(sel, labels_get, &none));
    assert_true(kin_label_selector_empty(sel));
    assert_string_equal(str_of(sel), "");
    kin_label_selector_free(sel);
  }
  kin_label_selector *sel = parse_ok("x");
  assert_false(kin_label_selector_empty(sel));
  kin_label_selector_free(sel);
  assert_true(kin_label_selector_empty(NULL));
  kin_label_selector_free(NULL);
}

/* TestSelectorMatches */
static void test_label_selector_SelectorMatches(void **state) {
  (void)state;
  expect_match("", SET("x=y"));
  expect_match("x=y", SET("x=y"));
  expect_match("x=y,z=w", SET("x=y", "z=w"));
  expect_match("x!=y,z!=w", SET("x=z", "z=a"));
  expect_match("notin=in", SET("notin=in")); /* in and notin in exactMatch */
  expect_match("x", SET("x=z"));
  expect_match("!x", SET("y=z"));
  expect_match("x>1", SET("x=2"));
  expect_match("x<1", SET("x=0"));
  expect_no_match("x=z", EMPTY_SET);
  expect_no_match("x=y", SET("x=z"));
  expect_no_match("x=y,z=w", SET("x=w", "z=w"));
  expect_no_match("x!=y,z!=w", SET("x=z", "z=w"));
  expect_no_match("x", SET("y=z"));
  expect_no_match("!x", SET("x=z"));
  expect_no_match("x>1", SET("x=0"));
  expect_no_match("x<1", SET("x=2"));

  const char *const *ls = SET("foo=bar", "baz=blah");
  expect_match("foo=bar", ls);
  expect_match("baz=blah", ls);
  expect_match("foo=bar,baz=blah", ls);
  expect_no_match("foo=blah", ls);
  expect_no_match("baz=bar", ls);
  expect_no_match("foo=bar,foobar=bar,baz=blah", ls);
}

/* Requirement.Matches: != and notin also hold when the key is absent; an
 * empty value is a value; Gt/Lt parse the label as a base-10 int64. */
static void test_label_selector_RequirementMatchesAbsentKey(void **state) {
  (void)state;
  expect_match("x!=a", EMPTY_SET);
  expect_match("x notin (a,b)", EMPTY_SET);
  expect_match("x notin (a,b)", SET("x=c"));
  expect_no_match("x notin (a,b)", SET("x=b"));
  expect_no_match("x in (a,b)", EMPTY_SET);
  expect_match("x in (a,b)", SET("x=b"));
  expect_match("x=", SET("x="));
  expect_no_match("x=", EMPTY_SET);
  expect_match("x in ()", SET("x="));
  expect_match("x==a", SET("x=a"));
  expect_match("x>1", SET("x=02"));
  expect_match("x>1", SET("x=+2"));
  expect_match("x<1", SET("x=-3"));
  expect_no_match("x>1", SET("x=v2"));
  expect_no_match("x>1", EMPTY_SET);
  expect_no_match("x<1", SET("x=99999999999999999999")); /* out of int64 */
}

/* TestRequirementSelectorMatching */
static void test_label_selector_RequirementSelectorMatching(void **state) {
  (void)state;
  expect_match("x in (foo),y notin (alpha)", SET("x=foo", "y=baz"));
  expect_no_match("x in (foo),y in (alpha)", SET("x=foo", "y=baz"));
  expect_match("x notin (),y", SET("y="));
  expect_match("!x,y", SET("y="));
  expect_no_match("x notin (),!y", SET("y="));
  expect_no_match("x in ()", SET("y=baz"));
  expect_match("z>1", SET("z=2"));
  expect_no_match("z>1", SET("z=v2"));
}

/* TestSetSelectorParser: valid inputs with their canonical String()
 * (sorted keys, sorted and de-duplicated values), then invalid ones. */
static void test_label_selector_SetSelectorParser(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } valid[] = {
      {"", ""},
      {"\rx", "x"},
      {"this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"},
      {"this-is-another-dns.domain.com/key-with-dash in (so,what)",
       "this-is-another-dns.domain.com/key-with-dash in (so,what)"},
      {"0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
       "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"},
      {"foo  in\t (abc)", "foo in (abc)"},
      {"x notin\n (abc)", "x notin (abc)"},
      {"x  notin\t\t\t(abc,def)", "x notin (abc,def)"},
      {"x in (abc,def)", "x in (abc,def)"},
      {"x in (abc,)", "x in (,abc)"},
      {"x in (abc,abc)", "x in (abc)"},
      {"x in ()", "x in ()"},
      {"x in (a,,)", "x in (,a)"},
      {"x in (a,,,)", "x in (,a)"},
      {"x in (a,,,,,,)", "x in (,a)"},
      {"x in (a,,a,,a,,a,,)", "x in (,a)"},
      {"x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"},
      {"x,y in (a)", "x,y in (a)"},
      {"x=a", "x=a"},
      {"x>1", "x>1"},
      {"x<7", "x<7"},
      {"x=a,y!=b", "x=a,y!=b"},
      {"x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"},
      {"x notin ( )", "x notin ()"},
      {"x notin (, a)", "x notin (,a)"},
      {"a ", "a"},
      {"a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"}, /* 'in' inside a value list */
  };
  for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
    assert_parses_to(valid[i].in, valid[i].out);

  static const char *invalid[] = {"x=a||y=b", "x,,y",     ",x,y", "x nott in (y)", "a in (xyz),",
                                  "a in (xyz)b notin ()", "a in (xyz abc)", "a notin(", "a (",
                                  "("};
  for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
    assert_parse_error(invalid[i], NULL);
}

/* TestLexer / TestLexerSequence / TestParserLookahead, observed through
 * Parse: the longest operator wins ("==" over "="), keywords are values in
 * value position, blanks are ' ', '\t', '\r', '\n'. */
static void test_label_selector_LexerSequence(void **state) {
  (void)state;
  assert_parses_to("key in ( value )", "key in (value)");
  assert_parses_to("key notin ( value )", "key notin (value)");
  assert_parses_to("key in ( value1, value2 )", "key in (value1,value2)");
  assert_parses_to("!key", "!key");
  assert_parses_to("x in (),y", "x in (),y");
  assert_parses_to("key>2", "key>2");
  assert_parses_to("key<1", "key<1");
  assert_parses_to("x==a", "x==a");
  assert_parses_to("x!=a", "x!=a");
  assert_parses_to("in", "in");
  assert_parses_to("in=notin", "in=notin");
  assert_parses_to("x\t=\ta\n", "x=a");
  assert_parses_to("  x  =  a  ,  y  ", "x=a,y");
  assert_parses_to("x =", "x=");
  assert_parses_to("x==a,y!=,z", "x==a,y!=,z");
  /* "~" and "||" are identifier characters, not operators */
  assert_parse_error("x=~", "unable to parse requirement: values[0][x]: Invalid value: \"~\": " VALUE_ERR);
  /* "=!" is "=" then "!" */
  assert_parse_error("x=!a", "unable to parse requirement: found '!', expected: identifier");
  assert_parse_error("x>=1", "unable to parse requirement: found '=', expected: identifier");
}

/* TestParseOperator: what may follow a key. */
static void test_label_selector_ParseOperator(void **state) {
  (void)state;
  assert_parses_to("x in (a)", "x in (a)");
  assert_parses_to("x notin (a)", "x notin (a)");
  assert_parse_error("x !", "unable to parse requirement: found '!', expected: " OPS);
  assert_parse_error("x exists", "unable to parse requirement: found 'exists', expected: " OPS);
  assert_parse_error("x (", "unable to parse requirement: found '(', expected: " OPS);
}

/* TestRequirementConstructor, for the requirements Parse can build. */
static void test_label_selector_RequirementConstructor(void **state) {
  (void)state;
  assert_parses_to("x3 in (foo)", "x3 in (foo)");
  assert_parses_to("x4 notin (foo)", "x4 notin (foo)");
  assert_parses_to("x6", "x6");
  assert_parses_to("!x7", "!x7");
  assert_parses_to("x11>1", "x11>1");
  assert_parses_to("x12<6", "x12<6");
  assert_parse_error("x13>", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', "
                             "'Lt' operators, the value must be an integer");
  assert_parse_error("x14>bar", "unable to parse requirement: values[0]: Invalid value: \"bar\": "
                                "for 'Gt', 'Lt' operators, the value must be an integer");
  assert_parse_error("x15<bar", "unable to parse requirement: values[0]: Invalid value: \"bar\": "
                                "for 'Gt', 'Lt' operators, the value must be an integer");
  assert_parse_error("x>99999999999999999999",
                     "unable to parse requirement: values[0]: Invalid value: "
                     "\"99999999999999999999\": for 'Gt', 'Lt' operators, the value must be an "
                     "integer");

  char key[300], sel[400], want[1200];
  memset(key, 'a', 254);
  key[254] = 0;
  snprintf(want, sizeof(want),
           "unable to parse requirement: <nil>: Invalid value: \"%s\": name part must be no more "
           "than 63 bytes",
           key);
  assert_parse_error(key, want);

  memset(key, 'a', 254);
  key[254] = 0;
  snprintf(sel, sizeof(sel), "x16=%s", key);
  snprintf(want, sizeof(want),
           "unable to parse requirement: values[0][x16]: Invalid value: \"%s\": must be no more "
           "than 63 bytes",
           key);
  assert_parse_error(sel, want);

  /* several errors: aggregated in brackets, in value order */
  assert_parse_error("x in (-b,-a)",
                     "unable to parse requirement: [values[0][x]: Invalid value: \"-a\": " VALUE_ERR
                     ", values[1][x]: Invalid value: \"-b\": " VALUE_ERR "]");
  assert_parse_error("x>-1a", "unable to parse requirement: [values[0]: Invalid value: \"-1a\": for "
                              "'Gt', 'Lt' operators, the value must be an integer, values[0][x]: "
                              "Invalid value: \"-1a\": " VALUE_ERR "]");
  /* a valid int64 may still be an invalid label value */
  assert_parse_error("x>-5", "unable to parse requirement: values[0][x]: Invalid value: \"-5\": " VALUE_ERR);
}

/* content.IsLabelKey: optional DNS-1123 subdomain prefix (<= 253) + '/' +
 * name (<= 63, alphanumeric ends, [-_.] inside). */
static void test_label_selector_LabelKeyValidation(void **state) {
  (void)state;
  assert_parses_to("example.com/a.b_c-d=V.1_2-3", "example.com/a.b_c-d=V.1_2-3");
  assert_parses_to("a_b", "a_b");
  assert_parses_to("A.B", "A.B");
  assert_parses_to("a..b", "a..b");
  char key[400];
  memset(key, 'a', 253);
  strcpy(key + 253, "/b");
  assert_parses_to(key, key); /* 253-byte prefix */
  memset(key, 'b', 63);
  key[63] = 0;
  assert_parses_to(key, key); /* 63-byte name */

  assert_parse_error("a/b/c",
                     "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key "
                     "must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                     "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                     "'123-abc', regex used for validation is "
                     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
                     "prefix and '/' (e.g. 'example.com/MyName')");
  assert_parse_error("/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty");
  assert_parse_error("a/", "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must "
                           "be non-empty; " NAME_ERR);
  assert_parse_error("Foo.com/a", "unable to parse requirement: <nil>: Invalid value: \"Foo.com/a\": " PREFIX_ERR);
  assert_parse_error("ex..com/a", "unable to parse requirement: <nil>: Invalid value: \"ex..com/a\": " PREFIX_ERR);
  assert_parse_error("ex-.com/a", "unable to parse requirement: <nil>: Invalid value: \"ex-.com/a\": " PREFIX_ERR);
  assert_parse_error("-a", "unable to parse requirement: <nil>: Invalid value: \"-a\": " NAME_ERR);
  assert_parse_error("a/-b", "unable to parse requirement: <nil>: Invalid value: \"a/-b\": " NAME_ERR);
  assert_parse_error("\xc3\xa9", "unable to parse requirement: <nil>: Invalid value: \"\xc3\xa9\": " NAME_ERR);
  assert_parse_error("a\x01", "unable to parse requirement: <nil>: Invalid value: \"a\\x01\": " NAME_ERR);

  char sel[400], want[800];
  memset(key, 'a', 254);
  strcpy(key + 254, "/b");
  snprintf(want, sizeof(want),
           "unable to parse requirement: <nil>: Invalid value: \"%s\": prefix part must be no more "
           "than 253 bytes",
           key);
  assert_parse_error(key, want);

  memset(sel, '-', 64);
  strcpy(sel + 64, "=x");
  snprintf(want, sizeof(want),
           "unable to parse requirement: <nil>: Invalid value: \"%.64s\": name part must be no "
           "more than 63 bytes; " NAME_ERR,
           sel);
  assert_parse_error(sel, want);
}

/* content.IsLabelValue: empty allowed, <= 63, same character rule. */
static void test_label_selector_LabelValueValidation(void **state) {
  (void)state;
  assert_parses_to("x=a.b", "x=a.b");
  assert_parses_to("x=A-b_C.9", "x=A-b_C.9");
  assert_parse_error("x=a_", "unable to parse requirement: values[0][x]: Invalid value: \"a_\": " VALUE_ERR);
  assert_parse_error("x=_a", "unable to parse requirement: values[0][x]: Invalid value: \"_a\": " VALUE_ERR);
  assert_parse_error("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": " VALUE_ERR);
  assert_parse_error("x in (a,-b)", "unable to parse requirement: values[0][x]: Invalid value: \"-b\": " VALUE_ERR);
  char sel[100], want[1200];
  strcpy(sel, "x=");
  memset(sel + 2, 'v', 63);
  sel[65] = 0;
  assert_parses_to(sel, sel);
  memset(sel + 2, '-', 64);
  sel[66] = 0;
  snprintf(want, sizeof(want),
           "unable to parse requirement: values[0][x]: Invalid value: \"%s\": must be no more "
           "than 63 bytes; " VALUE_ERR,
           sel + 2);
  assert_parse_error(sel, want);
}

/* The syntax errors, worded as the API server words them. */
static void test_label_selector_SyntaxErrorMessages(void **state) {
  (void)state;
  static const struct {
    const char *in, *err;
  } cases[] = {
      {"x=a b", "found 'b', expected: ',' or 'end of string'"},
      {"x==a==b", "found '==', expected: ',' or 'end of string'"},
      {"!x=a", "found '=', expected: ',' or 'end of string'"},
      {"!x!=a", "found '!=', expected: ',' or 'end of string'"},
      {"x=a)", "found ')', expected: ',' or 'end of string'"},
      {"x in (a)(b)", "found '(', expected: ',' or 'end of string'"},
      {"x,,y", "found ',', expected: identifier after ','"},
      {"x,", "found '', expected: identifier after ','"},
      {"a in (xyz),", "found '', expected: identifier after ','"},
      {",x,y", "found ',', expected: !, identifier, or 'end of string'"},
      {"(", "found '(', expected: !, identifier, or 'end of string'"},
      {"x nott in (y)", "unable to parse requirement: found 'nott', expected: " OPS},
      {"x y", "unable to parse requirement: found 'y', expected: " OPS},
      {"a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"},
      {"x in (a", "unable to parse requirement: found '', expected: ',' or ')'"},
      {"x in (a=b)", "unable to parse requirement: found '=', expected: ',' or ')'"},
      {"a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"},
      {"x in ((a)", "unable to parse requirement: found '(', expected: ',', ')' or identifier"},
      {"x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"},
      {"x in a", "unable to parse requirement: found 'a' expected: '('"},
      {"x in", "unable to parse requirement: found '' expected: '('"},
      {"x=(a)", "unable to parse requirement: found '(', expected: identifier"},
      {"!", "unable to parse requirement: found '', expected: identifier"},
      {"!!x", "unable to parse requirement: found '!', expected: identifier"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    assert_parse_error(cases[i].in, cases[i].err);
}

/* TestToString: canonical forms, requirements sorted by key (stably: the
 * same key keeps its input order), values sorted. */
static void test_label_selector_ToString(void **state) {
  (void)state;
  assert_parses_to("x in (def,abc),y notin (jkl),z", "x in (abc,def),y notin (jkl),z");
  assert_parses_to("z,y!=jkl,x notin (def,abc)", "x notin (abc,def),y!=jkl,z");
  assert_parses_to("!z,y!=jkl,x notin (abc,def)", "x notin (abc,def),y!=jkl,!z");
  assert_parses_to("x notin (abc),y in (mno,jkl),z notin ()", "x notin (abc),y in (jkl,mno),z notin ()");
  assert_parses_to("x=abc,y==jkl,z!=a,z", "x=abc,y==jkl,z!=a,z");
  assert_parses_to("x>2,y<8,z", "x>2,y<8,z");
  assert_parses_to("z=1,a in (c,b,a),m,!n,y!=q,b notin (z,y),c==d,d>3,e<4",
                   "a in (a,b,c),b notin (y,z),c==d,d>3,e<4,m,!n,y!=q,z=1");
  assert_parses_to("x notin (a),x in (b)", "x notin (a),x in (b)");
  assert_parses_to("b,a,b=1,a=2", "a,a=2,b,b=1");
  assert_parses_to("x in (in,notin)", "x in (in,notin)");
}

/* kin_label_selector_string follows snprintf: it returns the full length
 * and truncates with a terminating NUL. */
static void test_label_selector_StringTruncates(void **state) {
  (void)state;
  kin_label_selector *sel = parse_ok("b in (y,x),a");
  char buf[8];
  assert_int_equal(kin_label_selector_string(sel, NULL, 0), strlen("a,b in (x,y)"));
  assert_int_equal(kin_label_selector_string(sel, buf, sizeof(buf)), strlen("a,b in (x,y)"));
  assert_string_equal(buf, "a,b in ");
  assert_int_equal(kin_label_selector_string(sel, buf, 1), 12);
  assert_string_equal(buf, "");
  kin_label_selector_free(sel);

  /* a short error buffer truncates the message, never overflows */
  char err[12];
  kin_label_selector *bad = NULL;
  assert_int_equal(kin_label_selector_parse("x=a b", &bad, err, sizeof(err)), KIN_EINVAL);
  assert_string_equal(err, "found 'b', ");
  assert_int_equal(kin_label_selector_parse("x=a b", &bad, NULL, 0), KIN_EINVAL);
  assert_null(bad);
}

KIN_SUITE(label_selector,
          cmocka_unit_test(test_label_selector_SelectorParse),
          cmocka_unit_test(test_label_selector_DeterministicParse),
          cmocka_unit_test(test_label_selector_Everything),
          cmocka_unit_test(test_label_selector_SelectorMatches),
          cmocka_unit_test(test_label_selector_RequirementMatchesAbsentKey),
          cmocka_unit_test(test_label_selector_RequirementSelectorMatching),
          cmocka_unit_test(test_label_selector_SetSelectorParser),
          cmocka_unit_test(test_label_selector_LexerSequence),
          cmocka_unit_test(test_label_selector_ParseOperator),
          cmocka_unit_test(test_label_selector_RequirementConstructor),
          cmocka_unit_test(test_label_selector_LabelKeyValidation),
          cmocka_unit_test(test_label_selector_LabelValueValidation),
          cmocka_unit_test(test_label_selector_SyntaxErrorMessages),
          cmocka_unit_test(test_label_selector_ToString),
          cmocka_unit_test(test_label_selector_StringTruncates))
