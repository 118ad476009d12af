/* fuzz_kobj.c -- libFuzzer harness for the object parser
 * (csrc/core/json/kobj.c, json_check.c, json_str.c): the input is parsed
 * with kin_obj_parse and kin_obj_parse_any, and every accessor of a parsed
 * object is read, also through a tombstone; the default transform's object
 * (managedFields cut out) must equal a fresh parse of its JSON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "informer_factory.h"
#include "kobj.h"

static volatile size_t sink;

static size_t slen(const char *s) { return s ? strlen(s) : 0; }

static void read_all(kin_obj *o) {
  size_t n = 0;
  const char *js = kin_obj_json(o, &n);
  if (js && n) sink += (unsigned char)js[n - 1];
  sink += slen(kin_obj_key(o)) + slen(kin_obj_namespace(o)) + slen(kin_obj_name(o)) +
          slen(kin_obj_uid(o)) + slen(kin_obj_resource_version(o)) + slen(kin_obj_api_version(o)) +
          slen(kin_obj_kind_name(o));
  sink += (size_t)kin_obj_generation(o) + (size_t)kin_obj_being_deleted(o);
  size_t nl = kin_obj_label_count(o);
  for (size_t i = 0; i < nl; i++) {
    const char *k, *v;
    if (kin_obj_label_at(o, i, &k, &v) == 0) {
      sink += slen(k) + slen(v);
      /* The lookup must find what the iteration gave. */
      if (k && kin_obj_label(o, k) == NULL) abort();
    }
  }
  sink += slen(kin_obj_label(o, "app"));
  const kin_owner_ref *ref = kin_obj_controller_ref(o);
  if (ref) sink += slen(ref->api_version) + slen(ref->kind) + slen(ref->name) + slen(ref->uid);
  kin_span spans[5] = {kin_obj_labels_span(o), kin_obj_annotations_span(o),
                       kin_obj_finalizers_span(o), kin_obj_spec_span(o), kin_obj_status_span(o)};
  for (int i = 0; i < 5; i++) {
    if (!spans[i].len) continue;
    /* A span lies inside the object's JSON. */
    if (!js || (size_t)spans[i].off + spans[i].len > n) abort();
    sink += (unsigned char)js[spans[i].off + spans[i].len - 1];
  }
}

static int same_str(const char *a, const char *b) { return !strcmp(a ? a : "", b ? b : ""); }

static int same_span(kin_span a, kin_span b) { return a.off == b.off && a.len == b.len; }

/* The default transform (managedFields cut out of the parsed object,
 * kin__obj_cut) must give what parsing its JSON again gives. */
static void check_transform(kin_obj *o) {
  kin_obj *tr = NULL;
  if (kin_transform_drop_managed_fields(NULL, o, &tr) != 0 || !tr) return;
  read_all(tr);
  if (tr != o) {
    size_t n = 0;
    const char *js = kin_obj_json(tr, &n);
    kin_obj *re = NULL;
    if (kin_obj_parse_any(js, n, &re) != 0 || !re) abort(); /* the cut left invalid JSON */
    if (!same_str(kin_obj_key(re), kin_obj_key(tr)) || !same_str(kin_obj_name(re), kin_obj_name(tr)) ||
        !same_str(kin_obj_namespace(re), kin_obj_namespace(tr)) ||
        !same_str(kin_obj_uid(re), kin_obj_uid(tr)) ||
        !same_str(kin_obj_resource_version(re), kin_obj_resource_version(tr)) ||
        !same_str(kin_obj_api_version(re), kin_obj_api_version(tr)) ||
        !same_str(kin_obj_kind_name(re), kin_obj_kind_name(tr)) ||
        kin_obj_generation(re) != kin_obj_generation(tr) ||
        kin_obj_label_count(re) != kin_obj_label_count(tr) ||
        !same_span(kin_obj_labels_span(re), kin_obj_labels_span(tr)) ||
        !same_span(kin_obj_annotations_span(re), kin_obj_annotations_span(tr)) ||
        !same_span(kin_obj_finalizers_span(re), kin_obj_finalizers_span(tr)) ||
        !same_span(kin_obj_spec_span(re), kin_obj_spec_span(tr)) ||
        !same_span(kin_obj_status_span(re), kin_obj_status_span(tr)))
      abort();
    for (size_t i = 0; i < kin_obj_label_count(tr); i++) {
      const char *k1, *v1, *k2, *v2;
      if (kin_obj_label_at(tr, i, &k1, &v1) || kin_obj_label_at(re, i, &k2, &v2) ||
          !same_str(k1, k2) || !same_str(v1, v2))
        abort();
    }
    const kin_owner_ref *a = kin_obj_controller_ref(tr), *b = kin_obj_controller_ref(re);
    if (!a != !b || (a && (!same_str(a->name, b->name) || !same_str(a->uid, b->uid) ||
                           !same_str(a->kind, b->kind) || !same_str(a->api_version, b->api_version))))
      abort();
    kin_obj_unref(re);
  }
  kin_obj_unref(tr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A copy of exactly size bytes, so ASan sees any read past the end. */
  char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  kin_obj *o = NULL;
  if (kin_obj_parse(buf, size, &o) == 0 && o) {
    read_all(o);
    kin_obj *t = kin_obj_tombstone(kin_obj_key(o), o);
    if (t) {
      sink += slen(kin_obj_key(t)) + (size_t)kin_obj_is_tombstone(t);
      kin_obj *last = kin_obj_last_state(t);
      if (last) read_all(last);
      kin_obj_unref(t);
    }
    kin_obj_unref(o);
  }
  o = NULL;
  if (kin_obj_parse_any(buf, size, &o) == 0 && o) {
    read_all(o);
    check_transform(o);
    kin_obj_unref(o);
  }
  free(buf);
  return 0;
}
