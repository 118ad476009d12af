/* test_pb_list_stream.c -- a protobuf LIST body read as it arrives
 * (kin__pb_list_stream, pb_json.h; the reflector's LIST pages): in pieces
 * of every size the items and ListMeta are kube-apiserver's, as the
 * whole-body reader has them; a long list is not held whole; a body cut
 * anywhere is refused with the whole reader's words; a body not in
 * gogo-protobuf's field order is read whole. */
#include "kin_test.h"
#include "kin_test_pb.h"

#include <jansson.h>
#include <string.h>

#include "kin.h"
#include "pb_json.h"

typedef struct {
  json_t *items;
} rec;

static int on_item(void *ud, const char *json, size_t len, size_t index) {
  rec *r = ud;
  assert_int_equal(index, json_array_size(r->items));
  json_error_t e;
  json_t *v = json_loadb(json, len, 0, &e);
  if (!v) fail_msg("item %zu is not JSON: %s", index, e.text);
  json_array_append_new(r->items, v);
  return 0;
}

/* Reads body (n bytes) in pieces of `piece` bytes; returns the finish's
 * code, the items in *items and the meta's resourceVersion in rv. The
 * most bytes held unread at once go to *most_held. */
static int read_in_pieces(const char *body, size_t n, size_t piece, json_t **items, char *rv,
                          size_t rvcap, char *err, size_t errcap, size_t *most_held) {
  rec r = {json_array()};
  kin__pb_list_stream s;
  kin__pb_list_stream_init(&s, on_item, &r);
  int rc = 0;
  size_t most = 0;
  for (size_t off = 0; !rc && off < n; off += piece) {
    rc = kin__pb_list_stream_feed(&s, body + off, off + piece <= n ? piece : n - off);
    if (s.held.len - s.off > most) most = s.held.len - s.off;
  }
  if (!rc) rc = kin__pb_list_stream_finish(&s);
  if (rc) snprintf(err, errcap, "%s", s.err);
  if (!rc) snprintf(rv, rvcap, "%s", s.meta.resource_version);
  if (most_held) *most_held = most;
  kin__pb_list_stream_free(&s);
  *items = r.items;
  return rc;
}

/* The captured ConfigMapList in pieces of 1 byte to all of it. */
static void test_pb_list_stream_PiecesOfEverySize(void **state) {
  (void)state;
  size_t pn;
  char *pb = kin_test_fixture("proto/configmaplist.pb", &pn), err[256], rv[64];
  rec whole = {json_array()};
  kin__pb_list_meta meta;
  if (kin__pb_list((const uint8_t *)pb, pn, on_item, &whole, &meta, err, sizeof err))
    fail_msg("%s", err);
  assert_true(json_array_size(whole.items) >= 1);
  for (size_t piece = 1; piece <= pn; piece++) {
    json_t *items;
    if (read_in_pieces(pb, pn, piece, &items, rv, sizeof rv, err, sizeof err, NULL))
      fail_msg("pieces of %zu: %s", piece, err);
    if (!json_equal(items, whole.items)) fail_msg("pieces of %zu: other items", piece);
    assert_string_equal(rv, meta.resource_version);
    json_decref(items);
  }
  free(meta.resource_version);
  free(meta.cont);
  json_decref(whole.items);
  free(pb);
}

/* The list message of the captured body, its items repeated: a long list
 * whose bytes are read as they come, never held whole. */
