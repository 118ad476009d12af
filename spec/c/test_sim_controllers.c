/* test_sim_controllers.c -- kinformer.sim's controller manager
 * (csrc/sim/controllers/): which controllers run (kube-controller-manager's
 * --controllers syntax), every change reaching them, the fake clock and
 * settle, with the serviceaccount controller as the witness (a namespace
 * gets its "default" ServiceAccount, also after it is deleted). */
#include "kin_test.h"

#include "kin.h"
#include "sim_client.h"

static kin_sim *start_with(const char *controllers, int fake_clock) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.controllers = controllers;
  cfg.fake_clock = fake_clock;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}

static int code_of(kin_sim *sim, const char *method, const char *path, const char *body) {
  sim_resp r = sim_req(sim, method, path, body);
  int code = r.code;
  sim_resp_free(&r);
  return code;
}

static void test_sim_ControllersCheckNames(void **state) {
  char bad[32];
  assert_int_equal(kin_sim_controllers_check(NULL, bad, sizeof(bad)), 0);
  assert_int_equal(kin_sim_controllers_check("*", bad, sizeof(bad)), 0);
  assert_int_equal(kin_sim_controllers_check("none", bad, sizeof(bad)), 0);
  assert_int_equal(kin_sim_controllers_check("*,-serviceaccount", bad, sizeof(bad)), 0);
  assert_int_equal(kin_sim_controllers_check("serviceaccount,nope", bad, sizeof(bad)),
                   KIN_EINVAL);
  assert_string_equal(bad, "nope");
  assert_int_equal(kin_sim_controllers_check("-", bad, sizeof(bad)), KIN_EINVAL);
  assert_string_equal(bad, "-");
  int on = 0;
  int found = 0;
  for (size_t i = 0; kin_sim_controller_name(i, &on); i++)
    if (!strcmp(kin_sim_controller_name(i, &on), "serviceaccount")) found = on;
  assert_true(found);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.controllers = "bogus";
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), KIN_EINVAL);
  assert_null(sim);
}

/* At start the default namespaces already have their ServiceAccount;
 * a new namespace gets one, and a deleted one comes back. */
static void test_sim_ControllersServiceAccountPerNamespace(void **state) {
  kin_sim *sim = start_with(NULL, 0);
  assert_int_equal(code_of(sim, "GET", "/api/v1/namespaces/kube-system/serviceaccounts/default",
                           NULL), 200);
  assert_int_equal(code_of(sim, "POST", "/api/v1/namespaces",
                           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                           "\"metadata\":{\"name\":\"team-a\"}}"), 201);
  assert_int_equal(kin_sim_settle(sim, 5000), 0);
  assert_int_equal(code_of(sim, "GET", "/api/v1/namespaces/team-a/serviceaccounts/default", NULL),
                   200);
  assert_int_equal(code_of(sim, "DELETE", "/api/v1/namespaces/team-a/serviceaccounts/default",
                           NULL), 200);
  assert_int_equal(kin_sim_settle(sim, 5000), 0);
  assert_int_equal(code_of(sim, "GET", "/api/v1/namespaces/team-a/serviceaccounts/default", NULL),
                   200);
  kin_sim_free(sim);
}

/* "none" and "-name" leave the API server bare. */
static void test_sim_ControllersNoneIsBare(void **state) {
  const char *specs[] = {"none", "*,-serviceaccount"};
  for (int i = 0; i < 2; i++) {
    kin_sim *sim = start_with(specs[i], 0);
    assert_int_equal(kin_sim_settle(sim, 1000), 0);
    assert_int_equal(
        code_of(sim, "GET", "/api/v1/namespaces/default/serviceaccounts/default", NULL), 404);
    assert_int_equal(kin_sim_clock_advance(sim, 1000), KIN_EINVAL);
    kin_sim_free(sim);
  }
}

