/* test_store.c -- the Indexer seen as a plain Store: ports of client-go's
 * store_test.go (doTestStore / doTestIndex through TestCache and TestIndex)
 * plus the store behaviours kinformer adds: tombstone deletes, atomic
 * failure of index functions, Replace, and the DeltaFIFO key lister. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "kin.h"
#include "kobj.h"

/* A new object; ns NULL: cluster-scoped; rv NULL: "1"; labels: raw JSON
 * or NULL. */
static kin_obj *mk(const char *ns, const char *name, const char *rv, const char *labels) {
  return kin_test_obj(ns, name, rv, labels);
}

/* mkObj(id, val) of store_test.go: the value lives in label "val". */
static kin_obj *mk_val(const char *id, const char *val) {
  char l[128];
  snprintf(l, sizeof(l), "{\"val\":\"%s\"}", val);
  return mk(NULL, id, "1", l);
}

static const char *val_of(const kin_obj *o) {
  const char *v = kin_obj_label(o, "val");
  return v ? v : "";
}

static void assert_get_val(kin_indexer *s, const char *key, const char *val) {
  kin_obj *o = kin_indexer_get(s, key);
  if (!val) {
    assert_null(o);
    return;
  }
  assert_non_null(o);
  assert_string_equal(val_of(o), val);
  kin_obj_unref(o);
}

/* "key=val,..." of a list of objects, sorted. */
static const char *objs_str(kin_obj **objs, size_t n, char *buf, size_t cap) {
  char **s = calloc(n + 1, sizeof(char *));
  for (size_t i = 0; i < n; i++) {
    char tmp[256];
    snprintf(tmp, sizeof(tmp), "%s=%s", kin_obj_key(objs[i]), val_of(objs[i]));
    s[i] = strdup(tmp);
  }
  kin_test_join(s, n, buf, cap);
  kin_str_list_free(s, n);
  return buf;
}

static const char *list_str(kin_indexer *s, char *buf, size_t cap) {
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_list(s, &objs, &n), 0);
  objs_str(objs, n, buf, cap);
  kin_obj_list_free(objs, n);
  return buf;
}

static const char *keys_str(kin_indexer *s, char *buf, size_t cap) {
  char **keys;
  size_t n;
  assert_int_equal(kin_indexer_list_keys(s, &keys, &n), 0);
  kin_test_join(keys, n, buf, cap);
  kin_str_list_free(keys, n);
  return buf;
}

/* doTestStore, first part: Add, Get, Update, Delete of one key. */
static void test_store_TestCache_AddUpdateDelete(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk_val("foo", "bar"));
  assert_get_val(s, "foo", "bar");
  assert_int_equal(kin_indexer_len(s), 1);
  kin_obj *o = mk_val("foo", "baz");
  assert_int_equal(kin_indexer_update(s, o), 0);
  kin_obj_unref(o);
  assert_get_val(s, "foo", "baz");
  assert_int_equal(kin_indexer_len(s), 1);
  o = mk_val("foo", "");
  assert_int_equal(kin_indexer_delete(s, o), 0);
  kin_obj_unref(o);
  assert_get_val(s, "foo", NULL);
  assert_int_equal(kin_indexer_len(s), 0);
  kin_indexer_free(s);
}

/* doTestStore, second part: List and ListKeys after several adds. */
static void test_store_TestCache_List(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  char buf[512];
  assert_string_equal(list_str(s, buf, sizeof(buf)), "");
  kin_test_indexer_add(s, mk_val("a", "b"));
  kin_test_indexer_add(s, mk_val("c", "d"));
  kin_test_indexer_add(s, mk_val("e", "e"));
  assert_string_equal(list_str(s, buf, sizeof(buf)), "a=b,c=d,e=e");
  assert_string_equal(keys_str(s, buf, sizeof(buf)), "a,c,e");
  kin_indexer_free(s);
}

