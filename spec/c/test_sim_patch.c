/* test_sim_patch.c -- the patch formats of kinformer.sim: RFC 7386 merge
 * patch (appendix A), RFC 6902 JSON patch (appendix A, plus the behaviour
 * and messages of the library kube-apiserver applies it with) and the
 * strategic merge patch, modelled on apimachinery's strategicpatch tests
 * (TestStrategicMergePatch's cases, over the k8s.io/api types the sim
 * serves). The expected values were checked against the Go code. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "sim_patch.h"

#include "json_assert.h"

/* ---- RFC 7386 ----------------------------------------------------------- */

static void merge_case(const char *target, const char *patch, const char *want) {
  json_t *t = J(target), *p = J(patch);
  json_t *t0 = json_deep_copy(t), *p0 = json_deep_copy(p);
  json_t *out = kin_sim_merge_patch(t, p);
  assert_non_null(out);
  assert_json(out, want);
  /* the inputs are borrowed and left as they were */
  assert_true(json_equal(t, t0));
  assert_true(json_equal(p, p0));
  json_decref(out);
  json_decref(t);
  json_decref(p);
  json_decref(t0);
  json_decref(p0);
}

/* RFC 7386 appendix A, every example. */
static void test_sim_patch_MergePatch_RFC7386AppendixA(void **state) {
  (void)state;
  merge_case("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
  merge_case("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
  merge_case("{\"a\":\"b\"}", "{\"a\":null}", "{}");
  merge_case("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}");
  merge_case("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
  merge_case("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}");
  merge_case("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}");
  merge_case("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
  merge_case("[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]");
  merge_case("{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]");
  merge_case("{\"a\":\"foo\"}", "null", "null");
  merge_case("{\"a\":\"foo\"}", "\"bar\"", "\"bar\"");
  merge_case("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
  merge_case("[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}");
  merge_case("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
}

/* A Kubernetes-shaped merge patch: labels edited, a list replaced whole. */
static void test_sim_patch_MergePatch_Object(void **state) {
  (void)state;
  merge_case("{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\",\"y\":\"2\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
             "{\"metadata\":{\"labels\":{\"x\":null,\"z\":\"3\"}},\"spec\":{\"containers\":[{\"name\":\"d\"}]}}",
             "{\"metadata\":{\"name\":\"a\",\"labels\":{\"y\":\"2\",\"z\":\"3\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"d\"}]}}");
}

/* ---- RFC 6902 ----------------------------------------------------------- */

static void jp_ok(const char *doc, const char *ops, const char *want) {
  json_t *d = J(doc), *o = J(ops), *out = NULL;
  json_t *d0 = json_deep_copy(d);
  char err[512];
  int rc = kin_sim_json_patch(d, o, &out, err, sizeof(err));
  if (rc != 0) fail_msg("json patch %s failed: %s", ops, err);
  assert_json(out, want);
  assert_true(json_equal(d, d0));
  json_decref(out);
  json_decref(d);
  json_decref(d0);
  json_decref(o);
}

static void jp_err(const char *doc, const char *ops, const char *want_err, int malformed) {
  json_t *d = J(doc), *o = J(ops), *out = (json_t *)1;
  char err[512];
  assert_int_equal(kin_sim_json_patch(d, o, &out, err, sizeof(err)), KIN_EINVAL);
  assert_null(out);
  if (strcmp(err, want_err) != 0) fail_msg("error\n  got  %s\n  want %s", err, want_err);
  assert_int_equal(kin_sim_json_patch_malformed(o), malformed);
  json_decref(d);
  json_decref(o);
}

/* RFC 6902 appendix A: A.1-A.8, A.10, A.11, A.14, A.16. */
static void test_sim_patch_JSONPatch_RFC6902AppendixA(void **state) {
  (void)state;
  /* A.1 adding an object member */
  jp_ok("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
        "{\"baz\":\"qux\",\"foo\":\"bar\"}");
  /* A.2 adding an array element */
  jp_ok("{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
        "{\"foo\":[\"bar\",\"qux\",\"baz\"]}");
  /* A.3 removing an object member */
  jp_ok("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]", "{\"foo\":\"bar\"}");
  /* A.4 removing an array element */
  jp_ok("{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
        "{\"foo\":[\"bar\",\"baz\"]}");
  /* A.5 replacing a value */
  jp_ok("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
        "{\"baz\":\"boo\",\"foo\":\"bar\"}");
  /* A.6 moving a value */
  jp_ok("{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
        "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
        "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}");
  /* A.7 moving an array element */
  jp_ok("{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}", "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
        "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}");
  /* A.8 testing a value: success */
  jp_ok("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
        "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
        "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}");
  /* A.10 adding a nested member object */
  jp_ok("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
        "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}");
  /* A.11 ignoring unrecognized elements */
  jp_ok("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]",
        "{\"foo\":\"bar\",\"baz\":\"qux\"}");
  /* A.14 ~ escape ordering */
  jp_ok("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]", "{\"/\":9,\"~1\":10}");
  /* A.16 adding an array value */
  jp_ok("{\"foo\":[\"bar\"]}", "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
        "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}");
}

/* RFC 6902 appendix A error cases: A.9, A.12, A.13, A.15. */
static void test_sim_patch_JSONPatch_RFC6902AppendixAErrors(void **state) {
  (void)state;
  /* A.9 testing a value: error */
  jp_err("{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
         "testing value /baz failed: test failed", 0);
  /* A.12 adding to a nonexistent target */
  jp_err("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
         "add operation does not apply: doc is missing path: \"/baz/bat\": missing value", 0);
  /* A.13 invalid JSON patch document: a duplicate "op". A parser that
   * rejects duplicate keys refuses it; one that keeps the last (Go's, and
   * jansson's default) reads a "remove" of a missing member, which fails */
  const char *a13 = "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"op\":\"remove\"}]";
  json_error_t e;
  assert_null(json_loads(a13, JSON_REJECT_DUPLICATES, &e));
  jp_err("{\"foo\":\"bar\"}", a13,
         "error in remove for path: '/baz': Unable to remove nonexistent key: baz: missing value", 0);
  /* A.15 comparing strings and numbers */
  jp_err("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
         "testing value /~01 failed: test failed", 0);
}

/* The errors kube-apiserver reports, with its messages: 400 for a
 * document that is no JSON patch, 422 for the rest. */
static void test_sim_patch_JSONPatch_Errors(void **state) {
  (void)state;
  const char *doc = "{\"a\":[1,2,3],\"o\":{\"k\":1}}";
  jp_err(doc, "{\"op\":\"add\"}", "json: cannot unmarshal object into Go value of type jsonpatch.Patch", 1);
  jp_err(doc, "\"x\"", "json: cannot unmarshal string into Go value of type jsonpatch.Patch", 1);
  jp_err(doc, "[1]", "json: cannot unmarshal number into Go value of type jsonpatch.Operation", 1);
  jp_err(doc, "[null]", "Unexpected kind: unknown", 0);
  jp_err(doc, "[{\"op\":\"frob\",\"path\":\"/a\"}]", "Unexpected kind: frob", 0);
  jp_err(doc, "[{\"path\":\"/a\"}]", "Unexpected kind: unknown", 0);
  jp_err(doc, "[{\"op\":\"add\",\"value\":1}]", "add operation failed to decode path: missing value", 0);
  jp_err(doc, "[{\"op\":\"remove\"}]", "remove operation failed to decode path: missing value", 0);
  jp_err(doc, "[{\"op\":\"replace\",\"path\":true,\"value\":1}]",
         "replace operation failed to decode path: json: cannot unmarshal bool into Go value of type string", 0);
  jp_err(doc, "[{\"op\":\"move\",\"path\":\"/b\"}]",
         "move operation failed to decode from: operation, missing from field: missing value", 0);
  jp_err(doc, "[{\"op\":\"copy\",\"from\":\"/a\"}]", "copy operation failed to decode path: missing value", 0);
  jp_err(doc, "[{\"op\":\"test\",\"value\":1}]",
         "test operation failed to decode path: operation missing path field: missing value", 0);
  jp_err(doc, "[{\"op\":\"remove\",\"path\":\"/b\"}]",
         "error in remove for path: '/b': Unable to remove nonexistent key: b: missing value", 0);
  jp_err(doc, "[{\"op\":\"remove\",\"path\":\"/a/3\"}]",
         "error in remove for path: '/a/3': Unable to access invalid index: 3: invalid index referenced", 0);
  jp_err(doc, "[{\"op\":\"remove\",\"path\":\"/a/x\"}]",
         "error in remove for path: '/a/x': strconv.Atoi: parsing \"x\": invalid syntax", 0);
  jp_err(doc, "[{\"op\":\"add\",\"path\":\"/a/4\",\"value\":4}]",
         "error in add for path: '/a/4': Unable to access invalid index: 4: invalid index referenced", 0);
  jp_err(doc, "[{\"op\":\"add\",\"path\":\"/a/x\",\"value\":4}]",
         "error in add for path: '/a/x': value was not a proper array index: 'x': strconv.Atoi: parsing "
         "\"x\": invalid syntax", 0);
  jp_err(doc, "[{\"op\":\"add\",\"path\":\"/a/99999999999999999999\",\"value\":4}]",
         "error in add for path: '/a/99999999999999999999': value was not a proper array index: "
         "'99999999999999999999': strconv.Atoi: parsing \"99999999999999999999\": value out of range", 0);
  jp_err(doc, "[{\"op\":\"replace\",\"path\":\"/a/3\",\"value\":2}]",
         "replace operation does not apply: doc is missing key: /a/3: missing value", 0);
  jp_err(doc, "[{\"op\":\"replace\",\"path\":\"/q/r\",\"value\":2}]",
         "replace operation does not apply: doc is missing path: /q/r: missing value", 0);
  jp_err(doc, "[{\"op\":\"test\",\"path\":\"/a/-\",\"value\":4}]",
         "error in test for path: '/a/-': strconv.Atoi: parsing \"-\": invalid syntax", 0);
  jp_err(doc, "[{\"op\":\"test\",\"path\":\"/o/k/z\",\"value\":1}]",
         "test operation does not apply: is missing path: /o/k/z: missing value", 0);
  jp_err(doc, "[{\"op\":\"move\",\"from\":\"/zz\",\"path\":\"/c\"}]",
         "error in move for path: 'zz': Unable to remove nonexistent key: zz: missing value", 0);
  jp_err(doc, "[{\"op\":\"move\",\"from\":\"/o\",\"path\":\"/o/k2\"}]",
         "move operation does not apply: doc is missing destination path: /o/k2: missing value", 0);
  jp_err(doc, "[{\"op\":\"copy\",\"from\":\"/a/9\",\"path\":\"/b\"}]",
         "error in copy for from: '/a/9': Unable to access invalid index: 9: invalid index referenced", 0);
  jp_err(doc, "[{\"op\":\"copy\",\"from\":\"/a/0\",\"path\":\"/a/7\"}]",
         "error while adding value during copy: Unable to access invalid index: 7: invalid index referenced", 0);
  jp_err(doc, "[{\"op\":\"add\",\"path\":\"\",\"value\":{}}]",
         "add operation does not apply: doc is missing path: \"\": missing value", 0);
  jp_err(doc, "[{\"op\":\"replace\",\"path\":\"\",\"value\":1}]",
         "replace operation value must be object or array: %!w(<nil>)", 0);
  /* operations apply in order; a failure discards the earlier ones */
  jp_err(doc, "[{\"op\":\"add\",\"path\":\"/b\",\"value\":1},{\"op\":\"test\",\"path\":\"/b\",\"value\":2}]",
         "testing value /b failed: test failed", 0);

  /* a short buffer truncates the message */
  json_t *d = J(doc), *o = J("[{\"op\":\"frob\"}]"), *out = NULL;
  char err[8];
  assert_int_equal(kin_sim_json_patch(d, o, &out, err, sizeof(err)), KIN_EINVAL);
  assert_string_equal(err, "Unexpec");
  assert_int_equal(kin_sim_json_patch(d, o, &out, NULL, 0), KIN_EINVAL);
  json_decref(d);
  json_decref(o);
}

/* What kube-apiserver accepts beyond RFC 6902 (evanphx/json-patch v4). */
static void test_sim_patch_JSONPatch_ApiServerExtensions(void **state) {
  (void)state;
  const char *doc = "{\"a\":[1,2,3],\"o\":{\"k\":1,\"n\":null}}";
  /* negative indices count from the end */
  jp_ok(doc, "[{\"op\":\"remove\",\"path\":\"/a/-1\"}]", "{\"a\":[1,2],\"o\":{\"k\":1,\"n\":null}}");
  jp_ok(doc, "[{\"op\":\"add\",\"path\":\"/a/-1\",\"value\":4}]", "{\"a\":[1,2,3,4],\"o\":{\"k\":1,\"n\":null}}");
  jp_ok(doc, "[{\"op\":\"replace\",\"path\":\"/a/-3\",\"value\":0}]", "{\"a\":[0,2,3],\"o\":{\"k\":1,\"n\":null}}");
  jp_ok(doc, "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":9}]", "{\"a\":[1,9,2,3],\"o\":{\"k\":1,\"n\":null}}");
  /* replace of a missing member adds it; add and copy without a value store null */
  jp_ok(doc, "[{\"op\":\"replace\",\"path\":\"/o/z\",\"value\":2}]", "{\"a\":[1,2,3],\"o\":{\"k\":1,\"n\":null,\"z\":2}}");
  jp_ok(doc, "[{\"op\":\"add\",\"path\":\"/o/z\"}]", "{\"a\":[1,2,3],\"o\":{\"k\":1,\"n\":null,\"z\":null}}");
  jp_ok(doc, "[{\"op\":\"copy\",\"from\":\"/o/q\",\"path\":\"/o/z\"}]",
        "{\"a\":[1,2,3],\"o\":{\"k\":1,\"n\":null,\"z\":null}}");
  /* test: a missing member and null are alike; numbers compare by type */
  jp_ok(doc, "[{\"op\":\"test\",\"path\":\"/o/n\",\"value\":null},{\"op\":\"test\",\"path\":\"/o/q\"}]", doc);
  jp_err(doc, "[{\"op\":\"test\",\"path\":\"/o/k\",\"value\":1.0}]", "testing value /o/k failed: test failed", 0);
  jp_err(doc, "[{\"op\":\"test\",\"path\":\"/o/k\"}]", "testing value /o/k failed: test failed", 0);
  /* replace and test at the root act on the whole document */
  jp_ok(doc, "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"x\":1}}]", "{\"x\":1}");
  jp_ok(doc, "[{\"op\":\"test\",\"path\":\"\",\"value\":{\"a\":[1,2,3],\"o\":{\"k\":1,\"n\":null}}}]", doc);
  /* a path without a leading '/' loses its first segment */
  jp_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"a/b\",\"value\":2}]", "{\"a\":1,\"b\":2}");
  /* a null patch is an empty one */
  jp_ok(doc, "null", doc);
  jp_ok(doc, "[]", doc);
}

/* JSON pointers: ~0 and ~1 escapes, "-" appends, the root array. */
static void test_sim_patch_JSONPatch_Pointers(void **state) {
  (void)state;
  jp_ok("{\"a\":{\"b~c/d\":1}}", "[{\"op\":\"replace\",\"path\":\"/a/b~0c~1d\",\"value\":2}]", "{\"a\":{\"b~c/d\":2}}");
  jp_ok("{\"a\":{\"~1\":1,\"/\":2}}", "[{\"op\":\"remove\",\"path\":\"/a/~01\"}]", "{\"a\":{\"/\":2}}");
  jp_ok("{\"a\":{\"~2\":1}}", "[{\"op\":\"remove\",\"path\":\"/a/~2\"}]", "{\"a\":{}}");
  jp_ok("{\"a\":[1,2]}", "[{\"op\":\"move\",\"from\":\"/a/0\",\"path\":\"/a/-\"}]", "{\"a\":[2,1]}");
  jp_ok("{\"a\":[{\"b\":1}]}", "[{\"op\":\"add\",\"path\":\"/a/0/c\",\"value\":1}]", "{\"a\":[{\"b\":1,\"c\":1}]}");
  jp_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/\",\"value\":2}]", "{\"a\":1,\"\":2}");
  jp_ok("[1,2]", "[{\"op\":\"add\",\"path\":\"/0\",\"value\":0}]", "[0,1,2]");
  jp_ok("{\"a\":[1,2]}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b\"},{\"op\":\"add\",\"path\":\"/b/-\",\"value\":3}]",
        "{\"a\":[1,2],\"b\":[1,2,3]}");
  jp_ok("{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
        "[{\"op\":\"add\",\"path\":\"/metadata/labels/c\",\"value\":\"d\"},"
        "{\"op\":\"remove\",\"path\":\"/metadata/labels/a\"},"
        "{\"op\":\"test\",\"path\":\"/metadata/labels\",\"value\":{\"c\":\"d\"}}]",
        "{\"metadata\":{\"labels\":{\"c\":\"d\"}}}");
}

/* ---- strategic merge patch --------------------------------------------- */

static void smp_ok(const char *target, const char *patch, const char *want) {
  json_t *t = J(target), *p = J(patch), *out = NULL;
  json_t *t0 = json_deep_copy(t), *p0 = json_deep_copy(p);
  char err[1024];
  int rc = kin_sim_strategic_merge_patch(t, p, &out, err, sizeof(err));
  if (rc != 0) fail_msg("strategic merge patch %s failed: %s", patch, err);
  assert_json(out, want);
  assert_true(json_equal(t, t0));
  assert_true(json_equal(p, p0));
  json_decref(out);
  json_decref(t);
  json_decref(p);
  json_decref(t0);
  json_decref(p0);
}

static void smp_err(const char *target, const char *patch, const char *want_err, int status) {
  json_t *t = J(target), *p = J(patch), *out = (json_t *)1;
  char err[1024];
  assert_int_equal(kin_sim_strategic_merge_patch(t, p, &out, err, sizeof(err)), KIN_EINVAL);
  assert_null(out);
  if (strcmp(err, want_err) != 0) fail_msg("error\n  got  %s\n  want %s", err, want_err);
  assert_int_equal(kin_sim_strategic_merge_patch_status(err), status);
  json_decref(t);
  json_decref(p);
}

#define POD(spec) "{\"kind\":\"Pod\",\"spec\":" spec "}"

/* containers merge by name: a new one comes first (patch order, then the
 * live order), an existing one is merged in place */
static void test_sim_patch_SMP_ContainersMergeByName(void **state) {
  (void)state;
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"y\"}]}}",
         POD("{\"containers\":[{\"name\":\"b\",\"image\":\"y\"},{\"name\":\"a\",\"image\":\"x\"}]}"));
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"z\"}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"z\"}]}"));
  /* the same in a Deployment's pod template, and initContainers */
  smp_ok("{\"kind\":\"Deployment\",\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}],"
         "\"initContainers\":[{\"name\":\"i\"}]}}}}",
         "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"},{\"name\":\"s\"}],"
         "\"initContainers\":[{\"name\":\"j\"}]}}}}",
         "{\"kind\":\"Deployment\",\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"},"
         "{\"name\":\"s\"}],\"initContainers\":[{\"name\":\"j\"},{\"name\":\"i\"}]}}}}");
}

