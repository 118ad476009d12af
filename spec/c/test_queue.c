/* test_queue.c -- port of client-go util/workqueue/queue_test.go. */
#include "kin_test.h"

#include "kin.h"
#include "workqueue.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kin_workqueue *new_queue(kin_clock *clock) {
  kin_workqueue_config cfg = {.name = "test", .clock = clock};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  assert_non_null(q);
  return q;
}

static const char *must_get(kin_workqueue *q) {
  const char *item = NULL;
  assert_int_equal(kin_workqueue_get(q, &item), 0);
  assert_non_null(item);
  return item;
}

/* ---- many producers and consumers (TestBasic, TestAddWhileProcessing) ---- */

#define PRODUCERS 50
#define CONSUMERS 10
#define AFTER_SHUTDOWN "added after shutdown!"

typedef struct {
  kin_workqueue *q;
  int adds_per_producer;
  int sleep_ms;       /* per add and per item processed */
  int readd;          /* AddWhileProcessing: re-add each item once per consumer */
  atomic_int busy[PRODUCERS];
  atomic_int processed[PRODUCERS];
  atomic_int overlaps;      /* an item handed to two consumers at once */
  atomic_int after_shutdown;
  atomic_int bad_items;
} stress;

typedef struct {
  stress *s;
  int id;
} stress_arg;

static void *producer(void *arg) {
  stress_arg *a = arg;
  char item[16];
  snprintf(item, sizeof(item), "%d", a->id);
  for (int j = 0; j < a->s->adds_per_producer; j++) {
    kin_workqueue_add(a->s->q, item);
    if (a->s->sleep_ms) kin_test_sleep_ms(a->s->sleep_ms);
  }
  return NULL;
}

static void *consumer(void *arg) {
  stress *s = ((stress_arg *)arg)->s;
  int counters[PRODUCERS] = {0};
  for (;;) {
    const char *item;
    int rc = kin_workqueue_get(s->q, &item);
    if (rc == KIN_ECLOSED) return NULL;
    if (rc != 0) {
      atomic_fetch_add(&s->bad_items, 1);
      return NULL;
    }
    if (strcmp(item, AFTER_SHUTDOWN) == 0) {
      atomic_fetch_add(&s->after_shutdown, 1);
      kin_workqueue_done(s->q, item);
      continue;
    }
    int i = atoi(item);
    if (i < 0 || i >= PRODUCERS) {
      atomic_fetch_add(&s->bad_items, 1);
      continue;
    }
    if (atomic_exchange(&s->busy[i], 1)) atomic_fetch_add(&s->overlaps, 1);
    if (s->sleep_ms) kin_test_sleep_ms(s->sleep_ms);
    atomic_fetch_add(&s->processed[i], 1);
    /* Cleared before done: once done, another consumer may take it. */
    atomic_store(&s->busy[i], 0);
    if (s->readd && ++counters[i] < 2) kin_workqueue_add(s->q, item);
    kin_workqueue_done(s->q, item);
  }
}

