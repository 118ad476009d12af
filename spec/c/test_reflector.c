/* test_reflector.c -- the reflector against the in-process sim: ports of
 * client-go's reflector_test.go where a test corresponds (list/watch
 * options, paging, RV sequences of relists, backoff, 429, watch timeout)
 * and the faults client-go's fakes cannot produce (dropped, stalled, cut
 * and corrupted watches, compaction, a server restarted behind the
 * client). Every test ends with the cache (the informer's indexer fed by
 * the reflector) equal to the server's list. What the reflector sent is
 * read from the sim's request log (reflector_fx.h). */
#include "kin_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reflector_fx.h"

/* A request of the reflector (the test reads through another path). */
#define REFL_GET "GET " RFX_PATH
#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC

/* The events the handler got for key, in order, joined with '|'. */
static const char *events_of(rfx *fx, const char *key, char *buf, size_t n) {
  rec *r = fx->events;
  buf[0] = 0;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++) {
    const char *sp = strchr(r->ev[i], ' ');
    size_t kl = strlen(key);
    if (!sp || strncmp(sp + 1, key, kl) || (sp[1 + kl] != ' ' && sp[1 + kl])) continue;
    size_t used = strlen(buf);
    snprintf(buf + used, n - used, "%s%s", used ? "|" : "", r->ev[i]);
  }
  pthread_mutex_unlock(&r->mu);
  return buf;
}

/* The i-th LIST / WATCH of the configmaps the reflector sent. */
static void nth_list(rfx *fx, size_t i, char *buf, size_t n) {
  if (!rfx_req(fx, i, REFL_GET, "watch=", buf, n)) fail_msg("no LIST #%zu", i);
}
static void nth_watch(rfx *fx, size_t i, char *buf, size_t n) {
  size_t k = 0, seen = 0;
  while (rfx_req(fx, k++, REFL_GET, NULL, buf, n))
    if (strstr(buf, "watch=true") && seen++ == i) return;
  fail_msg("no WATCH #%zu", i);
}

/* Synced and its first watch has reached the server. */
static void wait_synced(rfx *fx) {
  KIN_EVENTUALLY(rfx_stats(fx).synced && rfx_count(fx, "watch=true", NULL) >= 1, 8000);
}

/* A write the reflector does not watch (namespace "other"), to move the
 * server's resourceVersion on. */
static void write_elsewhere(rfx *fx, const char *name) {
  sim_resp r = sim_req(fx->sim, "POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":\"other\"}}");
  assert_true(r.code == 201 || r.code == 409);
  sim_resp_free(&r);
  sim_put_cm(fx->sim, "other", name, NULL, "1");
}

/* Makes the watch unable to resume: the server moves on unseen, its history
 * is compacted and the watch dropped. Whether the re-watch gets 410 or the
 * dropped watch counts as very short, the reflector relists at its last
 * synced RV. */
static void force_relist(rfx *fx) {
  write_elsewhere(fx, "unseen");
  kin_sim_compact(fx->sim);
  kin_sim_drop_watches(fx->sim);
}

/* A sim holding "a" (BOOKMARKs every bookmark_ms; 0: the sim's default
 * of a minute) and a reflector (cfg may be NULL) synced on it. */
static void start_synced(rfx *fx, uint32_t bookmark_ms, kin_reflector_config *cfg) {
  kin_sim_config scfg;
  kin_sim_config_init(&scfg);
  if (bookmark_ms) scfg.bookmark_interval_ms = bookmark_ms;
  rfx_init(fx, &scfg);
  rfx_create(fx, "a");
  rfx_start(fx, cfg);
  wait_synced(fx);
}

/* Writes name after a disruption and checks that it reached the cache by
 * the resumed watch: converged, one LIST round, no expiry. */
static void expect_resumed_without_relist(rfx *fx, const char *name) {
  rfx_create(fx, name);
  rfx_expect_converged(fx, 5000);
  kin_reflector_stats st = rfx_stats(fx);
  assert_int_equal(st.lists, 1);
  assert_int_equal(st.relists_expired, 0);
}

/* ---- list and watch options ----------------------------------------------- */

/* client-go: the first LIST is at resourceVersion "0" (watch cache) with
 * the pager's limit, the WATCH starts from the list's RV with bookmarks on
 * (TestReflectorResyncWithResourceVersion's first step, TestWatchTimeout);
 * list items get the list's kind. */
