/* pb_wire.c -- the protobuf wire readers and the schema's lookups shared by
 * the core's decoder (pb_json.c) and kinformer.sim's transcoder. */
#include <string.h>

#include "pb_schema.h"

int kin__pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  if (*p < end && !(**p & 0x80)) { /* one byte: tags, lengths, small numbers */
    *v = *(*p)++;
    return 0;
  }
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*p >= end) return -1;
    uint8_t c = *(*p)++;
    x |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

int kin__pb_skip(const uint8_t **p, const uint8_t *end, int wt) {
  uint64_t v;
  switch (wt) {
    case 0: return kin__pb_varint(p, end, &v);
    case 1: if (end - *p < 8) return -1; *p += 8; return 0;
    case 5: if (end - *p < 4) return -1; *p += 4; return 0;
    case 2:
      if (kin__pb_varint(p, end, &v) || v > (uint64_t)(end - *p)) return -1;
      *p += v;
      return 0;
    default: return -1; /* groups (3, 4) are not used by Kubernetes */
  }
}

int kin__pb_root_msg(const char *av, const char *kind) {
  if (!av || !kind) return -1;
  for (int i = 0; kin__pb_roots[i].kind; i++)
    if (!strcmp(kin__pb_roots[i].api_version, av) && !strcmp(kin__pb_roots[i].kind, kind))
      return kin__pb_roots[i].msg;
  return -1;
}

int kin__pb_serves(const char *av, size_t n) {
  for (int i = 0; kin__pb_roots[i].kind; i++)
    if (strlen(kin__pb_roots[i].api_version) == n && !memcmp(kin__pb_roots[i].api_version, av, n))
      return 1;
  return 0;
}

int kin__pb_read_len(const uint8_t **p, const uint8_t *end, const uint8_t **s, size_t *n) {
  uint64_t len;
  if (kin__pb_varint(p, end, &len) || len > (uint64_t)(end - *p)) return -1;
  *s = *p;
  *n = (size_t)len;
  *p += len;
  return 0;
}
