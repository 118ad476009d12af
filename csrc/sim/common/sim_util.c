/* util.c -- small helpers of kinformer.sim: uids, timestamps, base64url. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "sim_util.h"

void kin__sim_uuid(char out[37]) {
  unsigned char b[16];
  if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
    /* getrandom cannot fail for 16 bytes after boot; fall back to rand. */
    for (size_t i = 0; i < sizeof(b); i++) b[i] = (unsigned char)rand();
  }
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
           b[13], b[14], b[15]);
}

void kin__sim_now_rfc3339(char out[32]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Returns a malloc'd copy of s (NULL for NULL or out of memory). */
char *kin__sim_strdup(const char *s) { return s ? strdup(s) : NULL; }

/* Borrowed string at o[k1][k2] (k2 NULL: o[k1]), or NULL. */
const char *kin__sim_jstr(const json_t *o, const char *k1, const char *k2) {
  json_t *v = json_object_get(o, k1);
  if (k2) v = json_object_get(v, k2);
  return json_string_value(v);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Base64url of n bytes without padding; caller frees; NULL on ENOMEM. */
char *kin__sim_b64url_encode(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  char *out = malloc(n / 3 * 4 + 5);
  if (!out) return NULL;
  size_t o = 0, i = 0;
  for (; i + 2 < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = b64[(v >> 6) & 63];
    out[o++] = b64[v & 63];
  }
  if (n - i == 1) {
    unsigned v = (unsigned)p[i] << 16;
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
  } else if (n - i == 2) {
    unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
    out[o++] = b64[v >> 18];
    out[o++] = b64[(v >> 12) & 63];
    out[o++] = b64[(v >> 6) & 63];
  }
  out[o] = 0;
  return out;
}

static int b64val(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-' || c == '+') return 62;
  if (c == '_' || c == '/') return 63;
  return -1;
}

/* Decodes base64url (padding tolerated); caller frees; NULL when invalid. */
char *kin__sim_b64url_decode(const char *s, size_t *n) {
  size_t len = strlen(s);
  while (len && s[len - 1] == '=') len--;
  if (len % 4 == 1) return NULL;
  char *out = malloc(len / 4 * 3 + 4);
  if (!out) return NULL;
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64val(s[i]);
    if (v < 0) {
      free(out);
      return NULL;
    }
    acc = acc << 6 | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (char)((acc >> bits) & 0xff);
    }
  }
  out[o] = 0;
  if (n) *n = o;
  return out;
}
