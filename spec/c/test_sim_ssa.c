/* test_sim_ssa.c -- the field manager of kinformer.sim's server-side apply
 * (csrc/sim/ssa_*.c) without a server: field set algebra, the field set
 * of an object by its schema (list-maps, sets, atomic maps, deduced
 * types), compare, merge and prune, and the managedFields of Update and
 * Apply operations with their conflicts. The expected FieldsV1 values are
 * the ones kube-apiserver v1.36.3 wrote for the same writes. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssa.h"

#include "json_assert.h"

/* A Deployment-like schema: containers a list-map by name, ports by
 * containerPort+protocol (protocol defaults to TCP), finalizers a set,
 * selector an atomic map, labels a map, args an atomic list. */
static const char *DEFS =
    "{\"Deploy\":{\"type\":\"object\",\"properties\":{"
    "  \"apiVersion\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},"
    "  \"metadata\":{\"allOf\":[{\"$ref\":\"#/components/schemas/Meta\"}]},"
    "  \"spec\":{\"allOf\":[{\"$ref\":\"#/components/schemas/Spec\"}]},"
    "  \"status\":{\"type\":\"object\",\"properties\":{\"ready\":{\"type\":\"integer\"}}}}},"
    " \"Meta\":{\"type\":\"object\",\"properties\":{"
    "  \"name\":{\"type\":\"string\"},\"resourceVersion\":{\"type\":\"string\"},"
    "  \"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "  \"finalizers\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
    "                \"x-kubernetes-list-type\":\"set\"}}},"
    " \"Spec\":{\"type\":\"object\",\"properties\":{"
    "  \"replicas\":{\"type\":\"integer\"},"
    "  \"selector\":{\"type\":\"object\",\"x-kubernetes-map-type\":\"atomic\","
    "              \"properties\":{\"matchLabels\":{\"type\":\"object\","
    "              \"additionalProperties\":{\"type\":\"string\"}}}},"
    "  \"containers\":{\"type\":\"array\",\"items\":{\"allOf\":[{\"$ref\":"
    "   \"#/components/schemas/Container\"}]},\"x-kubernetes-patch-strategy\":\"merge\","
    "   \"x-kubernetes-patch-merge-key\":\"name\"}}},"
    " \"Container\":{\"type\":\"object\",\"properties\":{"
    "  \"name\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"
    "  \"args\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "  \"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
    "   \"x-kubernetes-list-map-keys\":[\"containerPort\",\"protocol\"],\"items\":{"
    "   \"type\":\"object\",\"properties\":{\"containerPort\":{\"type\":\"integer\"},"
    "   \"protocol\":{\"type\":\"string\",\"default\":\"TCP\"}}}}}}}";

typedef struct {
  json_t *defs;
  kin__ssa_schema s;
} fixture;

static fixture fx_new(void) {
  fixture f;
  f.defs = J(DEFS);
  f.s.defs = f.defs;
  f.s.root = json_object_get(f.defs, "Deploy");
  return f;
}

static void test_sim_ssa_SetAlgebra(void **state) {
  (void)state;
  json_t *a = json_object();
  const char *p1[] = {"f:spec", "f:replicas"};
  const char *p2[] = {"f:spec"};
  const char *p3[] = {"f:data", "f:a"};
  assert_int_equal(kin__ssa_set_insert(a, p1, 2), 0);
  assert_json(a, "{\"f:spec\":{\"f:replicas\":{}}}");
  assert_false(kin__ssa_set_is_member(json_object_get(a, "f:spec")));
  kin__ssa_set_insert(a, p2, 1); /* spec itself becomes a member: "." */
  assert_json(a, "{\"f:spec\":{\".\":{},\"f:replicas\":{}}}");
  json_t *b = json_object();
  kin__ssa_set_insert(b, p1, 2);
  kin__ssa_set_insert(b, p3, 2);
  json_t *i = kin__ssa_set_intersection(a, b);
  assert_json(i, "{\"f:spec\":{\"f:replicas\":{}}}");
  kin__ssa_set_union(a, b);
  assert_json(a, "{\"f:spec\":{\".\":{},\"f:replicas\":{}},\"f:data\":{\"f:a\":{}}}");
  kin__ssa_set_difference(a, i); /* replicas goes, spec stays a member */
  assert_json(a, "{\"f:spec\":{},\"f:data\":{\"f:a\":{}}}");
  kin__ssa_set_difference(a, b); /* data.a goes, and with it data */
  assert_json(a, "{\"f:spec\":{}}");
  assert_false(kin__ssa_set_empty(a));
  json_t *spec = J("{\"f:spec\":{}}");
  json_t *deep = J("{\"f:spec\":{\"f:x\":{\"f:y\":{}}},\"f:other\":{}}");
  kin__ssa_set_recursive_difference(deep, spec);
  assert_json(deep, "{\"f:other\":{}}");
  kin__ssa_set_difference(a, spec);
  assert_true(kin__ssa_set_empty(a));
  json_decref(a);
  json_decref(b);
  json_decref(i);
  json_decref(spec);
  json_decref(deep);
}

