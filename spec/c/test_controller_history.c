/* test_controller_history.c -- the per-key history of a controller
 * (controller_history.h): the ring's cap, LRU eviction of whole keys,
 * memory accounting, and what the handlers (add, update, delete, resync,
 * owner event, predicate verdicts) and a running controller (manual
 * enqueue, error then retry, requeue, requeue_after, success) record. */
#include "kin_test.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "controller_history.h"
#include "kin.h"

static kin_hist_entry text_entry(const char *t) {
  kin_hist_entry e;
  memset(&e, 0, sizeof(e));
  e.type = KIN_HIST_EVENT;
  e.cause = KIN_CAUSE_MANUAL;
  snprintf(e.text, sizeof(e.text), "%s", t);
  return e;
}

static size_t count(kin_history *h, const char *key) {
  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(h, key, &v, &n), 0);
  free(v);
  return n;
}

static void test_controller_history_RingKeepsNewest(void **state) {
  kin_history *h;
  assert_int_equal(kin_history_new(6, 10, &h), 0); /* rounded up to 8 */
  char t[16];
  for (int i = 0; i < 20; i++) {
    snprintf(t, sizeof(t), "e%d", i);
    kin_hist_entry e = text_entry(t);
    assert_int_equal(kin_history_record(h, "ns/a", &e), 0);
  }
  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(h, "ns/a", &v, &n), 0);
  assert_int_equal(n, 8);
  for (size_t i = 0; i < n; i++) {
    snprintf(t, sizeof(t), "e%zu", 12 + i);
    assert_string_equal(v[i].text, t); /* oldest first */
    assert_true(v[i].wall_ns > 0);
  }
  free(v);
  kin_history_stats st;
  kin_history_get_stats(h, &st);
  assert_int_equal(st.keys, 1);
  assert_int_equal(st.entries, 8);
  assert_int_equal(st.max_entries, 8);
  assert_true(st.bytes >= 8 * sizeof(kin_hist_entry));
  assert_int_equal(sizeof(kin_hist_entry), 128);
  /* unknown keys have nothing */
  assert_int_equal(kin_history_get(h, "ns/none", &v, &n), 0);
  assert_null(v);
  assert_int_equal(n, 0);
  /* a long text is truncated and flagged by whoever writes it; the ring
   * always NUL-terminates */
  kin_hist_entry big = text_entry("");
  memset(big.text, 'x', sizeof(big.text));
  assert_int_equal(kin_history_record(h, "ns/b", &big), 0);
  assert_int_equal(kin_history_get(h, "ns/b", &v, &n), 0);
  assert_int_equal(strlen(v[0].text), KIN_HIST_TEXT - 1);
  free(v);
  kin_history_free(h);
}

static int collect_keys(void *ud, const char *key, size_t n) {
  char *buf = ud;
  size_t used = strlen(buf);
  snprintf(buf + used, 256 - used, "%s%s", used ? "," : "", key);
  return 0;
}

static void test_controller_history_EvictsLeastRecentKey(void **state) {
  kin_history *h;
  assert_int_equal(kin_history_new(4, 3, &h), 0);
  kin_hist_entry e = text_entry("x");
  assert_int_equal(kin_history_record(h, "a", &e), 0);
  assert_int_equal(kin_history_record(h, "b", &e), 0);
  assert_int_equal(kin_history_record(h, "c", &e), 0);
  assert_int_equal(kin_history_record(h, "a", &e), 0); /* a is now the newest */
  assert_int_equal(kin_history_record(h, "d", &e), 0); /* evicts b */
  assert_int_equal(count(h, "b"), 0);
  assert_int_equal(count(h, "a"), 2);
  assert_int_equal(count(h, "c"), 1);
  char keys[256] = "";
  kin_history_each_key(h, collect_keys, keys);
  assert_string_equal(keys, "d,a,c"); /* most recent first */
  kin_history_stats st;
  kin_history_get_stats(h, &st);
  assert_int_equal(st.keys, 3);
  assert_int_equal(st.evictions, 1);
  assert_int_equal(st.entries, 4);
  kin_history_free(h);
}

