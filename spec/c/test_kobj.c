/* test_kobj.c -- the object model: extraction of key and metadata, escapes,
 * tombstones, reference counting, and rejection of malformed input. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "kobj_int.h"

static kin_obj *parse_ok(const char *s) {
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(s, strlen(s), &o), 0);
  assert_non_null(o);
  return o;
}

static void test_kobj_pod_fixture(void **state) {
  size_t n;
  char *js = kin_test_fixture("pod.json", &n);
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(js, n, &o), 0);
  assert_string_equal(kin_obj_key(o), "shop/web-7d4b9c8f6d-x2k9p");
  assert_string_equal(kin_obj_namespace(o), "shop");
  assert_string_equal(kin_obj_name(o), "web-7d4b9c8f6d-x2k9p");
  assert_string_equal(kin_obj_uid(o), "5f0c3a52-1b7e-4f57-9c3e-2b1d8a6e4c10");
  assert_string_equal(kin_obj_resource_version(o), "184467");
  assert_string_equal(kin_obj_api_version(o), "v1");
  assert_string_equal(kin_obj_kind_name(o), "Pod");
  assert_int_equal(kin_obj_generation(o), 1);
  assert_false(kin_obj_being_deleted(o));
  assert_int_equal(kin_obj_label_count(o), 4);
  assert_string_equal(kin_obj_label(o, "app"), "web");
  assert_string_equal(kin_obj_label(o, "app.kubernetes.io/part-of"), "shop");
  assert_null(kin_obj_label(o, "nope"));
  const char *k, *v;
  assert_int_equal(kin_obj_label_at(o, 1, &k, &v), 0);
  assert_string_equal(k, "pod-template-hash");
  assert_string_equal(v, "7d4b9c8f6d");
  assert_int_equal(kin_obj_label_at(o, 4, &k, &v), KIN_ENOENT);
  /* the first ownerReference is not the controller: the second one is */
  const kin_owner_ref *c = kin_obj_controller_ref(o);
  assert_non_null(c);
  assert_string_equal(c->kind, "ReplicaSet");
  assert_string_equal(c->api_version, "apps/v1");
  assert_string_equal(c->name, "web-7d4b9c8f6d");
  assert_string_equal(c->uid, "a3c1e2f4-9b8d-4e6f-8a7b-1c2d3e4f5a6b");
  size_t jl;
  const char *j = kin_obj_json(o, &jl);
  assert_int_equal(jl, n);
  assert_memory_equal(j, js, n);
  assert_int_equal(j[jl], 0);
  /* the copy is independent of the caller's buffer */
  memset(js, 'x', n);
  assert_string_equal(kin_obj_name(o), "web-7d4b9c8f6d-x2k9p");
  kin_span a = kin_obj_annotations_span(o);
  assert_true(a.len > 0);
  assert_int_equal(j[a.off], '{');
  assert_int_equal(j[a.off + a.len - 1], '}');
  kin_span st = kin_obj_status_span(o);
  assert_memory_equal(j + st.off, "{\"phase\":\"Running\"", 18);
  kin_obj_unref(o);
  free(js);
}

static void test_kobj_cluster_scoped_key(void **state) {
  kin_obj *o = parse_ok("{\"kind\":\"Node\",\"metadata\":{\"name\":\"worker-1\",\"resourceVersion\":\"7\"}}");
  assert_string_equal(kin_obj_key(o), "worker-1");
  assert_string_equal(kin_obj_namespace(o), "");
  assert_string_equal(kin_obj_uid(o), "");
  assert_int_equal(kin_obj_generation(o), 0);
  assert_null(kin_obj_controller_ref(o));
  assert_int_equal(kin_obj_label_count(o), 0);
  assert_int_equal(kin_obj_spec_span(o).len, 0);
  kin_obj_unref(o);
}

static void test_kobj_escapes_unescaped(void **state) {
  /* "\/" and \u escapes (incl. a surrogate pair) decode in extracted fields */
  kin_obj *o = parse_ok("{\"metadata\":{\"name\":\"a\\u0062c\",\"namespace\":\"n\\/s\","
                        "\"labels\":{\"k\\u00e9\":\"\\ud83d\\ude00\",\"x\":\"\\\"q\\\"\"}}}");
  assert_string_equal(kin_obj_name(o), "abc");
  assert_string_equal(kin_obj_namespace(o), "n/s");
  assert_string_equal(kin_obj_key(o), "n/s/abc");
  assert_string_equal(kin_obj_label(o, "k\xc3\xa9"), "\xf0\x9f\x98\x80");
  assert_string_equal(kin_obj_label(o, "x"), "\"q\"");
  kin_obj_unref(o);
}