/* doTestStore, third part: Replace drops what is not listed. */
static void test_store_TestCache_Replace(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  char buf[512];
  kin_test_indexer_add(s, mk_val("a", "b"));
  kin_test_indexer_add(s, mk_val("c", "d"));
  kin_obj *objs[2] = {mk_val("foo", "foo"), mk_val("bar", "bar")};
  assert_int_equal(kin_indexer_replace(s, objs, 2), 0);
  kin_obj_unref(objs[0]);
  kin_obj_unref(objs[1]);
  assert_string_equal(list_str(s, buf, sizeof(buf)), "bar=bar,foo=foo");
  assert_string_equal(keys_str(s, buf, sizeof(buf)), "bar,foo");
  assert_get_val(s, "a", NULL);
  assert_get_val(s, "foo", "foo");
  /* Replace with nothing empties the store. */
  assert_int_equal(kin_indexer_replace(s, NULL, 0), 0);
  assert_int_equal(kin_indexer_len(s), 0);
  kin_indexer_free(s);
}

/* doTestIndex through TestIndex: Index("by_val", probe) finds the objects
 * sharing the probe's value. */
static void test_store_TestIndex(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "by_val", kin_index_by_label, "val", NULL), 0);
  kin_test_indexer_add(s, mk_val("a", "b"));
  kin_test_indexer_add(s, mk_val("c", "b"));
  kin_test_indexer_add(s, mk_val("e", "f"));
  kin_test_indexer_add(s, mk_val("g", "h"));
  static const struct {
    const char *val, *want;
  } cases[] = {{"b", "a=b,c=b"}, {"f", "e=f"}, {"h", "g=h"}, {"zz", ""}};
  char buf[256];
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    kin_obj *probe = mk_val("probe", cases[i].val);
    kin_obj **objs;
    size_t n;
    assert_int_equal(kin_indexer_index(s, "by_val", probe, &objs, &n), 0);
    assert_non_null(objs);
    assert_string_equal(objs_str(objs, n, buf, sizeof(buf)), cases[i].want);
    kin_obj_list_free(objs, n);
    assert_int_equal(kin_indexer_by_index(s, "by_val", cases[i].val, &objs, &n), 0);
    assert_string_equal(objs_str(objs, n, buf, sizeof(buf)), cases[i].want);
    kin_obj_list_free(objs, n);
    kin_obj_unref(probe);
  }
  kin_indexer_free(s);
}

/* Delete of a key that is not stored is not an error (client-go's
 * threadSafeMap.Delete ignores it). */
static void test_store_DeleteMissingKeyIsNoop(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "1", NULL));
  kin_obj *o = mk("ns", "b", "1", NULL);
  assert_int_equal(kin_indexer_delete(s, o), 0);
  kin_obj_unref(o);
  assert_int_equal(kin_indexer_len(s), 1);
  kin_indexer_free(s);
}

/* A DeletedFinalStateUnknown deletes by its key, with or without a last
 * state, and takes the index entries with it. */
static void test_store_DeleteTombstoneRemovesKey(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_obj *a = mk("ns", "a", "1", NULL);
  assert_int_equal(kin_indexer_add(s, a), 0);
  kin_test_indexer_add(s, mk("ns", "b", "1", NULL));
  kin_obj *t = kin_obj_tombstone("ns/a", a);
  assert_non_null(t);
  assert_int_equal(kin_indexer_delete(s, t), 0);
  kin_obj_unref(t);
  kin_obj_unref(a);
  assert_null(kin_indexer_get(s, "ns/a"));
  t = kin_obj_tombstone("ns/b", NULL);
  assert_int_equal(kin_indexer_delete(s, t), 0);
  kin_obj_unref(t);
  assert_int_equal(kin_indexer_len(s), 0);
  char **vals;
  size_t n;
  assert_int_equal(kin_indexer_list_index_func_values(s, KIN_INDEX_NAMESPACE, &vals, &n), 0);
  assert_int_equal(n, 0);
  kin_str_list_free(vals, n);
  kin_indexer_free(s);
}

