/* delta_fifo_fx.h -- fixture of the DeltaFIFO specs (test_delta_fifo*.c):
 * objects by name and resourceVersion, deltas rendered as strings, a
 * test-local knownObjects (key -> object over a kin__hmap), and helpers that
 * pop, get, list keys and run a string of operations on a FIFO.
 *
 * Objects are cluster-scoped, so a key is the name; client-go's tests' `val`
 * is the resourceVersion. Deltas are compared as rendered strings:
 * "Added foo@10" for an object, "Deleted ~bar{bar@6}" for a tombstone with
 * its last state, "Deleted ~bar{}" for one without. Header-only (static
 * inline), like reflector_fx.h. */
#ifndef KIN_DELTA_FIFO_FX_H
#define KIN_DELTA_FIFO_FX_H

#include "kin_test.h"

#include "delta_fifo.h"
#include "hmap.h"
#include "kin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- objects ------------------------------------------------------------- */

static inline kin_obj *parse(const char *json) {
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(json, strlen(json), &o), 0);
  return o;
}

/* New reference to an object named name at resourceVersion rv, or NULL;
 * usable off the test thread, where cmocka asserts must not run. */
static inline kin_obj *mk_raw(const char *name, int rv) {
  char buf[256];
  int n = snprintf(buf, sizeof(buf),
                   "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%d\"}}", name, rv);
  kin_obj *o = NULL;
  return kin_obj_parse(buf, (size_t)n, &o) == 0 ? o : NULL;
}

static inline kin_obj *mk(const char *name, int rv) {
  kin_obj *o = mk_raw(name, rv);
  assert_non_null(o);
  return o;
}

static inline int rv_of(const kin_obj *o) { return atoi(kin_obj_resource_version(o)); }

static inline void render_obj(kin_obj *o, char *b, size_t cap) {
  if (!o) {
    snprintf(b, cap, "NULL");
  } else if (kin_obj_is_tombstone(o)) {
    int n = snprintf(b, cap, "~%s{", kin_obj_key(o));
    if (kin_obj_last_state(o) && (size_t)n < cap)
      render_obj(kin_obj_last_state(o), b + n, cap - (size_t)n); /* shows nesting */
    else if ((size_t)n < cap)
      b[n] = 0;
    size_t m = strlen(b);
    snprintf(b + m, cap - m, "}");
  } else {
    snprintf(b, cap, "%s@%s", kin_obj_key(o), kin_obj_resource_version(o));
  }
}

static inline void render(const kin_deltas *d, char *b, size_t cap) {
  size_t n = 0;
  b[0] = 0;
  for (size_t i = 0; i < d->len && n < cap; i++) {
    char ob[160];
    render_obj(d->v[i].obj, ob, sizeof(ob));
    n += (size_t)snprintf(b + n, cap - n, "%s%s %s", i ? ", " : "",
                          kin_delta_type_name(d->v[i].type), ob);
  }
}

/* ---- a test-local knownObjects: key -> object over a kin__hmap ----------- */

typedef struct {
  kin__hmap m;       /* key -> kin_obj* (owned reference) */
  const char *ghost; /* listed by list_keys but not found by get (may be NULL) */
} known_set;

static inline void known_put(known_set *k, kin_obj *o) { /* takes o's reference */
  void *old = NULL;
  assert_true(kin__hmap_put(&k->m, kin_obj_key(o), o, &old) >= 0);
  kin_obj_unref(old);
}

static inline void known_del(known_set *k, const char *key) {
  void *old = NULL;
  if (kin__hmap_del(&k->m, key, &old)) kin_obj_unref(old);
}

/* Takes the references of a NULL-terminated list of objects. */
static inline void known_init(known_set *k, ...) {
  memset(k, 0, sizeof(*k));
  kin__hmap_init(&k->m);
  va_list ap;
  va_start(ap, k);
  kin_obj *o;
  while ((o = va_arg(ap, kin_obj *))) known_put(k, o);
  va_end(ap);
}

static inline void known_free(known_set *k) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&k->m, &pos))) kin_obj_unref(e->val);
  kin__hmap_free(&k->m);
}

/* Sorted, so tests that expect several known-only tombstones see them in
 * a fixed order (client-go's literalListerGetter lists in slice order). */
static inline int known_list_keys(void *ud, int (*fn)(void *ctx, const char *key), void *ctx) {
  known_set *k = ud;
  size_t n = kin__hmap_len(&k->m), i = 0, pos = 0;
  const char **keys = calloc(n + 1, sizeof(*keys));
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&k->m, &pos))) keys[i++] = e->key;
  if (k->ghost) keys[i++] = k->ghost;
  qsort(keys, i, sizeof(*keys), kin_test_cmp_str);
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < i; j++) rc = fn(ctx, keys[j]);
  free(keys);
  return rc;
}

static inline kin_obj *known_get(void *ud, const char *key) {
  known_set *k = ud;
  void **v = kin__hmap_get(&k->m, key);
  return v ? kin_obj_ref(*v) : NULL;
}

