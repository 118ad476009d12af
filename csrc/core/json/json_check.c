/* json_check.c -- an iterative JSON recogniser with an explicit bit stack,
 * so hostile nesting cannot overflow the C stack. */
#include "json_check.h"
#include "json_str.h"
#include "kin.h"

#include <stdint.h>
#include <string.h>

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Scans a string starting at s[*p] == '"'; leaves *p after the closing
 * quote. Returns 0 or -1. The rule is json_str.c's, shared with the watch
 * decoder and the binding's decoder. */
static int scan_string(const unsigned char *s, size_t n, size_t *p) {
  return kin__json_str_end((const char *)s, n, p, NULL) ? -1 : 0;
}

static int scan_number(const unsigned char *s, size_t n, size_t *p) {
  size_t i = *p;
  if (i < n && s[i] == '-') i++;
  if (i >= n) goto bad;
  if (s[i] == '0') i++;
  else if (is_digit(s[i])) while (i < n && is_digit(s[i])) i++;
  else goto bad;
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || !is_digit(s[i])) goto bad;
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= n || !is_digit(s[i])) goto bad;
    while (i < n && is_digit(s[i])) i++;
  }
  *p = i;
  return 0;
bad:
  *p = i;
  return -1;
}

static int scan_literal(const unsigned char *s, size_t n, size_t *p, const char *lit) {
  size_t l = strlen(lit);
  if (n - *p < l || memcmp(s + *p, lit, l) != 0) return -1;
  *p += l;
  return 0;
}

int kin__json_check(const char *str, size_t n, size_t *err_off) {
  return kin__json_scan(str, n, err_off, NULL);
}

int kin__json_scan(const char *str, size_t n, size_t *err_off, kin__json_visitor *v) {
  const unsigned char *s = (const unsigned char *)str;
  uint8_t stack[(KIN_JSON_MAX_DEPTH + 7) / 8]; /* bit set: 1 = object */
  size_t depth = 0, p = 0;
  enum { VALUE, KEY, AFTER } st = VALUE;

#define TOP_IS_OBJ() ((stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1)
#define FAIL() do { if (err_off) *err_off = p; return KIN_EINVAL; } while (0)
#define SKIP_WS() while (p < n && is_ws(s[p])) p++

  for (;;) {
    SKIP_WS();
    if (st == AFTER && depth == 0) {
      if (p != n) FAIL();
      return 0;
    }
    if (p >= n) FAIL();
    unsigned char c = s[p];
    switch (st) {
    case VALUE: {
      size_t start = p;
      if (c == '{' || c == '[') {
        if (depth >= KIN_JSON_MAX_DEPTH) FAIL();
        if (v && v->open) v->open(v, depth, (char)c, start);
        if (c == '{') stack[depth >> 3] |= (uint8_t)(1u << (depth & 7));
        else stack[depth >> 3] &= (uint8_t)~(1u << (depth & 7));
        depth++;
        p++;
        SKIP_WS();
        if (p < n && s[p] == (c == '{' ? '}' : ']')) {
          depth--;
          p++;
          if (v && v->close) v->close(v, depth, p);
          st = AFTER;
        } else {
          st = c == '{' ? KEY : VALUE;
        }
      } else if (c == '"') {
        if (scan_string(s, n, &p)) FAIL();
        if (v && v->scalar) v->scalar(v, depth, '"', start + 1, p - 1);
        st = AFTER;
      } else if (c == '-' || is_digit(c)) {
        if (scan_number(s, n, &p)) FAIL();
        if (v && v->scalar) v->scalar(v, depth, '0', start, p);
        st = AFTER;
      } else if (c == 't' || c == 'f' || c == 'n') {
        if (scan_literal(s, n, &p, c == 't' ? "true" : c == 'f' ? "false" : "null")) FAIL();
        if (v && v->scalar) v->scalar(v, depth, (char)c, start, p);
        st = AFTER;
      } else {
        FAIL();
      }
      break;
    }
    case KEY: {
      size_t start = p;
      if (c != '"' || scan_string(s, n, &p)) FAIL();
      if (v && v->key) v->key(v, depth, start + 1, p - 1);
      SKIP_WS();
      if (p >= n || s[p] != ':') FAIL();
      p++;
      st = VALUE;
      break;
    }
    case AFTER:
      if (c == ',') {
        p++;
        st = TOP_IS_OBJ() ? KEY : VALUE;
      } else if ((c == '}' && TOP_IS_OBJ()) || (c == ']' && !TOP_IS_OBJ())) {
        p++;
        depth--;
        if (v && v->close) v->close(v, depth, p);
      } else {
        FAIL();
      }
      break;
    }
  }
#undef TOP_IS_OBJ
#undef FAIL
#undef SKIP_WS
}
