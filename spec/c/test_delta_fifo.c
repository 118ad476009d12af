/* test_delta_fifo.c -- client-go's delta_fifo_test.go, test by test, plus
 * dedup, transform and a multi-producer/one-consumer hammer.
 *
 * Objects are cluster-scoped, so a key is the name; the Go tests' `val` is
 * the resourceVersion. Deltas are compared as rendered strings:
 * "Added foo@10" for an object, "Deleted ~bar{bar@6}" for a tombstone with
 * its last state, "Deleted ~bar{}" for one without. */
#include "kin_test.h"

#include "delta_fifo.h"
#include "hmap.h"
#include "kin.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- objects ------------------------------------------------------------- */

static kin_obj *parse(const char *json) {
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(json, strlen(json), &o), 0);
  return o;
}

/* New reference to an object named name at resourceVersion rv, or NULL;
 * usable off the test thread, where cmocka asserts must not run. */
static kin_obj *mk_raw(const char *name, int rv) {
  char buf[256];
  int n = snprintf(buf, sizeof(buf),
                   "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%d\"}}", name, rv);
  kin_obj *o = NULL;
  return kin_obj_parse(buf, (size_t)n, &o) == 0 ? o : NULL;
}

static kin_obj *mk(const char *name, int rv) {
  kin_obj *o = mk_raw(name, rv);
  assert_non_null(o);
  return o;
}

static int rv_of(const kin_obj *o) { return atoi(kin_obj_resource_version(o)); }

static void render_obj(kin_obj *o, char *b, size_t cap) {
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

static void render(const kin_deltas *d, char *b, size_t cap) {
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

static void known_put(known_set *k, kin_obj *o) { /* takes o's reference */
  void *old = NULL;
  assert_true(kin__hmap_put(&k->m, kin_obj_key(o), o, &old) >= 0);
  kin_obj_unref(old);
}

static void known_del(known_set *k, const char *key) {
  void *old = NULL;
  if (kin__hmap_del(&k->m, key, &old)) kin_obj_unref(old);
}

/* Takes the references of a NULL-terminated list of objects. */
static void known_init(known_set *k, ...) {
  memset(k, 0, sizeof(*k));
  kin__hmap_init(&k->m);
  va_list ap;
  va_start(ap, k);
  kin_obj *o;
  while ((o = va_arg(ap, kin_obj *))) known_put(k, o);
  va_end(ap);
}

static void known_free(known_set *k) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&k->m, &pos))) kin_obj_unref(e->val);
  kin__hmap_free(&k->m);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorted, so tests that expect several known-only tombstones see them in
 * a fixed order (client-go's literalListerGetter lists in slice order). */
static int known_list_keys(void *ud, int (*fn)(void *ctx, const char *key), void *ctx) {
  known_set *k = ud;
  size_t n = kin__hmap_len(&k->m), i = 0, pos = 0;
  const char **keys = calloc(n + 1, sizeof(*keys));
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&k->m, &pos))) keys[i++] = e->key;
  if (k->ghost) keys[i++] = k->ghost;
  qsort(keys, i, sizeof(*keys), cmp_str);
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < i; j++) rc = fn(ctx, keys[j]);
  free(keys);
  return rc;
}

static kin_obj *known_get(void *ud, const char *key) {
  known_set *k = ud;
  void **v = kin__hmap_get(&k->m, key);
  return v ? kin_obj_ref(*v) : NULL;
}

