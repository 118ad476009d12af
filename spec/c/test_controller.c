/* test_controller.c -- port of controller-runtime
 * pkg/internal/controller/controller_test.go ("Processing queue items from
 * a Controller", "Start", the reconcile_total / reconcile_errors metrics),
 * plus what the Go suite leaves as TODO: several workers never reconcile
 * one key at once, in-flight reconciles finish on stop, per-worker hooks.
 * The queue runs on the fake clock with the default controller rate
 * limiter, so rate-limited requeues wait 5 ms, 10 ms, ... of fake time. */
#include "kin_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "handler_rec.h"
#include "kin.h"
#include "workqueue_int.h"

#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC
#define MAXW 8
#define NKEYS 8

/* A scripted reconciler: each call takes the next scripted result (then
 * DONE), records "ns|name", and tracks concurrency per key "ns/kN". */
typedef struct {
  pthread_mutex_t mu; /* guards every field */
  pthread_cond_t cond;
  kin_result_action script[16];
  int script_rc[16];
  int nscript, next;
  char calls[512][64];
  int ncalls;
  int gate_closed, entered, in_flight, max_in_flight;
  int key_in_flight[NKEYS], max_same_key, key_calls[NKEYS];
  int started[MAXW], stopped[MAXW], start_rc[MAXW];
  pthread_t start_thr[MAXW], stop_thr[MAXW];
  int wrong_thread; /* a reconcile ran on another thread than its worker's on_start */
} fake;

static fake *fake_new(void) {
  fake *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cond, NULL);
  return f;
}

static void fake_free(fake *f) {
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

static void script(fake *f, kin_result_kind kind, uint64_t after_ns, int rc, const char *msg) {
  pthread_mutex_lock(&f->mu);
  kin_result_action *a = &f->script[f->nscript];
  a->kind = kind;
  a->requeue_after_ns = after_ns;
  snprintf(a->message, sizeof(a->message), "%s", msg ? msg : "");
  f->script_rc[f->nscript++] = rc;
  pthread_mutex_unlock(&f->mu);
}

static void gate(fake *f, int closed) {
  pthread_mutex_lock(&f->mu);
  f->gate_closed = closed;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->mu);
}

#define FAKE_GET(f, field) fake_get(f, &(f)->field)
static int fake_get(fake *f, int *field) {
  pthread_mutex_lock(&f->mu);
  int v = *field;
  pthread_mutex_unlock(&f->mu);
  return v;
}

static int key_index(const kin_request *req) {
  return req->name[0] == 'k' ? atoi(req->name + 1) % NKEYS : -1;
}

