/* test_shard_gate.c -- the sharding gate (shard_gate.h) and the controller
 * handlers behind it: For by the object's uid, Owns by the owner
 * reference's uid, a map's keys by the For cache; a closed gate admits
 * nothing, "*" everything, a bad selector leaves the gate as it was. */
#include "kin_test.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "controller_handlers.h"
#include "call_ctx.h"
#include "controller_history.h"
#include "indexer.h"
#include "kin.h"
#include "shard_gate.h"
#include "shard_selector.h"
#include "workqueue.h"

#define LOWER "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
#define UPPER "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"

/* snprintf into a static buffer (one use at a time). */
static const char *fmt(const char *f, const char *a) {
  static char buf[128];
  snprintf(buf, sizeof buf, f, a);
  return buf;
}
static const char *fmti(const char *f, int a) {
  static char buf[128];
  snprintf(buf, sizeof buf, f, a);
  return buf;
}

static int lower(const char *uid) { return kin_shard_hash(uid, strlen(uid)) < 0x8000000000000000ULL; }

static kin_obj *obj_uid(const char *name, const char *uid, const char *extra) {
  char meta[1024];
  snprintf(meta, sizeof meta, "\"uid\":\"%s\"%s%s", uid, extra ? "," : "", extra ? extra : "");
  return kin_test_obj_ext("ns", name, "1", NULL, meta);
}

/* Takes every queued item, sorted, joined with ','. */
static const char *drain(kin_workqueue *q, char *buf, size_t cap) {
  char *items[64];
  size_t n = 0;
  while (kin_workqueue_len(q) > 0 && n < 64) {
    const char *item;
    assert_int_equal(kin_workqueue_get(q, &item), 0);
    items[n++] = strdup(item);
    kin_workqueue_done(q, item);
  }
  kin_test_join(items, n, buf, cap);
  for (size_t i = 0; i < n; i++) free(items[i]);
  return buf;
}

static void test_shard_gate_SetAndAdmit(void **state) {
  (void)state;
  kin_shard_gate *g;
  assert_int_equal(kin_shard_gate_new(&g), 0);
  kin_shard_gate_stats st;
  kin_shard_gate_get_stats(g, &st);
  assert_int_equal(st.open, 0);
  assert_false(kin_shard_gate_admits(g, "a", "ns")); /* closed until set */
  assert_int_equal(kin_shard_gate_set(g, "*", NULL, 0), 0);
  assert_true(kin_shard_gate_admits(g, "a", "ns"));
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  int seen_lower = 0, seen_upper = 0;
  for (int i = 0; i < 200; i++) {
    char uid[32];
    snprintf(uid, sizeof uid, "%08x-uid-%d", i * 2654435761u, i);
    assert_int_equal(kin_shard_gate_admits(g, uid, "ns"), lower(uid));
    lower(uid) ? seen_lower++ : seen_upper++;
  }
  assert_true(seen_lower > 0 && seen_upper > 0);
  uint64_t gen = kin_shard_gate_generation(g, NULL);
  char err[256];
  assert_int_equal(kin_shard_gate_set(g, "shardRange(object.metadata.uid, '0x0', '0x1')", err, sizeof err),
                   KIN_EINVAL);
  assert_non_null(strstr(err, "16-digit hex"));
  assert_int_equal(kin_shard_gate_generation(g, NULL), gen); /* unchanged */
  assert_int_equal(kin_shard_gate_set(g, NULL, NULL, 0), 0);
  assert_false(kin_shard_gate_admits(g, "a", "ns"));
  assert_int_equal(kin_shard_gate_generation(g, NULL), gen + 1);
  kin_shard_gate_free(g);
}