static void test_reflector_ListAtZeroThenWatchFromListRV(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  rfx_create(&fx, "a");
  rfx_create(&fx, "b");
  char srv[32], req[2048];
  rfx_server_rv(&fx, srv, sizeof(srv));
  rfx_start(&fx, NULL);
  wait_synced(&fx);
  rfx_expect_converged(&fx, 5000);

  nth_list(&fx, 0, req, sizeof(req));
  rfx_expect_param(req, "resourceVersion", "0");
  rfx_expect_param(req, "limit", "500");
  rfx_expect_param(req, "continue", NULL);
  nth_watch(&fx, 0, req, sizeof(req));
  rfx_expect_param(req, "resourceVersion", srv);
  rfx_expect_param(req, "allowWatchBookmarks", "true");
  rfx_expect_param(req, "sendInitialEvents", NULL);
  char ts[32];
  assert_non_null(rfx_param(req, "timeoutSeconds", ts, sizeof(ts)));
  assert_true(atoi(ts) >= 300 && atoi(ts) < 600);

  /* Items of the typed list come without kind; the cache has it. */
  kin_obj *a = kin_indexer_get(kin_informer_indexer(fx.inf), RFX_NS "/a");
  assert_non_null(a);
  assert_string_equal(kin_obj_kind_name(a), "ConfigMap");
  assert_string_equal(kin_obj_api_version(a), "v1");
  kin_obj_unref(a);

  char last[32];
  assert_string_equal(rfx_last_rv(&fx, last, sizeof(last)), srv);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.lists, 1);
  assert_int_equal(st.pages, 1);
  assert_int_equal(st.watches, 1);
  assert_int_equal(st.listed_items, 2);
  assert_false(st.watch_list_used);
  rfx_free(&fx);
}

/* client-go TestReflectorWatchHandler: ADDED / MODIFIED / DELETED reach the
 * store in order and the last RV follows the last event. */
static void test_reflector_ReflectorWatchHandler(void **state) {
  (void)state;
  rfx fx;
  start_synced(&fx, 0, NULL);
  long long r1 = rfx_create(&fx, "x");
  long long r2 = rfx_update(&fx, "x", "2");
  long long r3 = rfx_update(&fx, "x", "3");
  rfx_delete(&fx, "x");
  long long r5 = rfx_create(&fx, "y");
  rfx_expect_converged(&fx, 5000);
  char want[512], got[512], srv[32], last[32];
  KIN_EVENTUALLY(rfx_stats(&fx).watch_events == 5, 5000);
  snprintf(want, sizeof(want), "add default/x %lld|update default/x %lld>%lld|update default/x "
                               "%lld>%lld|delete default/x ",
           r1, r1, r2, r2, r3);
  KIN_EVENTUALLY(strstr(events_of(&fx, RFX_NS "/x", got, sizeof(got)), "delete"), 5000);
  assert_memory_equal(got, want, strlen(want));
  assert_null(strstr(got, "tomb")); /* a watched delete carries the object */
  snprintf(want, sizeof(want), "%lld", r5);
  assert_string_equal(rfx_last_rv(&fx, last, sizeof(last)), want);
  assert_string_equal(rfx_server_rv(&fx, srv, sizeof(srv)), want);
  rfx_free(&fx);
}

/* client-go TestReflectorListAndWatch: a watch that breaks is started again
 * from the RV of the last event delivered, without a relist; each watch
 * draws its timeoutSeconds in [300, 600) (TestWatchTimeout). */
static void test_reflector_ReflectorListAndWatch(void **state) {
  (void)state;
  rfx fx;
  start_synced(&fx, 0, NULL);
  char before[32], req[2048], name[32], ts[32];
  int distinct = 0, first_ts = -1;
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof(name), "drop%d", i);
    rfx_create(&fx, name);
    rfx_expect_converged(&fx, 5000);
    KIN_EVENTUALLY(rfx_stats(&fx).watch_events == (uint64_t)i + 1, 5000);
    rfx_last_rv(&fx, before, sizeof(before));
    kin_sim_drop_watches(fx.sim);
    KIN_EVENTUALLY(rfx_count(&fx, "watch=true", NULL) == (size_t)i + 2, 5000);
    nth_watch(&fx, (size_t)i + 1, req, sizeof(req));
    rfx_expect_param(req, "resourceVersion", before);
    assert_non_null(rfx_param(req, "timeoutSeconds", ts, sizeof(ts)));
    assert_true(atoi(ts) >= 300 && atoi(ts) < 600);
    if (first_ts < 0) first_ts = atoi(ts);
    else distinct += atoi(ts) != first_ts;
  }
  assert_true(distinct > 0); /* random, not a constant */
  rfx_update(&fx, "a", "2");
  expect_resumed_without_relist(&fx, "after");
  assert_int_equal(rfx_stats(&fx).watches, 5);
  assert_int_equal(rfx_count(&fx, REFL_GET, "watch="), 1);
  rfx_free(&fx);
}