/* Add of a key already present replaces the object (Add is Update). */
static void test_store_AddExistingKeyReplaces(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "1", NULL));
  kin_test_indexer_add(s, mk("ns", "a", "2", NULL));
  assert_int_equal(kin_indexer_len(s), 1);
  kin_obj *o = kin_indexer_get(s, "ns/a");
  assert_string_equal(kin_obj_resource_version(o), "2");
  kin_obj_unref(o);
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_by_index(s, KIN_INDEX_NAMESPACE, "ns", &objs, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(kin_obj_resource_version(objs[0]), "2");
  kin_obj_list_free(objs, n);
  kin_indexer_free(s);
}

/* The store hands out references to the very object it was given. */
static void test_store_GetReturnsSharedReference(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_obj *o = mk("ns", "a", "1", NULL);
  assert_int_equal(kin_indexer_add(s, o), 0);
  kin_obj *g = kin_indexer_get(s, "ns/a");
  assert_ptr_equal(g, o);
  kin_obj_unref(g);
  kin_obj_unref(o);
  /* the store's own reference keeps it alive */
  g = kin_indexer_get(s, "ns/a");
  assert_string_equal(kin_obj_name(g), "a");
  kin_obj_unref(g);
  kin_indexer_free(s);
}

/* Replace rebuilds every index: entries of the old content disappear; a
 * key listed twice keeps the later object. */
static void test_store_ReplaceRebuildsIndexes(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "by_val", kin_index_by_label, "val", NULL), 0);
  kin_test_indexer_add(s, mk("old", "a", "1", "{\"val\":\"x\"}"));
  kin_obj *objs[3] = {mk("new", "b", "1", "{\"val\":\"x\"}"),
                      mk("new", "c", "1", "{\"val\":\"y\"}"),
                      mk("new", "b", "2", "{\"val\":\"z\"}")};
  assert_int_equal(kin_indexer_replace(s, objs, 3), 0);
  for (int i = 0; i < 3; i++) kin_obj_unref(objs[i]);
  char buf[256];
  char **v;
  size_t n;
  assert_int_equal(kin_indexer_list_index_func_values(s, KIN_INDEX_NAMESPACE, &v, &n), 0);
  assert_string_equal(kin_test_join(v, n, buf, sizeof(buf)), "new");
  kin_str_list_free(v, n);
  assert_int_equal(kin_indexer_list_index_func_values(s, "by_val", &v, &n), 0);
  assert_string_equal(kin_test_join(v, n, buf, sizeof(buf)), "y,z");
  kin_str_list_free(v, n);
  assert_int_equal(kin_indexer_index_keys(s, KIN_INDEX_NAMESPACE, "new", &v, &n), 0);
  assert_string_equal(kin_test_join(v, n, buf, sizeof(buf)), "new/b,new/c");
  kin_str_list_free(v, n);
  assert_int_equal(kin_indexer_index_keys(s, "by_val", "z", &v, &n), 0);
  assert_string_equal(kin_test_join(v, n, buf, sizeof(buf)), "new/b");
  kin_str_list_free(v, n);
  assert_int_equal(kin_indexer_len(s), 2);
  kin_indexer_free(s);
}

/* Refuses objects carrying label "bad". */
static int picky_index(void *ud, const kin_obj *o, kin_index_emit_fn emit, void *ctx) {
  if (kin_obj_label(o, "bad")) return KIN_EINVAL;
  return emit(ctx, kin_obj_name(o));
}

/* client-go panics when an index function fails; kinformer fails the
 * store operation instead and leaves the store as it was. */