static kin_delta_fifo *new_fifo(known_set *k) {
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

static int capture(void *ud, const char *key, const kin_deltas *d, int initial) {
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
static int pop_expect(kin_delta_fifo *f, const char *want) {
  assert_true(kin_delta_fifo_len(f) > 0);
  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.deltas, want);
  kin_obj_unref(p.newest);
  return p.initial;
}

/* testPop: pops one key and returns the resourceVersion of its newest
 * object (a tombstone's last state). */
static int pop_rv(kin_delta_fifo *f) {
  assert_true(kin_delta_fifo_len(f) > 0);
  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_non_null(p.newest);
  int rv = rv_of(p.newest);
  kin_obj_unref(p.newest);
  return rv;
}

static void get_expect(kin_delta_fifo *f, const char *key, const char *want) {
  kin_deltas d;
  assert_int_equal(kin_delta_fifo_get(f, key, &d), 0);
  char b[1024];
  render(&d, b, sizeof(b));
  kin_deltas_free(&d);
  assert_string_equal(b, want);
}

static void get_absent(kin_delta_fifo *f, const char *key) {
  kin_deltas d;
  assert_int_equal(kin_delta_fifo_get(f, key, &d), KIN_ENOENT);
}

static int join_key(void *ctx, const char *key) {
  char *b = ctx;
  size_t n = strlen(b);
  snprintf(b + n, 512 - n, "%s%s", n ? "," : "", key);
  return 0;
}

static void keys_expect(kin_delta_fifo *f, const char *want) {
  char b[512] = "";
  assert_int_equal(kin_delta_fifo_list_keys(f, join_key, b), 0);
  assert_string_equal(b, want);
}

/* The Go tests' one-liners: each call borrows obj and drops it. */
static int do_add(kin_delta_fifo *f, kin_obj *o) {
  int rc = kin_delta_fifo_add(f, o);
  kin_obj_unref(o);
  return rc;
}
static int do_update(kin_delta_fifo *f, kin_obj *o) {
  int rc = kin_delta_fifo_update(f, o);
  kin_obj_unref(o);
  return rc;
}
static int do_delete(kin_delta_fifo *f, kin_obj *o) {
  int rc = kin_delta_fifo_delete(f, o);
  kin_obj_unref(o);
  return rc;
}
/* Replace with a NULL-terminated list whose references it takes. */
static int do_replace(kin_delta_fifo *f, ...) {
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
static void run_ops(kin_delta_fifo *f, const char *ops) {
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

/* ---- ports of delta_fifo_test.go ---------------------------------------- */

typedef struct {
  kin_delta_fifo *f;
  char prefix;
  int amount;
} producer_arg;

static void *basic_producer(void *arg) {
  producer_arg *a = arg;
  for (int i = 0; i < a->amount; i++) {
    char name[32];
    snprintf(name, sizeof(name), "%c%d", a->prefix, i);
    kin_obj *o = mk_raw(name, i + 1);
    kin_delta_fifo_add(a->f, o);
    kin_obj_unref(o);
  }
  return NULL;
}

/* TestDeltaFIFO_basic: two producers, one consumer; each producer's items
 * come out in the order it added them. */
static void test_delta_fifo_basic(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  enum { amount = 500 };
  producer_arg a = {f, 'a', amount}, b = {f, 'b', amount};
  pthread_t ta, tb;
  assert_int_equal(pthread_create(&ta, NULL, basic_producer, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, basic_producer, &b), 0);
  int last_a = 0, last_b = 0;
  for (int i = 0; i < amount * 2; i++) {
    popped p = {0};
    assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
    assert_int_equal(p.len, 1);
    int rv = rv_of(p.newest);
    int *last = p.key[0] == 'a' ? &last_a : &last_b;
    assert_true(p.key[0] == 'a' || p.key[0] == 'b');
    if (rv <= *last) fail_msg("got %s@%d out of order, last was %d", p.key, rv, *last);
    *last = rv;
    kin_obj_unref(p.newest);
  }
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  assert_int_equal(last_a, amount);
  assert_int_equal(last_b, amount);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_requeueOnPop, adapted: there is no ErrRequeue; process's
 * error is Pop's and the key is gone either way. */
static void test_delta_fifo_requeueOnPop(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  popped p = {.ret = KIN_ECANCELED};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), KIN_ECANCELED);
  assert_int_equal(p.called, 1);
  assert_string_equal(p.key, "foo");
  assert_string_equal(p.deltas, "Added foo@10");
  get_absent(f, "foo");
  assert_int_equal(kin_delta_fifo_len(f), 0);

  assert_int_equal(do_add(f, mk("foo", 11)), 0);
  p.ret = 0;
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.deltas, "Added foo@11");
  get_absent(f, "foo");
  kin_obj_unref(p.newest);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_addUpdate */
static void test_delta_fifo_addUpdate(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  assert_int_equal(do_update(f, mk("foo", 12)), 0);
  assert_int_equal(do_delete(f, mk("foo", 15)), 0);
  keys_expect(f, "foo");
  get_expect(f, "foo", "Added foo@10, Updated foo@12, Deleted foo@15");

  assert_int_equal(pop_rv(f), 15);
  get_absent(f, "foo");
  /* No second value: once closed, an empty FIFO reports closed without
   * calling process. */
  kin_delta_fifo_close(f);
  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), KIN_ECLOSED);
  assert_int_equal(p.called, 0);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_enqueueingNoLister */
static void test_delta_fifo_enqueueingNoLister(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  assert_int_equal(do_update(f, mk("bar", 15)), 0);
  assert_int_equal(do_add(f, mk("qux", 17)), 0);
  assert_int_equal(do_delete(f, mk("qux", 18)), 0);
  /* baz is neither queued nor known: nothing is enqueued. */
  assert_int_equal(do_delete(f, mk("baz", 20)), 0);
  assert_int_equal(kin_delta_fifo_len(f), 3);
  get_absent(f, "baz");

  assert_int_equal(pop_rv(f), 10);
  assert_int_equal(pop_rv(f), 15);
  assert_int_equal(pop_rv(f), 18);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_enqueueingWithLister */
static void test_delta_fifo_enqueueingWithLister(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 5), mk("bar", 6), mk("baz", 7), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  assert_int_equal(do_update(f, mk("bar", 15)), 0);
  /* baz is known, so its deletion is enqueued; nope is not. */
  assert_int_equal(do_delete(f, mk("baz", 20)), 0);
  assert_int_equal(do_delete(f, mk("nope", 21)), 0);
  assert_int_equal(kin_delta_fifo_len(f), 3);

  assert_int_equal(pop_rv(f), 10);
  assert_int_equal(pop_rv(f), 15);
  assert_int_equal(pop_rv(f), 20);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_addReplace */
static void test_delta_fifo_addReplace(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  assert_int_equal(do_replace(f, mk("foo", 15), NULL), 0);
  assert_int_equal(kin_delta_fifo_len(f), 1);
  pop_expect(f, "Added foo@10, Replaced foo@15");
  get_absent(f, "foo");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_ResyncNonExisting: a queued Delete blocks the Sync. */
static void test_delta_fifo_ResyncNonExisting(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 5), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_delete(f, mk("foo", 10)), 0);
  assert_int_equal(kin_delta_fifo_resync(f), 0);
  get_expect(f, "foo", "Deleted foo@10");
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_Resync: Sync carries the known object itself; a key that
 * knownObjects lists but cannot get is skipped. */
static void test_delta_fifo_Resync(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 5), NULL);
  k.ghost = "gone";
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(kin_delta_fifo_resync(f), 0);
  get_expect(f, "foo", "Sync foo@5");
  get_absent(f, "gone");
  kin_deltas d;
  assert_int_equal(kin_delta_fifo_get(f, "foo", &d), 0);
  assert_ptr_equal(d.v[0].obj, *kin__hmap_get(&k.m, "foo"));
  kin_deltas_free(&d);
  /* Resync is not a population event. */
  assert_false(kin_delta_fifo_has_synced(f));
  kin_delta_fifo_free(f);
  known_free(&k);

  kin_delta_fifo *nf = new_fifo(NULL); /* no knownObjects: nothing to do */
  assert_int_equal(kin_delta_fifo_resync(nf), 0);
  assert_int_equal(kin_delta_fifo_len(nf), 0);
  kin_delta_fifo_free(nf);
}