/* env merges by name inside a merged container; ports by containerPort */
static void test_sim_patch_SMP_EnvAndPortsMerge(void **state) {
  (void)state;
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
             "{\"name\":\"B\",\"value\":\"2\"}]}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"B\",\"value\":\"3\"},{\"name\":\"C\",\"value\":\"4\"}]}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
             "{\"name\":\"B\",\"value\":\"3\"},{\"name\":\"C\",\"value\":\"4\"}]}]}"));
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"name\":\"http\"},{\"containerPort\":443}]}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"},"
         "{\"containerPort\":8080}]}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"name\":\"http\",\"protocol\":\"TCP\"},"
             "{\"containerPort\":8080},{\"containerPort\":443}]}]}"));
}

/* "$patch": "delete" removes the list element with that merge key */
static void test_sim_patch_SMP_PatchDeleteListElement(void **state) {
  (void)state;
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}",
         POD("{\"containers\":[{\"name\":\"b\",\"image\":\"y\"}]}"));
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"mountPath\":\"/a\",\"name\":\"v1\"},"
             "{\"mountPath\":\"/b\",\"name\":\"v2\"}]}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"mountPath\":\"/b\",\"$patch\":\"delete\"},"
         "{\"mountPath\":\"/c\",\"name\":\"v3\"}]}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"mountPath\":\"/c\",\"name\":\"v3\"},"
             "{\"mountPath\":\"/a\",\"name\":\"v1\"}]}]}"));
  smp_ok("{\"kind\":\"Service\",\"spec\":{\"ports\":[{\"port\":80},{\"port\":443}]}}",
         "{\"spec\":{\"ports\":[{\"port\":443,\"$patch\":\"delete\"}]}}",
         "{\"kind\":\"Service\",\"spec\":{\"ports\":[{\"port\":80}]}}");
  /* every element with the key goes; the delete comes before the merge */
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"a\",\"image\":\"y\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}", POD("{\"containers\":[]}"));
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"},{\"name\":\"a\",\"image\":\"new\"}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"image\":\"new\"}]}"));
}

