/* test_sim_apply.c -- server-side apply over HTTP against a started sim:
 * PATCH application/apply-patch+yaml creating and merging, managedFields
 * on every write, conflicts (409 with the fields named) and force, fields
 * dropped from a configuration removed, a Deployment's containers merged
 * by name, a custom resource's list-map from its CRD schema, and the
 * errors of apply (422 without fieldManager, 400 for bad YAML or type). */
#include "kin_test.h"

#include "sim_client.h"

static const char *CM = "/api/v1/namespaces/default/configmaps/c";
static const char *YAML = "application/apply-patch+yaml";

static sim_resp apply(kin_sim *sim, const char *path, const char *query, const char *body) {
  char p[512];
  snprintf(p, sizeof(p), "%s?%s", path, query);
  return sim_do(sim, "PATCH", p, YAML, body, NULL);
}

/* The managedFields entry of manager (and operation) in r's object. */
static const json_t *mf(const sim_resp *r, const char *manager, const char *op) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(json_object_get(r->json, "metadata"), "managedFields"), i,
                     e) {
    if (!strcmp(json_string_value(json_object_get(e, "manager")), manager) &&
        !strcmp(json_string_value(json_object_get(e, "operation")), op))
      return e;
  }
  return NULL;
}

static void assert_fields(const json_t *entry, const char *want) {
  assert_non_null(entry);
  json_t *w = json_loads(want, 0, NULL);
  assert_non_null(w);
  if (!json_equal(json_object_get(entry, "fieldsV1"), w)) {
    char *g = json_dumps(json_object_get(entry, "fieldsV1"), JSON_COMPACT | JSON_SORT_KEYS);
    fail_msg("fieldsV1 %s, want %s", g, want);
  }
  json_decref(w);
}

