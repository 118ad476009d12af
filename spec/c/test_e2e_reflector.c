/* test_e2e_reflector.c -- the reflector against the real kube-apiserver
 * (spec/e2e/cluster.sh): initial sync with paging and the managedFields
 * transform, watch resume without relist, a 410 after an etcd compaction
 * (podtemplates are not watch-cached, so their watches reach etcd) with the
 * objects deleted meanwhile leaving as tombstones, WatchList (on by
 * default in v1.36) and metadata-only informers. Each test skips unless
 * KINFORMER_E2E_ADMIN_KUBECONFIG is set:
 *   spec/e2e/cluster.sh run ./build/release/kin_tests 'e2e_reflector_*'
 * Every test ends with the cache equal to the server's list. */
#include "kin_test.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "informer_factory.h"
#include "kin.h"
#include "kubeconfig.h"
#include "reflector.h"
#include "reflector_fx.h"
#include "rest_client.h"
#include "shared_informer.h"

#define SEC KIN_NSEC_PER_SEC

typedef struct {
  kin_client *client;
  kin_resource res;
  char ns[64];
  kin_informer *inf;
  kin_reflector *refl;
  kin_clock *fake;
  rec *events;
} efx;

static void efx_init(efx *fx, const char *resource) {
  if (!getenv("KINFORMER_E2E_ADMIN_KUBECONFIG")) skip();
  memset(fx, 0, sizeof(*fx));
  kin_kubeconfig_opts ko = {.path = getenv("KINFORMER_E2E_ADMIN_KUBECONFIG")};
  kin_rest_config *cfg = NULL;
  char err[512];
  if (kin_kubeconfig_load(&ko, &cfg, err, sizeof(err))) fail_msg("kubeconfig: %s", err);
  kin_client_opts o = {.qps = -1};
  int rc = kin_client_new(cfg, NULL, &o, &fx->client, err, sizeof(err));
  kin_rest_config_free(cfg);
  if (rc) fail_msg("kin_client_new: %s", err);
  if ((rc = kin_client_resource(fx->client, resource, &fx->res)))
    fail_msg("resource %s: %s", resource, kin_strerror(rc));
  static int seq;
  snprintf(fx->ns, sizeof(fx->ns), "kin-e2e-refl-%d-%ld-%d", (int)getpid(),
           (long)time(NULL) % 100000, seq++);
  kin_resource nsr;
  assert_int_equal(kin_client_resource(fx->client, "v1/namespaces", &nsr), 0);
  char body[256];
  snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
           fx->ns);
  kin_result r;
  rc = kin_client_create(fx->client, NULL, &nsr, NULL, body, strlen(body), NULL, &r);
  if (rc) fail_msg("namespace %s: %s", fx->ns, r.message ? r.message : kin_strerror(rc));
  kin_result_free(&r);
  fx->events = rec_new();
}

static void efx_start(efx *fx, kin_reflector_config *cfg, int drop_managed_fields) {
  kin_informer_config ic = {.clock = fx->fake, .name = "e2e"};
  if (drop_managed_fields) ic.transform = kin_transform_drop_managed_fields;
  assert_int_equal(kin_informer_new(&ic, &fx->inf), 0);
  kin_event_handler h = handler_for(fx->events);
  assert_int_equal(kin_informer_add_handler(fx->inf, &h, 0, NULL), 0);
  assert_int_equal(kin_informer_run(fx->inf), 0);
  cfg->client = fx->client;
  cfg->resource = fx->res;
  cfg->namespace = fx->ns;
  cfg->fifo = kin_informer_fifo(fx->inf);
  cfg->clock = fx->fake;
  if (!cfg->backoff_initial_ns) cfg->backoff_initial_ns = 50 * KIN_NSEC_PER_MSEC;
  if (!cfg->backoff_max_ns) cfg->backoff_max_ns = 500 * KIN_NSEC_PER_MSEC;
  assert_int_equal(kin_reflector_new(cfg, &fx->refl), 0);
  assert_int_equal(kin_reflector_run(fx->refl), 0);
}

static void efx_free(efx *fx) {
  kin_reflector_free(fx->refl);
  kin_informer_free(fx->inf);
  kin_client_free(fx->client);
  if (fx->fake) kin_fake_clock_free(fx->fake);
  rec_free(fx->events);
}

static kin_reflector_stats efx_stats(efx *fx) {
  kin_reflector_stats st;
  kin_reflector_get_stats(fx->refl, &st);
  return st;
}

/* Creates object name (labels: a JSON object or NULL) of the fixture's
 * resource and returns its resourceVersion. */