/* "$patch": "replace" in a map or a list; "$patch": "delete" on a map */
static void test_sim_patch_SMP_PatchReplaceAndDelete(void **state) {
  (void)state;
  const char *pod = "{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}";
  smp_ok(pod, "{\"metadata\":{\"labels\":{\"$patch\":\"replace\",\"c\":\"3\"}}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"c\":\"3\"}}}");
  smp_ok(pod, "{\"metadata\":{\"labels\":{\"$patch\":\"delete\"}}}", "{\"kind\":\"Pod\",\"metadata\":{\"labels\":{}}}");
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"z\"},{\"$patch\":\"replace\"}]}}",
         POD("{\"containers\":[{\"name\":\"c\",\"image\":\"z\"}]}"));
  /* at the root */
  smp_ok(POD("{\"nodeName\":\"a\"}"), "{\"$patch\":\"replace\",\"spec\":{\"hostname\":\"c\"}}",
         "{\"spec\":{\"hostname\":\"c\"}}");
  smp_ok(POD("{\"nodeName\":\"a\"}"), "{\"$patch\":\"delete\"}", "{}");
  /* a new field holding a directive is not added */
  smp_ok(POD("{\"nodeName\":\"a\"}"), "{\"spec\":{\"x\":{\"$patch\":\"delete\"}}}", POD("{\"nodeName\":\"a\"}"));
}

