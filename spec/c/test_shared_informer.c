/* test_shared_informer.c -- ports of client-go's shared_informer_test.go and
 * controller_test.go (TestHammerController) onto kin_informer. The fake
 * controller source of client-go is replaced by feeding the informer's
 * DeltaFIFO directly (Replace = a relist, add/update/delete = watch
 * events); time runs on a fake clock. Instead of client-go's "sleep a bit
 * for stragglers", a marker object is added and deleted: once a listener
 * saw the marker's delete, it has been handed everything queued before. */
#include "kin_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "delta_fifo.h"
#include "indexer.h"
#include "kin.h"
#include "kobj.h"
#include "shared_informer.h"

#include "handler_rec.h"

#define SEC KIN_NSEC_PER_SEC
#define T0 (1000 * SEC)

static kin_informer *new_informer(kin_clock *clk, uint64_t resync) {
  kin_informer_config cfg = {.clock = clk, .default_resync_ns = resync, .name = "test/pods"};
  kin_informer *inf = NULL;
  assert_int_equal(kin_informer_new(&cfg, &inf), 0);
  assert_non_null(inf);
  return inf;
}

static kin_listener *add_rec(kin_informer *inf, rec *r, uint64_t resync) {
  kin_event_handler h = handler_for(r);
  kin_listener *l = NULL;
  assert_int_equal(kin_informer_add_handler(inf, &h, resync, &l), 0);
  assert_non_null(l);
  return l;
}

static void fifo_op(kin_informer *inf, char op, const char *name, const char *rv) {
  kin_obj *o = mk(name, rv);
  kin_delta_fifo *f = kin_informer_fifo(inf);
  int rc = op == 'a' ? kin_delta_fifo_add(f, o)
           : op == 'u' ? kin_delta_fifo_update(f, o) : kin_delta_fifo_delete(f, o);
  assert_int_equal(rc, 0);
  kin_obj_unref(o);
}

/* Relist: spec is "name:rv,name:rv". */
static void relist(kin_informer *inf, const char *spec) {
  kin_obj *objs[32];
  size_t n = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *c = strchr(tok, ':');
    *c = 0;
    objs[n++] = mk(tok, c + 1);
  }
  assert_int_equal(kin_delta_fifo_replace(kin_informer_fifo(inf), objs, n, "100"), 0);
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
}

static int marker_seq;

/* Adds and deletes a fresh marker object and waits until every recorder in
 * rs has seen the delete: everything distributed before has been handed to
 * their handlers. */
static void barrier(kin_informer *inf, rec **rs, int n) {
  char name[32], want[64];
  snprintf(name, sizeof(name), "marker%d", ++marker_seq);
  fifo_op(inf, 'a', name, "1");
  fifo_op(inf, 'd', name, "1");
  snprintf(want, sizeof(want), "delete ns/%s 1", name);
  for (int i = 0; i < n; i++) KIN_EVENTUALLY(rec_has(rs[i], want), 10000);
}

/* Waits until the resync thread sleeps on the fake clock. */
static void wait_resync_idle(kin_clock *clk) { KIN_EVENTUALLY(kin_fake_clock_waiters(clk) == 1, 5000); }

static char dump_buf[8192];
#define DUMP(r, from) rec_dump((r), (from), "marker", dump_buf, sizeof(dump_buf))

static uint64_t stat_pending(kin_listener *l) {
  kin_listener_stats st;
  kin_listener_get_stats(l, &st);
  return st.pending;
}

static const char *cached_rv(kin_informer *inf, const char *key, char *buf) {
  kin_obj *o = kin_indexer_get(kin_informer_indexer(inf), key);
  if (!o) return "absent";
  snprintf(buf, 32, "%s", kin_obj_resource_version(o));
  kin_obj_unref(o);
  return buf;
}

/* TestListenerResyncPeriods: listeners asking for 0, 2 s and 3 s on an
 * informer checking every 1 s get resync updates only when due. */
static void test_shared_informer_ListenerResyncPeriods(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 1 * SEC);
  rec *r1 = rec_new(), *r2 = rec_new(), *r3 = rec_new();
  rec *all[] = {r1, r2, r3};
  kin_listener *l1 = add_rec(inf, r1, 0);
  kin_listener *l2 = add_rec(inf, r2, 2 * SEC);
  kin_listener *l3 = add_rec(inf, r3, 3 * SEC);
  assert_int_equal(kin_informer_run(inf), 0);
  log_capture(1);
  assert_int_equal(kin_informer_run(inf), KIN_EBUSY);
  assert_true(log_contains("already started"));
  log_capture(0);
  relist(inf, "pod1:1,pod2:2");
  assert_int_equal(kin_informer_wait_for_cache_sync(inf, 10 * SEC), 0);
  KIN_EVENTUALLY(kin_listener_has_synced(l1) && kin_listener_has_synced(l2) &&
                     kin_listener_has_synced(l3),
                 5000);
  for (int i = 0; i < 3; i++)
    assert_string_equal(DUMP(all[i], 0), "add ns/pod1 1 init\nadd ns/pod2 2 init");

  size_t m1 = rec_count(r1), m2 = rec_count(r2), m3 = rec_count(r3);
  wait_resync_idle(clk);
  kin_fake_clock_step(clk, 2 * SEC); /* listener2 due */
  KIN_EVENTUALLY(rec_count(r2) == m2 + 2, 5000);
  barrier(inf, all, 3);
  assert_string_equal(DUMP(r2, m2), "update ns/pod1 1>1\nupdate ns/pod2 2>2");
  assert_string_equal(DUMP(r1, m1), "");
  assert_string_equal(DUMP(r3, m3), "");

  m1 = rec_count(r1), m2 = rec_count(r2), m3 = rec_count(r3);
  wait_resync_idle(clk);
  kin_fake_clock_step(clk, 1 * SEC); /* listener3 due, listener2 next at +4 s */
  KIN_EVENTUALLY(rec_count(r3) == m3 + 2, 5000);
  barrier(inf, all, 3);
  assert_string_equal(DUMP(r3, m3), "update ns/pod1 1>1\nupdate ns/pod2 2>2");
  assert_string_equal(DUMP(r1, m1), "");
  assert_string_equal(DUMP(r2, m2), "");

  kin_informer_free(inf);
  for (int i = 0; i < 3; i++) rec_free(all[i]);
  kin_fake_clock_free(clk);
}

