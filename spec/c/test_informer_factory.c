/* test_informer_factory.c -- SharedInformerFactory: one informer per
 * identity, reflector -> FIFO -> indexer + handlers against kinformer.sim,
 * start after creation, WaitForCacheSync naming the unsynced informer,
 * managedFields dropped by default, shutdown joining everything. */
#include "kin_test.h"

#include <stdio.h>
#include <string.h>

#include "handler_rec.h"
#include "informer_factory.h"
#include "sim_client.h"

typedef struct {
  kin_sim *sim;
  kin_client *client;
  kin_informer_factory *f;
} fx;

static void fx_start(fx *x) {
  x->sim = sim_start(0, 0);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(x->sim)};
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, NULL, &x->client, err, sizeof(err)), 0);
  kin_informer_factory_config fc = {.client = x->client};
  assert_int_equal(kin_informer_factory_new(&fc, &x->f), 0);
}

/* The sim, like kube-apiserver, needs a namespace before objects in it. */
static void mkns(fx *x, const char *ns) {
  char body[256];
  snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
  sim_resp r = sim_req(x->sim, "POST", "/api/v1/namespaces", body);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
}

static void fx_stop(fx *x) {
  kin_informer_factory_free(x->f);
  kin_client_free(x->client);
  kin_sim_free(x->sim);
}

static kin_informer *informer(fx *x, const char *res, const char *ns, const char *labels) {
  kin_informer_opts o = {.resource = res, .namespace = ns, .label_selector = labels};
  kin_informer *inf = NULL;
  char err[256] = "";
  int rc = kin_informer_factory_informer(x->f, &o, &inf, err, sizeof(err));
  if (rc) fail_msg("informer %s: %s (%s)", res, kin_strerror(rc), err);
  return inf;
}

/* The sorted keys of the informer's cache joined by ','. */
static const char *cache_keys(kin_informer *inf, char *buf, size_t cap) {
  char **keys = NULL;
  size_t n = 0;
  assert_int_equal(kin_indexer_list_keys(kin_informer_indexer(inf), &keys, &n), 0);
  kin_test_join(keys, n, buf, cap);
  kin_str_list_free(keys, n);
  return buf;
}

/* One informer per (resource, namespace, selectors): asking twice shares
 * it, any difference makes another (client-go's factory keys informers
 * by type; its namespace and tweak options are per factory). */
static void test_informer_factory_SharedPerIdentity(void **state) {
  fx x;
  fx_start(&x);
  kin_informer *a = informer(&x, "v1/configmaps", "ns1", NULL);
  assert_ptr_equal(informer(&x, "v1/configmaps", "ns1", NULL), a);
  assert_ptr_not_equal(informer(&x, "v1/configmaps", "ns2", NULL), a);
  assert_ptr_not_equal(informer(&x, "v1/configmaps", "ns1", "app=x"), a);
  assert_ptr_not_equal(informer(&x, "v1/configmaps", NULL, NULL), a);
  assert_non_null(kin_informer_factory_reflector(x.f, a));
  fx_stop(&x);
}

static void test_informer_factory_UnknownResourceNamed(void **state) {
  fx x;
  fx_start(&x);
  kin_informer_opts o = {.resource = "v1/nosuchthings"};
  kin_informer *inf = NULL;
  char err[256] = "";
  assert_int_equal(kin_informer_factory_informer(x.f, &o, &inf, err, sizeof(err)), KIN_ENOENT);
  assert_null(inf);
  assert_non_null(strstr(err, "v1/nosuchthings"));
  kin_informer_opts ns = {.resource = "v1/namespaces", .namespace = "x"};
  assert_int_equal(kin_informer_factory_informer(x.f, &ns, &inf, err, sizeof(err)), KIN_EINVAL);
  assert_non_null(strstr(err, "cluster-scoped"));
  fx_stop(&x);
}

/* The informer lists what exists (adds flagged as initial list), then
 * follows the watch: add, update, delete reach the handler in order and
 * the cache ends equal to the server's list. */
