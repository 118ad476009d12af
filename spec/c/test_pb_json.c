/* test_pb_json.c -- the core's protobuf reader (csrc/core/proto/pb_json.h)
 * against kube-apiserver v1.36.3's own answers (spec/c/fixtures/proto,
 * spec/e2e/capture-proto.sh): each captured object's bytes read as the
 * JSON the server gives for it, a list item by item with its ListMeta, a
 * watch frame as a JSON watch line, and every truncation of every body
 * refused with a message rather than read wrong. */
#include "kin_test.h"
#include "kin_test_pb.h"

#include <jansson.h>
#include <string.h>

#include "kin.h"
#include "kobj.h"
#include "pb_json.h"

static const char *const fixtures[] = {
    "configmap", "configmaplist", "crd",  "daemonset",      "deployment", "event",
    "event_core", "lease",        "namespace", "node",      "pod",        "scale",
    "secret",    "service",       "serviceaccount", "statefulset", "status_404", NULL};

static json_t *load(const char *s, size_t n, const char *what) {
  json_error_t e;
  json_t *v = json_loadb(s, n, 0, &e);
  if (!v) fail_msg("%s: not JSON: %s (%.*s)", what, e.text, (int)(n > 200 ? 200 : n), s);
  return v;
}

static void assert_json_equal(json_t *got, json_t *want, const char *what) {
  if (json_equal(got, want)) return;
  char *a = json_dumps(got, JSON_SORT_KEYS), *b = json_dumps(want, JSON_SORT_KEYS);
  print_error("%s:\n got %s\nwant %s\n", what, a, b);
  free(a);
  free(b);
  fail();
}

/* kube-apiserver's JSON of fixture name, as the protobuf carries it. */
static json_t *want_of(const char *name) {
  char path[64];
  size_t jn;
  snprintf(path, sizeof(path), "proto/%s.json", name);
  char *js = kin_test_fixture(path, &jn);
  json_t *want = load(js, jn, name);
  free(js);
  if (!strcmp(name, "statefulset")) {
    /* defaulting, not the codec, gives these (no protobuf field) */
    json_t *t = json_array_get(json_object_get(json_object_get(want, "spec"), "volumeClaimTemplates"), 0);
    json_object_del(t, "apiVersion");
    json_object_del(t, "kind");
  }
  return want;
}

static void test_pb_json_ObjectsReadAsTheServersJSON(void **state) {
  (void)state;
  for (int i = 0; fixtures[i]; i++) {
    char path[64], err[256];
    size_t pn;
    snprintf(path, sizeof(path), "proto/%s.pb", fixtures[i]);
    char *pb = kin_test_fixture(path, &pn);
    kin__buf out = {0};
    if (kin__pb_object_json((const uint8_t *)pb, pn, &out, err, sizeof err))
      fail_msg("%s: %s", fixtures[i], err);
    json_t *got = load(out.p, out.len, fixtures[i]), *want = want_of(fixtures[i]);
    assert_json_equal(got, want, fixtures[i]);
    /* kind and apiVersion first, as the server writes them */
    assert_true(!strncmp(out.p, "{\"kind\":", 8));
    if (strcmp(fixtures[i], "configmaplist") && strcmp(fixtures[i], "status_404")) {
      kin_obj *o = NULL;
      assert_int_equal(kin_obj_parse(out.p, out.len, &o), 0);
      assert_string_equal(kin_obj_name(o), json_string_value(json_object_get(json_object_get(want, "metadata"), "name")));
      kin_obj_unref(o);
    }
    json_decref(got);
    json_decref(want);
    kin__buf_free(&out);
    free(pb);
  }
}

typedef struct {
  json_t *items;
} list_rec;

static int on_item(void *ud, const char *json, size_t len, size_t index) {
  list_rec *r = ud;
  assert_int_equal(index, json_array_size(r->items));
  json_array_append_new(r->items, load(json, len, "item"));
  return 0;
}

