/* fuzz_kobj.c -- libFuzzer harness for the object parser
 * (csrc/core/json/kobj.c, json_check.c, json_str.c): the input is parsed
 * with kin_obj_parse and kin_obj_parse_any, and every accessor of a parsed
 * object is read, also through a tombstone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    kin_obj_unref(o);
  }
  free(buf);
  return 0;
}