static int fake_reconcile(void *ud, int w, const kin_request *req, const kin_call_ctx *ctx,
                          kin_result_action *out) {
  (void)ctx;
  fake *f = ud;
  int k = key_index(req);
  pthread_mutex_lock(&f->mu);
  if (f->ncalls < 512) snprintf(f->calls[f->ncalls++], 64, "%s|%s", req->ns, req->name);
  if (!pthread_equal(pthread_self(), f->start_thr[w])) f->wrong_thread = 1;
  char key[64];
  snprintf(key, sizeof(key), "%s%s%s", req->ns, *req->ns ? "/" : "", req->name);
  if (strcmp(key, req->key) != 0) f->wrong_thread = 2;
  f->entered++;
  if (++f->in_flight > f->max_in_flight) f->max_in_flight = f->in_flight;
  if (k >= 0 && ++f->key_in_flight[k] > f->max_same_key) f->max_same_key = f->key_in_flight[k];
  if (k >= 0) f->key_calls[k]++;
  pthread_cond_broadcast(&f->cond);
  while (f->gate_closed) pthread_cond_wait(&f->cond, &f->mu);
  int rc = 0;
  if (f->next < f->nscript) {
    *out = f->script[f->next];
    rc = f->script_rc[f->next++];
  }
  pthread_mutex_unlock(&f->mu);
  sched_yield(); /* let another worker try the same key meanwhile */
  pthread_mutex_lock(&f->mu);
  f->in_flight--;
  if (k >= 0) f->key_in_flight[k]--;
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static int fake_start(void *ud, int w) {
  fake *f = ud;
  pthread_mutex_lock(&f->mu);
  f->started[w]++;
  f->start_thr[w] = pthread_self();
  int rc = f->start_rc[w];
  pthread_mutex_unlock(&f->mu);
  return rc;
}

static void fake_stop(void *ud, int w) {
  fake *f = ud;
  pthread_mutex_lock(&f->mu);
  f->stopped[w]++;
  f->stop_thr[w] = pthread_self();
  pthread_mutex_unlock(&f->mu);
}

static kin_controller *new_ctl(fake *f, kin_clock *clock, int workers) {
  kin_controller_config cfg = {.name = "ctl", .workers = workers, .reconcile = fake_reconcile,
                               .on_worker_start = fake_start, .on_worker_stop = fake_stop,
                               .ud = f, .clock = clock};
  kin_controller *c = NULL;
  assert_int_equal(kin_controller_new(&cfg, &c), 0);
  return c;
}

static kin_controller_stats stats(kin_controller *c) {
  kin_controller_stats st;
  kin_controller_get_stats(c, &st);
  return st;
}

/* Fake time from now until item is due, or 0 when it is not waiting. */
static uint64_t waiting_for(kin_controller *c, kin_clock *clock, const char *item) {
  uint64_t ready = 0;
  if (kin__delaying_ready_at(kin_controller_queue(c), item, &ready) < 0) return 0;
  return ready - kin_clock_now(clock);
}

static int num_requeues(kin_controller *c, const char *item) {
  return kin_workqueue_num_requeues(kin_controller_queue(c), item);
}

/* Every request that became dirty was reconciled (all results DONE): the
 * queue's adds_total counts each newly dirty request once. */
static int idle(kin_controller *c) {
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(kin_controller_queue(c), &m);
  kin_controller_stats st = stats(c);
  return st.reconcile_success == m.adds_total && st.active_workers == 0;
}

typedef struct {
  kin_controller *c;
  kin_clock *clock;
  fake *f;
} fixture;

static fixture started(int workers) {
  fixture x = {.clock = kin_fake_clock_new(1000 * SEC), .f = fake_new()};
  x.c = new_ctl(x.f, x.clock, workers);
  assert_int_equal(kin_controller_start(x.c), 0);
  return x;
}

static void finish(fixture *x) {
  gate(x->f, 0);
  kin_controller_free(x->c);
  fake_free(x->f);
  kin_fake_clock_free(x->clock);
}

/* Steps the fake clock by d once the queue's waiting thread sleeps on it. */
static void step(fixture *x, uint64_t d) {
  KIN_EVENTUALLY(kin_fake_clock_waiters(x->clock) > 0, 5000);
  kin_fake_clock_step(x->clock, d);
}

/* Enqueues foo/bar (scripted to fail) with the log captured and waits
 * until the controller has counted `errors` errors; the caller ends the
 * capture. */
static void enqueue_until_error(fixture *x, uint64_t errors) {
  log_capture(1);
  kin_controller_enqueue(x->c, "foo", "bar");
  KIN_EVENTUALLY(stats(x->c).reconcile_errors == errors, 5000);
}

/* ---- Processing queue items from a Controller --------------------------- */

static void test_controller_CallsReconcilerIfItemEnqueued(void **state) {
  fixture x = started(1);
  assert_int_equal(kin_controller_enqueue(x.c, "foo", "bar"), 0);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 1, 5000);
  assert_string_equal(x.f->calls[0], "foo|bar");
  assert_int_equal(kin_workqueue_len(kin_controller_queue(x.c)), 0);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0);
  assert_string_equal(kin_workqueue_name(kin_controller_queue(x.c)), "ctl");
  finish(&x);
}

/* Adds before start collapse (the queue's dirty set): one reconcile per
 * key; a cluster-scoped key has an empty namespace. */
