/* rest_test.h -- helpers shared by the REST client suites
 * (test_rest_client.c, test_client_auth.c, test_e2e_client.c): a client for
 * a URL, a request run on another thread (so the test can drive the fake
 * clock it waits on), and substring checks on results. Include after
 * kin_test.h. */
#ifndef KIN_REST_TEST_H
#define KIN_REST_TEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "log.h"
#include "rest_client.h"

/* A client for host (no auth, no TLS) with opts (NULL: no rate limit, as
 * unlimited tests must never wait on a clock); fails the test on error. */
static inline kin_client *rt_client(const char *host, const kin_client_opts *opts) {
  kin_rest_config cfg = {.host = (char *)host};
  kin_client_opts o = {.qps = -1};
  kin_client *c = NULL;
  char err[256];
  int rc = kin_client_new(&cfg, NULL, opts ? opts : &o, &c, err, sizeof err);
  if (rc) fail_msg("kin_client_new: %s", err);
  return c;
}

/* Resolves name or fails the test. */
static inline kin_resource rt_resource(kin_client *c, const char *name) {
  kin_resource r;
  int rc = kin_client_resource(c, name, &r);
  if (rc) fail_msg("resource %s: %s", name, kin_strerror(rc));
  return r;
}

/* A ConfigMap named name; meta: more metadata members (",\"labels\":{...}"
 * or ""), data: its data object. */
#define RT_CM(name, meta, data)                                                             \
  "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"" name "\"" meta \
  "},\"data\":" data "}"

/* A Deployment named name with one replica; extra: more top-level members
 * (",\"status\":{...}" or ""). */
#define RT_DEPLOYMENT(name, extra)                                                          \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"" name "\"},"     \
  "\"spec\":{\"replicas\":1,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"                          \
  "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":"              \
  "[{\"name\":\"c\",\"image\":\"i\"}]}}}" extra "}"

/* Copies the value of the first "name":"..." in json (a flat string field
 * such as uid or resourceVersion) into buf; fails the test when absent. */
static inline const char *rt_field(const char *json, const char *name, char *buf, size_t n) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":\"", name);
  const char *p = strstr(json, pat);
  if (!p) fail_msg("no %s in %s", name, json);
  p += strlen(pat);
  size_t k = strcspn(p, "\"");
  assert_true(k < n);
  memcpy(buf, p, k);
  buf[k] = 0;
  return buf;
}

/* 1 when the result body contains s. */
static inline int rt_body_has(const kin_result *r, const char *s) {
  return r->body && strstr(r->body, s) != NULL;
}

/* A kin_client_do running on its own thread. */
typedef struct {
  kin_client *c;
  kin_client_request req;
  kin_result res;
  int rc;
  atomic_int done;
  pthread_t th;
} rt_async;

static inline void *rt_async_main(void *p) {
  rt_async *a = p;
  a->rc = kin_client_do(a->c, &a->req, &a->res);
  atomic_store(&a->done, 1);
  return NULL;
}

static inline void rt_async_start(rt_async *a, kin_client *c, const char *method,
                                  const char *path, int idempotent) {
  memset(a, 0, sizeof *a);
  a->c = c;
  a->req = (kin_client_request){.method = method, .path = path, .idempotent = idempotent};
  atomic_init(&a->done, 0);
  assert_int_equal(pthread_create(&a->th, NULL, rt_async_main, a), 0);
}

static inline void rt_async_join(rt_async *a) { pthread_join(a->th, NULL); }

/* Every log line while installed, at every level (rt_log_start raises
 * the level to DEBUG, rt_log_stop restores WARN and the stderr sink). */
typedef struct {
  pthread_mutex_t mu;
  char text[65536];
  size_t len;
} rt_log;

static inline void rt_log_sink(void *ud, kin_log_level level, const char *component,
                               const char *msg) {
  rt_log *l = ud;
  pthread_mutex_lock(&l->mu);
  int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%s: %s\n", component, msg);
  if (n > 0) l->len += (size_t)n < sizeof l->text - l->len ? (size_t)n : sizeof l->text - l->len - 1;
  pthread_mutex_unlock(&l->mu);
}

static inline void rt_log_start(rt_log *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->mu, NULL);
  kin_log_set_level(KIN_LOG_DEBUG);
  kin_log_set_sink(rt_log_sink, l);
}

static inline void rt_log_stop(rt_log *l) {
  kin_log_set_sink(NULL, NULL);
  kin_log_set_level(KIN_LOG_WARN);
  pthread_mutex_destroy(&l->mu);
}

/* Number of log lines containing s. */
static inline int rt_log_count(rt_log *l, const char *s) {
  pthread_mutex_lock(&l->mu);
  int n = 0;
  for (const char *p = l->text; (p = strstr(p, s)); p += strlen(s)) n++;
  pthread_mutex_unlock(&l->mu);
  return n;
}

/* The number after the n-th (0-based) occurrence of s in the log, or -1. */
static inline long rt_log_number_after(rt_log *l, const char *s, int nth) {
  pthread_mutex_lock(&l->mu);
  long v = -1;
  const char *p = l->text;
  for (int i = 0; p && (p = strstr(p, s)); i++, p += strlen(s))
    if (i == nth) {
      v = strtol(p + strlen(s), NULL, 10);
      break;
    }
  pthread_mutex_unlock(&l->mu);
  return v;
}

#endif
