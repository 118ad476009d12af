/* test_e2e_client.c -- the REST client against the real kube-apiserver
 * (spec/e2e/cluster.sh): every verb, Status errors as the server words
 * them, server-side apply with field managers and force, DeleteOptions
 * (preconditions, propagationPolicy), 403 through RBAC, and a TLS error.
 * Each test skips unless KINFORMER_E2E_ADMIN_KUBECONFIG is set:
 *   spec/e2e/cluster.sh run ./build/release/kin_tests 'e2e_client_*'
 * The cluster has no controller-manager, so a propagationPolicy leaves its
 * finalizer on the object for the test to see (no garbage collector takes
 * it off), and namespaces are never emptied: each run uses fresh names. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kin.h"
#include "kubeconfig.h"
#include "rest_client.h"
#include "rest_test.h"

/* A client for the kubeconfig in env var name; skips the test when the e2e
 * env is absent. */
static kin_client *e2e_client(const char *env) {
  if (!getenv("KINFORMER_E2E_ADMIN_KUBECONFIG")) skip();
  const char *path = getenv(env);
  if (!path) fail_msg("%s is not set", env);
  kin_kubeconfig_opts ko = {.path = path};
  kin_rest_config *cfg = NULL;
  char err[512];
  int rc = kin_kubeconfig_load(&ko, &cfg, err, sizeof err);
  if (rc) fail_msg("kubeconfig %s: %s", path, err);
  kin_client *c = NULL;
  rc = kin_client_new(cfg, NULL, NULL, &c, err, sizeof err);
  kin_rest_config_free(cfg);
  if (rc) fail_msg("kin_client_new: %s", err);
  return c;
}

/* A namespace of its own for this test run (prefix-<pid>-<n>). */
static const char *fresh_ns(kin_client *c, const char *prefix, char *buf, size_t n) {
  static int seq;
  snprintf(buf, n, "%s-%d-%ld-%d", prefix, (int)getpid(), (long)time(NULL) % 100000, seq++);
  kin_resource ns = rt_resource(c, "v1/namespaces");
  char body[256];
  snprintf(body, sizeof body, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
           buf);
  kin_result r;
  int rc = kin_client_create(c, NULL, &ns, NULL, body, strlen(body), NULL, &r);
  if (rc) fail_msg("namespace %s: %s", buf, r.message ? r.message : kin_strerror(rc));
  kin_result_free(&r);
  return buf;
}