static long long efx_create(efx *fx, const char *name, const char *labels) {
  char body[1024];
  if (!strcmp(fx->res.resource, "podtemplates"))
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"PodTemplate\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":%s},\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
             "\"busybox\"}]}}}",
             name, labels ? labels : "{}");
  else
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":%s},\"data\":{\"v\":\"1\"}}",
             name, labels ? labels : "{}");
  kin_result r;
  int rc = kin_client_create(fx->client, NULL, &fx->res, fx->ns, body, strlen(body), NULL, &r);
  if (rc) fail_msg("create %s: %s", name, r.message ? r.message : kin_strerror(rc));
  json_error_t je;
  json_t *j = json_loadb(r.body, r.body_len, 0, &je);
  long long rv = atoll(json_string_value(json_object_get(json_object_get(j, "metadata"),
                                                         "resourceVersion")));
  json_decref(j);
  kin_result_free(&r);
  return rv;
}

static void efx_create_n(efx *fx, const char *prefix, int n) {
  char name[32];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "%s%02d", prefix, i);
    efx_create(fx, name, NULL);
  }
}

static void efx_delete(efx *fx, const char *name) {
  kin_result r;
  int rc = kin_client_delete(fx->client, NULL, &fx->res, fx->ns, name, NULL, &r);
  if (rc) fail_msg("delete %s: %s", name, r.message ? r.message : kin_strerror(rc));
  kin_result_free(&r);
}

static void efx_patch(efx *fx, const char *name, const char *patch) {
  kin_result r;
  int rc = kin_client_patch(fx->client, NULL, &fx->res, fx->ns, name, KIN_PATCH_MERGE, patch,
                            strlen(patch), NULL, &r);
  if (rc) fail_msg("patch %s: %s", name, r.message ? r.message : kin_strerror(rc));
  kin_result_free(&r);
}

/* "name@rv" of every cached object, sorted and joined into buf. */
static const char *cache_dump(efx *fx, char *buf, size_t cap) {
  size_t n;
  char **v = rfx_cache_lines(fx->inf, &n);
  kin_test_join(v, n, buf, cap);
  rfx_strv_free(v, n);
  return buf;
}

/* The same for the server's list. */
static const char *server_dump(efx *fx, char *buf, size_t cap) {
  kin_result r;
  assert_int_equal(kin_client_list(fx->client, NULL, &fx->res, fx->ns, NULL, &r), 0);
  json_error_t je;
  json_t *j = json_loadb(r.body, r.body_len, 0, &je);
  kin_result_free(&r);
  json_t *items = json_object_get(j, "items");
  size_t n = json_array_size(items);
  char **v = calloc(n + 1, sizeof(*v));
  for (size_t i = 0; i < n; i++) {
    json_t *md = json_object_get(json_array_get(items, i), "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    v[i] = malloc(strlen(name) + strlen(rv) + 2);
    sprintf(v[i], "%s@%s", name, rv);
  }
  json_decref(j);
  kin_test_join(v, n, buf, cap);
  rfx_strv_free(v, n);
  return buf;
}

static void expect_converged(efx *fx) {
  static char c[16384], srv[16384];
  for (int i = 0; i < 1000; i++) {
    if (!strcmp(cache_dump(fx, c, sizeof(c)), server_dump(fx, srv, sizeof(srv)))) return;
    kin_test_sleep_ms(20);
  }
  assert_string_equal(c, srv);
}

/* ---- etcd ------------------------------------------------------------------ */

static size_t sink(char *p, size_t size, size_t n, void *ud) {
  char *buf = ud;
  size_t have = strlen(buf), add = size * n;
  if (have + add < 4096) {
    memcpy(buf + have, p, add);
    buf[have + add] = 0;
  }
  return size * n;
}

static void etcd_post(const char *path, const char *body, char *out) {
  const char *etcd = getenv("KINFORMER_E2E_ETCD");
  if (!etcd) fail_msg("KINFORMER_E2E_ETCD is not set");
  char url[512];
  snprintf(url, sizeof(url), "%s%s", etcd, path);
  out[0] = 0;
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(c);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) fail_msg("etcd %s: %s", path, curl_easy_strerror(rc));
}

/* Compacts etcd at its current revision, as the apiserver does every 5
 * minutes: watches from an older resourceVersion get 410. */
