/* test_sim_faults.c -- kinformer.sim fault injection (issue 4 item 3):
 * watches dropped, cut mid-event, sent a malformed line, stalled; the next
 * requests failed with 429 (Retry-After) / 500 / 503; added latency; the
 * admin endpoint; a restart on the same port and store. Waits use KIN_EVENTUALLY; time checks are lower bounds
 * the sim guarantees, never speed measurements. */
#include "kin_test.h"

#include <time.h>

#include "kin.h"
#include "sim_client.h"

/* A watch from "now" with 20 ms bookmarks: its first line proves it is
 * connected. */
#define LIVE_WATCH "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1&allowWatchBookmarks=1"

static void test_sim_FaultDropWatches(void **state) {
  kin_sim *sim = sim_start(0, 20);
  bg_watch w;
  bg_start(&w, sim, LIVE_WATCH);
  KIN_EVENTUALLY(bg_lines(&w) >= 1, 5000);
  kin_sim_drop_watches(sim);
  KIN_EVENTUALLY(bg_finished(&w), 5000);
  bg_join(&w);
  /* Closed without the terminating chunk: the client sees an error. */
  assert_int_not_equal(w.rc, CURLE_OK);
  kin_sim_free(sim);
}

static void test_sim_FaultCutWatchMidEvent(void **state) {
  kin_sim *sim = sim_start(0, 20);
  bg_watch w;
  bg_start(&w, sim, LIVE_WATCH);
  KIN_EVENTUALLY(bg_lines(&w) >= 1, 5000);
  kin_sim_cut_watches(sim);
  sim_put_cm(sim, "default", "a", NULL, "1");
  KIN_EVENTUALLY(bg_finished(&w), 5000);
  bg_join(&w);
  assert_int_not_equal(w.rc, CURLE_OK);
  assert_true(w.len > 0);
  assert_int_not_equal(w.data[w.len - 1], '\n'); /* ends inside an event */
  kin_sim_free(sim);
}

static void test_sim_FaultMalformedLine(void **state) {
  kin_sim *sim = sim_start(0, 20);
  bg_watch w;
  bg_start(&w, sim, LIVE_WATCH "&timeoutSeconds=2");
  KIN_EVENTUALLY(bg_lines(&w) >= 1, 5000);
  kin_sim_send_malformed_line(sim);
  KIN_EVENTUALLY(bg_finished(&w), 10000);
  bg_join(&w);
  int bad = 0, good = 0;
  for (char *p = w.data, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
    json_error_t e;
    json_t *ev = json_loadb(p, (size_t)(nl - p), 0, &e);
    if (ev) good++;
    else bad++;
    json_decref(ev);
  }
  assert_int_equal(bad, 1);
  assert_true(good >= 2); /* bookmarks before and after it */
  kin_sim_free(sim);
}

static double secs_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static void test_sim_FaultStallWatches(void **state) {
  kin_sim *sim = sim_start(0, 60000);
  long long rv = (long long)kin_sim_resource_version(sim);
  char path[256];
  snprintf(path, sizeof(path), "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld", rv);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kin_sim_stall_watches(sim, 400);
  bg_watch w;
  bg_start(&w, sim, path);
  sim_put_cm(sim, "default", "a", NULL, "1");
  KIN_EVENTUALLY(bg_lines(&w) >= 1, 5000);
  /* Nothing can arrive before the stall ends. */
  assert_true(secs_since(&t0) >= 0.39);
  kin_sim_stop(sim);
  bg_join(&w);
  kin_sim_free(sim);
}

static void test_sim_FaultFailNextRequests(void **state) {
  kin_sim *sim = sim_start(0, 0);
  assert_int_equal(kin_sim_fail_next(sim, 404, 1), KIN_EINVAL);
  assert_int_equal(kin_sim_fail_next(sim, 429, 2), 0);
  for (int i = 0; i < 2; i++) {
    sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces", NULL);
    assert_int_equal(r.code, 429);
    assert_string_equal(jstr(r.json, "reason"), "TooManyRequests");
    assert_string_equal(jstr(r.json, "message"), "Too many requests, please try again later.");
    assert_int_equal(jint(r.json, "details.retryAfterSeconds"), 1);
    sim_resp_free(&r);
  }
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  kin_sim_fail_next(sim, 503, 1);
  r = sim_req(sim, "GET", "/healthz", NULL); /* health checks are exempt */
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces", NULL);
  assert_int_equal(r.code, 503);
  assert_string_equal(jstr(r.json, "reason"), "ServiceUnavailable");
  sim_resp_free(&r);
  kin_sim_fail_next(sim, 500, 1);
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"x\"}}");
  assert_int_equal(r.code, 500);
  assert_string_equal(jstr(r.json, "reason"), "InternalError");
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/x", NULL);
  assert_int_equal(r.code, 404); /* the failed create did nothing */
  sim_resp_free(&r);
  kin_sim_free(sim);
}

static void test_sim_FaultLatencyAndAdminEndpoint(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", "/kinformer-sim/faults",
                       "{\"latencyMs\":150,\"failNext\":{\"code\":503,\"count\":1}}");
  assert_int_equal(r.code, 200);
  assert_non_null(jstr(r.json, "resourceVersion"));
  sim_resp_free(&r);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  r = sim_req(sim, "GET", "/api/v1/namespaces", NULL);
  assert_int_equal(r.code, 503);
  assert_true(secs_since(&t0) >= 0.149);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/kinformer-sim/faults", "{\"latencyMs\":0,\"failNext\":{\"code\":404,\"count\":1}}");
  assert_int_equal(r.code, 400);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* A restart closes every watch, refuses connections while down and then
 * serves the same store on the same port: the object and the
 * resourceVersion survive, and a watch resumes from before the restart. */
static void test_sim_FaultRestartKeepsStore(void **state) {
  kin_sim *sim = sim_start(0, 20);
  long long rv = sim_put_cm(sim, "default", "kept", NULL, "1");
  uint16_t port = kin_sim_port(sim);
  bg_watch w;
  bg_start(&w, sim, LIVE_WATCH);
  KIN_EVENTUALLY(bg_lines(&w) >= 1, 5000);
  assert_int_equal(kin_sim_restart(sim, 100), 0);
  KIN_EVENTUALLY(bg_finished(&w), 5000);
  bg_join(&w);
  assert_int_equal(kin_sim_port(sim), port);
  sim_resp r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/kept", NULL);
  assert_int_equal(r.code, 200);
  assert_int_equal(atoll(jstr(r.json, "metadata.resourceVersion")), rv);
  sim_resp_free(&r);
  assert_true(kin_sim_resource_version(sim) == (uint64_t)rv);
  /* a watch from the version before the create replays it */
  char path[256];
  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%lld&timeoutSeconds=1", rv - 1);
  r = sim_req(sim, "GET", path, NULL);
  assert_int_equal(r.code, 200);
  assert_non_null(strstr(r.body, "\"kept\""));
  sim_resp_free(&r);
  kin_sim_stop(sim);
  assert_int_equal(kin_sim_restart(sim, 0), KIN_EINVAL);
  kin_sim_free(sim);
}

KIN_SUITE(sim_faults, cmocka_unit_test(test_sim_FaultDropWatches),
          cmocka_unit_test(test_sim_FaultCutWatchMidEvent),
          cmocka_unit_test(test_sim_FaultMalformedLine),
          cmocka_unit_test(test_sim_FaultStallWatches),
          cmocka_unit_test(test_sim_FaultFailNextRequests),
          cmocka_unit_test(test_sim_FaultLatencyAndAdminEndpoint),
          cmocka_unit_test(test_sim_FaultRestartKeepsStore))
