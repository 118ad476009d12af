/* test_priority_queue.c -- the workqueue's priorities (workqueue.h,
 * controller-runtime's pkg/controller/priorityqueue): higher first and
 * FIFO within a priority, a re-add raises but never lowers, an item being
 * processed comes back at the higher of its priorities, delayed adds carry
 * theirs, KEEP keeps it, and a queue made without priority stays FIFO. */
#include "kin_test.h"

#include <stdio.h>
#include <string.h>

#include "kin.h"
#include "workqueue.h"

static kin_workqueue *new_queue(int priority) {
  kin_workqueue_config c = {.name = "prio", .priority = priority, .delaying = 1};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&c, &q), 0);
  return q;
}

/* Gets n items and checks them against want (space-separated). */
static void expect_order(kin_workqueue *q, const char *want) {
  char got[256] = "";
  int n = 0;
  for (const char *p = want; *p; p++) n += *p == ' ';
  for (int i = 0; i <= n; i++) {
    const char *it;
    assert_int_equal(kin_workqueue_get(q, &it), 0);
    if (i) strcat(got, " ");
    strcat(got, it);
    kin_workqueue_done(q, it);
  }
  assert_string_equal(got, want);
}

static void test_priority_queue_HigherFirstFIFOWithin(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(1);
  kin_workqueue_add_priority(q, "a", KIN_PRIORITY_LOW);
  kin_workqueue_add_priority(q, "b", KIN_PRIORITY_LOW);
  kin_workqueue_add(q, "c");
  kin_workqueue_add_priority(q, "d", 10);
  kin_workqueue_add(q, "e");
  assert_int_equal(kin_workqueue_len(q), 5);
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(q, &m);
  assert_int_equal(m.nprio, 3);
  assert_int_equal(m.prio[0].priority, 10);
  assert_int_equal(m.prio[1].depth, 2);
  assert_int_equal(m.prio[2].priority, KIN_PRIORITY_LOW);
  assert_int_equal(m.prio[2].depth, 2);
  expect_order(q, "d c e a b");
  kin_workqueue_free(q);
}

static void test_priority_queue_RaiseNeverLower(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(1);
  kin_workqueue_add_priority(q, "a", KIN_PRIORITY_LOW);
  kin_workqueue_add_priority(q, "b", KIN_PRIORITY_LOW);
  kin_workqueue_add_priority(q, "c", KIN_PRIORITY_LOW);
  kin_workqueue_add(q, "n");
  kin_workqueue_add(q, "b");                          /* raised behind n */
  kin_workqueue_add_priority(q, "n", KIN_PRIORITY_LOW); /* not lowered */
  kin_workqueue_add_priority(q, "c", KIN_PRIORITY_KEEP); /* stays low */
  assert_int_equal(kin_workqueue_len(q), 4);
  expect_order(q, "n b a c");
  kin_workqueue_free(q);
}

/* An item handed out and added again while processed comes back at the
 * higher priority at its done, ahead of the low backlog. */
static void test_priority_queue_ProcessingComesBackRaised(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(1);
  kin_workqueue_add_priority(q, "x", KIN_PRIORITY_LOW);
  kin_workqueue_add_priority(q, "y", KIN_PRIORITY_LOW);
  const char *it;
  assert_int_equal(kin_workqueue_get(q, &it), 0);
  assert_string_equal(it, "x");
  kin_workqueue_add(q, "x");
  kin_workqueue_done(q, it);
  expect_order(q, "x y");
  kin_workqueue_free(q);
}

/* Delayed adds come back at their priority; KEEP takes the item's. */
static void test_priority_queue_AfterCarriesPriority(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(1);
  kin_workqueue_add_priority(q, "old", KIN_PRIORITY_LOW);
  const char *it;
  assert_int_equal(kin_workqueue_get(q, &it), 0);
  /* a requeue of a low request keeps it low */
  assert_int_equal(kin_workqueue_add_after_priority(q, "old", 1000000, KIN_PRIORITY_KEEP), 0);
  kin_workqueue_done(q, it);
  kin_workqueue_add_priority(q, "low2", KIN_PRIORITY_LOW);
  assert_int_equal(kin_workqueue_add_after_priority(q, "late", 1000000, 5), 0);
  kin_test_sleep_ms(100);
  expect_order(q, "late low2 old");
  kin_workqueue_free(q);
}

/* Without priority, priorities are ignored: client-go's FIFO. */
static void test_priority_queue_FIFOWhenOff(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(0);
  kin_workqueue_add_priority(q, "a", KIN_PRIORITY_LOW);
  kin_workqueue_add(q, "b");
  kin_workqueue_add_priority(q, "c", 10);
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(q, &m);
  assert_int_equal(m.nprio, 0);
  expect_order(q, "a b c");
  kin_workqueue_free(q);
}

/* More distinct priorities than bands: an item of one more shares the band
 * of the nearest priority below it; nothing is lost. */
static void test_priority_queue_ManyPriorities(void **state) {
  (void)state;
  kin_workqueue *q = new_queue(1);
  char k[16];
  for (int i = 0; i < 20; i++) {
    snprintf(k, sizeof k, "k%02d", i);
    kin_workqueue_add_priority(q, k, i);
  }
  assert_int_equal(kin_workqueue_len(q), 20);
  const char *it;
  assert_int_equal(kin_workqueue_get(q, &it), 0);
  assert_string_equal(it, "k07"); /* k08..k19 share its band, after it */
  kin_workqueue_done(q, it);
  for (int i = 0; i < 19; i++) {
    assert_int_equal(kin_workqueue_get(q, &it), 0);
    kin_workqueue_done(q, it);
  }
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_free(q);
}

KIN_SUITE(priority_queue, cmocka_unit_test(test_priority_queue_HigherFirstFIFOWithin),
          cmocka_unit_test(test_priority_queue_RaiseNeverLower),
          cmocka_unit_test(test_priority_queue_ProcessingComesBackRaised),
          cmocka_unit_test(test_priority_queue_AfterCarriesPriority),
          cmocka_unit_test(test_priority_queue_FIFOWhenOff),
          cmocka_unit_test(test_priority_queue_ManyPriorities))