static void test_pb_json_ListItemByItem(void **state) {
  (void)state;
  size_t pn;
  char *pb = kin_test_fixture("proto/configmaplist.pb", &pn), err[256];
  list_rec r = {json_array()};
  kin__pb_list_meta meta;
  if (kin__pb_list((const uint8_t *)pb, pn, on_item, &r, &meta, err, sizeof err)) fail_msg("%s", err);
  json_t *want = want_of("configmaplist");
  assert_json_equal(r.items, json_object_get(want, "items"), "items");
  assert_string_equal(meta.kind, "ConfigMapList");
  assert_string_equal(meta.api_version, "v1");
  json_t *md = json_object_get(want, "metadata");
  assert_string_equal(meta.resource_version, json_string_value(json_object_get(md, "resourceVersion")));
  const char *cont = json_string_value(json_object_get(md, "continue"));
  assert_string_equal(meta.cont, cont ? cont : "");
  free(meta.resource_version);
  free(meta.cont);
  json_decref(r.items);
  json_decref(want);
  /* an object is no list */
  free(pb);
  pb = kin_test_fixture("proto/configmap.pb", &pn);
  r.items = json_array();
  assert_int_equal(kin__pb_list((const uint8_t *)pb, pn, on_item, &r, &meta, err, sizeof err), KIN_EINVAL);
  assert_non_null(strstr(err, "is not a list"));
  free(meta.resource_version);
  free(meta.cont);
  json_decref(r.items);
  free(pb);
}

/* A frame as kube-apiserver writes it: WatchEvent{type, object{raw}}. */
static void frame_of(kin__buf *f, const char *type, const char *obj, size_t n) {
  kin__buf raw = {0};
  unsigned char t = 0x0a;
  kin__buf_add(&raw, (const char *)&t, 1);
  unsigned char v[10];
  size_t k = 0;
  for (size_t x = n; ; x >>= 7) {
    v[k++] = (unsigned char)((x & 0x7f) | (x >= 0x80 ? 0x80 : 0));
    if (x < 0x80) break;
  }
  kin__buf_add(&raw, (const char *)v, k);
  kin__buf_add(&raw, obj, n);
  kin__buf_add(f, (const char *)&t, 1);
  unsigned char tl = (unsigned char)strlen(type);
  kin__buf_add(f, (const char *)&tl, 1);
  kin__buf_add(f, type, tl);
  t = 0x12;
  kin__buf_add(f, (const char *)&t, 1);
  k = 0;
  for (size_t x = raw.len; ; x >>= 7) {
    v[k++] = (unsigned char)((x & 0x7f) | (x >= 0x80 ? 0x80 : 0));
    if (x < 0x80) break;
  }
  kin__buf_add(f, (const char *)v, k);
  kin__buf_add(f, raw.p, raw.len);
  kin__buf_free(&raw);
}

static void test_pb_json_WatchFrameIsAJSONLine(void **state) {
  (void)state;
  size_t pn;
  char *pb = kin_test_fixture("proto/pod.pb", &pn), err[256];
  kin__buf f = {0}, line = {0};
  frame_of(&f, "MODIFIED", pb, pn);
  if (kin__pb_watch_event_json((const uint8_t *)f.p, f.len, &line, err, sizeof err)) fail_msg("%s", err);
  assert_true(line.len > 2 && line.p[line.len - 1] == '\n');
  json_t *ev = load(line.p, line.len, "event"), *want = want_of("pod");
  assert_string_equal(json_string_value(json_object_get(ev, "type")), "MODIFIED");
  assert_json_equal(json_object_get(ev, "object"), want, "event object");
  json_decref(ev);
  json_decref(want);
  /* a frame that is no event */
  line.len = 0;
  assert_int_equal(kin__pb_watch_event_json((const uint8_t *)"\x12\x00", 2, &line, err, sizeof err), KIN_EINVAL);
  assert_non_null(strstr(err, "without a type"));
  kin__buf_free(&f);
  kin__buf_free(&line);
  free(pb);
}

/* Every prefix of every body is refused or read, never read past its end
 * (ASan holds the reads), and a refusal says why. */
