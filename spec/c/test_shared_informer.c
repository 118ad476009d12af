/* test_shared_informer.c -- ports of client-go's shared_informer_test.go and
 * controller_test.go (TestHammerController) onto kin_informer. The fake
 * controller source of client-go is replaced by feeding the informer's
 * DeltaFIFO directly (Replace = a relist, add/update/delete = watch
 * events); time runs on a fake clock. Instead of client-go's "sleep a bit
 * for stragglers", a marker object is added and deleted: once a listener
 * saw the marker's delete, it has been handed everything queued before.
 * Handler abuse from many threads and TestHammerController:
 * test_shared_informer_concurrency.c. Fixture: shared_informer_fx.h. */
#include "shared_informer_fx.h"

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
  /* a listener counts a batch (delivered, errors) after its handlers ran:
   * wait until neither holds one */
  KIN_EVENTUALLY((kin_listener_get_stats(lb, &sb), kin_listener_get_stats(lg, &sg),
                  sb.pending == 0 && sg.pending == 0),
                 5000);
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

KIN_SUITE(shared_informer,
          cmocka_unit_test(test_shared_informer_ListenerResyncPeriods),
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
          cmocka_unit_test(test_shared_informer_ResyncForeverNeverResyncs))