/* TestResyncCheckPeriod: before start, a smaller handler period lowers the
 * informer's check period and the other listeners' effective periods
 * follow; zero stays zero. */
static void test_shared_informer_ResyncCheckPeriod(void **state) {
  (void)state;
  log_capture(1);
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 12 * 3600 * SEC);
  rec *r = rec_new();
  kin_listener *h1 = add_rec(inf, r, 0);
  assert_int_equal(kin_informer_resync_check_period(inf), 12 * 3600 * SEC);
  assert_int_equal(kin_listener_resync_period(h1), 0);

  kin_listener *h2 = add_rec(inf, r, 60 * SEC);
  assert_int_equal(kin_informer_resync_check_period(inf), 60 * SEC);
  assert_int_equal(kin_listener_resync_period(h1), 0);
  assert_int_equal(kin_listener_resync_period(h2), 60 * SEC);

  kin_listener *h3 = add_rec(inf, r, 55 * SEC);
  assert_int_equal(kin_informer_resync_check_period(inf), 55 * SEC);
  assert_int_equal(kin_listener_resync_period(h1), 0);
  assert_int_equal(kin_listener_resync_period(h2), 60 * SEC);
  assert_int_equal(kin_listener_resync_period(h3), 55 * SEC);

  kin_listener *h4 = add_rec(inf, r, 5 * SEC);
  assert_int_equal(kin_informer_resync_check_period(inf), 5 * SEC);
  assert_int_equal(kin_listener_resync_period(h1), 0);
  assert_int_equal(kin_listener_resync_period(h2), 60 * SEC);
  assert_int_equal(kin_listener_resync_period(h3), 55 * SEC);
  assert_int_equal(kin_listener_resync_period(h4), 5 * SEC);

  /* Below the 1 s minimum: raised to 1 s, which then lowers the check. */
  kin_listener *h5 = add_rec(inf, r, 100 * KIN_NSEC_PER_MSEC);
  assert_true(log_contains("raised to the minimum 1 s"));
  assert_int_equal(kin_informer_resync_check_period(inf), 1 * SEC);
  assert_int_equal(kin_listener_resync_period(h5), 1 * SEC);
  assert_int_equal(kin_listener_resync_period(h4), 5 * SEC);
  kin_informer_free(inf);

  /* An informer without resync (default 0) keeps its check period at 0:
   * handlers asking for one get none. */
  inf = new_informer(clk, 0);
  kin_listener *h6 = add_rec(inf, r, 10 * SEC);
  assert_int_equal(kin_informer_resync_check_period(inf), 0);
  assert_int_equal(kin_listener_resync_period(h6), 0);
  kin_informer_free(inf);
  rec_free(r);
  kin_fake_clock_free(clk);
  log_capture(0);
}

/* After start the check period is fixed: a smaller handler period is
 * raised to it instead of lowering it. */
static void test_shared_informer_ResyncCheckPeriodAfterStart(void **state) {
  (void)state;
  log_capture(1);
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 5 * SEC);
  rec *r = rec_new();
  assert_int_equal(kin_informer_run(inf), 0);
  kin_listener *a = add_rec(inf, r, 2 * SEC);
  assert_true(log_contains("raised to 5000 ms"));
  kin_listener *b = add_rec(inf, r, 300 * KIN_NSEC_PER_MSEC);
  kin_listener *c = add_rec(inf, r, 0);
  kin_listener *d = add_rec(inf, r, 10 * SEC);
  assert_int_equal(kin_informer_resync_check_period(inf), 5 * SEC);
  assert_int_equal(kin_listener_resync_period(a), 5 * SEC);
  assert_int_equal(kin_listener_resync_period(b), 5 * SEC);
  assert_int_equal(kin_listener_resync_period(c), 0);
  assert_int_equal(kin_listener_resync_period(d), 10 * SEC);
  kin_informer_free(inf);
  rec_free(r);
  kin_fake_clock_free(clk);
  log_capture(0);
}

