/* test_thread_safe_store.c -- ports of client-go's thread_safe_store_test.go
 * (empty sets removed, non-empty sets kept, multi-valued index functions)
 * and a concurrency test: one writer doing add/update/delete/replace while
 * readers check that every answer is internally consistent. Must be clean
 * under ThreadSanitizer. */
#include "kin_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "kin.h"
#include "kobj.h"

/* NULL on failure, without a cmocka assertion: the writer thread calls it. */
static kin_obj *mk(const char *ns, const char *name, const char *rv, const char *labels) {
  return kin_test_obj_try(ns, name, rv, labels, NULL);
}

/* A cluster-scoped object whose label "v" holds the values, '.'-separated
 * (the string objects of thread_safe_store_test.go). */
static kin_obj *mkv(const char *key, const char *v) {
  char l[256];
  snprintf(l, sizeof(l), "{\"v\":\"%s\"}", v);
  return kin_test_obj(NULL, key, "1", l);
}

/* strings.Split(obj, ",") of the Go test, on '.' over label "v". */
static kin_indexer *new_split_store(void) {
  kin_indexer *s = kin_test_indexer_new();
  assert_int_equal(
      kin_indexer_add_index(s, "testIndexer", kin_test_split_label_index, "v", NULL), 0);
  return s;
}

static void put(kin_indexer *s, const char *key, const char *v) {
  kin_obj *o = mkv(key, v);
  assert_int_equal(kin_indexer_update(s, o), 0);
  kin_obj_unref(o);
}

static void del(kin_indexer *s, const char *key) {
  kin_obj *t = kin_obj_tombstone(key, NULL);
  assert_non_null(t);
  assert_int_equal(kin_indexer_delete(s, t), 0);
  kin_obj_unref(t);
}

/* IndexKeys as "k1,k2" (sorted by the indexer). */
static const char *ikeys(kin_indexer *s, const char *value, char *buf, size_t cap) {
  char **v;
  size_t n;
  assert_int_equal(kin_indexer_index_keys(s, "testIndexer", value, &v, &n), 0);
  buf[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (i) strncat(buf, ",", cap - strlen(buf) - 1);
    strncat(buf, v[i], cap - strlen(buf) - 1);
  }
  kin_str_list_free(v, n);
  return buf;
}

static size_t nvalues(kin_indexer *s, const char *name) {
  char **v;
  size_t n;
  assert_int_equal(kin_indexer_list_index_func_values(s, name, &v, &n), 0);
  kin_str_list_free(v, n);
  return n;
}

static void test_thread_safe_store_TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex(
    void **state) {
  kin_indexer *s = new_split_store();
  put(s, "retain", "retain");
  put(s, "delete", "delete");
  assert_int_equal(nvalues(s, "testIndexer"), 2);
  del(s, "delete");
  assert_int_equal(nvalues(s, "testIndexer"), 1);
  char buf[64];
  assert_string_equal(ikeys(s, "delete", buf, sizeof(buf)), "");
  assert_string_equal(ikeys(s, "retain", buf, sizeof(buf)), "retain");
  kin_indexer_free(s);
}

static void test_thread_safe_store_TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex(
    void **state) {
  kin_indexer *s = new_split_store();
  put(s, "retain", "retain");
  put(s, "delete", "retain");
  char buf[64];
  assert_string_equal(ikeys(s, "retain", buf, sizeof(buf)), "delete,retain");
  del(s, "delete");
  assert_int_equal(nvalues(s, "testIndexer"), 1);
  assert_string_equal(ikeys(s, "retain", buf, sizeof(buf)), "retain");
  kin_indexer_free(s);
}

static void test_thread_safe_store_TestThreadSafeStoreIndexingFunctionsWithMultipleValues(
    void **state) {
  kin_indexer *s = new_split_store();
  char buf[64];
  put(s, "key1", "foo");
  put(s, "key2", "bar");
  assert_string_equal(ikeys(s, "foo", buf, sizeof(buf)), "key1");
  assert_string_equal(ikeys(s, "bar", buf, sizeof(buf)), "key2");

  put(s, "key2", "foo.bar");
  assert_string_equal(ikeys(s, "foo", buf, sizeof(buf)), "key1,key2");
  assert_string_equal(ikeys(s, "bar", buf, sizeof(buf)), "key2");

  put(s, "key1", "foo.bar");
  assert_string_equal(ikeys(s, "foo", buf, sizeof(buf)), "key1,key2");
  assert_string_equal(ikeys(s, "bar", buf, sizeof(buf)), "key1,key2");

  put(s, "key3", "foo.bar.baz");
  assert_string_equal(ikeys(s, "foo", buf, sizeof(buf)), "key1,key2,key3");
  assert_string_equal(ikeys(s, "bar", buf, sizeof(buf)), "key1,key2,key3");
  assert_string_equal(ikeys(s, "baz", buf, sizeof(buf)), "key3");

  put(s, "key1", "foo");
  assert_string_equal(ikeys(s, "foo", buf, sizeof(buf)), "key1,key2,key3");
  assert_string_equal(ikeys(s, "bar", buf, sizeof(buf)), "key2,key3");

  put(s, "key2", "bar");
  assert_string_equal(ikeys(s, "foo", buf, sizeof(buf)), "key1,key3");
  assert_string_equal(ikeys(s, "bar", buf, sizeof(buf)), "key2,key3");
  kin_indexer_free(s);
}

