/* intern.h -- internal: one shared, immutable copy of the short strings
 * many cached objects repeat (apiVersion, kind, namespace, label keys and
 * values, owner references), so kobj.c keeps a 32-bit id for them instead
 * of a copy per object.
 *
 * A string is interned on its second sighting by the calling thread (a
 * per-thread table of recently seen hashes), so values unique to one object
 * (a generated label value) are never interned. Interned strings live as
 * long as the process; the pool stops growing at KIN__INTERN_POOL_MAX bytes
 * (then kin__intern returns 0 and the caller keeps its own copy), which
 * bounds what churn of distinct values can leave behind.
 *
 * Thread-safe: one mutex guards the table and the pool, taken only when the
 * calling thread's cache of recent ids misses; reading an id's string takes
 * no lock (an id is only ever handed out after its bytes were written). */
#ifndef KIN_INTERN_H
#define KIN_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define KIN__INTERN_BIT 0x80000000u /* set in every id */
#define KIN__INTERN_LEN_MAX 96      /* longer strings are never interned */
#define KIN__INTERN_POOL_MAX ((size_t)8 << 20)

/* Returns the id of the shared copy of the n bytes at s (no NUL among
 * them), or 0 when they are not interned: n is 0 or above
 * KIN__INTERN_LEN_MAX, this thread has not seen them lately (they are
 * remembered for next time), the pool is full, or memory ran out. */
uint32_t kin__intern(const char *s, size_t n);

/* The NUL-terminated string of an id kin__intern returned. */
const char *kin__intern_str(uint32_t id);

/* Bytes held by the pool (strings and NULs), for tests and statistics. */
size_t kin__intern_pool_bytes(void);

#endif
