/* test_sim_admission.c -- kinformer.sim's admission chain with in-process
 * webhooks (kin_sim_webhook_register): the AdmissionReview each write
 * sends (create, update, patches, apply, delete, delete collection),
 * denials, JSONPatch mutations, warnings, the failure policy, matching
 * by rules and selectors, dry run (creating ones too), and
 * unregistering. The answers are kube-apiserver's (k8s.io/apiserver
 * pkg/admission/plugin/webhook). */
#include "kin_test.h"

#include "base64.h"
#include "kin.h"
#include "sim_client.h"

/* What a test webhook answers, and the reviews it received. */
typedef struct {
  int allowed;
  int fail;              /* answer a negative code (a failed call) */
  int http_code;         /* answer this HTTP status instead of 200 (0: 200) */
  const char *message;   /* status.message of a denial */
  int code;              /* status.code of a denial (0: none) */
  const char *reason;    /* status.reason of a denial */
  const char *patch;     /* a JSONPatch (JSON text) to answer */
  const char *warning;   /* one warning to answer */
  kin_sim *callback;      /* list configmaps of this sim from inside the call */
  long callback_code;    /* that list's HTTP status */
  json_t *reqs;          /* the requests received */
  char path[128];
  uint32_t timeout_ms;
} hook_t;

static int hook_fn(void *ud, const char *path, const char *body, size_t len, uint32_t timeout_ms,
                   char **out, size_t *outlen) {
  hook_t *h = ud;
  snprintf(h->path, sizeof(h->path), "%s", path);
  h->timeout_ms = timeout_ms;
  json_error_t e;
  json_t *review = json_loadb(body, len, 0, &e);
  json_t *req = json_object_get(review, "request");
  json_array_append(h->reqs, req);
  if (h->callback) {
    /* a webhook that reads the sim while it is called (no lock held) */
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/configmaps", kin_sim_url(h->callback));
    CURL *c = curl_easy_init();
    sim_sink sink = {0};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sim_sink_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform(c) == CURLE_OK)
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->callback_code);
    curl_easy_cleanup(c);
    free(sink.p);
  }
  if (h->fail) {
    json_decref(review);
    return h->fail;
  }
  json_t *resp = json_pack("{s:s, s:b}", "uid", jstr(req, "uid"), "allowed", h->allowed);
  if (!h->allowed) {
    json_t *st = json_object();
    if (h->message) json_object_set_new(st, "message", json_string(h->message));
    if (h->code) json_object_set_new(st, "code", json_integer(h->code));
    if (h->reason) json_object_set_new(st, "reason", json_string(h->reason));
    json_object_set_new(resp, "status", st);
  }
  if (h->patch) {
    char *b64 = kin__base64_encode((const unsigned char *)h->patch, strlen(h->patch));
    json_object_set_new(resp, "patchType", json_string("JSONPatch"));
    json_object_set_new(resp, "patch", json_string(b64));
    free(b64);
  }
  if (h->warning) json_object_set_new(resp, "warnings", json_pack("[s]", h->warning));
  json_t *ans = json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1", "kind",
                          "AdmissionReview", "response", resp);
  *out = json_dumps(ans, JSON_COMPACT);
  *outlen = strlen(*out);
  json_decref(ans);
  json_decref(review);
  return h->http_code ? h->http_code : 200;
}

static void hook_init(hook_t *h) {
  memset(h, 0, sizeof(*h));
  h->allowed = 1;
  h->reqs = json_array();
}

/* The last request h received (borrowed), failing when none. */
static json_t *last_req(hook_t *h) {
  size_t n = json_array_size(h->reqs);
  assert_true(n > 0);
  return json_array_get(h->reqs, n - 1);
}

/* Registers a configuration of kind with one webhook name whose rules
 * and extra members are given as JSON text; returns its id. */