/* TestDeltaFIFO_DeleteExistingNonPropagated */
static void test_delta_fifo_DeleteExistingNonPropagated(void **state) {
  (void)state;
  known_set k;
  known_init(&k, NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_add(f, mk("foo", 5)), 0);
  assert_int_equal(do_delete(f, mk("foo", 6)), 0);
  get_expect(f, "foo", "Added foo@5, Deleted foo@6");
  kin_delta_fifo_free(f);
  known_free(&k);
}

static kin_delta_fifo *fifo_foo_bar_baz(known_set *k) {
  known_init(k, mk("foo", 5), mk("bar", 6), mk("baz", 7), NULL);
  return new_fifo(k);
}

/* TestDeltaFIFO_ReplaceMakesDeletions (with Replaced for the listed
 * objects, since EmitDeltaTypeReplaced is always on here). */
static void test_delta_fifo_ReplaceMakesDeletions(void **state) {
  (void)state;
  known_set k;

  /* A pre-existing Delete. */
  kin_delta_fifo *f = fifo_foo_bar_baz(&k);
  assert_int_equal(do_delete(f, mk("baz", 10)), 0);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  pop_expect(f, "Deleted baz@10");
  pop_expect(f, "Replaced foo@5");
  pop_expect(f, "Deleted ~bar{bar@6}");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);

  /* An Add instead of a Delete. */
  f = fifo_foo_bar_baz(&k);
  assert_int_equal(do_add(f, mk("baz", 10)), 0);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  pop_expect(f, "Added baz@10, Deleted ~baz{baz@10}");
  pop_expect(f, "Replaced foo@5");
  pop_expect(f, "Deleted ~bar{bar@6}");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);

  /* Deleted and recreated in the queue: the tombstone holds the newest
   * queued state, not the known one. */
  f = fifo_foo_bar_baz(&k);
  assert_int_equal(do_delete(f, mk("bar", 6)), 0);
  assert_int_equal(do_add(f, mk("bar", 100)), 0);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  pop_expect(f, "Deleted bar@6, Added bar@100, Deleted ~bar{bar@100}");
  pop_expect(f, "Replaced foo@5");
  pop_expect(f, "Deleted ~baz{baz@7}");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);

  /* Replaced first, then replaced again without bar: bar's tombstone uses
   * the latest version; baz's queued tombstone is unwrapped, and the new
   * one replaces it (no second Deleted). */
  f = fifo_foo_bar_baz(&k);
  assert_int_equal(do_replace(f, mk("bar", 100), mk("foo", 5), NULL), 0);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  pop_expect(f, "Replaced bar@100, Deleted ~bar{bar@100}");
  pop_expect(f, "Replaced foo@5, Replaced foo@5");
  pop_expect(f, "Deleted ~baz{baz@7}");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);

  /* No knownObjects. */
  f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("baz", 10)), 0);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  pop_expect(f, "Added baz@10, Deleted ~baz{baz@10}");
  pop_expect(f, "Replaced foo@5");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_ReplaceMakesDeletionsReplaced */
static void test_delta_fifo_ReplaceMakesDeletionsReplaced(void **state) {
  (void)state;
  known_set k;
  kin_delta_fifo *f = fifo_foo_bar_baz(&k);
  assert_int_equal(do_delete(f, mk("baz", 10)), 0);
  assert_int_equal(do_replace(f, mk("foo", 6), NULL), 0);
  pop_expect(f, "Deleted baz@10");
  pop_expect(f, "Replaced foo@6");
  pop_expect(f, "Deleted ~bar{bar@6}");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* A key that knownObjects lists but no longer has gets a tombstone with no
 * last state (client-go logs and places the marker without object). */
static void test_delta_fifo_ReplaceKnownKeyVanished(void **state) {
  (void)state;
  known_set k;
  known_init(&k, NULL);
  k.ghost = "gone";
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_replace(f, NULL), 0);
  pop_expect(f, "Deleted ~gone{}");
  assert_true(kin_delta_fifo_has_synced(f));
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_ReplaceDeltaType */
static void test_delta_fifo_ReplaceDeltaType(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 5), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  pop_expect(f, "Replaced foo@5");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_UpdateResyncRace: Resync skips a key with a queued delta,
 * so the stale known object never follows the newer update. */
static void test_delta_fifo_UpdateResyncRace(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 5), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_update(f, mk("foo", 6)), 0);
  assert_int_equal(kin_delta_fifo_resync(f), 0);
  pop_expect(f, "Updated foo@6");
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_HasSyncedCorrectOnDeletion: the initial population counts
 * the tombstones of known keys, and Pop flags each as initial. */