/* $deleteFromPrimitiveList on finalizers; finalizers merge as a set */
static void test_sim_patch_SMP_DeleteFromPrimitiveListFinalizers(void **state) {
  (void)state;
  const char *pod = "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}";
  smp_ok(pod, "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}");
  smp_ok(pod, "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a\",\"c\",\"z\"],\"finalizers\":[\"e\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"e\",\"b\"]}}");
  /* union: new items first in patch order, existing ones keep their place */
  smp_ok(pod, "{\"metadata\":{\"finalizers\":[\"d\",\"b\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"d\",\"a\",\"b\",\"c\"]}}");
  smp_ok(pod, "{\"metadata\":{\"finalizers\":[\"c\",\"a\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"b\",\"c\",\"a\"]}}");
  /* on a ConfigMap too (ObjectMeta is common), and podCIDRs on a Node */
  smp_ok("{\"kind\":\"ConfigMap\",\"metadata\":{\"finalizers\":[\"x\"]}}", "{\"metadata\":{\"finalizers\":[\"y\"]}}",
         "{\"kind\":\"ConfigMap\",\"metadata\":{\"finalizers\":[\"y\",\"x\"]}}");
  smp_ok("{\"kind\":\"Node\",\"spec\":{\"podCIDRs\":[\"10.0.0.0/24\"]}}", "{\"spec\":{\"podCIDRs\":[\"10.1.0.0/24\"]}}",
         "{\"kind\":\"Node\",\"spec\":{\"podCIDRs\":[\"10.1.0.0/24\",\"10.0.0.0/24\"]}}");
  /* Namespace spec.finalizers has no strategy: replaced */
  smp_ok("{\"kind\":\"Namespace\",\"spec\":{\"finalizers\":[\"kubernetes\"]}}", "{\"spec\":{\"finalizers\":[\"x\"]}}",
         "{\"kind\":\"Namespace\",\"spec\":{\"finalizers\":[\"x\"]}}");
  /* the whole list deleted by null */
  smp_ok(pod, "{\"metadata\":{\"finalizers\":null}}", "{\"kind\":\"Pod\",\"metadata\":{}}");
}

