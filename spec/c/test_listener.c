/* test_listener.c -- processorListener, its ring buffer and the
 * sharedProcessor (client-go tools/cache/shared_informer.go; the ring is
 * k8s.io/utils buffer.RingGrowing). Ports the listener parts of
 * shared_informer_test.go plus the behaviours client-go tests only through
 * the informer: growth past the initial 1024 slots, in-order delivery, a
 * failing handler skipping one item, resync scheduling, HasSynced. */
#include "kin_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kin.h"
#include "kobj.h"
#include "listener.h"
#include "log.h"
#include "processor.h"
#include "ring_buffer.h"

#include "handler_rec.h"

#define SEC KIN_NSEC_PER_SEC

/* ---- helpers ------------------------------------------------------------ */

static int upstream(void *ud) { return atomic_load((atomic_int *)ud); }

static kin_listener *new_listener(rec *r, uint64_t resync, uint64_t now, atomic_int *synced) {
  kin_event_handler h = handler_for(r);
  kin_listener *l = NULL;
  assert_int_equal(kin__listener_new(&h, resync, resync, now, synced ? upstream : NULL, synced,
                                     NULL, "test", &l),
                   0);
  return l;
}

static void add_note(kin_listener *l, const char *name, const char *rv, int initial) {
  kin_obj *o = mk(name, rv);
  kin__note n = {.type = KIN__NOTE_ADD, .is_in_initial_list = initial, .new_obj = o};
  kin__listener_add(l, &n);
  kin_obj_unref(o);
}

static uint64_t delivered(kin_listener *l) {
  kin_listener_stats st;
  kin_listener_get_stats(l, &st);
  return st.delivered;
}

static void free_listener(kin_listener *l) {
  kin__listener_stop(l);
  kin__listener_unref(l);
}

/* ---- ring buffer -------------------------------------------------------- */

/* buffer.RingGrowing: writes never fail for lack of room; the capacity
 * doubles, and growth while the contents wrap keeps FIFO order. */
static void test_listener_RingGrowing(void **state) {
  (void)state;
  kin__ring r;
  assert_int_equal(kin__ring_init(&r, KIN_LISTENER_INITIAL_BUFFER), 0);
  assert_int_equal(kin__ring_cap(&r), 1024);
  int next_w = 0, next_r = 0;
  kin__note n = {0};
  for (; next_w < 600; next_w++) {
    n.is_in_initial_list = next_w;
    assert_int_equal(kin__ring_write(&r, &n), 0);
  }
  for (; next_r < 300; next_r++) {
    assert_int_equal(kin__ring_read(&r, &n), 1);
    assert_int_equal(n.is_in_initial_list, next_r);
  }
  /* head is now at 300: the next 724 writes wrap, then growth unrolls. */
  for (; next_w < 600 + 2700; next_w++) {
    n.is_in_initial_list = next_w;
    assert_int_equal(kin__ring_write(&r, &n), 0);
    if (kin__ring_len(&r) == 1024) assert_int_equal(kin__ring_cap(&r), 1024);
    if (kin__ring_len(&r) == 1025) assert_int_equal(kin__ring_cap(&r), 2048);
  }
  assert_int_equal(kin__ring_len(&r), 3000);
  assert_int_equal(kin__ring_cap(&r), 4096);
  while (kin__ring_read(&r, &n)) {
    assert_int_equal(n.is_in_initial_list, next_r);
    next_r++;
  }
  assert_int_equal(next_r, next_w);
  assert_int_equal(kin__ring_read(&r, &n), 0);
  kin__ring_free(&r);
}

/* A stalled handler never blocks add: 1500 notifications queue behind it,
 * the buffer grows past 1024, and all are delivered in order afterwards. */
