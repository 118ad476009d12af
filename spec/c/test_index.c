/* test_index.c -- indexes of the Indexer: ports of client-go's index_test.go
 * (TestGetIndexFuncValues, TestMultiIndexKeys) and the ready-made index
 * functions (namespace, label, controller owner uid), registration rules,
 * unknown index names, and removal of empty value sets. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "kin.h"
#include "kobj.h"

/* A new object at resourceVersion 1; ns NULL: cluster-scoped; labels /
 * extra metadata fields: raw JSON or NULL. */
static kin_obj *mkx(const char *ns, const char *name, const char *labels, const char *extra) {
  return kin_test_obj_ext(ns, name, "1", labels, extra);
}

static kin_obj *mk(const char *ns, const char *name, const char *labels) {
  return kin_test_obj(ns, name, "1", labels);
}

/* IndexKeys(name, value) as "k1,k2" (already sorted by the indexer). */
static const char *ikeys(kin_indexer *s, const char *name, const char *value, char *buf,
                         size_t cap) {
  char **v;
  size_t n;
  assert_int_equal(kin_indexer_index_keys(s, name, value, &v, &n), 0);
  assert_non_null(v);
  buf[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (i) {
      assert_true(strcmp(v[i - 1], v[i]) < 0); /* sorted, no duplicate */
      strncat(buf, ",", cap - strlen(buf) - 1);
    }
    strncat(buf, v[i], cap - strlen(buf) - 1);
  }
  kin_str_list_free(v, n);
  return buf;
}

/* ListIndexFuncValues(name) as a sorted "v1,v2". */
static const char *ivals(kin_indexer *s, const char *name, char *buf, size_t cap) {
  char **v;
  size_t n;
  assert_int_equal(kin_indexer_list_index_func_values(s, name, &v, &n), 0);
  kin_test_join(v, n, buf, cap);
  kin_str_list_free(v, n);
  return buf;
}

/* Keys of a list of objects, sorted. */
static const char *okeys(kin_obj **objs, size_t n, char *buf, size_t cap) {
  char **k = calloc(n + 1, sizeof(char *));
  for (size_t i = 0; i < n; i++) k[i] = strdup(kin_obj_key(objs[i]));
  kin_test_join(k, n, buf, cap);
  kin_str_list_free(k, n);
  kin_obj_list_free(objs, n);
  return buf;
}

static const char *byidx(kin_indexer *s, const char *name, const char *value, char *buf,
                         size_t cap) {
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_by_index(s, name, value, &objs, &n), 0);
  return okeys(objs, n, buf, cap);
}

static void test_index_TestGetIndexFuncValues(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "testmodes", kin_index_by_label, "foo", NULL), 0);
  kin_test_indexer_add(s, mk(NULL, "one", "{\"foo\":\"bar\"}"));
  kin_test_indexer_add(s, mk(NULL, "two", "{\"foo\":\"bar\"}"));
  kin_test_indexer_add(s, mk(NULL, "tre", "{\"foo\":\"biz\"}"));
  char buf[128];
  assert_string_equal(ivals(s, "testmodes", buf, sizeof(buf)), "bar,biz");
  kin_indexer_free(s);
}

