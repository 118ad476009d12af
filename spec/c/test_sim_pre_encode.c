/* test_sim_pre_encode.c -- kinformer-sim --pre-encode (kin_sim_config.
 * pre_encode): each built-in object's protobuf body is made at its commit
 * and lists and watches copy it. The answers must be the transcoder's,
 * byte for byte: every request below is made with the kept bytes in use,
 * then again with them switched off, and the two bodies compared. That the
 * kept bytes are what is served is shown by changing them in place. */
#include "kin_test.h"

#include "kin.h"
#include "proto_int.h"
#include "sim_client.h"
#include "store_int.h"

#define PB "application/vnd.kubernetes.protobuf"

static kin_sim *start_pre(int pre) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.controllers = KIN_TEST_NO_WORKLOADS;
  cfg.pre_encode = pre;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  assert_int_equal(kin_sim_settle(sim, 10000), 0);
  return sim;
}

static void create(kin_sim *sim, const char *path, const char *body) {
  sim_resp r = sim_req(sim, "POST", path, body);
  if (r.code != 201) fail_msg("POST %s: %ld %s", path, r.code, r.body);
  sim_resp_free(&r);
}

/* GET path in protobuf: the body (caller frees) and its length. */
static char *get_pb(kin_sim *sim, const char *path, size_t *len) {
  sim_resp r = sim_do(sim, "GET", path, NULL, NULL, "Accept: " PB);
  if (r.code != 200) fail_msg("GET %s: %ld %.*s", path, r.code, (int)r.len, r.body);
  if (strncmp(r.ctype, PB, strlen(PB))) fail_msg("GET %s: Content-Type %s", path, r.ctype);
  char *b = r.body;
  *len = r.len;
  r.body = NULL;
  sim_resp_free(&r);
  return b;
}

static void set_pre(kin_sim *sim, int on) {
  pthread_mutex_lock(&sim->store.mu);
  sim->store.pre_encode = on ? kin__sim_pb_pre_encode : NULL;
  pthread_mutex_unlock(&sim->store.mu);
}

/* Lists, paged lists, selectors, another version's list, watches from a
 * resourceVersion (ADDED, MODIFIED, DELETED), a selector's watch (an
 * object leaving it) and a WatchList with its bookmark: the same bytes
 * from the kept bodies as from the transcoder. */