static void test_kobj_fields_ignore_nested_namesakes(void **state) {
  /* "name"/"labels" inside spec or inside labels must not be picked up */
  kin_obj *o = parse_ok("{\"spec\":{\"metadata\":{\"name\":\"wrong\"},\"name\":\"wrong\"},"
                        "\"metadata\":{\"annotations\":{\"name\":\"wrong\"},\"name\":\"right\","
                        "\"labels\":{\"a\":\"1\",\"bad\":7,\"b\":\"2\"},\"generation\":42,"
                        "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"namespace\":null}}");
  assert_string_equal(kin_obj_name(o), "right");
  assert_string_equal(kin_obj_key(o), "right");
  assert_int_equal(kin_obj_generation(o), 42);
  assert_true(kin_obj_being_deleted(o));
  /* non-string label values are skipped, not mis-read */
  assert_int_equal(kin_obj_label_count(o), 2);
  assert_string_equal(kin_obj_label(o, "b"), "2");
  kin_obj_unref(o);
}

static void test_kobj_controller_false_ignored(void **state) {
  kin_obj *o = parse_ok("{\"metadata\":{\"name\":\"p\",\"ownerReferences\":[{\"kind\":\"A\","
                        "\"name\":\"a\",\"uid\":\"1\",\"controller\":false}]}}");
  assert_null(kin_obj_controller_ref(o));
  kin_obj_unref(o);
}

static void test_kobj_malformed_rejected(void **state) {
  static const char *bad[] = {
      "",
      "   ",
      "[]",
      "\"str\"",
      "42",
      "null",
      "{",
      "{\"metadata\":{\"name\":\"a\"}",
      "{\"metadata\":{\"name\":\"a\"}}}",
      "{\"metadata\":{\"name\":\"a\"}} x",
      "{\"metadata\" {\"name\":\"a\"}}",
      "{\"metadata\":{\"name\":\"a\",}}",
      "{\"metadata\":{\"name\":\"a\"},,\"x\":1}",
      "{\"metadata\":{\"name\":\"a\"},\"x\":[1,]}",
      "{\"metadata\":{\"name\":\"a\"},\"x\":tru}",
      "{\"metadata\":{\"name\":\"a\"},\"x\":01}",
      "{\"metadata\":{\"name\":\"a\"},\"x\":\"\\q\"}",
      "{\"metadata\":{\"name\":\"a\"},\"x\":\"\\u12G4\"}",
      "{\"metadata\":{\"name\":\"a\"},\"x\":\"tab\there\"}",
      "{metadata:{\"name\":\"a\"}}",
      "{\"metadata\":[1]}",
      "{\"metadata\":\"x\"}",
      "{\"metadata\":{}}",                 /* no name */
      "{\"metadata\":{\"name\":\"\"}}",     /* empty name */
      "{\"metadata\":{\"name\":7}}",        /* name not a string */
      "<html><body>502 Bad Gateway</body></html>",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    kin_obj *o = (kin_obj *)0x1;
    int rc = kin_obj_parse(bad[i], strlen(bad[i]), &o);
    if (rc != KIN_EINVAL) fail_msg("accepted malformed input #%zu: %s", i, bad[i]);
    assert_null(o);
  }
  /* NUL byte inside the buffer */
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse("{\"metadata\":{\"name\":\"a\"}}\0{}", 28, &o), KIN_EINVAL);
  assert_int_equal(kin_obj_parse(NULL, 3, &o), KIN_EINVAL);
}

static void test_kobj_truncations_never_crash(void **state) {
  /* every prefix of a real object is rejected cleanly (ASan checks reads) */
  size_t n;
  char *js = kin_test_fixture("pod.json", &n);
  for (size_t l = 0; l < n; l++) {
    char *cut = malloc(l ? l : 1);
    memcpy(cut, js, l);
    kin_obj *o = NULL;
    assert_int_equal(kin_obj_parse(cut, l, &o), KIN_EINVAL);
    free(cut);
  }
  free(js);
}

