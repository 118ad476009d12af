/* test_sim_burst.c -- kinformer.sim's benchmark helpers: the update burst
 * (kin_sim_burst_updates, POST /kinformer-sim/burst) and seed objects that
 * keep their status. Not a port: client-go has no counterpart. */
#include "kin_test.h"

#include <unistd.h>

#include "kin.h"
#include "sim_client.h"

static void test_sim_BurstUpdatesRoundRobinInKeyOrder(void **state) {
  kin_sim *sim = sim_start(0, 60000);
  sim_put_cm(sim, "default", "c", NULL, "3");
  sim_put_cm(sim, "default", "a", NULL, "1");
  long long rv0 = sim_put_cm(sim, "default", "b", NULL, "2");
  sim_resp r = sim_req(sim, "POST", "/kinformer-sim/burst",
                       "{\"resource\":\"v1/configmaps\",\"count\":7}");
  assert_int_equal(r.code, 200);
  assert_int_equal(atoll(jstr(r.json, "firstResourceVersion")), rv0 + 1);
  assert_int_equal(atoll(jstr(r.json, "resourceVersion")), rv0 + 7);
  assert_int_equal(jint(r.json, "count"), 7);
  sim_resp_free(&r);
  assert_int_equal((long long)kin_sim_resource_version(sim), rv0 + 7);

  char path[256];
  snprintf(path, sizeof(path), "/api/v1/configmaps?watch=1&resourceVersion=%lld", rv0);
  json_t *evs = sim_watch(sim, path, 7, 5000);
  assert_int_equal(json_array_size(evs), 7);
  static const char *const order = "abcabca";
  for (size_t i = 0; i < 7; i++) {
    json_t *ev = json_array_get(evs, i);
    assert_string_equal(jstr(ev, "type"), "MODIFIED");
    char name[2] = {order[i], 0};
    assert_string_equal(jstr(ev, "object.metadata.name"), name);
    const char *orv = jstr(ev, "object.metadata.resourceVersion");
    assert_int_equal(atoll(orv), rv0 + 1 + (long long)i);
    /* The annotation carries the new resourceVersion: every update is a change. */
    json_t *ann = json_object_get(json_object_get(json_object_get(ev, "object"), "metadata"),
                                  "annotations");
    assert_string_equal(json_string_value(json_object_get(ann, "kinformer-sim/burst")), orv);
    /* The rest of the object is untouched. */
    char v[2] = {(char)(order[i] - 'a' + '1'), 0};
    assert_string_equal(jstr(ev, "object.data.v"), v);
  }
  json_decref(evs);
  kin_sim_free(sim);
}