static void test_e2e_client_Verbs(void **state) {
  kin_client *c = e2e_client("KINFORMER_E2E_ADMIN_KUBECONFIG");
  char ns[64];
  fresh_ns(c, "kin-e2e-client", ns, sizeof ns);
  kin_resource cm = rt_resource(c, "v1/configmaps");
  kin_result r;
  const char *a = RT_CM("a", ",\"labels\":{\"app\":\"x\"}", "{\"k\":\"v\"}");
  assert_int_equal(kin_client_create(c, NULL, &cm, ns, a, strlen(a), NULL, &r), 0);
  assert_int_equal(r.code, 201);
  char uid[64], rv[32];
  rt_field(r.body, "uid", uid, sizeof uid);
  rt_field(r.body, "resourceVersion", rv, sizeof rv);
  kin_result_free(&r);
  assert_int_equal(kin_client_create(c, NULL, &cm, ns, a, strlen(a), NULL, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "AlreadyExists");
  assert_string_equal(r.message, "configmaps \"a\" already exists");
  kin_result_free(&r);

  assert_int_equal(kin_client_get(c, NULL, &cm, ns, "a", &r), 0);
  assert_true(rt_body_has(&r, uid));
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, NULL, &cm, ns, "nope", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 404);
  assert_string_equal(r.reason, "NotFound");
  assert_string_equal(r.message, "configmaps \"nope\" not found");
  kin_result_free(&r);

  kin_list_opts lo = {.label_selector = "app in (x)", .limit = 5};
  assert_int_equal(kin_client_list(c, NULL, &cm, ns, &lo, &r), 0);
  assert_true(rt_body_has(&r, "\"name\":\"a\""));
  kin_result_free(&r);

  /* Update with the current resourceVersion, then with the stale one. */
  char body[512];
  snprintf(body, sizeof body,
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
           "\"resourceVersion\":\"%s\"},\"data\":{\"k\":\"w\"}}",
           rv);
  assert_int_equal(kin_client_update(c, NULL, &cm, ns, body, strlen(body), NULL, &r), 0);
  assert_true(rt_body_has(&r, "\"k\":\"w\""));
  kin_result_free(&r);
  assert_int_equal(kin_client_update(c, NULL, &cm, ns, body, strlen(body), NULL, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "Conflict");
  assert_non_null(strstr(r.message, "the object has been modified"));
  kin_result_free(&r);

  /* The three patch types. */
  const char *mp = "{\"data\":{\"m\":\"1\"}}";
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "a", KIN_PATCH_MERGE, mp, strlen(mp), NULL, &r), 0);
  assert_true(rt_body_has(&r, "\"m\":\"1\""));
  kin_result_free(&r);
  const char *jp = "[{\"op\":\"add\",\"path\":\"/data/j\",\"value\":\"2\"}]";
  assert_int_equal(kin_client_patch(c, NULL, &cm, ns, "a", KIN_PATCH_JSON, jp, strlen(jp), NULL, &r),
                   0);
  assert_true(rt_body_has(&r, "\"j\":\"2\""));
  kin_result_free(&r);
  const char *sp = "{\"metadata\":{\"labels\":{\"s\":\"3\"}}}";
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "a", KIN_PATCH_STRATEGIC, sp, strlen(sp), NULL, &r), 0);
  assert_true(rt_body_has(&r, "\"s\":\"3\""));
  kin_result_free(&r);

  /* UpdateStatus on a Deployment: only status moves. */
  kin_resource dep = rt_resource(c, "apps/v1/Deployment");
  const char *d = RT_DEPLOYMENT("d", "");
  assert_int_equal(kin_client_create(c, NULL, &dep, ns, d, strlen(d), NULL, &r), 0);
  kin_result_free(&r);
  const char *st = RT_DEPLOYMENT("d", ",\"status\":{\"observedGeneration\":7}");
  assert_int_equal(kin_client_update_status(c, NULL, &dep, ns, st, strlen(st), &r), 0);
  assert_true(rt_body_has(&r, "\"observedGeneration\":7"));
  kin_result_free(&r);

  /* Delete: failed preconditions, then Orphan (the finalizer stays: no
   * garbage collector here), then a plain delete after clearing it. */
  kin_delete_opts o = {.precondition_uid = "00000000-0000-0000-0000-000000000000"};
  assert_int_equal(kin_client_delete(c, NULL, &cm, ns, "a", &o, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "Conflict");
  assert_non_null(strstr(r.message, "the UID in the precondition"));
  kin_result_free(&r);
  o = (kin_delete_opts){.precondition_uid = uid,
                        .propagation_policy = "Orphan"};
  assert_int_equal(kin_client_delete(c, NULL, &cm, ns, "a", &o, &r), 0);
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, NULL, &cm, ns, "a", &r), 0);
  assert_true(rt_body_has(&r, "\"orphan\""));
  assert_true(rt_body_has(&r, "deletionTimestamp"));
  kin_result_free(&r);
  const char *clear = "{\"metadata\":{\"finalizers\":null}}";
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "a", KIN_PATCH_MERGE, clear, strlen(clear), NULL, &r), 0);
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, NULL, &cm, ns, "a", &r), KIN_ESTATUS);
  assert_int_equal(r.code, 404);
  kin_result_free(&r);
  /* dryRun in DeleteOptions: nothing deleted. */
  o = (kin_delete_opts){.has_grace_period = 1, .grace_period_seconds = 0, .dry_run = "All"};
  assert_int_equal(kin_client_delete(c, NULL, &dep, ns, "d", &o, &r), 0);
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, NULL, &dep, ns, "d", &r), 0);
  kin_result_free(&r);
  kin_client_free(c);
}

