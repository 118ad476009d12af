/* main.c -- runs every suite of spec/c as one cmocka group.
 * Usage: kin_tests [glob]   (cmocka test-name filter, e.g. "queue_*") */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KIN_SUITE_USE(name)                                                    \
  extern const struct CMUnitTest kin_suite_##name[];                           \
  extern const size_t kin_suite_##name##_n;
#include "suites.h"
#undef KIN_SUITE_USE

void kin_test_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

char *kin_test_fixture(const char *name, size_t *len) {
  char path[512];
  const char *dir = getenv("KIN_FIXTURES");
  snprintf(path, sizeof(path), "%s/%s", dir ? dir : "spec/c/fixtures", name);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("fixture %s not found", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = 0;
  fclose(f);
  if (len) *len = (size_t)n;
  return buf;
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
  if (argc > 1) cmocka_set_test_filter(argv[1]);
  int rc = _cmocka_run_group_tests("kinformer_core", all, total, NULL, NULL);
  free(all);
  return rc == 0 ? 0 : 1;
}