typedef struct {
  char buf[1024];
} paths_acc;

static int collect(void *ud, const char *path) {
  paths_acc *p = ud;
  size_t n = strlen(p->buf);
  snprintf(p->buf + n, sizeof(p->buf) - n, "%s%s", n ? " " : "", path);
  return 0;
}

static void test_sim_ssa_SetPathsPrintAsConflicts(void **state) {
  (void)state;
  json_t *set = J("{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},"
                  "\"f:image\":{}}},\"f:replicas\":{}},\"f:metadata\":{\"f:finalizers\":"
                  "{\"v:\\\"x\\\"\":{}}}}");
  paths_acc p = {""};
  kin__ssa_set_paths(set, collect, &p);
  /* fieldpath.Set.Iterate: a level's members before its children's */
  assert_string_equal(p.buf, ".metadata.finalizers[=\"x\"] .spec.replicas "
                             ".spec.containers[name=\"c\"] .spec.containers[name=\"c\"].image");
  json_decref(set);
}

static void test_sim_ssa_ToSetFollowsSchema(void **state) {
  (void)state;
  fixture f = fx_new();
  json_t *obj = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deploy\",\"metadata\":{\"name\":\"d\","
                  "\"labels\":{\"app\":\"d\"},\"finalizers\":[\"a/b\"]},\"spec\":{\"replicas\":2,"
                  "\"selector\":{\"matchLabels\":{\"app\":\"d\"}},\"containers\":[{\"name\":\"c\","
                  "\"image\":\"i\",\"args\":[\"x\"],\"ports\":[{\"containerPort\":80}]}],"
                  "\"extra\":{\"k\":{\"v\":1}}}}");
  char err[256];
  json_t *set = kin__ssa_to_set(&f.s, obj, err, sizeof(err));
  assert_non_null(set);
  assert_json(set,
              "{\"f:apiVersion\":{},\"f:kind\":{},\"f:metadata\":{\"f:name\":{},\"f:labels\":"
              "{\"f:app\":{}},\"f:finalizers\":{\"v:\\\"a/b\\\"\":{}}},\"f:spec\":{\"f:replicas\":{},"
              "\"f:selector\":{},\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},"
              "\"f:name\":{},\"f:image\":{},\"f:args\":{},\"f:ports\":{"
              "\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},"
              "\"f:containerPort\":{}}}}},"
              /* an undeclared field is deduced: every key a member */
              "\"f:extra\":{\".\":{},\"f:k\":{\".\":{},\"f:v\":{}}}}}");
  json_decref(set);
  json_t *bad = J("{\"spec\":{\"containers\":[{\"image\":\"i\"}]}}");
  assert_null(kin__ssa_to_set(&f.s, bad, err, sizeof(err)));
  assert_string_equal(err, "associative list with keys has an element that omits key field "
                           "\"name\" (and doesn't have default value)");
  json_decref(bad);
  json_decref(obj);
  json_decref(f.defs);
}

static void test_sim_ssa_CompareAddsModifiesRemoves(void **state) {
  (void)state;
  fixture f = fx_new();
  json_t *a = J("{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1,\"containers\":["
                "{\"name\":\"c\",\"image\":\"i1\"},{\"name\":\"gone\",\"image\":\"g\"}]}}");
  json_t *b = J("{\"metadata\":{\"name\":\"d\",\"labels\":{\"x\":\"y\"}},\"spec\":{\"replicas\":"
                "3,\"containers\":[{\"name\":\"c\",\"image\":\"i2\"}]}}");
  json_t *added, *modified, *removed;
  char err[256];
  assert_int_equal(kin__ssa_compare(&f.s, a, b, &added, &modified, &removed, err, sizeof(err)), 0);
  assert_json(added, "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:x\":{}}}}");
  assert_json(modified, "{\"f:spec\":{\"f:replicas\":{},\"f:containers\":{"
                        "\"k:{\\\"name\\\":\\\"c\\\"}\":{\"f:image\":{}}}}}");
  assert_json(removed, "{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"gone\\\"}\":"
                       "{\".\":{},\"f:name\":{},\"f:image\":{}}}}}");
  json_decref(added);
  json_decref(modified);
  json_decref(removed);
  json_decref(a);
  json_decref(b);
  json_decref(f.defs);
}