static void run_stress(int drain, int adds, int sleep_ms, int readd) {
  stress *s = calloc(1, sizeof(*s));
  assert_non_null(s);
  s->q = new_queue(NULL);
  s->adds_per_producer = adds;
  s->sleep_ms = sleep_ms;
  s->readd = readd;
  pthread_t pt[PRODUCERS], ct[CONSUMERS];
  stress_arg pa[PRODUCERS], ca[CONSUMERS];
  for (int i = 0; i < PRODUCERS; i++) {
    pa[i] = (stress_arg){s, i};
    assert_int_equal(pthread_create(&pt[i], NULL, producer, &pa[i]), 0);
  }
  for (int i = 0; i < CONSUMERS; i++) {
    ca[i] = (stress_arg){s, i};
    assert_int_equal(pthread_create(&ct[i], NULL, consumer, &ca[i]), 0);
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(pt[i], NULL);
  if (drain)
    kin_workqueue_shutdown_with_drain(s->q);
  else
    kin_workqueue_shutdown(s->q);
  kin_workqueue_add(s->q, AFTER_SHUTDOWN);
  for (int i = 0; i < CONSUMERS; i++) pthread_join(ct[i], NULL);

  assert_int_equal(kin_workqueue_len(s->q), 0);
  assert_int_equal(atomic_load(&s->overlaps), 0);
  assert_int_equal(atomic_load(&s->after_shutdown), 0);
  assert_int_equal(atomic_load(&s->bad_items), 0);
  /* Shutdown drains what is queued, so every item was processed. */
  for (int i = 0; i < PRODUCERS; i++) assert_true(atomic_load(&s->processed[i]) >= 1);
  kin_workqueue_free(s->q);
  free(s);
}

static void test_queue_Basic(void **state) {
  run_stress(0, 50, 1, 0);
  run_stress(1, 50, 1, 0);
}

static void test_queue_AddWhileProcessing(void **state) {
  run_stress(0, 1, 0, 1);
  run_stress(1, 1, 0, 1);
}

/* ---- single-threaded behaviour ---- */

static void test_queue_Len(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  assert_int_equal(kin_workqueue_len(q), 1);
  kin_workqueue_add(q, "bar");
  assert_int_equal(kin_workqueue_len(q), 2);
  kin_workqueue_add(q, "foo"); /* already dirty: no change */
  assert_int_equal(kin_workqueue_len(q), 2);
  kin_workqueue_free(q);
}

static void test_queue_Reinsert(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  const char *i = must_get(q);
  assert_string_equal(i, "foo");
  kin_workqueue_add(q, i);
  kin_workqueue_done(q, i);
  i = must_get(q);
  assert_string_equal(i, "foo");
  /* done accepts any equal string, not only the pointer get returned */
  kin_workqueue_done(q, "foo");
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_shutdown(q);
  assert_int_equal(kin_workqueue_get(q, &i), KIN_ECLOSED);
  kin_workqueue_free(q);
}

static void test_queue_Collapse(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "bar");
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "foo");
  assert_int_equal(kin_workqueue_len(q), 2);
  /* first-add order is kept */
  const char *a = must_get(q);
  assert_string_equal(a, "foo");
  const char *b = must_get(q);
  assert_string_equal(b, "bar");
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_done(q, a);
  kin_workqueue_done(q, b);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_free(q);
}

static void test_queue_CollapseWhileProcessing(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  const char *i = must_get(q);
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "foo");
  /* not handed out while processing, however often it is added */
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_done(q, i);
  assert_int_equal(kin_workqueue_len(q), 1);
  i = must_get(q);
  assert_string_equal(i, "foo");
  kin_workqueue_done(q, i);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_free(q);
}

static void test_queue_AddAfterShutdownIgnored(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  assert_false(kin_workqueue_shutting_down(q));
  kin_workqueue_shutdown(q);
  assert_true(kin_workqueue_shutting_down(q));
  kin_workqueue_add(q, "bar");
  assert_int_equal(kin_workqueue_len(q), 1);
  const char *i = must_get(q);
  assert_string_equal(i, "foo");
  /* a re-add while processing after shutdown is ignored too */
  kin_workqueue_add(q, "foo");
  kin_workqueue_done(q, i);
  assert_int_equal(kin_workqueue_len(q), 0);
  assert_int_equal(kin_workqueue_get(q, &i), KIN_ECLOSED);
  assert_null(i);
  kin_workqueue_free(q);
}

static void test_queue_GetClosedOnlyWhenEmpty(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "a");
  kin_workqueue_add(q, "b");
  kin_workqueue_shutdown(q);
  const char *a = must_get(q), *b = must_get(q), *c;
  assert_string_equal(a, "a");
  assert_string_equal(b, "b");
  assert_int_equal(kin_workqueue_get(q, &c), KIN_ECLOSED);
  /* repeatable, and items still processing do not matter */
  assert_int_equal(kin_workqueue_get(q, &c), KIN_ECLOSED);
  kin_workqueue_done(q, a);
  kin_workqueue_done(q, b);
  kin_workqueue_free(q);
}

/* ---- blocking get, get_until ---- */

typedef struct {
  kin_workqueue *q;
  uint64_t deadline;
  atomic_int rc;
  atomic_int returned;
  char item[32];
} getter;

