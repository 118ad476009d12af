/* test_rest_client.c -- the REST client against an in-process kin_sim:
 * every verb's success and error Status (client-go rest/request_test.go
 * TestTransformResponse / dynamic client tests), the RESTMapper over
 * discovery (restmapper DeferredDiscoveryRESTMapper tests), retries of
 * 429/5xx (request_test.go TestRequestWithRetry / TestCheckRetryClosesBody)
 * and the flowcontrol token bucket on the fake clock
 * (util/flowcontrol/throttle_test.go). */
#include "kin_test.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "kin.h"
#include "rest_client.h"
#include "rest_test.h"
#include "sim.h"
#include "token_bucket.h"

#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC

static kin_sim *sim_plain(void) {
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(NULL, &sim), 0);
  return sim;
}

/* Creates a ConfigMap in default or fails; returns its JSON (caller frees). */
static char *create_cm(kin_client *c, const kin_resource *cm, const char *json) {
  kin_result r;
  int rc = kin_client_create(c, NULL, cm, "default", json, strlen(json), NULL, &r);
  if (rc) fail_msg("create: %s %s", kin_strerror(rc), r.message ? r.message : "");
  assert_int_equal(r.code, 201);
  char *body = r.body;
  r.body = NULL;
  kin_result_free(&r);
  return body;
}

/* A sim and an unlimited client for it, with the ConfigMap resource:
 * the state of most tests here (setup/teardown). */
typedef struct {
  kin_sim *sim;
  kin_client *c;
  kin_resource cm;
} env;

static int env_setup(void **state) {
  env *e = calloc(1, sizeof *e);
  if (!e || kin_sim_start(NULL, &e->sim)) return -1;
  kin_rest_config cfg = {.host = (char *)kin_sim_url(e->sim)};
  kin_client_opts o = {.qps = -1};
  if (kin_client_new(&cfg, NULL, &o, &e->c, NULL, 0) ||
      kin_client_resource(e->c, "v1/configmaps", &e->cm))
    return -1;
  *state = e;
  return 0;
}

static int env_teardown(void **state) {
  env *e = *state;
  kin_client_free(e->c);
  kin_sim_free(e->sim);
  free(e);
  return 0;
}

#define ENV_TEST(f) cmocka_unit_test_setup_teardown(f, env_setup, env_teardown)

static void test_rest_client_GetListCreate(void **state) {
  env *e = *state;
  kin_sim *sim = e->sim;
  kin_client *c = e->c;
  assert_string_equal(kin_client_host(c), kin_sim_url(sim));
  assert_string_equal(kin_client_namespace(c), "default");
  kin_resource cm = rt_resource(c, "v1/configmaps");
  free(create_cm(c, &cm, RT_CM("a", ",\"labels\":{\"app\":\"x\"}", "{\"k\":\"v\"}")));
  free(create_cm(c, &cm, RT_CM("b", ",\"labels\":{\"app\":\"y\"}", "{\"k\":\"v\"}")));

  kin_result r;
  assert_int_equal(kin_client_get(c, NULL, &cm, "default", "a", &r), 0);
  assert_int_equal(r.code, 200);
  assert_true(rt_body_has(&r, "\"name\":\"a\""));
  assert_int_equal(r.retries, 0);
  assert_null(r.reason);
  kin_result_free(&r);

  /* The selector needs escaping ('=' and ',' in a query value). */
  kin_list_opts lo = {.label_selector = "app in (x,z)", .limit = 10};
  assert_int_equal(kin_client_list(c, NULL, &cm, "default", &lo, &r), 0);
  assert_true(rt_body_has(&r, "\"kind\":\"ConfigMapList\""));
  assert_true(rt_body_has(&r, "\"name\":\"a\""));
  assert_false(rt_body_has(&r, "\"name\":\"b\""));
  kin_result_free(&r);
  lo = (kin_list_opts){.field_selector = "metadata.name!=a"};
  assert_int_equal(kin_client_list(c, NULL, &cm, NULL, &lo, &r), 0);
  assert_false(rt_body_has(&r, "\"name\":\"a\""));
  assert_true(rt_body_has(&r, "\"name\":\"b\""));
  kin_result_free(&r);

  /* dryRun=All answers without writing. */
  kin_write_opts wo = {.dry_run = "All"};
  const char *d = RT_CM("dry", "", "{\"k\":\"v\"}");
  assert_int_equal(kin_client_create(c, NULL, &cm, "default", d, strlen(d), &wo, &r), 0);
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, NULL, &cm, "default", "dry", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 404);
  kin_result_free(&r);
}

