/* test_sim_request_log.c -- kinformer.sim's request log
 * (kin_sim_request_log_start, kin_sim_request_log_take): every request as
 * the RBAC attributes kube-apiserver's authorizer sees, for deriving an
 * operator's rules from what it did; and the named users' tokens
 * (kin_sim_add_token, kin_sim_token) that tell two clients apart. Not a
 * port: client-go has no counterpart (kube-apiserver's audit log and
 * audit2rbac are the nearest). */
#include "kin_test.h"

#include "kin.h"
#include "sim_client.h"

#define UA "User-Agent: reqlog-test/1"

/* Sends method path with the bearer token tok (NULL: none), the User-Agent
 * above and an optional body of content type ctype (NULL: JSON). */
static sim_resp do_as(kin_sim *sim, const char *tok, const char *method, const char *path,
                      const char *ctype, const char *body) {
  sim_resp r;
  memset(&r, 0, sizeof(r));
  sim_sink sink = {0};
  CURL *c = sim_easy(sim, method, path, &sink, &r);
  struct curl_slist *h = NULL;
  char line[512];
  snprintf(line, sizeof(line), "Content-Type: %s", ctype ? ctype : "application/json");
  h = curl_slist_append(h, line);
  h = curl_slist_append(h, UA);
  if (tok) {
    snprintf(line, sizeof(line), "Authorization: Bearer %s", tok);
    h = curl_slist_append(h, line);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  }
  sim_finish(c, h, &sink, &r, method, path);
  return r;
}

/* do_as, checking the status and dropping the answer. */
static void expect(kin_sim *sim, const char *tok, const char *method, const char *path,
                   const char *ctype, const char *body, long code) {
  sim_resp r = do_as(sim, tok, method, path, ctype, body);
  if (r.code != code) fail_msg("%s %s: %ld, want %ld: %s", method, path, r.code, code, r.body);
  sim_resp_free(&r);
}

/* The log taken now, parsed (an array; the test fails otherwise). */
static json_t *take(kin_sim *sim) {
  char *s = kin_sim_request_log_take(sim);
  assert_non_null(s);
  json_error_t e;
  json_t *log = json_loads(s, 0, &e);
  if (!json_is_array(log)) fail_msg("not a JSON array: %s (%s)", s, e.text);
  free(s);
  return log;
}

/* Fails unless log holds exactly the entries of want (a JSON array text),
 * in order, each object equal member for member. */
static void assert_log(json_t *log, const char *want_text) {
  json_error_t e;
  json_t *want = json_loads(want_text, 0, &e);
  if (!want) fail_msg("bad expectation (%s): %s", e.text, want_text);
  size_t n = json_array_size(want) > json_array_size(log) ? json_array_size(want)
                                                          : json_array_size(log);
  for (size_t i = 0; i < n; i++) {
    json_t *g = json_array_get(log, i), *w = json_array_get(want, i);
    if (g && w && json_equal(g, w)) continue;
    char *gs = g ? json_dumps(g, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *ws = w ? json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    fail_msg("entry %zu:\n got  %s\n want %s", i, gs ? gs : "(none)", ws ? ws : "(none)");
  }
  json_decref(want);
}

static kin_sim *start_with_token(size_t limit) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.token = "admin-token";
  cfg.request_log_limit = limit;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  assert_int_equal(kin_sim_add_token(sim, "operator", "op-token"), 0);
  return sim;
}

#define CM(name) \
  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\"}," \
  "\"data\":{\"k\":\"v\"}}"
#define CMS "/api/v1/namespaces/default/configmaps"

/* One request of each kind an operator makes, the refused ones too (an
 * injected failure included; the admin endpoint is not logged), each as
 * the attributes kube-apiserver's RequestInfo and authenticator give. */
