/* hmap.h -- internal: open-addressing hash map from NUL-terminated string keys to
 * void pointers (internal). The map owns a private copy of every key, unless
 * it was made by kin__hmap_init_borrowed (then the caller keeps each key
 * alive and unchanged while it is in the map); values are opaque and never
 * freed by the map. Each slot keeps the key's hash and length, so a probe
 * compares the hash, then the length, and reads the key bytes only on a
 * likely match.
 *
 * A key's home slot mixes its hash with a seed of the map's own (chosen when
 * the map first allocates), so two maps order the same keys differently:
 * replaying one map's entries in slot order into another map (a WatchList's
 * initial events into the DeltaFIFO, a LIST into the indexer) cannot build
 * the long probe runs it would when both maps placed keys by the same bits.
 *
 * Not thread-safe: every user guards its maps with its own lock. */
#ifndef KIN_HMAP_H
#define KIN_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  char *key;     /* NULL: empty slot */
  void *val;
  uint32_t hash; /* the low half of kin__hash(key): 24-byte slots */
  uint32_t klen; /* strlen(key) (keys are shorter than 4 GiB) */
} kin__hmap_entry;

typedef struct {
  kin__hmap_entry *slots;
  size_t cap;   /* power of two, or 0 before the first insert */
  size_t len;
  int borrowed; /* keys are the caller's: not copied, not freed */
  uint32_t seed; /* mixed into home slots; set when slots are first allocated */
  uint64_t probes; /* occupied slots stepped over by inserts, grows included */
} kin__hmap;

uint64_t kin__hash(const char *s, size_t n);

/* Initialises an empty map; allocates nothing until the first put. */
void kin__hmap_init(kin__hmap *m);

/* Initialises an empty map that stores the caller's key pointers as they
 * are (no copy; del and free leave them alone). */
void kin__hmap_init_borrowed(kin__hmap *m);

/* Frees the slots and the key copies; values are the caller's. */
void kin__hmap_free(kin__hmap *m);

/* Returns the address of the value stored under key, or NULL. The address
 * is valid until the next put or del on the map. */
void **kin__hmap_get(const kin__hmap *m, const char *key);

/* Stores val under key (copying key; a borrowed map keeps the pointer, and
 * when the key was there already it takes this pointer in place of the old
 * one, so a key may live inside its value). Returns 1 if the key was new, 0
 * if an existing value was replaced (its old value goes to *old when old is
 * not NULL), KIN_ENOMEM on allocation failure, KIN_EINVAL for a key of 4 GiB
 * or more (map unchanged). */
int kin__hmap_put(kin__hmap *m, const char *key, void *val, void **old);
/* Sizes m so that it holds n entries without growing again (one table
 * allocated instead of a doubling series whose freed tables stay as holes
 * in the heap). Returns 0 or KIN_ENOMEM with m unchanged. */
int kin__hmap_reserve(kin__hmap *m, size_t n);

/* Removes key. Returns 1 and the value in *old (if not NULL) when it was
 * present, 0 otherwise. */
int kin__hmap_del(kin__hmap *m, const char *key, void **old);

/* The same with the key's length and hash (kin__hash) computed by the
 * caller, for a lookup followed by an insert or a delete of one key. */
void **kin__hmap_get_h(const kin__hmap *m, const char *key, size_t n, uint64_t h);
int kin__hmap_put_h(kin__hmap *m, const char *key, size_t n, uint64_t h, void *val, void **old);
int kin__hmap_del_h(kin__hmap *m, const char *key, size_t n, uint64_t h, void **old);

/* Iteration: start with *pos = 0; returns the next entry or NULL. The map
 * must not be modified during iteration. */
kin__hmap_entry *kin__hmap_next(const kin__hmap *m, size_t *pos);

/* The occupied slots every insert so far stepped over before it found a
 * free one (rehashing on growth included): the work inserts did beyond one
 * slot each. For tests that hold a map's cost linear in its size without
 * timing anything. */
static inline uint64_t kin__hmap_probes(const kin__hmap *m) { return m->probes; }

static inline size_t kin__hmap_len(const kin__hmap *m) { return m->len; }

#endif