/* TestSharedInformerWatchDisruption: changes missed while the watch was
 * down arrive with the relist (Replace): a changed object is an update for
 * everyone, a new one an add, a vanished one a delete with a tombstone,
 * and an unchanged one a resync update only for a listener due a resync. */
static void test_shared_informer_WatchDisruption(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 1 * SEC);
  rec *rn = rec_new(), *rr = rec_new();
  rec *all[] = {rn, rr};
  add_rec(inf, rn, 0);
  add_rec(inf, rr, 1 * SEC);
  assert_int_equal(kin_informer_run(inf), 0);
  relist(inf, "pod1:1,pod2:2,pod4:2");
  barrier(inf, all, 2);
  assert_string_equal(DUMP(rn, 0), "add ns/pod1 1 init\nadd ns/pod2 2 init\nadd ns/pod4 2 init");
  assert_string_equal(DUMP(rr, 0), "add ns/pod1 1 init\nadd ns/pod2 2 init\nadd ns/pod4 2 init");

  /* The check tick drops the no-resync listener from the syncing set. */
  size_t mr = rec_count(rr);
  wait_resync_idle(clk);
  kin_fake_clock_step(clk, 1 * SEC);
  KIN_EVENTUALLY(rec_count(rr) == mr + 3, 5000);
  barrier(inf, all, 2);

  size_t mn = rec_count(rn);
  mr = rec_count(rr);
  /* pod3 added and pod2 modified while disconnected, pod4 deleted. */
  relist(inf, "pod1:1,pod2:4,pod3:3");
  barrier(inf, all, 2);
  assert_string_equal(DUMP(rn, mn), "add ns/pod3 3\n"
                                    "delete ns/pod4 2 tomb\n"
                                    "update ns/pod2 2>4");
  assert_string_equal(DUMP(rr, mr), "add ns/pod3 3\n"
                                    "delete ns/pod4 2 tomb\n"
                                    "update ns/pod1 1>1\n"
                                    "update ns/pod2 2>4");
  char b[32];
  assert_string_equal(cached_rv(inf, "ns/pod1", b), "1");
  assert_string_equal(cached_rv(inf, "ns/pod2", b), "4");
  assert_string_equal(cached_rv(inf, "ns/pod3", b), "3");
  assert_string_equal(cached_rv(inf, "ns/pod4", b), "absent");
  assert_int_equal(kin_indexer_len(kin_informer_indexer(inf)), 3);
  kin_informer_free(inf);
  rec_free(rn);
  rec_free(rr);
  kin_fake_clock_free(clk);
}

/* An update from a relist whose resourceVersion is unchanged is a resync:
 * only listeners due one get it. A changed one goes to everyone. As in
 * client-go the rule is the resourceVersion alone, whatever the delta type. */
static void test_shared_informer_ReplacedUnchangedRvOnlyToResyncing(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 1 * SEC);
  rec *ra = rec_new(), *rb = rec_new();
  rec *all[] = {ra, rb};
  add_rec(inf, ra, 0);
  add_rec(inf, rb, 1 * SEC);
  assert_int_equal(kin_informer_run(inf), 0);
  relist(inf, "pod1:1");
  barrier(inf, all, 2);
  size_t mb = rec_count(rb);
  wait_resync_idle(clk);
  kin_fake_clock_step(clk, 1 * SEC); /* b due: syncing = {b} */
  KIN_EVENTUALLY(rec_count(rb) == mb + 1, 5000);
  barrier(inf, all, 2);
  rec_expect(rb, mb, "update ns/pod1 1>1");

  size_t ma = rec_count(ra);
  mb = rec_count(rb);
  relist(inf, "pod1:1,pod2:1");
  barrier(inf, all, 2);
  assert_string_equal(DUMP(ra, ma), "add ns/pod2 1");
  assert_string_equal(DUMP(rb, mb), "add ns/pod2 1\nupdate ns/pod1 1>1");

  ma = rec_count(ra);
  mb = rec_count(rb);
  relist(inf, "pod1:2,pod2:1");
  barrier(inf, all, 2);
  assert_string_equal(DUMP(ra, ma), "update ns/pod1 1>2");
  assert_string_equal(DUMP(rb, mb), "update ns/pod1 1>2\nupdate ns/pod2 1>1");

  ma = rec_count(ra);
  mb = rec_count(rb);
  /* as client-go's OnUpdate: any update with an unchanged resourceVersion
   * is a resync, also one from a watch Updated delta */
  fifo_op(inf, 'u', "pod2", "1");
  fifo_op(inf, 'u', "pod2", "2");
  barrier(inf, all, 2);
  assert_string_equal(DUMP(ra, ma), "update ns/pod2 1>2");
  assert_string_equal(DUMP(rb, mb), "update ns/pod2 1>1\nupdate ns/pod2 1>2");
  kin_informer_free(inf);
  rec_free(ra);
  rec_free(rb);
  kin_fake_clock_free(clk);
}

/* TestAddWhileActive: a handler added to a running informer first gets a
 * synthetic add (is_in_initial_list) for every cached object, then the
 * later events; its has_synced waits for those adds to be handled. */