static void test_sim_RequestLogKeepsEveryRequestAsRbacAttributes(void **state) {
  kin_sim *sim = start_with_token(0);
  kin_sim_request_log_start(sim);
  const char *op = "op-token";
  expect(sim, NULL, "GET", "/version", NULL, NULL, 200);
  expect(sim, op, "GET", "/api", NULL, NULL, 200);
  expect(sim, op, "GET", "/apis", NULL, NULL, 200);
  expect(sim, op, "GET", "/openapi/v3", NULL, NULL, 200);
  expect(sim, NULL, "GET", "/healthz", NULL, NULL, 200);
  expect(sim, op, "POST", CMS, NULL, CM("a"), 201);
  expect(sim, op, "GET", CMS "/a", NULL, NULL, 200);
  expect(sim, op, "GET", CMS "?limit=500", NULL, NULL, 200);
  expect(sim, op, "GET", "/api/v1/configmaps?fieldSelector=metadata.name%3Da", NULL, NULL, 200);
  expect(sim, op, "GET", CMS "?watch=true&timeoutSeconds=1", NULL, NULL, 200);
  expect(sim, op, "GET",
         CMS "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
             "&allowWatchBookmarks=true&timeoutSeconds=1",
         NULL, NULL, 200);
  expect(sim, op, "GET", "/api/v1/watch/namespaces/default/configmaps/a?timeoutSeconds=1", NULL,
         NULL, 200);
  expect(sim, op, "PUT", CMS "/a", NULL, CM("a"), 200);
  expect(sim, op, "PATCH", CMS "/a", "application/merge-patch+json", "{\"data\":{\"k\":\"w\"}}",
         200);
  expect(sim, op, "POST", "/apis/apps/v1/namespaces/default/deployments", NULL,
         "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
         "\"spec\":{\"replicas\":1}}",
         201);
  expect(sim, op, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d/status",
         "application/merge-patch+json", "{\"status\":{\"replicas\":1}}", 200);
  expect(sim, op, "GET", "/api/v1/namespaces/default", NULL, NULL, 200);
  expect(sim, op, "POST", CMS "?dryRun=All", NULL, CM("b"), 201);
  expect(sim, op, "POST", CMS, NULL, CM("a"), 409);
  expect(sim, op, "POST", CMS, NULL, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                                     "\"metadata\":{\"name\":\"Bad_Name\"}}", 422);
  expect(sim, op, "GET", "/apis/example.com/v1/namespaces/default/widgets", NULL, NULL, 404);
  expect(sim, NULL, "GET", CMS, NULL, NULL, 401);
  expect(sim, op, "DELETE", CMS "/a", NULL, NULL, 200);
  expect(sim, op, "DELETE", CMS, NULL, NULL, 200);
  expect(sim, "admin-token", "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", NULL,
         "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}", 201);
  assert_int_equal(kin_sim_fail_next(sim, 503, 1), 0);
  expect(sim, op, "GET", CMS "/a", NULL, NULL, 503);
  expect(sim, "admin-token", "POST", "/kinformer-sim/faults", NULL, "{\"latencyMs\":0}", 200);

  json_t *log = take(sim);
#define E(verb, rest, code) "{\"verb\":\"" verb "\"," rest "\"userAgent\":\"reqlog-test/1\",\"code\":" #code "}"
#define OP "\"user\":\"operator\","
#define CORE_CM "\"apiGroup\":\"\",\"apiVersion\":\"v1\",\"resource\":\"configmaps\","
#define IN_DEFAULT "\"namespace\":\"default\","
  assert_log(
      log,
      "["
      E("get", "\"nonResourceURL\":\"/version\",", 200) ","
      E("get", "\"nonResourceURL\":\"/api\"," OP, 200) ","
      E("get", "\"nonResourceURL\":\"/apis\"," OP, 200) ","
      E("get", "\"nonResourceURL\":\"/openapi/v3\"," OP, 200) ","
      E("get", "\"nonResourceURL\":\"/healthz\",", 200) ","
      E("create", CORE_CM IN_DEFAULT OP, 201) ","
      E("get", CORE_CM IN_DEFAULT "\"name\":\"a\"," OP, 200) ","
      E("list", CORE_CM IN_DEFAULT OP, 200) ","
      E("list", CORE_CM "\"name\":\"a\"," OP, 200) ","
      E("watch", CORE_CM IN_DEFAULT OP, 200) ","
      E("watch", CORE_CM IN_DEFAULT OP, 200) ","
      E("watch", CORE_CM IN_DEFAULT "\"name\":\"a\"," OP, 200) ","
      E("update", CORE_CM IN_DEFAULT "\"name\":\"a\"," OP, 200) ","
      E("patch", CORE_CM IN_DEFAULT "\"name\":\"a\"," OP, 200) ","
      E("create", "\"apiGroup\":\"apps\",\"apiVersion\":\"v1\",\"resource\":\"deployments\","
                  IN_DEFAULT OP, 201) ","
      E("patch", "\"apiGroup\":\"apps\",\"apiVersion\":\"v1\",\"resource\":\"deployments\","
                 "\"subresource\":\"status\"," IN_DEFAULT "\"name\":\"d\"," OP, 200) ","
      E("get", "\"apiGroup\":\"\",\"apiVersion\":\"v1\",\"resource\":\"namespaces\","
               IN_DEFAULT "\"name\":\"default\"," OP, 200) ","
      "{\"verb\":\"create\"," CORE_CM IN_DEFAULT OP
      "\"userAgent\":\"reqlog-test/1\",\"dryRun\":true,\"code\":201},"
      E("create", CORE_CM IN_DEFAULT OP, 409) ","
      E("create", CORE_CM IN_DEFAULT OP, 422) ","
      E("list", "\"apiGroup\":\"example.com\",\"apiVersion\":\"v1\",\"resource\":\"widgets\","
                IN_DEFAULT OP, 404) ","
      E("list", CORE_CM IN_DEFAULT, 401) ","
      E("delete", CORE_CM IN_DEFAULT "\"name\":\"a\"," OP, 200) ","
      E("deletecollection", CORE_CM IN_DEFAULT OP, 200) ","
      E("create", "\"apiGroup\":\"authentication.k8s.io\",\"apiVersion\":\"v1\","
                  "\"resource\":\"selfsubjectreviews\",\"user\":\"kinformer-sim\",", 201) ","
      E("get", CORE_CM IN_DEFAULT "\"name\":\"a\"," OP, 503)
      "]");
  json_decref(log);
  kin_sim_free(sim);
}