static void test_listener_BufferGrowsPastInitialCapacity(void **state) {
  (void)state;
  rec *r = rec_new();
  kin_listener *l = new_listener(r, 0, 0, NULL);
  rec_gate(r, 1);
  assert_int_equal(kin__listener_start(l), 0);
  add_note(l, "p0", "1", 0);
  KIN_EVENTUALLY(rec_entered(r) == 1, 5000);
  char name[32];
  for (int i = 1; i <= 1500; i++) {
    snprintf(name, sizeof(name), "p%d", i);
    add_note(l, name, "1", 0);
  }
  kin_listener_stats st;
  kin_listener_get_stats(l, &st);
  assert_int_equal(st.pending, 1501); /* 1500 queued + 1 in the handler */
  assert_int_equal(st.buffer_cap, 2048);
  assert_int_equal(st.delivered, 0);
  rec_gate(r, 0);
  KIN_EVENTUALLY(delivered(l) == 1501, 10000);
  for (int i = 0; i <= 1500; i++) {
    char want[64];
    snprintf(want, sizeof(want), "add ns/p%d 1", i);
    rec_expect(r, (size_t)i, want);
  }
  kin_listener_get_stats(l, &st);
  assert_int_equal(st.pending, 0);
  free_listener(l);
  rec_free(r);
}

typedef struct {
  kin_listener *l;
} producer_arg;

/* Adds, updates and deletes on three keys in a fixed pattern. */
static void *producer(void *arg) {
  producer_arg *a = arg;
  for (int i = 0; i < 300; i++) {
    char name[16], rv[16], prv[16];
    snprintf(name, sizeof(name), "k%d", i % 3);
    snprintf(rv, sizeof(rv), "%d", i);
    snprintf(prv, sizeof(prv), "%d", i - 1);
    kin_obj *o = mk(name, rv), *old = mk(name, prv);
    kin__note n = {0};
    switch (i % 4) {
    case 0: n.type = KIN__NOTE_ADD; n.new_obj = o; break;
    case 1: case 2: n.type = KIN__NOTE_UPDATE; n.old_obj = old; n.new_obj = o; break;
    default: n.type = KIN__NOTE_DELETE; n.old_obj = o; break;
    }
    kin__listener_add(a->l, &n);
    kin_obj_unref(o);
    kin_obj_unref(old);
  }
  return NULL;
}

/* Notifications reach the handler one at a time, in the order added, while
 * the producer and the listener thread run concurrently. */
static void test_listener_InOrderDelivery(void **state) {
  (void)state;
  rec *r = rec_new();
  kin_listener *l = new_listener(r, 0, 0, NULL);
  assert_int_equal(kin__listener_start(l), 0);
  producer_arg a = {l};
  pthread_t t;
  pthread_create(&t, NULL, producer, &a);
  pthread_join(t, NULL);
  KIN_EVENTUALLY(delivered(l) == 300, 10000);
  for (int i = 0; i < 300; i++) {
    char want[64];
    switch (i % 4) {
    case 0: snprintf(want, sizeof(want), "add ns/k%d %d", i % 3, i); break;
    case 1: case 2: snprintf(want, sizeof(want), "update ns/k%d %d>%d", i % 3, i - 1, i); break;
    default: snprintf(want, sizeof(want), "delete ns/k%d %d", i % 3, i); break;
    }
    rec_expect(r, (size_t)i, want);
  }
  free_listener(l);
  rec_free(r);
}

/* client-go recovers a panicking handler and skips the item; here a
 * non-zero return is logged with the object's key and only that item is
 * skipped: the next ones are delivered. */
static void test_listener_HandlerErrorSkipsOnlyThatItem(void **state) {
  (void)state;
  log_capture(1);
  rec *r = rec_new();
  snprintf(r->fail_key, sizeof(r->fail_key), "ns/b");
  kin_listener *l = new_listener(r, 0, 0, NULL);
  assert_int_equal(kin__listener_start(l), 0);
  add_note(l, "a", "1", 0);
  add_note(l, "b", "1", 0);
  add_note(l, "c", "1", 0);
  KIN_EVENTUALLY(delivered(l) == 3, 5000);
  rec_expect(r, 0, "add ns/a 1");
  rec_expect(r, 1, "add ns/b 1");
  rec_expect(r, 2, "add ns/c 1");
  kin_listener_stats st;
  kin_listener_get_stats(l, &st);
  assert_int_equal(st.errors, 1);
  assert_true(log_contains("add handler failed for ns/b"));
  assert_false(log_contains("ns/a"));
  free_listener(l);
  rec_free(r);
  log_capture(0);
}

/* shouldResync / determineNextResync / setResyncPeriod and
 * determineResyncPeriod. */