static uint64_t reg(kin_sim *sim, const char *kind, const char *name, const char *rules,
                    const char *extra, hook_t *h) {
  char cfg[4096];
  snprintf(cfg, sizeof(cfg),
           "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":\"%s\","
           "\"metadata\":{\"name\":\"cfg-%s\"},\"webhooks\":[{\"name\":\"%s\","
           "\"clientConfig\":{\"url\":\"https://127.0.0.1:9443/hook-%s\"},\"rules\":%s,"
           "\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]%s%s}]}",
           kind, name, name, name, rules, extra ? "," : "", extra ? extra : "");
  uint64_t id = 0;
  assert_int_equal(kin_sim_webhook_register(sim, cfg, strlen(cfg), hook_fn, h, &id), 0);
  assert_true(id > 0);
  return id;
}

#define CM_RULES                                                                           \
  "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"],"        \
  "\"operations\":[\"*\"]}]"

static const char *const CM_PATH = "/api/v1/namespaces/default/configmaps";

static void test_sim_AdmissionDenyCreate(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t h;
  hook_init(&h);
  h.allowed = 0;
  h.message = "image is required";
  h.code = 403;
  h.reason = "Forbidden";
  reg(sim, "ValidatingWebhookConfiguration", "deny.example.com", CM_RULES,
      "\"timeoutSeconds\":7", &h);
  sim_resp r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"x\":\"1\"}}");
  assert_int_equal(r.code, 403);
  assert_string_equal(jstr(r.json, "kind"), "Status");
  assert_string_equal(jstr(r.json, "status"), "Failure");
  assert_string_equal(jstr(r.json, "reason"), "Forbidden");
  assert_string_equal(jstr(r.json, "message"),
                      "admission webhook \"deny.example.com\" denied the request: image is "
                      "required");
  assert_int_equal(jint(r.json, "code"), 403);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  /* the review kube-apiserver sends */
  json_t *q = last_req(&h);
  assert_string_equal(h.path, "/hook-deny.example.com");
  assert_int_equal(h.timeout_ms, 7000);
  assert_int_equal(strlen(jstr(q, "uid")), 36);
  assert_string_equal(jstr(q, "kind.kind"), "ConfigMap");
  assert_string_equal(jstr(q, "kind.version"), "v1");
  assert_string_equal(jstr(q, "resource.resource"), "configmaps");
  assert_string_equal(jstr(q, "requestKind.kind"), "ConfigMap");
  assert_string_equal(jstr(q, "requestResource.resource"), "configmaps");
  assert_string_equal(jstr(q, "name"), "a");
  assert_string_equal(jstr(q, "namespace"), "default");
  assert_string_equal(jstr(q, "operation"), "CREATE");
  assert_non_null(jstr(q, "userInfo.username"));
  assert_true(json_is_array(json_object_get(json_object_get(q, "userInfo"), "groups")));
  assert_string_equal(jstr(q, "object.data.x"), "1");
  assert_string_equal(jstr(q, "object.apiVersion"), "v1");
  /* validating webhooks see what would be stored */
  assert_int_equal(strlen(jstr(q, "object.metadata.uid")), 36);
  assert_true(json_is_null(json_object_get(q, "oldObject")));
  assert_true(json_is_false(json_object_get(q, "dryRun")));
  assert_string_equal(jstr(q, "options.kind"), "CreateOptions");
  assert_string_equal(jstr(q, "options.apiVersion"), "meta.k8s.io/v1");
  assert_null(json_object_get(q, "subResource"));
  /* without status.code: 400 (ToStatusErr), no reason */
  h.code = 0;
  h.reason = NULL;
  h.message = NULL;
  r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "message"),
                      "admission webhook \"deny.example.com\" denied the request without "
                      "explanation");
  assert_null(json_object_get(r.json, "reason"));
  sim_resp_free(&r);
  json_decref(h.reqs);
  kin_sim_free(sim);
}

static void test_sim_AdmissionMutateThenValidate(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t m, v;
  hook_init(&m);
  hook_init(&v);
  m.patch = "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"defaulted\":\"yes\"}}]";
  m.warning = "defaulted a label";
  v.warning = "looked at it";
  reg(sim, "ValidatingWebhookConfiguration", "v.example.com", CM_RULES, NULL, &v);
  reg(sim, "MutatingWebhookConfiguration", "m.example.com", CM_RULES, NULL, &m);
  sim_resp r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"generateName\":\"g-\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "metadata.labels.defaulted"), "yes");
  assert_string_equal(r.warning, "299 - \"defaulted a label\"\n299 - \"looked at it\"");
  /* the mutating one saw the object sent (no name yet), the validating
   * one the mutated object with its generated name */
  assert_null(jstr(last_req(&m), "name"));
  assert_null(jstr(last_req(&m), "object.metadata.labels.defaulted"));
  assert_string_equal(jstr(last_req(&v), "object.metadata.labels.defaulted"), "yes");
  assert_string_equal(jstr(last_req(&v), "name"), jstr(r.json, "metadata.name"));
  sim_resp_free(&r);
  json_decref(m.reqs);
  json_decref(v.reqs);
  kin_sim_free(sim);
}