static void test_sim_apply_CreateReapplyConflictForce(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *cfg = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n"
                    "    app: x\ndata:\n  a: \"1\"\n  b: \"2\"\n";
  sim_resp r = apply(sim, CM, "fieldManager=alice", cfg);
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "data.a"), "1");
  const json_t *e = mf(&r, "alice", "Apply");
  assert_string_equal(json_string_value(json_object_get(e, "apiVersion")), "v1");
  assert_string_equal(json_string_value(json_object_get(e, "fieldsType")), "FieldsV1");
  assert_non_null(json_object_get(e, "time"));
  assert_fields(e, "{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},\"f:data\":{\"f:a\":{},"
                   "\"f:b\":{}}}");
  char rv[32];
  snprintf(rv, sizeof(rv), "%s", jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  /* the same configuration again changes nothing */
  r = apply(sim, CM, "fieldManager=alice", cfg);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "metadata.resourceVersion"), rv);
  sim_resp_free(&r);
  /* another manager's different value conflicts */
  const char *bob = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                    "\"data\":{\"a\":\"9\",\"b\":\"8\"}}";
  r = apply(sim, CM, "fieldManager=bob", bob);
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "reason"), "Conflict");
  assert_string_equal(jstr(r.json, "message"),
                      "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\n"
                      "- .data.b");
  json_t *causes = json_object_get(json_object_get(r.json, "details"), "causes");
  assert_int_equal(json_array_size(causes), 2);
  assert_string_equal(jstr(json_array_get(causes, 0), "reason"), "FieldManagerConflict");
  assert_string_equal(jstr(json_array_get(causes, 0), "message"), "conflict with \"alice\"");
  assert_string_equal(jstr(json_array_get(causes, 0), "field"), ".data.a");
  sim_resp_free(&r);
  /* force takes them */
  r = apply(sim, CM, "fieldManager=bob&force=true", bob);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.a"), "9");
  assert_fields(mf(&r, "bob", "Apply"), "{\"f:data\":{\"f:a\":{},\"f:b\":{}}}");
  assert_fields(mf(&r, "alice", "Apply"), "{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}}}");
  sim_resp_free(&r);
  /* alice drops her label: it goes; bob's data stays */
  r = apply(sim, CM, "fieldManager=alice",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  z: \"1\"\n");
  assert_int_equal(r.code, 200);
  assert_null(json_object_get(json_object_get(r.json, "metadata"), "labels"));
  assert_string_equal(jstr(r.json, "data.a"), "9");
  assert_string_equal(jstr(r.json, "data.z"), "1");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_apply_UpdatesRecordManagers(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_do(sim, "POST", "/api/v1/namespaces/default/configmaps?fieldManager=maker",
                      NULL, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                      "{\"name\":\"c\"},\"data\":{\"a\":\"1\"}}", NULL);
  assert_int_equal(r.code, 201);
  assert_fields(mf(&r, "maker", "Update"), "{\"f:data\":{\".\":{},\"f:a\":{}}}");
  sim_resp_free(&r);
  /* without fieldManager the User-Agent's prefix names the manager */
  r = sim_do(sim, "PATCH", CM, "application/merge-patch+json", "{\"data\":{\"b\":\"2\"}}",
             "User-Agent: my-operator/1.0 (linux)");
  assert_int_equal(r.code, 200);
  assert_fields(mf(&r, "my-operator", "Update"), "{\"f:data\":{\"f:b\":{}}}");
  sim_resp_free(&r);
  r = apply(sim, CM, "fieldManager=op",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
            "\"data\":{\"a\":\"2\"}}");
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "message"),
                      "Apply failed with 1 conflict: conflict with \"maker\" using v1: .data.a");
  sim_resp_free(&r);
  /* a PUT that changes a takes it from maker */
  r = sim_req(sim, "GET", CM, NULL);
  json_t *obj = json_deep_copy(r.json);
  sim_resp_free(&r);
  json_object_set_new(json_object_get(obj, "data"), "a", json_string("3"));
  char *body = json_dumps(obj, JSON_COMPACT);
  r = sim_do(sim, "PUT", "/api/v1/namespaces/default/configmaps/c?fieldManager=editor", NULL,
             body, NULL);
  assert_int_equal(r.code, 200);
  /* maker keeps only the data map it created ("." lost its a) */
  assert_fields(mf(&r, "maker", "Update"), "{\"f:data\":{}}");
  assert_fields(mf(&r, "editor", "Update"), "{\"f:data\":{\"f:a\":{}}}");
  sim_resp_free(&r);
  free(body);
  json_decref(obj);
  /* force on a non-apply patch, a too long manager */
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/c?force=true",
             "application/merge-patch+json", "{}", NULL);
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(r.json, "message"), "PatchOptions.meta.k8s.io \"\" is invalid: "
                                               "force: Forbidden: may not be specified for "
                                               "non-apply patch");
  sim_resp_free(&r);
  char q[200];
  memset(q, 'm', sizeof(q));
  memcpy(q, "fieldManager=", 13);
  q[sizeof(q) - 1] = 0;
  r = apply(sim, CM, q, "{}");
  assert_int_equal(r.code, 422);
  assert_non_null(strstr(jstr(r.json, "message"), "Too long: may not be more than 128 bytes"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_apply_DeploymentContainersMergeByName(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *path = "/apis/apps/v1/namespaces/default/deployments/d";
  const char *cfg = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n"
                    "  replicas: 1\n  selector:\n    matchLabels: {app: d}\n  template:\n"
                    "    metadata:\n      labels: {app: d}\n    spec:\n      containers:\n"
                    "      - name: a\n        image: ia\n";
  sim_resp r = apply(sim, path, "fieldManager=op", cfg);
  assert_int_equal(r.code, 201);
  /* the Go zero value the create starts from leaves nothing behind */
  assert_null(json_object_get(json_object_get(r.json, "spec"), "strategy"));
  assert_fields(mf(&r, "op", "Apply"),
                "{\"f:spec\":{\"f:replicas\":{},\"f:selector\":{},\"f:template\":{\"f:metadata\":"
                "{\"f:labels\":{\"f:app\":{}}},\"f:spec\":{\"f:containers\":{"
                "\"k:{\\\"name\\\":\\\"a\\\"}\":{\".\":{},\"f:image\":{},\"f:name\":{}}}}}}}");
  sim_resp_free(&r);
  r = apply(sim, path, "fieldManager=sidecar",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n"
            "    spec:\n      containers:\n      - name: b\n        image: ib\n");
  assert_int_equal(r.code, 200);
  json_t *cs = json_object_get(
      json_object_get(json_object_get(json_object_get(r.json, "spec"), "template"), "spec"),
      "containers");
  assert_int_equal(json_array_size(cs), 2);
  assert_string_equal(jstr(json_array_get(cs, 0), "name"), "a");
  assert_string_equal(jstr(json_array_get(cs, 1), "name"), "b");
  sim_resp_free(&r);
  /* the status of a resource with a status subresource is not applied */
  r = apply(sim, path, "fieldManager=op",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: 2\n"
            "status:\n  replicas: 7\n");
  assert_int_equal(r.code, 200);
  assert_null(json_object_get(r.json, "status"));
  /* op dropped its container a; sidecar's b stays */
  cs = json_object_get(
      json_object_get(json_object_get(json_object_get(r.json, "spec"), "template"), "spec"),
      "containers");
  assert_int_equal(json_array_size(cs), 1);
  assert_string_equal(jstr(json_array_get(cs, 0), "name"), "b");
  assert_fields(mf(&r, "op", "Apply"), "{\"f:spec\":{\"f:replicas\":{}}}");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_apply_StatusSubresourceEntries(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *path = "/apis/apps/v1/namespaces/default/deployments/d";
  sim_resp r = apply(sim, path, "fieldManager=op",
                     "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n"
                     "  replicas: 1\n");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  char p[256];
  snprintf(p, sizeof(p), "%s/status?fieldManager=ctrl", path);
  r = sim_do(sim, "PATCH", p, "application/merge-patch+json",
             "{\"status\":{\"replicas\":1},\"spec\":{\"replicas\":9}}", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 1);
  const json_t *e = mf(&r, "ctrl", "Update");
  assert_string_equal(json_string_value(json_object_get(e, "subresource")), "status");
  assert_fields(e, "{\"f:status\":{\".\":{},\"f:replicas\":{}}}");
  assert_fields(mf(&r, "op", "Apply"), "{\"f:spec\":{\"f:replicas\":{}}}");
  sim_resp_free(&r);
  snprintf(p, sizeof(p), "%s/status", path);
  r = apply(sim, p, "fieldManager=ctrl2",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nstatus:\n"
            "  observedGeneration: 3\n");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "status.observedGeneration"), 3);
  assert_fields(mf(&r, "ctrl2", "Apply"), "{\"f:status\":{\"f:observedGeneration\":{}}}");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* An autoscaler writing /scale owns spec.replicas (an Update entry with
 * subresource scale and, as the real server's, no time); the operator's
 * apply of another count conflicts with it. */
static void test_sim_apply_ScaleWritesOwnReplicas(void **state) {
  kin_sim *sim = sim_start(0, 0);
  const char *path = "/apis/apps/v1/namespaces/default/deployments/d";
  const char *cfg = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n"
                    "  replicas: %d\n";
  char body[256];
  snprintf(body, sizeof(body), cfg, 1);
  sim_resp r = apply(sim, path, "fieldManager=op", body);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale?fieldManager=hpa",
             "application/merge-patch+json", "{\"spec\":{\"replicas\":3}}", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "Scale");
  char rv[32];
  snprintf(rv, sizeof(rv), "%s", jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  /* the same count again is a no-op: the untimed entry stays as it was */
  r = sim_do(sim, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/scale?fieldManager=hpa",
             "application/merge-patch+json", "{\"spec\":{\"replicas\":3}}", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "metadata.resourceVersion"), rv);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", path, NULL);
  const json_t *e = mf(&r, "hpa", "Update");
  assert_fields(e, "{\"f:spec\":{\"f:replicas\":{}}}");
  assert_string_equal(json_string_value(json_object_get(e, "subresource")), "scale");
  assert_null(json_object_get(e, "time"));
  assert_null(mf(&r, "op", "Apply")); /* op owned only replicas */
  sim_resp_free(&r);
  snprintf(body, sizeof(body), cfg, 2);
  r = apply(sim, path, "fieldManager=op", body);
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "message"),
                      "Apply failed with 1 conflict: conflict with \"hpa\" with subresource "
                      "\"scale\" using apps/v1: .spec.replicas");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_apply_CustomResourceUsesCrdSchema(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(
      sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
      "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
      "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\","
      "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"versions\":[{\"name\":\"v1\","
      "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
      "\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":"
      "\"integer\"},\"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
      "\"x-kubernetes-list-map-keys\":[\"name\"],\"items\":{\"type\":\"object\",\"properties\":"
      "{\"name\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\"}}}},\"tags\":{\"type\":"
      "\"array\",\"items\":{\"type\":\"string\"}}}}}}}}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  const char *path = "/apis/example.com/v1/namespaces/default/widgets/w";
  r = apply(sim, path, "fieldManager=op",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n"
            "  tags: [a]\n  ports:\n  - name: http\n    port: 80\n");
  assert_int_equal(r.code, 201);
  /* ports is a list-map by name, tags atomic (no list-type) */
  assert_fields(mf(&r, "op", "Apply"),
                "{\"f:spec\":{\"f:size\":{},\"f:tags\":{},\"f:ports\":{"
                "\"k:{\\\"name\\\":\\\"http\\\"}\":{\".\":{},\"f:name\":{},\"f:port\":{}}}}}");
  sim_resp_free(&r);
  r = apply(sim, path, "fieldManager=other",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  ports:\n"
            "  - name: http\n    port: 81\n");
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "message"), "Apply failed with 1 conflict: conflict with "
                                               "\"op\": .spec.ports[name=\"http\"].port");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_apply_Errors(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_do(sim, "PATCH", CM, YAML, "apiVersion: v1\n", NULL);
  assert_int_equal(r.code, 422);
  sim_resp_free(&r);
  r = apply(sim, CM, "fieldManager=m", "a: b: c\n");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "error decoding YAML: error converting YAML to JSON: yaml: mapping values "
                      "are not allowed in this context");
  sim_resp_free(&r);
  r = apply(sim, CM, "fieldManager=m", "apiVersion: apps/v1\nkind: ConfigMap\n");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"), "invalid object type: apps/v1, Kind=ConfigMap");
  sim_resp_free(&r);
  r = apply(sim, CM, "fieldManager=m",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  managedFields: []\n");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"), "metadata.managedFields must be nil");
  sim_resp_free(&r);
  r = apply(sim, CM, "fieldManager=m", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n");
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  /* dry run creates nothing */
  r = apply(sim, CM, "fieldManager=m&dryRun=All", "apiVersion: v1\nkind: ConfigMap\n"
                                                  "metadata:\n  name: c\n");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", CM, NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_apply,
          cmocka_unit_test(test_sim_apply_CreateReapplyConflictForce),
          cmocka_unit_test(test_sim_apply_UpdatesRecordManagers),
          cmocka_unit_test(test_sim_apply_DeploymentContainersMergeByName),
          cmocka_unit_test(test_sim_apply_StatusSubresourceEntries),
          cmocka_unit_test(test_sim_apply_ScaleWritesOwnReplicas),
          cmocka_unit_test(test_sim_apply_CustomResourceUsesCrdSchema),
          cmocka_unit_test(test_sim_apply_Errors))
