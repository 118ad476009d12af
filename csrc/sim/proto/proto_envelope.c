/* proto_envelope.c -- writes the envelope of every protobuf body (k8s.io/
 * apimachinery runtime/serializer/protobuf): the magic `k8s\0`, then a
 * runtime.Unknown {typeMeta {apiVersion = 1, kind = 2} = 1, raw = 2,
 * contentEncoding = 3, contentType = 4} whose raw bytes are the object's
 * message (which has no apiVersion or kind of its own). Reading one is
 * kin__sim_pb_unwrap in proto_decode.c: an envelope nests inside objects
 * (runtime.RawExtension), so unwrapping and decoding recurse into each
 * other and live in one file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "proto_int.h"

static const char magic[4] = {'k', '8', 's', 0};

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
  int msg = kin__pb_root_msg(api_version, kind);
  if (msg < 0) {
    snprintf(err, cap, "object %s %s does not implement the protobuf marshalling interface",
             api_version, kind);
    return KIN_EINVAL;
  }
  kin__buf raw = {0};
  int rc = kin__sim_pb_encode(msg, obj, &raw, err, cap);
  if (!rc) rc = kin__sim_pb_wrap_raw(api_version, kind, raw.p, raw.len, out);
  kin__buf_free(&raw);
  return rc;
}

int kin__sim_pb_wrap_raw(const char *api_version, const char *kind, const void *raw,
                         size_t rawlen, kin__buf *out) {
  kin__buf tm = {0};
  int rc = kin__sim_pb_put_bytes(&tm, 1, api_version, strlen(api_version));
  if (!rc) rc = kin__sim_pb_put_bytes(&tm, 2, kind, strlen(kind));
  if (!rc) rc = kin__buf_add(out, magic, 4);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 1, tm.p, tm.len);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 2, raw ? raw : "", rawlen);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 3, "", 0);
  if (!rc) rc = kin__sim_pb_put_bytes(out, 4, "", 0);
  kin__buf_free(&tm);
  return rc;
}

int kin__sim_pb_pre_encode(const json_t *obj, unsigned char **pb, size_t *len, size_t *msg_off,
                           size_t *msg_len) {
  kin__buf out = {0};
  char err[256];
  int rc = kin__sim_pb_wrap(obj, NULL, NULL, &out, err, sizeof(err));
  if (rc) {
    kin__buf_free(&out);
    return rc;
  }
  /* Re-read the raw field's position from the envelope rather than
   * re-encoding: magic, field 1 (tag, length, bytes), field 2 (tag, length). */
  size_t i = 4, n = out.len;
  const unsigned char *p = (const unsigned char *)out.p;
  for (int field = 1; field <= 2; field++) {
    if (i >= n || p[i] != (unsigned char)((field << 3) | 2)) goto bad;
    i++;
    uint64_t l = 0;
    int shift = 0;
    while (i < n && (p[i] & 0x80) && shift < 63) {
      l |= (uint64_t)(p[i++] & 0x7f) << shift;
      shift += 7;
    }
    if (i >= n) goto bad;
    l |= (uint64_t)p[i++] << shift;
    if (field == 2) {
      if (l > n - i) goto bad;
      *msg_off = i;
      *msg_len = (size_t)l;
      break;
    }
    if (l > n - i) goto bad;
    i += (size_t)l;
  }
  *pb = (unsigned char *)out.p;
  *len = out.len;
  return 0;
bad:
  kin__buf_free(&out);
  return KIN_EINVAL;
}
