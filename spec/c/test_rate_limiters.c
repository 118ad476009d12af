/* test_rate_limiters.c -- port of client-go
 * util/workqueue/default_rate_limiters_test.go, plus the token bucket on the
 * fake clock and the DefaultControllerRateLimiter constants. */
#include "kin_test.h"

#include "kin.h"
#include "rate_limiter.h"

#include <pthread.h>
#include <stdio.h>

#define MS KIN_NSEC_PER_MSEC
#define SEC KIN_NSEC_PER_SEC
#define when kin_rate_limiter_when
#define requeues kin_rate_limiter_num_requeues
#define forget kin_rate_limiter_forget

static void test_rate_limiters_ItemExponentialFailureRateLimiter(void **state) {
  kin_rate_limiter *l = kin_exponential_rate_limiter_new(1 * MS, 1 * SEC);
  assert_non_null(l);
  assert_int_equal(when(l, "one"), 1 * MS);
  assert_int_equal(when(l, "one"), 2 * MS);
  assert_int_equal(when(l, "one"), 4 * MS);
  assert_int_equal(when(l, "one"), 8 * MS);
  assert_int_equal(when(l, "one"), 16 * MS);
  assert_int_equal(requeues(l, "one"), 5);

  assert_int_equal(when(l, "two"), 1 * MS);
  assert_int_equal(when(l, "two"), 2 * MS);
  assert_int_equal(requeues(l, "two"), 2);

  forget(l, "one");
  assert_int_equal(requeues(l, "one"), 0);
  assert_int_equal(when(l, "one"), 1 * MS);
  /* forget of one item leaves the others alone */
  assert_int_equal(requeues(l, "two"), 2);
  kin_rate_limiter_free(l);
}

static void test_rate_limiters_ItemExponentialFailureRateLimiterOverFlow(void **state) {
  kin_rate_limiter *l = kin_exponential_rate_limiter_new(1 * MS, 1000 * SEC);
  for (int i = 0; i < 5; i++) when(l, "one");
  assert_int_equal(when(l, "one"), 32 * MS);
  for (int i = 0; i < 1000; i++) when(l, "overflow1");
  assert_int_equal(when(l, "overflow1"), 1000 * SEC);
  kin_rate_limiter_free(l);

  l = kin_exponential_rate_limiter_new(60 * SEC, 1000 * 3600 * SEC);
  for (int i = 0; i < 2; i++) when(l, "two");
  assert_int_equal(when(l, "two"), 4 * 60 * SEC);
  for (int i = 0; i < 1000; i++) when(l, "overflow2");
  assert_int_equal(when(l, "overflow2"), 1000 * 3600 * SEC);
  kin_rate_limiter_free(l);
}

static void test_rate_limiters_ItemExponentialFailureRateLimiterCap(void **state) {
  kin_rate_limiter *l = kin_exponential_rate_limiter_new(5 * MS, 100 * MS);
  assert_int_equal(when(l, "x"), 5 * MS);
  assert_int_equal(when(l, "x"), 10 * MS);
  assert_int_equal(when(l, "x"), 20 * MS);
  assert_int_equal(when(l, "x"), 40 * MS);
  assert_int_equal(when(l, "x"), 80 * MS);
  assert_int_equal(when(l, "x"), 100 * MS);
  assert_int_equal(when(l, "x"), 100 * MS);
  kin_rate_limiter_free(l);
}

static void test_rate_limiters_ItemFastSlowRateLimiter(void **state) {
  kin_rate_limiter *l = kin_fast_slow_rate_limiter_new(5 * MS, 10 * SEC, 3);
  assert_non_null(l);
  assert_int_equal(when(l, "one"), 5 * MS);
  assert_int_equal(when(l, "one"), 5 * MS);
  assert_int_equal(when(l, "one"), 5 * MS);
  assert_int_equal(when(l, "one"), 10 * SEC);
  assert_int_equal(when(l, "one"), 10 * SEC);
  assert_int_equal(requeues(l, "one"), 5);

  assert_int_equal(when(l, "two"), 5 * MS);
  assert_int_equal(when(l, "two"), 5 * MS);
  assert_int_equal(requeues(l, "two"), 2);

  forget(l, "one");
  assert_int_equal(requeues(l, "one"), 0);
  assert_int_equal(when(l, "one"), 5 * MS);
  kin_rate_limiter_free(l);
}