static void test_controller_ReconcilesOncePerKey(void **state) {
  fixture x = {.clock = kin_fake_clock_new(1000 * SEC), .f = fake_new()};
  x.c = new_ctl(x.f, x.clock, 2);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(kin_controller_enqueue(x.c, "foo", "bar"), 0);
    assert_int_equal(kin_controller_enqueue(x.c, NULL, "node-1"), 0);
  }
  assert_int_equal(kin_controller_start(x.c), 0);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 2, 5000);
  assert_int_equal(FAKE_GET(x.f, ncalls), 2);
  char *v[] = {x.f->calls[0], x.f->calls[1]}, buf[64];
  assert_string_equal(kin_test_join(v, 2, buf, sizeof(buf)), "foo|bar,|node-1");
  finish(&x);
}

/* "should requeue a Request if there is an error and continue processing
 * items" and "prometheus metric reconcile_errors" */
static void test_controller_RequeueOnErrorAndContinue(void **state) {
  fixture x = started(1);
  script(x.f, KIN_RESULT_ERROR, 0, 0, "expected error: reconcile");
  enqueue_until_error(&x, 1);
  assert_true(log_contains("ctl: Reconciler error for foo/bar: expected error: reconcile"));
  log_capture(0);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 5 * MS); /* AddRateLimited */
  assert_int_equal(num_requeues(x.c, "foo/bar"), 1);
  kin_controller_enqueue(x.c, "foo", "other"); /* continues with other items */
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 1, 5000);
  step(&x, 5 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 2, 5000);
  kin_controller_stats st = stats(x.c);
  assert_int_equal(st.reconcile_errors, 1);
  assert_int_equal(st.terminal_reconcile_errors, 0);
  assert_int_equal(st.reconcile_panics, 0);
  assert_int_equal(FAKE_GET(x.f, ncalls), 3);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0);
  assert_int_equal(kin_workqueue_len(kin_controller_queue(x.c)), 0);
  finish(&x);
}

/* "should not requeue a Request if there is a terminal error": no retry,
 * and (as controller-runtime) no Forget either. */
static void test_controller_TerminalErrorNotRequeued(void **state) {
  fixture x = started(1);
  script(x.f, KIN_RESULT_ERROR, 0, 0, "transient");
  script(x.f, KIN_RESULT_TERMINAL_ERROR, 0, 0, "permanent");
  enqueue_until_error(&x, 1);
  step(&x, 5 * MS);
  KIN_EVENTUALLY(stats(x.c).terminal_reconcile_errors == 1, 5000);
  assert_true(log_contains("Reconciler error for foo/bar (terminal): permanent"));
  log_capture(0);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 0);
  assert_int_equal(kin_workqueue_len(kin_controller_queue(x.c)), 0);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 1);
  kin_controller_stats st = stats(x.c);
  assert_int_equal(st.reconcile_errors, 2);
  assert_int_equal(st.reconcile_errors, 2);
  /* a new event reconciles it again; success forgets */
  kin_controller_enqueue(x.c, "foo", "bar");
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 1, 5000);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0);
  assert_int_equal(FAKE_GET(x.f, ncalls), 3);
  finish(&x);
}

/* "should not reset backoff until there's a non-error result" */
static void test_controller_BackoffNotResetUntilSuccess(void **state) {
  fixture x = started(1);
  script(x.f, KIN_RESULT_ERROR, 0, 0, "something's wrong");
  script(x.f, KIN_RESULT_ERROR, 0, 0, "another thing's wrong");
  enqueue_until_error(&x, 1);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 5 * MS);
  step(&x, 5 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_errors == 2, 5000);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 10 * MS);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 2);
  step(&x, 10 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 1, 5000);
  log_capture(0);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0);
  assert_int_equal(kin_workqueue_len(kin_controller_queue(x.c)), 0);
  finish(&x);
}

/* "should requeue a Request with rate limiting if the Result sets
 * Requeue:true and continue processing items" */
static void test_controller_RequeueWithRateLimiting(void **state) {
  fixture x = started(1);
  script(x.f, KIN_RESULT_REQUEUE, 0, 0, NULL);
  kin_controller_enqueue(x.c, "foo", "bar");
  KIN_EVENTUALLY(stats(x.c).reconcile_requeue == 1, 5000);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 5 * MS);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 1);
  step(&x, 5 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 1, 5000);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0);
  assert_int_equal(stats(x.c).reconcile_errors, 0);
  finish(&x);
}