static void test_index_TestMultiIndexKeys(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  /* testUsersIndexFunc of index_test.go, with the user list in label
   * "users" separated by '.' (a valid label value) instead of a comma
   * separated annotation. */
  assert_int_equal(
      kin_indexer_add_index(s, "byUser", kin_test_split_label_index, "users", NULL), 0);
  kin_obj *pod1 = mk(NULL, "one", "{\"users\":\"ernie.bert\"}");
  kin_obj *pod2 = mk(NULL, "two", "{\"users\":\"bert.oscar\"}");
  kin_obj *pod3 = mk(NULL, "tre", "{\"users\":\"ernie.elmo\"}");
  assert_int_equal(kin_indexer_add(s, pod1), 0);
  assert_int_equal(kin_indexer_add(s, pod2), 0);
  assert_int_equal(kin_indexer_add(s, pod3), 0);
  char buf[128];
  assert_string_equal(ikeys(s, "byUser", "ernie", buf, sizeof(buf)), "one,tre");
  assert_string_equal(ikeys(s, "byUser", "bert", buf, sizeof(buf)), "one,two");
  assert_string_equal(ikeys(s, "byUser", "elmo", buf, sizeof(buf)), "tre");
  assert_string_equal(ikeys(s, "byUser", "oscar", buf, sizeof(buf)), "two");
  assert_string_equal(ikeys(s, "byUser", "nobody", buf, sizeof(buf)), "");

  /* Index(pod2): everyone sharing bert or oscar, each object once. */
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_index(s, "byUser", pod2, &objs, &n), 0);
  assert_string_equal(okeys(objs, n, buf, sizeof(buf)), "one,two");

  /* ByIndex returns the objects themselves. */
  assert_string_equal(byidx(s, "byUser", "ernie", buf, sizeof(buf)), "one,tre");

  /* An update moves the key out of the values the object lost. */
  kin_obj *pod2b = mk(NULL, "two", "{\"users\":\"oscar\"}");
  assert_int_equal(kin_indexer_update(s, pod2b), 0);
  kin_obj_unref(pod2b);
  assert_string_equal(ikeys(s, "byUser", "bert", buf, sizeof(buf)), "one");
  assert_string_equal(ikeys(s, "byUser", "oscar", buf, sizeof(buf)), "two");

  /* Delete takes every entry of the object; elmo's set empties and goes. */
  assert_int_equal(kin_indexer_delete(s, pod3), 0);
  assert_string_equal(ikeys(s, "byUser", "elmo", buf, sizeof(buf)), "");
  assert_string_equal(byidx(s, "byUser", "elmo", buf, sizeof(buf)), "");
  assert_string_equal(ikeys(s, "byUser", "ernie", buf, sizeof(buf)), "one");
  assert_string_equal(ivals(s, "byUser", buf, sizeof(buf)), "bert,ernie,oscar");
  kin_obj_unref(pod1);
  kin_obj_unref(pod2);
  kin_obj_unref(pod3);
  kin_indexer_free(s);
}

/* The built-in "namespace" index (MetaNamespaceIndexFunc): cluster-scoped
 * objects are indexed under "". */
static void test_index_NamespaceIndex(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("a", "p1", NULL));
  kin_test_indexer_add(s, mk("a", "p2", NULL));
  kin_test_indexer_add(s, mk("b", "p1", NULL));
  kin_test_indexer_add(s, mk(NULL, "node1", NULL));
  char buf[128];
  assert_string_equal(byidx(s, KIN_INDEX_NAMESPACE, "a", buf, sizeof(buf)), "a/p1,a/p2");
  assert_string_equal(byidx(s, KIN_INDEX_NAMESPACE, "b", buf, sizeof(buf)), "b/p1");
  assert_string_equal(byidx(s, KIN_INDEX_NAMESPACE, "", buf, sizeof(buf)), "node1");
  assert_string_equal(byidx(s, KIN_INDEX_NAMESPACE, "c", buf, sizeof(buf)), "");
  assert_string_equal(ivals(s, KIN_INDEX_NAMESPACE, buf, sizeof(buf)), ",a,b");
  /* Index with a probe object from namespace a */
  kin_obj *probe = mk("a", "zz", NULL);
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_index(s, KIN_INDEX_NAMESPACE, probe, &objs, &n), 0);
  assert_string_equal(okeys(objs, n, buf, sizeof(buf)), "a/p1,a/p2");
  kin_obj_unref(probe);
  kin_indexer_free(s);
}

static void test_index_LabelIndex(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "app", kin_index_by_label, "app", NULL), 0);
  kin_test_indexer_add(s, mk("ns", "a", "{\"app\":\"web\"}"));
  kin_test_indexer_add(s, mk("ns", "b", "{\"app\":\"db\",\"tier\":\"x\"}"));
  kin_test_indexer_add(s, mk("ns", "c", "{\"tier\":\"web\"}")); /* other label: not indexed */
  kin_test_indexer_add(s, mk("ns", "d", NULL));
  char buf[128];
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "db,web");
  assert_string_equal(byidx(s, "app", "web", buf, sizeof(buf)), "ns/a");
  /* relabel b to web, then drop a's label */
  kin_test_indexer_add(s, mk("ns", "b", "{\"app\":\"web\"}"));
  assert_string_equal(byidx(s, "app", "web", buf, sizeof(buf)), "ns/a,ns/b");
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "web");
  kin_test_indexer_add(s, mk("ns", "a", NULL));
  assert_string_equal(byidx(s, "app", "web", buf, sizeof(buf)), "ns/b");
  kin_indexer_free(s);
}