static void *getter_main(void *arg) {
  getter *g = arg;
  const char *item = NULL;
  int rc = kin_workqueue_get_until(g->q, g->deadline, &item);
  if (rc == 0) {
    snprintf(g->item, sizeof(g->item), "%s", item);
    kin_workqueue_done(g->q, item);
  }
  atomic_store(&g->rc, rc);
  atomic_store(&g->returned, 1);
  return NULL;
}

static void test_queue_GetBlocksUntilAdd(void **state) {
  kin_workqueue *q = new_queue(NULL);
  getter g = {.q = q, .deadline = KIN_FOREVER};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, getter_main, &g), 0);
  kin_test_sleep_ms(10);
  assert_int_equal(atomic_load(&g.returned), 0);
  kin_workqueue_add(q, "x");
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&g.rc), 0);
  assert_string_equal(g.item, "x");
  kin_workqueue_free(q);
}

static void test_queue_ShutdownWakesGetters(void **state) {
  kin_workqueue *q = new_queue(NULL);
  getter g[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    g[i] = (getter){.q = q, .deadline = KIN_FOREVER};
    assert_int_equal(pthread_create(&t[i], NULL, getter_main, &g[i]), 0);
  }
  kin_workqueue_shutdown(q);
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&g[i].rc), KIN_ECLOSED);
  }
  kin_workqueue_free(q);
}

static void test_queue_GetUntilTimesOutOnClock(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * KIN_NSEC_PER_SEC);
  kin_workqueue *q = new_queue(c);
  getter g = {.q = q, .deadline = kin_clock_now(c) + KIN_NSEC_PER_SEC};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, getter_main, &g), 0);
  KIN_EVENTUALLY(kin_fake_clock_waiters(c) == 1, 5000);
  kin_fake_clock_step(c, KIN_NSEC_PER_SEC / 2);
  KIN_EVENTUALLY(kin_fake_clock_waiters(c) == 1, 5000);
  assert_int_equal(atomic_load(&g.returned), 0);
  kin_fake_clock_step(c, KIN_NSEC_PER_SEC / 2);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&g.rc), KIN_ETIMEDOUT);
  /* an item already queued is returned at once, deadline or not */
  kin_workqueue_add(q, "x");
  const char *item;
  assert_int_equal(kin_workqueue_get_until(q, kin_clock_now(c), &item), 0);
  assert_string_equal(item, "x");
  kin_workqueue_done(q, item);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* ---- shutdown with and without drain ---- */

typedef struct {
  kin_workqueue *q;
  int drain;
  atomic_int returned;
} shutter;

static void *shutter_main(void *arg) {
  shutter *s = arg;
  if (s->drain)
    kin_workqueue_shutdown_with_drain(s->q);
  else
    kin_workqueue_shutdown(s->q);
  atomic_store(&s->returned, 1);
  return NULL;
}

/* Gets until the queue reports shutdown, which proves the shutter thread
 * has at least marked the queue as shutting down. */
static void get_until_closed(kin_workqueue *q) {
  const char *item;
  while (kin_workqueue_get(q, &item) != KIN_ECLOSED) kin_workqueue_done(q, item);
}

static void test_queue_QueueDrainageUsingShutDownWithDrain(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "bar");
  const char *first = must_get(q), *second = must_get(q);
  shutter s = {.q = q, .drain = 1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, shutter_main, &s), 0);
  get_until_closed(q);
  kin_workqueue_done(q, first);
  /* still waiting for the second item */
  kin_test_sleep_ms(20);
  assert_int_equal(atomic_load(&s.returned), 0);
  kin_workqueue_done(q, second);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&s.returned), 1);
  kin_workqueue_free(q);
}

static void test_queue_NoQueueDrainageUsingShutDown(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "bar");
  const char *first = must_get(q), *second = must_get(q);
  shutter s = {.q = q, .drain = 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, shutter_main, &s), 0);
  /* returns although nothing is done */
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&s.returned), 1);
  kin_workqueue_done(q, first);
  kin_workqueue_done(q, second);
  kin_workqueue_free(q);
}

static void test_queue_ForceQueueShutdownUsingShutDown(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "bar");
  must_get(q);
  must_get(q);
  shutter s = {.q = q, .drain = 1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, shutter_main, &s), 0);
  get_until_closed(q);
  kin_test_sleep_ms(10);
  assert_int_equal(atomic_load(&s.returned), 0);
  /* a second, plain shutdown cancels the drain */
  kin_workqueue_shutdown(q);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&s.returned), 1);
  /* free with items still processing releases them */
  kin_workqueue_free(q);
}