/* ---- paging ------------------------------------------------------------------ */

static void create_n(rfx *fx, const char *prefix, int n) {
  char name[64];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "%s%02d", prefix, i);
    rfx_create(fx, name);
  }
}

/* A sim that serves lists at "0" whole, as kube-apiserver's watch cache,
 * with 10 objects, and a reflector paging by 4, synced. */
static void start_paged(rfx *fx) {
  kin_sim_config scfg;
  kin_sim_config_init(&scfg);
  scfg.watch_cache_lists = 1;
  rfx_init(fx, &scfg);
  create_n(fx, "p", 10);
  kin_reflector_config cfg = {.page_size = 4};
  rfx_start(fx, &cfg);
  wait_synced(fx);
}

/* Forces a relist of start_paged's reflector and checks it began with a
 * page of 4 at rv and took four LIST requests in all. */
static void relist_paged(rfx *fx, const char *rv) {
  char req[2048];
  force_relist(fx);
  KIN_EVENTUALLY(rfx_count(fx, REFL_GET, "watch=") == 4, 5000);
  rfx_expect_converged(fx, 5000);
  nth_list(fx, 1, req, sizeof(req));
  rfx_expect_param(req, "limit", "4");
  rfx_expect_param(req, "resourceVersion", rv);
}

/* client-go TestReflectorWatchListPageSize: at "0" the watch cache (and
 * the sim) ignore limit, so the first list is one page; a relist at an RV
 * with the page size set comes in pages of that size chained by continue
 * tokens, all collected before one Replace. */
static void test_reflector_ReflectorWatchListPageSize(void **state) {
  (void)state;
  kin_test_log_start();
  rfx fx;
  start_paged(&fx);
  char req[2048], rv[32], c[512];
  nth_list(&fx, 0, req, sizeof(req));
  rfx_expect_param(req, "limit", "4");
  rfx_expect_param(req, "resourceVersion", "0");
  assert_int_equal(rfx_stats(&fx).pages, 1);
  rfx_last_rv(&fx, rv, sizeof(rv));

  relist_paged(&fx, rv);
  for (size_t i = 2; i < 4; i++) {
    nth_list(&fx, i, req, sizeof(req));
    rfx_expect_param(req, "limit", "4");
    rfx_expect_param(req, "resourceVersion", NULL); /* not allowed with continue */
    assert_non_null(rfx_param(req, "continue", c, sizeof(c)));
  }
  /* the last page was requested; its items are counted once it is read */
  kin_reflector_stats st = rfx_stats(&fx);
  for (int i = 0; i < 500 && st.listed_items < 10; i++) {
    kin_test_sleep_ms(10);
    st = rfx_stats(&fx);
  }
  assert_int_equal(st.lists, 2);
  assert_int_equal(st.pages, 4);
  assert_int_equal(st.listed_items, 10);
  assert_int_equal(st.expected_items, 10);
  rfx_free(&fx);
  /* A watch that ends within a second of its start may be warned about. */
  kin_test_log_expect_only("very short watch");
  kin_test_log_stop();
}

/* Compacts the sim (after a write, so the first page's snapshot is older
 * than the history) when the first continue request arrives. */
static atomic_int expired_once;
static void compact_on_continue(rfx *fx, const char *method, const char *uri) {
  int zero = 0;
  if (strcmp(method, "GET") || !strstr(uri, "continue=") ||
      !atomic_compare_exchange_strong(&expired_once, &zero, 1))
    return;
  sim_put_cm(fx->sim, RFX_NS, "late", NULL, "1");
  kin_sim_compact(fx->sim);
}

/* client-go TestReflectorFullListIfExpired: a paged relist at RV N whose
 * continue token expires after the first page falls back to one full list
 * at N, without limit ("0", N, continue, N). */
static void test_reflector_ReflectorFullListIfExpired(void **state) {
  (void)state;
  kin_test_log_start();
  rfx fx;
  start_paged(&fx);
  char req[2048], rv[32], c[512];
  rfx_last_rv(&fx, rv, sizeof(rv));
  atomic_store(&expired_once, 0);
  rfx_on_request(&fx, compact_on_continue);
  relist_paged(&fx, rv);
  nth_list(&fx, 2, req, sizeof(req));
  assert_non_null(rfx_param(req, "continue", c, sizeof(c)));
  nth_list(&fx, 3, req, sizeof(req));
  rfx_expect_param(req, "limit", NULL);
  rfx_expect_param(req, "continue", NULL);
  rfx_expect_param(req, "resourceVersion", rv);
  assert_int_equal(rfx_stats(&fx).lists, 2);
  assert_int_equal(rfx_stats(&fx).pages, 4);
  rfx_on_request(&fx, NULL);
  rfx_free(&fx);
  /* A watch that ends within a second of its start may be warned about. */
  kin_test_log_expect_only("very short watch");
  kin_test_log_stop();
}

