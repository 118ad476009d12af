/* test_sim_scale.c -- the scale subresource of deployments, replicasets
 * and statefulsets (autoscaling/v1 Scale, as kube-apiserver v1.36.3
 * answers: ScaleREST of pkg/registry/apps), its discovery entry, and the
 * server's rule for boolean query parameters (watch=True, as the Python
 * client sends it). */
#include "kin_test.h"

#include "kin.h"
#include "sim_client.h"

#define DEPLOY                                                                                  \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d1\"},"       \
  "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"app\":\"d1\"},"                  \
  "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"b\",\"a\"]},"    \
  "{\"key\":\"gone\",\"operator\":\"DoesNotExist\"}]},"                                        \
  "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d1\",\"tier\":\"a\"}},"                  \
  "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}}}"

static void test_sim_ScaleGetPutPatch(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  const char *path = "/apis/apps/v1/namespaces/default/deployments/d1/scale";
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "Scale");
  assert_string_equal(jstr(r.json, "apiVersion"), "autoscaling/v1");
  assert_string_equal(jstr(r.json, "metadata.name"), "d1");
  assert_string_equal(jstr(r.json, "metadata.namespace"), "default");
  assert_int_equal(jint(r.json, "spec.replicas"), 1);
  assert_int_equal(jint(r.json, "status.replicas"), 0);
  /* requirements sorted by key, set values sorted */
  assert_string_equal(jstr(r.json, "status.selector"), "app=d1,!gone,tier in (a,b)");
  assert_null(json_object_get(json_object_get(r.json, "metadata"), "generation"));
  sim_resp_free(&r);

  r = sim_req(sim, "PUT", path,
              "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":"
              "\"d1\"},\"spec\":{\"replicas\":3},\"status\":{\"replicas\":9}}");
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 3);
  assert_int_equal(jint(r.json, "status.replicas"), 0); /* status is not written */
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", path, "application/merge-patch+json",
             "{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"replicas\":5}}", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 5);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", path, "application/json-patch+json",
             "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":2}]", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 2);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", path, "application/strategic-merge-patch+json",
             "{\"spec\":{\"replicas\":4}}", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 4);
  const char *rv = jstr(r.json, "metadata.resourceVersion");
  char rv4[32];
  snprintf(rv4, sizeof(rv4), "%s", rv);
  sim_resp_free(&r);
  /* The parent carries the change: spec.replicas, one generation per
   * change, the Scale's resourceVersion; the scale's labels are ignored. */
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/d1", NULL);
  assert_int_equal(jint(r.json, "spec.replicas"), 4);
  assert_int_equal(jint(r.json, "metadata.generation"), 5);
  assert_string_equal(jstr(r.json, "metadata.resourceVersion"), rv4);
  assert_null(json_object_get(json_object_get(r.json, "metadata"), "labels"));
  sim_resp_free(&r);
  /* status.replicas comes from the parent's status */
  r = sim_do(sim, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d1/status",
             "application/merge-patch+json", "{\"status\":{\"replicas\":2}}", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(jint(r.json, "status.replicas"), 2);
  sim_resp_free(&r);
  /* 0 replicas: spec is empty (omitempty), the parent holds 0 */
  r = sim_do(sim, "PATCH", path, "application/merge-patch+json", "{\"spec\":{\"replicas\":0}}",
             NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(json_object_size(json_object_get(r.json, "spec")), 0);
  sim_resp_free(&r);
  /* dry run answers the would-be Scale and writes nothing */
  r = sim_do(sim, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d1/scale?dryRun=All",
             "application/merge-patch+json", "{\"spec\":{\"replicas\":9}}", NULL);
  assert_int_equal(jint(r.json, "spec.replicas"), 9);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/d1", NULL);
  assert_int_equal(jint(r.json, "spec.replicas"), 0);
  sim_resp_free(&r);

  /* replicasets and statefulsets */
  r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/default/statefulsets",
              "{\"metadata\":{\"name\":\"s1\"},\"spec\":{\"replicas\":2,\"selector\":"
              "{\"matchLabels\":{\"app\":\"s1\"}}}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/apis/apps/v1/namespaces/default/statefulsets/s1/scale",
             "application/merge-patch+json", "{\"spec\":{\"replicas\":6}}", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 6);
  assert_string_equal(jstr(r.json, "status.selector"), "app=s1");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/default/replicasets",
              "{\"metadata\":{\"name\":\"r1\"},\"spec\":{\"selector\":{\"matchLabels\":"
              "{\"app\":\"r1\"}}}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/default/replicasets/r1/scale", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 1); /* the API's default */
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ScaleErrors(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOY);
  sim_resp_free(&r);
  const char *path = "/apis/apps/v1/namespaces/default/deployments/d1/scale";
  r = sim_req(sim, "PUT", path,
              "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":"
              "\"d1\",\"resourceVersion\":\"1\"},\"spec\":{\"replicas\":3}}");
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "message"),
                      "Operation cannot be fulfilled on deployments.apps \"d1\": the object has "
                      "been modified; please apply your changes to the latest version and try "
                      "again");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", path,
              "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":"
              "\"d1\"},\"spec\":{\"replicas\":-1}}");
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(r.json, "message"),
                      "Scale.autoscaling \"d1\" is invalid: spec.replicas: Invalid value: -1: "
                      "must be greater than or equal to 0");
  assert_string_equal(jstr(r.json, "details.kind"), "Scale");
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", path, "application/json-patch+json",
             "[{\"op\":\"replace\",\"path\":\"/spec/replicas\",\"value\":-2}]", NULL);
  assert_int_equal(r.code, 422);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", path, "application/merge-patch+json", "{\"spec\":{\"replicas\":\"x\"}}",
             NULL);
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(r.json, "reason"), "Invalid");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", path,
              "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"metadata\":{\"name\":"
              "\"other\"},\"spec\":{\"replicas\":3}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "the name of the object (other) does not match the name on the URL (d1)");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", path,
              "{\"apiVersion\":\"autoscaling/v1\",\"kind\":\"Scale\",\"spec\":{\"replicas\":3}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "the name of the object (d1 based on URL) was undeterminable: name must "
                      "be provided");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", path,
              "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
              "\"d1\"},\"spec\":{\"replicas\":3}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "Deployment in version \"v1\" cannot be handled as a Scale: converting "
                      "(v1.Deployment) to (autoscaling.Scale): unknown conversion");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/default/deployments/nope/scale", NULL);
  assert_int_equal(r.code, 404);
  assert_string_equal(jstr(r.json, "message"), "deployments.apps \"nope\" not found");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", path, "{}");
  assert_int_equal(r.code, 405);
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", path, NULL);
  assert_int_equal(r.code, 405);
  sim_resp_free(&r);
  /* no scale on daemonsets or configmaps */
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/default/daemonsets/x/scale", NULL);
  assert_int_equal(r.code, 404);
  assert_string_equal(jstr(r.json, "message"), "the server could not find the requested resource");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_ScaleDiscovery(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "GET", "/apis/apps/v1", NULL);
  assert_int_equal(r.code, 200);
  int found = 0;
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(r.json, "resources"), i, e) {
    const char *name = jstr(e, "name");
    if (!strstr(name, "/scale")) continue;
    found++;
    assert_true(!strcmp(name, "deployments/scale") || !strcmp(name, "replicasets/scale") ||
                !strcmp(name, "statefulsets/scale"));
    assert_string_equal(jstr(e, "kind"), "Scale");
    assert_string_equal(jstr(e, "group"), "autoscaling");
    assert_string_equal(jstr(e, "version"), "v1");
    assert_int_equal(json_array_size(json_object_get(e, "verbs")), 3);
  }
  assert_int_equal(found, 3);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* ?watch=True (the Python client), as Convert_Slice_string_To_bool: only
 * 0, f, false, n, no (any case) are false. */