/* "should requeue a Request after a duration (but not rate-limitted) if
 * the Result sets RequeueAfter": Forget, then AddAfter. */
static void test_controller_RequeueAfterNotRateLimited(void **state) {
  fixture x = started(1);
  script(x.f, KIN_RESULT_ERROR, 0, 0, "first");
  script(x.f, KIN_RESULT_REQUEUE_AFTER, 100 * MS, 0, NULL);
  script(x.f, KIN_RESULT_REQUEUE_AFTER, 0, 0, NULL); /* 0: a success */
  enqueue_until_error(&x, 1);
  log_capture(0);
  step(&x, 5 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_requeue_after == 1, 5000);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0); /* forgotten */
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 100 * MS);
  step(&x, 99 * MS);
  KIN_EVENTUALLY(kin_fake_clock_waiters(x.clock) > 0, 5000);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 1 * MS);
  assert_int_equal(FAKE_GET(x.f, ncalls), 2);
  step(&x, 1 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 1, 5000);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 0);
  assert_int_equal(stats(x.c).reconcile_requeue_after, 1);
  finish(&x);
}

/* "should perform error behavior if error is not nil, regardless of
 * RequeueAfter": the reconciler failing (a panic in Go) overrides what it
 * put in the result. */
static void test_controller_ErrorRegardlessOfRequeueAfter(void **state) {
  fixture x = started(1);
  script(x.f, KIN_RESULT_REQUEUE_AFTER, 100 * MS, -1, NULL);
  script(x.f, KIN_RESULT_REQUEUE_AFTER, 100 * MS, 0, NULL);
  enqueue_until_error(&x, 1);
  assert_true(log_contains("Reconciler error for foo/bar: reconciler failed (-1)"));
  log_capture(0);
  assert_int_equal(stats(x.c).reconcile_panics, 1);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 5 * MS);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 1);
  step(&x, 5 * MS);
  KIN_EVENTUALLY(stats(x.c).reconcile_requeue_after == 1, 5000);
  assert_int_equal(waiting_for(x.c, x.clock, "foo/bar"), 100 * MS);
  assert_int_equal(num_requeues(x.c, "foo/bar"), 0);
  finish(&x);
}

/* ---- concurrency ------------------------------------------------------- */

/* Two keys run on two workers at once; a key added while it is being
 * reconciled is not handed to a third worker, only reconciled again after. */
static void test_controller_NoConcurrentReconcileOfSameKey(void **state) {
  fixture x = started(4);
  gate(x.f, 1);
  kin_controller_enqueue(x.c, "ns", "k1");
  kin_controller_enqueue(x.c, "ns", "k2");
  KIN_EVENTUALLY(FAKE_GET(x.f, in_flight) == 2, 5000);
  assert_int_equal(stats(x.c).active_workers, 2);
  kin_controller_enqueue(x.c, "ns", "k1");
  kin_test_sleep_ms(20); /* give an idle worker the chance to misbehave */
  assert_int_equal(FAKE_GET(x.f, entered), 2);
  assert_int_equal(kin_workqueue_len(kin_controller_queue(x.c)), 0);
  gate(x.f, 0);
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 3, 5000);
  assert_int_equal(FAKE_GET(x.f, max_same_key), 1);
  assert_int_equal(stats(x.c).active_workers, 0);
  finish(&x);
}

typedef struct {
  kin_controller *c;
  int seed;
} producer_arg;

static void *producer(void *p) {
  producer_arg *a = p;
  char name[16];
  for (int i = 0; i < 400; i++) {
    snprintf(name, sizeof(name), "k%d", (i * 7 + a->seed) % NKEYS);
    kin_controller_enqueue(a->c, "ns", name);
  }
  return NULL;
}

/* Many producers, several workers (HammerController in spirit): never two
 * reconciles of one key at once, and every key reconciled after its last
 * add. */
