/* json_check.h -- strict JSON syntax check (internal). jsmn tokenizes but
 * accepts missing separators and trailing commas; this single pass over the
 * bytes rejects anything RFC 8259 does not allow, so malformed input gets a
 * clear error instead of half-extracted fields. No allocation. */
#ifndef KIN_JSON_CHECK_H
#define KIN_JSON_CHECK_H

#include <stddef.h>

#define KIN_JSON_MAX_DEPTH 10000

/* Returns 0 when s[0..n) is exactly one JSON value (surrounding whitespace
 * allowed), KIN_EINVAL otherwise with the byte offset of the first error in
 * *err_off (when not NULL). Nesting deeper than KIN_JSON_MAX_DEPTH is an
 * error. */
int kin__json_check(const char *s, size_t n, size_t *err_off);

#endif