/* The single-unchanged-value fast path of updateSingleIndex: the key stays
 * indexed and ByIndex hands out the new object, not the old one. */
static void test_thread_safe_store_UpdateWithSameValueServesNewObject(void **state) {
  kin_indexer *s = NULL;
  assert_int_equal(kin_indexer_new(&s), 0);
  kin_obj *first = mk("ns", "a", "1", NULL); /* kept alive: a stale entry would show */
  assert_int_equal(kin_indexer_add(s, first), 0);
  kin_obj *o = mk("ns", "a", "2", NULL);
  assert_int_equal(kin_indexer_update(s, o), 0);
  kin_obj_unref(o);
  kin_obj **objs;
  size_t n;
  assert_int_equal(kin_indexer_by_index(s, KIN_INDEX_NAMESPACE, "ns", &objs, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(kin_obj_resource_version(objs[0]), "2");
  kin_obj_list_free(objs, n);
  kin_obj_unref(first);
  kin_indexer_free(s);
}

/* The store's maps borrow each key from its object: after updates that
 * free the objects first stored (every reference dropped), keys still read
 * right through items, the namespace index and a label index (under ASan a
 * key left pointing into a freed object is a use after free). */
static void test_thread_safe_store_KeysOutliveReplacedObjects(void **state) {
  (void)state;
  kin_indexer *s = new_split_store();
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 50; i++) {
      char name[16], v[16];
      snprintf(name, sizeof(name), "k%02d", i);
      snprintf(v, sizeof(v), round == 1 ? "x.y" : "x");
      put(s, name, v);
    }
  }
  char **keys;
  size_t n;
  assert_int_equal(kin_indexer_list_keys(s, &keys, &n), 0);
  assert_int_equal(n, 50);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(strlen(keys[i]), 3);
    assert_int_equal(keys[i][0], 'k');
    free(keys[i]);
  }
  free(keys);
  kin_obj **objs;
  assert_int_equal(kin_indexer_by_index(s, "testIndexer", "x", &objs, &n), 0);
  assert_int_equal(n, 50);
  kin_obj_list_free(objs, n);
  assert_int_equal(kin_indexer_by_index(s, "testIndexer", "y", &objs, &n), 0);
  assert_int_equal(n, 0); /* round 2 dropped "y" again */
  kin_obj_list_free(objs, n);
  kin_obj *o = kin_indexer_get(s, "k07");
  assert_non_null(o);
  kin_obj_unref(o);
  kin_indexer_free(s);
}

/* ---- concurrency ---------------------------------------------------------- */

#define NNS 4
#define NOBJ 24
#define NREADERS 3
#define NOPS 4000

static const char *const colors[] = {"red", "green", "blue"};

typedef struct {
  kin_indexer *s;
  atomic_int done;
  atomic_int errors;
  atomic_long reads;
  atomic_int writer_failed;
} conc;

static void check(conc *c, int ok) {
  if (!ok) atomic_fetch_add(&c->errors, 1);
}