static void test_controller_HammerSameKeyNeverConcurrent(void **state) {
  fixture x = started(4);
  pthread_t th[4];
  producer_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (producer_arg){x.c, i};
    assert_int_equal(pthread_create(&th[i], NULL, producer, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  KIN_EVENTUALLY(idle(x.c), 10000);
  kin_controller_stop(x.c);
  assert_int_equal(FAKE_GET(x.f, max_same_key), 1);
  assert_int_equal(FAKE_GET(x.f, wrong_thread), 0);
  for (int k = 0; k < NKEYS; k++) assert_true(FAKE_GET(x.f, key_calls[k]) >= 1);
  assert_int_equal(stats(x.c).max_concurrent_reconciles, 4);
  finish(&x);
}

/* ---- start / stop ------------------------------------------------------ */

typedef struct {
  kin_controller *c;
  atomic_int done;
} stopper;

static void *stop_thread(void *p) {
  stopper *s = p;
  kin_controller_stop(s->c);
  atomic_store(&s->done, 1);
  return NULL;
}

/* Stop waits for the reconcile in flight, drops what is still queued and
 * runs each worker's on_stop. */
static void test_controller_InFlightReconcileFinishesOnStop(void **state) {
  fixture x = started(1);
  gate(x.f, 1);
  script(x.f, KIN_RESULT_REQUEUE, 0, 0, NULL); /* ignored: the queue is shut down */
  kin_controller_enqueue(x.c, "foo", "a");
  KIN_EVENTUALLY(FAKE_GET(x.f, entered) == 1, 5000);
  kin_controller_enqueue(x.c, "foo", "b");
  stopper s = {.c = x.c};
  atomic_init(&s.done, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, stop_thread, &s), 0);
  KIN_EVENTUALLY(kin_workqueue_shutting_down(kin_controller_queue(x.c)), 5000);
  kin_test_sleep_ms(20);
  assert_int_equal(atomic_load(&s.done), 0); /* still waiting for "foo/a" */
  assert_int_equal(FAKE_GET(x.f, stopped[0]), 0);
  gate(x.f, 0);
  pthread_join(th, NULL);
  assert_int_equal(atomic_load(&s.done), 1);
  kin_controller_stats st = stats(x.c);
  assert_int_equal(st.reconcile_requeue, 1); /* "foo/a" finished */
  assert_int_equal(st.reconcile_success, 0);
  assert_int_equal(FAKE_GET(x.f, ncalls), 1); /* "foo/b" was dropped */
  assert_int_equal(waiting_for(x.c, x.clock, "foo/a"), 0);
  assert_int_equal(FAKE_GET(x.f, stopped[0]), 1);
  assert_int_equal(kin_controller_enqueue(x.c, "foo", "c"), 0); /* ignored */
  assert_int_equal(kin_workqueue_len(kin_controller_queue(x.c)), 0);
  finish(&x);
}

/* Each worker's on_start and on_stop run on that worker's own thread, and
 * its reconciles too. */
static void test_controller_WorkerHooksPerWorker(void **state) {
  fixture x = started(3);
  for (int w = 0; w < 3; w++) assert_int_equal(FAKE_GET(x.f, started[w]), 1);
  assert_false(pthread_equal(x.f->start_thr[0], x.f->start_thr[1]));
  assert_false(pthread_equal(x.f->start_thr[1], x.f->start_thr[2]));
  assert_false(pthread_equal(x.f->start_thr[0], pthread_self()));
  char name[8];
  for (int i = 0; i < 6; i++) {
    snprintf(name, sizeof(name), "k%d", i);
    kin_controller_enqueue(x.c, "ns", name);
  }
  KIN_EVENTUALLY(stats(x.c).reconcile_success == 6, 5000);
  kin_controller_stop(x.c);
  assert_int_equal(FAKE_GET(x.f, wrong_thread), 0);
  for (int w = 0; w < 3; w++) {
    assert_int_equal(FAKE_GET(x.f, stopped[w]), 1);
    assert_true(pthread_equal(x.f->stop_thr[w], x.f->start_thr[w]));
  }
  kin_controller_stop(x.c); /* idempotent */
  assert_int_equal(FAKE_GET(x.f, stopped[0]), 1);
  finish(&x);
}

/* A failing on_start fails start: nothing is reconciled, the workers that
 * started run on_stop, the failed one does not. */
static void test_controller_WorkerStartFailureFailsStart(void **state) {
  int rcs[] = {KIN_EIO, 1};
  int want[] = {KIN_EIO, KIN_ECANCELED};
  for (int i = 0; i < 2; i++) {
    fixture x = {.clock = kin_fake_clock_new(1000 * SEC), .f = fake_new()};
    x.f->start_rc[1] = rcs[i];
    x.c = new_ctl(x.f, x.clock, 3);
    kin_controller_enqueue(x.c, "foo", "bar");
    log_capture(1);
    assert_int_equal(kin_controller_start(x.c), want[i]);
    assert_true(log_contains("ctl: worker 1 failed to start"));
    log_capture(0);
    assert_int_equal(kin_controller_stopping(x.c), 1);
    for (int w = 0; w < 3; w++) assert_int_equal(FAKE_GET(x.f, started[w]), 1);
    assert_int_equal(FAKE_GET(x.f, stopped[0]), 1);
    assert_int_equal(FAKE_GET(x.f, stopped[1]), 0);
    assert_int_equal(FAKE_GET(x.f, stopped[2]), 1);
    assert_int_equal(FAKE_GET(x.f, ncalls), 0);
    finish(&x);
  }
}

/* "should return an error if it gets started more than once" */
static void test_controller_StartedMoreThanOnce(void **state) {
  fixture x = started(1);
  assert_int_equal(kin_controller_start(x.c), KIN_EBUSY);
  kin_controller_stop(x.c);
  assert_int_equal(kin_controller_start(x.c), KIN_ECLOSED);
  kin_informer *inf = NULL;
  kin_informer_config ic = {.name = "v1/pods"};
  assert_int_equal(kin_informer_new(&ic, &inf), 0);
  kin_handler_config hc = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT};
  assert_int_equal(kin_controller_watch(x.c, inf, &hc, 0, NULL), KIN_ECLOSED);
  kin_controller_config bad = {.name = "", .reconcile = fake_reconcile};
  kin_controller *c2 = NULL;
  assert_int_equal(kin_controller_new(&bad, &c2), KIN_EINVAL);
  assert_null(c2);
  kin_informer_free(inf);
  finish(&x);
}