/* A take empties the log and keeps logging; nothing before the start. */
static void test_sim_RequestLogTakeReturnsOnlyNewEntries(void **state) {
  kin_sim *sim = start_with_token(0);
  assert_null(kin_sim_request_log_take(sim)); /* never started */
  expect(sim, "op-token", "GET", CMS, NULL, NULL, 200);
  assert_null(kin_sim_request_log_take(sim));
  kin_sim_request_log_start(sim);
  expect(sim, "op-token", "GET", CMS "/nope", NULL, NULL, 404);
  json_t *log = take(sim);
  assert_log(log, "[" E("get", CORE_CM IN_DEFAULT "\"name\":\"nope\"," OP, 404) "]");
  json_decref(log);
  log = take(sim);
  assert_log(log, "[]");
  json_decref(log);
  kin_sim_request_log_start(sim); /* again: changes nothing */
  expect(sim, "op-token", "POST", CMS, NULL, CM("c"), 201);
  expect(sim, "op-token", "GET", "/apis/apps/v1/deployments", NULL, NULL, 200);
  log = take(sim);
  assert_log(log, "[" E("create", CORE_CM IN_DEFAULT OP, 201) ","
                  E("list", "\"apiGroup\":\"apps\",\"apiVersion\":\"v1\","
                            "\"resource\":\"deployments\"," OP, 200) "]");
  json_decref(log);
  kin_sim_free(sim);
}

/* A list or watch limited to one name by its field selector has that name,
 * as RequestInfo gives it (RBAC's resourceNames then apply to it). */