/* For and Owns: only this replica's objects (owners) are enqueued. */
static void test_shard_gate_Handlers(void **state) {
  (void)state;
  kin_shard_gate *g;
  assert_int_equal(kin_shard_gate_new(&g), 0);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  kin_workqueue_config qc = {.name = "shard-gate-test"};
  kin_workqueue *q;
  assert_int_equal(kin_workqueue_new(&qc, &q), 0);

  kin_handler_config fc = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT, .shard_gate = g};
  kin_enqueue_handler *fh;
  assert_int_equal(kin_enqueue_handler_new(q, &fc, &fh), 0);
  kin_event_handler feh = kin_enqueue_handler_callbacks(fh);
  char want[512] = "", *wl[16];
  size_t nw = 0;
  for (int i = 0; i < 12; i++) {
    char name[16], uid[40];
    snprintf(name, sizeof name, "o%02d", i);
    snprintf(uid, sizeof uid, "%08x-%d", i * 2654435761u, i);
    kin_obj *o = obj_uid(name, uid, NULL);
    assert_int_equal(feh.on_add(feh.ud, o, 0), 0);
    kin_obj_unref(o);
    if (lower(uid)) wl[nw++] = strdup(fmt("ns/%s", name));
  }
  kin_test_join(wl, nw, want, sizeof want);
  for (size_t i = 0; i < nw; i++) free(wl[i]);
  char got[512];
  assert_string_equal(drain(q, got, sizeof got), want);
  kin_shard_gate_stats st;
  kin_shard_gate_get_stats(g, &st);
  assert_int_equal(st.dropped_enqueues, 12 - nw);

  /* Owns: the owner reference's uid decides, not the child's */
  kin_handler_config oc = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = "apps",
                           .owner_kind = "ReplicaSet", .shard_gate = g};
  kin_enqueue_handler *oh;
  assert_int_equal(kin_enqueue_handler_new(q, &oc, &oh), 0);
  kin_event_handler oeh = kin_enqueue_handler_callbacks(oh);
  const char *in = NULL, *out = NULL;
  static char c1[40], c2[40];
  for (int i = 0; !in || !out; i++) {
    char *u = lower(fmti("owner-%d", i)) ? c1 : c2;
    snprintf(u, 40, "owner-%d", i);
    if (u == c1) in = c1;
    else out = c2;
  }
  char refs[512];
  snprintf(refs, sizeof refs,
           "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs-in\","
           "\"uid\":\"%s\",\"controller\":true}]", in);
  kin_obj *child = obj_uid("child-a", out /* the child's own uid is not ours */, refs);
  assert_int_equal(oeh.on_add(oeh.ud, child, 0), 0);
  kin_obj_unref(child);
  snprintf(refs, sizeof refs,
           "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs-out\","
           "\"uid\":\"%s\",\"controller\":true}]", out);
  child = obj_uid("child-b", in, refs);
  assert_int_equal(oeh.on_add(oeh.ud, child, 0), 0);
  kin_obj_unref(child);
  assert_string_equal(drain(q, got, sizeof got), "ns/rs-in");

  kin_enqueue_handler_free(oh);
  kin_enqueue_handler_free(fh);
  kin_workqueue_free(q);
  kin_shard_gate_free(g);
}

static int map_to_parent(void *ud, kin_obj *obj, kin_request_emit_fn emit, void *ctx) {
  (void)ud;
  (void)obj;
  int rc = emit(ctx, "ns", "parent-in");
  if (rc == 0) rc = emit(ctx, "ns", "parent-out");
  if (rc == 0) rc = emit(ctx, "ns", "parent-gone");
  return rc;
}

/* A store holding ns/<in_name> with a uid in LOWER and ns/<out_name>
 * with one outside it. */
static kin_indexer *store_in_out(const char *in_name, const char *out_name) {
  kin_indexer *store = kin_test_indexer_new();
  char uin[40] = "", uout[40] = "";
  for (int i = 0; !uin[0] || !uout[0]; i++) {
    char u[40];
    snprintf(u, sizeof u, "%s-uid-%d", in_name, i);
    strcpy(lower(u) ? uin : uout, u);
  }
  kin_obj *a = obj_uid(in_name, uin, NULL), *b = obj_uid(out_name, uout, NULL);
  assert_int_equal(kin_indexer_add(store, a), 0);
  assert_int_equal(kin_indexer_add(store, b), 0);
  kin_obj_unref(a);
  kin_obj_unref(b);
  return store;
}