static void test_store_IndexFuncErrorLeavesStoreUnchanged(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "picky", picky_index, NULL, NULL), 0);
  kin_test_indexer_add(s, mk("ns", "a", "1", NULL));
  char buf[256];
  char **v;
  size_t n;

  kin_obj *bad = mk("ns", "b", "1", "{\"bad\":\"1\"}");
  assert_int_equal(kin_indexer_add(s, bad), KIN_EINVAL);
  kin_obj_unref(bad);
  assert_null(kin_indexer_get(s, "ns/b"));

  bad = mk("ns", "a", "2", "{\"bad\":\"1\"}");
  assert_int_equal(kin_indexer_update(s, bad), KIN_EINVAL);
  kin_obj_unref(bad);
  kin_obj *o = kin_indexer_get(s, "ns/a");
  assert_string_equal(kin_obj_resource_version(o), "1");
  kin_obj_unref(o);

  kin_obj *objs[2] = {mk("ns", "c", "1", NULL), mk("ns", "d", "1", "{\"bad\":\"1\"}")};
  assert_int_equal(kin_indexer_replace(s, objs, 2), KIN_EINVAL);
  kin_obj_unref(objs[0]);
  kin_obj_unref(objs[1]);

  assert_string_equal(keys_str(s, buf, sizeof(buf)), "ns/a");
  assert_int_equal(kin_indexer_list_index_func_values(s, "picky", &v, &n), 0);
  assert_string_equal(kin_test_join(v, n, buf, sizeof(buf)), "a");
  kin_str_list_free(v, n);
  assert_int_equal(kin_indexer_index_keys(s, KIN_INDEX_NAMESPACE, "ns", &v, &n), 0);
  assert_string_equal(kin_test_join(v, n, buf, sizeof(buf)), "ns/a");
  kin_str_list_free(v, n);
  kin_indexer_free(s);
}

/* An index that cannot index an object already stored is not added. */
static void test_store_AddIndexErrorRegistersNothing(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "1", "{\"bad\":\"1\"}"));
  assert_int_equal(kin_indexer_add_index(s, "picky", picky_index, NULL, NULL), KIN_EINVAL);
  char **v;
  size_t n;
  assert_int_equal(kin_indexer_list_index_func_values(s, "picky", &v, &n), KIN_ENOENT);
  /* the name stays free */
  kin_obj *o = kin_indexer_get(s, "ns/a");
  assert_int_equal(kin_indexer_delete(s, o), 0);
  kin_obj_unref(o);
  assert_int_equal(kin_indexer_add_index(s, "picky", picky_index, NULL, NULL), 0);
  kin_indexer_free(s);
}

static int collect_key(void *ctx, const char *key) {
  char **acc = ctx;
  size_t n = 0;
  while (acc[n]) n++;
  acc[n] = strdup(key);
  return 0;
}

static int stop_at_first(void *ctx, const char *key) {
  (*(int *)ctx)++;
  return 42;
}

/* The indexer as a DeltaFIFO's knownObjects: every key once, early stop
 * passes the callback's value through, get returns new references. */
static void test_store_KeyLister(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "1", NULL));
  kin_test_indexer_add(s, mk(NULL, "b", "1", NULL));
  kin_key_lister l = kin_indexer_key_lister(s);
  char *acc[4] = {0};
  assert_int_equal(l.list_keys(l.ud, collect_key, acc), 0);
  char buf[64];
  assert_string_equal(kin_test_join(acc, 2, buf, sizeof(buf)), "b,ns/a");
  free(acc[0]);
  free(acc[1]);
  int calls = 0;
  assert_int_equal(l.list_keys(l.ud, stop_at_first, &calls), 42);
  assert_int_equal(calls, 1);
  kin_obj *o = l.get(l.ud, "b");
  assert_non_null(o);
  assert_string_equal(kin_obj_key(o), "b");
  kin_obj_unref(o);
  assert_null(l.get(l.ud, "ns/zz"));
  kin_indexer_free(s);
}

static int count_until(void *ctx, kin_obj *o) {
  int *c = ctx;
  return ++*c == 2 ? 7 : 0;
}

