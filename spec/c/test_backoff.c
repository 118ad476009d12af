/* test_backoff.c -- ports of apimachinery's wait backoff tests
 * (TestBackoff_Step, TestExponentialBackoffManagerGetNextBackoff,
 * TestJitteredBackoffManagerGetNextBackoff) onto kin_backoff, plus the
 * reflector's own parameters (800 ms doubling to 30 s, jitter 1.0, reset
 * after 2 minutes) on a fake clock. */
#include "kin_test.h"

#include "backoff.h"
#include "clock.h"
#include "kin.h"
#include "reflector.h"

#define SEC KIN_NSEC_PER_SEC
#define MS KIN_NSEC_PER_MSEC

typedef struct {
  kin_backoff b;
  uint64_t want[6]; /* base delays; with jitter j a step lies in [w, w * (1 + j)] */
  int n;
} step_case;

static void test_backoff_BackoffStep(void **state) {
  (void)state;
  assert_int_equal(kin_backoff_step(NULL), 0);
  step_case cases[] = {
      {{.duration_ns = SEC, .steps = -1}, {SEC, SEC, SEC}, 3},
      {{.duration_ns = SEC, .steps = 0}, {SEC, SEC, SEC}, 3},
      {{.duration_ns = SEC, .steps = 1}, {SEC, SEC, SEC}, 3},
      {{.duration_ns = SEC, .factor = 1.0, .steps = 1}, {SEC, SEC, SEC}, 3},
      {{.duration_ns = SEC, .factor = 2, .steps = 3}, {SEC, 2 * SEC, 4 * SEC}, 3},
      {{.duration_ns = SEC, .factor = 2, .steps = 3, .cap_ns = 3 * SEC}, {SEC, 2 * SEC, 3 * SEC}, 3},
      {{.duration_ns = SEC, .factor = 2, .steps = 2, .cap_ns = 3 * SEC, .jitter = 0.5},
       {SEC, 2 * SEC, 3 * SEC}, 3},
      {{.duration_ns = SEC, .factor = 2, .steps = 6, .jitter = 4},
       {SEC, 2 * SEC, 4 * SEC, 8 * SEC, 16 * SEC, 32 * SEC}, 6},
  };
  for (uint64_t seed = 1; seed <= 5; seed++) {
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
      kin_backoff b = cases[c].b;
      b.rng = seed * 7919;
      int jittered = 0;
      for (int i = 0; i < cases[c].n; i++) {
        uint64_t got = kin_backoff_step(&b), want = cases[c].want[i];
        if (b.jitter > 0) {
          assert_true(got >= want);
          assert_true((double)got <= (double)want * (1.0 + b.jitter));
          jittered += got != want;
        } else {
          assert_int_equal(got, want);
        }
      }
      if (b.jitter > 0) assert_true(jittered > 0); /* all equal: no jitter applied */
    }
  }
}

static void test_backoff_ExponentialBackoffManagerGetNextBackoff(void **state) {
  (void)state;
  kin_clock *fc = kin_fake_clock_new(1000 * SEC);
  kin_backoff_manager m;
  kin_backoff_manager_init(&m, 1, 10, 10, 2.0, 0.0, fc);
  uint64_t want[] = {1, 2, 4, 8, 10, 10, 10};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    assert_int_equal(kin_backoff_manager_next(&m), want[i]);
  kin_fake_clock_step(fc, 11);
  assert_int_equal(kin_backoff_manager_next(&m), 1);
  kin_fake_clock_free(fc);
}

static void test_backoff_JitteredBackoffManagerGetNextBackoff(void **state) {
  (void)state;
  /* A constant delay with jitter 1: each in [1 s, 2 s], not all equal. */
  kin_backoff b = {.duration_ns = SEC, .jitter = 1};
  uint64_t first = kin_backoff_step(&b);
  int differ = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t d = kin_backoff_step(&b);
    assert_true(d >= SEC && d <= 2 * SEC);
    differ += d != first;
  }
  assert_true(differ > 0);
  /* Negative jitter: a fixed backoff. */
  kin_backoff fixed = {.duration_ns = 1, .jitter = -1};
  assert_int_equal(kin_backoff_step(&fixed), 1);
  /* wait.Jitter with a non-positive factor jitters by up to 1.0. */
  uint64_t rng = 42;
  for (int i = 0; i < 100; i++) {
    uint64_t d = kin_jitter(1000, 0, &rng);
    assert_true(d >= 1000 && d < 2000);
  }
}

/* The reflector's backoff (client-go's NewExponentialBackoffManager(800ms,
 * 30s, 2min, 2.0, 1.0)): doubling from 0.8 s, then [30 s, 60 s) forever,
 * back to 0.8 s after more than 2 minutes without a backoff. */
static void test_backoff_ReflectorBackoffManager(void **state) {
  (void)state;
  kin_clock *fc = kin_fake_clock_new(1000 * SEC);
  kin_backoff_manager m;
  kin_backoff_manager_init(&m, KIN_REFLECTOR_BACKOFF_INITIAL_NS, KIN_REFLECTOR_BACKOFF_MAX_NS,
                           KIN_REFLECTOR_BACKOFF_RESET_NS, 2.0, 1.0, fc);
  uint64_t base[] = {800 * MS, 1600 * MS, 3200 * MS, 6400 * MS, 12800 * MS, 25600 * MS,
                     30 * SEC, 30 * SEC, 30 * SEC};
  for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
    uint64_t d = kin_backoff_manager_next(&m);
    assert_true(d >= base[i]);
    assert_true(d < 2 * base[i]);
    kin_fake_clock_step(fc, 20 * SEC); /* failures 20 s apart: no reset */
  }
  /* Exactly the reset window since the last backoff: not reset. */
  kin_fake_clock_step(fc, KIN_REFLECTOR_BACKOFF_RESET_NS - 20 * SEC);
  assert_true(kin_backoff_manager_next(&m) >= 30 * SEC);
  kin_fake_clock_step(fc, KIN_REFLECTOR_BACKOFF_RESET_NS);
  uint64_t d = kin_backoff_manager_next(&m);
  assert_true(d >= 30 * SEC && d < 60 * SEC);
  /* Healthy for longer than 2 minutes: back to 0.8 s. */
  kin_fake_clock_step(fc, KIN_REFLECTOR_BACKOFF_RESET_NS + 1);
  d = kin_backoff_manager_next(&m);
  assert_true(d >= 800 * MS && d < 1600 * MS);
  d = kin_backoff_manager_next(&m);
  assert_true(d >= 1600 * MS && d < 3200 * MS);
  kin_fake_clock_free(fc);
}

KIN_SUITE(backoff, cmocka_unit_test(test_backoff_BackoffStep),
          cmocka_unit_test(test_backoff_ExponentialBackoffManagerGetNextBackoff),
          cmocka_unit_test(test_backoff_JitteredBackoffManagerGetNextBackoff),
          cmocka_unit_test(test_backoff_ReflectorBackoffManager))
