/* test_fence.c -- the leadership fence of call_ctx.h: a context made in an
 * epoch may write while that epoch is open, and never after it ends, even
 * when a later epoch opens. */
#include "kin_test.h"

#include <time.h>

#include "call_ctx.h"
#include "kin.h"

static void test_fence_EpochsEndForGood(void **state) {
  (void)state;
  kin_fence *f = kin_fence_new();
  assert_non_null(f);
  assert_int_equal(kin_fence_epoch(f), 0);
  kin_call_ctx none = {0};
  assert_int_equal(kin_call_ctx_may_write(&none), 0);
  assert_int_equal(kin_call_ctx_may_write(NULL), 0);

  kin_call_ctx before = {.fence = f, .epoch = kin_fence_epoch(f)};
  assert_int_equal(kin_call_ctx_may_write(&before), KIN_EFENCED); /* not leading */

  uint64_t e1 = kin_fence_open(f, 0);
  assert_true(e1 >= 1);
  kin_call_ctx c1 = {.fence = f, .epoch = e1};
  assert_int_equal(kin_call_ctx_may_write(&c1), 0);
  kin_fence_close(f);
  assert_int_equal(kin_call_ctx_may_write(&c1), KIN_EFENCED);
  kin_fence_close(f); /* idempotent */

  uint64_t e2 = kin_fence_open(f, 0);
  assert_true(e2 > e1);
  kin_call_ctx c2 = {.fence = f, .epoch = e2};
  assert_int_equal(kin_call_ctx_may_write(&c2), 0);
  assert_int_equal(kin_call_ctx_may_write(&c1), KIN_EFENCED); /* an old epoch stays refused */
  assert_string_equal(kin_errname(KIN_EFENCED), "EFENCED");
  assert_string_equal(kin_errname(KIN_ETOOBIG), "ETOOBIG");
  kin_fence_free(f);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A time-bounded epoch stops holding at its bound without anyone closing
 * it (a paused leader), and a renewal moves the bound; a closed or newer
 * epoch cannot be renewed. */
static void test_fence_TimeBoundExpires(void **state) {
  (void)state;
  kin_fence *f = kin_fence_new();
  uint64_t e = kin_fence_open(f, now_ns() + 3600ull * 1000000000u);
  kin_call_ctx c = {.fence = f, .epoch = e};
  assert_int_equal(kin_call_ctx_may_write(&c), 0);
  assert_int_equal(kin_fence_renew(f, e, now_ns() - 1), 0); /* the bound has passed */
  assert_int_equal(kin_call_ctx_may_write(&c), KIN_EFENCED);
  assert_int_equal(kin_fence_epoch(f), e);                   /* still the open epoch */
  assert_int_equal(kin_fence_renew(f, e, now_ns() + 3600ull * 1000000000u), 0);
  assert_int_equal(kin_call_ctx_may_write(&c), 0);
  assert_int_equal(kin_fence_renew(f, e + 1, 0), KIN_EFENCED);
  kin_fence_close(f);
  assert_int_equal(kin_fence_renew(f, e, 0), KIN_EFENCED);
  assert_int_equal(kin_call_ctx_may_write(&c), KIN_EFENCED);
  kin_fence_free(f);
}

/* kin_fence_until: the open epoch's bound (0: none), 1 for an epoch that
 * is not open, UINT64_MAX without a fence. */
static void test_fence_UntilTellsTheBound(void **state) {
  (void)state;
  assert_true(kin_fence_until(NULL, 0) == UINT64_MAX);
  kin_fence *f = kin_fence_new();
  assert_true(kin_fence_until(f, 0) == 1);
  uint64_t bound = now_ns() + 5000000000ull;
  uint64_t e = kin_fence_open(f, bound);
  assert_true(kin_fence_until(f, e) == bound);
  assert_true(kin_fence_until(f, e + 1) == 1);
  assert_int_equal(kin_fence_renew(f, e, bound + 7), 0);
  assert_true(kin_fence_until(f, e) == bound + 7);
  uint64_t e2 = kin_fence_open(f, 0);
  assert_true(kin_fence_until(f, e2) == 0);
  assert_true(kin_fence_until(f, e) == 1);
  kin_fence_close(f);
  assert_true(kin_fence_until(f, e2) == 1);
  kin_fence_free(f);
}

KIN_SUITE(fence, cmocka_unit_test(test_fence_EpochsEndForGood),
          cmocka_unit_test(test_fence_TimeBoundExpires),
          cmocka_unit_test(test_fence_UntilTellsTheBound))