static void test_e2e_client_ServerSideApply(void **state) {
  kin_client *c = e2e_client("KINFORMER_E2E_ADMIN_KUBECONFIG");
  char ns[64];
  fresh_ns(c, "kin-e2e-ssa", ns, sizeof ns);
  kin_resource cm = rt_resource(c, "v1/configmaps");
  kin_result r;
  /* YAML is a superset of JSON: the apply body may be JSON. */
  const char *mine = RT_CM("s", "", "{\"owner\":\"a\"}");
  kin_write_opts a = {.field_manager = "kin-a"};
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "s", KIN_PATCH_APPLY, mine, strlen(mine), &a, &r), 0);
  assert_int_equal(r.code, 201);
  assert_true(rt_body_has(&r, "\"manager\":\"kin-a\""));
  assert_true(rt_body_has(&r, "\"operation\":\"Apply\""));
  kin_result_free(&r);
  /* Another manager claiming the same field: conflict, unless forced. */
  const char *theirs = RT_CM("s", "", "{\"owner\":\"b\"}");
  kin_write_opts b = {.field_manager = "kin-b"};
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "s", KIN_PATCH_APPLY, theirs, strlen(theirs), &b, &r),
      KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_string_equal(r.reason, "Conflict");
  assert_non_null(strstr(r.message, "kin-a"));
  kin_result_free(&r);
  b.force = 1;
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "s", KIN_PATCH_APPLY, theirs, strlen(theirs), &b, &r), 0);
  assert_int_equal(r.code, 200);
  assert_true(rt_body_has(&r, "\"owner\":\"b\""));
  assert_true(rt_body_has(&r, "\"manager\":\"kin-b\""));
  kin_result_free(&r);
  /* Without a field manager the client refuses before sending. */
  assert_int_equal(
      kin_client_patch(c, NULL, &cm, ns, "s", KIN_PATCH_APPLY, theirs, strlen(theirs), NULL, &r),
      KIN_EINVAL);
  kin_result_free(&r);
  kin_client_free(c);
}

static void test_e2e_client_ForbiddenAndTokenUser(void **state) {
  kin_client *nobody = e2e_client("KINFORMER_E2E_NOBODY_KUBECONFIG");
  kin_result r;
  kin_client_request req = {.path = "/api/v1/namespaces/default/configmaps", .idempotent = 1};
  assert_int_equal(kin_client_do(nobody, &req, &r), KIN_ESTATUS);
  assert_int_equal(r.code, 403);
  assert_string_equal(r.reason, "Forbidden");
  assert_non_null(strstr(r.message, "cannot list resource \"configmaps\""));
  const char *secret = getenv("KINFORMER_E2E_NOBODY_TOKEN");
  if (secret) assert_null(strstr(r.message, secret));
  assert_int_equal(r.retries, 0);
  kin_result_free(&r);
  kin_client_free(nobody);
  /* The token user gets in through RBAC. */
  kin_client *tok = e2e_client("KINFORMER_E2E_TOKEN_KUBECONFIG");
  assert_int_equal(kin_client_do(tok, &req, &r), 0);
  assert_true(rt_body_has(&r, "ConfigMapList"));
  kin_result_free(&r);
  kin_client_free(tok);
}

static void test_e2e_client_Discovery(void **state) {
  kin_client *c = e2e_client("KINFORMER_E2E_ADMIN_KUBECONFIG");
  kin_resource r;
  assert_int_equal(kin_client_resource(c, "apps/v1/Deployment", &r), 0);
  assert_string_equal(r.resource, "deployments");
  assert_true(r.namespaced);
  assert_int_equal(kin_client_resource(c, "v1/namespaces", &r), 0);
  assert_false(r.namespaced);
  assert_int_equal(kin_client_resource_for_kind(c, "rbac.authorization.k8s.io/v1", "ClusterRole", &r), 0);
  assert_string_equal(r.resource, "clusterroles");
  assert_false(r.namespaced);
  assert_int_equal(kin_client_resource(c, "nope.example.com/v1/things", &r), KIN_ENOENT);
  assert_int_equal(kin_client_resource(c, "v1/things", &r), KIN_ENOENT);
  kin_client_free(c);
}

static void test_e2e_client_WrongCA(void **state) {
  if (!getenv("KINFORMER_E2E_ADMIN_KUBECONFIG")) skip();
  char wrong[512];
  snprintf(wrong, sizeof wrong, "%s", kin_test_fixture_path("sim_tls.crt"));
  kin_rest_config cfg = {.host = getenv("KINFORMER_E2E_SERVER"), .ca_file = wrong};
  if (!cfg.host) fail_msg("KINFORMER_E2E_SERVER is not set");
  kin_client *c = NULL;
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, NULL, &c, err, sizeof err), 0);
  kin_client_request req = {.path = "/version", .idempotent = 1};
  kin_result r;
  assert_int_equal(kin_client_do(c, &req, &r), KIN_EIO);
  assert_non_null(strstr(r.message, "SSL certificate problem"));
  kin_result_free(&r);
  kin_client_free(c);
}

KIN_SUITE(e2e_client, cmocka_unit_test(test_e2e_client_Verbs),
          cmocka_unit_test(test_e2e_client_ServerSideApply),
          cmocka_unit_test(test_e2e_client_ForbiddenAndTokenUser),
          cmocka_unit_test(test_e2e_client_Discovery),
          cmocka_unit_test(test_e2e_client_WrongCA))