static void test_delta_fifo_HasSyncedCorrectOnDeletion(void **state) {
  (void)state;
  known_set k;
  kin_delta_fifo *f = fifo_foo_bar_baz(&k);
  assert_int_equal(do_replace(f, mk("foo", 5), NULL), 0);
  const char *want[] = {"Replaced foo@5", "Deleted ~bar{bar@6}", "Deleted ~baz{baz@7}"};
  for (int i = 0; i < 3; i++) {
    assert_false(kin_delta_fifo_has_synced(f));
    assert_true(pop_expect(f, want[i]));
  }
  assert_true(kin_delta_fifo_has_synced(f));
  /* After the initial list, pops are no longer flagged initial. */
  assert_int_equal(do_add(f, mk("foo", 8)), 0);
  assert_false(pop_expect(f, "Added foo@8"));
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* initialPopulationCount = listed keys + queued deletions: a key queued
 * before the first Replace (only Resync can do that without populating)
 * and not listed counts too. */
static void test_delta_fifo_InitialPopulationCountsQueuedDeletions(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("old", 1), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(kin_delta_fifo_resync(f), 0);
  assert_false(kin_delta_fifo_has_synced(f));
  assert_int_equal(do_replace(f, mk("a", 2), NULL), 0);
  assert_true(pop_expect(f, "Sync old@1, Deleted ~old{old@1}"));
  assert_false(kin_delta_fifo_has_synced(f));
  assert_true(pop_expect(f, "Replaced a@2"));
  assert_true(kin_delta_fifo_has_synced(f));
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_detectLineJumpers */
static void test_delta_fifo_detectLineJumpers(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  assert_int_equal(do_add(f, mk("bar", 1)), 0);
  assert_int_equal(do_add(f, mk("foo", 11)), 0);
  assert_int_equal(do_add(f, mk("foo", 13)), 0);
  assert_int_equal(do_add(f, mk("zab", 30)), 0);
  keys_expect(f, "foo,bar,zab");

  assert_int_equal(pop_rv(f), 13);
  assert_int_equal(do_add(f, mk("foo", 14)), 0); /* foo must not jump the line */
  assert_int_equal(pop_rv(f), 1);
  assert_int_equal(pop_rv(f), 30);
  assert_int_equal(pop_rv(f), 14);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_KeyOf: an object's key is ns/name or name; a tombstone's
 * key is its own, whatever its last state says. */
static void test_delta_fifo_KeyOf(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("B", 1), mk("X", 1), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_add(f, mk("A", 1)), 0);
  assert_int_equal(do_delete(f, kin_obj_tombstone("B", NULL)), 0);
  kin_obj *y = mk("Y", 3);
  assert_int_equal(do_delete(f, kin_obj_tombstone("X", y)), 0);
  kin_obj_unref(y);
  assert_int_equal(do_add(f, parse("{\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"}}")), 0);
  keys_expect(f, "A,B,X,ns/c");
  get_expect(f, "X", "Deleted ~X{Y@3}");
  get_absent(f, "Y");

  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.key, "A");
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.key, "B");
  assert_string_equal(p.deltas, "Deleted ~B{}");
  kin_obj_unref(p.newest);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFO_HasSynced: 'A' Add a, 'E' Replace([]), 'R' Replace([a,b]),
 * 'D' Replace([a@1, a@2]) (duplicate keys count once), 'P' Pop. */
static void test_delta_fifo_HasSynced(void **state) {
  (void)state;
  static const struct {
    const char *actions;
    int synced;
  } tests[] = {{"", 0}, {"A", 1}, {"E", 1}, {"R", 0}, {"RP", 0}, {"RPP", 1}, {"DP", 1}};
  for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
    kin_delta_fifo *f = new_fifo(NULL);
    for (const char *a = tests[i].actions; *a; a++) {
      switch (*a) {
      case 'A': assert_int_equal(do_add(f, mk("a", 1)), 0); break;
      case 'E': assert_int_equal(do_replace(f, NULL), 0); break;
      case 'R': assert_int_equal(do_replace(f, mk("a", 1), mk("b", 2), NULL), 0); break;
      case 'D': assert_int_equal(do_replace(f, mk("a", 1), mk("a", 2), NULL), 0); break;
      case 'P': pop_rv(f); break;
      }
    }
    if (kin_delta_fifo_has_synced(f) != tests[i].synced)
      fail_msg("case %zu (%s): expected synced=%d", i, tests[i].actions, tests[i].synced);
    kin_delta_fifo_free(f);
  }
}

typedef struct {
  kin_delta_fifo *f;
  atomic_int *started, *finished;
  int rc;
} blocked_pop;

static void *blocked_popper(void *arg) {
  blocked_pop *b = arg;
  popped p = {0};
  atomic_fetch_add(b->started, 1);
  b->rc = kin_delta_fifo_pop(b->f, capture, &p);
  kin_obj_unref(p.newest);
  atomic_fetch_add(b->finished, 1);
  return NULL;
}

/* TestDeltaFIFO_PopShouldUnblockWhenClosed, plus: a closed FIFO refuses
 * every producer call. */
static void test_delta_fifo_PopShouldUnblockWhenClosed(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 5), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  enum { jobs = 10 };
  atomic_int started = 0, finished = 0;
  blocked_pop b[jobs];
  pthread_t t[jobs];
  for (int i = 0; i < jobs; i++) {
    b[i] = (blocked_pop){f, &started, &finished, 1};
    assert_int_equal(pthread_create(&t[i], NULL, blocked_popper, &b[i]), 0);
  }
  KIN_EVENTUALLY(atomic_load(&started) == jobs, 2000);
  kin_test_sleep_ms(10); /* let them reach the wait; correctness does not depend on it */
  assert_int_equal(atomic_load(&finished), 0);
  assert_false(kin_delta_fifo_is_closed(f));
  kin_delta_fifo_close(f);
  KIN_EVENTUALLY(atomic_load(&finished) == jobs, 2000);
  for (int i = 0; i < jobs; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(b[i].rc, KIN_ECLOSED);
  }
  assert_true(kin_delta_fifo_is_closed(f));

  kin_obj *o = mk("foo", 6);
  assert_int_equal(kin_delta_fifo_add(f, o), KIN_ECLOSED);
  assert_int_equal(kin_delta_fifo_update(f, o), KIN_ECLOSED);
  assert_int_equal(kin_delta_fifo_delete(f, o), KIN_ECLOSED);
  assert_int_equal(kin_delta_fifo_replace(f, &o, 1, "1"), KIN_ECLOSED);
  assert_int_equal(kin_delta_fifo_resync(f), KIN_ECLOSED);
  kin_obj_unref(o);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* Pop after Close still hands out what was queued before, then reports
 * closed (client-go returns ErrFIFOClosed only on an empty queue). */
static void test_delta_fifo_PopDrainsAfterClose(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_add(f, mk("a", 1)), 0);
  assert_int_equal(do_add(f, mk("b", 2)), 0);
  kin_delta_fifo_close(f);
  pop_expect(f, "Added a@1");
  pop_expect(f, "Added b@2");
  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), KIN_ECLOSED);
  assert_int_equal(p.called, 0);
  kin_delta_fifo_free(f);
}