/* A map's keys are looked up in the For cache: absent ones are dropped. */
static void test_shard_gate_MapAndKeys(void **state) {
  (void)state;
  kin_shard_gate *g;
  assert_int_equal(kin_shard_gate_new(&g), 0);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  kin_indexer *store = store_in_out("parent-in", "parent-out");
  assert_int_equal(kin_shard_gate_admits_key(g, store, "ns/parent-in"), 1);
  assert_int_equal(kin_shard_gate_admits_key(g, store, "ns/parent-out"), 0);
  assert_int_equal(kin_shard_gate_admits_key(g, store, "ns/parent-gone"), -1);

  kin_workqueue_config qc = {.name = "shard-gate-map"};
  kin_workqueue *q;
  assert_int_equal(kin_workqueue_new(&qc, &q), 0);
  kin_handler_config mc = {.kind = KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC, .map = map_to_parent,
                           .shard_gate = g, .shard_store = store};
  kin_enqueue_handler *mh;
  assert_int_equal(kin_enqueue_handler_new(q, &mc, &mh), 0);
  kin_event_handler meh = kin_enqueue_handler_callbacks(mh);
  kin_obj *cm = obj_uid("cm", "cm-uid", NULL);
  assert_int_equal(meh.on_add(meh.ud, cm, 0), 0);
  kin_obj_unref(cm);
  char got[256];
  assert_string_equal(drain(q, got, sizeof got), "ns/parent-in");
  /* the ranges move: now only the other one */
  assert_int_equal(kin_shard_gate_set(g, UPPER, NULL, 0), 0);
  cm = obj_uid("cm", "cm-uid", NULL);
  assert_int_equal(meh.on_add(meh.ud, cm, 0), 0);
  kin_obj_unref(cm);
  assert_string_equal(drain(q, got, sizeof got), "ns/parent-out");
  kin_enqueue_handler_free(mh);
  kin_workqueue_free(q);
  kin_indexer_free(store);
  kin_shard_gate_free(g);
}

/* The reconciles a controller ran: keys joined by ','. */
typedef struct {
  pthread_mutex_t mu; /* guards keys */
  char keys[512];
} seen_keys;

static int record_reconcile(void *ud, int worker, const kin_request *req, const kin_call_ctx *ctx,
                            kin_result_action *out) {
  (void)worker;
  (void)ctx;
  seen_keys *s = ud;
  pthread_mutex_lock(&s->mu);
  size_t used = strlen(s->keys);
  snprintf(s->keys + used, sizeof(s->keys) - used, "%s%s", used ? "," : "", req->key);
  pthread_mutex_unlock(&s->mu);
  out->kind = KIN_RESULT_DONE;
  return 0;
}

/* A dequeued request whose object is another replica's, or left with its
 * range, is forgotten, not reconciled, and its history says "handover"; a
 * deleted object's request (admitted when it was enqueued) is reconciled. */
