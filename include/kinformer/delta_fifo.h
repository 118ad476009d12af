/* delta_fifo.h -- client-go's DeltaFIFO (tools/cache/delta_fifo.go) with
 * EmitDeltaTypeReplaced on.
 *
 * A queue of keys; each key carries the ordered list of deltas (Added,
 * Updated, Deleted, Replaced, Sync) that happened to its object since it was
 * last popped. A key keeps its place in the queue while more deltas
 * accumulate for it. knownObjects (normally the informer's indexer) lets
 * Replace and Resync see what the consumer already has.
 *
 * Thread-safe: one mutex guards the items map, the key queue and the
 * population counters. Pop calls the process function with that mutex held
 * (as client-go does), so processing is atomic with respect to Resync and
 * Replace; the process function must not call back into the FIFO. */
#ifndef KIN_DELTA_FIFO_H
#define KIN_DELTA_FIFO_H

#include <stddef.h>

#include "kobj.h"

typedef enum {
  KIN_DELTA_ADDED = 1,
  KIN_DELTA_UPDATED,
  KIN_DELTA_DELETED,
  KIN_DELTA_REPLACED,
  KIN_DELTA_SYNC
} kin_delta_type;

/* Returns "Added", "Updated", ... */
const char *kin_delta_type_name(kin_delta_type t);

typedef struct {
  kin_delta_type type;
  kin_obj *obj; /* a reference owned by the deltas list */
} kin_delta;

typedef struct {
  kin_delta *v;
  size_t len, cap;
} kin_deltas;

/* Releases every object reference and the array. */
void kin_deltas_free(kin_deltas *d);

/* What the consumer already holds (the indexer). get returns a new
 * reference or NULL; list_keys calls fn for every key and stops early when
 * fn returns non-zero (returning that value). */
typedef struct {
  void *ud;
  int (*list_keys)(void *ud, int (*fn)(void *ctx, const char *key), void *ctx);
  kin_obj *(*get)(void *ud, const char *key);
} kin_key_lister;

/* Transform applied to every object on enqueue (not to tombstones): takes
 * a borrowed in and returns 0 with a new reference in *out (which may be
 * kin_obj_ref(in)), or a negative error to refuse the object (the call
 * that enqueued it then fails and queues nothing). It runs with the FIFO
 * locked, as in client-go, so it must be quick and must not call back into
 * the FIFO. It runs on the enqueuing thread: the reflector's thread (which
 * applies watch events the IO thread decoded; never the IO thread itself)
 * or the informer's resync thread. */
typedef int (*kin_transform_fn)(void *ud, kin_obj *in, kin_obj **out);

typedef struct {
  kin_key_lister known_objects; /* list_keys NULL: none */
  kin_transform_fn transform;   /* NULL: none */
  void *transform_ud;
} kin_delta_fifo_config;

typedef struct kin_delta_fifo kin_delta_fifo;

int kin_delta_fifo_new(const kin_delta_fifo_config *cfg, kin_delta_fifo **out);
/* Frees the FIFO and every queued delta. No thread may be in Pop. */
void kin_delta_fifo_free(kin_delta_fifo *f);

/* Queue an Added / Updated / Deleted delta for obj (borrowed; the FIFO
 * takes its own reference). Delete of a key neither queued nor known is
 * dropped; two consecutive Deleted collapse into one. Return 0,
 * KIN_ECLOSED after close, KIN_ENOMEM, or the transform's error. */
int kin_delta_fifo_add(kin_delta_fifo *f, kin_obj *obj);
int kin_delta_fifo_update(kin_delta_fifo *f, kin_obj *obj);
int kin_delta_fifo_delete(kin_delta_fifo *f, kin_obj *obj);

/* Replace the whole set with the n listed objects (borrowed): each is
 * queued as Replaced; keys queued or known but not listed get a Deleted
 * tombstone. resource_version is informational (may be NULL). */
int kin_delta_fifo_replace(kin_delta_fifo *f, kin_obj *const *objs, size_t n,
                           const char *resource_version);

/* Queue a Sync delta for every known key that has nothing queued. */
int kin_delta_fifo_resync(kin_delta_fifo *f);

/* Called by Pop with the FIFO locked; the deltas stay owned by the FIFO
 * (take references to keep objects). Its return value is Pop's. */
typedef int (*kin_delta_process_fn)(void *ud, const char *key, const kin_deltas *d,
                                    int is_in_initial_list);

/* Blocks until a key is queued, removes it and calls process on its deltas.
 * Returns process's result, or KIN_ECLOSED once the FIFO is closed and
 * empty (keys queued before Close are still handed out, as in client-go). */
int kin_delta_fifo_pop(kin_delta_fifo *f, kin_delta_process_fn process, void *ud);

/* The most keys one kin_delta_fifo_pop_batch hands out. */
#define KIN_DELTA_FIFO_BATCH_MAX 256

/* Pop for a busy consumer: blocks until a key is queued, then removes up
 * to max keys (at most KIN_DELTA_FIFO_BATCH_MAX; 0 means that) in queue
 * order under one hold of the FIFO's lock, calling process on each exactly
 * as kin_delta_fifo_pop would (is_in_initial_list computed per key), then
 * batch_end(ud) once (may be NULL), still locked, so the consumer can hand
 * the batch on with one wake-up. HasSynced turns true no earlier than the
 * end of the batch that pops the last key of the initial list. The deltas
 * are freed after the lock is released. Returns 0 when every process call
 * returned 0, else the first non-zero result (the rest of the batch is
 * processed all the same), KIN_ECLOSED once closed and empty, KIN_EINVAL.
 * Thread-safe; meant for one consumer thread. */
int kin_delta_fifo_pop_batch(kin_delta_fifo *f, size_t max, kin_delta_process_fn process,
                             void (*batch_end)(void *ud), void *ud);

/* Wakes every Pop waiting on an empty FIFO (they return KIN_ECLOSED) and
 * makes add/update/delete/replace/resync return KIN_ECLOSED. */
void kin_delta_fifo_close(kin_delta_fifo *f);
int kin_delta_fifo_is_closed(kin_delta_fifo *f);

/* True once the first Replace (or any add/update/delete before it) was
 * made and every item of that initial population has been popped. */
int kin_delta_fifo_has_synced(kin_delta_fifo *f);

/* Number of queued keys. */
size_t kin_delta_fifo_len(kin_delta_fifo *f);

/* Copies the deltas queued for key into *out (new references; free with
 * kin_deltas_free). Returns 0 or KIN_ENOENT. */
int kin_delta_fifo_get(kin_delta_fifo *f, const char *key, kin_deltas *out);

/* Calls fn for every queued key in queue order, lock held; stops when fn
 * returns non-zero and returns that value. */
int kin_delta_fifo_list_keys(kin_delta_fifo *f, int (*fn)(void *ctx, const char *key),
                             void *ctx);

/* The newest object of a deltas list (borrowed), or NULL when empty. */
kin_obj *kin_deltas_newest(const kin_deltas *d);

#endif