/* null deletes a field; nulls in new subtrees are dropped */
static void test_sim_patch_SMP_NullDeletesField(void **state) {
  (void)state;
  smp_ok("{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}",
         "{\"metadata\":{\"labels\":{\"a\":null,\"c\":\"3\"}}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"b\":\"2\",\"c\":\"3\"}}}");
  smp_ok(POD("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":null,\"gpu\":\"1\"}}}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"memory\":\"1Gi\",\"gpu\":\"1\"}}}]}"));
  smp_ok(POD("{\"nodeName\":\"a\"}"), "{\"spec\":{\"nodeName\":null,\"hostname\":null}}", POD("{}"));
  /* added list elements and new fields are stored as the API server
   * stores them: no null members, no directive keys */
  smp_ok(POD("{\"containers\":[{\"name\":\"a\"}]}"),
         "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":null,\"env\":[{\"name\":\"x\",\"value\":\"1\"}]}]}}",
         POD("{\"containers\":[{\"name\":\"b\",\"env\":[{\"name\":\"x\",\"value\":\"1\"}]},{\"name\":\"a\"}]}"));
  smp_ok("{\"kind\":\"Pod\"}",
         "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":null,\"env\":[{\"name\":\"x\",\"$patch\":\"delete\"},"
         "{\"name\":\"y\",\"value\":null}]}]}}",
         POD("{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"y\"}]}]}"));
}