/* ---- relists ------------------------------------------------------------------- */

/* client-go TestReflectorResyncWithResourceVersion and
 * TestReflectorNotPaginatingNotConsistentReads: the watch cannot resume
 * (the history was compacted while it was stalled: ERROR 410), so the
 * reflector relists at its last synced RV, unpaged; what was deleted
 * meanwhile leaves the cache as tombstone deletes. */
static void test_reflector_ReflectorResyncWithResourceVersion(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  long long ra = rfx_create(&fx, "a");
  long long rb = rfx_create(&fx, "b");
  rfx_create(&fx, "c");
  rfx_start(&fx, NULL);
  wait_synced(&fx);
  rfx_expect_converged(&fx, 5000);
  char rv0[32], req[2048], want[128];
  rfx_last_rv(&fx, rv0, sizeof(rv0));

  kin_sim_stall_watches(fx.sim, 1200);
  rfx_delete(&fx, "a");
  rfx_delete(&fx, "b");
  rfx_update(&fx, "c", "2");
  rfx_create(&fx, "d");
  kin_sim_compact(fx.sim);

  KIN_EVENTUALLY(rfx_stats(&fx).lists == 2, 8000);
  rfx_expect_converged(&fx, 5000);
  nth_list(&fx, 1, req, sizeof(req));
  rfx_expect_param(req, "resourceVersion", rv0);
  rfx_expect_param(req, "limit", NULL);
  snprintf(want, sizeof(want), "delete default/a %lld tomb", ra);
  KIN_EVENTUALLY(rec_has(fx.events, want), 5000);
  snprintf(want, sizeof(want), "delete default/b %lld tomb", rb);
  KIN_EVENTUALLY(rec_has(fx.events, want), 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.relists_expired, 1);
  assert_int_equal(st.watch_events, 0);
  KIN_EVENTUALLY(rfx_stats(&fx).watches == 2, 5000);
  rfx_free(&fx);
}

/* Counts the transform's calls; passes every object through. */
static atomic_int transform_calls;
static int count_transform(void *ud, kin_obj *in, kin_obj **out) {
  (void)ud;
  atomic_fetch_add(&transform_calls, 1);
  *out = kin_obj_ref(in);
  return 0;
}

/* The relist after a compacted watch (one unpaged LIST of some 3.5 MB,
 * read as it downloads, held back by the 1 MiB the IO thread may keep
 * waiting) keeps the cached object of every item listed at the same uid
 * and resourceVersion: the cache holds one copy, and the transform runs
 * only for what changed. A recreated object (same name, new uid) is new. */
static void test_reflector_RelistKeepsUnchangedObjects(void **state) {
  (void)state;
  enum { N = 3000 };
  char path[] = "/tmp/kin_reflector_relistXXXXXX", big[1001];
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  memset(big, 'x', 1000);
  big[1000] = 0;
  for (int i = 0; i < N; i++)
    fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"r%05d\","
               "\"namespace\":\"default\"},\"data\":{\"v\":\"%s\"}}\n", i, big);
  fclose(f);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.seed_file = path;
  cfg.watch_cache_lists = 1; /* both lists unpaged */
  rfx fx;
  rfx_init(&fx, &cfg);
  unlink(path);
  atomic_store(&transform_calls, 0);
  fx.transform = count_transform;
  rfx_start(&fx, NULL);
  wait_synced(&fx);
  rfx_expect_converged(&fx, 8000);
  assert_int_equal(atomic_load(&transform_calls), N);
  kin_indexer *idx = kin_informer_indexer(fx.inf);
  kin_obj *same = kin_indexer_get(idx, "default/r00010");
  kin_obj *changed = kin_indexer_get(idx, "default/r00020");
  kin_obj *recreated = kin_indexer_get(idx, "default/r00030");
  assert_non_null(same);
  assert_non_null(changed);
  assert_non_null(recreated);

  kin_sim_stall_watches(fx.sim, 1200);
  rfx_update(&fx, "r00020", "2");
  rfx_delete(&fx, "r00030");
  rfx_create(&fx, "r00030");
  kin_sim_compact(fx.sim);
  KIN_EVENTUALLY(rfx_stats(&fx).lists == 2, 8000);
  rfx_expect_converged(&fx, 8000);
  assert_int_equal(rfx_stats(&fx).listed_items, N);
  assert_int_equal(rfx_stats(&fx).pages, 2);

  kin_obj *same2 = kin_indexer_get(idx, "default/r00010");
  kin_obj *changed2 = kin_indexer_get(idx, "default/r00020");
  kin_obj *recreated2 = kin_indexer_get(idx, "default/r00030");
  assert_ptr_equal(same2, same);
  assert_ptr_not_equal(changed2, changed);
  assert_ptr_not_equal(recreated2, recreated);
  assert_string_not_equal(kin_obj_uid(recreated2), kin_obj_uid(recreated));
  /* the first list, then the changed and the recreated object */
  assert_int_equal(atomic_load(&transform_calls), N + 2);
  kin_obj_unref(same);
  kin_obj_unref(changed);
  kin_obj_unref(recreated);
  kin_obj_unref(same2);
  kin_obj_unref(changed2);
  kin_obj_unref(recreated2);
  rfx_free(&fx);
}

