/* kin_test.h -- shared by the cmocka tests in spec/c. Each file
 * spec/c/test_<suite>.c defines one suite with KIN_SUITE(<suite>, ...); the
 * Makefile generates the list and main.c runs them all as one cmocka group,
 * so a run ends with one cmocka summary. */
#ifndef KIN_TEST_H
#define KIN_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define KIN_SUITE(name, ...)                                                   \
  const struct CMUnitTest kin_suite_##name[] = {__VA_ARGS__};                  \
  const size_t kin_suite_##name##_n = sizeof(kin_suite_##name) / sizeof(kin_suite_##name[0]);

/* Polls cond every millisecond of real time for up to timeout_ms; used to
 * wait for another thread to reach a state, never to measure speed. */
#define KIN_EVENTUALLY(cond, timeout_ms)                                       \
  do {                                                                         \
    int kin__ok = 0;                                                           \
    for (int kin__i = 0; kin__i < (timeout_ms); kin__i++) {                    \
      if (cond) { kin__ok = 1; break; }                                        \
      kin_test_sleep_ms(1);                                                    \
    }                                                                          \
    if (!kin__ok && !(cond)) fail_msg("timed out waiting for: %s", #cond);    \
  } while (0)

void kin_test_sleep_ms(int ms);

/* Reads spec/c/fixtures/<name> into a malloc'd NUL-terminated buffer;
 * fails the test when missing. */
char *kin_test_fixture(const char *name, size_t *len);

#endif