/* lists without a patch strategy (or unknown) are replaced */
static void test_sim_patch_SMP_ListWithoutMergeKeyReplaced(void **state) {
  (void)state;
  smp_ok(POD("{\"tolerations\":[{\"key\":\"a\",\"operator\":\"Exists\"},{\"key\":\"b\"}]}"),
         "{\"spec\":{\"tolerations\":[{\"key\":\"c\"}]}}", POD("{\"tolerations\":[{\"key\":\"c\"}]}"));
  smp_ok("{\"kind\":\"Deployment\",\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}}}",
         "{\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}}}",
         "{\"kind\":\"Deployment\",\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"b\",\"operator\":\"Exists\"}]}}}");
  smp_ok("{\"kind\":\"StatefulSet\",\"spec\":{\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"a\"}}]}}",
         "{\"spec\":{\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"b\"}}]}}",
         "{\"kind\":\"StatefulSet\",\"spec\":{\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"b\"}}]}}");
  smp_ok("{\"kind\":\"Frob\",\"spec\":{\"items\":[{\"name\":\"a\"}]}}", "{\"spec\":{\"items\":[{\"name\":\"b\"}]}}",
         "{\"kind\":\"Frob\",\"spec\":{\"items\":[{\"name\":\"b\"}]}}");
  /* Pod containers live under spec: a "containers" elsewhere is unknown */
  smp_ok("{\"kind\":\"Pod\",\"containers\":[{\"name\":\"a\"}]}", "{\"containers\":[{\"name\":\"b\"}]}",
         "{\"kind\":\"Pod\",\"containers\":[{\"name\":\"b\"}]}");
}

/* the merge keys of the other kinds the sim serves */
static void test_sim_patch_SMP_MergeKeysByKind(void **state) {
  (void)state;
  smp_ok("{\"kind\":\"Pod\",\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"a\"},{\"uid\":\"2\",\"name\":\"b\"}]}}",
         "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"2\",\"name\":\"bb\",\"controller\":true}]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"a\"},"
         "{\"uid\":\"2\",\"name\":\"bb\",\"controller\":true}]}}");
  smp_ok("{\"kind\":\"Pod\",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
         "{\"type\":\"Initialized\",\"status\":\"True\"}]}}",
         "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
         "{\"kind\":\"Pod\",\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
         "{\"type\":\"Initialized\",\"status\":\"True\"}]}}");
  smp_ok(POD("{\"imagePullSecrets\":[{\"name\":\"a\"}],\"hostAliases\":[{\"ip\":\"1.1.1.1\",\"hostnames\":[\"a\"]}]}"),
         "{\"spec\":{\"imagePullSecrets\":[{\"name\":\"b\"}],\"hostAliases\":[{\"ip\":\"1.1.1.1\",\"hostnames\":[\"b\"]},"
         "{\"ip\":\"2.2.2.2\"}]}}",
         POD("{\"imagePullSecrets\":[{\"name\":\"b\"},{\"name\":\"a\"}],\"hostAliases\":[{\"ip\":\"1.1.1.1\","
             "\"hostnames\":[\"b\"]},{\"ip\":\"2.2.2.2\"}]}"));
  smp_ok("{\"kind\":\"Service\",\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":8080},{\"port\":443}]}}",
         "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":9090},{\"port\":53,\"protocol\":\"UDP\"}]}}",
         "{\"kind\":\"Service\",\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":9090},{\"port\":53,\"protocol\":\"UDP\"},"
         "{\"port\":443}]}}");
  smp_ok("{\"kind\":\"Node\",\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"1.1.1.1\"}],"
         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
         "{\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n\"}],"
         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
         "{\"kind\":\"Node\",\"status\":{\"addresses\":[{\"type\":\"Hostname\",\"address\":\"n\"},"
         "{\"type\":\"InternalIP\",\"address\":\"1.1.1.1\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");
  smp_ok("{\"kind\":\"ServiceAccount\",\"secrets\":[{\"name\":\"a\"}]}", "{\"secrets\":[{\"name\":\"b\"}]}",
         "{\"kind\":\"ServiceAccount\",\"secrets\":[{\"name\":\"b\"},{\"name\":\"a\"}]}");
  smp_ok("{\"kind\":\"Deployment\",\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"True\"}]}}",
         "{\"status\":{\"conditions\":[{\"type\":\"Progressing\",\"status\":\"True\"}]}}",
         "{\"kind\":\"Deployment\",\"status\":{\"conditions\":[{\"type\":\"Progressing\",\"status\":\"True\"},"
         "{\"type\":\"Available\",\"status\":\"True\"}]}}");
  /* maps merge key by key */
  smp_ok("{\"kind\":\"ConfigMap\",\"data\":{\"a\":\"1\",\"b\":\"2\"}}", "{\"data\":{\"a\":null,\"c\":\"3\"}}",
         "{\"kind\":\"ConfigMap\",\"data\":{\"b\":\"2\",\"c\":\"3\"}}");
}