/* A reconcile is recorded when it ends: reading puts it (with its writes
 * and its requeue) back at its start, before what happened meanwhile. */
static void test_controller_history_ReconcileAtItsStart(void **state) {
  kin_history *h;
  assert_int_equal(kin_history_new(0, 0, &h), 0);
  kin_hist_entry ev = text_entry("before"), owner = text_entry("meanwhile"), g[3];
  ev.wall_ns = 100;
  owner.wall_ns = 250;
  memset(g, 0, sizeof(g));
  g[0].type = KIN_HIST_RECONCILE;
  g[0].wall_ns = 200;
  g[0].dur_ns = 100;
  g[0].seq = 1;
  g[1].type = KIN_HIST_WRITE;
  g[1].seq = 1;
  g[2].type = KIN_HIST_EVENT;
  g[2].cause = KIN_CAUSE_RETRY;
  g[2].seq = 1;
  assert_int_equal(kin_history_record(h, "k", &ev), 0);
  assert_int_equal(kin_history_record(h, "k", &owner), 0);
  assert_int_equal(kin_history_record_n(h, "k", g, 3), 0);
  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(h, "k", &v, &n), 0);
  assert_int_equal(n, 5);
  assert_string_equal(v[0].text, "before");
  assert_int_equal(v[1].type, KIN_HIST_RECONCILE);
  assert_int_equal(v[2].type, KIN_HIST_WRITE);
  assert_int_equal(v[3].cause, KIN_CAUSE_RETRY);
  assert_string_equal(v[4].text, "meanwhile");
  char line[512];
  assert_int_equal(kin_hist_format(v, n, 1, line, sizeof(line)), 3); /* then the retry line */
  assert_non_null(strstr(line, "reconcile #1 started (worker 1)\n"));
  assert_non_null(strstr(line, "reconcile #1 done in 0 us: success; writes: "));
  free(v);
  kin_history_free(h);
}

/* An admission webhook's denial of a write (issue 25): kin_hist_denial
 * cuts kube-apiserver's message into DENIAL entries after the write, the
 * reconcile's group keeps them, kin_hist_format shows the webhook and the
 * message, and a message too long for KIN_HIST_DENIAL_MAX entries ends
 * with "...". */