static void test_shared_informer_AddWhileActive(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 0);
  rec *r1 = rec_new(), *r2 = rec_new();
  kin_listener *l1 = add_rec(inf, r1, 0);
  assert_int_equal(kin_informer_run(inf), 0);
  relist(inf, "pod1:1");
  assert_int_equal(kin_informer_wait_for_cache_sync(inf, 10 * SEC), 0);
  KIN_EVENTUALLY(kin_listener_has_synced(l1), 5000);

  rec_gate(r2, 1);
  kin_listener *l2 = add_rec(inf, r2, 0);
  assert_false(kin_listener_has_synced(l2));
  fifo_op(inf, 'a', "pod2", "1");
  KIN_EVENTUALLY(rec_entered(r2) == 1, 5000);
  assert_false(kin_listener_has_synced(l2)); /* synthetic add still in the handler */
  rec_gate(r2, 0);
  KIN_EVENTUALLY(kin_listener_has_synced(l2), 5000);
  KIN_EVENTUALLY(rec_count(r2) == 2 && rec_count(r1) == 2, 5000);
  rec_expect(r2, 0, "add ns/pod1 1 init");
  rec_expect(r2, 1, "add ns/pod2 1");
  rec_expect(r1, 0, "add ns/pod1 1 init");
  rec_expect(r1, 1, "add ns/pod2 1");
  barrier(inf, (rec *[]){r1, r2}, 2);
  assert_int_equal(rec_count(r2), 4); /* + the marker, nothing duplicated */
  kin_informer_free(inf);
  rec_free(r1);
  rec_free(r2);
  kin_fake_clock_free(clk);
}

/* TestRemoveWhileActive (+ TestRemovingRemovedSharedInformer,
 * TestSharedInformerRemoveForeignHandler): a removed handler gets nothing
 * more and its on_stop runs; removing twice, or through another informer,
 * is KIN_ENOENT. */
static void test_shared_informer_RemoveWhileActive(void **state) {
  (void)state;
  kin_informer *inf = new_informer(NULL, 0);
  rec *r1 = rec_new(), *r2 = rec_new();
  kin_listener *l1 = add_rec(inf, r1, 0);
  add_rec(inf, r2, 0);
  assert_int_equal(kin_informer_run(inf), 0);
  fifo_op(inf, 'a', "pod1", "1");
  KIN_EVENTUALLY(rec_count(r1) == 1, 5000);
  assert_int_equal(kin_informer_remove_handler(inf, l1), 0);
  pthread_mutex_lock(&r1->mu);
  assert_int_equal(r1->stop_calls, 1);
  pthread_mutex_unlock(&r1->mu);
  assert_int_equal(kin_informer_remove_handler(inf, l1), KIN_ENOENT);
  /* TestSharedInformerRemoveForeignHandler: another informer's handle. */
  kin_informer *other = new_informer(NULL, 0);
  kin_listener *l2 = add_rec(other, r2, 0);
  assert_int_equal(kin_informer_remove_handler(inf, l2), KIN_ENOENT);
  assert_int_equal(kin_informer_remove_handler(other, l2), 0);
  kin_informer_free(other);
  fifo_op(inf, 'a', "pod2", "1");
  barrier(inf, (rec *[]){r2}, 1);
  assert_true(rec_has(r2, "add ns/pod2 1"));
  assert_int_equal(rec_count(r1), 1);
  rec_expect(r1, 0, "add ns/pod1 1");
  kin_informer_free(inf);
  rec_free(r1);
  rec_free(r2);
}

/* EventPanics: a handler failing on one object (client-go: panicking) has
 * that notification logged with the key and skipped; the next ones and the
 * other handlers are unaffected. */
static void test_shared_informer_EventPanics(void **state) {
  (void)state;
  log_capture(1);
  kin_informer *inf = new_informer(NULL, 0);
  rec *bad = rec_new(), *good = rec_new();
  snprintf(bad->fail_key, sizeof(bad->fail_key), "ns/pod2");
  kin_listener *lb = add_rec(inf, bad, 0);
  kin_listener *lg = add_rec(inf, good, 0);
  assert_int_equal(kin_informer_run(inf), 0);
  relist(inf, "pod1:1,pod2:1,pod3:1");
  fifo_op(inf, 'u', "pod2", "2");
  fifo_op(inf, 'u', "pod3", "2");
  barrier(inf, (rec *[]){bad, good}, 2);
  const char *want = "add ns/pod1 1 init\nadd ns/pod2 1 init\nadd ns/pod3 1 init\n"
                     "update ns/pod2 1>2\nupdate ns/pod3 1>2";
  assert_string_equal(DUMP(bad, 0), want);
  assert_string_equal(DUMP(good, 0), want);
  kin_listener_stats sb, sg;
  kin_listener_get_stats(lb, &sb);
  kin_listener_get_stats(lg, &sg);
  assert_int_equal(sb.errors, 2);
  assert_int_equal(sg.errors, 0);
  assert_int_equal(sb.delivered, sg.delivered);
  assert_true(log_contains("add handler failed for ns/pod2"));
  assert_true(log_contains("update handler failed for ns/pod2"));
  assert_false(log_contains("failed for ns/pod3"));
  /* A failed initial add still counts as handled for HasSynced. */
  assert_true(kin_listener_has_synced(lb));
  kin_informer_free(inf);
  rec_free(bad);
  rec_free(good);
  log_capture(0);
}

