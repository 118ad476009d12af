/* json_str.h -- the one owner of JSON strings (internal): finding where a
 * string ends (kin__json_str_end, checking; kin__json_str_skip, for
 * skipping text a parser checks later) and decoding its body (escapes, \uXXXX
 * and surrogate pairs to UTF-8). json_check.c, watch_decoder.c and ljson.c
 * find string ends with it; for decoding: kobj.c (object fields), json_tok.c
 * (Status, discovery, exec credentials, annotations), watch_decoder.c
 * (event type, ERROR reason/message) and the binding's JSON decoder
 * (csrc/lua/ljson.c) all use it, so they agree on every input.
 *
 * The rule, the one of Go's encoding/json (kube-apiserver, client-go):
 *  - \" \\ \/ \b \f \n \r \t decode to their character; any other
 *    character after a backslash, a backslash at the end, or a \u not
 *    followed by 4 hex digits is an error (KIN_EINVAL);
 *  - a high surrogate \uD800-\uDBFF directly followed by an escaped low
 *    surrogate \uDC00-\uDFFF decodes to the pair's code point (4 bytes);
 *  - any other surrogate \uD800-\uDFFF (a lone high or low one) decodes to
 *    U+FFFD (EF BF BD); the escape after a lone high one is decoded on its
 *    own;
 *  - \u0000 decodes to a 0 byte, counted in the length: callers that keep
 *    C strings (kobj fields, kin__json_strdup, watch events) see the value
 *    end there; Lua strings keep it;
 *  - raw bytes (anything but a backslash) are copied unchanged: invalid
 *    UTF-8 and raw control characters are what the document's validator
 *    (json_check.c, jsmn strict, ljson) accepts or rejects, as before; the
 *    decoder does not replace invalid UTF-8 (Go would: U+FFFD).
 *
 * Decoding never grows the text: an escape of 2 bytes gives 1, \uXXXX
 * (6 bytes) at most 3, a pair (12 bytes) 4. */
#ifndef KIN_JSON_STR_H
#define KIN_JSON_STR_H

#include <stddef.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kin.h"

/* Decodes the string body s[0..n) (without its quotes) into dst, which
 * has room for n bytes (dst may not overlap s; no NUL is appended).
 * Returns 0 with the decoded length in *len, or KIN_EINVAL on a bad
 * escape with *len set to the offset in s of that escape's backslash
 * (dst then holds a partial result). Owns no memory. */
int kin__json_unescape(const char *s, size_t n, char *dst, size_t *len);

/* The same into a new NUL-terminated copy: *out is malloc'd and owned by
 * the caller; *len (when len is not NULL) gets the decoded length, which
 * is larger than strlen(*out) when the text held \u0000. Returns 0,
 * KIN_EINVAL (bad escape) or KIN_ENOMEM; *out is NULL on failure. */
int kin__json_unescape_dup(const char *s, size_t n, char **out, size_t *len);

/* Whether the 4 bytes at h are hex digits. */
static inline int kin__json_is_hex4(const unsigned char *h) {
  for (int k = 0; k < 4; k++) {
    unsigned char c = h[k] | 0x20; /* ASCII letters to lower case */
    if (!((h[k] >= '0' && h[k] <= '9') || (c >= 'a' && c <= 'f'))) return 0;
  }
  return 1;
}

/* Returns the index in s[i..n) of the first quote, backslash or control
 * character (n when there is none): 16 bytes at a time with SSE2. */
static inline size_t kin__json_str_plain(const unsigned char *u, size_t i, size_t n) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
  for (; i + 16 <= n; i += 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(u + i));
    /* max(v, 0x1f) == 0x1f exactly when v <= 0x1f, unsigned */
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
                               _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
    unsigned m = (unsigned)_mm_movemask_epi8(hit);
    if (m) return i + (size_t)__builtin_ctz(m);
  }
#endif
  while (i < n && u[i] != '"' && u[i] != '\\' && u[i] >= 0x20) i++;
  return i;
}

/* Finds the end of the JSON string whose opening quote is s[*p], in the
 * text s[0..n). Checks what JSON requires of a string's bytes: no raw
 * control character (below 0x20), and after a backslash one of
 * " \ / b f n r t or u with 4 hex digits. Returns 0 with *p just after
 * the closing quote, or KIN_EINVAL with *p at the offending byte: n when
 * the string is unterminated, a control character, or the backslash of a
 * bad escape. *escaped (when not NULL) is set to whether the body holds a
 * backslash, i.e. whether it needs kin__json_unescape. Owns no memory.
 * Inline: it is on the watch decoder's and the Lua decoder's per-byte path
 * (out of line it cost 2-3 % more client instructions than the loops it
 * replaced). */
static inline int kin__json_str_end(const char *s, size_t n, size_t *p, int *escaped) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = *p + 1;
  int esc = 0;
  for (;;) {
    i = kin__json_str_plain(u, i, n);
    if (i < n && u[i] == '"') {
      *p = i + 1;
      if (escaped) *escaped = esc;
      return 0;
    }
    if (i >= n || u[i] != '\\') break; /* the end, or a control character */
    esc = 1;
    if (i + 1 >= n) break; /* a backslash at the end */
    unsigned char c = u[i + 1];
    if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
      i += 2;
    } else if (c == 'u' && i + 5 < n && kin__json_is_hex4(u + i + 2)) {
      i += 6;
    } else {
      break;
    }
  }
  *p = i;
  if (escaped) *escaped = esc;
  return KIN_EINVAL;
}

/* Skips the JSON string whose opening quote is s[i] without checking its
 * bytes: returns the index just after the closing quote (the first quote
 * not escaped by an odd run of backslashes), or 0 when the string is
 * unterminated. For scanners that only skip over text a strict parser
 * reads afterwards (watch_decoder.c skips an event's "object" value, which
 * kin_obj_parse then checks with kin__json_str_end's rule): on a valid
 * string it agrees with kin__json_str_end; memchr makes it cheap. */
static inline size_t kin__json_str_skip(const char *s, size_t n, size_t i) {
  for (i++; i < n;) {
    const char *q = memchr(s + i, '"', n - i);
    if (!q) return 0;
    size_t j = (size_t)(q - s), k = j;
    while (k > i && s[k - 1] == '\\') k--;
    if (((j - k) & 1) == 0) return j + 1;
    i = j + 1;
  }
  return 0;
}

#endif
