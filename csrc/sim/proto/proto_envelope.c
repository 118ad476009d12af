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