#define OWNER(uid, ctl)                                                                  \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"" uid \
  "\",\"controller\":" ctl "}"

static void test_index_ControllerOwnerIndex(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(
      kin_indexer_add_index(s, "owner", kin_index_by_controller_uid, NULL, NULL), 0);
  kin_test_indexer_add(s, mkx("ns", "p1", NULL, "\"ownerReferences\":[" OWNER("u1", "true") "]"));
  kin_test_indexer_add(s, mkx("ns", "p2", NULL,
             "\"ownerReferences\":[" OWNER("u2", "false") "," OWNER("u1", "true") "]"));
  /* an owner that is not the controller is not indexed */
  kin_test_indexer_add(s, mkx("ns", "p3", NULL, "\"ownerReferences\":[" OWNER("u2", "false") "]"));
  kin_test_indexer_add(s, mk("ns", "p4", NULL));
  char buf[128];
  assert_string_equal(byidx(s, "owner", "u1", buf, sizeof(buf)), "ns/p1,ns/p2");
  assert_string_equal(byidx(s, "owner", "u2", buf, sizeof(buf)), "");
  assert_string_equal(ivals(s, "owner", buf, sizeof(buf)), "u1");
  kin_indexer_free(s);
}

/* kubernetes/kubernetes#84959: a value whose last key leaves is dropped,
 * so ListIndexFuncValues does not grow with short-lived values. */
static void test_index_ListIndexFuncValuesDropsEmptySets(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "app", kin_index_by_label, "app", NULL), 0);
  char buf[128];
  kin_obj *a = mk("x", "a", "{\"app\":\"web\"}");
  assert_int_equal(kin_indexer_add(s, a), 0);
  kin_test_indexer_add(s, mk("y", "b", "{\"app\":\"db\"}"));
  assert_string_equal(ivals(s, KIN_INDEX_NAMESPACE, buf, sizeof(buf)), "x,y");
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "db,web");
  /* a delete empties namespace x */
  assert_int_equal(kin_indexer_delete(s, a), 0);
  assert_string_equal(ivals(s, KIN_INDEX_NAMESPACE, buf, sizeof(buf)), "y");
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "db");
  /* an update moving the last key off a value empties it too */
  kin_test_indexer_add(s, mk("y", "b", "{\"app\":\"api\"}"));
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "api");
  assert_string_equal(ikeys(s, "app", "db", buf, sizeof(buf)), "");
  kin_obj *t = kin_obj_tombstone("y/b", NULL);
  assert_int_equal(kin_indexer_delete(s, t), 0);
  kin_obj_unref(t);
  assert_string_equal(ivals(s, KIN_INDEX_NAMESPACE, buf, sizeof(buf)), "");
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "");
  kin_obj_unref(a);
  kin_indexer_free(s);
}

static void test_index_UnknownIndexIsENOENT(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", NULL));
  kin_obj **objs;
  char **strs;
  size_t n;
  kin_obj *probe = mk("ns", "b", NULL);
  assert_int_equal(kin_indexer_index(s, "nope", probe, &objs, &n), KIN_ENOENT);
  assert_int_equal(kin_indexer_by_index(s, "nope", "ns", &objs, &n), KIN_ENOENT);
  assert_int_equal(kin_indexer_index_keys(s, "nope", "ns", &strs, &n), KIN_ENOENT);
  assert_int_equal(kin_indexer_list_index_func_values(s, "nope", &strs, &n), KIN_ENOENT);
  kin_obj_unref(probe);
  kin_indexer_free(s);
}

/* AddIndexers on a non-empty store indexes what is there; a name in use
 * (the built-in one included) is refused. */
