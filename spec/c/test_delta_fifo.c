/* test_delta_fifo.c -- client-go's delta_fifo_test.go, test by test: add,
 * update, delete, resync, pop and close, HasSynced, KeyOf, plus dedup.
 * Replace: test_delta_fifo_replace.c; transforms:
 * test_delta_fifo_transform.c; a multi-producer/one-consumer hammer:
 * test_delta_fifo_concurrency.c. Fixture: delta_fifo_fx.h. */
#include "delta_fifo_fx.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

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
/* kin_delta_fifo_pop_batch: keys in queue order, at most max per batch,
 * is_in_initial_list per key, batch_end once per batch under the lock
 * (HasSynced, which takes the lock, cannot answer before the end), a
 * process error reported without stopping the batch, and Close. */
typedef struct {
  kin_delta_fifo *f;
  char keys[256];
  char initial[64];
  int ends, calls, fail_on;
} batch_rec;

static int batch_process(void *ud, const char *key, const kin_deltas *d, int initial) {
  batch_rec *b = ud;
  (void)d;
  size_t n = strlen(b->keys);
  snprintf(b->keys + n, sizeof(b->keys) - n, "%s%s", n ? "," : "", key);
  n = strlen(b->initial);
  b->initial[n] = initial ? '1' : '0';
  b->initial[n + 1] = 0;
  return ++b->calls == b->fail_on ? KIN_ECANCELED : 0;
}

static void batch_end_cb(void *ud) { ((batch_rec *)ud)->ends++; }

static void test_delta_fifo_PopBatch(void **state) {
  (void)state;
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_replace(f, mk("a", 1), mk("b", 2), mk("c", 3), NULL), 0);
  assert_int_equal(do_add(f, mk("d", 4)), 0);
  assert_int_equal(do_update(f, mk("a", 5)), 0); /* no line jumping: a stays first */
  batch_rec b = {.f = f, .fail_on = 2};
  assert_int_equal(kin_delta_fifo_pop_batch(f, 2, batch_process, batch_end_cb, &b),
                   KIN_ECANCELED);
  assert_string_equal(b.keys, "a,b");
  assert_string_equal(b.initial, "11");
  assert_int_equal(b.ends, 1);
  assert_false(kin_delta_fifo_has_synced(f));
  get_absent(f, "b");
  /* the rest in one batch: c is the last initial key, d comes after it */
  b.keys[0] = b.initial[0] = 0;
  b.fail_on = 0;
  assert_int_equal(kin_delta_fifo_pop_batch(f, 0, batch_process, batch_end_cb, &b), 0);
  assert_string_equal(b.keys, "c,d");
  assert_string_equal(b.initial, "10");
  assert_int_equal(b.ends, 2);
  assert_true(kin_delta_fifo_has_synced(f));
  assert_int_equal(kin_delta_fifo_len(f), 0);
  /* closed and empty: no process, no batch_end */
  kin_delta_fifo_close(f);
  assert_int_equal(kin_delta_fifo_pop_batch(f, 0, batch_process, batch_end_cb, &b), KIN_ECLOSED);
  assert_int_equal(b.ends, 2);
  kin_delta_fifo_free(f);
}

KIN_SUITE(delta_fifo,
          cmocka_unit_test(test_delta_fifo_basic),
          cmocka_unit_test(test_delta_fifo_requeueOnPop),
          cmocka_unit_test(test_delta_fifo_addUpdate),
          cmocka_unit_test(test_delta_fifo_enqueueingNoLister),
          cmocka_unit_test(test_delta_fifo_enqueueingWithLister),
          cmocka_unit_test(test_delta_fifo_ResyncNonExisting),
          cmocka_unit_test(test_delta_fifo_Resync),
          cmocka_unit_test(test_delta_fifo_DeleteExistingNonPropagated),
          cmocka_unit_test(test_delta_fifo_UpdateResyncRace),
          cmocka_unit_test(test_delta_fifo_detectLineJumpers),
          cmocka_unit_test(test_delta_fifo_KeyOf),
          cmocka_unit_test(test_delta_fifo_HasSynced),
          cmocka_unit_test(test_delta_fifo_PopBatch),
          cmocka_unit_test(test_delta_fifo_PopShouldUnblockWhenClosed),
          cmocka_unit_test(test_delta_fifo_PopDrainsAfterClose),
          cmocka_unit_test(test_delta_fifo_dedupDeltas))
