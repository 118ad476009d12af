/* buf.c -- the growable buffer. */
#include "buf.h"
#include "kin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kin__buf_add(kin__buf *b, const char *s, size_t n) {
  if (b->oom) return KIN_ENOMEM;
  if (b->len + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + n + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->oom = 1;
      return KIN_ENOMEM;
    }
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
  return 0;
}

int kin__buf_puts(kin__buf *b, const char *s) { return kin__buf_add(b, s, strlen(s)); }

int kin__buf_printf(kin__buf *b, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n < 0) return KIN_EINVAL;
  if ((size_t)n < sizeof(tmp)) return kin__buf_add(b, tmp, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->oom = 1;
    return KIN_ENOMEM;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int rc = kin__buf_add(b, big, (size_t)n);
  free(big);
  return rc;
}

void kin__buf_query_escape(kin__buf *b, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      kin__buf_add(b, s, 1);
    } else {
      char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
      kin__buf_add(b, e, 3);
    }
  }
}

void kin__buf_json_str(kin__buf *b, const char *s) {
  kin__buf_add(b, "\"", 1);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') {
      char e[2] = {'\\', (char)ch};
      kin__buf_add(b, e, 2);
    } else if (ch < 0x20) {
      kin__buf_printf(b, "\\u%04x", ch);
    } else {
      kin__buf_add(b, s, 1);
    }
  }
  kin__buf_add(b, "\"", 1);
}

void kin__buf_free(kin__buf *b) {
  free(b->p);
  memset(b, 0, sizeof(*b));
}
