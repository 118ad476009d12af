/* hmap.c -- linear probing with backward-shift deletion, so there are no
 * tombstones and lookups stay short after many deletes (the workqueue and
 * DeltaFIFO insert and delete the same keys all day long). */
#include "hmap.h"
#include "kin.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Tables of at least MAP_MIN bytes are mapped from the system on their
 * own rather than taken from malloc: a map growing by doubling frees each
 * smaller table, and malloc would keep those as holes among the objects
 * allocated meanwhile (an index's per-value sets growing in step during an
 * initial list left some 40 bytes an object); munmap gives them back. */
#define MAP_MIN ((size_t)16 << 10)

/* A zeroed table of cap slots, or NULL. */
static kin__hmap_entry *table_alloc(size_t cap) {
  size_t n = cap * sizeof(kin__hmap_entry);
  if (n < MAP_MIN) return calloc(cap, sizeof(kin__hmap_entry));
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Frees a table of table_alloc(cap) (NULL: nothing). */
static void table_free(kin__hmap_entry *t, size_t cap) {
  if (!t) return;
  size_t n = cap * sizeof(kin__hmap_entry);
  if (n < MAP_MIN) free(t);
  else munmap(t, n);
}

/* The home slot of a key whose hash's low half is h: h and the map's seed
 * through murmur3's finaliser, so each map spreads keys its own way. */
static inline size_t home_of(uint32_t seed, uint32_t h, size_t mask) {
  uint32_t x = h ^ seed;
  x ^= x >> 16;
  x *= 0x85ebca6bU;
  x ^= x >> 13;
  x *= 0xc2b2ae35U;
  x ^= x >> 16;
  return x & mask;
}

/* Seeds for new maps: a Weyl sequence, distinct for 2^32 maps in a row. */
static atomic_uint seed_next = 0x2545f491U;

/* FNV-1a over 8-byte words then bytes, finished with a murmur mixer: good
 * enough spread for resource keys, and cheap. */
uint64_t kin__hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  for (; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

void kin__hmap_init(kin__hmap *m) { memset(m, 0, sizeof(*m)); }

void kin__hmap_init_borrowed(kin__hmap *m) {
  memset(m, 0, sizeof(*m));
  m->borrowed = 1;
}

void kin__hmap_free(kin__hmap *m) {
  int borrowed = m->borrowed;
  if (!borrowed)
    for (size_t i = 0; i < m->cap; i++) free(m->slots[i].key);
  table_free(m->slots, m->cap);
  memset(m, 0, sizeof(*m));
  m->borrowed = borrowed;
}

/* Hash first, then length: the key bytes are read (memcmp) only when both
 * match, which for a present key is once and for an absent one almost
 * never. */
static kin__hmap_entry *find(const kin__hmap *m, const char *key, size_t n, uint64_t h64) {
  if (m->cap == 0) return NULL;
  size_t mask = m->cap - 1;
  uint32_t h = (uint32_t)h64;
  for (size_t i = home_of(m->seed, h, mask);; i = (i + 1) & mask) {
    kin__hmap_entry *e = &m->slots[i];
    if (!e->key) return NULL;
    if (e->hash == h && e->klen == n && memcmp(e->key, key, n) == 0) return e;
  }
}

void **kin__hmap_get_h(const kin__hmap *m, const char *key, size_t n, uint64_t h) {
  kin__hmap_entry *e = find(m, key, n, h);
  return e ? &e->val : NULL;
}

void **kin__hmap_get(const kin__hmap *m, const char *key) {
  if (m->cap == 0) return NULL;
  size_t n = strlen(key);
  return kin__hmap_get_h(m, key, n, kin__hash(key, n));
}

/* Places e in its probe run; returns the occupied slots it stepped over. */
static size_t place(kin__hmap_entry *slots, size_t cap, uint32_t seed, kin__hmap_entry e) {
  size_t mask = cap - 1, steps = 0;
  size_t i = home_of(seed, e.hash, mask);
  while (slots[i].key) {
    i = (i + 1) & mask;
    steps++;
  }
  slots[i] = e;
  return steps;
}

/* Moves m's entries to a table of ncap slots (a power of two holding
 * them under the load factor). Returns 0 or KIN_ENOMEM with m unchanged. */
static int resize(kin__hmap *m, size_t ncap) {
  kin__hmap_entry *ns = table_alloc(ncap);
  if (!ns) return KIN_ENOMEM;
  if (m->cap == 0) m->seed = atomic_fetch_add_explicit(&seed_next, 0x9e3779b9U, memory_order_relaxed);
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i].key) m->probes += place(ns, ncap, m->seed, m->slots[i]);
  table_free(m->slots, m->cap);
  m->slots = ns;
  m->cap = ncap;
  return 0;
}

