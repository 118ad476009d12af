/* test_reflector_watchlist.c -- the reflector's WatchList (streaming
 * list, client-go's reflector_watchlist_test.go) against the in-process
 * sim, which implements sendInitialEvents: the initial state streamed as
 * ADDED events up to the bookmark annotated k8s.io/initial-events-end,
 * replacing the FIFO at once; the same stream then goes on as a watch; a
 * request that fails falls back to LIST. The real server's WatchList is
 * exercised in test_e2e_reflector.c. A scripted server (bad_server.h)
 * sends initial events no real server sends (a key twice, MODIFIED and
 * DELETED before the bookmark), which the reflector keeps as client-go's
 * temporary store does. */
#include "kin_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bad_server.h"
#include "reflector_fx.h"

#define REFL_GET "GET " RFX_PATH

static kin_reflector_config watch_list_cfg(void) {
  kin_reflector_config c;
  memset(&c, 0, sizeof(c));
  c.watch_list = 1;
  return c;
}

/* client-go TestWatchList "prove that the reflector is synced after
 * receiving a bookmark event": no LIST at all; the initial events replace
 * the store as an initial list, and later events come on the same
 * stream. */
static void test_reflector_watchlist_WatchList(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  long long ra = rfx_create(&fx, "a");
  rfx_create(&fx, "b");
  char srv[32], last[32], req[2048], want[96];
  rfx_server_rv(&fx, srv, sizeof(srv));
  kin_reflector_config cfg = watch_list_cfg();
  rfx_start(&fx, &cfg);
  KIN_EVENTUALLY(rfx_stats(&fx).synced, 5000);
  rfx_expect_converged(&fx, 5000);
  assert_string_equal(rfx_last_rv(&fx, last, sizeof(last)), srv);
  assert_true(rfx_req(&fx, 0, REFL_GET, NULL, req, sizeof(req)));
  rfx_expect_param(req, "watch", "true");
  rfx_expect_param(req, "sendInitialEvents", "true");
  rfx_expect_param(req, "resourceVersionMatch", "NotOlderThan");
  rfx_expect_param(req, "allowWatchBookmarks", "true");
  rfx_expect_param(req, "resourceVersion", NULL); /* nothing synced yet: most recent */
  snprintf(want, sizeof(want), "add default/a %lld init", ra);
  KIN_EVENTUALLY(rec_has(fx.events, want), 5000);

  rfx_create(&fx, "c");
  rfx_update(&fx, "a", "2");
  rfx_expect_converged(&fx, 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_true(st.watch_list_used);
  assert_int_equal(st.lists, 0);
  assert_int_equal(st.pages, 0);
  assert_int_equal(st.watches, 1);
  KIN_EVENTUALLY(rfx_stats(&fx).watch_events == 2, 5000);
  assert_int_equal(rfx_count(&fx, REFL_GET, NULL), 1);
  rfx_free(&fx);
}

/* client-go TestWatchList "the reflector can fall back to old LIST/WATCH
 * semantics when a server doesn't support streaming": the WatchList
 * request fails, so the state comes from a LIST at "0" and a watch. */
static void test_reflector_watchlist_FallbackToList(void **state) {
  (void)state;
  kin_test_log_start();
  rfx fx;
  rfx_init(&fx, NULL);
  rfx_create(&fx, "a");
  kin_reflector_config cfg = watch_list_cfg();
  assert_int_equal(kin_sim_fail_next(fx.sim, 500, 1), 0);
  rfx_start(&fx, &cfg);
  KIN_EVENTUALLY(rfx_stats(&fx).synced && rfx_count(&fx, REFL_GET, NULL) == 3, 5000);
  rfx_expect_converged(&fx, 5000);
  char req[2048];
  assert_true(rfx_req(&fx, 0, REFL_GET, NULL, req, sizeof(req)));
  rfx_expect_param(req, "sendInitialEvents", "true");
  assert_true(rfx_req(&fx, 1, REFL_GET, NULL, req, sizeof(req)));
  rfx_expect_param(req, "watch", NULL);
  rfx_expect_param(req, "resourceVersion", "0");
  assert_true(rfx_req(&fx, 2, REFL_GET, NULL, req, sizeof(req)));
  rfx_expect_param(req, "watch", "true");
  rfx_expect_param(req, "sendInitialEvents", NULL);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_false(st.watch_list_used);
  assert_int_equal(st.lists, 1);
  rfx_create(&fx, "b");
  rfx_expect_converged(&fx, 5000);
  rfx_free(&fx);
  assert_int_equal(kin_test_log_count("the watch-list request ended without its initial state (500"), 1);
  kin_test_log_expect_only("the watch-list request ended without its initial state");
  kin_test_log_stop();
}

/* client-go TestWatchList "the reflector uses the last sync RV when
 * re-establishing the watch-list": a broken stream resumes as a plain
 * watch; a watch that cannot resume (410) starts a new round, which
 * streams again from the last synced RV; objects deleted meanwhile leave
 * as tombstones. */
static void test_reflector_watchlist_RewatchAndRelistFromLastSyncRV(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  long long ra = rfx_create(&fx, "a");
  rfx_create(&fx, "b");
  kin_reflector_config cfg = watch_list_cfg();
  rfx_start(&fx, &cfg);
  KIN_EVENTUALLY(rfx_stats(&fx).synced, 5000);
  rfx_create(&fx, "c");
  KIN_EVENTUALLY(rfx_stats(&fx).watch_events == 1, 5000);
  char before[32], req[2048], want[96];
  rfx_last_rv(&fx, before, sizeof(before));
  kin_sim_drop_watches(fx.sim);
  KIN_EVENTUALLY(rfx_count(&fx, REFL_GET, NULL) == 2, 5000);
  assert_true(rfx_req(&fx, 1, REFL_GET, NULL, req, sizeof(req)));
  rfx_expect_param(req, "sendInitialEvents", NULL);
  rfx_expect_param(req, "resourceVersion", before);
  rfx_expect_converged(&fx, 5000);

  rfx_last_rv(&fx, before, sizeof(before));
  kin_sim_stall_watches(fx.sim, 1000);
  rfx_delete(&fx, "a");
  rfx_create(&fx, "d");
  kin_sim_compact(fx.sim);
  KIN_EVENTUALLY(rfx_count(&fx, "sendInitialEvents=true", NULL) == 2, 8000);
  rfx_expect_converged(&fx, 5000);
  assert_true(rfx_req(&fx, 2, REFL_GET, NULL, req, sizeof(req)));
  rfx_expect_param(req, "sendInitialEvents", "true");
  rfx_expect_param(req, "resourceVersion", before);
  snprintf(want, sizeof(want), "delete default/a %lld tomb", ra);
  KIN_EVENTUALLY(rec_has(fx.events, want), 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.lists, 0);
  assert_int_equal(st.relists_expired, 1);
  rfx_free(&fx);
}

/* ---- initial events a real server does not send --------------------------- */

/* The events of the scripted WatchList: ev lines up to the bookmark. */
typedef struct {
  const char *const *ev;
  atomic_int watch_lists; /* requests with sendInitialEvents=true */
} script;

#define SCRIPT_EV(type, name, rv, val)                                                       \
  "{\"type\":\"" type "\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","          \
  "\"metadata\":{\"name\":\"" name "\",\"namespace\":\"default\",\"uid\":\"u-" name "\","      \
  "\"resourceVersion\":\"" rv "\"},\"data\":{\"v\":\"" val "\"}}}\n"

/* The WatchList answered with the script then its bookmark, kept open a
 * little; any later watch gets an empty stream (the reflector re-watches). */
static void serve_script(bad_server *s, int fd, const char *method, const char *target,
                         const char *headers) {
  script *sc = s->ud;
  if (!strstr(target, "sendInitialEvents=true")) {
    if (bs_head_200(fd) == 0) kin_test_sleep_ms(50);
    return;
  }
  atomic_fetch_add(&sc->watch_lists, 1);
  if (bs_head_200(fd)) return;
  for (size_t i = 0; sc->ev[i]; i++)
    if (bs_puts(fd, sc->ev[i])) return;
  bs_puts(fd, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
              "\"metadata\":{\"resourceVersion\":\"9\",\"annotations\":"
              "{\"k8s.io/initial-events-end\":\"true\"}}}}\n");
  kin_test_sleep_ms(100);
}

/* Runs a WatchList informer against the script until synced; returns the
 * handler's sorted record, and the cached keys with their
 * resourceVersions in cache ("default/a=2 default/c=5"). */
static void run_script(const char *const *ev, char *events, size_t ecap, char *cache,
                       size_t ccap) {
  script sc = {.ev = ev};
  bad_server *s = bs_start(serve_script, &sc);
  assert_non_null(s);
  char url[64];
  kin_client *c = rfx_client_for(bs_url(s, url, sizeof url));
  rec *events_rec = rec_new();
  kin_informer *inf = NULL;
  kin_informer_config ic = {.name = "v1/configmaps"};
  assert_int_equal(kin_informer_new(&ic, &inf), 0);
  kin_event_handler h = handler_for(events_rec);
  kin_listener *l = NULL;
  assert_int_equal(kin_informer_add_handler(inf, &h, 0, &l), 0);
  assert_int_equal(kin_informer_run(inf), 0);
  kin_reflector_config rc = watch_list_cfg();
  rc.client = c;
  rc.resource = (kin_resource){.group = "", .version = "v1", .resource = "configmaps",
                               .kind = "ConfigMap", .namespaced = 1};
  rc.namespace = RFX_NS;
  rc.backoff_initial_ns = 20000000;
  rc.backoff_max_ns = 200000000;
  rc.fifo = kin_informer_fifo(inf);
  kin_reflector *refl = NULL;
  assert_int_equal(kin_reflector_new(&rc, &refl), 0);
  assert_int_equal(kin_reflector_run(refl), 0);
  kin_reflector_stats st;
  KIN_EVENTUALLY((kin_reflector_get_stats(refl, &st), st.synced), 5000);
  KIN_EVENTUALLY(kin_informer_has_synced(inf), 5000);
  /* the handler has had every notification of the initial list */
  KIN_EVENTUALLY(kin_listener_has_synced(l), 5000);
  assert_int_equal(atomic_load(&sc.watch_lists), 1);
  assert_true(st.watch_list_used);
  rec_dump(events_rec, 0, NULL, events, ecap);
  kin_obj **v = NULL;
  size_t n = 0;
  assert_int_equal(kin_indexer_list(kin_informer_indexer(inf), &v, &n), 0);
  char line[64][64];
  const char *lp[64];
  assert_true(n < 64);
  for (size_t i = 0; i < n; i++) {
    snprintf(line[i], sizeof line[i], "%s=%s", kin_obj_key(v[i]), kin_obj_resource_version(v[i]));
    lp[i] = line[i];
    kin_obj_unref(v[i]);
  }
  free(v);
  qsort(lp, n, sizeof(*lp), rec_cmp_lines);
  cache[0] = 0;
  for (size_t i = 0, used = 0; i < n; i++)
    used += (size_t)snprintf(cache + used, ccap - used, "%s%s", i ? " " : "", lp[i]);
  kin_reflector_free(refl);
  kin_informer_free(inf);
  rec_free(events_rec);
  kin_client_free(c);
  bs_stop(s);
}

/* A key given twice among ADDED events: one add, with the later state (no
 * update between two states of the initial list), as client-go's
 * temporary store gives it. */
static void test_reflector_watchlist_InitialKeyTwiceLastWins(void **state) {
  (void)state;
  static const char *const ev[] = {SCRIPT_EV("ADDED", "a", "1", "1"),
                                   SCRIPT_EV("ADDED", "b", "2", "2"),
                                   SCRIPT_EV("ADDED", "a", "3", "3"), NULL};
  char events[1024], cache[256];
  run_script(ev, events, sizeof events, cache, sizeof cache);
  assert_string_equal(events, "add default/a 3 init\nadd default/b 2 init");
  assert_string_equal(cache, "default/a=3 default/b=2");
}

/* MODIFIED and DELETED before the bookmark: the deleted key is never
 * delivered, the modified one once with its last state, and a key added
 * again after a delete comes back. */
static void test_reflector_watchlist_InitialModifiedAndDeleted(void **state) {
  (void)state;
  static const char *const ev[] = {
      SCRIPT_EV("ADDED", "a", "1", "1"),   SCRIPT_EV("ADDED", "b", "2", "2"),
      SCRIPT_EV("MODIFIED", "a", "3", "3"), SCRIPT_EV("ADDED", "c", "4", "4"),
      SCRIPT_EV("DELETED", "b", "5", "2"), SCRIPT_EV("ADDED", "c", "6", "6"),
      SCRIPT_EV("DELETED", "a", "7", "3"), SCRIPT_EV("ADDED", "a", "8", "8"),
      SCRIPT_EV("DELETED", "x", "9", "0"), NULL};
  char events[1024], cache[256];
  run_script(ev, events, sizeof events, cache, sizeof cache);
  assert_string_equal(events, "add default/a 8 init\nadd default/c 6 init");
  assert_string_equal(cache, "default/a=8 default/c=6");
}

KIN_SUITE(reflector_watchlist, cmocka_unit_test(test_reflector_watchlist_WatchList),
          cmocka_unit_test(test_reflector_watchlist_FallbackToList),
          cmocka_unit_test(test_reflector_watchlist_RewatchAndRelistFromLastSyncRV),
          cmocka_unit_test(test_reflector_watchlist_InitialKeyTwiceLastWins),
          cmocka_unit_test(test_reflector_watchlist_InitialModifiedAndDeleted))
