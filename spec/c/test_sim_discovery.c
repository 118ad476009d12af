/* test_sim_discovery.c -- kinformer.sim discovery documents in the shapes
 * of kube-apiserver (APIVersions, APIGroupList, APIResourceList) and the
 * health endpoints; a CRD appears in discovery once created. */
#include "kin_test.h"

#include "sim_client.h"

/* The entry named name in an APIResourceList, or NULL. */
static json_t *find_resource(json_t *list, const char *name) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(list, "resources"), i, e) {
    if (!strcmp(jstr(e, "name"), name)) return e;
  }
  return NULL;
}

static void test_sim_DiscoveryVersionAndHealth(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "GET", "/version", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "major"), "1");
  assert_non_null(jstr(r.json, "gitVersion"));
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/readyz", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.body, "ok");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api", NULL);
  assert_string_equal(jstr(r.json, "kind"), "APIVersions");
  assert_string_equal(json_string_value(json_array_get(json_object_get(r.json, "versions"), 0)), "v1");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_DiscoveryCoreResources(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "GET", "/api/v1", NULL);
  assert_string_equal(jstr(r.json, "kind"), "APIResourceList");
  assert_string_equal(jstr(r.json, "groupVersion"), "v1");
  json_t *cm = find_resource(r.json, "configmaps");
  assert_non_null(cm);
  assert_string_equal(jstr(cm, "kind"), "ConfigMap");
  assert_string_equal(jstr(cm, "singularName"), "configmap");
  assert_true(json_is_true(json_object_get(cm, "namespaced")));
  assert_string_equal(json_string_value(json_array_get(json_object_get(cm, "shortNames"), 0)), "cm");
  assert_int_equal(json_array_size(json_object_get(cm, "verbs")), 8);
  json_t *ns = find_resource(r.json, "namespaces");
  assert_true(json_is_false(json_object_get(ns, "namespaced")));
  assert_non_null(find_resource(r.json, "pods/status"));
  assert_null(find_resource(r.json, "configmaps/status"));
  const char *want[] = {"secrets", "pods", "services", "serviceaccounts", "events", "nodes"};
  for (size_t i = 0; i < 6; i++) assert_non_null(find_resource(r.json, want[i]));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_DiscoveryGroups(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "GET", "/apis", NULL);
  assert_string_equal(jstr(r.json, "kind"), "APIGroupList");
  json_t *groups = json_object_get(r.json, "groups");
  int apps = 0, coord = 0;
  size_t i;
  json_t *g;
  json_array_foreach(groups, i, g) {
    if (!strcmp(jstr(g, "name"), "apps")) {
      apps = 1;
      assert_string_equal(jstr(g, "preferredVersion.groupVersion"), "apps/v1");
    }
    if (!strcmp(jstr(g, "name"), "coordination.k8s.io")) coord = 1;
  }
  assert_true(apps && coord);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/apps/v1", NULL);
  assert_string_equal(jstr(r.json, "groupVersion"), "apps/v1");
  assert_string_equal(jstr(find_resource(r.json, "deployments"), "kind"), "Deployment");
  assert_non_null(find_resource(r.json, "statefulsets"));
  assert_non_null(find_resource(r.json, "daemonsets/status"));
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/apps", NULL);
  assert_string_equal(jstr(r.json, "kind"), "APIGroup");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/example.com/v1", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
      "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}}}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/example.com/v1", NULL);
  assert_int_equal(r.code, 200);
  json_t *w = find_resource(r.json, "widgets");
  assert_string_equal(jstr(w, "kind"), "Widget");
  assert_string_equal(jstr(w, "singularName"), "widget");
  assert_non_null(find_resource(r.json, "widgets/status"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_discovery, cmocka_unit_test(test_sim_DiscoveryVersionAndHealth),
          cmocka_unit_test(test_sim_DiscoveryCoreResources),
          cmocka_unit_test(test_sim_DiscoveryGroups))
