/* proto_envelope.c -- the envelope of every protobuf body (k8s.io/
 * apimachinery runtime/serializer/protobuf): the magic `k8s\0`, then a
 * runtime.Unknown {typeMeta {apiVersion = 1, kind = 2} = 1, raw = 2,
 * contentEncoding = 3, contentType = 4} whose raw bytes are the object's
 * message (which has no apiVersion or kind of its own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "proto_int.h"

static const char magic[4] = {'k', '8', 's', 0};

/* Reads the length-delimited field at *p into (*s, *n); -1 when truncated. */
static int read_len(const uint8_t **p, const uint8_t *end, const uint8_t **s, size_t *n) {
  uint64_t len;
  if (kin__sim_pb_varint(p, end, &len) || len > (uint64_t)(end - *p)) return -1;
  *s = *p;
  *n = (size_t)len;
  *p += len;
  return 0;
}

/* Copies the n bytes at s into a NUL-terminated buf of cap bytes (cut). */
static void copy_str(char *buf, size_t cap, const uint8_t *s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(buf, s, n);
  buf[n] = 0;
}

json_t *kin__sim_pb_unwrap(const uint8_t *p, size_t n, int fallback_msg, kin__sim_pb_type *tm,
                           char *err, size_t cap) {
  err[0] = 0;
  memset(tm, 0, sizeof(*tm));
  char *av = tm->api_version, *kind = tm->kind;
  if (!n) {
    snprintf(err, cap, "empty data");
    return NULL;
  }
  if (n < 4 || memcmp(p, magic, 4)) {
    snprintf(err, cap, "provided data does not appear to be a protobuf message, expected "
                       "prefix [107 56 115 0]");
    return NULL;
  }
  if (n == 4) {
    snprintf(err, cap, "empty body");
    return NULL;
  }
  const uint8_t *q = p + 4, *end = p + n, *raw = NULL;
  size_t rawlen = 0;
  char enc[64] = "";
  while (q < end) {
    uint64_t key;
    const uint8_t *s;
    size_t len;
    if (kin__sim_pb_varint(&q, end, &key)) goto eof;
    if ((key & 7) != 2) {
      if (!(key >> 3)) {
        snprintf(err, cap, "proto: Unknown: illegal tag 0 (wire type %d)", (int)(key & 7));
        return NULL;
      }
      if (kin__sim_pb_skip(&q, end, (int)(key & 7))) goto eof;
      continue;
    }
    if (read_len(&q, end, &s, &len)) goto eof;
    switch (key >> 3) {
      case 1: { /* TypeMeta */
        const uint8_t *t = s, *tend = s + len;
        while (t < tend) {
          uint64_t tk;
          const uint8_t *ts;
          size_t tl;
          if (kin__sim_pb_varint(&t, tend, &tk)) goto eof;
          if ((tk & 7) != 2) {
            if (kin__sim_pb_skip(&t, tend, (int)(tk & 7))) goto eof;
            continue;
          }
          if (read_len(&t, tend, &ts, &tl)) goto eof;
          if ((tk >> 3) == 1) copy_str(av, sizeof(tm->api_version), ts, tl);
          if ((tk >> 3) == 2) copy_str(kind, sizeof(tm->kind), ts, tl);
        }
        break;
      }
      case 2: raw = s; rawlen = len; break;
      case 3: copy_str(enc, sizeof(enc), s, len); break;
      default: break;
    }
  }
  tm->read = 1;
  if (enc[0]) {
    /* the Go server rejects any content encoding as well */
    snprintf(err, cap, "unsupported content encoding \"%s\"", enc);
    return NULL;
  }
  int msg = kin__sim_pb_root_msg(av, kind);
  if (msg < 0) msg = fallback_msg;
  if (msg < 0) {
    snprintf(err, cap, "no kind \"%s\" is registered for version \"%s\"", kind, av);
    return NULL;
  }
  json_t *obj = kin__sim_pb_decode(msg, raw, rawlen, err, cap);
  if (!obj) return NULL;
  if (!json_is_object(obj)) {
    json_decref(obj);
    snprintf(err, cap, "the protobuf body is not an object");
    return NULL;
  }
  /* apiVersion and kind first, as the Go server's JSON has them */
  json_t *res = json_object();
  if (res && kind[0]) json_object_set_new(res, "kind", json_string(kind));
  if (res && av[0]) json_object_set_new(res, "apiVersion", json_string(av));
  if (!res || json_object_update(res, obj)) {
    json_decref(res);
    json_decref(obj);
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  json_decref(obj);
  return res;
eof:
  snprintf(err, cap, "unexpected EOF");
  return NULL;
}

int kin__sim_pb_wrap(const json_t *obj, const char *api_version, const char *kind,
                     kin__buf *out, char *err, size_t cap) {
  err[0] = 0;
  if (!api_version) {
    const json_t *v = json_object_get(obj, "apiVersion");
    api_version = json_is_string(v) ? json_string_value(v) : "";
  }
  if (!kind) {
    const json_t *v = json_object_get(obj, "kind");
    kind = json_is_string(v) ? json_string_value(v) : "";
  }
  int msg = kin__sim_pb_root_msg(api_version, kind);
  if (msg < 0) {
    snprintf(err, cap, "object %s %s does not implement the protobuf marshalling interface",
             api_version, kind);
    return KIN_EINVAL;
  }
  kin__buf raw = {0}, tm = {0};
  int rc = kin__sim_pb_encode(msg, obj, &raw, err, cap);
  if (!rc) rc = kin__sim_pb_put_bytes(&tm, 1, api_version, strlen(api_version));
  if (!rc) rc = kin__sim_pb_put_bytes(&tm, 2, kind, strlen(kind));
  if (!rc) rc = kin__buf_add(out, magic, 4);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 1, tm.p, tm.len);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 2, raw.p, raw.len);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 3, "", 0);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 4, "", 0);
  kin__buf_free(&raw);
  kin__buf_free(&tm);
  return rc;
}