static void test_sim_AdmissionFailurePolicy(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t h;
  hook_init(&h);
  h.fail = KIN_EIO;
  uint64_t id = reg(sim, "ValidatingWebhookConfiguration", "fail.example.com", CM_RULES,
                    "\"failurePolicy\":\"Fail\"", &h);
  sim_resp r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 500);
  assert_string_equal(jstr(r.json, "reason"), "InternalError");
  const char *msg = jstr(r.json, "message");
  const char *want = "Internal error occurred: failed calling webhook \"fail.example.com\": "
                     "failed to call webhook: Post \"/hook-fail.example.com?timeout=10s\": ";
  assert_memory_equal(msg, want, strlen(want));
  assert_string_equal(jstr(json_array_get(json_object_get(json_object_get(r.json, "details"),
                                                          "causes"), 0), "message"),
                      msg + strlen("Internal error occurred: "));
  sim_resp_free(&r);
  /* an answer that is not 200, under Fail too */
  h.fail = 0;
  h.http_code = 500;
  r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 500);
  sim_resp_free(&r);
  assert_int_equal(kin_sim_webhook_unregister(sim, id), 0);
  assert_int_equal(kin_sim_webhook_unregister(sim, id), KIN_ENOENT);
  h.http_code = 0;
  h.fail = KIN_EIO;
  reg(sim, "ValidatingWebhookConfiguration", "ignore.example.com", CM_RULES,
      "\"failurePolicy\":\"Ignore\"", &h);
  r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  json_decref(h.reqs);
  kin_sim_free(sim);
}

/* Every path of an update (PUT, merge, JSON and strategic patches,
 * apply) sends UPDATE with the stored object as oldObject. */
static void test_sim_AdmissionUpdatePaths(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  hook_t h;
  hook_init(&h);
  reg(sim, "ValidatingWebhookConfiguration", "u.example.com", CM_RULES, NULL, &h);
  const char *p = "/api/v1/namespaces/default/configmaps/a";
  sim_resp r = sim_req(sim, "PUT", p, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"x\":\"2\"}}");
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  json_t *q = last_req(&h);
  assert_string_equal(jstr(q, "operation"), "UPDATE");
  assert_string_equal(jstr(q, "options.kind"), "UpdateOptions");
  assert_string_equal(jstr(q, "oldObject.data.v"), "1");
  assert_string_equal(jstr(q, "object.data.x"), "2");
  static const char *const types[] = {"application/merge-patch+json",
                                      "application/strategic-merge-patch+json"};
  for (int i = 0; i < 2; i++) {
    char body[100];
    snprintf(body, sizeof(body), "{\"data\":{\"x\":\"%d\"}}", 3 + i);
    r = sim_do(sim, "PATCH", p, types[i], body, NULL);
    assert_int_equal(r.code, 200);
    sim_resp_free(&r);
    q = last_req(&h);
    assert_string_equal(jstr(q, "operation"), "UPDATE");
    char want[8];
    snprintf(want, sizeof(want), "%d", 3 + i);
    assert_string_equal(jstr(q, "object.data.x"), want);
  }
  r = sim_do(sim, "PATCH", p, "application/json-patch+json",
             "[{\"op\":\"replace\",\"path\":\"/data/x\",\"value\":\"5\"}]", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  assert_string_equal(jstr(last_req(&h), "oldObject.data.x"), "4");
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/a?fieldManager=me&force=true",
             "application/apply-patch+yaml",
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"},"
             "\"data\":{\"x\":\"6\"}}",
             NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  q = last_req(&h);
  assert_string_equal(jstr(q, "operation"), "UPDATE");
  assert_string_equal(jstr(q, "object.data.x"), "6");
  assert_string_equal(jstr(q, "options.fieldManager"), "me");
  /* apply of a new object: CREATE */
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/b?fieldManager=me",
             "application/apply-patch+yaml",
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}", NULL);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  assert_string_equal(jstr(last_req(&h), "operation"), "CREATE");
  /* a denied update leaves the object as it was */
  h.allowed = 0;
  h.message = "no";
  h.code = 422;
  r = sim_do(sim, "PATCH", p, "application/merge-patch+json", "{\"data\":{\"x\":\"9\"}}", NULL);
  assert_int_equal(r.code, 422);
  assert_string_equal(jstr(r.json, "message"),
                      "admission webhook \"u.example.com\" denied the request: no");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", p, NULL);
  assert_string_equal(jstr(r.json, "data.x"), "6");
  sim_resp_free(&r);
  json_decref(h.reqs);
  kin_sim_free(sim);
}