static void test_pb_json_TruncatedBodiesRefused(void **state) {
  (void)state;
  for (int i = 0; fixtures[i]; i++) {
    char path[64], err[256];
    size_t pn;
    snprintf(path, sizeof(path), "proto/%s.pb", fixtures[i]);
    char *pb = kin_test_fixture(path, &pn);
    for (size_t n = 0; n < pn; n++) {
      uint8_t *cut = malloc(n ? n : 1);
      memcpy(cut, pb, n);
      kin__buf out = {0};
      int rc = kin__pb_object_json(cut, n, &out, err, sizeof err);
      if (rc) {
        assert_int_equal(rc, KIN_EINVAL);
        assert_true(err[0] != 0);
      }
      kin__buf_free(&out);
      free(cut);
    }
    free(pb);
  }
}

/* Strings are copied eight plain bytes at a time: every byte to escape or
 * check (quote, backslash, newline, a control, UTF-8, invalid UTF-8) at
 * every offset of a long run comes out as Go writes it. */
static void test_pb_json_StringsEscapedAtEveryOffset(void **state) {
  (void)state;
  static const struct {
    const char *in, *want, *text; /* text: how the JSON spells it */
  } cases[] = {{"\"", "\"", "\\\""},          {"\\", "\\", "\\\\"},
               {"\n", "\n", "\\n"},            {"\x01", "\x01", "\\u0001"},
               {"\xc3\xa9", "\xc3\xa9", "\xc3\xa9"}, {"\xff", "\xef\xbf\xbd", "\xef\xbf\xbd"},
               {"<&>", "<&>", "<&>"}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
    for (size_t off = 0; off <= 17; off++) {
      char in[64], want[64];
      memset(in, 'a', 24);
      memcpy(in + off, cases[c].in, strlen(cases[c].in));
      size_t n = 24 + strlen(cases[c].in);
      memset(in + off + strlen(cases[c].in), 'b', 24 - off);
      in[n] = 0;
      snprintf(want, sizeof want, "%.*s%s%.*s", (int)off, in, cases[c].want, (int)(24 - off),
               in + off + strlen(cases[c].in));
      kin__buf tm = {0}, entry = {0}, cm = {0}, body = {0};
      kin_test_pb_field(&tm, 1, "v1", 2);
      kin_test_pb_field(&tm, 2, "ConfigMap", 9);
      kin_test_pb_field(&entry, 1, "k", 1);
      kin_test_pb_field(&entry, 2, in, n);
      kin_test_pb_field(&cm, 2, entry.p, entry.len); /* data: a map entry */
      kin__buf_add(&body, "k8s", 4);        /* with its NUL */
      kin_test_pb_field(&body, 1, tm.p, tm.len);
      kin_test_pb_field(&body, 2, cm.p, cm.len);
      kin__buf out = {0};
      char err[256];
      if (kin__pb_object_json((const uint8_t *)body.p, body.len, &out, err, sizeof err))
        fail_msg("case %zu offset %zu: %s", c, off, err);
      json_t *v = load(out.p, out.len, "configmap");
      const char *got = json_string_value(json_object_get(json_object_get(v, "data"), "k"));
      if (!got || strcmp(got, want)) fail_msg("case %zu offset %zu: %.*s", c, off, (int)out.len, out.p);
      assert_non_null(memmem(out.p, out.len, cases[c].text, strlen(cases[c].text)));
      json_decref(v);
      kin__buf_free(&out);
      kin__buf_free(&tm);
      kin__buf_free(&entry);
      kin__buf_free(&cm);
      kin__buf_free(&body);
    }
}

KIN_SUITE(pb_json, cmocka_unit_test(test_pb_json_ObjectsReadAsTheServersJSON),
          cmocka_unit_test(test_pb_json_StringsEscapedAtEveryOffset),
          cmocka_unit_test(test_pb_json_ListItemByItem),
          cmocka_unit_test(test_pb_json_WatchFrameIsAJSONLine),
          cmocka_unit_test(test_pb_json_TruncatedBodiesRefused))