static void test_sim_RequestLogNamesAListByFieldSelector(void **state) {
  kin_sim *sim = start_with_token(0);
  kin_sim_request_log_start(sim);
  expect(sim, "op-token", "GET", CMS "?fieldSelector=metadata.name%3D%3Db", NULL, NULL, 200);
  expect(sim, "op-token", "GET",
         CMS "?fieldSelector=metadata.namespace%3Ddefault%2Cmetadata.name%3Dc", NULL, NULL, 200);
  expect(sim, "op-token", "GET", CMS "?fieldSelector=metadata.name%21%3Dx", NULL, NULL, 200);
  expect(sim, "op-token", "GET", CMS "?fieldSelector=metadata.name%3D..", NULL, NULL, 200);
  expect(sim, "op-token", "GET", CMS "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dw",
         NULL, NULL, 200);
  expect(sim, "op-token", "DELETE", CMS "?fieldSelector=metadata.name%3Dd", NULL, NULL, 200);
  json_t *log = take(sim);
  assert_log(log, "["
                  E("list", CORE_CM IN_DEFAULT "\"name\":\"b\"," OP, 200) ","
                  E("list", CORE_CM IN_DEFAULT "\"name\":\"c\"," OP, 200) ","
                  E("list", CORE_CM IN_DEFAULT OP, 200) ","
                  E("list", CORE_CM IN_DEFAULT OP, 200) ","
                  E("watch", CORE_CM IN_DEFAULT "\"name\":\"w\"," OP, 200) ","
                  E("deletecollection", CORE_CM IN_DEFAULT OP, 200) "]");
  json_decref(log);
  kin_sim_free(sim);
}

/* Past the limit requests are only counted; the take says how many. */
static void test_sim_RequestLogIsBounded(void **state) {
  kin_sim *sim = start_with_token(3);
  kin_sim_request_log_start(sim);
  for (int i = 0; i < 5; i++) expect(sim, "op-token", "GET", CMS, NULL, NULL, 200);
  json_t *log = take(sim);
  assert_log(log, "[" E("list", CORE_CM IN_DEFAULT OP, 200) "," E("list", CORE_CM IN_DEFAULT OP, 200)
                  "," E("list", CORE_CM IN_DEFAULT OP, 200) ",{\"truncated\":true,\"dropped\":2}]");
  json_decref(log);
  /* The take starts a new count. */
  expect(sim, "op-token", "GET", CMS, NULL, NULL, 200);
  log = take(sim);
  assert_log(log, "[" E("list", CORE_CM IN_DEFAULT OP, 200) "]");
  json_decref(log);
  for (int i = 0; i < 4; i++) expect(sim, "op-token", "GET", "/version", NULL, NULL, 200);
  log = take(sim);
  assert_int_equal(json_array_size(log), 4);
  assert_true(json_is_true(json_object_get(json_array_get(log, 3), "truncated")));
  assert_int_equal(jint(json_array_get(log, 3), "dropped"), 1);
  json_decref(log);
  kin_sim_free(sim);
}

/* Strings the client chose stay JSON: a User-Agent that is not UTF-8
 * gets U+FFFD, quotes and control bytes are escaped. */
static void test_sim_RequestLogEscapesWhatClientsSend(void **state) {
  kin_sim *sim = sim_start(0, 0);
  kin_sim_request_log_start(sim);
  sim_resp r = sim_do(sim, "GET", "/version", NULL, NULL, "User-Agent: a\"b\\c\xff\xc3\xa9\x01");
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  json_t *log = take(sim);
  /* No token configured: everyone is anonymous, so no user. */
  assert_log(log, "[{\"verb\":\"get\",\"nonResourceURL\":\"/version\","
                  "\"userAgent\":\"a\\\"b\\\\c\\ufffd\\u00e9\\u0001\",\"code\":200}]");
  json_decref(log);
  kin_sim_free(sim);
}

/* Named users' tokens: registration rules, kin_sim_token, and an open
 * server (no token, no client CA) naming a request by its token. */
