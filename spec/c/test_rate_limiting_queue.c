/* test_rate_limiting_queue.c -- port of client-go
 * util/workqueue/rate_limiting_queue_test.go, on the fake clock. */
#include "kin_test.h"

#include "kin.h"
#include "workqueue.h"
#include "workqueue_int.h"

#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC

static kin_workqueue *new_rl_queue(kin_clock *c, kin_rate_limiter *rl) {
  kin_workqueue_config cfg = {.name = "rl", .clock = c, .rate_limiter = rl};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  return q;
}

/* Delay from now until item is due, as client-go's test reads it from the
 * waitFor entry. */
static uint64_t waiting_for(kin_workqueue *q, kin_clock *c, const char *item) {
  uint64_t ready = 0;
  assert_int_equal(kin__delaying_ready_at(q, item, &ready), 0);
  return ready - kin_clock_now(c);
}

static void test_rate_limiting_queue_RateLimitingQueue(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_rl_queue(c, kin_exponential_rate_limiter_new(1 * MS, 1 * SEC));

  assert_int_equal(kin_workqueue_add_rate_limited(q, "one"), 0);
  assert_int_equal(waiting_for(q, c, "one"), 1 * MS);
  /* the second failure asks for 2 ms, but the waiting entry keeps its
   * earlier ready time (dedup) */
  assert_int_equal(kin_workqueue_add_rate_limited(q, "one"), 0);
  assert_int_equal(waiting_for(q, c, "one"), 1 * MS);
  assert_int_equal(kin_workqueue_num_requeues(q, "one"), 2);

  assert_int_equal(kin_workqueue_add_rate_limited(q, "two"), 0);
  assert_int_equal(waiting_for(q, c, "two"), 1 * MS);
  assert_int_equal(kin_workqueue_num_requeues(q, "two"), 1);

  assert_int_equal(kin_workqueue_len(q), 0);
  kin_fake_clock_step(c, 1 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 2, 5000);
  const char *item;
  assert_int_equal(kin_workqueue_get(q, &item), 0);
  assert_string_equal(item, "one");
  kin_workqueue_done(q, item);
  assert_int_equal(kin_workqueue_get(q, &item), 0);
  assert_string_equal(item, "two");
  kin_workqueue_done(q, item);

  /* now that nothing waits, the next failure of "two" waits 2 ms */
  assert_int_equal(kin_workqueue_add_rate_limited(q, "two"), 0);
  assert_int_equal(waiting_for(q, c, "two"), 2 * MS);

  assert_int_equal(kin_workqueue_forget(q, "one"), 0);
  assert_int_equal(kin_workqueue_num_requeues(q, "one"), 0);
  assert_int_equal(kin_workqueue_add_rate_limited(q, "one"), 0);
  assert_int_equal(waiting_for(q, c, "one"), 1 * MS);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* client-go's TestNewNamedRateLimitingWithCustomQueue, with the default
 * controller limiter: the first failure of an item waits 5 ms. */
static void test_rate_limiting_queue_DefaultControllerRateLimiter(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_workqueue *q = new_rl_queue(c, kin_default_controller_rate_limiter_new(c));
  assert_int_equal(kin_workqueue_add_rate_limited(q, "one"), 0);
  assert_int_equal(waiting_for(q, c, "one"), 5 * MS);
  kin_fake_clock_step(c, 5 * MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 1, 5000);
  const char *item;
  assert_int_equal(kin_workqueue_get(q, &item), 0);
  assert_string_equal(item, "one");
  kin_workqueue_done(q, item);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

static void test_rate_limiting_queue_WithoutLimiter(void **state) {
  kin_workqueue_config cfg = {.delaying = 1};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  assert_int_equal(kin_workqueue_add_rate_limited(q, "x"), KIN_EINVAL);
  assert_int_equal(kin_workqueue_forget(q, "x"), KIN_EINVAL);
  assert_int_equal(kin_workqueue_num_requeues(q, "x"), 0);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_free(q);
}

static void test_rate_limiting_queue_AfterShutdownIgnored(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_workqueue *q = new_rl_queue(c, kin_exponential_rate_limiter_new(1 * MS, 1 * SEC));
  kin_workqueue_shutdown(q);
  assert_int_equal(kin_workqueue_add_rate_limited(q, "x"), 0);
  uint64_t ready;
  assert_int_equal(kin__delaying_ready_at(q, "x", &ready), KIN_ENOENT);
  kin_fake_clock_step(c, SEC);
  assert_int_equal(kin_workqueue_len(q), 0);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

KIN_SUITE(rate_limiting_queue, cmocka_unit_test(test_rate_limiting_queue_RateLimitingQueue),
          cmocka_unit_test(test_rate_limiting_queue_DefaultControllerRateLimiter),
          cmocka_unit_test(test_rate_limiting_queue_WithoutLimiter),
          cmocka_unit_test(test_rate_limiting_queue_AfterShutdownIgnored))
