/* kin_test_util.c -- helpers shared by several suites in spec/c: test
 * objects built from a few metadata fields, a '.'-splitting label index
 * function, a sorted join for one-line set comparisons, indexer set-up
 * that fails the test on error, fixture paths and contents, a sim started
 * with the default config, and a capture of kin's log. */
#include "kin_test.h"
#include "kin_test_pb.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "log.h"
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

char *kin_test_fixture(const char *name, size_t *len) {
  const char *path = kin_test_fixture_path(name);
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

kin_sim *kin_test_sim_start_cert(const char *cert, const char *key) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  /* without the workloads' controllers: the suites test the API
   * server's answers about Deployments and Pods, which they would change
   * (pods scheduled and run, status written) */
  cfg.controllers = KIN_TEST_NO_WORKLOADS;
  if (cert) {
    cfg.tls_cert_file = kin_test_fixture_path(cert);
    cfg.tls_key_file = kin_test_fixture_path(key);
  }
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}

kin_sim *kin_test_sim_start(int tls) {
  return tls ? kin_test_sim_start_cert("sim_tls.crt", "sim_tls.key")
             : kin_test_sim_start_cert(NULL, NULL);
}

/* The log capture: lines "<level> <component>: <msg>\n", appended by any
 * thread; what does not fit in the buffer is dropped (and counted). */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_len, log_dropped;

static void log_capture(void *ud, kin_log_level level, const char *component, const char *msg) {
  (void)ud;
  static const char *const names[] = {"error", "warn", "info", "debug"};
  pthread_mutex_lock(&log_mu);
  size_t room = sizeof(log_text) - log_len;
  int n = snprintf(log_text + log_len, room, "%s %s: %s\n",
                   (unsigned)level < 4 ? names[level] : "?", component, msg);
  if (n > 0 && (size_t)n < room)
    log_len += (size_t)n;
  else
    log_text[log_len] = 0, log_dropped++;
  pthread_mutex_unlock(&log_mu);
}

void kin_test_log_start(void) {
  pthread_mutex_lock(&log_mu);
  log_text[0] = 0;
  log_len = log_dropped = 0;
  pthread_mutex_unlock(&log_mu);
  kin_log_set_sink(log_capture, NULL);
}

void kin_test_log_stop(void) { kin_log_set_sink(NULL, NULL); }

int kin_test_log_count(const char *s) {
  pthread_mutex_lock(&log_mu);
  int n = 0;
  for (const char *line = log_text; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (!s) {
      n++;
    } else {
      const char *hit = strstr(line, s);
      if (hit && hit < line + len) n++;
    }
    line += len + (end ? 1 : 0);
  }
  n += s ? 0 : (int)log_dropped;
  pthread_mutex_unlock(&log_mu);
  return n;
}

void kin_test_log_expect_only(const char *s) {
  int all = kin_test_log_count(NULL), match = kin_test_log_count(s);
  if (all != match) {
    pthread_mutex_lock(&log_mu);
    fprintf(stderr, "captured log:\n%s", log_text);
    pthread_mutex_unlock(&log_mu);
    fail_msg("%d of %d log line(s) do not contain \"%s\"", all - match, all, s);
  }
}

void kin_test_pb_field(kin__buf *b, int num, const void *p, size_t n) {
  unsigned char t = (unsigned char)(num << 3 | 2);
  kin__buf_add(b, (const char *)&t, 1);
  for (size_t v = n;; v >>= 7) {
    unsigned char c = (unsigned char)(v & 0x7f);
    if (v >= 0x80) c |= 0x80;
    kin__buf_add(b, (const char *)&c, 1);
    if (v < 0x80) break;
  }
  kin__buf_add(b, p, n);
}
