/* util.c -- see util.h. */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void kin__errf(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void kin__wipe_free(char *s) {
  if (!s) return;
  volatile char *v = s;
  while (*v) *v++ = 0;
  free(s);
}

char *kin__read_trimmed(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      buf[n] = 0;
      kin__wipe_free(buf);
      buf = NULL;
      errno = ENOMEM;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int ferr = buf && ferror(f);
  fclose(f);
  if (!buf) return NULL;
  buf[n] = 0;
  if (ferr) {
    kin__wipe_free(buf);
    errno = EIO;
    return NULL;
  }
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
    buf[--n] = 0;
  return buf;
}