static void test_listener_ResyncScheduling(void **state) {
  (void)state;
  rec *r = rec_new();
  uint64_t t0 = 1000 * SEC;
  kin_listener *l = new_listener(r, 2 * SEC, t0, NULL);
  assert_false(kin__listener_should_resync(l, t0));
  assert_false(kin__listener_should_resync(l, t0 + 2 * SEC - 1));
  assert_true(kin__listener_should_resync(l, t0 + 2 * SEC)); /* due exactly at next */
  assert_true(kin__listener_should_resync(l, t0 + 3 * SEC));
  kin__listener_determine_next_resync(l, t0 + 3 * SEC);
  assert_false(kin__listener_should_resync(l, t0 + 4 * SEC));
  assert_true(kin__listener_should_resync(l, t0 + 5 * SEC));
  kin__listener_set_resync_period(l, 0); /* 0: never */
  assert_false(kin__listener_should_resync(l, t0 + 100 * SEC));
  assert_int_equal(kin_listener_resync_period(l), 0);
  assert_int_equal(kin__listener_requested_resync_period(l), 2 * SEC);
  free_listener(l);

  log_capture(1);
  assert_int_equal(kin__determine_resync_period(0, 5 * SEC), 0);
  assert_int_equal(kin__determine_resync_period(3 * SEC, 0), 0);
  assert_true(log_contains("does not resync"));
  assert_int_equal(kin__determine_resync_period(3 * SEC, 5 * SEC), 5 * SEC);
  assert_true(log_contains("raised to the resync check period 5000 ms"));
  assert_int_equal(kin__determine_resync_period(7 * SEC, 5 * SEC), 7 * SEC);
  log_capture(0);
  rec_free(r);
}

/* SingleFileTracker: synced once upstream is synced and every initial-list
 * notification was handled (a failing one included). */
static void test_listener_HasSynced(void **state) {
  (void)state;
  log_capture(1);
  rec *r = rec_new();
  snprintf(r->fail_key, sizeof(r->fail_key), "ns/b");
  atomic_int up;
  atomic_init(&up, 0);
  kin_listener *l = new_listener(r, 0, 0, &up);
  assert_false(kin_listener_has_synced(l));
  rec_gate(r, 1);
  assert_int_equal(kin__listener_start(l), 0);
  add_note(l, "a", "1", 1);
  add_note(l, "b", "1", 1);
  add_note(l, "c", "1", 0);
  assert_false(kin_listener_has_synced(l));
  atomic_store(&up, 1);
  assert_false(kin_listener_has_synced(l)); /* upstream synced, 2 initial pending */
  rec_gate(r, 0);
  KIN_EVENTUALLY(kin_listener_has_synced(l), 5000);
  KIN_EVENTUALLY(delivered(l) == 3, 5000);
  rec_expect(r, 0, "add ns/a 1 init");
  rec_expect(r, 1, "add ns/b 1 init");
  atomic_store(&up, 0); /* upstream is asked first, every time */
  assert_false(kin_listener_has_synced(l));
  free_listener(l);
  rec_free(r);
  log_capture(0);
}

/* on_start runs on the listener thread before the first delivery, on_stop
 * on the same thread after the last. */
static void test_listener_OnStartOnStopRunOnListenerThread(void **state) {
  (void)state;
  rec *r = rec_new();
  kin_listener *l = new_listener(r, 0, 0, NULL);
  add_note(l, "a", "1", 0); /* queued before the thread exists */
  assert_int_equal(kin__listener_start(l), 0);
  KIN_EVENTUALLY(delivered(l) == 1, 5000);
  kin__listener_stop(l);
  pthread_mutex_lock(&r->mu);
  assert_int_equal(r->start_calls, 1);
  assert_int_equal(r->stop_calls, 1);
  assert_true(pthread_equal(r->start_thr, r->handler_thr));
  assert_true(pthread_equal(r->stop_thr, r->handler_thr));
  assert_false(pthread_equal(r->handler_thr, pthread_self()));
  pthread_mutex_unlock(&r->mu);
  kin__listener_unref(l);
  rec_free(r);
}

