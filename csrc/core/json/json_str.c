/* json_str.c -- JSON string bodies to UTF-8 (see json_str.h for the rule). */
#include "json_str.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"

/* Value of hex digit c, or -1. */
static inline int hexdig(unsigned char c) {
  if ((unsigned)(c - '0') < 10u) return c - '0';
  c |= 0x20; /* ASCII letters to lower case */
  if ((unsigned)(c - 'a') < 6u) return c - 'a' + 10;
  return -1;
}

/* Value of the 4 hex digits at p (the caller checked that they exist), or
 * -1 when one is no hex digit. */
static inline long hex4(const char *p) {
  int a = hexdig((unsigned char)p[0]), b = hexdig((unsigned char)p[1]);
  int c = hexdig((unsigned char)p[2]), d = hexdig((unsigned char)p[3]);
  if ((a | b | c | d) < 0) return -1;
  return (long)a << 12 | b << 8 | c << 4 | d;
}

/* Writes code point cp (at most U+10FFFF, no surrogate) as UTF-8 at w;
 * returns the new end. */
static inline char *put_utf8(char *w, uint32_t cp) {
  if (cp < 0x80) {
    *w++ = (char)cp;
  } else if (cp < 0x800) {
    *w++ = (char)(0xC0 | cp >> 6);
    *w++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *w++ = (char)(0xE0 | cp >> 12);
    *w++ = (char)(0x80 | (cp >> 6 & 0x3F));
    *w++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *w++ = (char)(0xF0 | cp >> 18);
    *w++ = (char)(0x80 | (cp >> 12 & 0x3F));
    *w++ = (char)(0x80 | (cp >> 6 & 0x3F));
    *w++ = (char)(0x80 | (cp & 0x3F));
  }
  return w;
}

int kin__json_unescape(const char *s, size_t n, char *dst, size_t *len) {
  const char *p = s, *end = s + n;
  char *w = dst;
  const char *bs;
  for (;;) {
    /* The run up to the next backslash is copied as is: its first bytes
     * one by one (runs between escapes are often short), the rest, when
     * the run is longer, with memchr and memcpy. */
    const char *stop = end - p > 8 ? p + 8 : end;
    while (p < stop && *p != '\\') *w++ = *p++;
    if (p < stop) {
      bs = p;
    } else {
      bs = p < end ? memchr(p, '\\', (size_t)(end - p)) : NULL;
      if (!bs) {
        if (p < end) memcpy(w, p, (size_t)(end - p));
        w += end - p;
        break;
      }
      memcpy(w, p, (size_t)(bs - p));
      w += bs - p;
    }
    if (end - bs < 2) goto bad;
    p = bs + 2;
    switch (bs[1]) {
    case '"': *w++ = '"'; break;
    case '\\': *w++ = '\\'; break;
    case '/': *w++ = '/'; break;
    case 'b': *w++ = '\b'; break;
    case 'f': *w++ = '\f'; break;
    case 'n': *w++ = '\n'; break;
    case 'r': *w++ = '\r'; break;
    case 't': *w++ = '\t'; break;
    case 'u': {
      long cp = end - p >= 4 ? hex4(p) : -1;
      if (cp < 0) goto bad;
      p += 4;
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        long lo = -1;
        if (cp <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u') lo = hex4(p + 2);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          p += 6;
        } else {
          cp = 0xFFFD; /* lone surrogate; what follows is decoded on its own */
        }
      }
      w = put_utf8(w, (uint32_t)cp);
      break;
    }
    default: goto bad;
    }
  }
  *len = (size_t)(w - dst);
  return 0;
bad:
  *len = (size_t)(bs - s);
  return KIN_EINVAL;
}

int kin__json_unescape_dup(const char *s, size_t n, char **out, size_t *len) {
  size_t l;
  *out = NULL;
  char *r = malloc(n + 1);
  if (!r) return KIN_ENOMEM;
  int rc = kin__json_unescape(s, n, r, &l);
  if (rc < 0) {
    free(r);
    return rc;
  }
  r[l] = 0;
  if (len) *len = l;
  *out = r;
  return 0;
}
