/* test_reflector_threads.c -- issue 13, "nothing user-written on the IO
 * thread": the IO thread only decodes watch bytes; the reflector's own
 * thread applies the events to the DeltaFIFO, so the informer's transform
 * never runs on the IO thread. A transform that blocks stalls its own
 * informer only: REST calls on the same engine and the watches of other
 * informers go on. A reflector whose event queue is full pauses its
 * transfer and resumes it without losing or reordering anything. */
#include "kin_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reflector_fx.h"

#define MS KIN_NSEC_PER_MSEC

static const kin_resource CM = {.group = "", .version = "v1", .resource = "configmaps",
                                .kind = "ConfigMap", .namespaced = 1};

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the IO thread's id, captured from an on_data callback ----------------- */

typedef struct {
  pthread_mutex_t mu; /* guards every field */
  pthread_cond_t cond;
  int have, done;
  pthread_t thr;
} io_probe;

static int probe_data(void *ud, const char *p, size_t n) {
  io_probe *pr = ud;
  pthread_mutex_lock(&pr->mu);
  pr->thr = pthread_self();
  pr->have = 1;
  pthread_mutex_unlock(&pr->mu);
  return 0;
}

static void probe_done(void *ud, kin_io_response *res) {
  io_probe *pr = ud;
  pthread_mutex_lock(&pr->mu);
  pr->done = 1;
  pthread_cond_broadcast(&pr->cond);
  pthread_mutex_unlock(&pr->mu);
}

/* The thread that runs the on_data callbacks of c's engine. */
static pthread_t io_thread_of(kin_client *c) {
  io_probe pr = {.have = 0};
  pthread_mutex_init(&pr.mu, NULL);
  pthread_cond_init(&pr.cond, NULL);
  kin_io_handle *h = NULL;
  assert_int_equal(kin_client_stream(c, "/api/v1/namespaces/" RFX_NS "/configmaps",
                                     &(kin_client_stream_opts){.timeout_ms = 5000}, probe_data, probe_done, &pr, &h),
                   0);
  pthread_mutex_lock(&pr.mu);
  while (!pr.done) pthread_cond_wait(&pr.cond, &pr.mu);
  int have = pr.have;
  pthread_t thr = pr.thr;
  pthread_mutex_unlock(&pr.mu);
  kin_io_handle_release(h);
  pthread_cond_destroy(&pr.cond);
  pthread_mutex_destroy(&pr.mu);
  assert_true(have);
  return thr;
}

/* ---- a transform that records its threads and can block ------------------ */

typedef struct {
  pthread_mutex_t mu; /* guards every field */
  pthread_cond_t cond;
  pthread_t io;       /* the IO thread */
  int io_known;
  int calls, on_io;   /* transform calls; those on the IO thread */
  const char *slow;   /* the transform of this object name blocks... */
  int gate_open;      /* ...until this is set (broadcast on cond) */
  int in_slow, slow_done;
  int per_call_ms;    /* every call sleeps this long */
} tx_rec;

static int tx_fn(void *ud, kin_obj *in, kin_obj **out) {
  tx_rec *t = ud;
  pthread_mutex_lock(&t->mu);
  t->calls++;
  if (t->io_known && pthread_equal(pthread_self(), t->io)) t->on_io++;
  int slow = t->slow && !strcmp(kin_obj_name(in), t->slow) && !t->slow_done;
  if (slow) t->in_slow = 1;
  while (slow && !t->gate_open) pthread_cond_wait(&t->cond, &t->mu);
  int per = t->per_call_ms;
  pthread_mutex_unlock(&t->mu);
  if (per) kin_test_sleep_ms(per);
  if (slow) {
    pthread_mutex_lock(&t->mu);
    t->in_slow = 0;
    t->slow_done = 1;
    pthread_mutex_unlock(&t->mu);
  }
  *out = kin_obj_ref(in);
  return 0;
}