/* TestAddOnStoppedSharedInformer / TestRemoveOnStoppedSharedInformer /
 * TestStateSharedInformer: a stopped informer refuses handlers and a
 * second run; handlers registered before stay removable. */
static void test_shared_informer_AddOnStoppedInformer(void **state) {
  (void)state;
  log_capture(1);
  kin_informer *inf = new_informer(NULL, 1 * SEC);
  rec *r = rec_new();
  kin_listener *l = add_rec(inf, r, 0);
  assert_int_equal(kin_informer_run(inf), 0);
  kin_informer_stop(inf);
  kin_informer_stop(inf); /* idempotent */
  kin_event_handler h = handler_for(r);
  kin_listener *l2 = NULL;
  assert_int_equal(kin_informer_add_handler(inf, &h, 0, &l2), KIN_ECLOSED);
  assert_null(l2);
  assert_true(log_contains("has stopped already"));
  assert_int_equal(kin_informer_run(inf), KIN_ECLOSED);
  kin_obj *x = mk("x", "1");
  assert_int_equal(kin_delta_fifo_add(kin_informer_fifo(inf), x), KIN_ECLOSED);
  kin_obj_unref(x);
  assert_int_equal(kin_informer_remove_handler(inf, l), 0);
  kin_informer_free(inf);

  /* Stopped without ever running. */
  inf = new_informer(NULL, 0);
  add_rec(inf, r, 0);
  kin_informer_stop(inf);
  assert_int_equal(kin_informer_add_handler(inf, &h, 0, &l2), KIN_ECLOSED);
  assert_int_equal(kin_informer_run(inf), KIN_ECLOSED);
  kin_informer_free(inf);
  pthread_mutex_lock(&r->mu);
  assert_int_equal(r->start_calls, 1); /* only the listener that ran */
  assert_int_equal(r->stop_calls, 1);
  pthread_mutex_unlock(&r->mu);
  rec_free(r);
  log_capture(0);
}

/* A handler that removes its own listener, or stops the informer, cannot
 * join its own thread, which goes on to call on_stop afterwards. Free, and
 * a later remove of that handler, must still wait for that thread: the
 * caller may free the handler's data as soon as they return. */
typedef struct {
  kin_informer *inf;
  kin_listener *self;
  int stop_informer; /* 1: stop the informer; 0: remove the own handler */
  int remove_after;  /* the test thread then removes the handler itself */
  int rc;
  atomic_int acted, stopped;
} self_stopper;

static int self_stop_add(void *ud, kin_obj *o, int initial) {
  self_stopper *s = ud;
  if (atomic_load(&s->acted)) return 0;
  if (s->stop_informer)
    kin_informer_stop(s->inf);
  else
    s->rc = kin_informer_remove_handler(s->inf, s->self);
  atomic_store(&s->acted, 1);
  return 0;
}

static void self_stop_on_stop(void *ud) {
  self_stopper *s = ud;
  kin_test_sleep_ms(50); /* a slow on_stop: widens the window, measures nothing */
  atomic_store(&s->stopped, 1);
}

static void test_shared_informer_FreeWaitsForSelfStoppedHandler(void **state) {
  (void)state;
  for (int mode = 0; mode < 3; mode++) {
    self_stopper *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    atomic_init(&s->acted, 0);
    atomic_init(&s->stopped, 0);
    s->stop_informer = mode >= 1;
    s->remove_after = mode == 2;
    s->rc = -1;
    s->inf = new_informer(NULL, 0);
    kin_event_handler h = {self_stop_add, NULL, NULL, NULL, self_stop_on_stop, s};
    assert_int_equal(kin_informer_add_handler(s->inf, &h, 0, &s->self), 0);
    assert_int_equal(kin_informer_run(s->inf), 0);
    fifo_op(s->inf, 'a', "pod1", "1");
    KIN_EVENTUALLY(atomic_load(&s->acted), 5000);
    if (s->remove_after) {
      assert_int_equal(kin_informer_remove_handler(s->inf, s->self), 0);
      assert_int_equal(atomic_load(&s->stopped), 1);
    }
    kin_informer_free(s->inf);
    /* No listener thread of the informer may still run. */
    assert_int_equal(atomic_load(&s->stopped), 1);
    if (mode == 0) assert_int_equal(s->rc, 0);
    free(s);
  }
}

/* A resync period of KIN_FOREVER (on the informer and on the handler)
 * means never: the check deadline must saturate rather than wrap into the
 * past, which would resync in a busy loop. */
static void test_shared_informer_ResyncForeverNeverResyncs(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, KIN_FOREVER);
  rec *r = rec_new();
  kin_listener *l = add_rec(inf, r, KIN_FOREVER);
  assert_int_equal(kin_informer_resync_check_period(inf), KIN_FOREVER);
  assert_int_equal(kin_listener_resync_period(l), KIN_FOREVER);
  assert_int_equal(kin_informer_run(inf), 0);
  relist(inf, "pod1:1");
  barrier(inf, (rec *[]){r}, 1);
  kin_fake_clock_step(clk, 3600 * SEC);
  barrier(inf, (rec *[]){r}, 1);
  kin_fake_clock_step(clk, 3600 * SEC);
  barrier(inf, (rec *[]){r}, 1);
  assert_string_equal(DUMP(r, 0), "add ns/pod1 1 init");
  kin_informer_free(inf);
  rec_free(r);
  kin_fake_clock_free(clk);
}