static void test_index_AddIndexOnNonEmptyStore(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk("ns", "a", "{\"app\":\"web\"}"));
  kin_test_indexer_add(s, mk("ns", "b", "{\"app\":\"web\"}"));
  kin_test_indexer_add(s, mk("ns", "c", "{\"app\":\"db\"}"));
  assert_int_equal(kin_indexer_add_index(s, "app", kin_index_by_label, "app", NULL), 0);
  char buf[128];
  assert_string_equal(byidx(s, "app", "web", buf, sizeof(buf)), "ns/a,ns/b");
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "db,web");
  assert_int_equal(kin_indexer_add_index(s, "app", kin_index_by_label, "tier", NULL), KIN_EEXIST);
  assert_int_equal(kin_indexer_add_index(s, KIN_INDEX_NAMESPACE, kin_index_by_label, "x", NULL),
                   KIN_EEXIST);
  /* the first registration is the one in force */
  assert_string_equal(ivals(s, "app", buf, sizeof(buf)), "db,web");
  /* later writes maintain it */
  kin_test_indexer_add(s, mk("ns", "d", "{\"app\":\"db\"}"));
  assert_string_equal(byidx(s, "app", "db", buf, sizeof(buf)), "ns/c,ns/d");
  kin_indexer_free(s);
}

static int dup_index(void *ud, const kin_obj *o, kin_index_emit_fn emit, void *ctx) {
  int r = emit(ctx, "x");
  if (r == 0) r = emit(ctx, kin_obj_name(o));
  if (r == 0) r = emit(ctx, "x");
  return r;
}

/* One object emitting a value twice is indexed once under it, and one
 * delete takes it out entirely. */
static void test_index_DuplicateValuesFromOneObject(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "dup", dup_index, NULL, NULL), 0);
  kin_obj *a = mk("ns", "a", NULL);
  assert_int_equal(kin_indexer_add(s, a), 0);
  char buf[128];
  assert_string_equal(ikeys(s, "dup", "x", buf, sizeof(buf)), "ns/a");
  assert_string_equal(ivals(s, "dup", buf, sizeof(buf)), "a,x");
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_index(s, "dup", a, &objs, &n), 0);
  assert_int_equal(n, 1);
  kin_obj_list_free(objs, n);
  assert_int_equal(kin_indexer_delete(s, a), 0);
  assert_string_equal(ivals(s, "dup", buf, sizeof(buf)), "");
  kin_obj_unref(a);
  kin_indexer_free(s);
}

/* emit copies: an index function may emit from a scratch buffer. */
static int scratch_index(void *ud, const kin_obj *o, kin_index_emit_fn emit, void *ctx) {
  char tmp[64];
  snprintf(tmp, sizeof(tmp), "v-%s", kin_obj_name(o));
  int r = emit(ctx, tmp);
  memset(tmp, 'X', sizeof(tmp) - 1);
  tmp[sizeof(tmp) - 1] = 0;
  return r;
}

static void test_index_EmitCopiesValue(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "scratch", scratch_index, NULL, NULL), 0);
  kin_test_indexer_add(s, mk("ns", "a", NULL));
  kin_test_indexer_add(s, mk("ns", "b", NULL));
  char buf[128];
  assert_string_equal(ivals(s, "scratch", buf, sizeof(buf)), "v-a,v-b");
  kin_indexer_free(s);
}

/* Reads its prefix from the "cfg" object kept in the same store; values
 * are "<prefix>-<namespace>". */
static int cfg_index(void *ud, const kin_obj *o, kin_index_emit_fn emit, void *ctx) {
  if (!kin_obj_namespace(o)[0]) return 0;
  kin_obj *cfg = kin_indexer_get(ud, "cfg");
  const char *pre = cfg ? kin_obj_label(cfg, "prefix") : NULL;
  char v[128];
  snprintf(v, sizeof(v), "%s-%s", pre ? pre : "none", kin_obj_namespace(o));
  kin_obj_unref(cfg);
  return emit(ctx, v);
}

/* An index function may read the store from every path that calls it
 * (add_index, add/update, delete, replace, Index) without deadlocking:
 * none of them holds the read lock around it. */