static void etcd_compact_now(void) {
  char out[4096], body[128];
  etcd_post("/v3/kv/range", "{\"key\":\"AA==\"}", out);
  json_error_t je;
  json_t *j = json_loads(out, 0, &je);
  const char *rev = json_string_value(json_object_get(json_object_get(j, "header"), "revision"));
  if (!rev) fail_msg("etcd range: %s", out);
  snprintf(body, sizeof(body), "{\"revision\":\"%s\",\"physical\":true}", rev);
  json_decref(j);
  etcd_post("/v3/kv/compaction", body, out);
  if (!strstr(out, "header")) fail_msg("etcd compaction: %s", out);
}

/* ---- tests ------------------------------------------------------------------ */

/* Initial LIST (page size 7, which the watch cache may ignore at "0"),
 * then events; the managedFields transform leaves them out of the cache. */
static void test_e2e_reflector_Sync(void **state) {
  (void)state;
  efx fx;
  efx_init(&fx, "v1/configmaps");
  efx_create_n(&fx, "cm", 20);
  kin_reflector_config cfg = {.page_size = 7};
  efx_start(&fx, &cfg, 1);
  KIN_EVENTUALLY(efx_stats(&fx).synced && efx_stats(&fx).watches >= 1, 20000);
  expect_converged(&fx);
  kin_reflector_stats st = efx_stats(&fx);
  assert_int_equal(st.lists, 1);
  assert_int_equal(st.listed_items, 20);
  assert_true(st.pages >= 1); /* the watch cache serves "0" whole */
  char key[128];
  snprintf(key, sizeof(key), "%s/cm03", fx.ns);
  kin_obj *o = kin_indexer_get(kin_informer_indexer(fx.inf), key);
  assert_non_null(o);
  assert_string_equal(kin_obj_kind_name(o), "ConfigMap");
  assert_null(strstr(kin_obj_json(o, NULL), "managedFields"));
  kin_obj_unref(o);

  efx_create(&fx, "late", NULL);
  efx_patch(&fx, "cm01", "{\"data\":{\"v\":\"2\"}}");
  efx_delete(&fx, "cm02");
  expect_converged(&fx);
  KIN_EVENTUALLY(efx_stats(&fx).watch_events >= 3, 10000);
  efx_free(&fx);
}

/* podtemplates are served from etcd, which pages: 20 objects in pages of
 * 7 are three LIST requests chained by continue tokens, one Replace. */
static void test_e2e_reflector_PagedSyncFromEtcd(void **state) {
  (void)state;
  efx fx;
  efx_init(&fx, "v1/podtemplates");
  efx_create_n(&fx, "pt", 20);
  kin_reflector_config cfg = {.page_size = 7};
  efx_start(&fx, &cfg, 1);
  KIN_EVENTUALLY(efx_stats(&fx).synced, 20000);
  expect_converged(&fx);
  kin_reflector_stats st = efx_stats(&fx);
  assert_int_equal(st.pages, 3);
  assert_int_equal(st.listed_items, 20);
  assert_int_equal(st.lists, 1);
  efx_create(&fx, "late", NULL);
  expect_converged(&fx);
  efx_free(&fx);
}

/* A watch that goes quiet is dropped (idle timeout 1 s here) and resumed
 * from the last RV, with no relist, and misses nothing. */
static void test_e2e_reflector_WatchResume(void **state) {
  (void)state;
  efx fx;
  efx_init(&fx, "v1/configmaps");
  efx_create(&fx, "a", NULL);
  kin_reflector_config cfg = {.idle_timeout_ns = SEC};
  efx_start(&fx, &cfg, 0);
  KIN_EVENTUALLY(efx_stats(&fx).synced, 20000);
  KIN_EVENTUALLY(efx_stats(&fx).idle_timeouts >= 1 && efx_stats(&fx).watches >= 2, 10000);
  efx_create(&fx, "b", NULL);
  efx_patch(&fx, "a", "{\"data\":{\"v\":\"2\"}}");
  expect_converged(&fx);
  KIN_EVENTUALLY(efx_stats(&fx).idle_timeouts >= 2, 10000);
  efx_delete(&fx, "b");
  efx_create(&fx, "c", NULL);
  expect_converged(&fx);
  kin_reflector_stats st = efx_stats(&fx);
  assert_int_equal(st.lists, 1);
  assert_int_equal(st.relists_expired, 0);
  efx_free(&fx);
}

/* The watch is re-established (idle, on a fake clock) from an RV etcd has
 * compacted away: 410, relist at the last synced RV; the object deleted
 * while the reflector was backing off leaves as a tombstone. */
