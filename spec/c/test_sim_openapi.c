/* test_sim_openapi.c -- kinformer.sim's OpenAPI v3 (http_openapi.c): the
 * index with hashed URLs, kube-apiserver's documents of the built-in
 * group-versions (schemas for kubectl explain, PATCH operations with
 * fieldValidation for kubectl apply), handler3's caching headers and
 * redirect, and the document a CRD's group-version gets. */
#include "kin_test.h"

#include "sim_client.h"

/* The serverRelativeURL the index gives gv (copied into url). */
static void index_url(kin_sim *sim, const char *gv, char *url, size_t cap) {
  sim_resp r = sim_req(sim, "GET", "/openapi/v3", NULL);
  assert_int_equal(r.code, 200);
  json_t *e = json_object_get(json_object_get(r.json, "paths"), gv);
  const char *u = json_string_value(json_object_get(e, "serverRelativeURL"));
  assert_non_null(u);
  snprintf(url, cap, "%s", u);
  sim_resp_free(&r);
}

static json_t *schema(json_t *doc, const char *name) {
  return json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"), name);
}

static void test_sim_OpenAPIV3IndexAndDocuments(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "GET", "/openapi/v3", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.cache_control, "no-cache, private");
  json_t *paths = json_object_get(r.json, "paths");
  const char *want[] = {"api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1",
                        "apis/events.k8s.io/v1", "apis/apiextensions.k8s.io/v1",
                        "apis/rbac.authorization.k8s.io/v1", "apis/authorization.k8s.io/v1",
                        "apis/authentication.k8s.io/v1", "apis/batch/v1"};
  for (size_t i = 0; i < 9; i++) assert_non_null(json_object_get(paths, want[i]));
  assert_int_equal(json_object_size(paths), 9);
  sim_resp_free(&r);

  char url[512];
  index_url(sim, "apis/apps/v1", url, sizeof(url));
  const char *hash = strstr(url, "?hash=");
  assert_non_null(hash);
  assert_int_equal(strlen(hash + 6), 128); /* SHA-512, upper-case hex */
  r = sim_req(sim, "GET", url, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.ctype, "application/json");
  assert_string_equal(r.cache_control, "public, immutable");
  char etag[160];
  snprintf(etag, sizeof(etag), "\"%s\"", hash + 6);
  assert_string_equal(r.etag, etag);
  assert_string_equal(jstr(r.json, "openapi"), "3.0.0");
  /* kube-apiserver's schema of DeploymentSpec, with its descriptions */
  json_t *spec = schema(r.json, "io.k8s.api.apps.v1.DeploymentSpec");
  json_t *replicas = json_object_get(json_object_get(spec, "properties"), "replicas");
  assert_string_equal(jstr(replicas, "type"), "integer");
  assert_non_null(strstr(jstr(replicas, "description"), "Number of desired pods"));
  json_t *dep = schema(r.json, "io.k8s.api.apps.v1.Deployment");
  assert_string_equal(jstr(json_array_get(json_object_get(dep, "x-kubernetes-group-version-kind"), 0),
                           "kind"),
                      "Deployment");
  /* the scale subresource's Scale comes along; paths the sim does not
   * serve (controllerrevisions) do not */
  assert_non_null(schema(r.json, "io.k8s.api.autoscaling.v1.Scale"));
  json_t *dpaths = json_object_get(r.json, "paths");
  assert_non_null(json_object_get(dpaths, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"));
  assert_null(json_object_get(dpaths, "/apis/apps/v1/namespaces/{namespace}/controllerrevisions"));
  sim_resp_free(&r);

  /* without the hash: not cacheable; a stale hash redirects to the current */
  r = sim_req(sim, "GET", "/openapi/v3/apis/apps/v1", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.cache_control, "no-cache, private");
  assert_string_equal(r.etag, etag);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/openapi/v3/apis/apps/v1?hash=0123", NULL);
  assert_int_equal(r.code, 301);
  assert_string_equal(r.location, url);
  sim_resp_free(&r);
  char inm[200];
  snprintf(inm, sizeof(inm), "If-None-Match: %s", etag);
  r = sim_do(sim, "GET", url, NULL, NULL, inm);
  assert_int_equal(r.code, 304);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/openapi/v3/apis/example.com/v1", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);

  /* kubectl's queryParamVerifierV3 reads the PATCH operation's parameters */
  index_url(sim, "api/v1", url, sizeof(url));
  r = sim_req(sim, "GET", url, NULL);
  json_t *patch = json_object_get(
      json_object_get(json_object_get(r.json, "paths"), "/api/v1/namespaces/{namespace}/configmaps/{name}"),
      "patch");
  assert_string_equal(jstr(patch, "x-kubernetes-group-version-kind.kind"), "ConfigMap");
  int fv = 0;
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(patch, "parameters"), i, p) {
    if (json_is_string(json_object_get(p, "name")) && !strcmp(jstr(p, "name"), "fieldValidation"))
      fv = 1;
  }
  assert_true(fv);
  assert_non_null(schema(r.json, "io.k8s.api.core.v1.ConfigMap"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* A CRD's group-version: a document built from the stored schema. */
static void test_sim_OpenAPIV3CustomResource(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
      "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"kind\":\"Widget\"},"
      "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{"
      "\"openAPIV3Schema\":{\"type\":\"object\",\"description\":\"A widget.\",\"properties\":{"
      "\"spec\":{\"type\":\"object\",\"properties\":{\"size\":{\"type\":\"integer\","
      "\"description\":\"How big.\"}}}}}}}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  char url[512];
  index_url(sim, "apis/example.com/v1", url, sizeof(url));
  assert_non_null(strstr(url, "?hash="));
  r = sim_req(sim, "GET", url, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(r.cache_control, "public, immutable");
  json_t *w = schema(r.json, "com.example.v1.Widget");
  assert_string_equal(jstr(w, "description"), "A widget.");
  json_t *props = json_object_get(w, "properties");
  assert_string_equal(jstr(json_object_get(props, "spec"), "properties.size.description"),
                      "How big.");
  assert_non_null(json_object_get(props, "apiVersion"));
  assert_non_null(json_object_get(props, "metadata"));
  assert_string_equal(jstr(json_array_get(json_object_get(w, "x-kubernetes-group-version-kind"), 0),
                           "group"),
                      "example.com");
  json_t *patch = json_object_get(
      json_object_get(json_object_get(r.json, "paths"),
                      "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"),
      "patch");
  assert_string_equal(jstr(patch, "x-kubernetes-group-version-kind.kind"), "Widget");
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", NULL);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/openapi/v3/apis/example.com/v1", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_openapi, cmocka_unit_test(test_sim_OpenAPIV3IndexAndDocuments),
          cmocka_unit_test(test_sim_OpenAPIV3CustomResource))