/* An on_start failure aborts the listener: nothing is delivered. */
static void test_listener_OnStartFailureAborts(void **state) {
  (void)state;
  log_capture(1);
  rec *r = rec_new();
  r->start_rc = -5;
  kin_listener *l = new_listener(r, 0, 0, NULL);
  add_note(l, "a", "1", 0);
  assert_int_equal(kin__listener_start(l), 0);
  KIN_EVENTUALLY(log_contains("on_start failed"), 5000);
  add_note(l, "b", "1", 0);
  kin__listener_stop(l);
  assert_int_equal(rec_count(r), 0);
  assert_int_equal(delivered(l), 0);
  pthread_mutex_lock(&r->mu);
  assert_int_equal(r->stop_calls, 0);
  pthread_mutex_unlock(&r->mu);
  kin__listener_unref(l);
  rec_free(r);
  log_capture(0);
}

/* An aborted listener drops its queued notes, initial ones included, as
 * if each were handled and skipped: its HasSynced must not depend on
 * whether the initial notes arrived before or after on_start failed (a
 * note added after the failure is dropped uncounted). */
static void test_listener_OnStartFailureCountsDroppedInitialNotes(void **state) {
  (void)state;
  log_capture(1);
  rec *r = rec_new();
  r->start_rc = -5;
  atomic_int up;
  atomic_init(&up, 1);
  kin_listener *l = new_listener(r, 0, 0, &up);
  add_note(l, "a", "1", 1); /* queued before the thread runs on_start */
  assert_false(kin_listener_has_synced(l));
  assert_int_equal(kin__listener_start(l), 0);
  kin__listener_stop(l); /* joined: on_start failed and the ring was dropped */
  assert_true(log_contains("on_start failed"));
  add_note(l, "b", "1", 1); /* after the abort */
  assert_int_equal(rec_count(r), 0);
  assert_true(kin_listener_has_synced(l));
  kin__listener_unref(l);
  rec_free(r);
  log_capture(0);
}

/* A resync period of KIN_FOREVER means "never": next = now + period must
 * saturate instead of wrapping to a time already past (which would make
 * the listener due at every check). */
static void test_listener_ResyncPeriodForeverNeverDue(void **state) {
  (void)state;
  rec *r = rec_new();
  uint64_t t0 = 1000 * SEC;
  kin_listener *l = new_listener(r, KIN_FOREVER, t0, NULL);
  assert_false(kin__listener_should_resync(l, t0));
  assert_false(kin__listener_should_resync(l, t0 + 3600 * SEC));
  kin__listener_determine_next_resync(l, t0 + 3600 * SEC);
  assert_false(kin__listener_should_resync(l, t0 + 7200 * SEC));
  assert_false(kin__listener_should_resync(l, KIN_FOREVER - 1));
  free_listener(l);
  rec_free(r);
}

/* Stopping finishes the notification in the handler and drops the queued
 * rest, as closing addCh does in client-go. */
static void test_listener_StopDropsPending(void **state) {
  (void)state;
  rec *r = rec_new();
  kin_listener *l = new_listener(r, 0, 0, NULL);
  rec_gate(r, 1);
  assert_int_equal(kin__listener_start(l), 0);
  add_note(l, "a", "1", 0);
  add_note(l, "b", "1", 0);
  add_note(l, "c", "1", 0);
  KIN_EVENTUALLY(rec_entered(r) == 1, 5000);
  kin__listener_request_stop(l);
  add_note(l, "d", "1", 0); /* after stop: dropped */
  rec_gate(r, 0);
  kin__listener_stop(l);
  assert_int_equal(rec_count(r), 1);
  rec_expect(r, 0, "add ns/a 1");
  pthread_mutex_lock(&r->mu);
  assert_int_equal(r->stop_calls, 1);
  pthread_mutex_unlock(&r->mu);
  assert_int_equal(kin__listener_start(l), KIN_ECLOSED);
  kin__listener_unref(l);
  rec_free(r);
}

/* ---- processor ---------------------------------------------------------- */

static void distribute_update(kin__processor *p, const char *name, const char *rv, int is_sync) {
  kin_obj *o = mk(name, rv);
  kin__note n = {.type = KIN__NOTE_UPDATE, .old_obj = o, .new_obj = o};
  kin__processor_distribute(p, &n, is_sync);
  kin_obj_unref(o);
}

static void distribute_add(kin__processor *p, const char *name) {
  kin_obj *o = mk(name, "1");
  kin__note n = {.type = KIN__NOTE_ADD, .new_obj = o};
  kin__processor_distribute(p, &n, 0);
  kin_obj_unref(o);
}