static int tx_get(tx_rec *t, int *field) {
  pthread_mutex_lock(&t->mu);
  int v = *field;
  pthread_mutex_unlock(&t->mu);
  return v;
}

/* ---- one more informer + reflector on a shared client -------------------- */

typedef struct {
  kin_informer *inf;
  kin_reflector *refl;
  rec *events;
} side;

static void side_start(side *s, kin_client *c, kin_transform_fn tf, void *tud,
                       size_t queue_max) {
  memset(s, 0, sizeof(*s));
  s->events = rec_new();
  kin_informer_config ic = {.name = "v1/configmaps", .transform = tf, .transform_ud = tud};
  assert_int_equal(kin_informer_new(&ic, &s->inf), 0);
  kin_event_handler h = handler_for(s->events);
  assert_int_equal(kin_informer_add_handler(s->inf, &h, 0, NULL), 0);
  assert_int_equal(kin_informer_run(s->inf), 0);
  kin_reflector_config rc = {.client = c,
                             .resource = CM,
                             .namespace = RFX_NS,
                             .backoff_initial_ns = 20 * MS,
                             .backoff_max_ns = 200 * MS,
                             .queue_max_bytes = queue_max,
                             .fifo = kin_informer_fifo(s->inf)};
  assert_int_equal(kin_reflector_new(&rc, &s->refl), 0);
  assert_int_equal(kin_reflector_run(s->refl), 0);
}

static void side_free(side *s) {
  kin_reflector_free(s->refl);
  kin_informer_free(s->inf);
  rec_free(s->events);
}

static kin_reflector_stats side_stats(side *s) {
  kin_reflector_stats st;
  kin_reflector_get_stats(s->refl, &st);
  return st;
}

static int cached(side *s, const char *name) {
  char key[128];
  snprintf(key, sizeof(key), RFX_NS "/%s", name);
  kin_obj *o = kin_indexer_get(kin_informer_indexer(s->inf), key);
  if (!o) return 0;
  kin_obj_unref(o);
  return 1;
}

/* A transform that blocks on one object until the test lets it go: it
 * runs on the blocked informer's reflector thread, not the IO thread, so
 * meanwhile a GET on the same engine answers and another informer's watch
 * delivers (both while it is still held: no timing involved); the blocked
 * informer catches up afterwards, in order. */
static void test_reflector_threads_BlockingTransformStallsOnlyItsInformer(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  rfx_create(&fx, "a");
  fx.client = rfx_client_for(kin_sim_url(fx.sim));

  tx_rec t = {.slow = "slow"};
  pthread_mutex_init(&t.mu, NULL);
  pthread_cond_init(&t.cond, NULL);
  pthread_t io = io_thread_of(fx.client);
  pthread_mutex_lock(&t.mu);
  t.io = io;
  t.io_known = 1;
  pthread_mutex_unlock(&t.mu);

  side blocked, other;
  side_start(&blocked, fx.client, tx_fn, &t, 0);
  side_start(&other, fx.client, NULL, NULL, 0);
  KIN_EVENTUALLY(side_stats(&blocked).synced && side_stats(&other).synced &&
                     rfx_count(&fx, "watch=true", NULL) >= 2,
                 8000);

  rfx_create(&fx, "slow");
  KIN_EVENTUALLY(tx_get(&t, &t.in_slow), 5000);

  /* A REST call on the same engine is not held up. */
  kin_result res;
  memset(&res, 0, sizeof(res));
  assert_int_equal(kin_client_get(fx.client, NULL, &CM, RFX_NS, "a", &res), 0);
  kin_result_free(&res);

  /* Another informer's watch still delivers. */
  rfx_create(&fx, "b");
  KIN_EVENTUALLY(cached(&other, "slow") && cached(&other, "b"), 10000);
  assert_true(tx_get(&t, &t.in_slow)); /* all of it while the transform is held */
  assert_false(cached(&blocked, "b"));
  pthread_mutex_lock(&t.mu);
  t.gate_open = 1;
  pthread_cond_broadcast(&t.cond);
  pthread_mutex_unlock(&t.mu);

  /* The blocked informer catches up in order; nothing ran on the IO thread. */
  KIN_EVENTUALLY(cached(&blocked, "slow") && cached(&blocked, "b"), 5000);
  assert_true(tx_get(&t, &t.calls) >= 3);
  assert_int_equal(tx_get(&t, &t.on_io), 0);
  /* counted just after the FIFO has the event (see FullQueuePausesTheWatch) */
  KIN_EVENTUALLY(side_stats(&blocked).watch_events >= 2, 5000);
  kin_reflector_stats st = side_stats(&blocked);
  assert_int_equal(st.lists, 1);
  assert_int_equal(st.watch_events, 2);
  assert_int_equal(st.idle_timeouts, 0);
  char rv[64], srv[64];
  kin_reflector_last_sync_rv(blocked.refl, rv, sizeof(rv));
  assert_string_equal(rv, rfx_server_rv(&fx, srv, sizeof(srv)));

  side_free(&blocked);
  side_free(&other);
  pthread_cond_destroy(&t.cond);
  pthread_mutex_destroy(&t.mu);
  rfx_free(&fx);
}