static void test_pb_list_stream_LongListNotHeld(void **state) {
  (void)state;
  size_t pn;
  char *pb = kin_test_fixture("proto/configmaplist.pb", &pn), err[256], rv[64];
  kin__pb_unknown u;
  assert_int_equal(kin__pb_envelope((const uint8_t *)pb, pn, &u, err, sizeof err), 0);
  kin__buf raw = {0}, tm = {0}, body = {0};
  while (raw.len < 300000) kin__buf_add(&raw, (const char *)u.raw, u.raw_len);
  size_t copies = raw.len / u.raw_len;
  kin_test_pb_field(&tm, 1, "v1", 2);
  kin_test_pb_field(&tm, 2, "ConfigMapList", 13);
  kin__buf_add(&body, "k8s", 4);
  kin_test_pb_field(&body, 1, tm.p, tm.len);
  kin_test_pb_field(&body, 2, raw.p, raw.len);
  kin_test_pb_field(&body, 3, "", 0);
  kin_test_pb_field(&body, 4, "", 0);
  json_t *items;
  size_t most;
  if (read_in_pieces(body.p, body.len, 4096, &items, rv, sizeof rv, err, sizeof err, &most))
    fail_msg("%s", err);
  rec whole = {json_array()};
  kin__pb_list_meta meta;
  assert_int_equal(kin__pb_list((const uint8_t *)pb, pn, on_item, &whole, &meta, err, sizeof err), 0);
  assert_int_equal(json_array_size(items), copies * json_array_size(whole.items));
  assert_true(json_equal(json_array_get(items, json_array_size(items) - 1),
                         json_array_get(whole.items, json_array_size(whole.items) - 1)));
  /* read as it came: at most a compaction's worth held, not the body */
  assert_true(body.len > 4 * 65536);
  assert_true(most < 2 * 65536 + 4096);
  free(meta.resource_version);
  free(meta.cont);
  json_decref(whole.items);
  json_decref(items);

  /* a content encoding after the items is refused, as by the whole reader */
  body.len = 0;
  kin__buf_add(&body, "k8s", 4);
  kin_test_pb_field(&body, 1, tm.p, tm.len);
  kin_test_pb_field(&body, 2, u.raw, u.raw_len);
  kin_test_pb_field(&body, 3, "gzip", 4);
  assert_int_equal(read_in_pieces(body.p, body.len, 7, &items, rv, sizeof rv, err, sizeof err, NULL),
                   KIN_EINVAL);
  assert_string_equal(err, "unsupported content encoding \"gzip\"");
  json_decref(items);

  /* raw before TypeMeta: held whole, then read */
  body.len = 0;
  kin__buf_add(&body, "k8s", 4);
  kin_test_pb_field(&body, 2, u.raw, u.raw_len);
  kin_test_pb_field(&body, 1, tm.p, tm.len);
  if (read_in_pieces(body.p, body.len, 3, &items, rv, sizeof rv, err, sizeof err, NULL))
    fail_msg("%s", err);
  assert_int_equal(json_array_size(items), 1);
  json_decref(items);
  kin__buf_free(&raw);
  kin__buf_free(&tm);
  kin__buf_free(&body);
  free(pb);
}

/* Every prefix, in pieces as whole, is judged as the whole-body reader
 * judges it: refused with a reason, or (cut exactly after the envelope's
 * TypeMeta, which protobuf cannot tell from a list without raw) read as
 * the same empty list. */
static void test_pb_list_stream_CutBodiesRefused(void **state) {
  (void)state;
  size_t pn;
  char *pb = kin_test_fixture("proto/configmaplist.pb", &pn), err[256], rv[64];
  for (size_t n = 0; n < pn; n++) {
    rec whole = {json_array()};
    kin__pb_list_meta meta;
    char werr[256];
    int wrc = kin__pb_list((const uint8_t *)pb, n, on_item, &whole, &meta, werr, sizeof werr);
    free(meta.resource_version);
    free(meta.cont);
    for (size_t piece = 1; piece <= 7; piece += 6) {
      json_t *items;
      err[0] = 0;
      int rc = read_in_pieces(pb, n, piece, &items, rv, sizeof rv, err, sizeof err, NULL);
      if (rc != wrc) fail_msg("%zu bytes in pieces of %zu: %d, whole %d (%s)", n, piece, rc, wrc, werr);
      if (rc) {
        assert_int_equal(rc, KIN_EINVAL);
        assert_true(err[0] != 0);
      } else {
        assert_true(json_equal(items, whole.items));
      }
      json_decref(items);
    }
    json_decref(whole.items);
  }
  free(pb);
}

KIN_SUITE(pb_list_stream, cmocka_unit_test(test_pb_list_stream_PiecesOfEverySize),
          cmocka_unit_test(test_pb_list_stream_LongListNotHeld),
          cmocka_unit_test(test_pb_list_stream_CutBodiesRefused))
