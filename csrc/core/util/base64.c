/* base64.c -- see base64.h. */
#include "base64.h"

#include <stdlib.h>

#include "kin.h"

static const char b64chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

static int is_space(unsigned char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

int kin__base64_decode(const char *src, size_t len, unsigned char **out, size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  unsigned char *buf = malloc(len / 4 * 3 + 4);
  if (!buf) return KIN_ENOMEM;
  size_t n = 0, quad = 0, pad = 0;
  uint32_t acc = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)src[i];
    if (is_space(c)) continue;
    if (c == '=') {
      pad++;
      continue;
    }
    int v = b64val(c);
    /* Data after padding is as malformed as a foreign character. */
    if (v < 0 || pad) goto bad;
    acc = acc << 6 | (uint32_t)v;
    if (++quad == 4) {
      buf[n++] = (unsigned char)(acc >> 16);
      buf[n++] = (unsigned char)(acc >> 8);
      buf[n++] = (unsigned char)acc;
      quad = 0;
      acc = 0;
    }
  }
  if (quad == 1 || pad > 2) goto bad;
  if (pad && (quad + pad) != 4) goto bad;
  if (quad == 2) {
    buf[n++] = (unsigned char)(acc >> 4);
  } else if (quad == 3) {
    buf[n++] = (unsigned char)(acc >> 10);
    buf[n++] = (unsigned char)(acc >> 2);
  }
  buf[n] = 0;
  *out = buf;
  *outlen = n;
  return 0;
bad:
  free(buf);
  return KIN_EINVAL;
}

char *kin__base64_encode(const unsigned char *src, size_t len) {
  char *out = malloc((len + 2) / 3 * 4 + 1);
  if (!out) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)src[i] << 16;
    if (i + 1 < len) v |= (uint32_t)src[i + 1] << 8;
    if (i + 2 < len) v |= src[i + 2];
    out[o++] = b64chars[v >> 18 & 63];
    out[o++] = b64chars[v >> 12 & 63];
    out[o++] = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
    out[o++] = i + 2 < len ? b64chars[v & 63] : '=';
  }
  out[o] = 0;
  return out;
}