static void test_informer_factory_SyncThenWatchInOrder(void **state) {
  fx x;
  fx_start(&x);
  mkns(&x, "ns1");
  mkns(&x, "ns2");
  sim_put_cm(x.sim, "ns1", "a", NULL, "1");
  sim_put_cm(x.sim, "ns1", "b", NULL, "1");
  sim_put_cm(x.sim, "ns2", "other", NULL, "1");
  kin_informer *inf = informer(&x, "v1/configmaps", "ns1", NULL);
  rec *r = rec_new();
  kin_event_handler h = handler_for(r);
  kin_listener *l = NULL;
  assert_int_equal(kin_informer_add_handler(inf, &h, 0, &l), 0);
  assert_int_equal(kin_informer_factory_start(x.f), 0);
  char unsynced[128] = "";
  assert_int_equal(kin_informer_factory_wait_for_cache_sync(x.f, 10 * KIN_NSEC_PER_SEC, unsynced,
                                                            sizeof(unsynced)),
                   0);
  assert_true(kin_informer_has_synced(inf));
  char buf[512];
  assert_string_equal(cache_keys(inf, buf, sizeof(buf)), "ns1/a,ns1/b");
  KIN_EVENTUALLY(kin_listener_has_synced(l), 5000);
  assert_int_equal(rec_count(r), 2);
  assert_non_null(strstr(rec_dump(r, 0, NULL, buf, sizeof(buf)), "add ns1/a"));
  assert_non_null(strstr(buf, " init"));

  long long rv_c = sim_put_cm(x.sim, "ns1", "c", NULL, "1");
  sim_resp u = sim_req(x.sim, "PUT", "/api/v1/namespaces/ns1/configmaps/c",
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
                       "\"data\":{\"v\":\"2\"}}");
  assert_int_equal(u.code, 200);
  long long rv_u = atoll(jstr(u.json, "metadata.resourceVersion"));
  sim_resp_free(&u);
  sim_resp d = sim_req(x.sim, "DELETE", "/api/v1/namespaces/ns1/configmaps/a", NULL);
  assert_int_equal(d.code, 200);
  sim_resp_free(&d);
  KIN_EVENTUALLY(rec_count(r) == 5, 5000);
  char want[64];
  snprintf(want, sizeof(want), "add ns1/c %lld", rv_c);
  rec_expect(r, 2, want);
  snprintf(want, sizeof(want), "update ns1/c %lld>%lld", rv_c, rv_u);
  rec_expect(r, 3, want);
  pthread_mutex_lock(&r->mu);
  int del_ok = strncmp(r->ev[4], "delete ns1/a ", 13) == 0;
  pthread_mutex_unlock(&r->mu);
  assert_true(del_ok);
  assert_string_equal(cache_keys(inf, buf, sizeof(buf)), "ns1/b,ns1/c");
  kin_informer_factory_shutdown(x.f);
  fx_stop(&x);
  rec_free(r);
}