static void test_rest_client_StatusErrors(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource cm = e->cm;
  kin_result r;
  /* 404: the Status's reason and message, the body kept. */
  assert_int_equal(kin_client_get(c, NULL, &cm, "default", "nope", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 404);
  assert_string_equal(r.reason, "NotFound");
  assert_string_equal(r.message, "configmaps \"nope\" not found");
  assert_true(rt_body_has(&r, "\"kind\":\"Status\""));
  kin_result_free(&r);
  /* 409 AlreadyExists on a second create. */
  free(create_cm(c, &cm, RT_CM("a", "", "{\"k\":\"v\"}")));
  const char *a = RT_CM("a", "", "{\"k\":\"v\"}");
  assert_int_equal(kin_client_create(c, NULL, &cm, "default", a, strlen(a), NULL, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "AlreadyExists");
  assert_string_equal(r.message, "configmaps \"a\" already exists");
  kin_result_free(&r);
  /* A path the server does not serve: no Status body, the reason from the
   * code (errors.NewGenericServerResponse). */
  kin_client_request req = {.path = "/nothing/here", .idempotent = 1};
  assert_int_equal(kin_client_do(c, &req, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 404);
  assert_string_equal(r.reason, "NotFound");
  assert_non_null(r.message);
  kin_result_free(&r);
  /* Misuse is refused before anything is sent. */
  assert_int_equal(kin_client_get(c, NULL, &cm, "default", "", &r), KIN_EINVAL);
  assert_non_null(r.message);
  kin_result_free(&r);
}

static void test_rest_client_UpdateConflictAndStatus(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource cm = e->cm;
  char *first = create_cm(c, &cm, RT_CM("a", "", "{\"k\":\"v\"}"));
  char rv[32], body[512];
  rt_field(first, "resourceVersion", rv, sizeof rv);
  free(first);
  snprintf(body, sizeof body, RT_CM("a", ",\"resourceVersion\":\"%s\"", "{\"k\":\"v\"}"), rv);
  /* replace data */
  char *p = strstr(body, "\"v\"");
  memcpy(p, "\"w\"", 3);
  kin_result r;
  assert_int_equal(kin_client_update(c, NULL, &cm, "default", body, strlen(body), NULL, &r), 0);
  assert_int_equal(r.code, 200);
  assert_true(rt_body_has(&r, "\"k\":\"w\""));
  kin_result_free(&r);
  /* The same resourceVersion again is stale now: 409 Conflict. */
  assert_int_equal(kin_client_update(c, NULL, &cm, "default", body, strlen(body), NULL, &r),
                   KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "Conflict");
  assert_non_null(strstr(r.message, "the object has been modified"));
  kin_result_free(&r);
  /* No name: refused locally. */
  const char *noname = "{\"metadata\":{}}";
  assert_int_equal(kin_client_update(c, NULL, &cm, "default", noname, strlen(noname), NULL, &r),
                   KIN_EINVAL);
  kin_result_free(&r);

  /* UpdateStatus goes to /status: only status changes there. */
  kin_resource dep = rt_resource(c, "apps/v1/deployments");
  const char *d = RT_DEPLOYMENT("d", "");
  assert_int_equal(kin_client_create(c, NULL, &dep, "default", d, strlen(d), NULL, &r), 0);
  kin_result_free(&r);
  const char *st = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
                   "\"spec\":{\"replicas\":5},\"status\":{\"observedGeneration\":7}}";
  assert_int_equal(kin_client_update_status(c, NULL, &dep, "default", st, strlen(st), &r), 0);
  assert_true(rt_body_has(&r, "\"observedGeneration\":7"));
  assert_true(rt_body_has(&r, "\"replicas\":1")); /* spec ignored on /status */
  kin_result_free(&r);
}

static void test_rest_client_PatchTypes(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource cm = e->cm;
  free(create_cm(c, &cm, RT_CM("a", "", "{\"k\":\"v\"}")));
  kin_result r;
  const char *merge = "{\"data\":{\"m\":\"1\"}}";
  assert_int_equal(kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_MERGE, merge,
                                    strlen(merge), NULL, &r),
                   0);
  assert_true(rt_body_has(&r, "\"m\":\"1\""));
  kin_result_free(&r);
  const char *jp = "[{\"op\":\"add\",\"path\":\"/data/j\",\"value\":\"2\"}]";
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_JSON, jp, strlen(jp), NULL, &r), 0);
  assert_true(rt_body_has(&r, "\"j\":\"2\""));
  kin_result_free(&r);
  const char *sp = "{\"metadata\":{\"labels\":{\"s\":\"3\"}}}";
  assert_int_equal(kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_STRATEGIC, sp, strlen(sp),
                                    NULL, &r),
                   0);
  assert_true(rt_body_has(&r, "\"s\":\"3\""));
  kin_result_free(&r);
  /* A JSON patch that does not apply: the server's error comes back. */
  const char *bad = "[{\"op\":\"test\",\"path\":\"/data/k\",\"value\":\"nope\"}]";
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_JSON, bad, strlen(bad), NULL, &r),
      KIN_ESTATUS);
  assert_true(r.code == 422 || r.code == 500);
  kin_result_free(&r);
  /* Apply needs a field manager; a configuration without apiVersion and
   * kind gets the server's 400, which proves the apply content type was
   * sent; a whole one with force takes data.m from the merge patch's
   * manager. */
  assert_int_equal(kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_APPLY, merge,
                                    strlen(merge), NULL, &r),
                   KIN_EINVAL);
  kin_result_free(&r);
  kin_write_opts wo = {.field_manager = "kinformer-test", .force = 1};
  assert_int_equal(kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_APPLY, merge,
                                    strlen(merge), &wo, &r),
                   KIN_ESTATUS);
  assert_int_equal(r.code, 400);
  assert_string_equal(r.message, "invalid object type: /, Kind=");
  kin_result_free(&r);
  const char *cfg = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                    "\"a\"},\"data\":{\"m\":\"9\"}}";
  assert_int_equal(kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_APPLY, cfg, strlen(cfg),
                                    &wo, &r),
                   0);
  assert_true(rt_body_has(&r, "\"m\":\"9\""));
  assert_true(rt_body_has(&r, "\"manager\":\"kinformer-test\",\"operation\":\"Apply\""));
  kin_result_free(&r);
}