/* TestDeltaFIFO_replaceWithDeleteDeltaIn: a listed object is queued even
 * when the key's list ends with Deleted (kubernetes#83810). */
static void test_delta_fifo_replaceWithDeleteDeltaIn(void **state) {
  (void)state;
  known_set k;
  known_init(&k, mk("foo", 1), NULL);
  kin_delta_fifo *f = new_fifo(&k);
  assert_int_equal(do_delete(f, mk("foo", 1)), 0);
  assert_int_equal(do_replace(f, mk("foo", 2), NULL), 0);
  pop_expect(f, "Deleted foo@1, Replaced foo@2");
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue, with and
 * without an (empty) knownObjects. */
static void test_delta_fifo_ReplaceMakesDeletionsForObjectsOnlyInQueue(void **state) {
  (void)state;
  static const struct {
    const char *name, *ops, *want;
  } table[] = {
      {"Added object should be deleted on Replace", "A2 E",
       "Added foo@2, Deleted ~foo{foo@2}"},
      {"Replaced object should have only a single Delete", "A2 R2 E",
       "Added foo@2, Replaced foo@2, Deleted ~foo{foo@2}"},
      {"Deleted object should have only a single Delete", "A2 D2 E",
       "Added foo@2, Deleted foo@2"},
      {"Synced objects should have a single delete", "A2 R2 R2 E",
       "Added foo@2, Replaced foo@2, Replaced foo@2, Deleted ~foo{foo@2}"},
      {"Added objects should have a single delete on multiple Replaces", "A2 E E",
       "Added foo@2, Deleted ~foo{foo@2}"},
      {"Added and deleted and added object should be deleted", "A2 D2 A3 E",
       "Added foo@2, Deleted foo@2, Added foo@3, Deleted ~foo{foo@3}"},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    for (int with_known = 0; with_known < 2; with_known++) {
      known_set k;
      known_init(&k, NULL);
      kin_delta_fifo *f = new_fifo(with_known ? &k : NULL);
      run_ops(f, table[i].ops);
      popped p = {0};
      assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
      kin_obj_unref(p.newest);
      if (strcmp(p.deltas, table[i].want) != 0)
        fail_msg("%s (known=%d): got %s", table[i].name, with_known, p.deltas);
      assert_int_equal(kin_delta_fifo_len(f), 0);
      kin_delta_fifo_free(f);
      known_free(&k);
    }
  }
}

/* dedupDeltas / isDeletionDup: only two consecutive Deleted collapse; the
 * older is kept unless it is a tombstone. */
static void test_delta_fifo_dedupDeltas(void **state) {
  (void)state;
  static const struct {
    const char *ops, *want;
  } table[] = {
      {"D1 D2", "Deleted foo@1"},
      {"T1 D2", "Deleted foo@2"},
      {"D1 T2", "Deleted foo@1"},
      {"T1 T2", "Deleted ~foo{foo@2}"},
      {"D1 D2 D3", "Deleted foo@1"},
      {"T1 T2 D3 T4", "Deleted foo@3"},
      {"A1 D2", "Added foo@1, Deleted foo@2"},
      {"U1 U2", "Updated foo@1, Updated foo@2"},
      {"A1 A1", "Added foo@1, Added foo@1"},
      {"D1 A2 D3", "Deleted foo@1, Added foo@2, Deleted foo@3"},
      {"S D2 D3", "Sync foo@0, Deleted foo@2"},
  };
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    known_set k; /* foo is known, so a first Delete is not dropped */
    known_init(&k, mk("foo", 0), NULL);
    kin_delta_fifo *f = new_fifo(&k);
    run_ops(f, table[i].ops);
    kin_deltas d;
    assert_int_equal(kin_delta_fifo_get(f, "foo", &d), 0);
    char b[512];
    render(&d, b, sizeof(b));
    kin_deltas_free(&d);
    if (strcmp(b, table[i].want) != 0) fail_msg("%s: got %s", table[i].ops, b);
    kin_delta_fifo_free(f);
    known_free(&k);
  }
}