/* sharedProcessor.distribute / shouldResync: sync notifications go only to
 * listeners due a resync (all of them until the first shouldResync), the
 * others to everyone; a due listener is rescheduled from now. */
static void test_listener_ProcessorDistributeSync(void **state) {
  (void)state;
  uint64_t t0 = 1000 * SEC;
  kin_clock *clk = kin_fake_clock_new(t0);
  kin__processor p;
  assert_int_equal(kin__processor_init(&p, clk), 0);
  rec *r0 = rec_new(), *r1 = rec_new(), *r2 = rec_new();
  kin_listener *l0 = new_listener(r0, 0, t0, NULL);
  kin_listener *l1 = new_listener(r1, 1 * SEC, t0, NULL);
  kin_listener *l2 = new_listener(r2, 2 * SEC, t0, NULL);
  assert_int_equal(kin__processor_add_listener(&p, l0), 0);
  assert_int_equal(kin__processor_add_listener(&p, l1), 0);
  assert_int_equal(kin__processor_add_listener(&p, l2), 0);
  assert_int_equal(kin__processor_run(&p), 0);

  distribute_update(&p, "s0", "1", 1); /* initial syncing set: everyone */
  KIN_EVENTUALLY(delivered(l0) == 1 && delivered(l1) == 1 && delivered(l2) == 1, 5000);

  assert_false(kin__processor_should_resync(&p)); /* t0: nobody due */
  distribute_update(&p, "s1", "1", 1);
  distribute_add(&p, "m1"); /* non-sync: everyone; also a marker */
  KIN_EVENTUALLY(delivered(l0) == 2 && delivered(l1) == 2 && delivered(l2) == 2, 5000);
  rec_expect(r0, 1, "add ns/m1 1");
  rec_expect(r1, 1, "add ns/m1 1");
  rec_expect(r2, 1, "add ns/m1 1");

  kin_fake_clock_step(clk, 1 * SEC);
  assert_true(kin__processor_should_resync(&p)); /* l1 due */
  distribute_update(&p, "s2", "1", 1);
  distribute_add(&p, "m2");
  KIN_EVENTUALLY(delivered(l0) == 3 && delivered(l1) == 4 && delivered(l2) == 3, 5000);
  rec_expect(r1, 2, "update ns/s2 1>1");
  rec_expect(r0, 2, "add ns/m2 1");
  rec_expect(r2, 2, "add ns/m2 1");

  kin_fake_clock_step(clk, 1 * SEC); /* t0+2: l1 (rescheduled to t0+2) and l2 */
  assert_true(kin__processor_should_resync(&p));
  distribute_update(&p, "s3", "1", 1);
  distribute_add(&p, "m3");
  KIN_EVENTUALLY(delivered(l0) == 4 && delivered(l1) == 6 && delivered(l2) == 5, 5000);
  rec_expect(r1, 4, "update ns/s3 1>1");
  rec_expect(r2, 3, "update ns/s3 1>1");
  rec_expect(r0, 3, "add ns/m3 1");

  log_capture(1);
  kin__processor_resync_check_period_changed(&p, 3 * SEC);
  log_capture(0);
  assert_int_equal(kin_listener_resync_period(l0), 0);
  assert_int_equal(kin_listener_resync_period(l1), 3 * SEC);
  assert_int_equal(kin_listener_resync_period(l2), 3 * SEC);

  kin__processor_destroy(&p);
  rec_free(r0);
  rec_free(r1);
  rec_free(r2);
  kin_fake_clock_free(clk);
}

/* Listeners can be added (their thread starts at once) and removed while
 * the processor runs; a removed listener gets nothing more. */
