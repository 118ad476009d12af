/* kin_test_util.c -- helpers shared by several suites in spec/c: test
 * objects built from a few metadata fields, a '.'-splitting label index
 * function, a sorted join for one-line set comparisons, and indexer set-up
 * that fails the test on error. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "sim.h"

int kin_test_cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *kin_test_join(char **v, size_t n, char *buf, size_t cap) {
  qsort(v, n, sizeof(char *), kin_test_cmp_str);
  buf[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (i) strncat(buf, ",", cap - strlen(buf) - 1);
    strncat(buf, v[i], cap - strlen(buf) - 1);
  }
  return buf;
}

/* No cmocka assertion here: writer threads of the concurrency tests call
 * it, and a failing assertion longjmps out of the wrong thread. */
kin_obj *kin_test_obj_try(const char *ns, const char *name, const char *rv, const char *labels,
                          const char *extra) {
  char buf[4096];
  int n = snprintf(buf, sizeof(buf),
                   "{\"metadata\":{\"name\":\"%s\"%s%s%s,\"resourceVersion\":\"%s\"%s%s%s%s}}",
                   name, ns ? ",\"namespace\":\"" : "", ns ? ns : "", ns ? "\"" : "",
                   rv ? rv : "1", labels ? ",\"labels\":" : "", labels ? labels : "",
                   extra ? "," : "", extra ? extra : "");
  /* A truncated document would be parsed past its end or mean another
   * object than the test asked for. */
  if (n < 0 || (size_t)n >= sizeof(buf)) return NULL;
  kin_obj *o = NULL;
  if (kin_obj_parse(buf, (size_t)n, &o) < 0) return NULL;
  return o;
}

kin_obj *kin_test_obj_ext(const char *ns, const char *name, const char *rv, const char *labels,
                          const char *extra) {
  kin_obj *o = kin_test_obj_try(ns, name, rv, labels, extra);
  assert_non_null(o);
  return o;
}

kin_obj *kin_test_obj(const char *ns, const char *name, const char *rv, const char *labels) {
  return kin_test_obj_ext(ns, name, rv, labels, NULL);
}

/* The value is copied because strtok_r writes into what it splits, and the
 * object's labels are shared and immutable. */
int kin_test_split_label_index(void *ud, const kin_obj *o, kin_index_emit_fn emit, void *ctx) {
  const char *v = kin_obj_label(o, (const char *)ud);
  if (!v) return 0;
  char *copy = strdup(v);
  if (!copy) return KIN_ENOMEM;
  int r = 0;
  char *save = NULL;
  for (char *t = strtok_r(copy, ".", &save); t && r >= 0; t = strtok_r(NULL, ".", &save))
    r = emit(ctx, t);
  free(copy);
  return r < 0 ? r : 0;
}

kin_indexer *kin_test_indexer_new(void) {
  kin_indexer *s = NULL;
  assert_int_equal(kin_indexer_new(&s), 0);
  assert_non_null(s);
  return s;
}

void kin_test_indexer_add(kin_indexer *s, kin_obj *o) {
  assert_int_equal(kin_indexer_add(s, o), 0);
  kin_obj_unref(o);
}

const char *kin_test_e2e_env(const char *name) {
  const char *v = getenv(name);
  if (v && *v) return v;
  const char *req = getenv("KIN_E2E_REQUIRED");
  if (req && !strcmp(req, "1")) fail_msg("%s is not set but KIN_E2E_REQUIRED=1", name);
  skip();
  return NULL;
}

const char *kin_test_fixture_path(const char *name) {
  static char bufs[8][512];
  static unsigned k;
  char *p = bufs[k++ % 8];
  const char *dir = getenv("KIN_FIXTURES");
  snprintf(p, sizeof(bufs[0]), "%s/%s", dir ? dir : "spec/c/fixtures", name);
  return p;
}

kin_sim *kin_test_sim_start(int tls) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  if (tls) {
    cfg.tls_cert_file = kin_test_fixture_path("sim_tls.crt");
    cfg.tls_key_file = kin_test_fixture_path("sim_tls.key");
  }
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}