typedef struct {
  kin_informer *inf;
  uint64_t timeout;
  atomic_int done;
  int rc;
} waiter;

static void *wait_thread(void *arg) {
  waiter *w = arg;
  int rc = kin_informer_wait_for_cache_sync(w->inf, w->timeout);
  w->rc = rc;
  atomic_store(&w->done, 1);
  return NULL;
}

/* WaitForCacheSync: times out on the informer's clock, returns once the
 * FIFO synced (even when that needed no pop), KIN_ECLOSED when stopped. */
static void test_shared_informer_WaitForCacheSync(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 0);
  assert_false(kin_informer_has_synced(inf));
  assert_int_equal(kin_informer_run(inf), 0);
  waiter w = {.inf = inf, .timeout = 5 * SEC};
  atomic_init(&w.done, 0);
  pthread_t t;
  pthread_create(&t, NULL, wait_thread, &w);
  /* Step until the waiter, whenever it started, sees its deadline pass. */
  KIN_EVENTUALLY((kin_fake_clock_step(clk, 5 * SEC), atomic_load(&w.done)), 5000);
  pthread_join(t, NULL);
  assert_int_equal(w.rc, KIN_ETIMEDOUT);
  assert_false(kin_informer_has_synced(inf));

  relist(inf, ""); /* an empty list syncs without anything to pop */
  assert_int_equal(kin_informer_wait_for_cache_sync(inf, 3600 * SEC), 0);
  assert_true(kin_informer_has_synced(inf));
  kin_informer_free(inf);

  inf = new_informer(clk, 0);
  waiter w2 = {.inf = inf, .timeout = 3600 * SEC};
  atomic_init(&w2.done, 0);
  pthread_create(&t, NULL, wait_thread, &w2);
  kin_informer_stop(inf);
  pthread_join(t, NULL);
  assert_int_equal(w2.rc, KIN_ECLOSED);
  kin_informer_free(inf);
  kin_fake_clock_free(clk);
}

/* ---- concurrency -------------------------------------------------------- */

static int count_event(void *ud) {
  atomic_fetch_add((atomic_long *)ud, 1);
  return 0;
}
static int cnt_add(void *ud, kin_obj *o, int i) { return count_event(ud); }
static int cnt_update(void *ud, kin_obj *a, kin_obj *b) { return count_event(ud); }
static int cnt_delete(void *ud, kin_obj *o) { return count_event(ud); }

typedef struct {
  kin_informer *inf;
  atomic_long *events;
  unsigned seed;
  int saw_closed, failures, adds, removes;
} abuser;

/* Adds and removes handlers at random until the informer refuses them,
 * then removes what it still holds. */
static void *abuse_thread(void *arg) {
  abuser *a = arg;
  kin_listener *held[16];
  int n = 0;
  kin_event_handler h = {cnt_add, cnt_update, cnt_delete, NULL, NULL, a->events};
  for (;;) {
    if (n < 16 && (n == 0 || rand_r(&a->seed) % 2 == 0)) {
      kin_listener *l = NULL;
      int rc = kin_informer_add_handler(a->inf, &h, 1 * SEC, &l);
      if (rc == KIN_ECLOSED) {
        a->saw_closed = 1;
        break;
      }
      if (rc != 0) a->failures++;
      else held[n++] = l, a->adds++;
    } else {
      int i = (int)(rand_r(&a->seed) % (unsigned)n);
      if (kin_informer_remove_handler(a->inf, held[i]) != 0) a->failures++;
      a->removes++;
      held[i] = held[--n];
    }
  }
  while (n > 0) {
    if (kin_informer_remove_handler(a->inf, held[--n]) != 0) a->failures++;
    a->removes++;
  }
  return NULL;
}

/* TestSharedInformerHandlerAbuse: threads keep adding and removing
 * handlers while events flow and while the informer stops; run under
 * TSan. Afterwards every add was matched by a successful remove. */
static void test_shared_informer_HandlerAbuse(void **state) {
  (void)state;
  log_capture(1);
  kin_informer *inf = new_informer(NULL, 1 * SEC);
  atomic_long events;
  atomic_init(&events, 0);
  assert_int_equal(kin_informer_run(inf), 0);
  enum { NT = 4 };
  abuser ab[NT];
  pthread_t t[NT];
  for (int i = 0; i < NT; i++) {
    ab[i] = (abuser){.inf = inf, .events = &events, .seed = 17u + (unsigned)i};
    pthread_create(&t[i], NULL, abuse_thread, &ab[i]);
  }
  unsigned seed = 5;
  int present[40] = {0};
  for (int i = 0; i < 3000; i++) {
    int k = (int)(rand_r(&seed) % 40);
    char name[16], rv[16];
    snprintf(name, sizeof(name), "pod%d", k);
    snprintf(rv, sizeof(rv), "%d", i + 1);
    if (!present[k]) fifo_op(inf, 'a', name, rv), present[k] = 1;
    else if (rand_r(&seed) % 3) fifo_op(inf, 'u', name, rv);
    else fifo_op(inf, 'd', name, rv), present[k] = 0;
  }
  /* On a loaded machine the abusers may not have run yet: the stop must
   * come while they are active, so wait until some handler got an event
   * (a late handler gets synthetic adds for the cache). */
  KIN_EVENTUALLY(atomic_load(&events) > 0, 10000);
  kin_informer_stop(inf);
  int adds = 0;
  for (int i = 0; i < NT; i++) {
    pthread_join(t[i], NULL);
    assert_true(ab[i].saw_closed);
    assert_int_equal(ab[i].failures, 0);
    assert_int_equal(ab[i].adds, ab[i].removes);
    adds += ab[i].adds;
  }
  assert_true(adds > 0);
  assert_true(atomic_load(&events) > 0);
  kin_informer_free(inf);
  log_capture(0);
}