static void test_store_ForeachStopsOnNonZero(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "1", NULL));
  kin_test_indexer_add(s, mk("ns", "b", "1", NULL));
  kin_test_indexer_add(s, mk("ns", "c", "1", NULL));
  int c = 0;
  assert_int_equal(kin_indexer_foreach(s, count_until, &c), 7);
  assert_int_equal(c, 2);
  kin_indexer_free(s);
}

static int delete_each(void *ctx, kin_obj *o) {
  kin_indexer *s = ctx;
  kin_obj *g = kin_indexer_get(s, kin_obj_key(o));
  int r = g ? kin_indexer_delete(s, g) : KIN_EINVAL;
  kin_obj_unref(g);
  return r;
}

/* foreach runs over a snapshot with no lock held: its callback may read
 * and even write the store (under the writer-preferring lock a callback
 * run inside the read lock would deadlock here). */
static void test_store_ForeachCallbackMayUseStore(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "1", NULL));
  kin_test_indexer_add(s, mk("ns", "b", "1", NULL));
  assert_int_equal(kin_indexer_foreach(s, delete_each, s), 0);
  assert_int_equal(kin_indexer_len(s), 0);
  kin_indexer_free(s);
}

/* Cluster-scoped objects are keyed by name alone. */
static void test_store_ClusterScopedKey(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk(NULL, "node1", "1", NULL));
  kin_test_indexer_add(s, mk("ns", "node1", "1", NULL));
  char buf[64];
  assert_string_equal(keys_str(s, buf, sizeof(buf)), "node1,ns/node1");
  kin_obj *o = kin_indexer_get(s, "node1");
  assert_non_null(o);
  assert_string_equal(kin_obj_namespace(o), "");
  kin_obj_unref(o);
  kin_indexer_free(s);
}

/* kin_indexer_reserve is a capacity hint: the store keeps what it holds,
 * takes the n objects after it without losing any, and a hint smaller
 * than what it holds changes nothing. */
static void test_store_ReserveKeepsContents(void **state) {
  (void)state;
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_reserve(NULL, 10), KIN_EINVAL);
  kin_test_indexer_add(s, mk_val("a", "1"));
  assert_int_equal(kin_indexer_reserve(s, 5000), 0);
  assert_get_val(s, "a", "1");
  char name[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof name, "o%d", i);
    kin_obj *o = mk_val(name, name);
    assert_int_equal(kin_indexer_add(s, o), 0);
    kin_obj_unref(o);
  }
  assert_int_equal(kin_indexer_reserve(s, 10), 0);
  assert_int_equal(kin_indexer_len(s), 5001);
  assert_get_val(s, "a", "1");
  assert_get_val(s, "o0", "o0");
  assert_get_val(s, "o4999", "o4999");
  assert_get_val(s, "o5000", NULL);
  kin_indexer_free(s);
}

KIN_SUITE(store, cmocka_unit_test(test_store_TestCache_AddUpdateDelete),
          cmocka_unit_test(test_store_TestCache_List), cmocka_unit_test(test_store_TestCache_Replace),
          cmocka_unit_test(test_store_TestIndex),
          cmocka_unit_test(test_store_DeleteMissingKeyIsNoop),
          cmocka_unit_test(test_store_DeleteTombstoneRemovesKey),
          cmocka_unit_test(test_store_AddExistingKeyReplaces),
          cmocka_unit_test(test_store_GetReturnsSharedReference),
          cmocka_unit_test(test_store_ReplaceRebuildsIndexes),
          cmocka_unit_test(test_store_IndexFuncErrorLeavesStoreUnchanged),
          cmocka_unit_test(test_store_AddIndexErrorRegistersNothing),
          cmocka_unit_test(test_store_KeyLister), cmocka_unit_test(test_store_ForeachStopsOnNonZero),
          cmocka_unit_test(test_store_ForeachCallbackMayUseStore),
          cmocka_unit_test(test_store_ClusterScopedKey),
          cmocka_unit_test(test_store_ReserveKeepsContents))
