/* test_delaying_queue.c -- port of client-go
 * util/workqueue/delaying_queue_test.go, on the fake clock. */
#include "kin_test.h"

#include "kin.h"
#include "workqueue.h"
#include "workqueue_int.h"

#include <stdio.h>
#include <string.h>

#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC

static kin_workqueue *new_delaying(kin_clock *c) {
  kin_workqueue_config cfg = {.name = "delaying", .clock = c, .delaying = 1};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  return q;
}

static void expect_get(kin_workqueue *q, const char *want) {
  const char *item = NULL;
  assert_int_equal(kin_workqueue_get(q, &item), 0);
  assert_string_equal(item, want);
  kin_workqueue_done(q, item);
}

/* Proves that nothing due by now is still waiting: a probe made ready by a
 * 1 ns step leaves the heap after every earlier item has been added (the
 * waiting thread adds in ready-time order under its lock), so once it has
 * left, the queue holds exactly what was due. Returns the queue length
 * without the probe. */
static int settled_len(kin_workqueue *q, kin_clock *c) {
  int before = kin_workqueue_len(q);
  assert_int_equal(kin_workqueue_add_after(q, "probe", 1), 0);
  kin_fake_clock_step(c, 1);
  uint64_t ready;
  KIN_EVENTUALLY(kin__delaying_ready_at(q, "probe", &ready) == KIN_ENOENT, 5000);
  int n = kin_workqueue_len(q);
  assert_true(n > before);
  /* take the probe out again, keeping the others in order */
  for (int i = 0; i < n; i++) {
    const char *item;
    assert_int_equal(kin_workqueue_get(q, &item), 0);
    char copy[64];
    snprintf(copy, sizeof(copy), "%s", item);
    kin_workqueue_done(q, item);
    if (strcmp(copy, "probe") != 0) kin_workqueue_add(q, copy);
  }
  return n - 1;
}

