/* test_event_recorder.c -- kin_event_recorder against kinformer.sim:
 * events.k8s.io/v1 Events (reportingController, reportingInstance, action,
 * regarding with uid and resourceVersion, note, eventTime, series for
 * repeats) read back with a list; the core v1 fallback when discovery has
 * no events.k8s.io/v1 (a sim with legacy_events_only); a full queue drops
 * with one rate-limited log line; stopping cancels a request that hangs;
 * with a leadership fence, only events recorded in an open epoch are
 * written. */
#include "kin_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "call_ctx.h"
#include "event_recorder.h"
#include "kin.h"
#include "log.h"
#include "rest_test.h"
#include "sim_client.h"

static const kin_event_ref WEB = {.api_version = "example.com/v1", .kind = "Website",
                                  .namespace_ = "shop", .name = "front", .uid = "uid-1",
                                  .resource_version = "42"};

/* Fails the test unless field path of o is the string want. */
static void assert_field(const json_t *o, const char *path, const char *want) {
  const char *got = jstr(o, path);
  if (!got || strcmp(got, want)) fail_msg("%s: got %s, want %s", path, got ? got : "(absent)", want);
}

static kin_sim *start_sim(int legacy) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.legacy_events_only = legacy;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  sim_resp ns = sim_req(sim, "POST", "/api/v1/namespaces",
                        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"shop\"}}");
  assert_int_equal(ns.code, 201);
  sim_resp_free(&ns);
  return sim;
}

/* The item of list whose reason is reason (borrowed), or NULL. */
static json_t *item_by_reason(json_t *list, const char *reason) {
  size_t i;
  json_t *it;
  json_array_foreach(json_object_get(list, "items"), i, it) {
    if (!strcmp(jstr(it, "reason") ? jstr(it, "reason") : "", reason)) return it;
  }
  return NULL;
}