static void test_controller_history_AdmissionDenial(void **state) {
  kin_hist_entry d[KIN_HIST_DENIAL_MAX];
  assert_int_equal(kin_hist_denial("create example.com/v1/Website: conflict", 1, d, 2), 0);
  assert_int_equal(kin_hist_denial(NULL, 1, d, 2), 0);
  assert_int_equal(kin_hist_denial("admission webhook \"v.example.com\" denied the request without "
                                   "explanation", 3, d, 2), 1);
  assert_int_equal(d[0].type, KIN_HIST_DENIAL);
  assert_int_equal(d[0].seq, 3);
  assert_string_equal(d[0].text, "v.example.com\t(without explanation)");

  kin_history *h;
  assert_int_equal(kin_history_new(0, 0, &h), 0);
  kin_hist_entry g[2 + KIN_HIST_DENIAL_MAX];
  memset(g, 0, sizeof(g));
  g[0].type = KIN_HIST_RECONCILE;
  g[0].wall_ns = 200;
  g[0].seq = 1;
  g[0].code = 2; /* two writes made, one kept */
  g[0].cause = KIN_RESULT_ERROR;
  g[1].type = KIN_HIST_WRITE;
  g[1].seq = 1;
  g[1].code = 403;
  snprintf(g[1].text, sizeof(g[1].text), "POST /apis/example.com/v1/namespaces/default/websites");
  const char *msg = "admission webhook \"website-validate.kinformer.example.com\" denied the request: "
                    "spec.image is required";
  size_t k = kin_hist_denial(msg, 1, &g[2], KIN_HIST_DENIAL_MAX);
  assert_int_equal(k, 1);
  assert_int_equal(kin_history_record_n(h, "k", g, 2 + k), 0);
  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(h, "k", &v, &n), 0);
  assert_int_equal(n, 3);
  char line[1024];
  assert_int_equal(kin_hist_format(v, n, 0, line, sizeof(line)), 3);
  assert_non_null(strstr(line, "; writes: POST /apis/example.com/v1/namespaces/default/websites 403 denied "
                               "by admission webhook \"website-validate.kinformer.example.com\": "
                               "spec.image is required (+1 more)"));
  free(v);

  /* a long message: two entries, then cut */
  char longmsg[400];
  snprintf(longmsg, sizeof longmsg, "admission webhook \"w.example.com\" denied the request: %0250d", 7);
  assert_int_equal(kin_hist_denial(longmsg, 2, &g[2], KIN_HIST_DENIAL_MAX), KIN_HIST_DENIAL_MAX);
  assert_int_equal(g[3].truncated, 1);
  g[0].seq = g[1].seq = 2;
  g[0].wall_ns = 300;
  g[0].code = 1;
  assert_int_equal(kin_history_record_n(h, "k", g, 2 + KIN_HIST_DENIAL_MAX), 0);
  assert_int_equal(kin_history_get(h, "k", &v, &n), 0);
  assert_int_equal(n, 7);
  assert_int_equal(kin_hist_format(v, n, 3, line, sizeof(line)), 7);
  assert_non_null(strstr(line, "403 denied by admission webhook \"w.example.com\": 0000"));
  assert_non_null(strstr(line, "0000..."));
  assert_null(strstr(line, "more)"));
  free(v);
  kin_history_free(h);
}

/* ---- the handlers ---------------------------------------------------------- */

static kin_workqueue *new_queue(void) {
  kin_workqueue_config qc = {.name = "history-test"};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&qc, &q), 0);
  return q;
}