static inline kin_delta_fifo *new_fifo(known_set *k) {
  kin_delta_fifo_config cfg = {0};
  if (k) cfg.known_objects = (kin_key_lister){k, known_list_keys, known_get};
  kin_delta_fifo *f = NULL;
  assert_int_equal(kin_delta_fifo_new(&cfg, &f), 0);
  return f;
}

/* ---- FIFO helpers -------------------------------------------------------- */

typedef struct {
  int called;
  char key[128];
  char deltas[1024];
  int initial;
  size_t len;
  kin_obj *newest; /* owned reference */
  int ret;         /* what process returns */
} popped;

static inline int capture(void *ud, const char *key, const kin_deltas *d, int initial) {
  popped *p = ud;
  p->called++;
  snprintf(p->key, sizeof(p->key), "%s", key);
  render(d, p->deltas, sizeof(p->deltas));
  p->initial = initial;
  p->len = d->len;
  kin_obj_unref(p->newest);
  p->newest = kin_obj_ref(kin_deltas_newest(d));
  return p->ret;
}

/* Pops one key (failing instead of blocking when the FIFO is empty) and
 * checks its rendered deltas; returns the is_in_initial_list flag. */
static inline int pop_expect(kin_delta_fifo *f, const char *want) {
  assert_true(kin_delta_fifo_len(f) > 0);
  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.deltas, want);
  kin_obj_unref(p.newest);
  return p.initial;
}

/* testPop: pops one key and returns the resourceVersion of its newest
 * object (a tombstone's last state). */
static inline int pop_rv(kin_delta_fifo *f) {
  assert_true(kin_delta_fifo_len(f) > 0);
  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_non_null(p.newest);
  int rv = rv_of(p.newest);
  kin_obj_unref(p.newest);
  return rv;
}

static inline void get_expect(kin_delta_fifo *f, const char *key, const char *want) {
  kin_deltas d;
  assert_int_equal(kin_delta_fifo_get(f, key, &d), 0);
  char b[1024];
  render(&d, b, sizeof(b));
  kin_deltas_free(&d);
  assert_string_equal(b, want);
}

static inline void get_absent(kin_delta_fifo *f, const char *key) {
  kin_deltas d;
  assert_int_equal(kin_delta_fifo_get(f, key, &d), KIN_ENOENT);
}

static inline int join_key(void *ctx, const char *key) {
  char *b = ctx;
  size_t n = strlen(b);
  snprintf(b + n, 512 - n, "%s%s", n ? "," : "", key);
  return 0;
}

static inline void keys_expect(kin_delta_fifo *f, const char *want) {
  char b[512] = "";
  assert_int_equal(kin_delta_fifo_list_keys(f, join_key, b), 0);
  assert_string_equal(b, want);
}

/* The Go tests' one-liners: each call borrows obj and drops it. */
static inline int do_add(kin_delta_fifo *f, kin_obj *o) {
  int rc = kin_delta_fifo_add(f, o);
  kin_obj_unref(o);
  return rc;
}
static inline int do_update(kin_delta_fifo *f, kin_obj *o) {
  int rc = kin_delta_fifo_update(f, o);
  kin_obj_unref(o);
  return rc;
}
static inline int do_delete(kin_delta_fifo *f, kin_obj *o) {
  int rc = kin_delta_fifo_delete(f, o);
  kin_obj_unref(o);
  return rc;
}
/* Replace with a NULL-terminated list whose references it takes. */
static inline int do_replace(kin_delta_fifo *f, ...) {
  kin_obj *objs[16];
  size_t n = 0;
  va_list ap;
  va_start(ap, f);
  kin_obj *o;
  while ((o = va_arg(ap, kin_obj *))) objs[n++] = o;
  va_end(ap);
  int rc = kin_delta_fifo_replace(f, objs, n, "0");
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
  return rc;
}

/* Runs a script on key "foo": tokens like "A2" (Add foo@2), "U" Update,
 * "D" Delete, "T" Delete(tombstone foo{foo@rv}), "R" Replace([foo@rv]),
 * "E" Replace([]), "S" Resync. Every call must succeed. */
static inline void run_ops(kin_delta_fifo *f, const char *ops) {
  for (const char *p = ops; *p;) {
    if (*p == ' ') {
      p++;
      continue;
    }
    char op = *p++;
    int rv = (int)strtol(p, (char **)&p, 10);
    switch (op) {
    case 'A': assert_int_equal(do_add(f, mk("foo", rv)), 0); break;
    case 'U': assert_int_equal(do_update(f, mk("foo", rv)), 0); break;
    case 'D': assert_int_equal(do_delete(f, mk("foo", rv)), 0); break;
    case 'T': {
      kin_obj *o = mk("foo", rv);
      assert_int_equal(do_delete(f, kin_obj_tombstone("foo", o)), 0);
      kin_obj_unref(o);
      break;
    }
    case 'R': assert_int_equal(do_replace(f, mk("foo", rv), NULL), 0); break;
    case 'E': assert_int_equal(do_replace(f, NULL), 0); break;
    case 'S': assert_int_equal(kin_delta_fifo_resync(f), 0); break;
    default: fail_msg("bad op %c", op);
    }
  }
}

#endif
