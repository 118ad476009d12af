/* handler_rec.h -- a recording kin_event_handler shared by the listener and
 * shared informer tests: every call is appended as one line ("add ns/a 1
 * init", "update ns/a 1>2", "delete ns/a 2 tomb"), a gate can hold the
 * handler, and calls for one key can be made to fail. Also a kin_log
 * capture. Everything is static inline so a test file may use a part. */
#ifndef KIN_HANDLER_REC_H
#define KIN_HANDLER_REC_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "log.h"
#include "shared_informer.h"

static inline kin_obj *mk(const char *name, const char *rv) {
  char buf[256];
  int n = snprintf(buf, sizeof(buf),
                   "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"resourceVersion\":\"%s\"}}",
                   name, rv);
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(buf, (size_t)n, &o), 0);
  return o;
}

/* ---- a recording handler ------------------------------------------------ */

typedef struct {
  pthread_mutex_t mu; /* guards every field */
  pthread_cond_t cond;
  int gate_closed;    /* handler calls wait while set */
  int entered;        /* handler calls begun */
  char **ev;
  size_t n, cap;
  char fail_key[64];  /* calls for this key return an error */
  int start_rc, start_calls, stop_calls;
  pthread_t start_thr, stop_thr, handler_thr;
} rec;

static inline rec *rec_new(void) {
  rec *r = calloc(1, sizeof(*r));
  assert_non_null(r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cond, NULL);
  return r;
}

static inline void rec_free(rec *r) {
  for (size_t i = 0; i < r->n; i++) free(r->ev[i]);
  free(r->ev);
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

static inline int rec_handle(rec *r, const char *what) {
  pthread_mutex_lock(&r->mu);
  r->entered++;
  r->handler_thr = pthread_self();
  while (r->gate_closed) pthread_cond_wait(&r->cond, &r->mu);
  if (r->n == r->cap) {
    r->cap = r->cap ? r->cap * 2 : 64;
    r->ev = realloc(r->ev, r->cap * sizeof(*r->ev));
  }
  r->ev[r->n++] = strdup(what);
  int fail = 0;
  if (r->fail_key[0]) {
    const char *k = strchr(what, ' ') + 1;
    size_t kl = strlen(r->fail_key);
    fail = strncmp(k, r->fail_key, kl) == 0 && (k[kl] == ' ' || k[kl] == 0);
  }
  pthread_mutex_unlock(&r->mu);
  return fail ? -1 : 0;
}

static inline int on_add(void *ud, kin_obj *o, int initial) {
  char b[160];
  snprintf(b, sizeof(b), "add %s %s%s", kin_obj_key(o), kin_obj_resource_version(o),
           initial ? " init" : "");
  return rec_handle(ud, b);
}

static inline int on_update(void *ud, kin_obj *old, kin_obj *o) {
  char b[160];
  snprintf(b, sizeof(b), "update %s %s>%s", kin_obj_key(o), kin_obj_resource_version(old),
           kin_obj_resource_version(o));
  return rec_handle(ud, b);
}

static inline int on_delete(void *ud, kin_obj *o) {
  char b[160];
  snprintf(b, sizeof(b), "delete %s %s%s", kin_obj_key(o), kin_obj_resource_version(o),
           kin_obj_is_tombstone(o) ? " tomb" : "");
  return rec_handle(ud, b);
}

static inline int on_start(void *ud) {
  rec *r = ud;
  pthread_mutex_lock(&r->mu);
  r->start_calls++;
  r->start_thr = pthread_self();
  int rc = r->start_rc;
  pthread_mutex_unlock(&r->mu);
  return rc;
}

static inline void on_stop(void *ud) {
  rec *r = ud;
  pthread_mutex_lock(&r->mu);
  r->stop_calls++;
  r->stop_thr = pthread_self();
  pthread_mutex_unlock(&r->mu);
}

static inline kin_event_handler handler_for(rec *r) {
  kin_event_handler h = {on_add, on_update, on_delete, on_start, on_stop, r};
  return h;
}

static inline size_t rec_count(rec *r) {
  pthread_mutex_lock(&r->mu);
  size_t n = r->n;
  pthread_mutex_unlock(&r->mu);
  return n;
}

static inline int rec_entered(rec *r) {
  pthread_mutex_lock(&r->mu);
  int n = r->entered;
  pthread_mutex_unlock(&r->mu);
  return n;
}

static inline void rec_expect(rec *r, size_t i, const char *want) {
  pthread_mutex_lock(&r->mu);
  char got[160] = "(none)";
  if (i < r->n) snprintf(got, sizeof(got), "%s", r->ev[i]);
  pthread_mutex_unlock(&r->mu);
  assert_string_equal(got, want);
}

static inline void rec_gate(rec *r, int closed) {
  pthread_mutex_lock(&r->mu);
  r->gate_closed = closed;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->mu);
}


/* 1 when some recorded line equals line. */
static inline int rec_has(rec *r, const char *line) {
  pthread_mutex_lock(&r->mu);
  int found = 0;
  for (size_t i = 0; i < r->n && !found; i++) found = strcmp(r->ev[i], line) == 0;
  pthread_mutex_unlock(&r->mu);
  return found;
}

static inline int rec_cmp_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines recorded from index from on, without those containing skip
 * (NULL: none), sorted and joined with '\n' into buf. Sorting makes the
 * comparison independent of the order of different keys. */
static inline const char *rec_dump(rec *r, size_t from, const char *skip, char *buf, size_t cap) {
  pthread_mutex_lock(&r->mu);
  size_t n = 0;
  char **v = calloc(r->n + 1, sizeof(*v));
  for (size_t i = from; i < r->n; i++)
    if (!skip || !strstr(r->ev[i], skip)) v[n++] = r->ev[i];
  qsort(v, n, sizeof(*v), rec_cmp_lines);
  buf[0] = 0;
  size_t used = 0;
  for (size_t i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "\n" : "", v[i]);
  free(v);
  pthread_mutex_unlock(&r->mu);
  return buf;
}

/* ---- log capture -------------------------------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER; /* guards log_text */
static char log_text[8192];

static inline void capture(void *ud, kin_log_level lv, const char *comp, const char *msg) {
  (void)ud;
  pthread_mutex_lock(&log_mu);
  size_t used = strlen(log_text);
  snprintf(log_text + used, sizeof(log_text) - used, "%d %s %s\n", (int)lv, comp, msg);
  pthread_mutex_unlock(&log_mu);
}

static inline int log_contains(const char *s) {
  pthread_mutex_lock(&log_mu);
  int r = strstr(log_text, s) != NULL;
  pthread_mutex_unlock(&log_mu);
  return r;
}

static inline void log_capture(int on) {
  pthread_mutex_lock(&log_mu);
  log_text[0] = 0;
  pthread_mutex_unlock(&log_mu);
  kin_log_set_sink(on ? capture : NULL, NULL);
}

#endif