static void test_sim_AdmissionDelete(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "2");
  sim_put_cm(sim, "default", "c", NULL, "3");
  hook_t h;
  hook_init(&h);
  reg(sim, "ValidatingWebhookConfiguration", "d.example.com",
      "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"],"
      "\"operations\":[\"DELETE\"]}]",
      NULL, &h);
  h.allowed = 0;
  h.message = "keep it";
  sim_resp r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  json_t *q = last_req(&h);
  assert_string_equal(jstr(q, "operation"), "DELETE");
  assert_true(json_is_null(json_object_get(q, "object")));
  assert_string_equal(jstr(q, "oldObject.data.v"), "1");
  assert_string_equal(jstr(q, "options.kind"), "DeleteOptions");
  assert_string_equal(jstr(q, "name"), "a");
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  h.allowed = 1;
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  /* a collection: one review per object */
  size_t before = json_array_size(h.reqs);
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "kind"), "ConfigMapList");
  sim_resp_free(&r);
  /* b, c and kube-root-ca.crt when the sim has it */
  assert_true(json_array_size(h.reqs) >= before + 2);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/b", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  json_decref(h.reqs);
  kin_sim_free(sim);
}

/* Rules, scope, subresources, namespaceSelector, objectSelector. */
static void test_sim_AdmissionMatching(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t other, ns, obj, status, cluster;
  hook_init(&other);
  hook_init(&ns);
  hook_init(&obj);
  hook_init(&status);
  hook_init(&cluster);
  reg(sim, "ValidatingWebhookConfiguration", "other.example.com",
      "[{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"*\"],\"resources\":[\"*\"],"
      "\"operations\":[\"*\"]}]",
      NULL, &other);
  reg(sim, "ValidatingWebhookConfiguration", "ns.example.com", CM_RULES,
      "\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}}", &ns);
  reg(sim, "ValidatingWebhookConfiguration", "obj.example.com", CM_RULES,
      "\"objectSelector\":{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\","
      "\"values\":[\"web\"]}]}",
      &obj);
  reg(sim, "ValidatingWebhookConfiguration", "status.example.com",
      "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"*/status\"],"
      "\"operations\":[\"UPDATE\"]}]",
      NULL, &status);
  reg(sim, "ValidatingWebhookConfiguration", "cluster.example.com",
      "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"*\"],"
      "\"operations\":[\"CREATE\"],\"scope\":\"Cluster\"}]",
      NULL, &cluster);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces",
                       "{\"metadata\":{\"name\":\"ta\",\"labels\":{\"team\":\"a\"}}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  /* the namespace itself: cluster scope, the namespace is its own */
  assert_int_equal(json_array_size(cluster.reqs), 1);
  assert_string_equal(jstr(last_req(&cluster), "namespace"), "ta");
  r = sim_req(sim, "POST", "/api/v1/namespaces/ta/configmaps", "{\"metadata\":{\"name\":\"x\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", CM_PATH,
              "{\"metadata\":{\"name\":\"y\",\"labels\":{\"app\":\"web\"}}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  assert_int_equal(json_array_size(ns.reqs), 1); /* only in team a's namespace */
  assert_string_equal(jstr(last_req(&ns), "namespace"), "ta");
  assert_int_equal(json_array_size(obj.reqs), 1); /* only the labelled one */
  assert_string_equal(jstr(last_req(&obj), "name"), "y");
  assert_int_equal(json_array_size(cluster.reqs), 1); /* not the namespaced ones */
  /* the status subresource of a pod */
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/pods",
              "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
              "\"image\":\"i\"}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  assert_int_equal(json_array_size(status.reqs), 0);
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/pods/p/status",
             "application/merge-patch+json", "{\"status\":{\"phase\":\"Running\"}}", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  assert_int_equal(json_array_size(status.reqs), 1);
  assert_string_equal(jstr(last_req(&status), "subResource"), "status");
  assert_string_equal(jstr(last_req(&status), "requestSubResource"), "status");
  assert_int_equal(json_array_size(other.reqs), 0);
  json_decref(other.reqs);
  json_decref(ns.reqs);
  json_decref(obj.reqs);
  json_decref(status.reqs);
  json_decref(cluster.reqs);
  kin_sim_free(sim);
}

static void test_sim_AdmissionDryRun(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t h;
  hook_init(&h);
  reg(sim, "ValidatingWebhookConfiguration", "dry.example.com", CM_RULES, NULL, &h);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                       "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  assert_true(json_is_true(json_object_get(last_req(&h), "dryRun")));
  assert_string_equal(jstr(json_array_get(json_object_get(json_object_get(last_req(&h),
                                                                          "options"), "dryRun"),
                                          0), ""),
                      "All");
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  hook_t s;
  hook_init(&s);
  reg(sim, "ValidatingWebhookConfiguration", "side.example.com", CM_RULES,
      "\"sideEffects\":\"Unknown\"", &s);
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
              "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 400);
  assert_string_equal(jstr(r.json, "reason"), "BadRequest");
  assert_string_equal(jstr(r.json, "message"),
                      "admission webhook \"side.example.com\" does not support dry run");
  sim_resp_free(&r);
  assert_int_equal(json_array_size(s.reqs), 0);
  json_decref(h.reqs);
  json_decref(s.reqs);
  kin_sim_free(sim);
}

/* A dry run that creates, with webhooks registered: the answer is the
 * would-be object, nothing is stored. An apply (and a PUT that creates)
 * first tries the update, whose 404 must not become the answer. */
static void test_sim_AdmissionDryRunCreates(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t other, m, v;
  hook_init(&other);
  hook_init(&m);
  hook_init(&v);
  /* a webhook on another resource only */
  reg(sim, "ValidatingWebhookConfiguration", "other.example.com",
      "[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"secrets\"],"
      "\"operations\":[\"*\"]}]",
      NULL, &other);
  const char *apply = "/api/v1/namespaces/default/configmaps/d?fieldManager=t&dryRun=All";
  const char *cfg = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"d\"},"
                    "\"data\":{\"x\":\"1\"}}";
  sim_resp r = sim_do(sim, "PATCH", apply, "application/apply-patch+yaml", cfg, NULL);
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "metadata.name"), "d");
  assert_string_equal(jstr(r.json, "data.x"), "1");
  assert_int_equal(strlen(jstr(r.json, "metadata.uid")), 36);
  assert_null(jstr(r.json, "metadata.resourceVersion"));
  assert_string_equal(jstr(json_array_get(json_object_get(json_object_get(r.json, "metadata"),
                                                          "managedFields"),
                                          0),
                           "manager"),
                      "t");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/d", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  /* a PUT that creates (a Lease allows create on update) */
  const char *lease = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l";
  char url[200];
  snprintf(url, sizeof(url), "%s?dryRun=All", lease);
  r = sim_req(sim, "PUT", url,
              "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
              "\"metadata\":{\"name\":\"l\"},\"spec\":{\"holderIdentity\":\"me\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), "me");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", lease, NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  assert_int_equal(json_array_size(other.reqs), 0);
  /* webhooks on the resource: called with dryRun true, the mutation in
   * the answer */
  m.patch = "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{\"m\":\"yes\"}}]";
  reg(sim, "MutatingWebhookConfiguration", "m.example.com", CM_RULES, NULL, &m);
  reg(sim, "ValidatingWebhookConfiguration", "v.example.com", CM_RULES, NULL, &v);
  r = sim_do(sim, "PATCH", apply, "application/apply-patch+yaml", cfg, NULL);
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "metadata.name"), "d");
  assert_string_equal(jstr(r.json, "metadata.labels.m"), "yes");
  assert_null(jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  for (int i = 0; i < 2; i++) {
    json_t *q = last_req(i ? &v : &m);
    assert_string_equal(jstr(q, "operation"), "CREATE");
    assert_true(json_is_true(json_object_get(q, "dryRun")));
    assert_string_equal(jstr(q, "options.kind"), "CreateOptions");
    assert_string_equal(jstr(q, "options.fieldManager"), "t");
    assert_string_equal(jstr(q, "object.data.x"), "1");
  }
  assert_string_equal(jstr(last_req(&v), "object.metadata.labels.m"), "yes");
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/d", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  /* a dry-run POST */
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
              "{\"metadata\":{\"name\":\"p\"},\"data\":{\"x\":\"2\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "metadata.name"), "p");
  assert_string_equal(jstr(r.json, "metadata.labels.m"), "yes");
  sim_resp_free(&r);
  assert_true(json_is_true(json_object_get(last_req(&v), "dryRun")));
  assert_string_equal(jstr(last_req(&v), "object.data.x"), "2");
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/p", NULL);
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  /* a dry-run apply to an existing object: UPDATE, the stored one kept */
  sim_put_cm(sim, "default", "d", NULL, "1");
  size_t before = json_array_size(v.reqs);
  r = sim_do(sim, "PATCH", apply, "application/apply-patch+yaml",
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"d\"},"
             "\"data\":{\"x\":\"3\"}}",
             NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.x"), "3");
  assert_string_equal(jstr(r.json, "metadata.labels.m"), "yes");
  sim_resp_free(&r);
  assert_int_equal(json_array_size(v.reqs), before + 1);
  json_t *q = last_req(&v);
  assert_string_equal(jstr(q, "operation"), "UPDATE");
  assert_true(json_is_true(json_object_get(q, "dryRun")));
  assert_string_equal(jstr(q, "object.data.x"), "3");
  assert_non_null(json_object_get(q, "oldObject"));
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/d", NULL);
  assert_int_equal(r.code, 200);
  assert_null(jstr(r.json, "data.x"));
  assert_string_equal(jstr(r.json, "data.v"), "1");
  sim_resp_free(&r);
  json_decref(other.reqs);
  json_decref(m.reqs);
  json_decref(v.reqs);
  kin_sim_free(sim);
}

/* matchPolicy: a rule naming v1 of a CRD served at v1 and v2 matches a
 * v2 write under Equivalent (the object sent at v1, requestKind v2), not
 * under Exact. */
static void test_sim_AdmissionMatchPolicy(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(
      sim, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
      "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
      "\"metadata\":{\"name\":\"websites.example.com\"},\"spec\":{\"group\":\"example.com\","
      "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"websites\",\"singular\":\"website\","
      "\"kind\":\"Website\",\"listKind\":\"WebsiteList\"},\"versions\":["
      "{\"name\":\"v1\",\"served\":true,\"storage\":true},"
      "{\"name\":\"v2\",\"served\":true,\"storage\":false}]}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  hook_t eq, ex;
  hook_init(&eq);
  hook_init(&ex);
  const char *rules = "[{\"apiGroups\":[\"example.com\"],\"apiVersions\":[\"v1\"],"
                      "\"resources\":[\"websites\"],\"operations\":[\"CREATE\"]}]";
  reg(sim, "ValidatingWebhookConfiguration", "eq.example.com", rules, NULL, &eq);
  reg(sim, "ValidatingWebhookConfiguration", "ex.example.com", rules, "\"matchPolicy\":\"Exact\"",
      &ex);
  r = sim_req(sim, "POST", "/apis/example.com/v2/namespaces/default/websites",
              "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Website\",\"metadata\":{\"name\":"
              "\"w\"},\"spec\":{\"a\":1}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  assert_int_equal(json_array_size(ex.reqs), 0);
  assert_int_equal(json_array_size(eq.reqs), 1);
  json_t *q = last_req(&eq);
  assert_string_equal(jstr(q, "kind.version"), "v1");
  assert_string_equal(jstr(q, "resource.version"), "v1");
  assert_string_equal(jstr(q, "requestKind.version"), "v2");
  assert_string_equal(jstr(q, "requestResource.version"), "v2");
  assert_string_equal(jstr(q, "object.apiVersion"), "example.com/v1");
  json_decref(eq.reqs);
  json_decref(ex.reqs);
  kin_sim_free(sim);
}

/* A webhook that reads the sim through its API while it is called: the
 * write is not holding the store's lock, so both complete. */
static void test_sim_AdmissionWebhookCallsBack(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  hook_t m, v;
  hook_init(&m);
  hook_init(&v);
  m.callback = v.callback = sim;
  m.patch = "[{\"op\":\"add\",\"path\":\"/data/y\",\"value\":\"2\"}]";
  reg(sim, "MutatingWebhookConfiguration", "m.example.com", CM_RULES, NULL, &m);
  reg(sim, "ValidatingWebhookConfiguration", "v.example.com", CM_RULES, NULL, &v);
  sim_resp r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/a",
                      "application/merge-patch+json", "{\"data\":{\"x\":\"1\"}}", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "data.y"), "2");
  sim_resp_free(&r);
  assert_int_equal(m.callback_code, 200);
  assert_int_equal(v.callback_code, 200);
  /* a mutating webhook's patch to a DELETE (it patches every operation) */
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 500);
  assert_string_equal(jstr(r.json, "message"),
                      "Internal error occurred: admission webhook \"m.example.com\" attempted to "
                      "modify the object, which is not supported for this operation");
  sim_resp_free(&r);
  m.patch = NULL;
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  json_decref(m.reqs);
  json_decref(v.reqs);
  kin_sim_free(sim);
}