static void test_sim_PreEncodeSameBytes(void **state) {
  kin_sim *sim = start_pre(1);
  const char *cms = "/api/v1/namespaces/default/configmaps";
  sim_resp r = sim_req(sim, "POST", cms,
                       "{\"metadata\":{\"name\":\"c1\",\"labels\":{\"a\":\"b\"}},"
                       "\"data\":{\"k\":\"v\",\"e\":\"\"},\"binaryData\":{\"x\":\"AAE=\"}}");
  assert_int_equal(r.code, 201);
  char rv[32];
  snprintf(rv, sizeof(rv), "%s", jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  create(sim, cms, "{\"metadata\":{\"name\":\"c2\",\"labels\":{\"a\":\"b\"}},\"immutable\":true}");
  create(sim, cms, "{\"metadata\":{\"name\":\"c3\"},\"data\":{\"k\":\"w\"}}");
  create(sim, "/api/v1/namespaces/kube-system/configmaps", "{\"metadata\":{\"name\":\"c4\"}}");
  create(sim, "/api/v1/namespaces/default/pods",
         "{\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"x\"}},\"spec\":{\"containers\":"
         "[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":{\"cpu\":\"500m\"}}}]}}");
  create(sim, "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
         "{\"metadata\":{\"name\":\"h\"},\"spec\":{\"scaleTargetRef\":{\"kind\":\"Deployment\","
         "\"name\":\"d\",\"apiVersion\":\"apps/v1\"},\"minReplicas\":1,\"maxReplicas\":3}}");
  /* c1 leaves the selector a=b; c3 goes */
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/c1",
             "application/merge-patch+json", "{\"metadata\":{\"labels\":{\"a\":\"c\"}}}", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/c3", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);

  /* every stored built-in object kept its body */
  pthread_mutex_lock(&sim->store.mu);
  size_t kept = 0;
  for (size_t i = 0; i < sim->store.hlen; i++) {
    kin__sim_event *e = &sim->store.hist[(sim->store.hstart + i) % sim->store.hcap];
    assert_non_null(e->obj->pb);
    assert_true(e->obj->pb_msg_off + e->obj->pb_msg_len <= e->obj->pblen);
    kept++;
  }
  pthread_mutex_unlock(&sim->store.mu);
  assert_true(kept >= 8);

  char w1[256], w2[256];
  snprintf(w1, sizeof(w1), "%s?watch=1&resourceVersion=%s&timeoutSeconds=1", cms, rv);
  snprintf(w2, sizeof(w2), "%s?watch=1&resourceVersion=%s&timeoutSeconds=1&labelSelector=a%%3Db",
           cms, rv);
  const char *paths[] = {
      "/api/v1/configmaps",
      "/api/v1/configmaps?resourceVersion=0",
      "/api/v1/namespaces/default/configmaps?labelSelector=a%3Db",
      "/api/v1/namespaces/default/configmaps?limit=1",
      "/api/v1/namespaces/default/pods",
      "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers",
      "/apis/autoscaling/v2/horizontalpodautoscalers",
      "/api/v1/namespaces/nothing/configmaps",
      w1,
      w2,
      "/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&"
      "allowWatchBookmarks=true&timeoutSeconds=1",
      "/apis/autoscaling/v1/horizontalpodautoscalers?watch=1&resourceVersion=0&"
      "timeoutSeconds=1",
      NULL};
  for (int i = 0; paths[i]; i++) {
    size_t na, nb;
    set_pre(sim, 1);
    char *a = get_pb(sim, paths[i], &na);
    set_pre(sim, 0);
    char *b = get_pb(sim, paths[i], &nb);
    if (na != nb || memcmp(a, b, na))
      fail_msg("%s: %zu bytes from the kept bodies, %zu from the transcoder (or they differ)",
               paths[i], na, nb);
    assert_true(na > 0);
    free(a);
    free(b);
  }
  kin_sim_free(sim);
}

/* The list and the watch copy the kept bytes: changed in place, the
 * change is what a protobuf client reads, while JSON still says the
 * stored value. */
static void test_sim_PreEncodeServesKeptBytes(void **state) {
  kin_sim *sim = start_pre(1);
  create(sim, "/api/v1/namespaces/default/configmaps",
         "{\"metadata\":{\"name\":\"c\"},\"data\":{\"k\":\"zzzz\"}}");
  pthread_mutex_lock(&sim->store.mu);
  kin__sim_storage *st = kin__sim_registry_storage(&sim->store, "", "configmaps");
  assert_non_null(st);
  kin__sim_obj *o = kin__sim_lookup(st, "default", "c");
  assert_non_null(o);
  assert_non_null(o->pb);
  unsigned char *z = memmem(o->pb + o->pb_msg_off, o->pb_msg_len, "zzzz", 4);
  assert_non_null(z);
  memcpy(z, "yyyy", 4);
  pthread_mutex_unlock(&sim->store.mu);

  size_t n;
  char *b = get_pb(sim, "/api/v1/namespaces/default/configmaps", &n);
  char err[256];
  kin__sim_pb_type tm;
  json_t *list = kin__sim_pb_unwrap((const uint8_t *)b, n, -1, &tm, err, sizeof(err));
  if (!list) fail_msg("%s", err);
  assert_string_equal(jstr(json_array_get(json_object_get(list, "items"), 0), "data.k"), "yyyy");
  json_decref(list);
  free(b);
  b = get_pb(sim, "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", &n);
  assert_non_null(memmem(b, n, "yyyy", 4));
  assert_null(memmem(b, n, "zzzz", 4));
  free(b);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/c", NULL);
  assert_string_equal(jstr(r.json, "data.k"), "zzzz");
  sim_resp_free(&r);
  kin_sim_free(sim);

  /* without the option nothing is kept */
  sim = start_pre(0);
  create(sim, "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"c\"}}");
  pthread_mutex_lock(&sim->store.mu);
  o = kin__sim_lookup(kin__sim_registry_storage(&sim->store, "", "configmaps"), "default", "c");
  assert_non_null(o);
  assert_null(o->pb);
  pthread_mutex_unlock(&sim->store.mu);
  kin_sim_free(sim);
}

KIN_SUITE(sim_pre_encode, cmocka_unit_test(test_sim_PreEncodeSameBytes),
          cmocka_unit_test(test_sim_PreEncodeServesKeptBytes))