/* ---- transform ----------------------------------------------------------- */

typedef struct {
  int calls;
  const char *fail_name; /* refuse objects with this name */
} xfrm_state;

/* Returns a copy of in whose label xfrm counts the transforms applied;
 * refuses tombstones, so any transform of a tombstone fails the call. */
static int xfrm(void *ud, kin_obj *in, kin_obj **out) {
  xfrm_state *s = ud;
  s->calls++;
  if (kin_obj_is_tombstone(in)) return KIN_EINVAL;
  if (s->fail_name && strcmp(kin_obj_name(in), s->fail_name) == 0) return KIN_ECANCELED;
  const char *x = kin_obj_label(in, "xfrm");
  char buf[256];
  snprintf(buf, sizeof(buf),
           "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\",\"labels\":{\"xfrm\":\"%d\"}}}",
           kin_obj_name(in), kin_obj_resource_version(in), x ? atoi(x) + 1 : 1);
  return kin_obj_parse(buf, strlen(buf), out);
}

static int xfrm_count(const kin_obj *o) {
  const char *x = kin_obj_label(o, "xfrm");
  return x ? atoi(x) : 0;
}

static kin_delta_fifo *new_xfrm_fifo(known_set *k, xfrm_state *s) {
  kin_delta_fifo_config cfg = {0};
  if (k) cfg.known_objects = (kin_key_lister){k, known_list_keys, known_get};
  cfg.transform = xfrm;
  cfg.transform_ud = s;
  kin_delta_fifo *f = NULL;
  assert_int_equal(kin_delta_fifo_new(&cfg, &f), 0);
  return f;
}

/* TestDeltaFIFO_transformer: every object is transformed exactly once and
 * tombstones are never transformed (xfrm refuses them). */
static void test_delta_fifo_Transformer(void **state) {
  (void)state;
  xfrm_state s = {0};
  kin_delta_fifo *f = new_xfrm_fifo(NULL, &s);
  assert_int_equal(do_add(f, mk("foo", 10)), 0);
  assert_int_equal(do_add(f, mk("bar", 11)), 0);
  assert_int_equal(do_update(f, mk("foo", 12)), 0);
  assert_int_equal(do_delete(f, mk("foo", 15)), 0);
  assert_int_equal(do_replace(f, NULL), 0);
  assert_int_equal(do_add(f, mk("bar", 16)), 0);
  assert_int_equal(do_replace(f, NULL), 0);
  keys_expect(f, "foo,bar");
  assert_int_equal(s.calls, 5);

  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.deltas, "Added foo@10, Updated foo@12, Deleted foo@15");
  assert_false(kin_obj_is_tombstone(p.newest));
  assert_int_equal(xfrm_count(p.newest), 1);
  assert_int_equal(kin_delta_fifo_pop(f, capture, &p), 0);
  assert_string_equal(p.deltas, "Added bar@11, Deleted ~bar{bar@11}, Added bar@16, "
                                "Deleted ~bar{bar@16}");
  assert_true(kin_obj_is_tombstone(p.newest));
  assert_int_equal(xfrm_count(kin_obj_last_state(p.newest)), 1);
  kin_obj_unref(p.newest);
  kin_delta_fifo_free(f);
}

/* Add/Update/Delete/Replace/Resync objects are transformed on enqueue;
 * the tombstone Replace makes from a known object carries it untouched. */