static void test_sim_BurstInOneNamespaceLeavesOthers(void **state) {
  kin_sim *sim = sim_start(0, 60000);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces",
                       "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"x\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  long long rv_other = sim_put_cm(sim, "default", "o", NULL, "1");
  sim_put_cm(sim, "x", "a", NULL, "1");
  uint64_t first = 0, last = 0;
  assert_int_equal(kin_sim_burst_updates(sim, "v1/configmaps", "x", 3, &first, &last), 0);
  assert_int_equal(last - first, 2);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/o", NULL);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv_other);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/x/configmaps/a", NULL);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), (long long)last);
  sim_resp_free(&r);
  /* A group/version/resource path works too (apps/v1). */
  r = sim_req(sim, "POST", "/apis/apps/v1/namespaces/x/deployments",
              "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
              "\"spec\":{\"replicas\":1}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  assert_int_equal(kin_sim_burst_updates(sim, "apps/v1/deployments", NULL, 2, NULL, &last), 0);
  r = sim_req(sim, "GET", "/apis/apps/v1/namespaces/x/deployments/d", NULL);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), (long long)last);
  /* An annotation is not a spec change. */
  assert_int_equal(jint(r.json, "metadata.generation"), 1);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_BurstErrors(void **state) {
  kin_sim *sim = sim_start(16, 60000);
  sim_put_cm(sim, "default", "a", NULL, "1");
  uint64_t rv = kin_sim_resource_version(sim);
  /* No object in that namespace, unknown resource: 404. */
  sim_resp r = sim_req(sim, "POST", "/kinformer-sim/burst",
                       "{\"resource\":\"v1/configmaps\",\"namespace\":\"nope\",\"count\":1}");
  assert_int_equal(r.code, 404);
  assert_string_equal(jstr(r.json, "reason"), "NotFound");
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/kinformer-sim/burst", "{\"resource\":\"v1/nothings\",\"count\":1}");
  assert_int_equal(r.code, 404);
  sim_resp_free(&r);
  /* Missing count, malformed resource, more than the history (16), GET. */
  r = sim_req(sim, "POST", "/kinformer-sim/burst", "{\"resource\":\"v1/configmaps\"}");
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/kinformer-sim/burst", "{\"resource\":\"configmaps\",\"count\":1}");
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/kinformer-sim/burst", "{\"resource\":\"v1/configmaps\",\"count\":17}");
  assert_int_equal(r.code, 400);
  assert_non_null(strstr(jstr(r.json, "message"), "history (16)"));
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/kinformer-sim/burst", NULL);
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  assert_int_equal(kin_sim_burst_updates(sim, "v1/configmaps", NULL, 0, NULL, NULL), KIN_EINVAL);
  /* Nothing was written by any of them. */
  assert_int_equal(kin_sim_resource_version(sim), rv);
  assert_int_equal(kin_sim_burst_updates(sim, "v1/configmaps", NULL, 16, NULL, NULL), 0);
  assert_int_equal(kin_sim_resource_version(sim), rv + 16);
  kin_sim_free(sim);
}

static void test_sim_BurstNeedsTokenWhenSet(void **state) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.token = "t0k";
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  sim_resp r = sim_req(sim, "POST", "/kinformer-sim/burst",
                       "{\"resource\":\"v1/namespaces\",\"count\":1}");
  assert_int_equal(r.code, 401);
  sim_resp_free(&r);
  r = sim_do(sim, "POST", "/kinformer-sim/burst", NULL,
             "{\"resource\":\"v1/namespaces\",\"count\":1}", "Authorization: Bearer t0k");
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* A seed is restored state: a Pod keeps its status (a create would reset
 * it to Pending) and its managedFields, which the sim never writes. */
static void test_sim_SeedKeepsStatusAndManagedFields(void **state) {
  char seed[] = "/tmp/kin_sim_burst_seedXXXXXX";
  int fd = mkstemp(seed);
  assert_true(fd >= 0);
  const char *lines =
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"s\","
      "\"managedFields\":[{\"manager\":\"kubelet\",\"operation\":\"Update\",\"fieldsType\":\"FieldsV1\","
      "\"fieldsV1\":{\"f:status\":{}}}]},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]},"
      "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}\n"
      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\",\"namespace\":\"s\"}}\n";
  assert_int_equal(write(fd, lines, strlen(lines)), (ssize_t)strlen(lines));
  close(fd);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.seed_file = seed;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  unlink(seed);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/s/pods/p", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "status.phase"), "Running");
  assert_string_equal(jstr(r.json, "status.podIP"), "10.0.0.1");
  json_t *mf = json_object_get(json_object_get(r.json, "metadata"), "managedFields");
  assert_int_equal(json_array_size(mf), 1);
  assert_string_equal(jstr(json_array_get(mf, 0), "manager"), "kubelet");
  sim_resp_free(&r);
  /* A create over HTTP still resets status, as the pod strategy does. */
  r = sim_req(sim, "POST", "/api/v1/namespaces/s/pods",
              "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"q\"},"
              "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]},"
              "\"status\":{\"phase\":\"Running\"}}");
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "status.phase"), "Pending");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_burst, cmocka_unit_test(test_sim_BurstUpdatesRoundRobinInKeyOrder),
          cmocka_unit_test(test_sim_BurstInOneNamespaceLeavesOthers),
          cmocka_unit_test(test_sim_BurstErrors),
          cmocka_unit_test(test_sim_BurstNeedsTokenWhenSet),
          cmocka_unit_test(test_sim_SeedKeepsStatusAndManagedFields))
