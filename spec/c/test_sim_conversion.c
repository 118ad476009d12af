/* test_sim_conversion.c -- a CRD served at v1 (storage) and v2 with
 * spec.conversion.strategy Webhook: kinformer.sim reads and writes v2
 * through the conversion webhook (registered in process for the CRD
 * name), as apiextensions-apiserver's webhookConverter: get, list (one
 * review for the page), watch and create at v2, metadata kept from the
 * stored object, and a failing webhook answered 500. */
#include "kin_test.h"

#include "kin.h"
#include "sim_client.h"

/* A v1 <-> v2 converter: v1 has spec.replicas, v2 spec.size. */
typedef struct {
  int calls;
  int fail;
  size_t last_count; /* objects in the last review */
} conv_t;

static int conv_fn(void *ud, const char *path, const char *body, size_t len, uint32_t timeout_ms,
                   char **out, size_t *outlen) {
  conv_t *c = ud;
  c->calls++;
  json_error_t e;
  json_t *review = json_loadb(body, len, 0, &e);
  json_t *req = json_object_get(review, "request");
  const char *to = jstr(req, "desiredAPIVersion");
  json_t *objs = json_object_get(req, "objects");
  c->last_count = json_array_size(objs);
  json_t *conv = json_array();
  size_t i;
  json_t *o;
  json_array_foreach(objs, i, o) {
    json_t *n = json_deep_copy(o);
    json_t *spec = json_object_get(n, "spec");
    if (!strcmp(to, "example.com/v2")) {
      json_object_set(spec, "size", json_object_get(spec, "replicas"));
      json_object_del(spec, "replicas");
    } else {
      json_object_set(spec, "replicas", json_object_get(spec, "size"));
      json_object_del(spec, "size");
    }
    json_object_set_new(n, "apiVersion", json_string(to));
    json_array_append_new(conv, n);
  }
  json_t *resp = json_pack("{s:s, s:o}", "uid", jstr(req, "uid"), "convertedObjects", conv);
  if (c->fail)
    json_object_set_new(resp, "result", json_pack("{s:s, s:s}", "status", "Failure", "message",
                                                  "cannot convert that"));
  else
    json_object_set_new(resp, "result", json_pack("{s:s}", "status", "Success"));
  json_t *ans = json_pack("{s:s, s:s, s:o}", "apiVersion", "apiextensions.k8s.io/v1", "kind",
                          "ConversionReview", "response", resp);
  *out = json_dumps(ans, JSON_COMPACT);
  *outlen = strlen(*out);
  json_decref(ans);
  json_decref(review);
  return 200;
}

