/* test_delta_fifo_replace.c -- client-go's delta_fifo_test.go, the
 * Replace tests: Replaced and Deleted deltas against knownObjects and the
 * queue, tombstones with their last state, and HasSynced/initial population
 * after a Replace. Fixture: delta_fifo_fx.h. */
#include "delta_fifo_fx.h"
#include "delta_fifo_int.h"

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

/* kin__delta_fifo_replace_collected (a WatchList's initial events as they
 * came): a key given twice is queued once, in its first place, with its
 * later object; whether the FIFO was empty (an informer's first list) or
 * not, and initialPopulationCount counts it once. */
static void test_delta_fifo_ReplaceCollectedKeyTwice(void **state) {
  (void)state;
  for (int with_known = 0; with_known < 2; with_known++) {
    known_set k;
    known_init(&k, mk("old", 1), NULL);
    kin_delta_fifo *f = new_fifo(with_known ? &k : NULL);
    kin_obj *objs[] = {mk("a", 2), mk("b", 3), mk("a", 4), mk("c", 5), mk("a", 6)};
    size_t n = sizeof objs / sizeof *objs;
    assert_int_equal(kin__delta_fifo_replace_collected(f, objs, n, "6"), 0);
    for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
    assert_int_equal(kin_delta_fifo_len(f), with_known ? 4 : 3);
    assert_true(pop_expect(f, "Replaced a@6"));
    assert_true(pop_expect(f, "Replaced b@3"));
    assert_true(pop_expect(f, "Replaced c@5"));
    if (with_known) assert_true(pop_expect(f, "Deleted ~old{old@1}"));
    assert_true(kin_delta_fifo_has_synced(f));
    kin_delta_fifo_free(f);
    known_free(&k);
  }
  /* Plain Replace keeps client-go's behaviour: both deltas. */
  kin_delta_fifo *f = new_fifo(NULL);
  assert_int_equal(do_replace(f, mk("a", 2), mk("a", 4), NULL), 0);
  assert_true(pop_expect(f, "Replaced a@2, Replaced a@4"));
  kin_delta_fifo_free(f);
}

KIN_SUITE(delta_fifo_replace,
          cmocka_unit_test(test_delta_fifo_addReplace),
          cmocka_unit_test(test_delta_fifo_ReplaceMakesDeletions),
          cmocka_unit_test(test_delta_fifo_ReplaceMakesDeletionsReplaced),
          cmocka_unit_test(test_delta_fifo_ReplaceKnownKeyVanished),
          cmocka_unit_test(test_delta_fifo_ReplaceDeltaType),
          cmocka_unit_test(test_delta_fifo_HasSyncedCorrectOnDeletion),
          cmocka_unit_test(test_delta_fifo_InitialPopulationCountsQueuedDeletions),
          cmocka_unit_test(test_delta_fifo_replaceWithDeleteDeltaIn),
          cmocka_unit_test(test_delta_fifo_ReplaceMakesDeletionsForObjectsOnlyInQueue),
          cmocka_unit_test(test_delta_fifo_ReplaceCollectedKeyTwice))