/* prometheus metrics: reconcile_total by result, active and max workers,
 * reconcile time. */
static void test_controller_Metrics(void **state) {
  fixture x = started(2);
  kin_controller_stats st = stats(x.c);
  assert_int_equal(st.max_concurrent_reconciles, 2);
  assert_int_equal(st.active_workers, 0);
  assert_int_equal(st.reconcile_time_count, 0);
  script(x.f, KIN_RESULT_DONE, 0, 0, NULL);
  script(x.f, KIN_RESULT_ERROR, 0, 0, "e");
  script(x.f, KIN_RESULT_REQUEUE, 0, 0, NULL);
  script(x.f, KIN_RESULT_REQUEUE_AFTER, 5 * 3600 * SEC, 0, NULL);
  script(x.f, KIN_RESULT_TERMINAL_ERROR, 0, 0, "t");
  log_capture(1);
  const char *names[] = {"a", "b", "c", "d", "e"};
  for (int i = 0; i < 5; i++) {
    kin_controller_enqueue(x.c, "ns", names[i]);
    KIN_EVENTUALLY(stats(x.c).reconcile_time_count == (uint64_t)i + 1, 5000);
  }
  log_capture(0);
  st = stats(x.c);
  assert_int_equal(st.reconcile_success, 1);
  assert_int_equal(st.reconcile_errors, 2);
  assert_int_equal(st.reconcile_requeue, 1);
  assert_int_equal(st.reconcile_requeue_after, 1);
  assert_int_equal(st.reconcile_errors, 2);
  assert_int_equal(st.terminal_reconcile_errors, 1);
  assert_int_equal(st.active_workers, 0);
  finish(&x);
}

/* ---- Start: caches and watches ---------------------------------------- */

typedef struct {
  kin_controller *c;
  int rc;
  atomic_int done;
} starter;

