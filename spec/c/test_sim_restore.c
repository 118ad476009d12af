/* test_sim_restore.c -- kinformer.sim's restored state (kin_sim_put,
 * kin_sim_get, the seed file; csrc/sim/store/restore.c), which
 * kinformer.replay feeds a recorded trace through: the recorded uid,
 * creationTimestamp and resourceVersion are what the object carries, while
 * an API create keeps ignoring them as kube-apiserver does. Not a port:
 * client-go has no counterpart (an etcd restore is the nearest). */
#include "kin_test.h"

#include <unistd.h>

#include "kin.h"
#include "sim_client.h"

/* A bare API server: no controller writes (a namespace's ServiceAccount)
 * between the test's. */
static kin_sim *bare_sim(void) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.controllers = "none";
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}

static const char CM_AT_500[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"namespace\":\"rec\","
    "\"uid\":\"11111111-2222-3333-4444-555555555555\",\"creationTimestamp\":\"2020-01-02T03:04:05Z\","
    "\"resourceVersion\":\"500\"},\"data\":{\"k\":\"v\"}}";

static void test_sim_PutKeepsIdentityAndResourceVersion(void **state) {
  kin_sim *sim = bare_sim();
  uint64_t rv = 0;
  assert_int_equal(kin_sim_put(sim, CM_AT_500, strlen(CM_AT_500), 0, &rv, NULL, 0), 0);
  assert_int_equal(rv, 500);
  assert_int_equal(kin_sim_resource_version(sim), 500);
  /* the namespace was made (before the jump) */
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/rec", NULL);
  assert_int_equal(r.code, 200);
  assert_true(atoll(jstr(r.json, "metadata.resourceVersion")) < 500);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/rec/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "metadata.uid"), "11111111-2222-3333-4444-555555555555");
  assert_string_equal(jstr(r.json, "metadata.creationTimestamp"), "2020-01-02T03:04:05Z");
  assert_string_equal(jstr(r.json, "metadata.resourceVersion"), "500");
  sim_resp_free(&r);
  /* later writes get higher resourceVersions */
  assert_int_equal(sim_put_cm(sim, "rec", "b", NULL, "x"), 501);
  /* a recorded resourceVersion at or below the sim's is not reused: the
   * next one; the identity stays */
  const char *older = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
                      "\"namespace\":\"rec\",\"resourceVersion\":\"7\"},\"data\":{\"k\":\"w\"}}";
  assert_int_equal(kin_sim_put(sim, older, strlen(older), 0, &rv, NULL, 0), 0);
  assert_int_equal(rv, 502);
  char *s = kin_sim_get(sim, "v1", "ConfigMap", "rec", "a");
  assert_non_null(s);
  json_error_t e;
  json_t *got = json_loads(s, 0, &e);
  free(s);
  assert_string_equal(jstr(got, "metadata.uid"), "11111111-2222-3333-4444-555555555555");
  assert_string_equal(jstr(got, "metadata.resourceVersion"), "502");
  assert_string_equal(jstr(got, "data.k"), "w");
  json_decref(got);
  assert_null(kin_sim_get(sim, "v1", "ConfigMap", "rec", "nope"));
  assert_null(kin_sim_get(sim, "v1", "Nope", "rec", "a"));
  kin_sim_free(sim);
}

/* A watch sees a put as any write, under the put resourceVersion. */
static void test_sim_PutIsWatched(void **state) {
  kin_sim *sim = bare_sim();
  char path[128];
  snprintf(path, sizeof(path), "/api/v1/namespaces/rec/configmaps?watch=1&resourceVersion=%llu",
           (unsigned long long)kin_sim_resource_version(sim));
  assert_int_equal(kin_sim_put(sim, CM_AT_500, strlen(CM_AT_500), 0, NULL, NULL, 0), 0);
  json_t *events = sim_watch(sim, path, 1, 2000);
  assert_int_equal(json_array_size(events), 1);
  json_t *ev = json_array_get(events, 0);
  assert_string_equal(jstr(ev, "type"), "ADDED");
  assert_string_equal(jstr(ev, "object.metadata.resourceVersion"), "500");
  assert_string_equal(jstr(ev, "object.metadata.uid"), "11111111-2222-3333-4444-555555555555");
  json_decref(events);
  kin_sim_free(sim);
}

/* An API create still ignores a client's uid and creationTimestamp
 * (kube-apiserver's rules). */
