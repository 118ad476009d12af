/* test_workqueue_metrics.c -- port of client-go
 * util/workqueue/metrics_test.go, on the fake clock. */
#include "kin_test.h"

#include "kin.h"
#include "workqueue.h"

#include <math.h>
#include <string.h>

#define US KIN_NSEC_PER_USEC
#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC

#define assert_near(a, b)                                                      \
  do {                                                                         \
    double kin__a = (a), kin__b = (b);                                         \
    if (fabs(kin__a - kin__b) > 1e-12 * (1 + fabs(kin__b)))                    \
      fail_msg("%s = %.17g, want %.17g", #a, kin__a, kin__b);                  \
  } while (0)

static kin_workqueue *new_queue(kin_clock *c, int delaying) {
  kin_workqueue_config cfg = {.name = "test", .clock = c, .delaying = delaying};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  return q;
}

static kin_workqueue_metrics snap(kin_workqueue *q) {
  kin_workqueue_metrics m;
  memset(&m, 0xa5, sizeof(m));
  kin_workqueue_get_metrics(q, &m);
  return m;
}

static void test_workqueue_metrics_Metrics(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_workqueue *q = new_queue(c, 0);
  assert_string_equal(kin_workqueue_name(q), "test");
  kin_workqueue_metrics m = snap(q);
  assert_int_equal(m.depth, 0);
  assert_int_equal(m.adds_total, 0);
  assert_int_equal(m.queue_duration.count, 0);

  kin_workqueue_add(q, "foo");
  m = snap(q);
  assert_int_equal(m.adds_total, 1);
  assert_int_equal(m.depth, 1);

  kin_fake_clock_step(c, 50 * US);
  const char *i;
  assert_int_equal(kin_workqueue_get(q, &i), 0);
  assert_string_equal(i, "foo");
  m = snap(q);
  assert_int_equal(m.queue_duration.count, 1);
  assert_near(m.queue_duration.sum_seconds, 5e-05);
  /* 5e-5 s falls in le=1e-4 (index 4) and every bucket above */
  for (int b = 0; b < KIN_WQ_HIST_BUCKETS; b++)
    assert_int_equal(m.queue_duration.buckets[b], b >= 4 ? 1 : 0);
  assert_int_equal(m.depth, 0);

  /* add it back while processing; repeated adds are de-duplicated */
  for (int k = 0; k < 5; k++) kin_workqueue_add(q, i);
  m = snap(q);
  assert_int_equal(m.adds_total, 2);
  assert_int_equal(m.depth, 1);

  kin_fake_clock_step(c, 25 * US);
  kin_workqueue_done(q, i);
  m = snap(q);
  assert_int_equal(m.work_duration.count, 1);
  assert_near(m.work_duration.sum_seconds, 25e-6);
  assert_int_equal(m.depth, 1);

  /* it is back on the queue; its queue time runs from the re-add */
  assert_int_equal(kin_workqueue_get(q, &i), 0);
  assert_string_equal(i, "foo");
  m = snap(q);
  assert_int_equal(m.queue_duration.count, 2);
  assert_near(m.queue_duration.sum_seconds, 5e-05 + 25e-6);

  kin_fake_clock_step(c, 1 * MS);
  m = snap(q);
  assert_near(m.unfinished_work_seconds, 0.001);
  assert_near(m.longest_running_processor_seconds, 0.001);

  kin_workqueue_done(q, i);
  m = snap(q);
  assert_int_equal(m.work_duration.count, 2);
  assert_near(m.work_duration.sum_seconds, 25e-6 + 0.001);
  /* 1 ms lands in le=1e-3 (index 5): both observations are there */
  assert_int_equal(m.work_duration.buckets[4], 1);
  assert_int_equal(m.work_duration.buckets[5], 2);
  assert_near(m.unfinished_work_seconds, 0);
  assert_near(m.longest_running_processor_seconds, 0);
  assert_int_equal(m.depth, 0);
  assert_int_equal(m.adds_total, 2);
  assert_int_equal(m.retries_total, 0);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* A dirty item's queue time starts at its first add, however often it is
 * added again before get. */
static void test_workqueue_metrics_MetricsWithDirtyItem(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_workqueue *q = new_queue(c, 0);
  kin_workqueue_add(q, "foo");
  kin_fake_clock_step(c, 10 * US);
  kin_workqueue_add(q, "foo");
  kin_workqueue_add(q, "bar");
  kin_fake_clock_step(c, 10 * US);
  kin_workqueue_metrics m = snap(q);
  assert_int_equal(m.adds_total, 2);
  assert_int_equal(m.depth, 2);
  const char *a, *b;
  assert_int_equal(kin_workqueue_get(q, &a), 0);
  assert_string_equal(a, "foo");
  m = snap(q);
  assert_near(m.queue_duration.sum_seconds, 20e-6);
  assert_int_equal(m.depth, 1);
  assert_int_equal(kin_workqueue_get(q, &b), 0);
  m = snap(q);
  assert_near(m.queue_duration.sum_seconds, 20e-6 + 10e-6);
  assert_int_equal(m.depth, 0);

  kin_workqueue_done(q, a);
  kin_workqueue_done(q, b);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* The two gauges are computed when asked, from the items being processed:
 * unfinished sums their ages, longest is the oldest. */
static void test_workqueue_metrics_UnfinishedWork(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_workqueue *q = new_queue(c, 0);
  kin_workqueue_add(q, "a");
  kin_workqueue_add(q, "b");
  const char *a, *b;
  assert_int_equal(kin_workqueue_get(q, &a), 0);
  kin_fake_clock_step(c, 1 * MS);
  assert_int_equal(kin_workqueue_get(q, &b), 0);
  kin_fake_clock_step(c, 2 * MS);
  kin_workqueue_metrics m = snap(q);
  assert_near(m.unfinished_work_seconds, 0.003 + 0.002);
  assert_near(m.longest_running_processor_seconds, 0.003);
  kin_fake_clock_step(c, 1 * SEC);
  m = snap(q);
  assert_near(m.unfinished_work_seconds, 1.003 + 1.002);
  assert_near(m.longest_running_processor_seconds, 1.003);
  kin_workqueue_done(q, a);
  m = snap(q);
  assert_near(m.unfinished_work_seconds, 1.002);
  assert_near(m.longest_running_processor_seconds, 1.002);
  assert_int_equal(m.work_duration.count, 1);
  assert_near(m.work_duration.sum_seconds, 1.003);
  kin_workqueue_done(q, b);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

/* client-go counts a retry for every AddAfter (so for every AddRateLimited)
 * on a queue that is not shutting down; plain adds are not retries. */
static void test_workqueue_metrics_Retries(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_workqueue_config cfg = {.name = "rl", .clock = c,
                              .rate_limiter = kin_exponential_rate_limiter_new(MS, SEC)};
  kin_workqueue *q = NULL;
  assert_int_equal(kin_workqueue_new(&cfg, &q), 0);
  kin_workqueue_add(q, "plain");
  assert_int_equal(snap(q).retries_total, 0);
  kin_workqueue_add_after(q, "x", 0);
  kin_workqueue_add_after(q, "y", MS);
  assert_int_equal(snap(q).retries_total, 2);
  kin_workqueue_add_rate_limited(q, "z");
  kin_workqueue_add_rate_limited(q, "z");
  kin_workqueue_metrics m = snap(q);
  assert_int_equal(m.retries_total, 4);
  /* plain, x: dirty now; y and z still waiting */
  assert_int_equal(m.adds_total, 2);
  assert_int_equal(m.depth, 2);
  kin_fake_clock_step(c, MS);
  KIN_EVENTUALLY(kin_workqueue_len(q) == 4, 5000);
  m = snap(q);
  assert_int_equal(m.adds_total, 4);
  assert_int_equal(m.depth, 4);
  assert_int_equal(m.retries_total, 4);
  kin_workqueue_shutdown(q);
  kin_workqueue_add_rate_limited(q, "z");
  assert_int_equal(snap(q).retries_total, 4);
  kin_workqueue_free(q);
  kin_fake_clock_free(c);
}

KIN_SUITE(workqueue_metrics, cmocka_unit_test(test_workqueue_metrics_Metrics),
          cmocka_unit_test(test_workqueue_metrics_MetricsWithDirtyItem),
          cmocka_unit_test(test_workqueue_metrics_UnfinishedWork),
          cmocka_unit_test(test_workqueue_metrics_Retries))