static void test_delaying_queue_SimpleQueue(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  assert_int_equal(kin_workqueue_add_after(q, "foo", 50 * MS), 0);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_fake_clock_step(c, 49 * MS);
  assert_int_equal(settled_len(q, c), 0);
  kin_fake_clock_step(c, 11 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "foo");
  /* step past the next heartbeat: nothing comes back */
  kin_fake_clock_step(c, 10 * SEC);
  kin_test_sleep_ms(30);
  assert_int_equal(kin_workqueue_len(q), 0);
  assert_int_equal(settled_len(q, c), 0);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_Deduping(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  uint64_t t0 = kin_clock_now(c), ready;

  kin_workqueue_add_after(q, "foo", 50 * MS);
  kin_workqueue_add_after(q, "foo", 70 * MS);
  /* the later add does not move the ready time */
  assert_int_equal(kin__delaying_ready_at(q, "foo", &ready), 0);
  assert_int_equal(ready, t0 + 50 * MS);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_fake_clock_step(c, 60 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "foo");
  /* step past the second add: it was merged, so nothing more */
  kin_fake_clock_step(c, 20 * MS);
  assert_int_equal(settled_len(q, c), 0);

  /* this time the earlier should override */
  t0 = kin_clock_now(c);
  kin_workqueue_add_after(q, "foo", 50 * MS);
  kin_workqueue_add_after(q, "foo", 30 * MS);
  assert_int_equal(kin__delaying_ready_at(q, "foo", &ready), 0);
  assert_int_equal(ready, t0 + 30 * MS);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_fake_clock_step(c, 40 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "foo");
  kin_fake_clock_step(c, 20 * MS);
  assert_int_equal(settled_len(q, c), 0);
  assert_int_equal(kin__delaying_ready_at(q, "foo", &ready), KIN_ENOENT);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_AddTwoFireEarly(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  kin_workqueue_add_after(q, "foo", 1 * SEC);
  kin_workqueue_add_after(q, "bar", 50 * MS);
  assert_int_equal(kin_workqueue_len(q), 0);

  kin_fake_clock_step(c, 60 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "bar");

  kin_workqueue_add_after(q, "baz", 2 * SEC);
  kin_fake_clock_step(c, 1 * SEC);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "foo");

  kin_fake_clock_step(c, 2 * SEC);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "baz");
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_CopyShifting(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  kin_workqueue_add_after(q, "foo", 1 * SEC);
  kin_workqueue_add_after(q, "bar", 500 * MS);
  kin_workqueue_add_after(q, "baz", 250 * MS);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_fake_clock_step(c, 2 * SEC);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 3, 5000);
  expect_get(q, "baz");
  expect_get(q, "bar");
  expect_get(q, "foo");
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* Many items with colliding delays come out sorted by ready time, ties in
 * insertion order: exercises the heap beyond three entries. */
static void test_delaying_queue_ReadyTimeOrder(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  enum { N = 200, SLOTS = 7 };
  char item[16];
  for (int i = 0; i < N; i++) {
    snprintf(item, sizeof(item), "i%03d", i);
    uint64_t slot = (uint64_t)((i * 37) % SLOTS);
    assert_int_equal(kin_workqueue_add_after(q, item, (slot + 1) * MS), 0);
  }
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_fake_clock_step(c, SLOTS * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == N, 5000);
  for (int s = 0; s < SLOTS; s++)
    for (int i = 0; i < N; i++)
      if ((i * 37) % SLOTS == s) {
        snprintf(item, sizeof(item), "i%03d", i);
        expect_get(q, item);
      }
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_PartialStepReleasesOnlyDue(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  kin_workqueue_add_after(q, "c", 30 * MS);
  kin_workqueue_add_after(q, "a", 10 * MS);
  kin_workqueue_add_after(q, "b", 20 * MS);
  kin_fake_clock_step(c, 20 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 2, 5000);
  assert_int_equal(settled_len(q, c), 2);
  expect_get(q, "a");
  expect_get(q, "b");
  kin_fake_clock_step(c, 10 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "c");
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* The waiting thread always sleeps with a deadline (the 10 s heartbeat)
 * even with nothing scheduled, unlike a plain queue's idle state. */
static void test_delaying_queue_Heartbeat(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  KIN_EVENTUALLY(kin_fake_clock_waiters(c) == 1, 5000);
  /* an item an hour away: each heartbeat re-arms without releasing it */
  kin_workqueue_add_after(q, "later", 3600 * SEC);
  for (int i = 0; i < 5; i++) {
    kin_fake_clock_step(c, 10 * SEC);
    KIN_EVENTUALLY(kin_fake_clock_waiters(c) == 1, 5000);
  }
  assert_int_equal(settled_len(q, c), 0);
  kin_fake_clock_step(c, 3600 * SEC);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  expect_get(q, "later");
  kin_workqueue_free(q);
  kin_fake_clock_free(c);

  /* a queue without delaying has no thread waiting on the clock */
  c = kin_fake_clock_new(0);
  kin_workqueue_config cfg = {.clock = c};
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  kin_test_sleep_ms(5);
  assert_int_equal(kin_fake_clock_waiters(c), 0);
  assert_int_equal(kin_workqueue_add_after(q, "x", MS), KIN_EINVAL);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_AddAfterZeroAddsAtOnce(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  assert_int_equal(kin_workqueue_add_after(q, "now", 0), 0);
  assert_int_equal(kin_workqueue_len(q), 1);
  uint64_t ready;
  assert_int_equal(kin__delaying_ready_at(q, "now", &ready), KIN_ENOENT);
  expect_get(q, "now");
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_ShutdownStopsWaiting(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  kin_workqueue_add_after(q, "pending", 10 * MS);
  KIN_EVENTUALLY(kin_fake_clock_waiters(c) == 1, 5000);
  kin_workqueue_shutdown(q);
  /* the waiting thread has gone: it no longer waits on the clock (checked
   * twice, as a woken thread would be back waiting within moments) */
  KIN_EVENTUALLY(kin_fake_clock_waiters(c) == 0, 5000);
  kin_test_sleep_ms(5);
  assert_int_equal(kin_fake_clock_waiters(c), 0);
  kin_fake_clock_step(c, SEC);
  kin_test_sleep_ms(10);
  assert_int_equal(kin_workqueue_len(q), 0);
  assert_int_equal(kin_workqueue_add_after(q, "late", 0), 0);
  assert_int_equal(kin_workqueue_add_after(q, "late", MS), 0);
  assert_int_equal(kin_workqueue_len(q), 0);
  const char *item;
  assert_int_equal(kin_workqueue_get(q, &item), KIN_ECLOSED);
  /* free releases the item still waiting */
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_delaying_queue_RealClock(void **state) {
  kin_workqueue *q = new_delaying(NULL);
  assert_int_equal(kin_workqueue_add_after(q, "soon", MS), 0);
  const char *item;
  /* bounded by a deadline so a broken wake-up fails instead of hanging */
  uint64_t deadline = kin_clock_now(kin_clock_real()) + 5 * SEC;
  assert_int_equal(kin_workqueue_get_until(q, deadline, &item), 0);
  assert_string_equal(item, "soon");
  kin_workqueue_done(q, item);
  kin_workqueue_free(q);
}

/* kin_workqueue_snapshot grows its array with what it finds: SIZE_MAX
 * returns every item (more than its initial 16), max cuts the list, and a
 * waiting item's due_in is on the queue's clock. */
static void test_delaying_queue_SnapshotAll(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_delaying(c);
  char key[16];
  for (int i = 0; i < 40; i++) {
    snprintf(key, sizeof(key), "w%d", i);
    assert_int_equal(kin_workqueue_add_after(q, key, (uint64_t)(i + 1) * SEC), 0);
  }
  kin_workqueue_add(q, "ready");
  kin_fake_clock_step(c, 500 * MS);
  kin_wq_item *v;
  size_t n;
  assert_int_equal(kin_workqueue_snapshot(q, SIZE_MAX, &v, &n), 0);
  assert_int_equal(n, 41);
  assert_string_equal(v[0].key, "ready");
  assert_int_equal(v[0].state, KIN_WQ_READY);
  uint64_t min = UINT64_MAX;
  for (size_t i = 1; i < n; i++) {
    assert_int_equal(v[i].state, KIN_WQ_WAITING);
    if (v[i].due_in_ns < min) min = v[i].due_in_ns;
  }
  assert_int_equal(min, 500 * MS);
  kin_workqueue_snapshot_free(v, n);
  assert_int_equal(kin_workqueue_snapshot(q, 5, &v, &n), 0);
  assert_int_equal(n, 5);
  kin_workqueue_snapshot_free(v, n);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
  (void)state;
}

KIN_SUITE(delaying_queue, cmocka_unit_test(test_delaying_queue_SimpleQueue),
          cmocka_unit_test(test_delaying_queue_Deduping),
          cmocka_unit_test(test_delaying_queue_AddTwoFireEarly),
          cmocka_unit_test(test_delaying_queue_CopyShifting),
          cmocka_unit_test(test_delaying_queue_ReadyTimeOrder),
          cmocka_unit_test(test_delaying_queue_PartialStepReleasesOnlyDue),
          cmocka_unit_test(test_delaying_queue_Heartbeat),
          cmocka_unit_test(test_delaying_queue_AddAfterZeroAddsAtOnce),
          cmocka_unit_test(test_delaying_queue_ShutdownStopsWaiting),
          cmocka_unit_test(test_delaying_queue_RealClock),
          cmocka_unit_test(test_delaying_queue_SnapshotAll))
