/* indexer.h -- client-go's Indexer over a ThreadSafeStore
 * (tools/cache/store.go, index.go, thread_safe_store.go).
 *
 * Maps keys ("ns/name" or "name") to objects and keeps indexes: the
 * built-in "namespace" index and custom ones registered as C callbacks that
 * map an object to 0..n values.
 *
 * Thread-safe: a reader-writer lock guards the items and every index, so
 * any thread reads while the informer thread writes; a writer runs index
 * functions before taking it, so readers only wait for the change itself.
 * The lock prefers writers (as Go's RWMutex), and no callback of this API
 * runs while it is held. Objects handed out are new references.
 * ByIndex / IndexKeys cost O(result), not O(store) (see indexer.c). */
#ifndef KIN_INDEXER_H
#define KIN_INDEXER_H

#include <stddef.h>

#include "delta_fifo.h"
#include "kobj.h"

typedef struct kin_indexer kin_indexer;

#define KIN_INDEX_NAMESPACE "namespace"

/* An index function calls emit(ctx, value) for each index value of obj
 * (emit copies value; a value emitted twice counts once) and returns 0, or
 * a negative error when obj cannot be indexed (the store operation then
 * fails with that error). It must give the same values for the same object
 * every time, and may read the indexer but never write to it. */
typedef int (*kin_index_emit_fn)(void *ctx, const char *value);
typedef int (*kin_index_func)(void *ud, const kin_obj *obj, kin_index_emit_fn emit,
                              void *ctx);

/* Ready-made index functions. */
int kin_index_by_namespace(void *ud, const kin_obj *obj, kin_index_emit_fn emit, void *ctx);
/* ud is the label key (a string that must outlive the index); value is the
 * label's value, none when the label is absent. */
int kin_index_by_label(void *ud, const kin_obj *obj, kin_index_emit_fn emit, void *ctx);
/* The controller owner's uid, none when there is no controller owner. */
int kin_index_by_controller_uid(void *ud, const kin_obj *obj, kin_index_emit_fn emit,
                                void *ctx);

/* Returns a new, empty indexer with the "namespace" index, or KIN_ENOMEM. */
int kin_indexer_new(kin_indexer **out);
void kin_indexer_free(kin_indexer *s);

/* Registers index name. If the store already holds objects they are
 * indexed at once. ud_free (may be NULL) is called on ud when the indexer
 * is freed; on failure nothing is registered and ud stays the caller's.
 * Returns 0, KIN_EEXIST or the index function's error. */
int kin_indexer_add_index(kin_indexer *s, const char *name, kin_index_func fn, void *ud,
                          void (*ud_free)(void *));

/* Store operations; obj is borrowed (the store takes its own reference).
 * Delete removes the object's key (a tombstone's key works); a key not in
 * the store is not an error. An index function's error fails the operation
 * and leaves the store unchanged. */
int kin_indexer_add(kin_indexer *s, kin_obj *obj);
int kin_indexer_update(kin_indexer *s, kin_obj *obj);
int kin_indexer_delete(kin_indexer *s, kin_obj *obj);
/* Replaces every object with the n given and rebuilds every index,
 * atomically for readers; of a key listed twice the later object wins. */
int kin_indexer_replace(kin_indexer *s, kin_obj *const *objs, size_t n);

/* Sizes the store for n objects, so that adding them one by one (an
 * informer's initial list) allocates one table instead of a doubling
 * series. A hint: never shrinks. Returns 0, KIN_EINVAL (s NULL) or
 * KIN_ENOMEM with the store unchanged. Thread-safe (readers wait while the
 * table is rebuilt). */
int kin_indexer_reserve(kin_indexer *s, size_t n);

/* Returns a new reference to the object under key, or NULL. */
kin_obj *kin_indexer_get(kin_indexer *s, const char *key);
size_t kin_indexer_len(kin_indexer *s);

/* Lists: on success *out is a malloc'd array (never NULL, even when *n is
 * 0) of *n new references (free with kin_obj_list_free) or of *n malloc'd
 * strings (kin_str_list_free). Order is unspecified except for IndexKeys,
 * which is sorted as client-go's is. */
int kin_indexer_list(kin_indexer *s, kin_obj ***out, size_t *n);
int kin_indexer_list_keys(kin_indexer *s, char ***out, size_t *n);
/* Objects sharing an index value with obj. KIN_ENOENT: no such index. */
int kin_indexer_index(kin_indexer *s, const char *name, const kin_obj *obj,
                      kin_obj ***out, size_t *n);
/* Objects / keys whose index name has value. KIN_ENOENT: no such index. */
int kin_indexer_by_index(kin_indexer *s, const char *name, const char *value,
                         kin_obj ***out, size_t *n);
int kin_indexer_index_keys(kin_indexer *s, const char *name, const char *value,
                           char ***out, size_t *n);
/* Every value index name currently has. KIN_ENOENT: no such index. */
int kin_indexer_list_index_func_values(kin_indexer *s, const char *name, char ***out,
                                       size_t *n);

/* Calls fn on every object of a snapshot taken at the call (no lock is
 * held during fn, which may use the store); stops at the first non-zero
 * return and returns it. */
int kin_indexer_foreach(kin_indexer *s, int (*fn)(void *ctx, kin_obj *obj), void *ctx);

/* The indexer seen as a DeltaFIFO's knownObjects. */
kin_key_lister kin_indexer_key_lister(kin_indexer *s);

void kin_obj_list_free(kin_obj **objs, size_t n);
void kin_str_list_free(char **strs, size_t n);

#endif
