/* indexer_int.h -- internal: the indexer's data (client-go's storeIndex:
 * items, index definitions, index value sets, an object's index values),
 * kept in indexer_index.c and used by indexer.c (the locking and the
 * Indexer API). Nothing here locks: indexer.c calls these with write_mu
 * held, and with the rwlock exclusive whenever the data it passes is the
 * store's own (see the top of indexer.c). */
#ifndef KIN_INDEXER_INT_H
#define KIN_INDEXER_INT_H

#include <stddef.h>

#include "hmap.h"
#include "indexer.h"

typedef struct {
  char *name;
  kin_index_func fn;
  void *ud;
  void (*ud_free)(void *);
} kin__index_def;

/* items and the sets borrow each key from its object (kin_obj_key): no
 * copy per object and per index. */
typedef struct {
  kin__hmap items;    /* key -> kin_obj* (a reference held by the store) */
  kin__hmap *indices; /* one per def: index value -> kin__hmap* set, which
                         maps key -> the kin_obj* items holds for it */
} kin__store_data;

/* ---- index values of one object ------------------------------------------
 * The values an index function emits, copied into one buffer. Values of
 * several indexes sit one after the other; seg[i]..seg[i+1] is index i's
 * range of off[]. Each range is sorted and deduplicated, so membership is a
 * binary search and an object emitting a value twice is indexed once. Small
 * inline buffers avoid malloc for the usual one value per index. Not to be
 * copied (points into itself). */
typedef struct {
  char *buf;
  size_t len, cap;
  size_t *off;
  size_t n, ocap;
  size_t *seg;
  size_t scap;
  int err; /* an emit that failed, in case the index function ignored it */
  char ibuf[256];
  size_t ioff[8];
  size_t iseg[6];
} kin__vals;

/* Empty values using the inline buffers; kin__vals_free releases them. */
void kin__vals_init(kin__vals *v);
/* Empties v, keeping its buffers. */
void kin__vals_reset(kin__vals *v);
void kin__vals_free(kin__vals *v);
/* Value j of v. */
static inline const char *kin__vals_at(const kin__vals *v, size_t j) { return v->buf + v->off[j]; }
/* Appends def's values for obj as one sorted, deduplicated range. Returns 0
 * or the index function's (or an emit's) error. */
int kin__vals_run(kin__vals *v, const kin__index_def *def, const kin_obj *obj);
/* Computes obj's values for every def into v (reset first). */
int kin__vals_all(kin__vals *v, const kin__index_def *defs, size_t ndefs, const kin_obj *obj);

/* Adds key (whose object is obj) to index's set for value, creating the
 * set. Returns 0 or KIN_ENOMEM with the index unchanged. */
int kin__index_add(kin__hmap *index, const char *value, const char *key, kin_obj *obj);
/* Frees every set of index and the index itself (not the objects). */
void kin__index_free(kin__hmap *index);

/* Initialises empty data with ndefs indexes. Returns 0 or KIN_ENOMEM. */
int kin__data_init(kin__store_data *d, size_t ndefs);
/* Releases every object reference, every index and the arrays. */
void kin__data_free(kin__store_data *d, size_t ndefs);
/* Stores obj under key (taking over the caller's reference) or, obj NULL,
 * deletes key, keeping the indexes in step; see indexer_index.c. */
int kin__data_set(kin__store_data *d, size_t ndefs, const char *key, kin_obj *obj,
                  const kin__vals *ov, const kin__vals *nv, kin_obj **old);
/* Stores obj (borrowed; d takes a reference) in d, computing index values
 * with nv / ov as scratch. On success the object it replaced goes to *old. */
int kin__data_put(kin__store_data *d, const kin__index_def *defs, size_t ndefs, kin_obj *obj,
                  kin__vals *nv, kin__vals *ov, kin_obj **old);

#endif