static void test_sim_TokensNameUsers(void **state) {
  kin_sim *sim = sim_start(0, 0);
  assert_int_equal(kin_sim_add_token(sim, "driver", "drv-token"), 0);
  assert_int_equal(kin_sim_add_token(sim, "driver", "drv-token"), 0); /* again: fine */
  assert_int_equal(kin_sim_add_token(sim, "other", "drv-token"), KIN_EINVAL);
  assert_int_equal(kin_sim_add_token(sim, "", "t"), KIN_EINVAL);
  assert_int_equal(kin_sim_add_token(sim, "u", ""), KIN_EINVAL);
  char *t = kin_sim_token(sim, "driver");
  assert_string_equal(t, "drv-token");
  free(t);
  char *op = kin_sim_token(sim, "operator"); /* made now */
  assert_non_null(op);
  assert_int_equal(strlen(op), strlen("kinformer-sim-") + 32);
  assert_int_equal(strncmp(op, "kinformer-sim-", 14), 0);
  t = kin_sim_token(sim, "operator");
  assert_string_equal(t, op);
  free(t);
  assert_null(kin_sim_token(sim, ""));

  kin_sim_request_log_start(sim);
  sim_resp r = do_as(sim, op, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", NULL,
                     "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "status.userInfo.username"), "operator");
  sim_resp_free(&r);
  expect(sim, "drv-token", "GET", CMS, NULL, NULL, 200);
  expect(sim, "unknown", "GET", CMS, NULL, NULL, 200); /* open server: anonymous */
  expect(sim, NULL, "GET", CMS, NULL, NULL, 200);
  json_t *log = take(sim);
  assert_log(log, "["
                  E("create", "\"apiGroup\":\"authentication.k8s.io\",\"apiVersion\":\"v1\","
                              "\"resource\":\"selfsubjectreviews\"," OP, 201) ","
                  E("list", CORE_CM IN_DEFAULT "\"user\":\"driver\",", 200) ","
                  E("list", CORE_CM IN_DEFAULT, 200) ","
                  E("list", CORE_CM IN_DEFAULT, 200) "]");
  json_decref(log);
  free(op);
  kin_sim_free(sim);

  /* With a configured token, named tokens authenticate beside it; an
   * unknown one is 401 and the config's token is kinformer-sim's. */
  sim = start_with_token(0);
  assert_int_equal(kin_sim_add_token(sim, "x", "admin-token"), KIN_EINVAL);
  assert_int_equal(kin_sim_add_token(sim, "kinformer-sim", "admin-token"), 0);
  t = kin_sim_token(sim, "kinformer-sim");
  assert_string_equal(t, "admin-token");
  free(t);
  expect(sim, "op-token", "GET", CMS, NULL, NULL, 200);
  expect(sim, "admin-token", "GET", CMS, NULL, NULL, 200);
  expect(sim, "unknown", "GET", CMS, NULL, NULL, 401);
  kin_sim_free(sim);
}

typedef struct {
  kin_sim *sim;
  int n;
} load_arg;

static void *load(void *ud) {
  load_arg *a = ud;
  for (int i = 0; i < a->n; i++) expect(a->sim, "op-token", "GET", "/version", NULL, NULL, 200);
  return NULL;
}

/* Requests on many connection threads while the log is taken: every one
 * is in exactly one take (for ThreadSanitizer). */
static void test_sim_RequestLogUnderConcurrentRequests(void **state) {
  kin_sim *sim = start_with_token(0);
  kin_sim_request_log_start(sim);
  pthread_t th[4];
  load_arg a = {sim, 25};
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, load, &a);
  size_t total = 0;
  for (int i = 0; i < 20; i++) {
    json_t *log = take(sim);
    total += json_array_size(log);
    json_decref(log);
    kin_test_sleep_ms(5);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  json_t *log = take(sim);
  total += json_array_size(log);
  json_decref(log);
  assert_int_equal(total, 100);
  kin_sim_free(sim);
}

KIN_SUITE(sim_request_log, cmocka_unit_test(test_sim_RequestLogKeepsEveryRequestAsRbacAttributes),
          cmocka_unit_test(test_sim_RequestLogTakeReturnsOnlyNewEntries),
          cmocka_unit_test(test_sim_RequestLogNamesAListByFieldSelector),
          cmocka_unit_test(test_sim_RequestLogIsBounded),
          cmocka_unit_test(test_sim_RequestLogEscapesWhatClientsSend),
          cmocka_unit_test(test_sim_TokensNameUsers),
          cmocka_unit_test(test_sim_RequestLogUnderConcurrentRequests))