static void test_controller_history_HandlerEventsAndPredicates(void **state) {
  kin_history *h;
  assert_int_equal(kin_history_new(0, 0, &h), 0);
  kin_workqueue *q = new_queue();
  kin_predicate *p = NULL;
  assert_int_equal(kin_predicate_from_name("generation_changed", &p), 0);
  kin_handler_config cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT, .predicate = p, .history = h};
  kin_enqueue_handler *eh;
  assert_int_equal(kin_enqueue_handler_new(q, &cfg, &eh), 0);
  kin_event_handler cb = kin_enqueue_handler_callbacks(eh);
  kin_obj *g1 = kin_test_obj_ext("ns", "web", "41", NULL, "\"generation\":1");
  kin_obj *g1b = kin_test_obj_ext("ns", "web", "42", NULL, "\"generation\":1");
  kin_obj *g2 = kin_test_obj_ext("ns", "web", "43", NULL, "\"generation\":2");
  cb.on_add(cb.ud, g1, 1);
  cb.on_update(cb.ud, g1, g1b); /* dropped: same generation */
  cb.on_update(cb.ud, g1b, g2);
  cb.on_update(cb.ud, g2, g2); /* resync: dropped by generation_changed */
  cb.on_delete(cb.ud, g2);

  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(h, "ns/web", &v, &n), 0);
  assert_int_equal(n, 5);
  assert_int_equal(v[0].type, KIN_HIST_EVENT);
  assert_int_equal(v[0].cause, KIN_CAUSE_ADD);
  assert_int_equal(v[0].pred, KIN_PRED_PASSED);
  assert_string_equal(v[0].text, "resourceVersion 41; predicates: generation_changed passed");
  assert_int_equal(v[1].cause, KIN_CAUSE_UPDATE);
  assert_int_equal(v[1].pred, KIN_PRED_DROPPED);
  assert_string_equal(v[1].text,
                      "resourceVersion 41 -> 42; predicates: generation_changed dropped");
  assert_int_equal(v[2].cause, KIN_CAUSE_UPDATE);
  assert_int_equal(v[2].pred, KIN_PRED_PASSED);
  assert_string_equal(v[2].text,
                      "resourceVersion 42 -> 43; predicates: generation_changed passed");
  assert_int_equal(v[3].cause, KIN_CAUSE_RESYNC);
  assert_int_equal(v[3].pred, KIN_PRED_DROPPED);
  assert_int_equal(v[4].cause, KIN_CAUSE_DELETE);
  assert_string_equal(v[4].text, "resourceVersion 43; predicates: generation_changed passed");
  free(v);
  assert_int_equal(kin_workqueue_len(q), 1); /* the queue itself is unchanged: one key */
  kin_enqueue_handler_free(eh);
  kin_obj_unref(g1);
  kin_obj_unref(g1b);
  kin_obj_unref(g2);

  /* an owned object's event is recorded under its owner, naming it; an And
   * names the child that dropped the event */
  kin_predicate *kids[2];
  assert_int_equal(kin_predicate_from_name("label_changed", &kids[0]), 0);
  assert_int_equal(kin_predicate_from_name("resource_version_changed", &kids[1]), 0);
  assert_int_equal(kin_predicate_combine(KIN_PREDICATE_AND, kids, 2, &p), 0);
  kin_handler_config oc = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = "apps",
                           .owner_kind = "ReplicaSet", .predicate = p, .history = h};
  assert_int_equal(kin_enqueue_handler_new(q, &oc, &eh), 0);
  cb = kin_enqueue_handler_callbacks(eh);
  const char *refs = "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                     "\"name\":\"rs\",\"uid\":\"u1\",\"controller\":true}]";
  kin_obj *pod = kin_test_obj_ext("ns", "pod-1", "7", NULL, refs);
  kin_obj *pod2 = kin_test_obj_ext("ns", "pod-1", "8", "{\"x\":\"1\"}", refs);
  cb.on_add(cb.ud, pod, 1);
  cb.on_update(cb.ud, pod, pod); /* a resync: labels unchanged */
  cb.on_update(cb.ud, pod, pod2);
  assert_int_equal(kin_history_get(h, "ns/rs", &v, &n), 0);
  assert_int_equal(n, 4); /* add, resync dropped, update for old and new owner ref */
  assert_int_equal(v[0].cause, KIN_CAUSE_OWNER);
  assert_string_equal(v[0].text, "add of object ns/pod-1; predicates: and passed");
  assert_int_equal(v[1].cause, KIN_CAUSE_OWNER);
  assert_int_equal(v[1].pred, KIN_PRED_DROPPED);
  assert_string_equal(v[1].text, "resync of object ns/pod-1; predicates: labels_changed dropped");
  assert_string_equal(v[2].text, "update of object ns/pod-1; predicates: and passed");
  free(v);
  assert_int_equal(count(h, "ns/pod-1"), 0);
  kin_enqueue_handler_free(eh);
  kin_obj_unref(pod);
  kin_obj_unref(pod2);
  kin_workqueue_free(q);
  kin_history_free(h);
}

/* ---- a running controller --------------------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  int calls;
} rec;

/* 1st call: an error; 2nd: requeue; 3rd: requeue_after 1 h; then done. */
static int scripted(void *ud, int worker, const kin_request *req, const kin_call_ctx *ctx,
                    kin_result_action *out) {
  (void)ctx;
  rec *r = ud;
  pthread_mutex_lock(&r->mu);
  int call = ++r->calls;
  pthread_mutex_unlock(&r->mu);
  if (call == 1) {
    out->kind = KIN_RESULT_ERROR;
    snprintf(out->message, sizeof(out->message), "boom: %s", req->key);
  } else if (call == 2) {
    out->kind = KIN_RESULT_REQUEUE;
  } else if (call == 3) {
    out->kind = KIN_RESULT_REQUEUE_AFTER;
    out->requeue_after_ns = 3600 * KIN_NSEC_PER_SEC;
  }
  return 0;
}