static void *writer(void *arg) {
  conc *c = arg;
  unsigned x = 12345;
  char ns[16], name[16], rv[16], l[64];
  for (int i = 0; i < NOPS; i++) {
    x = x * 1103515245u + 12345u;
    snprintf(ns, sizeof(ns), "ns%u", (x >> 8) % NNS);
    snprintf(name, sizeof(name), "o%u", (x >> 12) % NOBJ);
    snprintf(rv, sizeof(rv), "%d", i);
    snprintf(l, sizeof(l), "{\"color\":\"%s\"}", colors[(x >> 20) % 3]);
    int r = 0;
    unsigned op = (x >> 24) % 16;
    if (op < 10) {
      kin_obj *o = mk(ns, name, rv, l);
      r = o ? kin_indexer_update(c->s, o) : -1;
      kin_obj_unref(o);
    } else if (op < 15) {
      kin_obj *o = mk(ns, name, rv, NULL);
      r = o ? kin_indexer_delete(c->s, o) : -1;
      kin_obj_unref(o);
    } else {
      /* Replace with a fresh third of the key space */
      kin_obj *objs[NNS * NOBJ / 3];
      size_t n = 0;
      for (int k = 0; k < NNS * NOBJ / 3; k++) {
        snprintf(ns, sizeof(ns), "ns%d", k % NNS);
        snprintf(name, sizeof(name), "o%d", (k * 7 + i) % NOBJ);
        snprintf(l, sizeof(l), "{\"color\":\"%s\"}", colors[k % 3]);
        if ((objs[n] = mk(ns, name, rv, l))) n++;
      }
      r = kin_indexer_replace(c->s, objs, n);
      for (size_t k = 0; k < n; k++) kin_obj_unref(objs[k]);
    }
    if (r != 0) atomic_store(&c->writer_failed, 1);
  }
  atomic_store(&c->done, 1);
  return NULL;
}

static void *reader(void *arg) {
  conc *c = arg;
  char ns[16];
  long iter = 0;
  do {
    kin_obj **objs;
    char **keys;
    size_t n;
    int k = (int)(iter % NNS);
    snprintf(ns, sizeof(ns), "ns%d", k);
    /* every object ByIndex returns really has the value asked for */
    if (kin_indexer_by_index(c->s, KIN_INDEX_NAMESPACE, ns, &objs, &n) == 0) {
      for (size_t j = 0; j < n; j++) check(c, strcmp(kin_obj_namespace(objs[j]), ns) == 0);
      check(c, n <= NOBJ);
      kin_obj_list_free(objs, n);
    } else {
      check(c, 0);
    }
    const char *col = colors[iter % 3];
    if (kin_indexer_by_index(c->s, "color", col, &objs, &n) == 0) {
      for (size_t j = 0; j < n; j++) {
        const char *v = kin_obj_label(objs[j], "color");
        check(c, v && strcmp(v, col) == 0);
      }
      kin_obj_list_free(objs, n);
    } else {
      check(c, 0);
    }
    /* IndexKeys keys are all in the namespace */
    if (kin_indexer_index_keys(c->s, KIN_INDEX_NAMESPACE, ns, &keys, &n) == 0) {
      size_t l = strlen(ns);
      for (size_t j = 0; j < n; j++)
        check(c, strncmp(keys[j], ns, l) == 0 && keys[j][l] == '/');
      kin_str_list_free(keys, n);
    } else {
      check(c, 0);
    }
    /* Get returns an object under its own key */
    char key[32];
    snprintf(key, sizeof(key), "%s/o%ld", ns, iter % NOBJ);
    kin_obj *o = kin_indexer_get(c->s, key);
    if (o) check(c, strcmp(kin_obj_key(o), key) == 0);
    kin_obj_unref(o);
    /* List never returns more objects than keys exist */
    if (kin_indexer_list(c->s, &objs, &n) == 0) {
      check(c, n <= NNS * NOBJ);
      kin_obj_list_free(objs, n);
    } else {
      check(c, 0);
    }
    if (kin_indexer_list_index_func_values(c->s, "color", &keys, &n) == 0) {
      check(c, n <= 3);
      kin_str_list_free(keys, n);
    } else {
      check(c, 0);
    }
    iter++;
  } while (!atomic_load(&c->done));
  atomic_fetch_add(&c->reads, iter);
  return NULL;
}

/* Once quiet, each index accounts exactly for the stored objects. */
static void check_quiescent(kin_indexer *s) {
  kin_obj **all;
  size_t nall;
  assert_int_equal(kin_indexer_list(s, &all, &nall), 0);
  size_t by_ns = 0, by_color = 0;
  for (int k = 0; k < NNS; k++) {
    char ns[16];
    snprintf(ns, sizeof(ns), "ns%d", k);
    kin_obj **objs;
    size_t n, want = 0;
    assert_int_equal(kin_indexer_by_index(s, KIN_INDEX_NAMESPACE, ns, &objs, &n), 0);
    for (size_t j = 0; j < nall; j++) want += strcmp(kin_obj_namespace(all[j]), ns) == 0;
    assert_int_equal(n, want);
    by_ns += n;
    kin_obj_list_free(objs, n);
  }
  for (int k = 0; k < 3; k++) {
    kin_obj **objs;
    size_t n, want = 0;
    assert_int_equal(kin_indexer_by_index(s, "color", colors[k], &objs, &n), 0);
    for (size_t j = 0; j < nall; j++) want += strcmp(kin_obj_label(all[j], "color"), colors[k]) == 0;
    assert_int_equal(n, want);
    by_color += n;
    kin_obj_list_free(objs, n);
  }
  assert_int_equal(by_ns, nall);
  assert_int_equal(by_color, nall);
  kin_obj_list_free(all, nall);
}