static void test_queue_QueueDrainageUsingShutDownWithDrainWithDirtyItem(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "foo");
  const char *gotten = must_get(q);
  kin_workqueue_add(q, "foo");
  shutter s = {.q = q, .drain = 1};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, shutter_main, &s), 0);
  const char *item;
  while (kin_workqueue_get(q, &item) != KIN_ECLOSED) fail_msg("unexpected item %s", item);
  kin_workqueue_done(q, gotten);
  /* done put the dirty item back: it is still delivered while draining */
  const char *again = NULL;
  assert_int_equal(kin_workqueue_get(q, &again), 0);
  assert_string_equal(again, "foo");
  /* (the drainer may already have returned: it waits for the processing
   * set to empty, which it was for a moment inside done, as in client-go) */
  kin_workqueue_done(q, again);
  assert_int_equal(kin_workqueue_get(q, &item), KIN_ECLOSED);
  pthread_join(t, NULL);
  assert_int_equal(atomic_load(&s.returned), 1);
  kin_workqueue_free(q);
}

static void test_queue_ShutDownWithDrainWhenIdle(void **state) {
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "queued");
  /* nothing is processing: returns at once, the queued item stays */
  kin_workqueue_shutdown_with_drain(q);
  assert_int_equal(kin_workqueue_len(q), 1);
  kin_workqueue_free(q);
}

/* kin_workqueue_done_get: done then get in one step, with the same
 * guarantees as the two calls: a key re-added while processing comes back
 * only after its done, dedup holds, a NULL done is a plain get, and
 * shutdown still applies the done before reporting closed. */
static void test_queue_DoneGet(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(NULL);
  kin_workqueue_add(q, "a");
  kin_workqueue_add(q, "b");
  const char *it = NULL;
  assert_int_equal(kin_workqueue_done_get(q, NULL, &it), 0);
  assert_string_equal(it, "a");
  kin_workqueue_add(q, "a"); /* while processing: dirty, not queued */
  kin_workqueue_add(q, "a");
  assert_int_equal(kin_workqueue_len(q), 1);
  assert_int_equal(kin_workqueue_done_get(q, it, &it), 0);
  assert_string_equal(it, "b");
  assert_int_equal(kin_workqueue_len(q), 1); /* a again, once */
  assert_int_equal(kin_workqueue_done_get(q, it, &it), 0);
  assert_string_equal(it, "a");
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_shutdown(q);
  assert_int_equal(kin_workqueue_done_get(q, it, &it), KIN_ECLOSED);
  assert_null(it);
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(q, &m);
  assert_int_equal(m.depth, 0);
  assert_int_equal(m.work_duration.count, 3);
  assert_int_equal(m.queue_duration.count, 3);
  assert_true(m.longest_running_processor_seconds == 0);
  kin_workqueue_free(q);
}

KIN_SUITE(queue, cmocka_unit_test(test_queue_Basic), cmocka_unit_test(test_queue_AddWhileProcessing),
          cmocka_unit_test(test_queue_Len), cmocka_unit_test(test_queue_Reinsert),
          cmocka_unit_test(test_queue_Collapse), cmocka_unit_test(test_queue_CollapseWhileProcessing),
          cmocka_unit_test(test_queue_AddAfterShutdownIgnored),
          cmocka_unit_test(test_queue_GetClosedOnlyWhenEmpty),
          cmocka_unit_test(test_queue_GetBlocksUntilAdd),
          cmocka_unit_test(test_queue_ShutdownWakesGetters),
          cmocka_unit_test(test_queue_GetUntilTimesOutOnClock),
          cmocka_unit_test(test_queue_QueueDrainageUsingShutDownWithDrain),
          cmocka_unit_test(test_queue_DoneGet),
          cmocka_unit_test(test_queue_NoQueueDrainageUsingShutDown),
          cmocka_unit_test(test_queue_ForceQueueShutdownUsingShutDown),
          cmocka_unit_test(test_queue_QueueDrainageUsingShutDownWithDrainWithDirtyItem),
          cmocka_unit_test(test_queue_ShutDownWithDrainWhenIdle))