static void test_delta_fifo_TransformerAppliedOnEnqueue(void **state) {
  (void)state;
  xfrm_state s = {0};
  known_set k;
  known_init(&k, mk("k", 1), mk("gone", 1), mk("del", 1), NULL);
  kin_delta_fifo *f = new_xfrm_fifo(&k, &s);
  assert_int_equal(kin_delta_fifo_resync(f), 0); /* Sync del, gone, k */
  assert_int_equal(s.calls, 3);
  kin_delta_fifo *g = new_xfrm_fifo(&k, &s);
  assert_int_equal(do_add(g, mk("a", 2)), 0);
  assert_int_equal(do_update(g, mk("a", 3)), 0);
  assert_int_equal(do_delete(g, mk("del", 4)), 0);
  assert_int_equal(do_replace(g, mk("a", 5), mk("k", 5), NULL), 0);
  assert_int_equal(s.calls, 3 + 5);

  /* A tombstone handed to Delete is queued as is. */
  kin_obj *k9 = mk("k", 9);
  kin_obj *tomb = kin_obj_tombstone("k", k9);
  kin_obj_unref(k9);
  assert_int_equal(kin_delta_fifo_delete(f, tomb), 0);
  assert_int_equal(s.calls, 3 + 5);
  kin_deltas td;
  assert_int_equal(kin_delta_fifo_get(f, "k", &td), 0);
  assert_int_equal(td.len, 2);
  assert_ptr_equal(td.v[1].obj, tomb);
  kin_deltas_free(&td);
  kin_obj_unref(tomb);

  const char *keys[] = {"del", "gone", "k"};
  for (int i = 0; i < 3; i++) {
    kin_deltas d;
    assert_int_equal(kin_delta_fifo_get(f, keys[i], &d), 0);
    assert_int_equal(d.v[0].type, KIN_DELTA_SYNC);
    assert_int_equal(xfrm_count(d.v[0].obj), 1);
    kin_deltas_free(&d);
  }

  popped p = {0};
  assert_int_equal(kin_delta_fifo_pop(g, capture, &p), 0);
  assert_string_equal(p.deltas, "Added a@2, Updated a@3, Replaced a@5");
  assert_int_equal(kin_delta_fifo_pop(g, capture, &p), 0);
  assert_string_equal(p.deltas, "Deleted del@4");
  assert_int_equal(xfrm_count(p.newest), 1);
  assert_int_equal(kin_delta_fifo_pop(g, capture, &p), 0);
  assert_string_equal(p.deltas, "Replaced k@5");
  assert_int_equal(xfrm_count(p.newest), 1);
  assert_int_equal(kin_delta_fifo_pop(g, capture, &p), 0);
  assert_string_equal(p.deltas, "Deleted ~gone{gone@1}");
  assert_int_equal(xfrm_count(kin_obj_last_state(p.newest)), 0);
  assert_int_equal(kin_delta_fifo_len(g), 0);
  kin_obj_unref(p.newest);
  kin_delta_fifo_free(g);
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* A transform error fails the call and queues nothing, even for the
 * objects of a Replace or Resync that came before the refused one. */
static void test_delta_fifo_TransformerErrorQueuesNothing(void **state) {
  (void)state;
  xfrm_state s = {.fail_name = "bad"};
  known_set k;
  known_init(&k, mk("bad", 1), mk("a", 1), mk("z", 1), NULL);
  kin_delta_fifo *f = new_xfrm_fifo(&k, &s);
  assert_int_equal(do_add(f, mk("bad", 2)), KIN_ECANCELED);
  assert_int_equal(do_update(f, mk("bad", 2)), KIN_ECANCELED);
  assert_int_equal(do_delete(f, mk("bad", 2)), KIN_ECANCELED);
  assert_int_equal(do_replace(f, mk("a", 2), mk("bad", 2), mk("z", 2), NULL), KIN_ECANCELED);
  assert_int_equal(kin_delta_fifo_resync(f), KIN_ECANCELED);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  assert_false(kin_delta_fifo_has_synced(f));

  /* The same FIFO still works for acceptable objects. */
  assert_int_equal(do_replace(f, mk("a", 3), NULL), 0);
  pop_expect(f, "Replaced a@3");
  pop_expect(f, "Deleted ~bad{bad@1}");
  pop_expect(f, "Deleted ~z{z@1}");
  assert_true(kin_delta_fifo_has_synced(f));
  kin_delta_fifo_free(f);
  known_free(&k);
}

/* ---- concurrency --------------------------------------------------------- */

enum { HAMMER_PRODUCERS = 4, HAMMER_KEYS = 40, HAMMER_ROUNDS = 15 };

typedef struct {
  kin_delta_fifo *f;
  int id;
} hammer_producer;

/* Each producer owns its keys: Add, Updates with rising rv, then deletes
 * the even keys with rv ROUNDS+1. */
static void *hammer_produce(void *arg) {
  hammer_producer *h = arg;
  char name[32];
  for (int r = 0; r < HAMMER_ROUNDS; r++) {
    for (int j = 0; j < HAMMER_KEYS; j++) {
      snprintf(name, sizeof(name), "p%d-k%02d", h->id, j);
      kin_obj *o = mk_raw(name, r + 1);
      int rc = r == 0 ? kin_delta_fifo_add(h->f, o) : kin_delta_fifo_update(h->f, o);
      kin_obj_unref(o);
      if (rc != 0) return (void *)1;
    }
  }
  for (int j = 0; j < HAMMER_KEYS; j += 2) {
    snprintf(name, sizeof(name), "p%d-k%02d", h->id, j);
    kin_obj *o = mk_raw(name, HAMMER_ROUNDS + 1);
    int rc = kin_delta_fifo_delete(h->f, o);
    kin_obj_unref(o);
    if (rc != 0) return (void *)1;
  }
  return NULL;
}

typedef struct {
  kin_delta_fifo *f;
  atomic_int *stop;
  int resyncs;
} hammer_resyncer;

static void *hammer_resync(void *arg) {
  hammer_resyncer *h = arg;
  /* at least one resync even if the producers finish first */
  do {
    if (kin_delta_fifo_resync(h->f) != 0) return (void *)1;
    h->resyncs++;
    sched_yield();
  } while (!atomic_load(h->stop));
  return NULL;
}

/* The consumer is the informer: it applies deltas to knownObjects inside
 * process (under the FIFO lock), and checks that every key's versions only
 * move forward, a Sync carrying exactly the state it last applied. */
typedef struct {
  kin_delta_fifo *f;
  known_set *known;
  kin__hmap last;   /* key -> last applied rv (as intptr_t) */
  long violations;
  long deltas, syncs;
} hammer_consumer;

static int hammer_process(void *ud, const char *key, const kin_deltas *d, int initial) {
  hammer_consumer *c = ud;
  for (size_t i = 0; i < d->len; i++) {
    kin_obj *o = d->v[i].obj;
    int rv = rv_of(o);
    void **slot = kin__hmap_get(&c->last, key);
    int last = slot ? (int)(intptr_t)*slot : 0;
    c->deltas++;
    if (strcmp(kin_obj_key(o), key) != 0) c->violations++;
    if (d->v[i].type == KIN_DELTA_SYNC) {
      c->syncs++;
      if (rv != last) c->violations++;
    } else if (rv <= last) {
      c->violations++;
    }
    if (d->v[i].type == KIN_DELTA_DELETED) {
      known_del(c->known, key);
    } else {
      void *old = NULL;
      kin__hmap_put(&c->known->m, key, kin_obj_ref(o), &old);
      kin_obj_unref(old);
    }
    kin__hmap_put(&c->last, key, (void *)(intptr_t)rv, NULL);
  }
  return 0;
}

static void *hammer_consume(void *arg) {
  hammer_consumer *c = arg;
  int rc;
  while ((rc = kin_delta_fifo_pop(c->f, hammer_process, c)) == 0) {
  }
  return rc == KIN_ECLOSED ? NULL : (void *)1;
}

static void test_delta_fifo_ConcurrentProducersOneConsumer(void **state) {
  (void)state;
  known_set k;
  known_init(&k, NULL);
  kin_delta_fifo *f = new_fifo(&k);
  atomic_int stop = 0;
  hammer_consumer c = {.f = f, .known = &k};
  kin__hmap_init(&c.last);
  hammer_resyncer rs = {f, &stop, 0};
  hammer_producer hp[HAMMER_PRODUCERS];
  pthread_t tp[HAMMER_PRODUCERS], tc, tr;
  assert_int_equal(pthread_create(&tc, NULL, hammer_consume, &c), 0);
  assert_int_equal(pthread_create(&tr, NULL, hammer_resync, &rs), 0);
  for (int i = 0; i < HAMMER_PRODUCERS; i++) {
    hp[i] = (hammer_producer){f, i};
    assert_int_equal(pthread_create(&tp[i], NULL, hammer_produce, &hp[i]), 0);
  }
  void *ret;
  for (int i = 0; i < HAMMER_PRODUCERS; i++) {
    pthread_join(tp[i], &ret);
    assert_null(ret);
  }
  atomic_store(&stop, 1);
  pthread_join(tr, &ret);
  assert_null(ret);
  kin_delta_fifo_close(f);
  pthread_join(tc, &ret);
  assert_null(ret);

  assert_int_equal(c.violations, 0);
  assert_true(rs.resyncs > 0);
  assert_int_equal(kin_delta_fifo_len(f), 0);
  /* The consumer ends with exactly the producers' final state. */
  assert_int_equal(kin__hmap_len(&k.m), HAMMER_PRODUCERS * HAMMER_KEYS / 2);
  for (int i = 0; i < HAMMER_PRODUCERS; i++) {
    for (int j = 0; j < HAMMER_KEYS; j++) {
      char name[32];
      snprintf(name, sizeof(name), "p%d-k%02d", i, j);
      void **v = kin__hmap_get(&k.m, name);
      if (j % 2 == 0) {
        assert_null(v);
      } else {
        assert_non_null(v);
        assert_int_equal(rv_of(*v), HAMMER_ROUNDS);
      }
    }
  }
  kin__hmap_free(&c.last);
  kin_delta_fifo_free(f);
  known_free(&k);
}

KIN_SUITE(delta_fifo,
          cmocka_unit_test(test_delta_fifo_basic),
          cmocka_unit_test(test_delta_fifo_requeueOnPop),
          cmocka_unit_test(test_delta_fifo_addUpdate),
          cmocka_unit_test(test_delta_fifo_enqueueingNoLister),
          cmocka_unit_test(test_delta_fifo_enqueueingWithLister),
          cmocka_unit_test(test_delta_fifo_addReplace),
          cmocka_unit_test(test_delta_fifo_ResyncNonExisting),
          cmocka_unit_test(test_delta_fifo_Resync),
          cmocka_unit_test(test_delta_fifo_DeleteExistingNonPropagated),
          cmocka_unit_test(test_delta_fifo_ReplaceMakesDeletions),
          cmocka_unit_test(test_delta_fifo_ReplaceMakesDeletionsReplaced),
          cmocka_unit_test(test_delta_fifo_ReplaceKnownKeyVanished),
          cmocka_unit_test(test_delta_fifo_ReplaceDeltaType),
          cmocka_unit_test(test_delta_fifo_UpdateResyncRace),
          cmocka_unit_test(test_delta_fifo_HasSyncedCorrectOnDeletion),
          cmocka_unit_test(test_delta_fifo_InitialPopulationCountsQueuedDeletions),
          cmocka_unit_test(test_delta_fifo_detectLineJumpers),
          cmocka_unit_test(test_delta_fifo_KeyOf),
          cmocka_unit_test(test_delta_fifo_HasSynced),
          cmocka_unit_test(test_delta_fifo_PopShouldUnblockWhenClosed),
          cmocka_unit_test(test_delta_fifo_PopDrainsAfterClose),
          cmocka_unit_test(test_delta_fifo_replaceWithDeleteDeltaIn),
          cmocka_unit_test(test_delta_fifo_ReplaceMakesDeletionsForObjectsOnlyInQueue),
          cmocka_unit_test(test_delta_fifo_dedupDeltas),
          cmocka_unit_test(test_delta_fifo_Transformer),
          cmocka_unit_test(test_delta_fifo_TransformerAppliedOnEnqueue),
          cmocka_unit_test(test_delta_fifo_TransformerErrorQueuesNothing),
          cmocka_unit_test(test_delta_fifo_ConcurrentProducersOneConsumer))