static void test_rate_limiters_MaxOfRateLimiter(void **state) {
  kin_rate_limiter *inner[2] = {kin_fast_slow_rate_limiter_new(5 * MS, 3 * SEC, 3),
                                kin_exponential_rate_limiter_new(1 * MS, 1 * SEC)};
  kin_rate_limiter *l = kin_max_of_rate_limiter_new(inner, 2);
  assert_non_null(l);
  assert_int_equal(when(l, "one"), 5 * MS);
  assert_int_equal(when(l, "one"), 5 * MS);
  assert_int_equal(when(l, "one"), 5 * MS);
  assert_int_equal(when(l, "one"), 3 * SEC);
  assert_int_equal(when(l, "one"), 3 * SEC);
  assert_int_equal(requeues(l, "one"), 5);

  assert_int_equal(when(l, "two"), 5 * MS);
  assert_int_equal(when(l, "two"), 5 * MS);
  assert_int_equal(requeues(l, "two"), 2);

  forget(l, "one");
  assert_int_equal(requeues(l, "one"), 0);
  assert_int_equal(when(l, "one"), 5 * MS);
  kin_rate_limiter_free(l);
}

/* NumRequeues is the max over the inner limiters, not the first one's. */
static void test_rate_limiters_MaxOfNumRequeuesIsMax(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_rate_limiter *exp = kin_exponential_rate_limiter_new(1 * MS, 1 * SEC);
  when(exp, "a");
  when(exp, "a");
  kin_rate_limiter *inner[2] = {kin_bucket_rate_limiter_new(10, 5, c), exp};
  kin_rate_limiter *l = kin_max_of_rate_limiter_new(inner, 2);
  assert_int_equal(requeues(l, "a"), 2);
  assert_int_equal(when(l, "a"), 4 * MS);
  assert_int_equal(requeues(l, "a"), 3);
  kin_rate_limiter_free(l);
  kin_fake_clock_free(c);

  /* a failed inner constructor makes the composite fail, freeing the rest */
  kin_rate_limiter *bad[2] = {kin_exponential_rate_limiter_new(1, 2), NULL};
  assert_null(kin_max_of_rate_limiter_new(bad, 2));
  assert_null(kin_with_max_wait_rate_limiter_new(NULL, SEC));
  kin_rate_limiter_free(NULL);
}

static void test_rate_limiters_WithMaxWaitRateLimiter(void **state) {
  kin_clock *c = kin_fake_clock_new(0);
  kin_rate_limiter *l =
      kin_with_max_wait_rate_limiter_new(kin_default_controller_rate_limiter_new(c), 500 * SEC);
  assert_non_null(l);
  /* 5 ms * 2^i until it passes 500 s (2^17 * 5 ms = 655 s), then capped;
   * the inner limiter would go on to 1000 s */
  for (int i = 0; i < 17; i++) assert_int_equal(when(l, "one"), (5 * MS) << i);
  for (int i = 0; i < 5; i++) assert_int_equal(when(l, "one"), 500 * SEC);
  assert_int_equal(requeues(l, "one"), 22);
  forget(l, "one");
  assert_int_equal(requeues(l, "one"), 0);
  assert_int_equal(when(l, "one"), 5 * MS);
  kin_rate_limiter_free(l);
  kin_fake_clock_free(c);
}

static void test_rate_limiters_BucketRateLimiter(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_rate_limiter *l = kin_bucket_rate_limiter_new(10, 3, c);
  assert_non_null(l);
  /* starts with burst tokens */
  assert_int_equal(when(l, "a"), 0);
  assert_int_equal(when(l, "b"), 0);
  assert_int_equal(when(l, "a"), 0);
  /* then each When reserves the next token: 1/qps apart */
  assert_int_equal(when(l, "c"), 100 * MS);
  assert_int_equal(when(l, "d"), 200 * MS);
  /* one token refilled after 100 ms */
  kin_fake_clock_step(c, 100 * MS);
  assert_int_equal(when(l, "e"), 200 * MS);
  /* refill is capped at burst however long it idles */
  kin_fake_clock_step(c, 3600 * SEC);
  for (int i = 0; i < 3; i++) assert_int_equal(when(l, "f"), 0);
  assert_int_equal(when(l, "f"), 100 * MS);
  /* not per item: nothing to count or forget */
  assert_int_equal(requeues(l, "f"), 0);
  forget(l, "f");
  assert_int_equal(requeues(l, "a"), 0);
  kin_rate_limiter_free(l);

  /* fractional refill: half a token after 50 ms */
  l = kin_bucket_rate_limiter_new(10, 1, c);
  assert_int_equal(when(l, "x"), 0);
  kin_fake_clock_step(c, 50 * MS);
  assert_int_equal(when(l, "x"), 50 * MS);
  kin_rate_limiter_free(l);
  kin_fake_clock_free(c);
}

