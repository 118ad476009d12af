/* test_reflector_encoding.c -- the encoding a reflector asks for
 * (kin_reflector_config.content_type, reflector.h): protobuf for a
 * built-in type unless told JSON (the option, or KIN_CONTENT_TYPE=json for
 * the process), JSON for a group the protobuf schema does not have, and
 * the same cache either way, through LIST, WATCH and WatchList, against
 * kinformer.sim, which answers what the Accept header asks for as
 * kube-apiserver does. */
#include "kin_test.h"

#include <stdlib.h>
#include <string.h>

#include "reflector_fx.h"

static int env_says_json(void) {
  const char *e = getenv("KIN_CONTENT_TYPE");
  return e && !strcmp(e, "json");
}

/* The accept header of the i-th request the sim saw is not recorded; the
 * encoding used is (content_type_used). */
static void sync_with(int content_type, int watch_list, int want) {
  rfx fx;
  kin_sim_config scfg;
  kin_sim_config_init(&scfg);
  rfx_init(&fx, &scfg);
  rfx_create(&fx, "a");
  rfx_update(&fx, "a", "x-\xc3\xa9");
  rfx_create(&fx, "b");
  kin_reflector_config c;
  memset(&c, 0, sizeof(c));
  c.content_type = content_type;
  c.watch_list = watch_list;
  rfx_start(&fx, &c);
  KIN_EVENTUALLY(rfx_stats(&fx).synced, 5000);
  rfx_create(&fx, "c");
  rfx_update(&fx, "b", "2");
  rfx_delete(&fx, "a");
  rfx_expect_converged(&fx, 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.content_type_used, want);
  assert_int_equal(st.decode_errors, 0);
  assert_int_equal(st.watch_list_used, watch_list);
  rfx_free(&fx);
}

static void test_reflector_encoding_ProtobufForBuiltins(void **state) {
  (void)state;
  int want = env_says_json() ? KIN_CONTENT_JSON : KIN_CONTENT_PROTOBUF;
  sync_with(KIN_CONTENT_AUTO, 0, want);
  sync_with(KIN_CONTENT_AUTO, 1, want);
  sync_with(KIN_CONTENT_PROTOBUF, 1, KIN_CONTENT_PROTOBUF);
}

static void test_reflector_encoding_JSONWhenTold(void **state) {
  (void)state;
  sync_with(KIN_CONTENT_JSON, 0, KIN_CONTENT_JSON);
  sync_with(KIN_CONTENT_JSON, 1, KIN_CONTENT_JSON);
}

/* A paged protobuf LIST: every page read, the continue tokens followed. */
static void test_reflector_encoding_ProtobufPages(void **state) {
  (void)state;
  rfx fx;
  kin_sim_config scfg;
  kin_sim_config_init(&scfg);
  rfx_init(&fx, &scfg);
  char name[16];
  for (int i = 0; i < 25; i++) {
    snprintf(name, sizeof name, "p%02d", i);
    rfx_create(&fx, name);
  }
  kin_reflector_config c;
  memset(&c, 0, sizeof(c));
  c.content_type = KIN_CONTENT_PROTOBUF;
  c.page_size = 10;
  rfx_start(&fx, &c);
  KIN_EVENTUALLY(rfx_stats(&fx).synced, 5000);
  rfx_expect_converged(&fx, 5000);
  kin_reflector_stats st = rfx_stats(&fx);
  assert_int_equal(st.content_type_used, KIN_CONTENT_PROTOBUF);
  assert_int_equal(st.pages, 3);
  rfx_free(&fx);
}

KIN_SUITE(reflector_encoding, cmocka_unit_test(test_reflector_encoding_ProtobufForBuiltins),
          cmocka_unit_test(test_reflector_encoding_JSONWhenTold),
          cmocka_unit_test(test_reflector_encoding_ProtobufPages))