static const char *const CRD =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"websites.example.com\"},\"spec\":{\"group\":\"example.com\","
    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"websites\",\"singular\":\"website\","
    "\"kind\":\"Website\",\"listKind\":\"WebsiteList\"},\"versions\":["
    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{"
    "\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}},"
    "{\"name\":\"v2\",\"served\":true,\"storage\":false,\"schema\":{\"openAPIV3Schema\":{"
    "\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}],"
    "\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":{\"url\":"
    "\"https://127.0.0.1:1/convert-websites-example-com\"},\"conversionReviewVersions\":"
    "[\"v1\"]}}}}";

static void test_sim_ConversionWebhook(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  conv_t c = {0};
  uint64_t id = 0;
  assert_int_equal(kin_sim_webhook_register(sim, CRD, strlen(CRD), conv_fn, &c, &id), 0);
  const char *v1 = "/apis/example.com/v1/namespaces/default/websites";
  const char *v2 = "/apis/example.com/v2/namespaces/default/websites";
  /* create at v2: stored at v1 */
  r = sim_req(sim, "POST", v2,
              "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Website\",\"metadata\":{\"name\":"
              "\"a\",\"labels\":{\"x\":\"1\"}},\"spec\":{\"size\":3}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "apiVersion"), "example.com/v2");
  assert_int_equal(jint(r.json, "spec.size"), 3);
  assert_null(json_object_get(json_object_get(r.json, "spec"), "replicas"));
  assert_string_equal(jstr(r.json, "metadata.labels.x"), "1");
  assert_int_equal(strlen(jstr(r.json, "metadata.uid")), 36);
  sim_resp_free(&r);
  assert_int_equal(c.calls, 2); /* in, then the answer out */
  r = sim_req(sim, "GET", "/apis/example.com/v1/namespaces/default/websites/a", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.replicas"), 3);
  sim_resp_free(&r);
  assert_int_equal(c.calls, 2); /* the storage version: no call */
  /* a second one at v1, then get and list at v2 */
  r = sim_req(sim, "POST", v1,
              "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Website\",\"metadata\":{\"name\":"
              "\"b\"},\"spec\":{\"replicas\":5}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/example.com/v2/namespaces/default/websites/b", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "apiVersion"), "example.com/v2");
  assert_int_equal(jint(r.json, "spec.size"), 5);
  sim_resp_free(&r);
  int before = c.calls;
  r = sim_req(sim, "GET", v2, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "WebsiteList");
  json_t *items = json_object_get(r.json, "items");
  assert_int_equal(json_array_size(items), 2);
  assert_int_equal(jint(json_array_get(items, 0), "spec.size"), 3);
  assert_int_equal(jint(json_array_get(items, 1), "spec.size"), 5);
  assert_string_equal(jstr(json_array_get(items, 1), "apiVersion"), "example.com/v2");
  sim_resp_free(&r);
  assert_int_equal(c.calls, before + 1); /* one review for the page */
  assert_int_equal(c.last_count, 2);
  /* watch at v2 from the start: both ADDED events converted */
  json_t *ev = sim_watch(sim, "/apis/example.com/v2/namespaces/default/websites?watch=1&"
                              "resourceVersion=1&timeoutSeconds=1",
                         2, 5000);
  assert_int_equal(json_array_size(ev), 2);
  assert_string_equal(jstr(json_array_get(ev, 0), "object.apiVersion"), "example.com/v2");
  assert_int_equal(jint(json_array_get(ev, 1), "object.spec.size"), 5);
  json_decref(ev);
  /* a merge patch at v2 patches the v2 form */
  r = sim_do(sim, "PATCH", "/apis/example.com/v2/namespaces/default/websites/a",
             "application/merge-patch+json", "{\"spec\":{\"size\":7}}", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "spec.size"), 7);
  assert_string_equal(jstr(r.json, "metadata.labels.x"), "1");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/apis/example.com/v1/namespaces/default/websites/a", NULL);
  assert_int_equal(jint(r.json, "spec.replicas"), 7);
  assert_null(json_object_get(json_object_get(r.json, "spec"), "size"));
  sim_resp_free(&r);
  /* a failing converter */
  c.fail = 1;
  r = sim_req(sim, "GET", "/apis/example.com/v2/namespaces/default/websites/b", NULL);
  assert_int_equal(r.code, 500);
  assert_string_equal(jstr(r.json, "message"),
                      "conversion webhook for example.com/v1, Kind=Website failed: cannot convert "
                      "that");
  assert_null(json_object_get(r.json, "reason"));
  sim_resp_free(&r);
  /* unregistered: the stored CRD's clientConfig.url (nothing listens) */
  c.fail = 0;
  assert_int_equal(kin_sim_webhook_unregister(sim, id), 0);
  r = sim_req(sim, "GET", "/apis/example.com/v2/namespaces/default/websites/b", NULL);
  assert_int_equal(r.code, 500);
  /* kube-apiserver v1.36.3's answer for an unreachable converter */
  assert_string_equal(jstr(r.json, "message"),
                      "conversion webhook for example.com/v1, Kind=Website failed: Post "
                      "\"https://127.0.0.1:1/convert-websites-example-com?timeout=30s\": dial tcp "
                      "127.0.0.1:1: connect: connection refused");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_conversion, cmocka_unit_test(test_sim_ConversionWebhook))