/* On the server restarted behind the client, fails its first watch from
 * the old RV (the sim, as the watch cache, would wait for that RV). */
static atomic_int restarted_watch_failed;
static char restarted_rv[64];
static void fail_future_watch(rfx *fx, const char *method, const char *uri) {
  char want[96];
  snprintf(want, sizeof(want), "resourceVersion=%s&", restarted_rv);
  int zero = 0;
  if (strstr(uri, "watch=true") && strstr(uri, want) &&
      atomic_compare_exchange_strong(&restarted_watch_failed, &zero, 1))
    kin_sim_fail_next(fx->sim, 500, 1);
}

/* client-go TestReflectorFullListIfTooLarge: the server came back with an
 * older state (a restore; here a new sim on the same port), so the last
 * RV is "too large": the relist at it gets 504 ResourceVersionTooLarge,
 * the RV is marked unavailable and the list is retried at once at "" (the
 * request with no resourceVersion). */
static void test_reflector_ReflectorFullListIfTooLarge(void **state) {
  (void)state;
  kin_test_log_start();
  rfx fx;
  rfx_init(&fx, NULL);
  long long old[6];
  char name[32];
  for (int i = 0; i < 6; i++) {
    snprintf(name, sizeof(name), "old%d", i);
    old[i] = rfx_create(&fx, name);
  }
  rfx_start(&fx, NULL);
  wait_synced(&fx);
  rfx_expect_converged(&fx, 5000);
  rfx_last_rv(&fx, restarted_rv, sizeof(restarted_rv));
  atomic_store(&restarted_watch_failed, 0);
  rfx_on_request(&fx, fail_future_watch);
  rfx_restart_sim(&fx, NULL, NULL);
  rfx_create(&fx, "new0");
  rfx_create(&fx, "new1");
  assert_true(kin_sim_resource_version(fx.sim) < (uint64_t)atoll(restarted_rv));

  rfx_expect_converged(&fx, 8000);
  /* The relist at the old RV, unpaged (an exact RV), then at "". */
  char req[2048], want[160];
  size_t i = 0, at_old = 0, at_empty = 0;
  while (rfx_req(&fx, i++, REFL_GET, "watch=", req, sizeof(req))) {
    char v[64];
    const char *rv = rfx_param(req, "resourceVersion", v, sizeof(v));
    if (rv && !strcmp(rv, restarted_rv)) {
      rfx_expect_param(req, "limit", NULL);
      at_old = i;
    } else if (!rv && at_old) {
      /* Unpaged still: the retry keeps the page size of the list it retries
       * (client-go reuses the pager). */
      rfx_expect_param(req, "limit", NULL);
      at_empty = i;
    }
  }
  if (!at_old || at_empty <= at_old) {
    for (size_t k = 0; rfx_req(&fx, k, NULL, NULL, req, sizeof(req)); k++)
      fprintf(stderr, "req %zu: %s\n", k, req);
  }
  assert_true(at_old > 0);
  assert_true(at_empty > at_old);
  assert_true(rfx_stats(&fx).relists_expired >= 1);
  for (int k = 0; k < 6; k++) {
    snprintf(want, sizeof(want), "delete default/old%d %lld tomb", k, old[k]);
    KIN_EVENTUALLY(rec_has(fx.events, want), 5000);
  }
  /* Watching the new server from its own RV again. */
  rfx_create(&fx, "new2");
  rfx_expect_converged(&fx, 5000);
  rfx_on_request(&fx, NULL);
  rfx_free(&fx);
  /* A watch that ends within a second of its start may be warned about, and
   * so may a list that met the port closed while the new sim started (its
   * registry and bootstrap policy take a while under the sanitizers); any
   * other line fails. */
  assert_int_equal(kin_test_log_count(NULL), kin_test_log_count("very short watch") +
                                                 kin_test_log_count("Couldn't connect to server"));
  kin_test_log_stop();
}