static int grow(kin__hmap *m) { return resize(m, m->cap ? m->cap * 2 : 16); }

int kin__hmap_reserve(kin__hmap *m, size_t n) {
  size_t ncap = m->cap ? m->cap : 16;
  while (n * 4 > ncap * 3) {
    if (ncap > SIZE_MAX / 2 / sizeof(kin__hmap_entry)) return KIN_ENOMEM;
    ncap *= 2;
  }
  return ncap == m->cap ? 0 : resize(m, ncap);
}

int kin__hmap_put_h(kin__hmap *m, const char *key, size_t n, uint64_t h, void *val, void **old) {
  kin__hmap_entry *e = find(m, key, n, h);
  if (e) {
    if (old) *old = e->val;
    e->val = val;
    if (m->borrowed) e->key = (char *)key; /* the new value's own copy of the key */
    return 0;
  }
  if (n > UINT32_MAX) return KIN_EINVAL;
  /* load factor at most 3/4 */
  if ((m->len + 1) * 4 > m->cap * 3 && grow(m) < 0) return KIN_ENOMEM;
  char *k = (char *)key;
  if (!m->borrowed) {
    if (!(k = malloc(n + 1))) return KIN_ENOMEM;
    memcpy(k, key, n + 1);
  }
  m->probes += place(m->slots, m->cap, m->seed, (kin__hmap_entry){k, val, (uint32_t)h, (uint32_t)n});
  m->len++;
  return 1;
}

int kin__hmap_put(kin__hmap *m, const char *key, void *val, void **old) {
  size_t n = strlen(key);
  return kin__hmap_put_h(m, key, n, kin__hash(key, n), val, old);
}

int kin__hmap_del(kin__hmap *m, const char *key, void **old) {
  if (m->cap == 0) return 0;
  size_t n = strlen(key);
  return kin__hmap_del_h(m, key, n, kin__hash(key, n), old);
}

int kin__hmap_del_h(kin__hmap *m, const char *key, size_t n, uint64_t h, void **old) {
  kin__hmap_entry *e = find(m, key, n, h);
  if (!e) return 0;
  if (old) *old = e->val;
  if (!m->borrowed) free(e->key);
  size_t mask = m->cap - 1;
  size_t i = (size_t)(e - m->slots);
  /* Backward shift: pull later entries of the probe run into the hole when
   * their home slot does not lie strictly between the hole and them. */
  for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
    if (!m->slots[j].key) break;
    size_t home = home_of(m->seed, m->slots[j].hash, mask);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      m->slots[i] = m->slots[j];
      i = j;
    }
  }
  m->slots[i].key = NULL;
  m->slots[i].val = NULL;
  m->len--;
  return 1;
}

kin__hmap_entry *kin__hmap_next(const kin__hmap *m, size_t *pos) {
  for (size_t i = *pos; i < m->cap; i++) {
    if (m->slots[i].key) {
      *pos = i + 1;
      return &m->slots[i];
    }
  }
  *pos = m->cap;
  return NULL;
}

