/* test_delta_fifo_transform.c -- the DeltaFIFO's transform: applied once
 * on enqueue (not again on resync or Replace), and an error queues nothing.
 * Fixture: delta_fifo_fx.h. */
#include "delta_fifo_fx.h"

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
KIN_SUITE(delta_fifo_transform,
          cmocka_unit_test(test_delta_fifo_Transformer),
          cmocka_unit_test(test_delta_fifo_TransformerAppliedOnEnqueue),
          cmocka_unit_test(test_delta_fifo_TransformerErrorQueuesNothing))