/* metadata.managedFields never reaches the cache unless asked for. */
static void test_informer_factory_ManagedFieldsDroppedByDefault(void **state) {
  fx x;
  fx_start(&x);
  mkns(&x, "ns1");
  sim_resp c = sim_req(
      x.sim, "POST", "/api/v1/namespaces/ns1/configmaps",
      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"m\","
      "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
      "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":{\"f:v\":{}}}}]},\"data\":{\"v\":\"1\"}}");
  assert_int_equal(c.code, 201);
  sim_resp_free(&c);
  kin_informer *dropped = informer(&x, "v1/configmaps", "ns1", NULL);
  kin_informer_opts keep = {.resource = "v1/configmaps", .namespace = "ns1", .keep_managed_fields = 1};
  kin_informer *kept = NULL;
  assert_int_equal(kin_informer_factory_informer(x.f, &keep, &kept, NULL, 0), 0);
  assert_ptr_not_equal(kept, dropped);
  assert_int_equal(kin_informer_factory_start(x.f), 0);
  assert_int_equal(kin_informer_factory_wait_for_cache_sync(x.f, 10 * KIN_NSEC_PER_SEC, NULL, 0), 0);
  kin_obj *a = NULL, *b = NULL;
  assert_non_null(a = kin_indexer_get(kin_informer_indexer(dropped), "ns1/m"));
  assert_non_null(b = kin_indexer_get(kin_informer_indexer(kept), "ns1/m"));
  const char *ja = kin_obj_json(a, NULL), *jb = kin_obj_json(b, NULL);
  assert_null(strstr(ja, "managedFields"));
  assert_non_null(strstr(ja, "\"name\":\"m\""));
  assert_non_null(strstr(ja, "\"data\""));
  /* The sim may or may not keep managedFields written by a client; when it
   * does, the keeping informer must have them. */
  sim_resp g = sim_req(x.sim, "GET", "/api/v1/namespaces/ns1/configmaps/m", NULL);
  if (strstr(g.body, "managedFields")) assert_non_null(strstr(jb, "managedFields"));
  sim_resp_free(&g);
  kin_obj_unref(a);
  kin_obj_unref(b);
  fx_stop(&x);
}

/* An informer asked for after Start is started at once. */
static void test_informer_factory_InformerAfterStartRuns(void **state) {
  fx x;
  fx_start(&x);
  mkns(&x, "late");
  sim_put_cm(x.sim, "late", "z", NULL, "1");
  assert_int_equal(kin_informer_factory_start(x.f), 0);
  kin_informer *inf = informer(&x, "v1/configmaps", "late", NULL);
  assert_int_equal(kin_informer_factory_wait_for_cache_sync(x.f, 10 * KIN_NSEC_PER_SEC, NULL, 0), 0);
  char buf[128];
  assert_string_equal(cache_keys(inf, buf, sizeof(buf)), "late/z");
  fx_stop(&x);
}

/* WaitForCacheSync gives up at the timeout and names the informer that is
 * not synced; shutdown then cancels the list in flight promptly. */
static void test_informer_factory_WaitForCacheSyncNamesUnsynced(void **state) {
  fx x;
  fx_start(&x);
  kin_sim_set_latency(x.sim, 4000);
  informer(&x, "v1/configmaps", "slow", NULL);
  assert_int_equal(kin_informer_factory_start(x.f), 0);
  char unsynced[128] = "";
  assert_int_equal(kin_informer_factory_wait_for_cache_sync(x.f, 200 * KIN_NSEC_PER_MSEC, unsynced,
                                                            sizeof(unsynced)),
                   KIN_ETIMEDOUT);
  assert_string_equal(unsynced, "v1/configmaps in namespace slow");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kin_informer_factory_shutdown(x.f);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  /* Bounded from above loosely: the point is that shutdown does not wait
   * for the 4 s response. */
  assert_true(t1.tv_sec - t0.tv_sec < 3);
  kin_informer *inf = NULL;
  kin_informer_opts o = {.resource = "v1/configmaps"};
  assert_int_equal(kin_informer_factory_informer(x.f, &o, &inf, NULL, 0), KIN_ECLOSED);
  assert_int_equal(kin_informer_factory_start(x.f), KIN_ECLOSED);
  kin_informer_factory_shutdown(x.f); /* idempotent */
  kin_sim_set_latency(x.sim, 0);
  fx_stop(&x);
}

KIN_SUITE(informer_factory, cmocka_unit_test(test_informer_factory_SharedPerIdentity),
          cmocka_unit_test(test_informer_factory_UnknownResourceNamed),
          cmocka_unit_test(test_informer_factory_SyncThenWatchInOrder),
          cmocka_unit_test(test_informer_factory_ManagedFieldsDroppedByDefault),
          cmocka_unit_test(test_informer_factory_InformerAfterStartRuns),
          cmocka_unit_test(test_informer_factory_WaitForCacheSyncNamesUnsynced))