static void test_shard_gate_ControllerSkipsMovedKeys(void **state) {
  (void)state;
  kin_shard_gate *g;
  assert_int_equal(kin_shard_gate_new(&g), 0);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  kin_indexer *store = store_in_out("mine", "theirs");
  kin_shard_gate_moved(g, "ns/left", 1); /* its object left with its range */
  seen_keys seen = {.keys = ""};
  pthread_mutex_init(&seen.mu, NULL);
  kin_controller_config cfg = {.name = "sharded", .workers = 1, .reconcile = record_reconcile,
                               .ud = &seen};
  kin_controller *c;
  assert_int_equal(kin_controller_new(&cfg, &c), 0);
  assert_int_equal(kin_controller_set_shard_gate(c, g, store), 0);
  assert_int_equal(kin_controller_start(c), 0);
  assert_int_equal(kin_controller_set_shard_gate(c, g, store), KIN_EBUSY);
  const char *names[] = {"mine", "theirs", "left", "deleted"};
  for (int i = 0; i < 4; i++) assert_int_equal(kin_controller_enqueue(c, "ns", names[i]), 0);
  kin_shard_gate_stats st;
  for (int i = 0; i < 500; i++) {
    kin_shard_gate_get_stats(g, &st);
    pthread_mutex_lock(&seen.mu);
    int done = st.skipped_reconciles == 2 && strchr(seen.keys, ',') != NULL;
    pthread_mutex_unlock(&seen.mu);
    if (done) break;
    struct timespec ts = {0, 10 * 1000000};
    nanosleep(&ts, NULL);
  }
  kin_controller_stop(c);
  kin_shard_gate_get_stats(g, &st);
  assert_int_equal(st.skipped_reconciles, 2);
  assert_string_equal(seen.keys, "ns/mine,ns/deleted");
  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(kin_controller_history(c), "ns/theirs", &v, &n), 0);
  int handover = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i].type == KIN_HIST_EVENT && v[i].cause == KIN_CAUSE_HANDOVER) handover++;
  free(v);
  assert_int_equal(handover, 1);
  assert_string_equal(kin_hist_cause_name(KIN_CAUSE_HANDOVER), "handover");
  /* the moved key was forgotten once its request was dropped */
  assert_int_equal(kin_shard_gate_admits_key(g, store, "ns/left"), -1);
  kin_controller_free(c);
  pthread_mutex_destroy(&seen.mu);
  kin_indexer_free(store);
  kin_shard_gate_free(g);
}

/* The items queued, sorted and joined (taken off the queue). */
static const char *queued(kin_controller *c, char *buf, size_t cap) {
  return drain(kin_controller_queue(c), buf, cap);
}

/* A set that admits more enqueues the cached objects it gained: their
 * events were dropped while the gate turned them away (a bucket taken back
 * while it was being handed over, whose object the cache kept; a new
 * term), and nothing else would bring them to a reconcile. */