static void test_rest_client_DeletePreconditions(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource cm = e->cm;
  char *obj = create_cm(c, &cm, RT_CM("a", "", "{\"k\":\"v\"}"));
  char uid[64], rv[32];
  rt_field(obj, "uid", uid, sizeof uid);
  rt_field(obj, "resourceVersion", rv, sizeof rv);
  free(obj);
  kin_result r;
  kin_delete_opts o = {.precondition_uid = "not-the-uid"};
  assert_int_equal(kin_client_delete(c, NULL, &cm, "default", "a", &o, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "Conflict");
  assert_non_null(strstr(r.message, "UID in the precondition"));
  kin_result_free(&r);
  o = (kin_delete_opts){.precondition_uid = uid,
                        .precondition_rv = "999999"};
  assert_int_equal(kin_client_delete(c, NULL, &cm, "default", "a", &o, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_non_null(strstr(r.message, "ResourceVersion in the precondition"));
  kin_result_free(&r);
  /* dryRun in the DeleteOptions body: nothing is deleted. */
  o = (kin_delete_opts){.dry_run = "All"};
  assert_int_equal(kin_client_delete(c, NULL, &cm, "default", "a", &o, &r), 0);
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, NULL, &cm, "default", "a", &r), 0);
  kin_result_free(&r);
  o = (kin_delete_opts){.has_grace_period = 1, .grace_period_seconds = 0, .precondition_uid = uid,
                        .precondition_rv = rv, .propagation_policy = "Background"};
  assert_int_equal(kin_client_delete(c, NULL, &cm, "default", "a", &o, &r), 0);
  assert_int_equal(r.code, 200);
  kin_result_free(&r);
  assert_int_equal(kin_client_delete(c, NULL, &cm, "default", "a", NULL, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 404);
  kin_result_free(&r);
}

static void test_rest_client_DiscoveryMapping(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource r;
  assert_int_equal(kin_client_resource(c, "v1/pods", &r), 0);
  assert_string_equal(r.group, "");
  assert_string_equal(r.version, "v1");
  assert_string_equal(r.resource, "pods");
  assert_string_equal(r.kind, "Pod");
  assert_true(r.namespaced);
  char p[256];
  assert_int_equal(kin_resource_path(&r, "x", p, sizeof p), (int)strlen("/api/v1/namespaces/x/pods"));
  assert_string_equal(p, "/api/v1/namespaces/x/pods");
  assert_int_equal(kin_resource_path(&r, NULL, p, sizeof p), (int)strlen("/api/v1/pods"));
  assert_int_equal(kin_resource_path(&r, "x", p, 10), KIN_EINVAL);

  assert_int_equal(kin_client_resource(c, "v1/namespaces", &r), 0);
  assert_false(r.namespaced);
  assert_string_equal(r.kind, "Namespace");
  kin_resource_path(&r, "ignored", p, sizeof p);
  assert_string_equal(p, "/api/v1/namespaces");

  assert_int_equal(kin_client_resource(c, "apps/v1/Deployment", &r), 0);
  assert_string_equal(r.group, "apps");
  assert_string_equal(r.resource, "deployments");
  assert_true(r.namespaced);
  kin_resource_path(&r, "ns", p, sizeof p);
  assert_string_equal(p, "/apis/apps/v1/namespaces/ns/deployments");
  kin_resource k;
  assert_int_equal(kin_client_resource_for_kind(c, "apps/v1", "Deployment", &k), 0);
  assert_ptr_equal(k.resource, r.resource); /* one cache, interned strings */
  assert_int_equal(kin_client_resource_for_kind(c, "v1", "ConfigMap", &k), 0);
  assert_string_equal(k.resource, "configmaps");
  /* Singular names resolve too; subresources do not (read as group "v1"). */
  assert_int_equal(kin_client_resource(c, "apps/v1/deployment", &k), 0);
  assert_string_equal(k.resource, "deployments");
  assert_int_equal(kin_client_resource(c, "v1/pods/status", &k), KIN_ENOENT);

  assert_int_equal(kin_client_resource(c, "v1/widgets", &k), KIN_ENOENT);
  assert_int_equal(kin_client_resource(c, "apps/v1/Pod", &k), KIN_ENOENT);
  assert_int_equal(kin_client_resource(c, "nope.example.com/v1/things", &k), KIN_ENOENT);
  assert_int_equal(kin_client_resource(c, "pods", &k), KIN_EINVAL);
  /* A reset keeps what was resolved before valid. */
  kin_client_discovery_reset(c);
  assert_string_equal(r.resource, "deployments");
  assert_int_equal(kin_client_resource(c, "apps/v1/deployments", &k), 0);
  assert_ptr_equal(k.resource, r.resource);
}

static const char crd_fmt[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"%s.example.com\"},\"spec\":{\"group\":\"example.com\","
    "\"scope\":\"%s\",\"names\":{\"plural\":\"%s\",\"singular\":\"%s\",\"kind\":\"%s\"},"
    "\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true}]}}";

static void create_crd(kin_client *c, const char *plural, const char *singular,
                       const char *kind, const char *scope) {
  kin_resource crd = rt_resource(c, "apiextensions.k8s.io/v1/customresourcedefinitions");
  char body[1024];
  snprintf(body, sizeof body, crd_fmt, plural, scope, plural, singular, kind);
  kin_result r;
  assert_int_equal(kin_client_create(c, NULL, &crd, NULL, body, strlen(body), NULL, &r), 0);
  kin_result_free(&r);
}

static void test_rest_client_DiscoveryRefreshOnMiss(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource r;
  create_crd(c, "widgets", "widget", "Widget", "Namespaced");
  assert_int_equal(kin_client_resource(c, "example.com/v1/widgets", &r), 0);
  assert_true(r.namespaced);
  /* example.com/v1 is cached now; a CRD added later is found by the one
   * refresh a miss triggers. */
  create_crd(c, "gadgets", "gadget", "Gadget", "Cluster");
  assert_int_equal(kin_client_resource(c, "example.com/v1/Gadget", &r), 0);
  assert_string_equal(r.resource, "gadgets");
  assert_false(r.namespaced);
  assert_int_equal(kin_client_resource(c, "example.com/v1/widgets", &r), 0);
}

/* Waits until a is blocked on the fake clock or finished. */
static void wait_blocked(kin_clock *clk, rt_async *a) {
  KIN_EVENTUALLY(kin_fake_clock_waiters(clk) > 0 || atomic_load(&a->done), 5000);
}

/* The client logs each retry with its delay before it waits: the test
 * knows which wait the request is in and how long it is. */
static void wait_retry(rt_log *l, kin_clock *clk, int n) {
  KIN_EVENTUALLY(rt_log_count(l, ", retry ") >= n && kin_fake_clock_waiters(clk) == 1, 5000);
}

static void test_rest_client_RetryAfter429(void **state) {
  kin_sim *sim = sim_plain();
  kin_clock *clk = kin_fake_clock_new(1000 * SEC);
  kin_client_opts o = {.qps = -1, .clock = clk};
  kin_client *c = rt_client(kin_sim_url(sim), &o);
  rt_log l;
  rt_log_start(&l);
  assert_int_equal(kin_sim_fail_next(sim, 429, 2), 0);
  rt_async a;
  rt_async_start(&a, c, "GET", "/api/v1/namespaces/default/configmaps", 1);
  for (int i = 0; i < 2; i++) {
    wait_retry(&l, clk, i + 1);
    assert_int_equal(rt_log_number_after(&l, " after ", i), 1000);
    /* Retry-After: 1 -- not a moment earlier. */
    kin_fake_clock_step(clk, 999 * MS);
    kin_test_sleep_ms(20);
    assert_int_equal(rt_log_count(&l, ", retry "), i + 1);
    assert_false(atomic_load(&a.done));
    kin_fake_clock_step(clk, 1 * MS);
  }
  KIN_EVENTUALLY(atomic_load(&a.done), 5000);
  rt_async_join(&a);
  rt_log_stop(&l);
  assert_int_equal(a.rc, 0);
  assert_int_equal(a.res.code, 200);
  assert_int_equal(a.res.retries, 2);
  kin_result_free(&a.res);
  kin_client_free(c);
  kin_fake_clock_free(clk);
  kin_sim_free(sim);
}

static void test_rest_client_PostNotRetried(void **state) {
  env *e = *state;
  kin_sim *sim = e->sim;
  kin_client *c = e->c;
  kin_resource cm = e->cm;
  assert_int_equal(kin_sim_fail_next(sim, 429, 1), 0);
  const char *a = RT_CM("a", "", "{\"k\":\"v\"}");
  kin_result r;
  assert_int_equal(kin_client_create(c, NULL, &cm, "default", a, strlen(a), NULL, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 429);
  assert_string_equal(r.reason, "TooManyRequests");
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  /* Nor is a PATCH or an update without resourceVersion. */
  free(create_cm(c, &cm, a));
  assert_int_equal(kin_sim_fail_next(sim, 503, 1), 0);
  assert_int_equal(kin_client_patch(c, NULL, &cm, "default", "a", KIN_PATCH_MERGE, "{}", 2, NULL, &r),
                   KIN_ESTATUS);
  assert_int_equal(r.code, 503);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  assert_int_equal(kin_sim_fail_next(sim, 503, 1), 0);
  assert_int_equal(kin_client_update(c, NULL, &cm, "default", a, strlen(a), NULL, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 503);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
}

static void test_rest_client_Retry5xxBackoff(void **state) {
  kin_sim *sim = sim_plain();
  kin_clock *clk = kin_fake_clock_new(1000 * SEC);
  kin_client_opts o = {.qps = -1, .clock = clk};
  kin_client *c = rt_client(kin_sim_url(sim), &o);
  rt_log l;
  rt_log_start(&l);
  /* 500 comes without Retry-After: 250 ms, 500 ms, 1 s, each jittered by
   * up to 20%. */
  assert_int_equal(kin_sim_fail_next(sim, 500, 3), 0);
  rt_async a;
  rt_async_start(&a, c, "GET", "/api/v1/namespaces", 1);
  long base = 250;
  for (int i = 0; i < 3; i++, base *= 2) {
    wait_retry(&l, clk, i + 1);
    long d = rt_log_number_after(&l, " after ", i);
    assert_true(d >= base && d <= base + base / 5);
    kin_fake_clock_step(clk, (uint64_t)(d - 1) * MS);
    kin_test_sleep_ms(20);
    assert_int_equal(rt_log_count(&l, ", retry "), i + 1);
    kin_fake_clock_step(clk, 1 * MS);
  }
  KIN_EVENTUALLY(atomic_load(&a.done), 5000);
  rt_async_join(&a);
  rt_log_stop(&l);
  assert_int_equal(a.rc, 0);
  assert_int_equal(a.res.retries, 3);
  kin_result_free(&a.res);

  /* max_retries bounds it: the last error comes back. */
  kin_client_free(c);
  o.max_retries = 1;
  c = rt_client(kin_sim_url(sim), &o);
  assert_int_equal(kin_sim_fail_next(sim, 503, 3), 0);
  rt_async_start(&a, c, "GET", "/api/v1/namespaces", 1);
  wait_blocked(clk, &a);
  kin_fake_clock_step(clk, 1 * SEC);
  KIN_EVENTUALLY(atomic_load(&a.done), 5000);
  rt_async_join(&a);
  assert_int_equal(a.rc, KIN_ESTATUS);
  assert_int_equal(a.res.code, 503);
  assert_int_equal(a.res.retries, 1);
  assert_string_equal(a.res.reason, "ServiceUnavailable");
  kin_result_free(&a.res);
  kin_client_free(c);
  kin_fake_clock_free(clk);
  kin_sim_free(sim);
}

static void *accept_main(void *p) {
  kin__token_bucket_accept(p);
  return NULL;
}

static void test_rest_client_TokenBucketBurstThenQPS(void **state) {
  kin_clock *clk = kin_fake_clock_new(1000 * SEC);
  kin__token_bucket tb;
  assert_int_equal(kin__token_bucket_init(&tb, 2, 3, clk), 0);
  /* The burst goes at once. */
  for (int i = 0; i < 3; i++) assert_int_equal(kin__token_bucket_accept(&tb), 0);
  /* Then one token per 1/qps = 500 ms. */
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, accept_main, &tb), 0);
  KIN_EVENTUALLY(kin_fake_clock_waiters(clk) == 1, 5000);
  kin_fake_clock_step(clk, 499 * MS);
  kin_test_sleep_ms(20);
  assert_int_equal(kin_fake_clock_waiters(clk), 1);
  kin_fake_clock_step(clk, 1 * MS);
  KIN_EVENTUALLY(kin_fake_clock_waiters(clk) == 0, 5000);
  pthread_join(th, NULL);
  /* Time refills the bucket, never above burst. */
  kin_fake_clock_step(clk, 10 * SEC);
  for (int i = 0; i < 3; i++) assert_int_equal(kin__token_bucket_accept(&tb), 0);
  assert_int_equal(pthread_create(&th, NULL, accept_main, &tb), 0);
  KIN_EVENTUALLY(kin_fake_clock_waiters(clk) == 1, 5000);
  kin_fake_clock_step(clk, 500 * MS);
  KIN_EVENTUALLY(kin_fake_clock_waiters(clk) == 0, 5000);
  pthread_join(th, NULL);
  kin__token_bucket_destroy(&tb);
  kin_fake_clock_free(clk);
}

static void test_rest_client_RateLimitedRequests(void **state) {
  kin_sim *sim = sim_plain();
  kin_clock *clk = kin_fake_clock_new(1000 * SEC);
  kin_client_opts o = {.qps = 1, .burst = 1, .clock = clk};
  kin_client *c = rt_client(kin_sim_url(sim), &o);
  kin_client_request req = {.path = "/api/v1/namespaces", .idempotent = 1};
  kin_result r;
  assert_int_equal(kin_client_do(c, &req, &r), 0);
  kin_result_free(&r);
  rt_async a;
  rt_async_start(&a, c, "GET", "/api/v1/namespaces", 1);
  wait_blocked(clk, &a);
  kin_test_sleep_ms(20);
  assert_false(atomic_load(&a.done));
  kin_fake_clock_step(clk, 1 * SEC);
  KIN_EVENTUALLY(atomic_load(&a.done), 5000);
  rt_async_join(&a);
  assert_int_equal(a.rc, 0);
  kin_result_free(&a.res);
  kin_client_free(c);
  kin_fake_clock_free(clk);
  kin_sim_free(sim);
}

typedef struct {
  pthread_mutex_t mu;
  char data[8192];
  size_t len;
  int done, err;
  long code;
} stream_rec;

static int on_data(void *ud, const char *p, size_t n) {
  stream_rec *s = ud;
  pthread_mutex_lock(&s->mu);
  size_t k = n < sizeof s->data - 1 - s->len ? n : sizeof s->data - 1 - s->len;
  memcpy(s->data + s->len, p, k);
  s->len += k;
  s->data[s->len] = 0;
  pthread_mutex_unlock(&s->mu);
  return 0;
}

static void on_done(void *ud, kin_io_response *res) {
  stream_rec *s = ud;
  pthread_mutex_lock(&s->mu);
  s->done = 1;
  s->err = res->err;
  s->code = res->code;
  pthread_mutex_unlock(&s->mu);
}

static int rec_has(stream_rec *s, const char *what) {
  pthread_mutex_lock(&s->mu);
  int r = strstr(s->data, what) != NULL;
  pthread_mutex_unlock(&s->mu);
  return r;
}

static int rec_done(stream_rec *s) {
  pthread_mutex_lock(&s->mu);
  int r = s->done;
  pthread_mutex_unlock(&s->mu);
  return r;
}

static void test_rest_client_StreamWatch(void **state) {
  env *e = *state;
  kin_client *c = e->c;
  kin_resource cm = e->cm;
  free(create_cm(c, &cm, RT_CM("a", "", "{\"k\":\"v\"}")));
  stream_rec s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  kin_io_handle *h = NULL;
  assert_int_equal(kin_client_stream(c, "/api/v1/namespaces/default/configmaps?watch=1", NULL,
                                     on_data, on_done, &s, &h),
                   0);
  KIN_EVENTUALLY(rec_has(&s, "\"type\":\"ADDED\""), 5000);
  free(create_cm(c, &cm, RT_CM("b", "", "{\"k\":\"v\"}")));
  KIN_EVENTUALLY(rec_has(&s, "\"name\":\"b\""), 5000);
  kin_io_cancel(h);
  KIN_EVENTUALLY(rec_done(&s), 5000);
  assert_int_equal(s.err, KIN_ECANCELED);
  kin_io_handle_release(h);

  /* low_speed_ms ends a silent stream with KIN_ETIMEDOUT (curl counts whole
   * seconds: 300 ms is 1 s). */
  stream_rec t = {.mu = PTHREAD_MUTEX_INITIALIZER};
  assert_int_equal(kin_client_stream(c, "/api/v1/configmaps?watch=1&labelSelector=none%3Dnone",
                                     &(kin_client_stream_opts){.low_speed_ms = 300}, on_data, on_done, &t, &h),
                   0);
  KIN_EVENTUALLY(rec_done(&t), 5000);
  assert_int_equal(t.err, KIN_ETIMEDOUT);
  kin_io_handle_release(h);
  assert_int_equal(kin_client_stream(c, "no-slash", NULL, on_data, on_done, &t, &h),
                   KIN_EINVAL);
}

static void test_rest_client_TransportErrors(void **state) {
  /* A port nobody listens on: connection refused, curl's words. */
  kin_sim *sim = sim_plain();
  char url[64];
  snprintf(url, sizeof url, "%s", kin_sim_url(sim));
  kin_sim_free(sim);
  kin_client *c = rt_client(url, NULL);
  kin_client_request req = {.path = "/api/v1/namespaces", .idempotent = 1};
  kin_result r;
  assert_int_equal(kin_client_do(c, &req, &r), KIN_EIO);
  assert_int_equal(r.code, 0);
  assert_non_null(r.message);
  assert_true(strstr(r.message, "onnect") != NULL);
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  kin_client_free(c);

  /* Configs that cannot work are refused with the field named. */
  kin_rest_config none = {0}, ftp = {.host = "ftp://x"};
  char err[256];
  kin_client *bad = NULL;
  assert_int_equal(kin_client_new(&none, NULL, NULL, &bad, err, sizeof err), KIN_EINVAL);
  assert_null(bad);
  assert_non_null(strstr(err, "host"));
  assert_int_equal(kin_client_new(&ftp, NULL, NULL, &bad, err, sizeof err), KIN_EINVAL);
  assert_non_null(strstr(err, "scheme"));
  kin_rest_config half = {.host = "https://x", .cert_file = "/c.crt"};
  assert_int_equal(kin_client_new(&half, NULL, NULL, &bad, err, sizeof err), KIN_EINVAL);
  assert_non_null(strstr(err, "client-key is missing"));
}

KIN_SUITE(rest_client, ENV_TEST(test_rest_client_GetListCreate),
          ENV_TEST(test_rest_client_StatusErrors),
          ENV_TEST(test_rest_client_UpdateConflictAndStatus),
          ENV_TEST(test_rest_client_PatchTypes),
          ENV_TEST(test_rest_client_DeletePreconditions),
          ENV_TEST(test_rest_client_DiscoveryMapping),
          ENV_TEST(test_rest_client_DiscoveryRefreshOnMiss),
          cmocka_unit_test(test_rest_client_RetryAfter429),
          ENV_TEST(test_rest_client_PostNotRetried),
          cmocka_unit_test(test_rest_client_Retry5xxBackoff),
          cmocka_unit_test(test_rest_client_TokenBucketBurstThenQPS),
          cmocka_unit_test(test_rest_client_RateLimitedRequests),
          ENV_TEST(test_rest_client_StreamWatch),
          cmocka_unit_test(test_rest_client_TransportErrors))
