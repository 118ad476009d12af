/* intern.c -- see intern.h. The pool is a list of 64 KiB chunks; an id is
 * KIN__INTERN_BIT | chunk << 16 | offset. The table is an hmap whose keys
 * are the pool's own strings. */
#include "intern.h"
#include "hmap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)1 << 16)
#define NCHUNKS (KIN__INTERN_POOL_MAX / CHUNK)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* mu guards everything below; chunks[i] is written once, before any id
 * naming it is returned, and never changes after. */
static char *chunks[NCHUNKS];
static size_t nchunks, used; /* used: bytes taken in chunks[nchunks - 1] */
static size_t pool_bytes;
static kin__hmap table; /* string -> id (as a pointer-sized integer) */
static int table_ready;

/* Per thread: recent ids by hash (checked byte for byte), and the tags of
 * strings seen once. */
#define HIT_SLOTS 512
#define SEEN_SLOTS 4096
typedef struct {
  uint32_t tag, id;
} hit;
static __thread hit tl_hit[HIT_SLOTS];
static __thread uint32_t tl_seen[SEEN_SLOTS];

const char *kin__intern_str(uint32_t id) {
  uint32_t v = id & ~KIN__INTERN_BIT;
  return chunks[v >> 16] + (v & 0xffff);
}

size_t kin__intern_pool_bytes(void) {
  pthread_mutex_lock(&mu);
  size_t n = pool_bytes;
  pthread_mutex_unlock(&mu);
  return n;
}

/* Finds or adds s under mu; returns its id or 0 (full, out of memory). */
static uint32_t intern_locked(const char *s, size_t n, uint64_t h) {
  if (!table_ready) {
    kin__hmap_init_borrowed(&table);
    table_ready = 1;
  }
  void **v = kin__hmap_get_h(&table, s, n, h);
  if (v) return (uint32_t)(uintptr_t)*v;
  if (!nchunks || used + n + 1 > CHUNK) {
    if (nchunks == NCHUNKS) return 0;
    char *c = malloc(CHUNK);
    if (!c) return 0;
    chunks[nchunks++] = c;
    used = 0;
  }
  char *d = chunks[nchunks - 1] + used;
  memcpy(d, s, n);
  d[n] = 0;
  uint32_t id = KIN__INTERN_BIT | (uint32_t)((nchunks - 1) << 16) | (uint32_t)used;
  if (kin__hmap_put_h(&table, d, n, h, (void *)(uintptr_t)id, NULL) < 0) return 0;
  used += n + 1;
  pool_bytes += n + 1;
  return id;
}

uint32_t kin__intern(const char *s, size_t n) {
  if (n == 0 || n > KIN__INTERN_LEN_MAX) return 0;
  uint64_t h = kin__hash(s, n);
  uint32_t tag = (uint32_t)(h >> 32) | 1; /* never 0, the empty slot */
  hit *c = &tl_hit[h & (HIT_SLOTS - 1)];
  if (c->tag == tag && c->id) {
    const char *p = kin__intern_str(c->id);
    if (strnlen(p, n + 1) == n && memcmp(p, s, n) == 0) return c->id;
  }
  uint32_t *seen = &tl_seen[(h >> 9) & (SEEN_SLOTS - 1)];
  if (*seen != tag) { /* first sighting lately: the caller copies it */
    *seen = tag;
    return 0;
  }
  pthread_mutex_lock(&mu);
  uint32_t id = intern_locked(s, n, h);
  pthread_mutex_unlock(&mu);
  if (id) {
    c->tag = tag;
    c->id = id;
  }
  return id;
}