static void test_kobj_deep_nesting(void **state) {
  /* nesting beyond the limit is an error, not a stack overflow */
  size_t depth = 200000;
  char *s = malloc(depth * 2 + 64);
  size_t p = (size_t)sprintf(s, "{\"metadata\":{\"name\":\"a\"},\"x\":");
  for (size_t i = 0; i < depth; i++) s[p++] = '[';
  for (size_t i = 0; i < depth; i++) s[p++] = ']';
  s[p++] = '}';
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(s, p, &o), KIN_EINVAL);
  free(s);
  /* moderate nesting is fine */
  o = parse_ok("{\"metadata\":{\"name\":\"a\"},\"x\":[[[[[[[[{\"y\":[{}]}]]]]]]]]}");
  kin_obj_unref(o);
}

static void test_kobj_large_object_token_growth(void **state) {
  /* a dense object needs more tokens than the first estimate */
  size_t cnt = 100000;
  char *s = malloc(cnt * 2 + 64);
  size_t p = (size_t)sprintf(s, "{\"metadata\":{\"name\":\"big\"},\"x\":[");
  for (size_t i = 0; i < cnt; i++) { s[p++] = '1'; s[p++] = ','; }
  s[p - 1] = ']';
  s[p++] = '}';
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(s, p, &o), 0);
  assert_string_equal(kin_obj_key(o), "big");
  kin_obj_unref(o);
  free(s);
}

static void test_kobj_parse_any_allows_no_name(void **state) {
  const char *status = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"code\":410}";
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(status, strlen(status), &o), KIN_EINVAL);
  assert_int_equal(kin_obj_parse_any(status, strlen(status), &o), 0);
  assert_string_equal(kin_obj_kind_name(o), "Status");
  assert_string_equal(kin_obj_key(o), "");
  kin_obj_unref(o);
}

static void test_kobj_tombstone(void **state) {
  kin_obj *last = parse_ok("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"9\","
                           "\"labels\":{\"app\":\"x\"}}}");
  kin_obj *t = kin_obj_tombstone("ns/a", last);
  kin_obj_unref(last); /* the tombstone keeps its own reference */
  assert_true(kin_obj_is_tombstone(t));
  assert_false(kin_obj_is_tombstone(kin_obj_last_state(t)));
  assert_string_equal(kin_obj_key(t), "ns/a");
  assert_string_equal(kin_obj_resource_version(t), "9");
  assert_string_equal(kin_obj_label(t, "app"), "x");
  assert_non_null(kin_obj_json(t, NULL));
  kin_obj_unref(t);

  kin_obj *bare = kin_obj_tombstone("gone", NULL);
  assert_string_equal(kin_obj_key(bare), "gone");
  assert_null(kin_obj_last_state(bare));
  assert_string_equal(kin_obj_name(bare), "");
  assert_null(kin_obj_json(bare, NULL));
  assert_int_equal(kin_obj_label_count(bare), 0);
  kin_obj_unref(bare);
}

static void test_kobj_refcount(void **state) {
  kin_obj *o = parse_ok("{\"metadata\":{\"name\":\"a\"}}");
  assert_ptr_equal(kin_obj_ref(o), o);
  kin_obj_unref(o);
  assert_string_equal(kin_obj_name(o), "a"); /* still alive: one ref left */
  kin_obj_unref(o);
  kin_obj_unref(NULL);
}

