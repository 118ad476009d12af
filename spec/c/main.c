/* main.c -- runs every suite of spec/c as one cmocka group.
 * Usage: kin_tests [glob]   (cmocka test-name filter, e.g. "queue_*") */
#include "kin_test.h"

#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KIN_SUITE_USE(name)                                                    \
  extern const struct CMUnitTest kin_suite_##name[];                           \
  extern const size_t kin_suite_##name##_n;
#include "suites.h"
#undef KIN_SUITE_USE

void kin_test_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Per-test watchdog: cmocka has no timeout, and a hung test would hold CI
 * until its global limit without saying which test hung. Each test's setup
 * arms it (tests run in array order, so a counter names the test); the
 * watchdog thread ends the process with the name once a test has run
 * longer than KIN_TEST_TIMEOUT seconds (default 180). */
static struct CMUnitTest *g_tests;
static atomic_size_t g_current;     /* 1 + index of the running test; 0: none */
static atomic_llong g_started;      /* monotonic seconds when it started */
static CMFixtureFunction g_setups[1024 * 4];
static CMFixtureFunction g_teardowns[1024 * 4];

static long long mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec;
}

static size_t g_next;
static int watchdog_setup(void **state) {
  size_t i = g_next++;
  atomic_store(&g_started, mono_s());
  atomic_store(&g_current, i + 1);
  int rc = g_setups[i] ? g_setups[i](state) : 0;
  if (rc) atomic_store(&g_current, 0); /* no teardown follows a failed setup */
  return rc;
}

static int watchdog_teardown(void **state) {
  size_t i = atomic_load(&g_current) - 1;
  int rc = g_teardowns[i] ? g_teardowns[i](state) : 0;
  atomic_store(&g_current, 0);
  return rc;
}

static void *watchdog(void *arg) {
  long long limit = *(long long *)arg;
  for (;;) {
    sleep(1);
    size_t cur = atomic_load(&g_current);
    if (cur && mono_s() - atomic_load(&g_started) > limit) {
      fprintf(stderr, "\n[  TIMEOUT ] %s ran longer than %llds (KIN_TEST_TIMEOUT)\n",
              g_tests[cur - 1].name, limit);
      fflush(stderr);
      _exit(3);
    }
  }
  return NULL;
}

/* A test matches the filter as a glob of its whole name or of its name
 * without the "test_" prefix ("queue_*" selects test_queue_Basic). */
static int matches(const char *pat, const char *name) {
  if (fnmatch(pat, name, 0) == 0) return 1;
  return !strncmp(name, "test_", 5) && fnmatch(pat, name + 5, 0) == 0;
}

int main(int argc, char **argv) {
  size_t total = 0;
#define KIN_SUITE_USE(name) total += kin_suite_##name##_n;
#include "suites.h"
#undef KIN_SUITE_USE
  struct CMUnitTest *all = calloc(total, sizeof(*all));
  size_t i = 0;
#define KIN_SUITE_USE(name)                                                    \
  memcpy(all + i, kin_suite_##name, kin_suite_##name##_n * sizeof(*all));      \
  i += kin_suite_##name##_n;
#include "suites.h"
#undef KIN_SUITE_USE
  /* The filter is applied here (cmocka's glob is fnmatch's) so the array
   * holds exactly the tests that run, in order, for the watchdog. */
  size_t n = 0;
  for (size_t k = 0; k < total; k++)
    if (argc < 2 || matches(argv[1], all[k].name)) all[n++] = all[k];
  if (n > sizeof(g_setups) / sizeof(g_setups[0])) {
    fprintf(stderr, "too many tests for the watchdog table\n");
    return 1;
  }
  for (size_t k = 0; k < n; k++) {
    g_setups[k] = all[k].setup_func;
    g_teardowns[k] = all[k].teardown_func;
    all[k].setup_func = watchdog_setup;
    all[k].teardown_func = watchdog_teardown;
  }
  g_tests = all;
  static long long limit = 180;
  const char *t = getenv("KIN_TEST_TIMEOUT");
  if (t && atoll(t) > 0) limit = atoll(t);
  pthread_t wd;
  if (pthread_create(&wd, NULL, watchdog, &limit) == 0) pthread_detach(wd);
  int rc = _cmocka_run_group_tests("kinformer_core", all, n, NULL, NULL);
  free(all);
  return rc == 0 ? 0 : 1;
}