/* The fake clock moves only when advanced; the real one on its own. */
static void test_sim_ControllersClock(void **state) {
  kin_sim *sim = start_with(NULL, 1);
  assert_int_equal(kin_sim_clock_now_ms(sim), 0);
  assert_int_equal(kin_sim_clock_advance(sim, 2500), 0);
  assert_int_equal(kin_sim_clock_now_ms(sim), 2500);
  assert_int_equal(kin_sim_settle(sim, 1000), 0);
  kin_sim_free(sim);
  sim = start_with(NULL, 0);
  assert_int_equal(kin_sim_clock_advance(sim, 10), KIN_EINVAL);
  uint64_t t0 = kin_sim_clock_now_ms(sim);
  struct timespec ts = {0, 20 * 1000000L};
  nanosleep(&ts, NULL);
  assert_true(kin_sim_clock_now_ms(sim) >= t0 + 20);
  kin_sim_free(sim);
}

/* Many changes at once: every namespace created gets its account (no
 * change is lost between the commit hook and the controllers). */
static void test_sim_ControllersSeeEveryChange(void **state) {
  kin_sim *sim = start_with(NULL, 0);
  char body[160], path[128];
  for (int i = 0; i < 200; i++) {
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns-%d\"}}", i);
    assert_int_equal(code_of(sim, "POST", "/api/v1/namespaces", body), 201);
  }
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  for (int i = 0; i < 200; i++) {
    snprintf(path, sizeof(path), "/api/v1/namespaces/ns-%d/serviceaccounts/default", i);
    assert_int_equal(code_of(sim, "GET", path, NULL), 200);
  }
  kin_sim_free(sim);
}

/* The number of items of a list at path. */
static size_t count_items(kin_sim *sim, const char *path) {
  sim_resp r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 200);
  size_t n = json_array_size(json_object_get(r.json, "items"));
  sim_resp_free(&r);
  return n;
}

/* Every default controller together, on a fake clock (and so under the
 * sanitizers): a Deployment of 3 comes up (deployment, replicaset,
 * scheduler, kubelet), deleting it takes its ReplicaSet and Pods along
 * (garbagecollector), and deleting the namespace empties and removes it
 * (namespace). */
static void test_sim_ControllersDeploymentLifecycle(void **state) {
  kin_sim *sim = start_with(NULL, 1);
  assert_int_equal(code_of(sim, "POST", "/api/v1/namespaces",
                           "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
                           "\"metadata\":{\"name\":\"apps\"}}"), 201);
  assert_int_equal(
      code_of(sim, "POST", "/apis/apps/v1/namespaces/apps/deployments",
              "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},"
              "\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
              "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"
              "[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}"),
      201);
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  for (int i = 0; i < 5; i++) { /* the pods' start-up delay, then the status */
    assert_int_equal(kin_sim_clock_advance(sim, 1000), 0);
    assert_int_equal(kin_sim_settle(sim, 10000), 0);
  }
  sim_resp r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/apps/deployments/web", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(jint(r.json, "status.availableReplicas"), 3);
  assert_int_equal(jint(r.json, "status.readyReplicas"), 3);
  sim_resp_free(&r);
  assert_int_equal(count_items(sim, "/apis/apps/v1/namespaces/apps/replicasets"), 1);
  assert_int_equal(count_items(sim, "/api/v1/namespaces/apps/pods"), 3);

  assert_int_equal(code_of(sim, "DELETE", "/apis/apps/v1/namespaces/apps/deployments/web", NULL),
                   200);
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  assert_int_equal(count_items(sim, "/apis/apps/v1/namespaces/apps/replicasets"), 0);
  assert_int_equal(count_items(sim, "/api/v1/namespaces/apps/pods"), 0);

  assert_int_equal(code_of(sim, "DELETE", "/api/v1/namespaces/apps", NULL), 200);
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  assert_int_equal(kin_sim_clock_advance(sim, 6000), 0); /* the namespace controller's 5 s */
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  assert_int_equal(code_of(sim, "GET", "/api/v1/namespaces/apps", NULL), 404);
  kin_sim_free(sim);
}

KIN_SUITE(sim_controllers, cmocka_unit_test(test_sim_ControllersCheckNames),
          cmocka_unit_test(test_sim_ControllersServiceAccountPerNamespace),
          cmocka_unit_test(test_sim_ControllersNoneIsBare),
          cmocka_unit_test(test_sim_ControllersClock),
          cmocka_unit_test(test_sim_ControllersSeeEveryChange),
          cmocka_unit_test(test_sim_ControllersDeploymentLifecycle))
