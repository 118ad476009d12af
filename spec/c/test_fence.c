/* test_fence.c -- the leadership fence of call_ctx.h: a context made in an
 * epoch may write while that epoch is open, and never after it ends, even
 * when a later epoch opens. */
#include "kin_test.h"

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

  uint64_t e1 = kin_fence_open(f);
  assert_true(e1 >= 1);
  kin_call_ctx c1 = {.fence = f, .epoch = e1};
  assert_int_equal(kin_call_ctx_may_write(&c1), 0);
  kin_fence_close(f);
  assert_int_equal(kin_call_ctx_may_write(&c1), KIN_EFENCED);
  kin_fence_close(f); /* idempotent */

  uint64_t e2 = kin_fence_open(f);
  assert_true(e2 > e1);
  kin_call_ctx c2 = {.fence = f, .epoch = e2};
  assert_int_equal(kin_call_ctx_may_write(&c2), 0);
  assert_int_equal(kin_call_ctx_may_write(&c1), KIN_EFENCED); /* an old epoch stays refused */
  assert_string_equal(kin_errname(KIN_EFENCED), "EFENCED");
  assert_string_equal(kin_errname(KIN_ETOOBIG), "ETOOBIG");
  kin_fence_free(f);
}

KIN_SUITE(fence, cmocka_unit_test(test_fence_EpochsEndForGood))