/* ---- hammer ------------------------------------------------------------- */

enum { HP = 4, HK = 16, HOPS = 400 };

/* What one listener believes, rebuilt from its notifications; every
 * impossible transition is a violation. */
typedef struct {
  pthread_mutex_t mu; /* guards the fields below */
  int present[HP][HK];
  long rv[HP][HK];
  int violations;
  long events;
  char last_violation[160];
} view;

static int parse_key(const char *key, int *p, int *k) {
  return sscanf(key, "ns/h%d_%d", p, k) == 2 && *p >= 0 && *p < HP && *k >= 0 && *k < HK;
}

static void violation(view *v, const char *what, const char *key) {
  v->violations++;
  snprintf(v->last_violation, sizeof(v->last_violation), "%s %s", what, key);
}

static int v_add(void *ud, kin_obj *o, int initial) {
  view *v = ud;
  int p, k;
  if (!parse_key(kin_obj_key(o), &p, &k)) return 0; /* the marker */
  pthread_mutex_lock(&v->mu);
  v->events++;
  if (v->present[p][k]) violation(v, "add of present", kin_obj_key(o));
  v->present[p][k] = 1;
  v->rv[p][k] = atol(kin_obj_resource_version(o));
  pthread_mutex_unlock(&v->mu);
  return 0;
}

static int v_update(void *ud, kin_obj *old, kin_obj *o) {
  view *v = ud;
  int p, k;
  if (!parse_key(kin_obj_key(o), &p, &k)) return 0;
  long orv = atol(kin_obj_resource_version(old)), nrv = atol(kin_obj_resource_version(o));
  pthread_mutex_lock(&v->mu);
  v->events++;
  if (!v->present[p][k]) violation(v, "update of absent", kin_obj_key(o));
  else if (v->rv[p][k] != orv) violation(v, "update from a state not seen", kin_obj_key(o));
  if (nrv < orv) violation(v, "update going back", kin_obj_key(o));
  v->rv[p][k] = nrv;
  pthread_mutex_unlock(&v->mu);
  return 0;
}

static int v_delete(void *ud, kin_obj *o) {
  view *v = ud;
  int p, k;
  if (!parse_key(kin_obj_key(o), &p, &k)) return 0;
  pthread_mutex_lock(&v->mu);
  v->events++;
  if (!v->present[p][k]) violation(v, "delete of absent", kin_obj_key(o));
  v->present[p][k] = 0;
  pthread_mutex_unlock(&v->mu);
  return 0;
}

typedef struct {
  kin_informer *inf;
  int id;
  int present[HK];
  long rv[HK];
  atomic_int *done;
} hammer_producer;

/* Random add/update/delete of its own keys; the resourceVersion of a key
 * grows with each operation, as on a real server. */
static void *hammer_thread(void *arg) {
  hammer_producer *h = arg;
  unsigned seed = 1234u + (unsigned)h->id;
  kin_delta_fifo *f = kin_informer_fifo(h->inf);
  for (int i = 0; i < HOPS; i++) {
    int k = (int)(rand_r(&seed) % HK);
    char json[200];
    long rv = ++h->rv[k];
    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"h%d_%d\",\"namespace\":\"ns\",\"resourceVersion\":\"%ld\"}}",
             h->id, k, rv);
    kin_obj *o = NULL;
    if (kin_obj_parse(json, strlen(json), &o) != 0) continue;
    if (!h->present[k]) {
      kin_delta_fifo_add(f, o);
      h->present[k] = 1;
    } else if (rand_r(&seed) % 4) {
      kin_delta_fifo_update(f, o);
    } else {
      kin_delta_fifo_delete(f, o);
      h->present[k] = 0;
    }
    kin_obj_unref(o);
  }
  atomic_fetch_add(h->done, 1);
  return NULL;
}

/* TestHammerController: producers race through the FIFO while the
 * informer runs, resyncs tick and a handler joins late. At the end the
 * cache equals the producers' final state, and every listener saw, per
 * key, a consistent sequence (add only when absent, update from the state
 * it last saw, delete only when present) ending in that same state. */