static void test_e2e_reflector_RelistAfterCompaction(void **state) {
  (void)state;
  efx fx;
  efx_init(&fx, "v1/podtemplates");
  fx.fake = kin_fake_clock_new(1000 * SEC);
  long long r1 = efx_create(&fx, "p1", NULL);
  efx_create(&fx, "p2", NULL);
  kin_reflector_config cfg = {.idle_timeout_ns = 60 * SEC};
  efx_start(&fx, &cfg, 0);
  KIN_EVENTUALLY(efx_stats(&fx).synced && efx_stats(&fx).watches == 1, 20000);
  expect_converged(&fx);

  /* Writes the watch does not see (another namespace), then compaction. */
  efx other;
  efx_init(&other, "v1/podtemplates");
  efx_create(&other, "elsewhere", NULL);
  efx_create(&other, "elsewhere2", NULL);
  etcd_compact_now();
  kin_fake_clock_step(fx.fake, 60 * SEC); /* idle: re-watch from the old RV */
  KIN_EVENTUALLY(efx_stats(&fx).backoffs == 1, 20000);
  kin_reflector_stats st = efx_stats(&fx);
  assert_int_equal(st.relists_expired, 1);
  assert_int_equal(st.idle_timeouts, 1);
  assert_int_equal(st.lists, 1);

  /* While it backs off before relisting. */
  efx_delete(&fx, "p1");
  efx_create(&fx, "p3", NULL);
  kin_fake_clock_step(fx.fake, st.last_backoff_ns);
  KIN_EVENTUALLY(efx_stats(&fx).lists == 2 && efx_stats(&fx).watches == 3, 20000);
  expect_converged(&fx);
  char want[160];
  snprintf(want, sizeof(want), "delete %s/p1 %lld tomb", fx.ns, r1);
  KIN_EVENTUALLY(rec_has(fx.events, want), 10000);
  efx_free(&other);
  efx_free(&fx);
}

/* WatchList is on by default in v1.36: no LIST at all, the initial state
 * is streamed and the stream goes on as the watch. */
static void test_e2e_reflector_WatchList(void **state) {
  (void)state;
  efx fx;
  efx_init(&fx, "v1/configmaps");
  long long ra = efx_create(&fx, "a", NULL);
  efx_create(&fx, "b", NULL);
  kin_reflector_config cfg = {.watch_list = 1};
  efx_start(&fx, &cfg, 0);
  KIN_EVENTUALLY(efx_stats(&fx).synced, 20000);
  expect_converged(&fx);
  kin_reflector_stats st = efx_stats(&fx);
  assert_true(st.watch_list_used);
  assert_int_equal(st.lists, 0);
  assert_int_equal(st.watches, 1);
  char want[160];
  snprintf(want, sizeof(want), "add %s/a %lld init", fx.ns, ra);
  KIN_EVENTUALLY(rec_has(fx.events, want), 10000);
  efx_create(&fx, "c", NULL);
  efx_delete(&fx, "b");
  expect_converged(&fx);
  assert_int_equal(efx_stats(&fx).watches, 1);
  efx_free(&fx);
}

/* Metadata-only: PartialObjectMetadata(List) on the wire, so the cache
 * has metadata and no data, for the list and for watch events. */
static void test_e2e_reflector_MetadataOnly(void **state) {
  (void)state;
  efx fx;
  efx_init(&fx, "v1/configmaps");
  efx_create(&fx, "a", "{\"app\":\"x\"}");
  kin_reflector_config cfg = {.metadata_only = 1};
  efx_start(&fx, &cfg, 0);
  KIN_EVENTUALLY(efx_stats(&fx).synced, 20000);
  efx_create(&fx, "b", "{\"app\":\"y\"}");
  expect_converged(&fx);
  const char *names[] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    char key[128];
    snprintf(key, sizeof(key), "%s/%s", fx.ns, names[i]);
    kin_obj *o = kin_indexer_get(kin_informer_indexer(fx.inf), key);
    assert_non_null(o);
    assert_string_equal(kin_obj_kind_name(o), "PartialObjectMetadata");
    assert_string_equal(kin_obj_api_version(o), "meta.k8s.io/v1");
    assert_string_equal(kin_obj_label(o, "app"), i ? "y" : "x");
    assert_null(strstr(kin_obj_json(o, NULL), "\"data\""));
    kin_obj_unref(o);
  }
  efx_free(&fx);
}

KIN_SUITE(e2e_reflector, cmocka_unit_test(test_e2e_reflector_Sync),
          cmocka_unit_test(test_e2e_reflector_PagedSyncFromEtcd),
          cmocka_unit_test(test_e2e_reflector_WatchResume),
          cmocka_unit_test(test_e2e_reflector_RelistAfterCompaction),
          cmocka_unit_test(test_e2e_reflector_WatchList),
          cmocka_unit_test(test_e2e_reflector_MetadataOnly))