static void test_rate_limiters_DefaultControllerRateLimiter(void **state) {
  kin_clock *c = kin_fake_clock_new(1000 * SEC);
  kin_rate_limiter *l = kin_default_controller_rate_limiter_new(c);
  assert_non_null(l);
  /* per-item exponential from 5 ms */
  assert_int_equal(when(l, "x"), 5 * MS);
  assert_int_equal(when(l, "x"), 10 * MS);
  assert_int_equal(when(l, "x"), 20 * MS);
  assert_int_equal(requeues(l, "x"), 3);
  forget(l, "x");
  /* 3 tokens used; the burst of 100 covers 97 more new items at 5 ms */
  char item[16];
  for (int i = 0; i < 97; i++) {
    snprintf(item, sizeof(item), "item%d", i);
    assert_int_equal(when(l, item), 5 * MS);
  }
  /* bucket exhausted: 10 qps means 100 ms per further token */
  assert_int_equal(when(l, "late1"), 100 * MS);
  assert_int_equal(when(l, "late2"), 200 * MS);
  kin_fake_clock_step(c, 1 * SEC);
  assert_int_equal(when(l, "late3"), 5 * MS);
  kin_rate_limiter_free(l);

  /* exponential cap of 1000 s (5 ms * 2^18 = 1310 s) */
  l = kin_default_controller_rate_limiter_new(c);
  for (int i = 0; i < 18; i++) assert_int_equal(when(l, "y"), (5 * MS) << i);
  assert_int_equal(when(l, "y"), 1000 * SEC);
  kin_rate_limiter_free(l);
  kin_fake_clock_free(c);
}

/* Limiters are shared by all workers of a controller. */
typedef struct {
  kin_rate_limiter *l;
  int id;
} hammer_arg;

static void *hammer(void *arg) {
  hammer_arg *a = arg;
  char item[16];
  snprintf(item, sizeof(item), "w%d", a->id % 2);
  for (int i = 0; i < 500; i++) {
    when(a->l, item);
    if (i % 50 == 0) forget(a->l, item);
    requeues(a->l, item);
  }
  return NULL;
}

static void test_rate_limiters_ConcurrentUse(void **state) {
  kin_rate_limiter *inner[2] = {kin_exponential_rate_limiter_new(MS, SEC),
                                kin_fast_slow_rate_limiter_new(MS, SEC, 3)};
  kin_rate_limiter *m = kin_max_of_rate_limiter_new(inner, 2);
  kin_rate_limiter *b = kin_bucket_rate_limiter_new(1e6, 1000, NULL);
  kin_rate_limiter *ls[2] = {m, b};
  for (int k = 0; k < 2; k++) {
    pthread_t t[4];
    hammer_arg a[4];
    for (int i = 0; i < 4; i++) {
      a[i] = (hammer_arg){ls[k], i};
      assert_int_equal(pthread_create(&t[i], NULL, hammer, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  }
  forget(m, "w0");
  assert_int_equal(requeues(m, "w0"), 0);
  kin_rate_limiter_free(m);
  kin_rate_limiter_free(b);
}

KIN_SUITE(rate_limiters,
          cmocka_unit_test(test_rate_limiters_ItemExponentialFailureRateLimiter),
          cmocka_unit_test(test_rate_limiters_ItemExponentialFailureRateLimiterOverFlow),
          cmocka_unit_test(test_rate_limiters_ItemExponentialFailureRateLimiterCap),
          cmocka_unit_test(test_rate_limiters_ItemFastSlowRateLimiter),
          cmocka_unit_test(test_rate_limiters_MaxOfRateLimiter),
          cmocka_unit_test(test_rate_limiters_MaxOfNumRequeuesIsMax),
          cmocka_unit_test(test_rate_limiters_WithMaxWaitRateLimiter),
          cmocka_unit_test(test_rate_limiters_BucketRateLimiter),
          cmocka_unit_test(test_rate_limiters_DefaultControllerRateLimiter),
          cmocka_unit_test(test_rate_limiters_ConcurrentUse))