static void test_listener_ProcessorAddRemoveWhileRunning(void **state) {
  (void)state;
  kin__processor p;
  assert_int_equal(kin__processor_init(&p, NULL), 0);
  assert_int_equal(kin__processor_run(&p), 0);
  rec *r1 = rec_new(), *r2 = rec_new();
  kin_listener *l1 = new_listener(r1, 0, 0, NULL);
  assert_int_equal(kin__processor_add_listener(&p, l1), 0);
  distribute_add(&p, "a");
  KIN_EVENTUALLY(delivered(l1) == 1, 5000);
  kin_listener *l2 = new_listener(r2, 0, 0, NULL);
  assert_int_equal(kin__processor_add_listener(&p, l2), 0);
  assert_int_equal(kin__processor_len(&p), 2);
  distribute_add(&p, "b");
  KIN_EVENTUALLY(delivered(l1) == 2 && delivered(l2) == 1, 5000);

  assert_int_equal(kin__processor_remove_listener(&p, l1), 0);
  assert_int_equal(kin__processor_remove_listener(&p, l1), KIN_ENOENT);
  assert_false(kin__processor_has_listener(&p, l1));
  assert_true(kin__processor_has_listener(&p, l2));
  free_listener(l1);
  distribute_add(&p, "c");
  KIN_EVENTUALLY(delivered(l2) == 2, 5000);
  assert_int_equal(rec_count(r1), 2);
  rec_expect(r2, 1, "add ns/c 1");
  kin__processor_destroy(&p);
  rec_free(r1);
  rec_free(r2);
}

/* kin__processor_distribute_n: a batch reaches every listener in order,
 * resync notes only the listeners due one, as n single distributes would. */
static void test_listener_ProcessorDistributeBatch(void **state) {
  (void)state;
  uint64_t t0 = 1000 * SEC;
  kin_clock *clk = kin_fake_clock_new(t0);
  kin__processor p;
  assert_int_equal(kin__processor_init(&p, clk), 0);
  rec *r0 = rec_new(), *r1 = rec_new();
  kin_listener *l0 = new_listener(r0, 0, t0, NULL);
  kin_listener *l1 = new_listener(r1, 1 * SEC, t0, NULL);
  assert_int_equal(kin__processor_add_listener(&p, l0), 0);
  assert_int_equal(kin__processor_add_listener(&p, l1), 0);
  assert_int_equal(kin__processor_run(&p), 0);
  kin_fake_clock_step(clk, 1 * SEC);
  assert_true(kin__processor_should_resync(&p)); /* l1 due, l0 never */
  kin_obj *a = mk("a", "1"), *s1 = mk("s", "1"), *b = mk("b", "2");
  kin__batch_note v[3] = {
      {.n = {.type = KIN__NOTE_ADD, .new_obj = a}, .is_sync = 0},
      {.n = {.type = KIN__NOTE_UPDATE, .old_obj = s1, .new_obj = s1}, .is_sync = 1},
      {.n = {.type = KIN__NOTE_ADD, .new_obj = b}, .is_sync = 0},
  };
  kin__processor_distribute_n(&p, v, 3);
  kin__processor_distribute_n(&p, v, 0); /* nothing: no effect */
  kin_obj_unref(a);
  kin_obj_unref(s1);
  kin_obj_unref(b);
  KIN_EVENTUALLY(delivered(l0) == 2 && delivered(l1) == 3, 5000);
  rec_expect(r0, 0, "add ns/a 1");
  rec_expect(r0, 1, "add ns/b 2");
  rec_expect(r1, 0, "add ns/a 1");
  rec_expect(r1, 1, "update ns/s 1>1");
  rec_expect(r1, 2, "add ns/b 2");
  kin__processor_destroy(&p);
  rec_free(r0);
  rec_free(r1);
  kin_fake_clock_free(clk);
}

KIN_SUITE(listener, cmocka_unit_test(test_listener_RingGrowing),
          cmocka_unit_test(test_listener_BufferGrowsPastInitialCapacity),
          cmocka_unit_test(test_listener_InOrderDelivery),
          cmocka_unit_test(test_listener_HandlerErrorSkipsOnlyThatItem),
          cmocka_unit_test(test_listener_ResyncScheduling),
          cmocka_unit_test(test_listener_HasSynced),
          cmocka_unit_test(test_listener_OnStartOnStopRunOnListenerThread),
          cmocka_unit_test(test_listener_OnStartFailureAborts),
          cmocka_unit_test(test_listener_OnStartFailureCountsDroppedInitialNotes),
          cmocka_unit_test(test_listener_ResyncPeriodForeverNeverDue),
          cmocka_unit_test(test_listener_StopDropsPending),
          cmocka_unit_test(test_listener_ProcessorDistributeSync),
          cmocka_unit_test(test_listener_ProcessorDistributeBatch),
          cmocka_unit_test(test_listener_ProcessorAddRemoveWhileRunning))