static void *start_thread(void *p) {
  starter *s = p;
  s->rc = kin_controller_start(s->c);
  atomic_store(&s->done, 1);
  return NULL;
}

/* "should return an error if there is an error waiting for the informers"
 * (CacheSyncTimeout, 2 min by default, on the informer's fake clock). */
static void test_controller_CacheSyncTimeout(void **state) {
  fixture x = {.clock = kin_fake_clock_new(1000 * SEC), .f = fake_new()};
  x.c = new_ctl(x.f, x.clock, 1);
  kin_informer *inf = NULL;
  kin_informer_config ic = {.name = "v1/pods", .clock = x.clock};
  assert_int_equal(kin_informer_new(&ic, &inf), 0);
  kin_handler_config hc = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT};
  kin_listener *l = NULL;
  assert_int_equal(kin_controller_watch(x.c, inf, &hc, 0, &l), 0);
  assert_non_null(l);
  starter s = {.c = x.c};
  atomic_init(&s.done, 0);
  pthread_t th;
  log_capture(1);
  assert_int_equal(pthread_create(&th, NULL, start_thread, &s), 0);
  kin_test_sleep_ms(20);
  assert_int_equal(atomic_load(&s.done), 0);
  for (int i = 0; i < 5000 && !atomic_load(&s.done); i++) {
    kin_fake_clock_step(x.clock, 60 * SEC);
    kin_test_sleep_ms(1);
  }
  pthread_join(th, NULL);
  assert_int_equal(s.rc, KIN_ETIMEDOUT);
  assert_true(log_contains("failed to wait for ctl caches to sync"));
  log_capture(0);
  assert_int_equal(FAKE_GET(x.f, started[0]), 0); /* no worker started */
  kin_controller_free(x.c);
  kin_informer_free(inf);
  fake_free(x.f);
  kin_fake_clock_free(x.clock);
}

static kin_obj *rs(const char *name, const char *rv) {
  return kin_test_obj("biz", name, rv, NULL);
}

static kin_obj *pod_of(const char *name, const char *owner) {
  char extra[256];
  snprintf(extra, sizeof(extra),
           "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
           "\"name\":\"%s\",\"uid\":\"u1\",\"controller\":true}]",
           owner);
  return kin_test_obj_ext("biz", name, "5", NULL, extra);
}

static kin_informer *informer(const char *name, kin_obj **objs, size_t n) {
  kin_informer *inf = NULL;
  kin_informer_config ic = {.name = name};
  assert_int_equal(kin_informer_new(&ic, &inf), 0);
  assert_int_equal(kin_delta_fifo_replace(kin_informer_fifo(inf), objs, n, "10"), 0);
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
  return inf;
}

static uint64_t adds_total(kin_controller *c) {
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(kin_controller_queue(c), &m);
  return m.adds_total;
}

static uint64_t delivered(kin_listener *l) {
  kin_listener_stats st;
  kin_listener_get_stats(l, &st);
  return st.delivered;
}

/* For(replicasets) with generation_changed + Owns(pods) through real
 * informers: start waits for both caches, the initial lists reach the
 * queue, a status-only update is filtered, a pod changing owner wakes both
 * owners, and stop detaches the handlers. */