/* Fails unless a and b read the same through every accessor. */
static void same_obj(const kin_obj *a, const kin_obj *b) {
  size_t la, lb;
  const char *ja = kin_obj_json(a, &la), *jb = kin_obj_json(b, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(ja, jb, la);
  assert_string_equal(kin_obj_key(a), kin_obj_key(b));
  assert_string_equal(kin_obj_namespace(a), kin_obj_namespace(b));
  assert_string_equal(kin_obj_name(a), kin_obj_name(b));
  assert_string_equal(kin_obj_uid(a), kin_obj_uid(b));
  assert_string_equal(kin_obj_resource_version(a), kin_obj_resource_version(b));
  assert_string_equal(kin_obj_api_version(a), kin_obj_api_version(b));
  assert_string_equal(kin_obj_kind_name(a), kin_obj_kind_name(b));
  assert_int_equal(kin_obj_generation(a), kin_obj_generation(b));
  assert_int_equal(kin_obj_label_count(a), kin_obj_label_count(b));
  for (size_t i = 0; i < kin_obj_label_count(a); i++) {
    const char *ka, *va, *kb, *vb;
    assert_int_equal(kin_obj_label_at(a, i, &ka, &va), 0);
    assert_int_equal(kin_obj_label_at(b, i, &kb, &vb), 0);
    assert_string_equal(ka, kb);
    assert_string_equal(va, vb);
  }
  const kin_owner_ref *ca = kin_obj_controller_ref(a), *cb = kin_obj_controller_ref(b);
  assert_int_equal(ca != NULL, cb != NULL);
  if (ca) {
    assert_string_equal(ca->uid, cb->uid);
    assert_string_equal(ca->name, cb->name);
  }
  kin_span (*spans[])(const kin_obj *) = {kin_obj_labels_span, kin_obj_annotations_span,
                                          kin_obj_finalizers_span, kin_obj_spec_span,
                                          kin_obj_status_span};
  for (size_t i = 0; i < 5; i++) {
    kin_span sa = spans[i](a), sb = spans[i](b);
    assert_int_equal(sa.off, sb.off);
    assert_int_equal(sa.len, sb.len);
  }
  kin_span ma = kin__obj_managed_fields_cut(a), mb = kin__obj_managed_fields_cut(b);
  assert_int_equal(ma.off, mb.off);
  assert_int_equal(ma.len, mb.len);
}

/* An item of a list parsed with the list's kind (kin__obj_parse_item) is
 * the object the reflector built before by copying the item behind
 * "kind":K,"apiVersion":A: the same JSON text, fields and spans; its
 * managedFields cut still equals a fresh parse of the cut text. */
static void test_kobj_list_item_gets_the_lists_kind(void **state) {
  (void)state;
  static const char *const items[] = {
      "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\",\"labels\":{\"x\":\"1\"},"
      "\"managedFields\":[{\"manager\":\"m\"}],\"uid\":\"u\"},\"spec\":{\"r\":1},"
      "\"status\":{}}",
      "{\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"b\",\"ownerReferences\":[{"
      "\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"o\",\"uid\":\"ou\",\"controller\":true}],"
      "\"managedFields\":[]}}",
      "{ \"metadata\" : {\"name\":\"c\"} }",
  };
  kin__list_kind lk = {.kind = "ConfigMap", .kind_len = 9, .av = "v1", .av_len = 2};
  for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
    const char *it = items[i];
    char old[1024];
    int k = snprintf(old, sizeof(old), "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",%s", it + 1);
    kin_obj *a = NULL, *b = NULL;
    assert_int_equal(kin__obj_parse_item(it, strlen(it), &lk, &a), 0);
    assert_int_equal(kin_obj_parse(old, (size_t)k, &b), 0);
    same_obj(a, b);
    kin_span c = kin__obj_managed_fields_cut(a);
    if (c.len) {
      kin_obj *cut = NULL, *fresh = NULL;
      assert_int_equal(kin__obj_cut(a, c, &cut), 0);
      size_t n;
      const char *js = kin_obj_json(cut, &n);
      assert_int_equal(kin_obj_parse(js, n, &fresh), 0);
      same_obj(cut, fresh);
      assert_null(strstr(js, "managedFields"));
      kin_obj_unref(cut);
      kin_obj_unref(fresh);
    }
    kin_obj_unref(a);
    kin_obj_unref(b);
  }
  /* an item with a kind of its own keeps its text; no list kind: as parsed */
  const char *own = "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\"}}";
  kin_obj *a = NULL, *b = NULL;
  assert_int_equal(kin__obj_parse_item(own, strlen(own), &lk, &a), 0);
  assert_int_equal(kin_obj_parse(own, strlen(own), &b), 0);
  same_obj(a, b);
  kin_obj_unref(a);
  assert_int_equal(kin__obj_parse_item(own, strlen(own), NULL, &a), 0);
  same_obj(a, b);
  kin_obj_unref(a);
  kin_obj_unref(b);
  /* an item without members: no comma; without a name: refused */
  assert_int_equal(kin__obj_parse_item("{}", 2, &lk, &a), KIN_EINVAL);
  assert_null(a);
}

KIN_SUITE(kobj,
          cmocka_unit_test(test_kobj_pod_fixture),
          cmocka_unit_test(test_kobj_cluster_scoped_key),
          cmocka_unit_test(test_kobj_escapes_unescaped),
          cmocka_unit_test(test_kobj_fields_ignore_nested_namesakes),
          cmocka_unit_test(test_kobj_controller_false_ignored),
          cmocka_unit_test(test_kobj_malformed_rejected),
          cmocka_unit_test(test_kobj_truncations_never_crash),
          cmocka_unit_test(test_kobj_deep_nesting),
          cmocka_unit_test(test_kobj_large_object_token_growth),
          cmocka_unit_test(test_kobj_parse_any_allows_no_name),
          cmocka_unit_test(test_kobj_tombstone),
          cmocka_unit_test(test_kobj_refcount),
          cmocka_unit_test(test_kobj_list_item_gets_the_lists_kind))