/* $setElementOrder/<list>: the order it names wins; the items it does
 * not name keep their live order */
static void test_sim_patch_SMP_SetElementOrder(void **state) {
  (void)state;
  const char *abc = POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"},"
                        "{\"name\":\"c\",\"image\":\"z\"}]}");
  smp_ok(abc, "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c\"},{\"name\":\"a\"},{\"name\":\"b\"}]}}",
         POD("{\"containers\":[{\"name\":\"c\",\"image\":\"z\"},{\"name\":\"a\",\"image\":\"x\"},"
             "{\"name\":\"b\",\"image\":\"y\"}]}"));
  smp_ok(abc,
         "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c\"},{\"name\":\"d\"},{\"name\":\"a\"}],"
         "\"containers\":[{\"name\":\"d\",\"image\":\"w\"}]}}",
         POD("{\"containers\":[{\"name\":\"b\",\"image\":\"y\"},{\"name\":\"c\",\"image\":\"z\"},"
             "{\"name\":\"d\",\"image\":\"w\"},{\"name\":\"a\",\"image\":\"x\"}]}"));
  const char *fin = "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}";
  smp_ok(fin, "{\"metadata\":{\"$setElementOrder/finalizers\":[\"c\",\"b\",\"a\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"c\",\"b\",\"a\"]}}");
  smp_ok(fin, "{\"metadata\":{\"$setElementOrder/finalizers\":[\"c\",\"d\",\"a\"],\"finalizers\":[\"d\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"b\",\"c\",\"d\",\"a\"]}}");
  smp_ok(fin, "{\"metadata\":{\"$setElementOrder/finalizers\":[\"c\",\"a\"],\"$deleteFromPrimitiveList/finalizers\":[\"b\"]}}",
         "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"c\",\"a\"]}}");
  /* the patch list must follow the order list */
  smp_err(abc,
          "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c\"},{\"name\":\"a\"}],"
          "\"containers\":[{\"name\":\"a\",\"image\":\"q\"},{\"name\":\"c\",\"image\":\"r\"}]}}",
          "The order in patch list:\n[map[image:q name:a] map[image:r name:c]]\n doesn't match $setElementOrder "
          "list:\n[map[name:c] map[name:a]]\n",
          500);
  smp_err(abc, "{\"spec\":{\"$setElementOrder\":[{\"name\":\"a\"}]}}", "invalid patch format of setElementOrder list", 400);
  smp_err(abc, "{\"spec\":{\"$setElementOrder/containers\":\"x\"}}",
          "expected a []interface {}, but received a string", 500);
}

/* $retainKeys clears the fields it does not list */
static void test_sim_patch_SMP_RetainKeys(void **state) {
  (void)state;
  smp_ok(POD("{\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}},{\"name\":\"v2\",\"configMap\":{\"name\":\"c\"}}]}"),
         "{\"spec\":{\"volumes\":[{\"name\":\"v2\",\"secret\":{\"secretName\":\"s\"},\"$retainKeys\":[\"name\",\"secret\"]}]}}",
         POD("{\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}},{\"name\":\"v2\",\"secret\":{\"secretName\":\"s\"}}]}"));
  smp_ok("{\"kind\":\"Deployment\",\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1}}}}",
         "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\"}}}",
         "{\"kind\":\"Deployment\",\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}");
  smp_err(POD("{\"volumes\":[{\"name\":\"v1\",\"emptyDir\":{}}]}"),
          "{\"spec\":{\"volumes\":[{\"name\":\"v1\",\"secret\":{\"secretName\":\"s\"},\"$retainKeys\":[\"name\"]}]}}",
          "invalid patch format of retainKeys", 400);
}