static void test_event_recorder_EventsV1WithSeries(void **state) {
  (void)state;
  kin_sim *sim = start_sim(0);
  kin_client *c = rt_client(kin_sim_url(sim), NULL);
  kin_event_recorder_opts o = {.instance = "host-a"};
  kin_event_recorder *r = NULL;
  assert_int_equal(kin_event_recorder_new(c, &o, &r), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(kin_event_record(r, "website-controller", &WEB, "Normal", "Created", NULL,
                                      "created Deployment front"), 0);
  assert_int_equal(kin_event_record(r, "website-controller", &WEB, "Warning", "Failed", "Sync",
                                    "quota exceeded"), 0);
  /* misuse is refused before queueing */
  assert_int_equal(kin_event_record(r, "website-controller", &WEB, "Bad", "X", NULL, ""), KIN_EINVAL);
  kin_event_ref noname = WEB;
  noname.name = NULL;
  assert_int_equal(kin_event_record(r, "c", &noname, "Normal", "X", NULL, ""), KIN_EINVAL);
  assert_int_equal(kin_event_recorder_flush(r, 10000), 0);
  kin_event_recorder_stats st;
  kin_event_recorder_get_stats(r, &st);
  assert_int_equal(st.api, KIN_EVENTS_API_EVENTS_V1);
  assert_int_equal(st.queued, 4);
  assert_int_equal(st.created, 2);
  assert_int_equal(st.patched, 2);
  assert_int_equal(st.failed, 0);

  sim_resp l = sim_req(sim, "GET", "/apis/events.k8s.io/v1/namespaces/shop/events", NULL);
  assert_int_equal(l.code, 200);
  assert_int_equal(json_array_size(json_object_get(l.json, "items")), 2);
  json_t *ev = item_by_reason(l.json, "Created");
  assert_non_null(ev);
  assert_field(l.json, "apiVersion", "events.k8s.io/v1");
  assert_field(ev, "type", "Normal");
  assert_field(ev, "note", "created Deployment front");
  assert_field(ev, "action", "Created"); /* the reason when not given */
  assert_field(ev, "reportingController", "website-controller");
  assert_field(ev, "reportingInstance", "host-a");
  assert_field(ev, "regarding.kind", "Website");
  assert_field(ev, "regarding.apiVersion", "example.com/v1");
  assert_field(ev, "regarding.namespace", "shop");
  assert_field(ev, "regarding.name", "front");
  assert_field(ev, "regarding.uid", "uid-1");
  assert_field(ev, "regarding.resourceVersion", "42");
  assert_int_equal(jint(ev, "series.count"), 3);
  assert_non_null(jstr(ev, "series.lastObservedTime"));
  /* MicroTime: 2026-11-25T03:30:00.123456Z */
  const char *t = jstr(ev, "eventTime");
  assert_non_null(t);
  assert_int_equal(strlen(t), 27);
  assert_int_equal(t[19], '.');
  assert_int_equal(t[26], 'Z');
  assert_true(!strncmp(jstr(ev, "metadata.name"), "front.", 6));
  json_t *w = item_by_reason(l.json, "Failed");
  assert_non_null(w);
  assert_field(w, "type", "Warning");
  assert_field(w, "action", "Sync");
  assert_null(json_object_get(w, "series"));
  sim_resp_free(&l);
  /* one storage behind both APIs: the same events in core v1 (kubectl
   * describe's view), converted */
  l = sim_req(sim, "GET", "/api/v1/namespaces/shop/events", NULL);
  assert_int_equal(json_array_size(json_object_get(l.json, "items")), 2);
  ev = item_by_reason(l.json, "Created");
  assert_non_null(ev);
  assert_field(ev, "message", "created Deployment front");
  assert_field(ev, "involvedObject.name", "front");
  assert_field(ev, "reportingComponent", "website-controller");
  assert_int_equal(jint(ev, "series.count"), 3);
  sim_resp_free(&l);
  kin_event_recorder_free(r, 1000);
  kin_client_free(c);
  kin_sim_free(sim);
}

static void test_event_recorder_CoreV1Fallback(void **state) {
  (void)state;
  kin_sim *sim = start_sim(1);
  sim_resp d = sim_req(sim, "GET", "/apis/events.k8s.io/v1", NULL);
  assert_int_equal(d.code, 404);
  sim_resp_free(&d);
  kin_client *c = rt_client(kin_sim_url(sim), NULL);
  kin_event_recorder_opts o = {.instance = "host-b"};
  kin_event_recorder *r = NULL;
  assert_int_equal(kin_event_recorder_new(c, &o, &r), 0);
  kin_event_ref node = {.api_version = "v1", .kind = "Node", .name = "n1", .uid = "u-n1"};
  assert_int_equal(kin_event_record(r, "ctl", &WEB, "Normal", "Synced", NULL, "ok"), 0);
  assert_int_equal(kin_event_record(r, "ctl", &WEB, "Normal", "Synced", NULL, "ok"), 0);
  assert_int_equal(kin_event_record(r, "ctl", &node, "Warning", "NotReady", NULL, "down"), 0);
  assert_int_equal(kin_event_recorder_flush(r, 10000), 0);
  kin_event_recorder_stats st;
  kin_event_recorder_get_stats(r, &st);
  assert_int_equal(st.api, KIN_EVENTS_API_CORE_V1);
  assert_int_equal(st.created, 2);
  assert_int_equal(st.patched, 1);

  sim_resp l = sim_req(sim, "GET", "/api/v1/namespaces/shop/events", NULL);
  assert_int_equal(json_array_size(json_object_get(l.json, "items")), 1);
  json_t *ev = item_by_reason(l.json, "Synced");
  assert_non_null(ev);
  assert_field(l.json, "apiVersion", "v1");
  assert_field(ev, "message", "ok");
  assert_field(ev, "type", "Normal");
  assert_field(ev, "source.component", "ctl");
  assert_field(ev, "source.host", "host-b");
  assert_field(ev, "involvedObject.kind", "Website");
  assert_field(ev, "involvedObject.uid", "uid-1");
  assert_field(ev, "involvedObject.resourceVersion", "42");
  assert_int_equal(jint(ev, "count"), 2);
  const char *first = jstr(ev, "firstTimestamp"), *last = jstr(ev, "lastTimestamp");
  assert_non_null(first);
  assert_non_null(last);
  assert_int_equal(strlen(first), 20); /* 2026-11-25T03:30:00Z */
  assert_true(strcmp(first, last) <= 0);
  sim_resp_free(&l);
  /* a cluster-scoped object's events go to "default" */
  l = sim_req(sim, "GET", "/api/v1/namespaces/default/events", NULL);
  ev = item_by_reason(l.json, "NotReady");
  assert_non_null(ev);
  assert_field(ev, "involvedObject.name", "n1");
  assert_null(jstr(ev, "involvedObject.namespace"));
  sim_resp_free(&l);
  kin_event_recorder_free(r, 1000);
  kin_client_free(c);
  kin_sim_free(sim);
}

/* A TCP port that accepts connections (the kernel's backlog) but never
 * answers: a request to it hangs until cancelled. */
static int hanging_port(int *fd) {
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(*fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(*fd, 16), 0);
  socklen_t n = sizeof(a);
  assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &n), 0);
  return ntohs(a.sin_port);
}

