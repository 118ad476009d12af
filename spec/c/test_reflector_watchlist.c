/* test_reflector_watchlist.c -- the reflector's WatchList (streaming
 * list, client-go's reflector_watchlist_test.go) against the in-process
 * sim, which implements sendInitialEvents: the initial state streamed as
 * ADDED events up to the bookmark annotated k8s.io/initial-events-end,
 * replacing the FIFO at once; the same stream then goes on as a watch; a
 * request that fails falls back to LIST. The real server's WatchList is
 * exercised in test_e2e_reflector.c. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

KIN_SUITE(reflector_watchlist, cmocka_unit_test(test_reflector_watchlist_WatchList),
          cmocka_unit_test(test_reflector_watchlist_FallbackToList),
          cmocka_unit_test(test_reflector_watchlist_RewatchAndRelistFromLastSyncRV))