/* The order one key's updates reached the handler: the values "1", "2",
 * ... of the "update" lines must increase. Returns how many it saw. */
static int updates_in_order(rec *r, const char *key) {
  int n = 0;
  long long last = 0;
  pthread_mutex_lock(&r->mu);
  for (size_t i = 0; i < r->n; i++) {
    const char *e = r->ev[i];
    if (strncmp(e, "update ", 7) || strncmp(e + 7, key, strlen(key))) continue;
    const char *gt = strchr(e, '>');
    long long rv = gt ? atoll(gt + 1) : 0;
    if (rv <= last) {
      pthread_mutex_unlock(&r->mu);
      fail_msg("update out of order: %s after rv %lld", e, last);
    }
    last = rv;
    n++;
  }
  pthread_mutex_unlock(&r->mu);
  return n;
}

/* Waits until s synced and watches, closes t's gate (the next transform
 * of "k" then blocks), writes n updates of "k" and waits until that
 * transform is held and the watch paused: the queue is full on any
 * machine, whatever its speed (under TSan a 3 ms transform was not
 * enough). */
static void hold_and_fill(rfx *fx, side *s, tx_rec *t, int n) {
  KIN_EVENTUALLY(side_stats(s).synced && rfx_count(fx, "watch=true", NULL) >= 1, 8000);
  pthread_mutex_lock(&t->mu);
  t->gate_open = 0;
  t->slow_done = 0;
  pthread_mutex_unlock(&t->mu);
  char v[16];
  for (int i = 0; i < n; i++) {
    snprintf(v, sizeof(v), "%d", i);
    rfx_update(fx, "k", v);
  }
  KIN_EVENTUALLY(tx_get(t, &t->in_slow) && side_stats(s).watch_pauses >= 1, 10000);
}

/* Backpressure: with a queue bound of one byte every chunk that arrives
 * while events wait is refused (KIN_IO_PAUSE) and offered again after the
 * reflector thread took the queue. The transform of the first update is
 * held until the watch has paused, so the pause does not depend on how
 * fast this machine writes (it did not happen under TSan with a 3 ms
 * transform); every event still arrives exactly once and in order, and a
 * paused watch does not count as idle. */
