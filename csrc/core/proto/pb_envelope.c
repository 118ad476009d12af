/* pb_envelope.c -- the envelope of every protobuf body (pb_json.h): the
 * magic `k8s\0`, then a runtime.Unknown {typeMeta {apiVersion, kind},
 * raw, contentEncoding, contentType} whose raw bytes are the object's
 * message. Read here; the object inside is pb_json.c's. */
#include <stdio.h>
#include <string.h>

#include "kin.h"
#include "pb_envelope.h"
#include "pb_schema.h"

int kin__pb_is_enveloped(const void *p, size_t n) { return n >= 4 && !memcmp(p, "k8s\0", 4); }

/* Copies the n bytes at s into a NUL-terminated buf of cap bytes (cut). */
static void copy_str(char *buf, size_t cap, const uint8_t *s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(buf, s, n);
  buf[n] = 0;
}

int kin__pb_envelope(const uint8_t *p, size_t n, kin__pb_unknown *u, char *err, size_t cap) {
  memset(u, 0, sizeof(*u));
  err[0] = 0;
  if (!n) {
    snprintf(err, cap, "empty data");
    return KIN_EINVAL;
  }
  if (!kin__pb_is_enveloped(p, n)) {
    snprintf(err, cap, "provided data does not appear to be a protobuf message, expected "
                       "prefix [107 56 115 0]");
    return KIN_EINVAL;
  }
  if (n == 4) {
    snprintf(err, cap, "empty body");
    return KIN_EINVAL;
  }
  const uint8_t *q = p + 4, *end = p + n, *s;
  size_t len;
  char enc[64] = "";
  while (q < end) {
    uint64_t key;
    if (kin__pb_varint(&q, end, &key)) goto eof;
    if ((key & 7) != 2) {
      if (!(key >> 3)) {
        snprintf(err, cap, "proto: Unknown: illegal tag 0 (wire type %d)", (int)(key & 7));
        return KIN_EINVAL;
      }
      if (kin__pb_skip(&q, end, (int)(key & 7))) goto eof;
      continue;
    }
    if (kin__pb_read_len(&q, end, &s, &len)) goto eof;
    switch (key >> 3) {
      case 1: { /* TypeMeta */
        const uint8_t *t = s, *tend = s + len, *ts;
        size_t tl;
        while (t < tend) {
          uint64_t tk;
          if (kin__pb_varint(&t, tend, &tk)) goto eof;
          if ((tk & 7) != 2) {
            if (kin__pb_skip(&t, tend, (int)(tk & 7))) goto eof;
            continue;
          }
          if (kin__pb_read_len(&t, tend, &ts, &tl)) goto eof;
          if ((tk >> 3) == 1) copy_str(u->api_version, sizeof(u->api_version), ts, tl);
          if ((tk >> 3) == 2) copy_str(u->kind, sizeof(u->kind), ts, tl);
        }
        break;
      }
      case 2: u->raw = s; u->raw_len = len; break;
      case 3: copy_str(enc, sizeof(enc), s, len); break;
      default: break;
    }
  }
  u->read = 1;
  if (enc[0]) {
    /* the Go server rejects any content encoding as well */
    snprintf(err, cap, "unsupported content encoding \"%s\"", enc);
    return KIN_EINVAL;
  }
  return 0;
eof:
  snprintf(err, cap, "unexpected EOF");
  return KIN_EINVAL;
}
