/* test_projection.c -- an informer's projection (kin_informer_opts.fields,
 * csrc/core/cache/projection.c): the kept paths, metadata/apiVersion/kind
 * always kept, member order and bytes preserved, objects with nothing kept
 * left out, bad paths refused with a clear message, malformed JSON
 * refused, tombstones passed through. */
#include "kin_test.h"

#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "projection.h"

static const char *POD =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
    "\"labels\":{\"a\":\"b\"}},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\","
    "\"image\":\"x}\"}],\"restartPolicy\":\"Always\",\"x\":{\"y\":{\"z\":1,\"w\":[1,{\"q\":\"]\"}]}}},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}";

/* Projects POD-like json with fields; checks the text equals want. */
static void check(const char *json, const char *const *fields, const char *want) {
  kin__projection *p = NULL;
  char err[256] = "";
  assert_int_equal(kin__projection_new(fields, &p, err, sizeof(err)), 0);
  char *t = NULL;
  size_t tl = 0;
  assert_int_equal(kin__projection_text(p, json, strlen(json), &t, &tl), 0);
  assert_int_equal(tl, strlen(want));
  assert_memory_equal(t, want, tl);
  free(t);
  kin__projection_free(p);
}

static void test_projection_paths(void **st) {
  (void)st;
  const char *const f1[] = {"status.phase", "spec.nodeName", NULL};
  check(POD, f1,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
        "\"labels\":{\"a\":\"b\"}},\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}");
  const char *const f2[] = {"status", NULL};
  check(POD, f2,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
        "\"labels\":{\"a\":\"b\"}},\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}");
  /* deep, through arrays and strings holding brackets */
  const char *const f3[] = {"spec.x.y.w", "spec.containers", NULL};
  check(POD, f3,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
        "\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x}\"}],"
        "\"x\":{\"y\":{\"w\":[1,{\"q\":\"]\"}]}}}}");
}

static void test_projection_absent_and_scalar(void **st) {
  (void)st;
  /* a path below a scalar or into nothing keeps nothing: no empty object */
  const char *const f[] = {"spec.nodeName.deeper", "spec.missing", "nothere", NULL};
  check(POD, f,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\","
        "\"labels\":{\"a\":\"b\"}}}");
  /* whitespace in the input is accepted, kept values keep their bytes */
  const char *const g[] = {"spec.a", NULL};
  check("{ \"metadata\" : {\"name\":\"x\"} , \"spec\" : { \"a\" : [ 1 , 2 ] , \"b\" : true } }", g,
        "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"a\":[ 1 , 2 ]}}");
}

static void test_projection_bad_paths(void **st) {
  (void)st;
  struct {
    const char *path, *msg;
  } cases[] = {{"", "is empty"},
               {"spec..a", "empty segment"},
               {".spec", "empty segment"},
               {"spec.", "empty segment"},
               {"sp\"ec", "cannot hold"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *const f[] = {cases[i].path, NULL};
    kin__projection *p = (kin__projection *)1;
    char err[256] = "";
    assert_int_equal(kin__projection_new(f, &p, err, sizeof(err)), KIN_EINVAL);
    assert_null(p);
    if (!strstr(err, cases[i].msg)) fail_msg("%s: %s", cases[i].path, err);
  }
  const char *const dup[] = {"status", "status", NULL};
  kin__projection *p = NULL;
  char err[256] = "";
  assert_int_equal(kin__projection_new(dup, &p, err, sizeof(err)), KIN_EINVAL);
  assert_non_null(strstr(err, "listed twice"));
  const char *const none[] = {NULL};
  assert_int_equal(kin__projection_new(none, &p, err, sizeof(err)), KIN_EINVAL);
}

static void test_projection_objects(void **st) {
  (void)st;
  const char *const f[] = {"status.phase", NULL};
  kin__projection *p = NULL;
  char err[256];
  assert_int_equal(kin__projection_new(f, &p, err, sizeof(err)), 0);
  char key[64];
  assert_int_equal(kin__projection_key(p, key, sizeof(key)), strlen("status.phase,"));
  assert_string_equal(key, "status.phase,");
  kin_obj *in = NULL, *out = NULL;
  assert_int_equal(kin_obj_parse(POD, strlen(POD), &in), 0);
  assert_int_equal(kin__projection_apply(p, in, &out), 0);
  assert_string_equal(kin_obj_key(out), "d/p");
  assert_string_equal(kin_obj_label(out, "a"), "b");
  size_t len;
  const char *js = kin_obj_json(out, &len);
  assert_null(strstr(js, "nodeName"));
  assert_non_null(strstr(js, "\"phase\":\"Running\""));
  assert_true(len < strlen(POD) / 2);
  /* a tombstone passes as a reference */
  kin_obj *tomb = kin_obj_tombstone("d/p", in), *t2 = NULL;
  assert_int_equal(kin__projection_apply(p, tomb, &t2), 0);
  assert_ptr_equal(t2, tomb);
  kin_obj_unref(t2);
  kin_obj_unref(tomb);
  kin_obj_unref(out);
  kin_obj_unref(in);
  /* malformed text is refused, not read past */
  const char *bad[] = {"{\"spec\":{\"a\":1}", "{\"spec\" 1}", "[1]", "{\"a\":\"x}", "{} x"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char *t = NULL;
    size_t tl;
    if (kin__projection_text(p, bad[i], strlen(bad[i]), &t, &tl) != KIN_EINVAL)
      fail_msg("accepted %s", bad[i]);
    assert_null(t);
  }
  kin__projection_free(p);
}

/* kin__projection_relation: what a projection did to a path code reads
 * (projection_warn.c's question) */
static void test_projection_relation(void **st) {
  (void)st;
  kin__projection *p = NULL;
  char err[256] = "";
  const char *const f[] = {"spec.replicas", "status", "data.a.b", NULL};
  assert_int_equal(kin__projection_new(f, &p, err, sizeof(err)), 0);
  struct {
    const char *path;
    int want;
  } cases[] = {{"spec.replicas", KIN__PROJ_KEPT},     {"status", KIN__PROJ_KEPT},
               {"status.phase", KIN__PROJ_KEPT},      {"data.a.b.c", KIN__PROJ_KEPT},
               {"spec", KIN__PROJ_PARTLY},            {"data", KIN__PROJ_PARTLY},
               {"data.a", KIN__PROJ_PARTLY},          {"", KIN__PROJ_PARTLY},
               {"spec.replicasX", KIN__PROJ_DROPPED}, {"spec.selector", KIN__PROJ_DROPPED},
               {"statusX", KIN__PROJ_DROPPED},        {"data.ab", KIN__PROJ_DROPPED},
               {"data.a.c", KIN__PROJ_DROPPED},       {"stat", KIN__PROJ_DROPPED}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    if (kin__projection_relation(p, cases[i].path) != cases[i].want)
      fail_msg("%s: %d, want %d", cases[i].path, kin__projection_relation(p, cases[i].path),
               cases[i].want);
  kin__projection_free(p);
}

KIN_SUITE(projection,
          cmocka_unit_test(test_projection_relation),
          cmocka_unit_test(test_projection_paths),
          cmocka_unit_test(test_projection_absent_and_scalar),
          cmocka_unit_test(test_projection_bad_paths),
          cmocka_unit_test(test_projection_objects))