static void test_sim_WatchQueryBoolean(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  static const char *const yes[] = {"True", "TRUE", "1", "yes", "t"};
  for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    char p[200];
    snprintf(p, sizeof(p), "/api/v1/namespaces/default/configmaps?watch=%s&timeoutSeconds=1",
             yes[i]);
    json_t *ev = sim_watch(sim, p, 1, 3000);
    assert_int_equal(json_array_size(ev), 1);
    assert_string_equal(jstr(json_array_get(ev, 0), "type"), "ADDED");
    json_decref(ev);
  }
  static const char *const no[] = {"False", "0", "F", "No", "n"};
  for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
    char p[200];
    snprintf(p, sizeof(p), "/api/v1/namespaces/default/configmaps?watch=%s", no[i]);
    sim_resp r = sim_req(sim, "GET", p, NULL);
    assert_int_equal(r.code, 200);
    assert_string_equal(jstr(r.json, "kind"), "ConfigMapList");
    sim_resp_free(&r);
  }
  kin_sim_free(sim);
}

KIN_SUITE(sim_scale, cmocka_unit_test(test_sim_ScaleGetPutPatch),
          cmocka_unit_test(test_sim_ScaleErrors), cmocka_unit_test(test_sim_ScaleDiscovery),
          cmocka_unit_test(test_sim_WatchQueryBoolean))
