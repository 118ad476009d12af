/* test_transform.c -- kin_transform_drop_managed_fields: metadata loses
 * managedFields wherever it sits among its members (first, middle, last,
 * only), whitespace and all, and nothing else changes. */
#include "kin_test.h"

#include <string.h>

#include "informer_factory.h"
#include "kin.h"
#include "kobj.h"

static kin_obj *parse(const char *js) {
  kin_obj *o = NULL;
  assert_int_equal(kin_obj_parse(js, strlen(js), &o), 0);
  return o;
}

static void expect_dropped(const char *in_js, const char *want_js) {
  kin_obj *in = parse(in_js), *out = NULL;
  assert_int_equal(kin_transform_drop_managed_fields(NULL, in, &out), 0);
  assert_non_null(out);
  assert_string_equal(kin_obj_json(out, NULL), want_js);
  /* Metadata survives the cut. */
  assert_string_equal(kin_obj_key(out), kin_obj_key(in));
  assert_string_equal(kin_obj_resource_version(out), kin_obj_resource_version(in));
  kin_obj_unref(in);
  kin_obj_unref(out);
}

#define MF "\"managedFields\":[{\"manager\":\"kubectl\",\"fieldsV1\":{\"f:data\":{}}}]"

static void test_transform_DropManagedFieldsPositions(void **state) {
  (void)state;
  /* first member */
  expect_dropped("{\"metadata\":{" MF ",\"name\":\"a\",\"namespace\":\"ns\"},\"data\":{}}",
                 "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"},\"data\":{}}");
  /* middle */
  expect_dropped("{\"metadata\":{\"name\":\"a\"," MF ",\"resourceVersion\":\"7\"}}",
                 "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"}}");
  /* last */
  expect_dropped("{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"," MF "},\"x\":1}",
                 "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"7\"},\"x\":1}");
  /* pretty-printed, last */
  expect_dropped("{\n  \"metadata\": {\n    \"name\": \"a\",\n    \"managedFields\": [\n      {}\n"
                 "    ]\n  }\n}",
                 "{\n  \"metadata\": {\n    \"name\": \"a\"\n  }\n}");
  /* pretty-printed, first */
  expect_dropped("{ \"metadata\" : { \"managedFields\" : [ ] , \"name\" : \"a\" } }",
                 "{ \"metadata\" : { \"name\" : \"a\" } }");
}

static void test_transform_KeepsObjectsWithoutManagedFields(void **state) {
  (void)state;
  /* No managedFields in metadata (a field of that name elsewhere stays). */
  const char *js = "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"managedFields\":[1]}}";
  kin_obj *in = parse(js), *out = NULL;
  assert_int_equal(kin_transform_drop_managed_fields(NULL, in, &out), 0);
  assert_ptr_equal(out, in); /* a reference, not a copy */
  kin_obj_unref(out);
  kin_obj_unref(in);
  /* A tombstone passes through. */
  kin_obj *last = parse("{\"metadata\":{\"name\":\"b\"," MF "}}");
  kin_obj *tomb = kin_obj_tombstone("b", last);
  assert_int_equal(kin_transform_drop_managed_fields(NULL, tomb, &out), 0);
  assert_ptr_equal(out, tomb);
  kin_obj_unref(out);
  kin_obj_unref(tomb);
  kin_obj_unref(last);
}

static void test_transform_KeepsLabelsAndOwner(void **state) {
  (void)state;
  kin_obj *in = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                      "\"labels\":{\"app\":\"x\"}," MF ",\"ownerReferences\":[{\"apiVersion\":"
                      "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"u1\","
                      "\"controller\":true}]}}");
  kin_obj *out = NULL;
  assert_int_equal(kin_transform_drop_managed_fields(NULL, in, &out), 0);
  assert_null(strstr(kin_obj_json(out, NULL), "managedFields"));
  assert_string_equal(kin_obj_label(out, "app"), "x");
  assert_string_equal(kin_obj_controller_ref(out)->name, "rs");
  assert_string_equal(kin_obj_kind_name(out), "Pod");
  kin_obj_unref(in);
  kin_obj_unref(out);
}

KIN_SUITE(transform, cmocka_unit_test(test_transform_DropManagedFieldsPositions),
          cmocka_unit_test(test_transform_KeepsObjectsWithoutManagedFields),
          cmocka_unit_test(test_transform_KeepsLabelsAndOwner))