static void test_shard_gate_WideningEnqueuesCached(void **state) {
  (void)state;
  kin_shard_gate *g;
  assert_int_equal(kin_shard_gate_new(&g), 0);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  kin_indexer *store = store_in_out("mine", "theirs");
  kin_controller_config cfg = {.name = "widening", .workers = 1, .reconcile = record_reconcile};
  kin_controller *c;
  assert_int_equal(kin_controller_new(&cfg, &c), 0);
  assert_int_equal(kin_controller_set_shard_gate(c, g, store), 0);
  char got[256];
  assert_string_equal(queued(c, got, sizeof got), "");
  /* an update of ns/theirs comes while it is another's: dropped */
  kin_handler_config fc = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT, .shard_gate = g};
  kin_enqueue_handler *fh;
  assert_int_equal(kin_enqueue_handler_new(kin_controller_queue(c), &fc, &fh), 0);
  kin_event_handler feh = kin_enqueue_handler_callbacks(fh);
  kin_obj *theirs = kin_indexer_get(store, "ns/theirs");
  assert_int_equal(feh.on_update(feh.ud, theirs, theirs), 0);
  assert_string_equal(queued(c, got, sizeof got), "");
  /* its range comes here: the cached object is enqueued, mine is not */
  assert_int_equal(kin_shard_gate_set(g, UPPER, NULL, 0), 0);
  assert_string_equal(queued(c, got, sizeof got), "ns/theirs");
  kin_hist_entry *v;
  size_t n;
  assert_int_equal(kin_history_get(kin_controller_history(c), "ns/theirs", &v, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(v[0].cause, KIN_CAUSE_HANDOVER);
  assert_non_null(strstr(v[0].text, "came to this replica"));
  free(v);
  /* everything: only what UPPER did not hold; the same again, or less: nothing */
  assert_int_equal(kin_shard_gate_set(g, "*", NULL, 0), 0);
  assert_string_equal(queued(c, got, sizeof got), "ns/mine");
  assert_int_equal(kin_shard_gate_set(g, "*", NULL, 0), 0);
  assert_int_equal(kin_shard_gate_set(g, UPPER, NULL, 0), 0);
  assert_string_equal(queued(c, got, sizeof got), "");
  /* closed, then open again */
  assert_int_equal(kin_shard_gate_set(g, NULL, NULL, 0), 0);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  assert_string_equal(queued(c, got, sizeof got), "ns/mine");

  /* tied to a term: the same ranges in a new term are all gained */
  kin_fence *f = kin_fence_new();
  assert_non_null(f);
  kin_fence_open(f, 0);
  kin_shard_gate_bind_fence(g, f);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  assert_string_equal(queued(c, got, sizeof got), "");
  kin_shard_gate_bind_fence(g, f); /* bound again: the term of the last set stays */
  kin_fence_close(f);
  assert_false(kin_shard_gate_admits_key(g, store, "ns/mine") == 1); /* the term ended */
  kin_fence_open(f, 0);
  kin_shard_gate_bind_fence(g, f);
  assert_int_equal(kin_shard_gate_set(g, LOWER, NULL, 0), 0);
  assert_string_equal(queued(c, got, sizeof got), "ns/mine");
  kin_shard_gate_stats st;
  kin_shard_gate_get_stats(g, &st);
  assert_int_equal(st.requeued, 4);
  assert_int_equal(st.dropped_enqueues, 1);

  /* freed controllers are no longer called */
  kin_enqueue_handler_free(fh);
  kin_obj_unref(theirs);
  kin_controller_free(c);
  assert_int_equal(kin_shard_gate_set(g, "*", NULL, 0), 0);
  kin_shard_gate_get_stats(g, &st);
  assert_int_equal(st.requeued, 4);
  kin_shard_gate_free(g);
  kin_fence_free(f);
  kin_indexer_free(store);
}

static void count_call(void *ud, kin_shard_gate *g, const kin_shard_gate_prev *prev) {
  (void)g;
  (void)prev;
  (*(int *)ud)++;
}

#define R(a, b) "shardRange(object.metadata.uid, '0x" a "', '0x" b "')"

/* The watchers run only after a set that may admit more: not for a set to
 * fewer or the same ranges in the same term (however the ranges are cut). */
static void test_shard_gate_WatchersOnlyWhenGaining(void **state) {
  (void)state;
  kin_shard_gate *g;
  assert_int_equal(kin_shard_gate_new(&g), 0);
  int calls = 0;
  assert_int_equal(kin_shard_gate_watch(g, count_call, &calls), 0);
  static const struct {
    const char *sel;
    int gains;
  } steps[] = {
      {NULL, 0},
      {R("0000000000000000", "4000000000000000") " || " R("4000000000000000", "8000000000000000"), 1},
      {R("2000000000000000", "6000000000000000"), 0},                       /* inside, across both */
      {R("0000000000000000", "8000000000000000"), 1},                       /* more */
      {R("0000000000000000", "8000000000000000"), 0},                       /* the same */
      {R("7000000000000000", "9000000000000000"), 1},                       /* past the end */
      {R("8000000000000000", "10000000000000000"), 1},
      {R("f000000000000000", "10000000000000000"), 0},                       /* to 2^64 */
      {"*", 1},
      {LOWER, 0},
      {"shardRange(object.metadata.namespace, '0x0000000000000000', '0x1000000000000000')", 1},
      {NULL, 0},
  };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    int before = calls;
    assert_int_equal(kin_shard_gate_set(g, steps[i].sel, NULL, 0), 0);
    if (calls - before != steps[i].gains) fail_msg("step %zu (%s): %d calls", i, steps[i].sel, calls - before);
  }
  kin_shard_gate_unwatch(g, count_call, &calls);
  assert_int_equal(kin_shard_gate_set(g, "*", NULL, 0), 0);
  assert_int_equal(calls, 6); /* the steps that gain */
  kin_shard_gate_free(g);
}

KIN_SUITE(shard_gate, cmocka_unit_test(test_shard_gate_SetAndAdmit),
          cmocka_unit_test(test_shard_gate_Handlers), cmocka_unit_test(test_shard_gate_MapAndKeys),
          cmocka_unit_test(test_shard_gate_ControllerSkipsMovedKeys),
          cmocka_unit_test(test_shard_gate_WideningEnqueuesCached),
          cmocka_unit_test(test_shard_gate_WatchersOnlyWhenGaining))
