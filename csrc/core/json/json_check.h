/* json_check.h -- strict JSON syntax check (internal). This single pass
 * over the bytes rejects anything RFC 8259 does not allow (jsmn, for one,
 * accepts missing separators and trailing commas), so malformed input gets
 * a clear error instead of half-extracted fields; with a visitor the same
 * pass tells where each member is (kobj.c's object parse). No allocation. */
#ifndef KIN_JSON_CHECK_H
#define KIN_JSON_CHECK_H

#include <stddef.h>

#define KIN_JSON_MAX_DEPTH 10000

/* What kin__json_scan reports while it checks, in document order. depth is
 * the number of containers around the thing reported: the outermost value
 * is at depth 0, the members of a top-level object at depth 1. Spans are
 * byte offsets into s, end exclusive; a string's span is its body, without
 * the quotes and still escaped. Any callback may be NULL. The visitor sees
 * a prefix of the document's events even when the document turns out
 * malformed: it must only trust them once the scan returned 0. */
typedef struct kin__json_visitor kin__json_visitor;
struct kin__json_visitor {
  void (*key)(kin__json_visitor *v, size_t depth, size_t start, size_t end);
  /* type '"' for a string (body span), '0' for a number, 't', 'f' or 'n'
   * for true, false and null (raw span) */
  void (*scalar)(kin__json_visitor *v, size_t depth, char type, size_t start, size_t end);
  /* type '{' or '['; start is the bracket's offset */
  void (*open)(kin__json_visitor *v, size_t depth, char type, size_t start);
  /* end is just past the closing bracket; depth is the opener's */
  void (*close)(kin__json_visitor *v, size_t depth, size_t end);
};

/* kin__json_check, reporting each member name, scalar and container to v
 * (may be NULL) as it goes: one pass that both validates and locates.
 * Returns 0 or KIN_EINVAL as kin__json_check does. */
int kin__json_scan(const char *s, size_t n, size_t *err_off, kin__json_visitor *v);

/* Returns 0 when s[0..n) is exactly one JSON value (surrounding whitespace
 * allowed), KIN_EINVAL otherwise with the byte offset of the first error in
 * *err_off (when not NULL). Nesting deeper than KIN_JSON_MAX_DEPTH is an
 * error. */
int kin__json_check(const char *s, size_t n, size_t *err_off);

#endif