/* Writes n ConfigMaps <prefix>00000.. to a new temporary seed file whose
 * name goes to path (32 bytes), and sets cfg up (defaults) to start a sim
 * from it; such a sim always assigns the same resourceVersions. */
static void seeded_config(kin_sim_config *cfg, char *path, const char *prefix, int n) {
  snprintf(path, 32, "/tmp/kin_reflector_seedXXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  for (int i = 0; i < n; i++)
    fprintf(f, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s%05d\","
               "\"namespace\":\"default\",\"labels\":{\"i\":\"%d\"}},\"data\":{\"v\":\"x\"}}\n",
            prefix, i, i);
  fclose(f);
  kin_sim_config_init(cfg);
  cfg->seed_file = path;
}

static void wait_refused_twice(rfx *fx) {
  KIN_EVENTUALLY(rfx_stats(fx).backoffs >= 2, 5000);
}

/* client-go isWatchErrorRetriable (TestReflectorListAndWatchInitConnBackoff's
 * watch side): with the server gone, re-watching is refused; the reflector
 * backs off and watches again from its RV once the server is back (here an
 * identical sim on the same port), without a relist. */
static void test_reflector_NoRelistOnConnectionRefused(void **state) {
  (void)state;
  char seed[32];
  kin_sim_config cfg;
  seeded_config(&cfg, seed, "s", 5);
  cfg.bookmark_interval_ms = 100; /* the watch is alive, not a "very short" one */
  rfx fx;
  rfx_init(&fx, &cfg);
  rfx_start(&fx, NULL);
  wait_synced(&fx);
  KIN_EVENTUALLY(rfx_stats(&fx).bookmarks >= 1, 5000);
  char rv[32], req[2048];
  rfx_last_rv(&fx, rv, sizeof(rv));
  rfx_restart_sim(&fx, &cfg, wait_refused_twice);
  unlink(seed);
  KIN_EVENTUALLY(rfx_count(&fx, "watch=true", NULL) >= 2, 5000);
  nth_watch(&fx, 1, req, sizeof(req));
  rfx_expect_param(req, "resourceVersion", rv);
  expect_resumed_without_relist(&fx, "after");
  rfx_free(&fx);
}

/* ---- bookmarks, stalls, broken streams --------------------------------------- */

/* client-go TestReflectorResourceVersionUpdate: events and BOOKMARKs both
 * advance the last RV; a bookmark changes nothing else. */
static void test_reflector_ReflectorResourceVersionUpdate(void **state) {
  (void)state;
  rfx fx;
  start_synced(&fx, 100, NULL);
  write_elsewhere(&fx, "o1");
  write_elsewhere(&fx, "o2");
  char srv[32], last[32];
  rfx_server_rv(&fx, srv, sizeof(srv));
  KIN_EVENTUALLY(!strcmp(rfx_last_rv(&fx, last, sizeof(last)), srv), 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_true(st.bookmarks >= 1);
  assert_int_equal(st.watch_events, 0);
  assert_int_equal(st.lists, 1);
  rfx_expect_converged(&fx, 5000);
  rfx_free(&fx);
}

/* A watch that sends nothing for the idle timeout (server alive, stream
 * stuck) is dropped and started again from the last RV; bookmarks every
 * 100 ms keep a healthy watch from looking idle. */
static void test_reflector_StalledWatchIsReestablished(void **state) {
  (void)state;
  kin_test_log_start();
  rfx fx;
  kin_reflector_config cfg = {.idle_timeout_ns = 700 * MS};
  start_synced(&fx, 100, &cfg);
  kin_test_sleep_ms(300);
  assert_int_equal(rfx_stats(&fx).idle_timeouts, 0);
  char before[32], req[2048];
  rfx_last_rv(&fx, before, sizeof(before));
  kin_sim_stall_watches(fx.sim, 2000);
  rfx_create(&fx, "during");
  KIN_EVENTUALLY(rfx_stats(&fx).idle_timeouts >= 1, 5000);
  KIN_EVENTUALLY(rfx_count(&fx, "watch=true", NULL) >= 2, 5000);
  nth_watch(&fx, 1, req, sizeof(req));
  char rv[32];
  assert_non_null(rfx_param(req, "resourceVersion", rv, sizeof(rv)));
  assert_true(atoll(rv) >= atoll(before)); /* bookmarks may have moved it */
  rfx_expect_converged(&fx, 8000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.lists, 1);
  assert_true(st.watches >= 2);
  rfx_free(&fx);
  assert_true(kin_test_log_count("no byte on the watch for 700 ms: re-establishing it") >= 1);
  kin_test_log_expect_only("no byte on the watch for 700 ms");
  kin_test_log_stop();
}

/* A malformed line and an event cut in the middle are logged with their
 * position; the stream is abandoned at that point and resumed from the last
 * RV applied, so the events after them are not lost. */
static void test_reflector_MalformedAndTruncatedEventsRecovered(void **state) {
  (void)state;
  rfx fx;
  start_synced(&fx, 0, NULL);
  log_capture(1);
  rfx_create(&fx, "b");
  KIN_EVENTUALLY(rfx_stats(&fx).watch_events == 1, 5000);

  kin_sim_send_malformed_line(fx.sim);
  rfx_create(&fx, "c"); /* the next event shows the broken one ended */
  KIN_EVENTUALLY(rfx_stats(&fx).decode_errors == 1, 5000);
  rfx_expect_converged(&fx, 5000);
  /* JSON names the line, protobuf the frame */
  assert_true(log_contains("line") || log_contains("protobuf frame"));
  assert_true(log_contains("resuming from the last resourceVersion"));

  kin_sim_cut_watches(fx.sim);
  rfx_create(&fx, "d"); /* cut inside this one */
  rfx_update(&fx, "a", "2");
  KIN_EVENTUALLY(rfx_stats(&fx).decode_errors == 2, 5000);
  rfx_expect_converged(&fx, 5000);
  log_capture(0);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.lists, 1);
  assert_true(st.watches >= 3);
  /* c and d each arrived once: nothing after a broken event was applied
   * on the broken stream, and the resumed one started after it. */
  char got[512];
  /* the cache is written before its handlers run: wait for the handler */
  KIN_EVENTUALLY(strstr(events_of(&fx, RFX_NS "/c", got, sizeof(got)), "add default/c "), 5000);
  assert_null(strchr(got, '|'));
  KIN_EVENTUALLY(strstr(events_of(&fx, RFX_NS "/d", got, sizeof(got)), "add default/d "), 5000);
  assert_null(strchr(got, '|'));
  rfx_free(&fx);
}

/* ---- backoff ------------------------------------------------------------------ */

/* client-go TestBackoffOnTooManyRequests / TestNoRelistOnTooManyRequests: a
 * watch answered 429 is retried after a backoff no shorter than the
 * Retry-After (1 s here; the backoff itself is 20 ms), without relisting.
 * Time runs on a fake clock. */
static void test_reflector_BackoffOnTooManyRequests(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  fx.fake = kin_fake_clock_new(1000 * SEC);
  rfx_create(&fx, "a");
  rfx_start(&fx, NULL);
  wait_synced(&fx);
  rfx_create(&fx, "b");
  KIN_EVENTUALLY(rfx_stats(&fx).watch_events == 1, 5000);
  assert_int_equal(kin_sim_fail_next(fx.sim, 429, 1), 0);
  kin_sim_drop_watches(fx.sim);
  KIN_EVENTUALLY(rfx_stats(&fx).backoffs == 1, 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.watches, 2);
  assert_true(st.last_backoff_ns >= SEC);
  kin_fake_clock_step(fx.fake, SEC - 1);
  kin_test_sleep_ms(200);
  assert_int_equal(rfx_stats(&fx).watches, 2); /* still waiting */
  kin_fake_clock_step(fx.fake, st.last_backoff_ns - (SEC - 1));
  KIN_EVENTUALLY(rfx_stats(&fx).watches == 3, 5000);
  expect_resumed_without_relist(&fx, "c");
  assert_int_equal(rfx_stats(&fx).backoffs, 1);
  rfx_free(&fx);
}

/* client-go TestReflectorListAndWatchInitConnBackoff with the reflector's
 * own parameters: with the server unreachable each round waits 0.8 s
 * doubling, jittered by up to 100 %, capped at 30 s (then [30, 60)). */
static void test_reflector_ReflectorListAndWatchInitConnBackoff(void **state) {
  (void)state;
  kin_test_log_start();
  rfx fx;
  memset(&fx, 0, sizeof(fx));
  pthread_mutex_init(&fx.mu, NULL);
  fx.events = rec_new();
  fx.fake = kin_fake_clock_new(1000 * SEC);
  fx.client = rfx_client_for("http://127.0.0.1:1"); /* connection refused */
  kin_reflector_config cfg = {.backoff_initial_ns = KIN_REFLECTOR_BACKOFF_INITIAL_NS,
                              .backoff_max_ns = KIN_REFLECTOR_BACKOFF_MAX_NS};
  rfx_start(&fx, &cfg);
  uint64_t base[] = {800 * MS, 1600 * MS, 3200 * MS, 6400 * MS, 12800 * MS,
                     25600 * MS, 30 * SEC, 30 * SEC, 30 * SEC};
  int jittered = 0;
  for (size_t k = 0; k < sizeof(base) / sizeof(base[0]); k++) {
    KIN_EVENTUALLY(rfx_stats(&fx).backoffs == k + 1, 5000);
    kin_reflector_stats st = rfx_stats(&fx);
    assert_int_equal(st.lists, k + 1);
    assert_true(st.last_backoff_ns >= base[k]);
    assert_true(st.last_backoff_ns < 2 * base[k]);
    jittered += st.last_backoff_ns != base[k];
    kin_fake_clock_step(fx.fake, st.last_backoff_ns);
  }
  assert_true(jittered > 0);
  assert_false(rfx_stats(&fx).synced);
  rfx_free(&fx);
  assert_true(kin_test_log_count("failed to list: GET http://127.0.0.1:1/") >= 9);
  kin_test_log_expect_only("failed to list");
  kin_test_log_stop();
}

/* ---- scale and lifecycle -------------------------------------------------------- */

/* 10k objects (seeded, so the test measures the reflector, not creates)
 * listed in 20 pages of 500 and cached exactly. */
static void test_reflector_Sync10k(void **state) {
  (void)state;
  char path[32];
  kin_sim_config cfg;
  seeded_config(&cfg, path, "cm-", 10000);
  rfx fx;
  rfx_init(&fx, &cfg);
  unlink(path);
  rfx_start(&fx, NULL);
  KIN_EVENTUALLY(rfx_stats(&fx).synced, 8000);
  KIN_EVENTUALLY(kin_informer_has_synced(fx.inf), 8000);
  rfx_expect_converged(&fx, 8000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.pages, 20); /* the sim pages at "0" unless told not to */
  assert_int_equal(st.listed_items, 10000);
  assert_int_equal(kin_indexer_len(kin_informer_indexer(fx.inf)), 10000);
  rfx_free(&fx);
}

/* client-go TestReflectorStopWatch / TestReflectorWatchStoppedAfter: stop
 * closes the watch in flight and nothing is requested afterwards; a stopped
 * reflector cannot run again; misuse is refused. */
static void test_reflector_ReflectorStopWatch(void **state) {
  (void)state;
  kin_reflector *bad = NULL;
  kin_reflector_config none = {0};
  assert_int_equal(kin_reflector_new(&none, &bad), KIN_EINVAL);
  assert_null(bad);
  kin_reflector_free(NULL);

  rfx fx;
  start_synced(&fx, 0, NULL);
  assert_int_equal(kin_reflector_run(fx.refl), KIN_EBUSY);
  kin_reflector_stop(fx.refl);
  kin_reflector_stop(fx.refl); /* idempotent */
  size_t n = rfx_count(&fx, REFL_GET, NULL);
  rfx_create(&fx, "b");
  kin_test_sleep_ms(100);
  assert_int_equal(rfx_count(&fx, REFL_GET, NULL), n);
  assert_int_equal(kin_reflector_run(fx.refl), KIN_EBUSY);
  rfx_free(&fx);
}

KIN_SUITE(reflector, cmocka_unit_test(test_reflector_ListAtZeroThenWatchFromListRV),
          cmocka_unit_test(test_reflector_ReflectorWatchHandler),
          cmocka_unit_test(test_reflector_ReflectorListAndWatch),
          cmocka_unit_test(test_reflector_ReflectorWatchListPageSize),
          cmocka_unit_test(test_reflector_ReflectorFullListIfExpired),
          cmocka_unit_test(test_reflector_ReflectorResyncWithResourceVersion),
          cmocka_unit_test(test_reflector_RelistKeepsUnchangedObjects),
          cmocka_unit_test(test_reflector_ReflectorFullListIfTooLarge),
          cmocka_unit_test(test_reflector_NoRelistOnConnectionRefused),
          cmocka_unit_test(test_reflector_ReflectorResourceVersionUpdate),
          cmocka_unit_test(test_reflector_StalledWatchIsReestablished),
          cmocka_unit_test(test_reflector_MalformedAndTruncatedEventsRecovered),
          cmocka_unit_test(test_reflector_BackoffOnTooManyRequests),
          cmocka_unit_test(test_reflector_ReflectorListAndWatchInitConnBackoff),
          cmocka_unit_test(test_reflector_Sync10k),
          cmocka_unit_test(test_reflector_ReflectorStopWatch))