static int calls(rec *r) {
  pthread_mutex_lock(&r->mu);
  int n = r->calls;
  pthread_mutex_unlock(&r->mu);
  return n;
}

static void test_controller_history_ReconcileResults(void **state) {
  rec r = {.calls = 0};
  pthread_mutex_init(&r.mu, NULL);
  kin_controller_config cfg = {.name = "hist", .reconcile = scripted, .ud = &r};
  kin_controller *c;
  assert_int_equal(kin_controller_new(&cfg, &c), 0);
  assert_non_null(kin_controller_history(c));
  kin_test_log_start();
  assert_int_equal(kin_controller_start(c), 0);
  assert_int_equal(kin_controller_enqueue(c, "ns", "web"), 0);
  KIN_EVENTUALLY(calls(&r) >= 3, 5000);
  kin_hist_entry *v = NULL;
  size_t n = 0;
  /* the third reconcile's entries are recorded after it returns */
  for (int i = 0; i < 5000 && n < 7; i++) {
    free(v);
    assert_int_equal(kin_history_get(kin_controller_history(c), "ns/web", &v, &n), 0);
    if (n < 7) kin_test_sleep_ms(1);
  }
  kin_controller_stop(c);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("boom: ns/web"), 1);
  assert_int_equal(n, 7);
  assert_int_equal(v[0].type, KIN_HIST_EVENT);
  assert_int_equal(v[0].cause, KIN_CAUSE_MANUAL);
  assert_int_equal(v[1].type, KIN_HIST_RECONCILE);
  assert_int_equal(v[1].cause, KIN_RESULT_ERROR);
  assert_int_equal(v[1].seq, 1);
  assert_int_equal(v[1].worker, 0);
  assert_string_equal(v[1].text, "boom: ns/web");
  assert_true(v[1].wall_ns >= v[0].wall_ns);
  assert_int_equal(v[2].cause, KIN_CAUSE_RETRY);
  assert_string_equal(v[2].text, "boom: ns/web");
  assert_int_equal(v[3].cause, KIN_RESULT_REQUEUE);
  assert_int_equal(v[3].seq, 2);
  assert_int_equal(v[4].type, KIN_HIST_EVENT);
  assert_int_equal(v[4].cause, KIN_CAUSE_REQUEUE);
  assert_int_equal(v[5].cause, KIN_RESULT_REQUEUE_AFTER);
  assert_int_equal(v[6].cause, KIN_CAUSE_REQUEUE_AFTER);
  assert_int_equal(v[6].dur_ns, 3600 * KIN_NSEC_PER_SEC);
  free(v);
  assert_string_equal(kin_hist_cause_name(KIN_CAUSE_REQUEUE_AFTER), "requeue_after");
  assert_string_equal(kin_hist_result_name(KIN_RESULT_TERMINAL_ERROR), "terminal");
  kin_controller_free(c);
  pthread_mutex_destroy(&r.mu);

  /* history_entries < 0: none */
  kin_controller_config off = {.name = "off", .reconcile = scripted, .ud = &r,
                               .history_entries = -1};
  assert_int_equal(kin_controller_new(&off, &c), 0);
  assert_null(kin_controller_history(c));
  kin_controller_free(c);
}

KIN_SUITE(controller_history, cmocka_unit_test(test_controller_history_RingKeepsNewest),
          cmocka_unit_test(test_controller_history_EvictsLeastRecentKey),
          cmocka_unit_test(test_controller_history_ReconcileAtItsStart),
          cmocka_unit_test(test_controller_history_AdmissionDenial),
          cmocka_unit_test(test_controller_history_HandlerEventsAndPredicates),
          cmocka_unit_test(test_controller_history_ReconcileResults))