/* the errors, with the API server's messages and statuses */
static void test_sim_patch_SMP_Errors(void **state) {
  (void)state;
  const char *ab = POD("{\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"y\"}]}");
  smp_err(ab, "{\"spec\":{\"containers\":[{\"$patch\":\"merge\"}]}}",
          "merging lists cannot yet be specified in the patch", 500);
  smp_err(ab, "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"frob\"}]}}",
          "unknown patch type: frob in map: map[$patch:frob name:a]", 500);
  smp_err(ab, "{\"spec\":{\"containers\":[{\"image\":\"q\"}]}}",
          "map: map[image:q] does not contain declared merge key: name", 500);
  smp_err("{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"a\":\"1\"}}}",
          "{\"metadata\":{\"labels\":{\"$patch\":\"merge\",\"c\":\"1\"}}}",
          "unknown patch type: merge in map: map[$patch:merge c:1]", 500);
  smp_err(POD("{\"nodeName\":\"a\"}"), "{\"spec\":{\"$patch\":1}}", "unknown patch type: %!s(int64=1) in map: map[$patch:1]",
          500);
  const char *fin = "{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}";
  smp_err(fin, "{\"metadata\":{\"$deleteFromPrimitiveList\":[\"a\"]}}", "invalid patch format of primitive list", 400);
  smp_err(fin, "{\"metadata\":{\"finalizers\":[1]}}", "list element types are not identical: [[a b c] [1]]", 500);
  smp_err("{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[]}}", "{\"metadata\":{\"finalizers\":[{\"a\":1}]}}",
          "cannot merge lists without merge key for string", 500);
  smp_err("{\"kind\":\"Pod\",\"metadata\":{\"finalizers\":[[\"a\"]]}}", "{\"metadata\":{\"finalizers\":[[\"b\"]]}}",
          "lists of lists are not supported", 422);
  smp_err(POD("{}"), "[1]", "json: cannot unmarshal array into Go value of type map[string]interface {}", 400);
  smp_err("[]", "{}", "invalid JSON document", 400);
  assert_int_equal(kin_sim_strategic_merge_patch_status("patch content doesn't match retainKeys list"), 422);
  assert_int_equal(kin_sim_strategic_merge_patch_status("strategic merge patch format is not supported"), 400);
}

/* Found by spec/fuzz/fuzz_patch.c (spec/fuzz/regressions/patch/): a kind
 * without a schema has no merge key, and $setElementOrder on its list of
 * maps fails as Go's does (merge key ""), instead of formatting NULL. */
static void test_sim_patch_SMP_SetElementOrderUnknownKind(void **state) {
  (void)state;
  smp_err("{\"kind\":\"Frob\",\"spec\":{\"c\":[{\"name\":\"a\"}]}}",
          "{\"spec\":{\"$setElementOrder/c\":[{\"name\":\"b\"}],\"c\":[{\"name\":\"b\"}]}}",
          "map: map[name:b] does not contain declared merge key: ", 500);
}

KIN_SUITE(sim_patch,
          cmocka_unit_test(test_sim_patch_MergePatch_RFC7386AppendixA),
          cmocka_unit_test(test_sim_patch_MergePatch_Object),
          cmocka_unit_test(test_sim_patch_JSONPatch_RFC6902AppendixA),
          cmocka_unit_test(test_sim_patch_JSONPatch_RFC6902AppendixAErrors),
          cmocka_unit_test(test_sim_patch_JSONPatch_Errors),
          cmocka_unit_test(test_sim_patch_JSONPatch_ApiServerExtensions),
          cmocka_unit_test(test_sim_patch_JSONPatch_Pointers),
          cmocka_unit_test(test_sim_patch_SMP_ContainersMergeByName),
          cmocka_unit_test(test_sim_patch_SMP_EnvAndPortsMerge),
          cmocka_unit_test(test_sim_patch_SMP_PatchDeleteListElement),
          cmocka_unit_test(test_sim_patch_SMP_PatchReplaceAndDelete),
          cmocka_unit_test(test_sim_patch_SMP_DeleteFromPrimitiveListFinalizers),
          cmocka_unit_test(test_sim_patch_SMP_NullDeletesField),
          cmocka_unit_test(test_sim_patch_SMP_ListWithoutMergeKeyReplaced),
          cmocka_unit_test(test_sim_patch_SMP_MergeKeysByKind),
          cmocka_unit_test(test_sim_patch_SMP_SetElementOrder),
          cmocka_unit_test(test_sim_patch_SMP_RetainKeys),
          cmocka_unit_test(test_sim_patch_SMP_Errors),
          cmocka_unit_test(test_sim_patch_SMP_SetElementOrderUnknownKind))