static void test_sim_ssa_MergeListMapsAndAtomics(void **state) {
  (void)state;
  fixture f = fx_new();
  json_t *live = J("{\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"1\",\"b\":\"2\"}},"
                   "\"containers\":[{\"name\":\"a\",\"image\":\"ia\",\"args\":[\"1\",\"2\"]},"
                   "{\"name\":\"b\",\"image\":\"ib\"}]},\"metadata\":{\"finalizers\":[\"x\"]}}");
  json_t *cfg = J("{\"spec\":{\"selector\":{\"matchLabels\":{\"c\":\"3\"}},\"containers\":["
                  "{\"name\":\"b\",\"image\":\"ib2\"},{\"name\":\"a\",\"args\":[\"3\"]},"
                  "{\"name\":\"n\",\"image\":\"in\"}]},\"metadata\":{\"finalizers\":[\"y\"]}}");
  json_t *m = kin__ssa_merge(&f.s, live, cfg);
  /* atomic selector and args replaced; containers merged by name in the
   * applied order; the finalizer set is a union */
  assert_json(m, "{\"spec\":{\"selector\":{\"matchLabels\":{\"c\":\"3\"}},\"containers\":["
                 "{\"name\":\"b\",\"image\":\"ib2\"},{\"name\":\"a\",\"image\":\"ia\","
                 "\"args\":[\"3\"]},{\"name\":\"n\",\"image\":\"in\"}]},\"metadata\":"
                 "{\"finalizers\":[\"x\",\"y\"]}}");
  json_decref(m);
  json_decref(live);
  json_decref(cfg);
  json_decref(f.defs);
}

static kin__ssa_op op_for(const kin__ssa_schema *s, const char *manager) {
  kin__ssa_op op = {s, manager, "apps/v1", "", "2026-01-01T00:00:00Z", NULL, 0, 0};
  return op;
}

static const json_t *entry(const json_t *obj, size_t i) {
  return json_array_get(json_object_get(json_object_get(obj, "metadata"), "managedFields"), i);
}

static const json_t *entry_of(const json_t *obj, const char *manager) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "managedFields"), i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "manager")), manager)) return e;
  }
  return NULL;
}

static void test_sim_ssa_UpdateTakesChangedFields(void **state) {
  (void)state;
  fixture f = fx_new();
  kin__ssa_op op = op_for(&f.s, "kubectl");
  json_t *zero = J("{\"metadata\":{},\"spec\":{}}");
  json_t *created = J("{\"metadata\":{\"name\":\"d\",\"labels\":{\"a\":\"1\"}},\"spec\":"
                      "{\"replicas\":1}}");
  kin__ssa_update(&op, zero, created);
  assert_int_equal(json_array_size(json_object_get(json_object_get(created, "metadata"),
                                                   "managedFields")), 1);
  assert_json(entry(created, 0),
              "{\"manager\":\"kubectl\",\"operation\":\"Update\",\"apiVersion\":\"apps/v1\","
              "\"time\":\"2026-01-01T00:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":"
              "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{}}},\"f:spec\":{\"f:replicas\":{}}}}");
  /* another manager changes replicas: it moves; a no-op keeps everything */
  json_t *next = json_deep_copy(created);
  json_object_set_new(json_object_get(next, "spec"), "replicas", json_integer(5));
  json_object_del(json_object_get(next, "metadata"), "managedFields");
  kin__ssa_op op2 = op_for(&f.s, "hpa");
  kin__ssa_update(&op2, created, next);
  /* entries sort by operation, time, then manager: hpa first */
  assert_string_equal(json_string_value(json_object_get(entry(next, 0), "manager")), "hpa");
  assert_json(json_object_get(entry(next, 0), "fieldsV1"), "{\"f:spec\":{\"f:replicas\":{}}}");
  assert_json(json_object_get(entry(next, 1), "fieldsV1"),
              "{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:a\":{}}}}");
  json_t *same = json_deep_copy(next);
  kin__ssa_update(&op, next, same);
  assert_true(json_equal(same, next));
  /* an empty managedFields list sent resets them */
  json_t *reset = json_deep_copy(next);
  json_object_set_new(json_object_get(reset, "metadata"), "managedFields", json_array());
  kin__ssa_update(&op, next, reset);
  assert_null(json_object_get(json_object_get(reset, "metadata"), "managedFields"));
  json_decref(zero);
  json_decref(created);
  json_decref(next);
  json_decref(same);
  json_decref(reset);
  json_decref(f.defs);
}