static void test_reflector_threads_FullQueuePausesTheWatch(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  rfx_create(&fx, "k");
  fx.client = rfx_client_for(kin_sim_url(fx.sim));
  tx_rec t = {.per_call_ms = 1, .slow = "k"};
  pthread_mutex_init(&t.mu, NULL);
  pthread_cond_init(&t.cond, NULL);
  side s;
  /* the list's transform of "k" would block: let the sync through first */
  t.gate_open = 1;
  side_start(&s, fx.client, tx_fn, &t, 1);
  enum { N = 150 };
  hold_and_fill(&fx, &s, &t, N);
  pthread_mutex_lock(&t.mu);
  t.gate_open = 1;
  pthread_cond_broadcast(&t.cond);
  pthread_mutex_unlock(&t.mu);
  rfx_create(&fx, "last");
  KIN_EVENTUALLY(cached(&s, "last"), 10000);
  /* The reflector counts an event (and takes its resourceVersion) just
   * after handing it to the FIFO, so the informer may cache "last" first
   * (CI saw 150 of 151). */
  KIN_EVENTUALLY(side_stats(&s).watch_events >= N + 1, 5000);
  kin_reflector_stats st = side_stats(&s);
  assert_int_equal(st.watch_events, N + 1);
  assert_int_equal(st.lists, 1);
  assert_int_equal(st.idle_timeouts, 0);
  assert_true(st.watch_pauses >= 1);
  /* the handler runs on its listener's thread, which may still be behind
   * the cache when "last" is cached (TSan saw 127 of 150): wait for it,
   * then every update exactly once, in order */
  KIN_EVENTUALLY(updates_in_order(s.events, RFX_NS "/k") >= N, 10000);
  assert_int_equal(updates_in_order(s.events, RFX_NS "/k"), N);
  char rv[64], srv[64];
  kin_reflector_last_sync_rv(s.refl, rv, sizeof(rv));
  assert_string_equal(rv, rfx_server_rv(&fx, srv, sizeof(srv)));

  side_free(&s);
  pthread_cond_destroy(&t.cond);
  pthread_mutex_destroy(&t.mu);
  rfx_free(&fx);
}

/* Opens t's gate after 100 ms: the transform call a stop waits for. */
static void *open_gate_later(void *ud) {
  tx_rec *t = ud;
  kin_test_sleep_ms(100);
  pthread_mutex_lock(&t->mu);
  t->gate_open = 1;
  pthread_cond_broadcast(&t->cond);
  pthread_mutex_unlock(&t->mu);
  return NULL;
}

/* Stopping a reflector whose transform is busy and whose queue is full
 * returns once the transform call ends; what was still queued is dropped.
 * The first update's transform is held until the watch paused (so the
 * queue is full on any machine) and released 100 ms into the stop. */
static void test_reflector_threads_StopWithQueuedEvents(void **state) {
  (void)state;
  rfx fx;
  rfx_init(&fx, NULL);
  rfx_create(&fx, "k");
  fx.client = rfx_client_for(kin_sim_url(fx.sim));
  tx_rec t = {.per_call_ms = 20, .slow = "k", .gate_open = 1};
  pthread_mutex_init(&t.mu, NULL);
  pthread_cond_init(&t.cond, NULL);
  side s;
  side_start(&s, fx.client, tx_fn, &t, 1);
  hold_and_fill(&fx, &s, &t, 50);
  pthread_t opener;
  assert_int_equal(pthread_create(&opener, NULL, open_gate_later, &t), 0);
  uint64_t t0 = now_ms();
  kin_reflector_stop(s.refl);
  uint64_t stop_ms = now_ms() - t0;
  pthread_join(opener, NULL);
  if (stop_ms < 50 || stop_ms > 2000) fail_msg("stop took %llu ms", (unsigned long long)stop_ms);
  assert_true(side_stats(&s).watch_events < 50);
  side_free(&s);
  pthread_cond_destroy(&t.cond);
  pthread_mutex_destroy(&t.mu);
  rfx_free(&fx);
}

KIN_SUITE(reflector_threads,
          cmocka_unit_test(test_reflector_threads_BlockingTransformStallsOnlyItsInformer),
          cmocka_unit_test(test_reflector_threads_FullQueuePausesTheWatch),
          cmocka_unit_test(test_reflector_threads_StopWithQueuedEvents))
