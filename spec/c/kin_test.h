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

#include "indexer.h"
#include "kobj.h"

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

/* ---- kin_test_util.c ---------------------------------------------------- */

/* qsort comparator for an array of C strings. */
int kin_test_cmp_str(const void *a, const void *b);

/* Sorts v in place and joins it with ',' into buf (truncated to cap), for
 * one-line set comparisons; returns buf. v stays the caller's. */
const char *kin_test_join(char **v, size_t n, char *buf, size_t cap);

/* A new object (the caller owns the reference) with metadata name, ns
 * (NULL: cluster-scoped), resourceVersion rv (NULL: "1"), labels (a raw JSON
 * object or NULL) and extra (raw JSON metadata members such as
 * "\"ownerReferences\":[...]", or NULL). The _try form returns NULL on
 * failure and is safe off the test thread; the others fail the test. */
kin_obj *kin_test_obj_try(const char *ns, const char *name, const char *rv, const char *labels,
                          const char *extra);
kin_obj *kin_test_obj_ext(const char *ns, const char *name, const char *rv, const char *labels,
                          const char *extra);
kin_obj *kin_test_obj(const char *ns, const char *name, const char *rv, const char *labels);

/* Index function: ud is a label key (a string that outlives the index);
 * emits each '.'-separated part of that label's value, none when absent.
 * Stands for the comma-splitting index functions of client-go's tests, on
 * '.' because a comma is not valid in a label value. */
int kin_test_split_label_index(void *ud, const kin_obj *o, kin_index_emit_fn emit, void *ctx);

/* A new indexer (the caller frees it); fails the test on error. */
kin_indexer *kin_test_indexer_new(void);

/* Adds o and drops the caller's reference to it; fails the test when the
 * add fails. */
void kin_test_indexer_add(kin_indexer *s, kin_obj *o);

/* For test_e2e_* tests (the real kube-apiserver tier): returns the value
 * of the KINFORMER_E2E_* variable name (e.g. "KINFORMER_E2E_ADMIN_KUBECONFIG"),
 * which spec/e2e/cluster.sh exports. When it is unset the test is skipped
 * (make test), or fails when KIN_E2E_REQUIRED=1 (make e2e-c), so the e2e
 * tier cannot pass by skipping. */
const char *kin_test_e2e_env(const char *name);

/* The path of the fixture file name: under $KIN_FIXTURES, else
 * spec/c/fixtures. Returns one of 8 static buffers used in turn (so a few
 * paths can be live at once); the tests' own thread only. */
const char *kin_test_fixture_path(const char *name);

/* Reads the fixture file name (see kin_test_fixture_path) into a malloc'd
 * NUL-terminated buffer; fails the test when missing. */
char *kin_test_fixture(const char *name, size_t *len);

struct kin_sim;
/* Starts a kinformer.sim with the default config, serving HTTPS with the
 * fixture certificate sim_tls.crt when tls is non-zero; fails the test
 * when it cannot. The caller stops it with kin_sim_stop. */
/* kin_sim_config.controllers for suites that test the API server: every
 * default controller but the workloads' (docs/sim.md "Workloads"). */
#define KIN_TEST_NO_WORKLOADS \
  "*,-deployment,-replicaset,-statefulset,-daemonset,-job,-cronjob,-scheduler,-kubelet"

struct kin_sim *kin_test_sim_start(int tls);
/* The same, serving HTTPS with the fixture files cert and key (NULL cert:
 * plain HTTP). */
struct kin_sim *kin_test_sim_start_cert(const char *cert, const char *key);

/* Captures kin's log (every thread, at the current level) instead of
 * printing it, from kin_test_log_start until kin_test_log_stop (which
 * restores the stderr sink; call it once the threads that log are
 * stopped), so that tests which provoke warnings assert them and keep the
 * run's output clean. kin_test_log_count: the captured lines containing s
 * (NULL: all lines); kin_test_log_expect_only: fails the test, printing
 * the capture, unless every line contains s. */
void kin_test_log_start(void);
void kin_test_log_stop(void);
int kin_test_log_count(const char *s);
void kin_test_log_expect_only(const char *s);

#endif