/* capmanagers.go: an 11th Update manager merges the two oldest into
 * "ancient-changes", which takes the later one's time. */
static void test_sim_ssa_UpdateManagersCappedAtTen(void **state) {
  (void)state;
  fixture f = fx_new();
  json_t *obj = J("{\"metadata\":{\"name\":\"d\",\"labels\":{}}}");
  for (int i = 0; i < 11; i++) {
    char mgr[16], now[32];
    snprintf(mgr, sizeof(mgr), "m%02d", i);
    snprintf(now, sizeof(now), "2026-01-01T00:00:%02dZ", i);
    kin__ssa_op op = {&f.s, mgr, "apps/v1", "", now, NULL, 0, 0};
    json_t *next = json_deep_copy(obj);
    json_object_set_new(json_object_get(json_object_get(next, "metadata"), "labels"), mgr,
                        json_string("x"));
    kin__ssa_update(&op, obj, next);
    json_decref(obj);
    obj = next;
  }
  const json_t *mfs = json_object_get(json_object_get(obj, "metadata"), "managedFields");
  assert_int_equal(json_array_size(mfs), 10);
  const json_t *old = entry_of(obj, "ancient-changes");
  assert_non_null(old);
  assert_null(entry_of(obj, "m00"));
  assert_null(entry_of(obj, "m01"));
  assert_string_equal(json_string_value(json_object_get(old, "time")), "2026-01-01T00:00:01Z");
  assert_json(json_object_get(old, "fieldsV1"),
              "{\"f:metadata\":{\"f:labels\":{\"f:m00\":{},\"f:m01\":{}}}}");
  assert_non_null(entry_of(obj, "m10"));
  json_decref(obj);
  json_decref(f.defs);
}

static void test_sim_ssa_ApplyConflictsForceAndPrune(void **state) {
  (void)state;
  fixture f = fx_new();
  kin__ssa_op a = op_for(&f.s, "alice");
  int code;
  json_t *causes;
  char err[1024];
  json_t *cfg1 = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deploy\",\"metadata\":{\"name\":\"d\"},"
                   "\"spec\":{\"replicas\":1,\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
  json_t *o1 = kin__ssa_apply(&a, NULL, cfg1, &code, &causes, err, sizeof(err));
  assert_non_null(o1);
  assert_json(json_object_get(entry(o1, 0), "fieldsV1"),
              "{\"f:spec\":{\"f:replicas\":{},\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":"
              "{\".\":{},\"f:name\":{},\"f:image\":{}}}}}");
  assert_string_equal(json_string_value(json_object_get(entry(o1, 0), "operation")), "Apply");
  /* bob applies a different replicas: 409 naming the field */
  kin__ssa_op b = op_for(&f.s, "bob");
  json_t *cfg2 = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deploy\",\"metadata\":{\"name\":\"d\"},"
                   "\"spec\":{\"replicas\":3}}");
  assert_null(kin__ssa_apply(&b, o1, cfg2, &code, &causes, err, sizeof(err)));
  assert_int_equal(code, 409);
  assert_string_equal(err, "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas");
  assert_json(causes, "[{\"reason\":\"FieldManagerConflict\",\"message\":\"conflict with "
                      "\\\"alice\\\"\",\"field\":\".spec.replicas\"}]");
  json_decref(causes);
  /* the same value is no conflict: both own it */
  json_t *cfg_same = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deploy\",\"metadata\":{\"name\":"
                       "\"d\"},\"spec\":{\"replicas\":1}}");
  json_t *shared = kin__ssa_apply(&b, o1, cfg_same, &code, &causes, err, sizeof(err));
  assert_non_null(shared);
  assert_json(json_object_get(entry_of(shared, "bob"), "fieldsV1"),
              "{\"f:spec\":{\"f:replicas\":{}}}");
  /* the object did not change: bob's new entry has no time yet */
  assert_null(json_object_get(entry_of(shared, "bob"), "time"));
  /* force: bob takes replicas from alice */
  b.force = 1;
  json_t *o2 = kin__ssa_apply(&b, o1, cfg2, &code, &causes, err, sizeof(err));
  assert_non_null(o2);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(o2, "spec"), "replicas")), 3);
  assert_json(json_object_get(entry(o2, 0), "fieldsV1"),
              "{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":"
              "{\".\":{},\"f:name\":{},\"f:image\":{}}}}}");
  assert_json(json_object_get(entry(o2, 1), "fieldsV1"), "{\"f:spec\":{\"f:replicas\":{}}}");
  /* alice drops the container: it goes (nobody else owns it); replicas,
   * bob's, stays */
  json_t *cfg3 = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deploy\",\"metadata\":{\"name\":\"d\","
                   "\"labels\":{\"l\":\"1\"}}}");
  json_t *o3 = kin__ssa_apply(&a, o2, cfg3, &code, &causes, err, sizeof(err));
  assert_non_null(o3);
  assert_null(json_object_get(json_object_get(o3, "spec"), "containers"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(o3, "spec"), "replicas")), 3);
  assert_json(json_object_get(entry(o3, 0), "fieldsV1"),
              "{\"f:metadata\":{\"f:labels\":{\"f:l\":{}}}}");
  json_decref(cfg1);
  json_decref(cfg2);
  json_decref(cfg3);
  json_decref(cfg_same);
  json_decref(o1);
  json_decref(o2);
  json_decref(o3);
  json_decref(shared);
  json_decref(f.defs);
}

