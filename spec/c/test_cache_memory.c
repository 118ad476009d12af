/* test_cache_memory.c -- what keeps a cached object near its JSON bytes:
 * the arena of the DeltaFIFO's queued keys (util/arena.c), the interned
 * strings (json/intern.c) and kin_obj read through them, kin__hmap_reserve. */
#include "kin_test.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "hmap.h"
#include "intern.h"
#include "kobj.h"
#include "kobj_int.h"

/* 1 when the page holding p is mapped (mincore fails with ENOMEM on an
 * unmapped range). */
static int mapped(const void *p) {
  long pg = sysconf(_SC_PAGESIZE);
  void *page = (void *)((uintptr_t)p & ~(uintptr_t)(pg - 1));
  unsigned char v;
  return mincore(page, (size_t)pg, &v) == 0 || errno != ENOMEM;
}

/* Blocks are distinct and aligned; a chunk goes back to the system once
 * its last block is freed and the arena moved on; an idle current chunk is
 * carved again from its start. */
static void test_cache_memory_ArenaChunksGoBack(void **state) {
  (void)state;
  kin__arena a;
  kin__arena_init(&a);
  enum { N = 20000 };
  static void *b[N];
  for (int i = 0; i < N; i++) {
    b[i] = kin__arena_alloc(&a, 40);
    assert_non_null(b[i]);
    assert_int_equal((uintptr_t)b[i] % 16, 0);
    memset(b[i], i & 0xff, 40);
  }
  for (int i = 1; i < N; i++) assert_ptr_not_equal(b[i], b[i - 1]);
  assert_int_equal(((unsigned char *)b[7])[39], 7);
  void *first = b[0];
  assert_true(mapped(first));
  for (int i = 0; i < N; i++) kin__arena_block_free(b[i]);
  assert_false(mapped(first)); /* its chunk is no longer the current one */
  void *p = kin__arena_alloc(&a, 40);
  kin__arena_block_free(p);
  void *q = kin__arena_alloc(&a, 40);
  assert_ptr_equal(p, q); /* nothing live in it: carved from the start */
  kin__arena_block_free(q);
  void *big = kin__arena_alloc(&a, (size_t)1 << 20); /* a block of its own */
  assert_non_null(big);
  memset(big, 1, (size_t)1 << 20);
  kin__arena_block_free(big);
  assert_false(mapped(big));
  kin__arena_release(&a);
}

/* A string is interned on its second sighting, to one id whose string is
 * the same bytes; an empty or an over-long one never is. */
static void test_cache_memory_InternSecondSighting(void **state) {
  (void)state;
  const char *s = "cache-memory.example/first";
  uint32_t a = kin__intern(s, strlen(s));
  uint32_t b = kin__intern(s, strlen(s));
  if (!a) assert_true(b & KIN__INTERN_BIT);
  uint32_t c = kin__intern(s, strlen(s));
  assert_int_equal(b, c);
  assert_string_equal(kin__intern_str(c), s);
  /* a prefix is another string */
  kin__intern(s, 5);
  uint32_t d = kin__intern(s, 5);
  assert_true(d & KIN__INTERN_BIT);
  assert_int_not_equal(d, c);
  assert_string_equal(kin__intern_str(d), "cache");
  assert_int_equal(kin__intern("", 0), 0);
  char longs[KIN__INTERN_LEN_MAX + 2];
  memset(longs, 'x', sizeof(longs) - 1);
  longs[sizeof(longs) - 1] = 0;
  kin__intern(longs, sizeof(longs) - 1);
  assert_int_equal(kin__intern(longs, sizeof(longs) - 1), 0);
  assert_true(kin__intern_pool_bytes() > 0);
}

#define OBJ                                                                    \
  "{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"metadata\":{"        \
  "\"name\":\"rs-%d\",\"namespace\":\"ns-mem\",\"uid\":\"u-%d\","            \
  "\"labels\":{\"app\":\"web\",\"q\\\"k\":\"v\\\"e\",\"e\":\"\"},"            \
  "\"managedFields\":[{\"manager\":\"m\"}],"                                   \
  "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"," \
  "\"name\":\"web\",\"uid\":\"d-1\",\"controller\":true}]},\"spec\":{}}"

/* Objects read the same whether their strings were copied (first parse)
 * or interned (later ones), also after managedFields are cut. */
static void test_cache_memory_ObjectsReadTheSame(void **state) {
  (void)state;
  for (int i = 0; i < 4; i++) {
    char js[1024];
    int n = snprintf(js, sizeof(js), OBJ, i, i);
    kin_obj *o = NULL, *cut = NULL;
    assert_int_equal(kin_obj_parse(js, (size_t)n, &o), 0);
    kin_span c = kin__obj_managed_fields_cut(o);
    assert_true(c.len > 0);
    assert_int_equal(kin__obj_cut(o, c, &cut), 0);
    kin_obj *objs[2] = {o, cut};
    for (int j = 0; j < 2; j++) {
      kin_obj *x = objs[j];
      char key[32];
      snprintf(key, sizeof(key), "ns-mem/rs-%d", i);
      assert_string_equal(kin_obj_key(x), key);
      assert_string_equal(kin_obj_name(x), key + 7);
      assert_string_equal(kin_obj_namespace(x), "ns-mem");
      assert_string_equal(kin_obj_api_version(x), "apps/v1");
      assert_string_equal(kin_obj_kind_name(x), "ReplicaSet");
      assert_int_equal(kin_obj_label_count(x), 3);
      assert_string_equal(kin_obj_label(x, "app"), "web");
      assert_string_equal(kin_obj_label(x, "q\"k"), "v\"e");
      assert_string_equal(kin_obj_label(x, "e"), "");
      const kin_owner_ref *r = kin_obj_controller_ref(x);
      assert_non_null(r);
      assert_string_equal(r->api_version, "apps/v1");
      assert_string_equal(r->kind, "Deployment");
      assert_string_equal(r->name, "web");
      assert_string_equal(r->uid, "d-1");
    }
    kin_obj_unref(o); /* cut's strings do not live in o's block */
    assert_string_equal(kin_obj_controller_ref(cut)->kind, "Deployment");
    assert_string_equal(kin_obj_label(cut, "app"), "web");
    kin_obj_unref(cut);
  }
}

/* A reserved map takes n entries without growing. */
static void test_cache_memory_HmapReserve(void **state) {
  (void)state;
  kin__hmap m;
  kin__hmap_init(&m);
  assert_int_equal(kin__hmap_reserve(&m, 10000), 0);
  size_t cap = m.cap;
  assert_true(cap * 3 >= 10000 * 4);
  char k[16];
  for (int i = 0; i < 10000; i++) {
    snprintf(k, sizeof(k), "k%d", i);
    assert_int_equal(kin__hmap_put(&m, k, NULL, NULL), 1);
  }
  assert_int_equal(m.cap, cap);
  assert_int_equal(kin__hmap_reserve(&m, 100), 0); /* never shrinks */
  assert_int_equal(m.cap, cap);
  kin__hmap_free(&m);
}

KIN_SUITE(cache_memory, cmocka_unit_test(test_cache_memory_ArenaChunksGoBack),
          cmocka_unit_test(test_cache_memory_InternSecondSighting),
          cmocka_unit_test(test_cache_memory_ObjectsReadTheSame),
          cmocka_unit_test(test_cache_memory_HmapReserve))