static void test_sim_ApiCreateIgnoresClientIdentity(void **state) {
  kin_sim *sim = bare_sim();
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\","
                       "\"uid\":\"mine\",\"creationTimestamp\":\"2020-01-02T03:04:05Z\"}}");
  assert_int_equal(r.code, 201);
  assert_string_not_equal(jstr(r.json, "metadata.uid"), "mine");
  assert_string_not_equal(jstr(r.json, "metadata.creationTimestamp"), "2020-01-02T03:04:05Z");
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), kin_sim_resource_version(sim));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* deleted: removes; marks (deletionTimestamp) while finalizers hold it;
 * nothing when absent. A deletionTimestamp without finalizers removes. */
static void test_sim_PutDeleted(void **state) {
  kin_sim *sim = bare_sim();
  const char *fin = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"f\","
                    "\"namespace\":\"default\",\"finalizers\":[\"x/y\"]}}";
  uint64_t rv = 0;
  assert_int_equal(kin_sim_put(sim, fin, strlen(fin), 0, &rv, NULL, 0), 0);
  assert_int_equal(kin_sim_put(sim, fin, strlen(fin), 1, &rv, NULL, 0), 0);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/f", NULL);
  assert_int_equal(r.code, 200);
  assert_non_null(jstr(r.json, "metadata.deletionTimestamp"));
  sim_resp_free(&r);
  /* marked already: the second removes it */
  assert_int_equal(kin_sim_put(sim, fin, strlen(fin), 1, &rv, NULL, 0), 0);
  assert_null(kin_sim_get(sim, "v1", "ConfigMap", "default", "f"));
  assert_int_equal(kin_sim_put(sim, fin, strlen(fin), 1, &rv, NULL, 0), 0);
  assert_int_equal(rv, 0);
  const char *gone = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
                     "\"namespace\":\"rec\",\"deletionTimestamp\":\"2020-01-02T03:04:05Z\"}}";
  assert_int_equal(kin_sim_put(sim, CM_AT_500, strlen(CM_AT_500), 0, NULL, NULL, 0), 0);
  assert_int_equal(kin_sim_put(sim, gone, strlen(gone), 0, &rv, NULL, 0), 0);
  assert_int_equal(rv, 501);
  assert_null(kin_sim_get(sim, "v1", "ConfigMap", "rec", "a"));
  kin_sim_free(sim);
}

static void test_sim_PutErrors(void **state) {
  kin_sim *sim = bare_sim();
  char msg[256];
  assert_int_equal(kin_sim_put(sim, "{", 1, 0, NULL, msg, sizeof(msg)), KIN_EINVAL);
  const char *unserved = "{\"apiVersion\":\"v9\",\"kind\":\"Nope\",\"metadata\":{\"name\":\"a\"}}";
  assert_int_equal(kin_sim_put(sim, unserved, strlen(unserved), 0, NULL, msg, sizeof(msg)), KIN_EINVAL);
  assert_non_null(strstr(msg, "served"));
  const char *bad = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"A_\"}}";
  assert_int_equal(kin_sim_put(sim, bad, strlen(bad), 0, NULL, msg, sizeof(msg)), KIN_EINVAL);
  assert_non_null(strstr(msg, "metadata.name"));
  kin_sim_free(sim);
}

/* The seed file is restored state too: identity and resourceVersion kept. */
static void test_sim_SeedKeepsIdentity(void **state) {
  char seed[] = "/tmp/kin_sim_restore_seedXXXXXX";
  int fd = mkstemp(seed);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, CM_AT_500, strlen(CM_AT_500)), (ssize_t)strlen(CM_AT_500));
  close(fd);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.controllers = "none";
  cfg.seed_file = seed;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  unlink(seed);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/rec/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "metadata.uid"), "11111111-2222-3333-4444-555555555555");
  assert_string_equal(jstr(r.json, "metadata.resourceVersion"), "500");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(sim_restore, cmocka_unit_test(test_sim_PutKeepsIdentityAndResourceVersion),
          cmocka_unit_test(test_sim_PutIsWatched),
          cmocka_unit_test(test_sim_ApiCreateIgnoresClientIdentity),
          cmocka_unit_test(test_sim_PutDeleted), cmocka_unit_test(test_sim_PutErrors),
          cmocka_unit_test(test_sim_SeedKeepsIdentity))