static void test_sim_ssa_ApplyAfterUpdateConflictsWithUsing(void **state) {
  (void)state;
  fixture f = fx_new();
  kin__ssa_op up = op_for(&f.s, "kubectl-edit");
  json_t *zero = J("{}");
  json_t *obj = J("{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":1}}");
  kin__ssa_update(&up, zero, obj);
  kin__ssa_op a = op_for(&f.s, "op");
  int code;
  json_t *causes;
  char err[1024];
  json_t *cfg = J("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deploy\",\"metadata\":{\"name\":\"d\"},"
                  "\"spec\":{\"replicas\":2}}");
  assert_null(kin__ssa_apply(&a, obj, cfg, &code, &causes, err, sizeof(err)));
  assert_int_equal(code, 409);
  assert_string_equal(err, "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using "
                           "apps/v1: .spec.replicas");
  json_decref(causes);
  json_decref(zero);
  json_decref(obj);
  json_decref(cfg);
  json_decref(f.defs);
}

static void test_sim_ssa_YamlScalarsAsGoYamlV2(void **state) {
  (void)state;
  const char *y = "a: yes\nb: \"yes\"\nc: 0x1F\nd: 010\ne: 1.5\nf: ~\ng:\n  - x\n  - 'y'\n"
                  "h: {i: 1}\nj: 1_000\n";
  char err[256];
  json_t *v = kin__ssa_yaml_parse(y, strlen(y), err, sizeof(err));
  assert_non_null(v);
  assert_json(v, "{\"a\":true,\"b\":\"yes\",\"c\":31,\"d\":8,\"e\":1.5,\"f\":null,"
                 "\"g\":[\"x\",\"y\"],\"h\":{\"i\":1},\"j\":1000}");
  json_decref(v);
  /* plain keys resolve too: sigs.k8s.io/yaml writes a bool or an
   * integer key as its JSON text */
  const char *keys = "y: 1\n0x10: a\n'n': b\n";
  v = kin__ssa_yaml_parse(keys, strlen(keys), err, sizeof(err));
  assert_json(v, "{\"true\":1,\"16\":\"a\",\"n\":\"b\"}");
  json_decref(v);
  const char *bad = "a: b: c\n";
  assert_null(kin__ssa_yaml_parse(bad, strlen(bad), err, sizeof(err)));
  assert_string_equal(err, "error converting YAML to JSON: yaml: mapping values are not "
                           "allowed in this context");
  const char *bad2 = "a: 1\nb: [1, 2\n";
  assert_null(kin__ssa_yaml_parse(bad2, strlen(bad2), err, sizeof(err)));
  assert_non_null(strstr(err, "yaml: line "));
}

KIN_SUITE(sim_ssa,
          cmocka_unit_test(test_sim_ssa_SetAlgebra),
          cmocka_unit_test(test_sim_ssa_SetPathsPrintAsConflicts),
          cmocka_unit_test(test_sim_ssa_ToSetFollowsSchema),
          cmocka_unit_test(test_sim_ssa_CompareAddsModifiesRemoves),
          cmocka_unit_test(test_sim_ssa_MergeListMapsAndAtomics),
          cmocka_unit_test(test_sim_ssa_UpdateTakesChangedFields),
          cmocka_unit_test(test_sim_ssa_UpdateManagersCappedAtTen),
          cmocka_unit_test(test_sim_ssa_ApplyConflictsForceAndPrune),
          cmocka_unit_test(test_sim_ssa_ApplyAfterUpdateConflictsWithUsing),
          cmocka_unit_test(test_sim_ssa_YamlScalarsAsGoYamlV2))
