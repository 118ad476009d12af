/* test_sim_watch.c -- kinformer.sim WATCH: resume from a resourceVersion
 * (the watch cache's TestWatcherTimeout/TestWatch), 410 past the history
 * (TestWatchCacheBypass "too old resource version"), bookmarks
 * (TestWatchBookmarksWithCorrectResourceVersion), timeoutSeconds,
 * sendInitialEvents with the initial-events-end bookmark (the WatchList
 * tests), and selector transitions (TestFiltering). */
#include "kin_test.h"

#include <pthread.h>
#include <time.h>

#include "sim_client.h"

static const char *ev_type(json_t *events, size_t i) { return jstr(json_array_get(events, i), "type"); }

static const char *ev_name(json_t *events, size_t i) {
  return jstr(json_array_get(events, i), "object.metadata.name");
}

static void test_sim_WatchFromResourceVersion(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  sim_resp r = sim_req(sim, "PUT", "/api/v1/namespaces/default/configmaps/a",
                       "{\"metadata\":{\"name\":\"a\"},\"data\":{\"v\":\"2\"}}");
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/b", NULL);
  sim_resp_free(&r);
  sim_put_cm(sim, "kube-system", "other-ns", NULL, "1");
  char path[256];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%lld", rv);
  json_t *ev = sim_watch(sim, path, 3, 5000);
  assert_int_equal(json_array_size(ev), 3);
  assert_string_equal(ev_type(ev, 0), "ADDED");
  assert_string_equal(ev_name(ev, 0), "b");
  assert_string_equal(ev_type(ev, 1), "MODIFIED");
  assert_string_equal(jstr(json_array_get(ev, 1), "object.data.v"), "2");
  assert_string_equal(ev_type(ev, 2), "DELETED");
  assert_string_equal(ev_name(ev, 2), "b");
  /* The DELETED object carries the deletion's resourceVersion. */
  assert_int_equal(atoll(jstr(json_array_get(ev, 2), "object.metadata.resourceVersion")), rv + 3);
  json_decref(ev);
  /* /watch/ paths are the same stream. */
  snprintf(path, sizeof(path), "/api/v1/watch/namespaces/default/configmaps?resourceVersion=%lld", rv);
  ev = sim_watch(sim, path, 3, 5000);
  assert_int_equal(json_array_size(ev), 3);
  assert_string_equal(ev_name(ev, 0), "b");
  assert_string_equal(ev_type(ev, 2), "DELETED");
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_WatchFromZeroListsFirst(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  sim_put_cm(sim, "default", "b", NULL, "1");
  json_t *ev = sim_watch(sim, "/api/v1/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1", 0, 5000);
  assert_int_equal(json_array_size(ev), 2);
  assert_string_equal(ev_type(ev, 0), "ADDED");
  assert_string_equal(ev_name(ev, 0), "a");
  assert_string_equal(ev_name(ev, 1), "b");
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_WatchTooOldResourceVersion(void **state) {
  kin_sim *sim = sim_start(4, 0); /* keep 4 events */
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  for (int i = 0; i < 5; i++) {
    char n[8];
    snprintf(n, sizeof(n), "x%d", i);
    sim_put_cm(sim, "default", n, NULL, "1");
  }
  long long now = (long long)kin_sim_resource_version(sim);
  char path[256];
  snprintf(path, sizeof(path), "/api/v1/configmaps?watch=1&resourceVersion=%lld", rv);
  json_t *ev = sim_watch(sim, path, 0, 5000); /* the stream ends after the error */
  assert_int_equal(json_array_size(ev), 1);
  assert_string_equal(ev_type(ev, 0), "ERROR");
  json_t *st = json_object_get(json_array_get(ev, 0), "object");
  assert_int_equal(jint(st, "code"), 410);
  assert_string_equal(jstr(st, "reason"), "Expired");
  char msg[128];
  snprintf(msg, sizeof(msg), "too old resource version: %lld (%lld)", rv, now - 4);
  assert_string_equal(jstr(st, "message"), msg);
  json_decref(ev);
  /* Right at the edge of the history it still works. */
  snprintf(path, sizeof(path), "/api/v1/configmaps?watch=1&resourceVersion=%lld", now - 4);
  ev = sim_watch(sim, path, 4, 5000);
  assert_int_equal(json_array_size(ev), 4);
  assert_string_equal(ev_type(ev, 0), "ADDED");
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_WatchBookmarks(void **state) {
  kin_sim *sim = sim_start(0, 50);
  long long rv = sim_put_cm(sim, "default", "a", NULL, "1");
  char path[256];
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld&allowWatchBookmarks=true",
           rv);
  json_t *ev = sim_watch(sim, path, 2, 5000);
  assert_int_equal(json_array_size(ev), 2);
  for (int i = 0; i < 2; i++) {
    json_t *e = json_array_get(ev, (size_t)i);
    assert_string_equal(jstr(e, "type"), "BOOKMARK");
    assert_string_equal(jstr(e, "object.kind"), "ConfigMap");
    assert_string_equal(jstr(e, "object.apiVersion"), "v1");
    assert_int_equal(atoll(jstr(e, "object.metadata.resourceVersion")), rv);
    assert_null(jstr(e, "object.metadata.name"));
  }
  json_decref(ev);
  /* Without allowWatchBookmarks there are none: the stream ends empty. */
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld&timeoutSeconds=1", rv);
  ev = sim_watch(sim, path, 0, 5000);
  assert_int_equal(json_array_size(ev), 0);
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_WatchTimeoutSeconds(void **state) {
  kin_sim *sim = sim_start(0, 0);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  json_t *ev = sim_watch(sim, "/api/v1/configmaps?watch=1&resourceVersion=1&timeoutSeconds=1", 0, 10000);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  /* Ended by the server (before curl's 10 s), not before 1 s. */
  assert_true(secs >= 0.9 && secs < 5.0);
  assert_int_equal(json_array_size(ev), 0);
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_WatchSendInitialEvents(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_put_cm(sim, "default", "a", NULL, "1");
  long long rv = sim_put_cm(sim, "default", "b", NULL, "1");
  json_t *ev = sim_watch(sim,
                         "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true"
                         "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
                         3, 5000);
  assert_int_equal(json_array_size(ev), 3);
  assert_string_equal(ev_type(ev, 0), "ADDED");
  assert_string_equal(ev_type(ev, 1), "ADDED");
  json_t *bm = json_array_get(ev, 2);
  assert_string_equal(jstr(bm, "type"), "BOOKMARK");
  json_t *ann = json_object_get(json_object_get(json_object_get(bm, "object"), "metadata"), "annotations");
  assert_string_equal(json_string_value(json_object_get(ann, "k8s.io/initial-events-end")), "true");
  assert_int_equal(atoll(jstr(bm, "object.metadata.resourceVersion")), rv);
  json_decref(ev);
  /* sendInitialEvents=false: only what happens after the start. */
  ev = sim_watch(sim,
                 "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=false"
                 "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
                 0, 5000);
  assert_int_equal(json_array_size(ev), 0);
  json_decref(ev);
  sim_resp r = sim_req(sim, "GET", "/api/v1/configmaps?watch=1&sendInitialEvents=true", NULL);
  assert_int_equal(r.code, 422);
  assert_non_null(strstr(jstr(r.json, "message"),
                         "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* An initial state larger than a watch's batch (512 KiB) is sent in
 * several batches, in key order and filtered, with the initial-events-end
 * bookmark after the last; a client that goes away in the middle leaves
 * no reference behind (LeakSanitizer under make test-asan). */
static void test_sim_WatchInitialEventsInBatches(void **state) {
  kin_sim *sim = sim_start(0, 0);
  enum { N = 700 };
  char val[801], name[32];
  memset(val, 'x', 800);
  val[800] = 0;
  long long rv = 0;
  for (int i = 0; i < N; i++) {
    snprintf(name, sizeof(name), "cm-%04d", i);
    rv = sim_put_cm(sim, "default", name, i % 2 ? "{\"half\":\"b\"}" : "{\"half\":\"a\"}", val);
  }
  static const char *const paths[] = {
      "/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true"
      "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1",
      "/api/v1/configmaps?watch=1&sendInitialEvents=true&labelSelector=half%3Db"
      "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"};
  for (int p = 0; p < 2; p++) {
    json_t *ev = sim_watch(sim, paths[p], 0, 10000);
    size_t want = p ? N / 2 : N;
    assert_int_equal(json_array_size(ev), want + 1);
    for (size_t i = 0; i < want; i++) {
      snprintf(name, sizeof(name), "cm-%04zu", p ? 2 * i + 1 : i);
      assert_string_equal(ev_type(ev, i), "ADDED");
      assert_string_equal(jstr(json_array_get(ev, i), "object.metadata.name"), name);
    }
    json_t *bm = json_array_get(ev, want);
    assert_string_equal(jstr(bm, "type"), "BOOKMARK");
    assert_int_equal(atoll(jstr(bm, "object.metadata.resourceVersion")), rv);
    json_decref(ev);
  }
  /* Gone after five events: the watch still holds the rest. */
  json_t *ev = sim_watch(sim, paths[0], 5, 10000);
  assert_true(json_array_size(ev) >= 5);
  json_decref(ev);
  kin_sim_free(sim);
}

typedef struct {
  kin_sim *sim;
} writer_arg;

/* Moves object "a" into the selector, changes it, then out of it. */
static void *selector_writer(void *p) {
  writer_arg *w = p;
  const char *u = "/api/v1/namespaces/default/configmaps/a";
  sim_resp r = sim_req(w->sim, "PUT", u, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"}}}");
  sim_resp_free(&r);
  r = sim_req(w->sim, "PUT", u, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"x\"}},\"data\":{\"k\":\"1\"}}");
  sim_resp_free(&r);
  r = sim_req(w->sim, "PUT", u, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app\":\"y\"}}}");
  sim_resp_free(&r);
  return NULL;
}

static void test_sim_WatchFilteringTransitions(void **state) {
  kin_sim *sim = sim_start(0, 0);
  long long rv = sim_put_cm(sim, "default", "a", "{\"app\":\"y\"}", "1");
  writer_arg w = {sim};
  pthread_t t;
  /* Concurrent writes: the watch starts from rv, so it sees them all
   * whether they land before or after it connects. */
  pthread_create(&t, NULL, selector_writer, &w);
  char path[256];
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/configmaps?watch=1&labelSelector=app%%3Dx&resourceVersion=%lld", rv);
  json_t *ev = sim_watch(sim, path, 3, 10000);
  pthread_join(t, NULL);
  assert_int_equal(json_array_size(ev), 3);
  assert_string_equal(ev_type(ev, 0), "ADDED");
  assert_string_equal(ev_type(ev, 1), "MODIFIED");
  assert_string_equal(ev_type(ev, 2), "DELETED");
  /* DELETED carries the last state that matched, under the new version. */
  assert_string_equal(jstr(json_array_get(ev, 2), "object.metadata.labels.app"), "x");
  assert_int_equal(atoll(jstr(json_array_get(ev, 2), "object.metadata.resourceVersion")), rv + 3);
  json_decref(ev);
  kin_sim_free(sim);
}

static void test_sim_StopClosesWatches(void **state) {
  kin_sim *sim = sim_start(0, 20);
  bg_watch w;
  bg_start(&w, sim, "/api/v1/configmaps?watch=1&resourceVersion=1&allowWatchBookmarks=1");
  KIN_EVENTUALLY(bg_lines(&w) >= 1, 5000); /* connected: a bookmark came */
  kin_sim_stop(sim); /* must end the stream now, not after curl's 20 s */
  KIN_EVENTUALLY(bg_finished(&w), 5000);
  bg_join(&w);
  assert_memory_equal(w.data, "{\"type\":\"BOOKMARK\"", 18);
  kin_sim_free(sim);
}

KIN_SUITE(sim_watch, cmocka_unit_test(test_sim_WatchFromResourceVersion),
          cmocka_unit_test(test_sim_WatchFromZeroListsFirst),
          cmocka_unit_test(test_sim_WatchTooOldResourceVersion),
          cmocka_unit_test(test_sim_WatchBookmarks),
          cmocka_unit_test(test_sim_WatchTimeoutSeconds),
          cmocka_unit_test(test_sim_WatchSendInitialEvents),
          cmocka_unit_test(test_sim_WatchInitialEventsInBatches),
          cmocka_unit_test(test_sim_WatchFilteringTransitions),
          cmocka_unit_test(test_sim_StopClosesWatches))
