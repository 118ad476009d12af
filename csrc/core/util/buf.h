/* buf.h -- growable, NUL-terminated byte buffer (internal), for messages,
 * canonical strings and HTTP bodies. Not thread-safe.
 *
 * An allocation failure is sticky: the buffer sets oom, keeps what it had
 * and ignores later appends, so a caller may append many pieces and check
 * once at the end. */
#ifndef KIN_BUF_H
#define KIN_BUF_H

#include <stddef.h>

typedef struct {
  char *p;    /* malloc'd, owned by whoever holds the buffer; NULL when empty */
  size_t len, cap;
  int oom;
} kin__buf;

/* Append n bytes / a C string / printf output. Return 0, or KIN_ENOMEM
 * (then, and after any earlier failure, nothing is appended). */
int kin__buf_add(kin__buf *b, const char *s, size_t n);
int kin__buf_puts(kin__buf *b, const char *s);
int kin__buf_printf(kin__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s percent-encoded for a URL query value (RFC 3986 unreserved
 * bytes kept, every other byte as %XX). */
void kin__buf_query_escape(kin__buf *b, const char *s);
/* Appends s as a quoted JSON string: '"' and '\\' escaped, control bytes
 * as \u00XX, every other byte (UTF-8 included) copied unchanged. */
void kin__buf_json_str(kin__buf *b, const char *s);

/* Frees the bytes and resets b to empty. */
void kin__buf_free(kin__buf *b);

#endif