static void test_controller_WatchForAndOwns(void **state) {
  fixture x = {.clock = kin_fake_clock_new(1000 * SEC), .f = fake_new()};
  x.c = new_ctl(x.f, x.clock, 2);
  kin_informer *rsi = informer("apps/v1/replicasets", (kin_obj *[]){rs("rs1", "1"), rs("rs2", "2")}, 2);
  kin_informer *pods = informer("v1/pods", (kin_obj *[]){pod_of("p1", "rs1")}, 1);
  kin_handler_config for_cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT};
  assert_int_equal(kin_predicate_from_name("generation_changed", &for_cfg.predicate), 0);
  kin_handler_config owns_cfg = {.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER, .owner_group = "apps",
                                 .owner_kind = "ReplicaSet"};
  kin_listener *lrs, *lpods;
  assert_int_equal(kin_controller_watch(x.c, rsi, &for_cfg, 0, &lrs), 0);
  assert_int_equal(kin_controller_watch(x.c, pods, &owns_cfg, 0, &lpods), 0);
  assert_int_equal(kin_informer_run(rsi), 0);
  assert_int_equal(kin_informer_run(pods), 0);
  assert_int_equal(kin_controller_start(x.c), 0);
  assert_int_equal(kin_informer_has_synced(rsi), 1);
  assert_int_equal(kin_informer_has_synced(pods), 1);
  KIN_EVENTUALLY(kin_listener_has_synced(lrs) && kin_listener_has_synced(lpods), 5000);
  KIN_EVENTUALLY(idle(x.c), 5000);
  /* rs1 twice when the pod's request came while rs1 was being reconciled */
  int before = FAKE_GET(x.f, ncalls);
  assert_true(before == 2 || before == 3);
  char *v[3], buf[128];
  pthread_mutex_lock(&x.f->mu);
  for (int i = 0; i < before; i++) v[i] = x.f->calls[i];
  kin_test_join(v, (size_t)before, buf, sizeof(buf));
  pthread_mutex_unlock(&x.f->mu);
  assert_string_equal(buf, before == 2 ? "biz|rs1,biz|rs2" : "biz|rs1,biz|rs1,biz|rs2");

  /* a status-only update (same generation) does not pass */
  uint64_t adds = adds_total(x.c);
  kin_obj *r = rs("rs1", "3");
  assert_int_equal(kin_delta_fifo_update(kin_informer_fifo(rsi), r), 0);
  kin_obj_unref(r);
  KIN_EVENTUALLY(delivered(lrs) == 3, 5000);
  assert_int_equal(adds_total(x.c), adds);

  /* a pod moving from rs1 to rs2 wakes both owners */
  kin_obj *p = pod_of("p1", "rs2");
  assert_int_equal(kin_delta_fifo_update(kin_informer_fifo(pods), p), 0);
  kin_obj_unref(p);
  KIN_EVENTUALLY(FAKE_GET(x.f, ncalls) == before + 2 && idle(x.c), 5000);
  pthread_mutex_lock(&x.f->mu);
  char *w[2] = {x.f->calls[before], x.f->calls[before + 1]};
  assert_string_equal(kin_test_join(w, 2, buf, sizeof(buf)), "biz|rs1,biz|rs2");
  pthread_mutex_unlock(&x.f->mu);

  kin_controller_stop(x.c);
  /* detached: later events reach nobody (and nothing freed is touched) */
  r = rs("rs3", "4");
  assert_int_equal(kin_delta_fifo_add(kin_informer_fifo(rsi), r), 0);
  kin_obj_unref(r);
  kin_informer_free(rsi);
  kin_informer_free(pods);
  assert_int_equal(FAKE_GET(x.f, ncalls), before + 2);
  finish(&x);
}

KIN_SUITE(controller, cmocka_unit_test(test_controller_CallsReconcilerIfItemEnqueued),
          cmocka_unit_test(test_controller_ReconcilesOncePerKey),
          cmocka_unit_test(test_controller_RequeueOnErrorAndContinue),
          cmocka_unit_test(test_controller_TerminalErrorNotRequeued),
          cmocka_unit_test(test_controller_BackoffNotResetUntilSuccess),
          cmocka_unit_test(test_controller_RequeueWithRateLimiting),
          cmocka_unit_test(test_controller_RequeueAfterNotRateLimited),
          cmocka_unit_test(test_controller_ErrorRegardlessOfRequeueAfter),
          cmocka_unit_test(test_controller_NoConcurrentReconcileOfSameKey),
          cmocka_unit_test(test_controller_HammerSameKeyNeverConcurrent),
          cmocka_unit_test(test_controller_InFlightReconcileFinishesOnStop),
          cmocka_unit_test(test_controller_WorkerHooksPerWorker),
          cmocka_unit_test(test_controller_WorkerStartFailureFailsStart),
          cmocka_unit_test(test_controller_StartedMoreThanOnce),
          cmocka_unit_test(test_controller_Metrics),
          cmocka_unit_test(test_controller_CacheSyncTimeout),
          cmocka_unit_test(test_controller_WatchForAndOwns))