static void test_index_IndexFuncMayReadStore(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  kin_test_indexer_add(s, mk(NULL, "cfg", "{\"prefix\":\"t\"}"));
  kin_test_indexer_add(s, mk("a", "p1", NULL));
  assert_int_equal(kin_indexer_add_index(s, "cfg", cfg_index, s, NULL), 0);
  char buf[128];
  assert_string_equal(byidx(s, "cfg", "t-a", buf, sizeof(buf)), "a/p1");
  kin_test_indexer_add(s, mk("a", "p2", NULL));
  assert_string_equal(byidx(s, "cfg", "t-a", buf, sizeof(buf)), "a/p1,a/p2");
  kin_obj *probe = mk("a", "zz", NULL);
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_index(s, "cfg", probe, &objs, &n), 0);
  assert_int_equal(n, 2);
  kin_obj_list_free(objs, n);
  kin_obj_unref(probe);
  kin_obj *p1 = kin_indexer_get(s, "a/p1");
  assert_int_equal(kin_indexer_delete(s, p1), 0);
  kin_obj_unref(p1);
  assert_string_equal(byidx(s, "cfg", "t-a", buf, sizeof(buf)), "a/p2");
  kin_obj *objs2[2] = {mk(NULL, "cfg", "{\"prefix\":\"t\"}"), mk("b", "p3", NULL)};
  assert_int_equal(kin_indexer_replace(s, objs2, 2), 0);
  kin_obj_unref(objs2[0]);
  kin_obj_unref(objs2[1]);
  assert_string_equal(ivals(s, "cfg", buf, sizeof(buf)), "t-b");
  kin_indexer_free(s);
}

static int freed;
static void count_free(void *ud) { freed += *(int *)ud; }

/* ud_free runs once per index when the indexer goes. */
static void test_index_UdFreeCalledOnFree(void **state) {
  static int one = 1;
  freed = 0;
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(kin_indexer_add_index(s, "x", kin_index_by_label, "app", NULL), 0);
  assert_int_equal(kin_indexer_add_index(s, "y", scratch_index, &one, count_free), 0);
  kin_indexer_free(s);
  assert_int_equal(freed, 1);
}

/* ByIndex at scale: with 20000 objects over 200 namespaces each lookup
 * returns exactly that namespace's 100 objects (the implementation visits
 * only the value's set; see indexer.c). */
static void test_index_ByIndexAtScale(void **state) {
  kin_indexer *s = kin_test_indexer_new();
  char ns[32], name[32];
  for (int i = 0; i < 20000; i++) {
    snprintf(ns, sizeof(ns), "ns%d", i % 200);
    snprintf(name, sizeof(name), "o%d", i);
    kin_test_indexer_add(s, mk(ns, name, NULL));
  }
  assert_int_equal(kin_indexer_len(s), 20000);
  for (int k = 0; k < 200; k += 37) {
    snprintf(ns, sizeof(ns), "ns%d", k);
    kin_obj **objs;
    size_t n;
    assert_int_equal(kin_indexer_by_index(s, KIN_INDEX_NAMESPACE, ns, &objs, &n), 0);
    assert_int_equal(n, 100);
    for (size_t j = 0; j < n; j++) assert_string_equal(kin_obj_namespace(objs[j]), ns);
    kin_obj_list_free(objs, n);
  }
  /* delete all but one object of ns0 and check the set shrank correctly */
  for (int i = 200; i < 20000; i += 200) {
    snprintf(name, sizeof(name), "ns0/o%d", i);
    kin_obj *t = kin_obj_tombstone(name, NULL);
    assert_int_equal(kin_indexer_delete(s, t), 0);
    kin_obj_unref(t);
  }
  char buf[64];
  assert_string_equal(byidx(s, KIN_INDEX_NAMESPACE, "ns0", buf, sizeof(buf)), "ns0/o0");
  kin_indexer_free(s);
}

KIN_SUITE(index, cmocka_unit_test(test_index_TestGetIndexFuncValues),
          cmocka_unit_test(test_index_TestMultiIndexKeys), cmocka_unit_test(test_index_NamespaceIndex),
          cmocka_unit_test(test_index_LabelIndex), cmocka_unit_test(test_index_ControllerOwnerIndex),
          cmocka_unit_test(test_index_ListIndexFuncValuesDropsEmptySets),
          cmocka_unit_test(test_index_UnknownIndexIsENOENT),
          cmocka_unit_test(test_index_AddIndexOnNonEmptyStore),
          cmocka_unit_test(test_index_DuplicateValuesFromOneObject),
          cmocka_unit_test(test_index_EmitCopiesValue), cmocka_unit_test(test_index_UdFreeCalledOnFree),
          cmocka_unit_test(test_index_IndexFuncMayReadStore),
          cmocka_unit_test(test_index_ByIndexAtScale))