static void test_thread_safe_store_ConcurrentReadersSeeConsistentIndexes(void **state) {
  conc c;
  memset(&c, 0, sizeof(c));
  atomic_init(&c.done, 0);
  atomic_init(&c.errors, 0);
  atomic_init(&c.reads, 0);
  atomic_init(&c.writer_failed, 0);
  assert_int_equal(kin_indexer_new(&c.s), 0);
  assert_int_equal(kin_indexer_add_index(c.s, "color", kin_index_by_label, "color", NULL), 0);
  pthread_t w, r[NREADERS];
  for (int i = 0; i < NREADERS; i++) assert_int_equal(pthread_create(&r[i], NULL, reader, &c), 0);
  assert_int_equal(pthread_create(&w, NULL, writer, &c), 0);
  pthread_join(w, NULL);
  for (int i = 0; i < NREADERS; i++) pthread_join(r[i], NULL);
  assert_int_equal(atomic_load(&c.writer_failed), 0);
  assert_int_equal(atomic_load(&c.errors), 0);
  assert_true(atomic_load(&c.reads) >= NREADERS);
  check_quiescent(c.s);
  kin_indexer_free(c.s);
}

/* AddIndex while readers query: the new index is complete the moment a
 * reader can see it. */
static void *index_reader(void *arg) {
  conc *c = arg;
  long iter = 0;
  do {
    kin_obj **objs;
    size_t n;
    int r = kin_indexer_by_index(c->s, "color", "red", &objs, &n);
    if (r == 0) {
      check(c, n == NNS * NOBJ / 3);
      kin_obj_list_free(objs, n);
    } else {
      check(c, r == KIN_ENOENT);
    }
    iter++;
  } while (!atomic_load(&c->done));
  atomic_fetch_add(&c->reads, iter);
  return NULL;
}

static void test_thread_safe_store_AddIndexWhileReading(void **state) {
  conc c;
  memset(&c, 0, sizeof(c));
  atomic_init(&c.done, 0);
  atomic_init(&c.errors, 0);
  atomic_init(&c.reads, 0);
  assert_int_equal(kin_indexer_new(&c.s), 0);
  for (int k = 0; k < NNS * NOBJ; k++) {
    char ns[16], name[16], l[64];
    snprintf(ns, sizeof(ns), "ns%d", k % NNS);
    snprintf(name, sizeof(name), "o%d", k);
    snprintf(l, sizeof(l), "{\"color\":\"%s\"}", colors[k % 3]);
    kin_obj *o = mk(ns, name, "1", l);
    assert_int_equal(kin_indexer_add(c.s, o), 0);
    kin_obj_unref(o);
  }
  pthread_t r[NREADERS];
  for (int i = 0; i < NREADERS; i++)
    assert_int_equal(pthread_create(&r[i], NULL, index_reader, &c), 0);
  assert_int_equal(kin_indexer_add_index(c.s, "color", kin_index_by_label, "color", NULL), 0);
  for (int i = 0; i < 20; i++) {
    char name[32];
    snprintf(name, sizeof(name), "extra%d", i);
    assert_int_equal(kin_indexer_add_index(c.s, name, kin_index_by_label, "color", NULL), 0);
  }
  atomic_store(&c.done, 1);
  for (int i = 0; i < NREADERS; i++) pthread_join(r[i], NULL);
  assert_int_equal(atomic_load(&c.errors), 0);
  kin_indexer_free(c.s);
}

KIN_SUITE(
    thread_safe_store,
    cmocka_unit_test(test_thread_safe_store_TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex),
    cmocka_unit_test(
        test_thread_safe_store_TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex),
    cmocka_unit_test(
        test_thread_safe_store_TestThreadSafeStoreIndexingFunctionsWithMultipleValues),
    cmocka_unit_test(test_thread_safe_store_UpdateWithSameValueServesNewObject),
    cmocka_unit_test(test_thread_safe_store_KeysOutliveReplacedObjects),
    cmocka_unit_test(test_thread_safe_store_ConcurrentReadersSeeConsistentIndexes),
    cmocka_unit_test(test_thread_safe_store_AddIndexWhileReading))