static void test_event_recorder_FullQueueDropsWithOneLogLine(void **state) {
  (void)state;
  int fd;
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", hanging_port(&fd));
  kin_client *c = rt_client(url, NULL);
  /* the writer blocks on its first request for a minute: the queue (2)
   * fills behind it whatever the machine's speed */
  kin_event_recorder_opts o = {.queue_size = 2, .request_timeout_ms = 60000, .max_tries = 1};
  kin_event_recorder *r = NULL;
  assert_int_equal(kin_event_recorder_new(c, &o, &r), 0);
  kin_test_log_start();
  int queued = 0, busy = 0;
  for (int i = 0; i < 10; i++) {
    int rc = kin_event_record(r, "ctl", &WEB, "Normal", "Busy", NULL, "x");
    if (rc == 0) queued++;
    else if (rc == KIN_EBUSY) busy++;
    else fail_msg("kin_event_record: %s", kin_strerror(rc));
  }
  assert_true(queued >= 2 && queued <= 3); /* 2 queued, maybe 1 taken by the writer */
  assert_int_equal(busy, 10 - queued);
  kin_event_recorder_stats st;
  kin_event_recorder_get_stats(r, &st);
  assert_int_equal(st.dropped, (uint64_t)busy);
  /* stopping does not wait for the hanging request past the flush time */
  kin_event_recorder_free(r, 0);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("event dropped (event queue full): Website shop/front reason Busy"), 1);
  kin_test_log_expect_only("event dropped");
  kin_client_free(c);
  close(fd);
}

/* An event carries the fence's epoch of its recording: recorded while the
 * fence is closed (not leading, or deposed) it is not written (counted
 * failed, logged as refused), recorded while leading it is. */
static void test_event_recorder_FencedEventsNotWritten(void **state) {
  (void)state;
  kin_sim *sim = start_sim(0);
  kin_client *c = rt_client(kin_sim_url(sim), NULL);
  kin_fence *f = kin_fence_new();
  assert_non_null(f);
  kin_event_recorder_opts o = {.instance = "host-f", .fence = f};
  kin_event_recorder *r = NULL;
  assert_int_equal(kin_event_recorder_new(c, &o, &r), 0);
  kin_test_log_start();
  assert_int_equal(kin_event_record(r, "ctl", &WEB, "Normal", "Before", NULL, "x"), 0);
  assert_int_equal(kin_event_recorder_flush(r, 10000), 0);
  kin_fence_open(f, 0);
  assert_int_equal(kin_event_record(r, "ctl", &WEB, "Normal", "Leading", NULL, "x"), 0);
  assert_int_equal(kin_event_recorder_flush(r, 10000), 0);
  kin_fence_close(f);
  assert_int_equal(kin_event_record(r, "ctl", &WEB, "Normal", "Deposed", NULL, "x"), 0);
  assert_int_equal(kin_event_recorder_flush(r, 10000), 0);
  kin_test_log_stop();
  kin_event_recorder_stats st;
  kin_event_recorder_get_stats(r, &st);
  assert_int_equal(st.created, 1);
  assert_int_equal(st.failed, 2);
  assert_int_equal(kin_test_log_count("reason Before not written: write refused: leadership "
                                      "ended (epoch 0)"),
                   1);
  /* recorded after the close: it carries no epoch (0) */
  assert_int_equal(kin_test_log_count("reason Deposed not written: write refused: leadership "
                                      "ended (epoch 0)"),
                   1);
  kin_test_log_expect_only("write refused: leadership ended");
  sim_resp l = sim_req(sim, "GET", "/apis/events.k8s.io/v1/namespaces/shop/events", NULL);
  assert_int_equal(json_array_size(json_object_get(l.json, "items")), 1);
  assert_non_null(item_by_reason(l.json, "Leading"));
  sim_resp_free(&l);
  kin_event_recorder_free(r, 1000);
  kin_fence_free(f);
  kin_client_free(c);
  kin_sim_free(sim);
}

KIN_SUITE(event_recorder, cmocka_unit_test(test_event_recorder_EventsV1WithSeries),
          cmocka_unit_test(test_event_recorder_CoreV1Fallback),
          cmocka_unit_test(test_event_recorder_FullQueueDropsWithOneLogLine),
          cmocka_unit_test(test_event_recorder_FencedEventsNotWritten))