static void test_shared_informer_HammerController(void **state) {
  (void)state;
  kin_clock *clk = kin_fake_clock_new(T0);
  kin_informer *inf = new_informer(clk, 1 * SEC);
  view views[3];
  kin_listener *ls[3];
  memset(views, 0, sizeof(views));
  for (int i = 0; i < 3; i++) pthread_mutex_init(&views[i].mu, NULL);
  kin_event_handler h0 = {v_add, v_update, v_delete, NULL, NULL, &views[0]};
  kin_event_handler h1 = {v_add, v_update, v_delete, NULL, NULL, &views[1]};
  kin_event_handler h2 = {v_add, v_update, v_delete, NULL, NULL, &views[2]};
  assert_int_equal(kin_informer_add_handler(inf, &h0, 0, &ls[0]), 0);
  assert_int_equal(kin_informer_add_handler(inf, &h1, 1 * SEC, &ls[1]), 0);
  assert_int_equal(kin_informer_run(inf), 0);

  atomic_int done;
  atomic_init(&done, 0);
  hammer_producer prod[HP];
  pthread_t t[HP];
  for (int i = 0; i < HP; i++) {
    memset(&prod[i], 0, sizeof(prod[i]));
    prod[i].inf = inf;
    prod[i].id = i;
    prod[i].done = &done;
    pthread_create(&t[i], NULL, hammer_thread, &prod[i]);
  }
  /* Resync ticks while producing; the late handler joins midway. */
  int joined = 0, steps = 0;
  while (atomic_load(&done) < HP || !joined || steps < 3) {
    if (kin_fake_clock_waiters(clk) == 1) {
      kin_fake_clock_step(clk, 1 * SEC);
      steps++;
    }
    if (!joined && (steps >= 3 || atomic_load(&done) == HP)) {
      assert_int_equal(kin_informer_add_handler(inf, &h2, 1 * SEC, &ls[2]), 0);
      joined = 1;
    }
    kin_test_sleep_ms(1);
  }
  for (int i = 0; i < HP; i++) pthread_join(t[i], NULL);
  wait_resync_idle(clk);

  /* Marker barrier, with a handler that only watches for it. */
  rec *mr = rec_new();
  add_rec(inf, mr, 0);
  barrier(inf, (rec *[]){mr}, 1);
  /* mr was added after every event: the others have been handed them all
   * once their queues are empty. */
  for (int i = 0; i < 3; i++) {
    KIN_EVENTUALLY(stat_pending(ls[i]) == 0, 10000);
    assert_true(kin_listener_has_synced(ls[i]));
  }

  kin_indexer *idx = kin_informer_indexer(inf);
  size_t present = 0;
  for (int p = 0; p < HP; p++)
    for (int k = 0; k < HK; k++) {
      char key[32];
      snprintf(key, sizeof(key), "ns/h%d_%d", p, k);
      kin_obj *o = kin_indexer_get(idx, key);
      assert_int_equal(o != NULL, prod[p].present[k]);
      if (o) {
        present++;
        assert_int_equal(atol(kin_obj_resource_version(o)), prod[p].rv[k]);
        kin_obj_unref(o);
      }
      for (int i = 0; i < 3; i++) {
        pthread_mutex_lock(&views[i].mu);
        int vp = views[i].present[p][k];
        long vrv = views[i].rv[p][k];
        pthread_mutex_unlock(&views[i].mu);
        assert_int_equal(vp, prod[p].present[k]);
        if (vp) assert_int_equal(vrv, prod[p].rv[k]);
      }
    }
  assert_int_equal(kin_indexer_len(idx), present);
  for (int i = 0; i < 3; i++) {
    pthread_mutex_lock(&views[i].mu);
    int viol = views[i].violations;
    char last[160];
    snprintf(last, sizeof(last), "%s", views[i].last_violation);
    long ev = views[i].events;
    pthread_mutex_unlock(&views[i].mu);
    if (viol) fail_msg("listener %d: %d violations, last: %s", i, viol, last);
    assert_true(ev > 0);
  }
  assert_true(steps > 0);
  kin_informer_free(inf);
  for (int i = 0; i < 3; i++) pthread_mutex_destroy(&views[i].mu);
  rec_free(mr);
  kin_fake_clock_free(clk);
}

KIN_SUITE(shared_informer, cmocka_unit_test(test_shared_informer_ListenerResyncPeriods),
          cmocka_unit_test(test_shared_informer_ResyncCheckPeriod),
          cmocka_unit_test(test_shared_informer_ResyncCheckPeriodAfterStart),
          cmocka_unit_test(test_shared_informer_WatchDisruption),
          cmocka_unit_test(test_shared_informer_ReplacedUnchangedRvOnlyToResyncing),
          cmocka_unit_test(test_shared_informer_AddWhileActive),
          cmocka_unit_test(test_shared_informer_RemoveWhileActive),
          cmocka_unit_test(test_shared_informer_EventPanics),
          cmocka_unit_test(test_shared_informer_AddOnStoppedInformer),
          cmocka_unit_test(test_shared_informer_WaitForCacheSync),
          cmocka_unit_test(test_shared_informer_FreeWaitsForSelfStoppedHandler),
          cmocka_unit_test(test_shared_informer_ResyncForeverNeverResyncs),
          cmocka_unit_test(test_shared_informer_HandlerAbuse),
          cmocka_unit_test(test_shared_informer_HammerController))