/* reinvocationPolicy IfNeeded: the first mutating webhook is called again
 * because a later one changed the object; without it, once. */
static void test_sim_AdmissionReinvocation(void **state) {
  kin_sim *sim = sim_start(0, 0);
  hook_t a, b, n;
  hook_init(&a);
  hook_init(&b);
  hook_init(&n);
  b.patch = "[{\"op\":\"add\",\"path\":\"/data\",\"value\":{\"b\":\"1\"}}]";
  reg(sim, "MutatingWebhookConfiguration", "a.example.com", CM_RULES,
      "\"reinvocationPolicy\":\"IfNeeded\"", &a);
  reg(sim, "MutatingWebhookConfiguration", "an.example.com", CM_RULES,
      "\"reinvocationPolicy\":\"Never\"", &n);
  reg(sim, "MutatingWebhookConfiguration", "b.example.com", CM_RULES, NULL, &b);
  sim_resp r = sim_req(sim, "POST", CM_PATH, "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "data.b"), "1");
  sim_resp_free(&r);
  assert_int_equal(json_array_size(a.reqs), 2);
  assert_string_equal(jstr(last_req(&a), "object.data.b"), "1");
  assert_int_equal(json_array_size(n.reqs), 1);
  assert_int_equal(json_array_size(b.reqs), 1);
  json_decref(a.reqs);
  json_decref(b.reqs);
  json_decref(n.reqs);
  kin_sim_free(sim);
}

KIN_SUITE(sim_admission, cmocka_unit_test(test_sim_AdmissionDenyCreate),
          cmocka_unit_test(test_sim_AdmissionMutateThenValidate),
          cmocka_unit_test(test_sim_AdmissionFailurePolicy),
          cmocka_unit_test(test_sim_AdmissionUpdatePaths),
          cmocka_unit_test(test_sim_AdmissionDelete),
          cmocka_unit_test(test_sim_AdmissionMatching),
          cmocka_unit_test(test_sim_AdmissionDryRun),
          cmocka_unit_test(test_sim_AdmissionDryRunCreates),
          cmocka_unit_test(test_sim_AdmissionMatchPolicy),
          cmocka_unit_test(test_sim_AdmissionWebhookCallsBack),
          cmocka_unit_test(test_sim_AdmissionReinvocation))
