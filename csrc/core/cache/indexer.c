/* indexer.c -- client-go's threadSafeMap + storeIndex
 * (tools/cache/thread_safe_store.go) behind the Indexer API: the locking,
 * lifecycle, writes and reads. The data itself (index values, index sets,
 * the items + indexes writes) is in indexer_index.c, declared in
 * indexer_int.h.
 *
 * Layout: items maps key -> kin_obj (one reference each); every index maps
 * an index value -> set of keys, a kin__hmap whose values are the objects
 * themselves (borrowed from items), so ByIndex need not look each key up
 * again. An empty set is removed at once, as client-go does since
 * kubernetes/kubernetes#84959, so high-cardinality indexes do not leak.
 *
 * Cost: ByIndex / IndexKeys look up one set and visit only its keys, so they
 * are O(result) whatever the store size; Index is O(result) per value of the
 * probe object. Add/Update/Delete are O(index values of the object). Only
 * List, ListKeys, Replace and AddIndex are O(store).
 *
 * Locking: two locks so readers are never held up by index functions.
 *   write_mu  serializes writers. A writer holding it may read defs and data
 *             without the rwlock (nobody else writes them), computes index
 *             values and builds Replace's new data without blocking readers.
 *   lock      a reader-writer lock: readers take it shared; a writer takes it
 *             exclusive only for the moment it changes defs or data.
 * So defs and data change only under write_mu + lock (exclusive), and are
 * read under either. The rwlock prefers writers, as Go's RWMutex does, so
 * a stream of readers (workers listing by namespace) cannot starve the
 * informer thread. The price is that nothing may take the read lock twice;
 * hence no callback (foreach, the DeltaFIFO's list_keys, index functions)
 * ever runs with the read lock held: they see snapshots, and index
 * functions run before the lock is taken. An index function may therefore
 * read the store, but not write it (write_mu is held when a writer calls).
 *
 * Atomicity: every index value of the new (and old) object is computed
 * before anything changes, so an index function error leaves the store as it
 * was; an allocation failure half-way through an update is undone. */
#include "indexer.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "indexer_int.h"
#include "kin.h"

struct kin_indexer {
  pthread_mutex_t write_mu; /* serializes writers (see top of file) */
  pthread_rwlock_t lock;    /* guards defs, ndefs and data against readers */
  kin__index_def *defs;
  size_t ndefs;
  kin__store_data data;
};

/* ---- lifecycle ----------------------------------------------------------- */

int kin_indexer_new(kin_indexer **out) {
  kin_indexer *s = calloc(1, sizeof(*s));
  if (!s) return KIN_ENOMEM;
  if (kin__data_init(&s->data, 0) < 0) {
    free(s);
    return KIN_ENOMEM;
  }
  pthread_mutex_init(&s->write_mu, NULL);
  pthread_rwlockattr_t attr;
  pthread_rwlockattr_init(&attr);
  pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&s->lock, &attr);
  pthread_rwlockattr_destroy(&attr);
  int r = kin_indexer_add_index(s, KIN_INDEX_NAMESPACE, kin_index_by_namespace, NULL, NULL);
  if (r < 0) {
    kin_indexer_free(s);
    return r;
  }
  *out = s;
  return 0;
}

void kin_indexer_free(kin_indexer *s) {
  if (!s) return;
  kin__data_free(&s->data, s->ndefs);
  for (size_t i = 0; i < s->ndefs; i++) {
    if (s->defs[i].ud_free) s->defs[i].ud_free(s->defs[i].ud);
    free(s->defs[i].name);
  }
  free(s->defs);
  pthread_rwlock_destroy(&s->lock);
  pthread_mutex_destroy(&s->write_mu);
  free(s);
}

/* client-go's AddIndexers for one index. The new index is built from the
 * current items under write_mu alone; readers see it appear at once. On
 * failure nothing is registered and ud is left to the caller (ud_free is
 * not called). */
int kin_indexer_add_index(kin_indexer *s, const char *name, kin_index_func fn, void *ud,
                          void (*ud_free)(void *)) {
  if (!s || !name || !fn) return KIN_EINVAL;
  kin__index_def def = {NULL, fn, ud, ud_free};
  kin__hmap index;
  kin__hmap_init(&index);
  kin__vals v;
  kin__vals_init(&v);
  kin__index_def *ndefs = NULL;
  kin__hmap *nind = NULL;
  int r = 0;

  pthread_mutex_lock(&s->write_mu);
  for (size_t i = 0; i < s->ndefs; i++)
    if (strcmp(s->defs[i].name, name) == 0) {
      r = KIN_EEXIST;
      goto out;
    }
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&s->data.items, &pos))) {
    kin__vals_reset(&v);
    if ((r = kin__vals_run(&v, &def, e->val)) < 0) goto out;
    for (size_t j = 0; j < v.n; j++)
      if ((r = kin__index_add(&index, kin__vals_at(&v, j), e->key, e->val)) < 0) goto out;
  }
  /* New arrays are filled here and swapped in under the lock, so nothing
   * can fail while readers are held up. */
  def.name = strdup(name);
  ndefs = malloc((s->ndefs + 1) * sizeof(*ndefs));
  nind = malloc((s->ndefs + 1) * sizeof(*nind));
  if (!def.name || !ndefs || !nind) {
    r = KIN_ENOMEM;
    goto out;
  }
  if (s->ndefs) {
    memcpy(ndefs, s->defs, s->ndefs * sizeof(*ndefs));
    memcpy(nind, s->data.indices, s->ndefs * sizeof(*nind));
  }
  ndefs[s->ndefs] = def;
  nind[s->ndefs] = index;
  kin__index_def *odefs = s->defs;
  kin__hmap *oind = s->data.indices;
  pthread_rwlock_wrlock(&s->lock);
  s->defs = ndefs;
  s->data.indices = nind;
  s->ndefs++;
  pthread_rwlock_unlock(&s->lock);
  pthread_mutex_unlock(&s->write_mu);
  free(odefs);
  free(oind);
  kin__vals_free(&v);
  return 0;

out:
  pthread_mutex_unlock(&s->write_mu);
  free(def.name);
  free(ndefs);
  free(nind);
  kin__index_free(&index);
  kin__vals_free(&v);
  return r;
}

/* ---- writes -------------------------------------------------------------- */

int kin_indexer_add(kin_indexer *s, kin_obj *obj) { return kin_indexer_update(s, obj); }

/* client-go's Update (Add is the same): the old object's index entries are
 * replaced by the new one's. obj is borrowed; the store takes a reference. */
int kin_indexer_update(kin_indexer *s, kin_obj *obj) {
  if (!s || !obj || !kin_obj_key(obj)) return KIN_EINVAL;
  const char *key = kin_obj_key(obj);
  kin__vals nv, ov;
  kin__vals_init(&nv);
  kin__vals_init(&ov);
  kin_obj *old = NULL;

  pthread_mutex_lock(&s->write_mu);
  void **p = kin__hmap_get(&s->data.items, key);
  kin_obj *cur = p ? *p : NULL;
  int r = kin__vals_all(&nv, s->defs, s->ndefs, obj);
  if (r == 0 && cur) r = kin__vals_all(&ov, s->defs, s->ndefs, cur);
  if (r == 0) {
    kin_obj_ref(obj);
    pthread_rwlock_wrlock(&s->lock);
    r = kin__data_set(&s->data, s->ndefs, key, obj, cur ? &ov : NULL, &nv, &old);
    pthread_rwlock_unlock(&s->lock);
    if (r < 0) kin_obj_unref(obj);
  }
  pthread_mutex_unlock(&s->write_mu);

  kin_obj_unref(old); /* may free a large object: outside every lock */
  kin__vals_free(&nv);
  kin__vals_free(&ov);
  return r;
}

/* client-go's Delete: removes whatever is stored under obj's key (obj may
 * be a tombstone); a key not in the store is not an error. */
int kin_indexer_delete(kin_indexer *s, kin_obj *obj) {
  if (!s || !obj || !kin_obj_key(obj)) return KIN_EINVAL;
  const char *key = kin_obj_key(obj);
  kin__vals ov;
  kin__vals_init(&ov);
  kin_obj *old = NULL;
  int r = 0;

  pthread_mutex_lock(&s->write_mu);
  void **p = kin__hmap_get(&s->data.items, key);
  if (p) {
    r = kin__vals_all(&ov, s->defs, s->ndefs, *p);
    if (r == 0) {
      pthread_rwlock_wrlock(&s->lock);
      kin__data_set(&s->data, s->ndefs, key, NULL, &ov, NULL, &old);
      pthread_rwlock_unlock(&s->lock);
    }
  }
  pthread_mutex_unlock(&s->write_mu);

  kin_obj_unref(old);
  kin__vals_free(&ov);
  return r;
}

/* client-go's Replace: the new items and every index are built aside and
 * swapped in, so readers see either the old or the new content and a
 * failure leaves the store unchanged. The objects are borrowed; a key
 * listed twice keeps the later object. */
int kin_indexer_replace(kin_indexer *s, kin_obj *const *objs, size_t n) {
  if (!s || (n && !objs)) return KIN_EINVAL;
  for (size_t k = 0; k < n; k++)
    if (!objs[k] || !kin_obj_key(objs[k])) return KIN_EINVAL;
  kin__vals nv, ov;
  kin__vals_init(&nv);
  kin__vals_init(&ov);
  kin__store_data nd;

  pthread_mutex_lock(&s->write_mu);
  size_t ndefs = s->ndefs;
  int r = kin__data_init(&nd, ndefs);
  if (r == 0) r = kin__hmap_reserve(&nd.items, n); /* one table, no doubling */
  for (size_t k = 0; r == 0 && k < n; k++) {
    kin_obj *dup = NULL;
    r = kin__data_put(&nd, s->defs, ndefs, objs[k], &nv, &ov, &dup);
    kin_obj_unref(dup);
  }
  if (r == 0) {
    kin__store_data od = s->data;
    pthread_rwlock_wrlock(&s->lock);
    s->data = nd;
    pthread_rwlock_unlock(&s->lock);
    nd = od; /* freed below, outside the write lock */
  }
  pthread_mutex_unlock(&s->write_mu);

  kin__data_free(&nd, ndefs);
  kin__vals_free(&nv);
  kin__vals_free(&ov);
  return r;
}

/* ---- reads --------------------------------------------------------------- */

kin_obj *kin_indexer_get(kin_indexer *s, const char *key) {
  if (!s || !key) return NULL;
  pthread_rwlock_rdlock(&s->lock);
  void **p = kin__hmap_get(&s->data.items, key);
  kin_obj *o = p ? kin_obj_ref(*p) : NULL;
  pthread_rwlock_unlock(&s->lock);
  return o;
}

int kin_indexer_reserve(kin_indexer *s, size_t n) {
  if (!s) return KIN_EINVAL;
  pthread_mutex_lock(&s->write_mu);
  pthread_rwlock_wrlock(&s->lock); /* the table readers probe moves */
  int r = kin__hmap_reserve(&s->data.items, n);
  pthread_rwlock_unlock(&s->lock);
  pthread_mutex_unlock(&s->write_mu);
  return r;
}

size_t kin_indexer_len(kin_indexer *s) {
  pthread_rwlock_rdlock(&s->lock);
  size_t n = kin__hmap_len(&s->data.items);
  pthread_rwlock_unlock(&s->lock);
  return n;
}

/* Result arrays are never NULL on success, even when empty. */
static void *alloc_list(size_t n, size_t el) { return malloc((n ? n : 1) * el); }

/* Returns a malloc'd array of new references to every object. */
int kin_indexer_list(kin_indexer *s, kin_obj ***out, size_t *n) {
  pthread_rwlock_rdlock(&s->lock);
  size_t cnt = kin__hmap_len(&s->data.items), k = 0;
  kin_obj **arr = alloc_list(cnt, sizeof(*arr));
  if (arr) {
    size_t pos = 0;
    kin__hmap_entry *e;
    while ((e = kin__hmap_next(&s->data.items, &pos))) arr[k++] = kin_obj_ref(e->val);
  }
  pthread_rwlock_unlock(&s->lock);
  if (!arr) return KIN_ENOMEM;
  *out = arr;
  *n = k;
  return 0;
}

/* Copies the keys of map m into a malloc'd array of malloc'd strings.
 * Returns 0 or KIN_ENOMEM with nothing allocated. */
static int copy_keys(const kin__hmap *m, char ***out, size_t *n) {
  size_t cnt = m ? kin__hmap_len(m) : 0, k = 0;
  char **arr = alloc_list(cnt, sizeof(*arr));
  if (!arr) return KIN_ENOMEM;
  size_t pos = 0;
  kin__hmap_entry *e;
  while (m && (e = kin__hmap_next(m, &pos))) {
    if (!(arr[k] = strdup(e->key))) {
      kin_str_list_free(arr, k);
      return KIN_ENOMEM;
    }
    k++;
  }
  *out = arr;
  *n = k;
  return 0;
}

int kin_indexer_list_keys(kin_indexer *s, char ***out, size_t *n) {
  pthread_rwlock_rdlock(&s->lock);
  int r = copy_keys(&s->data.items, out, n);
  pthread_rwlock_unlock(&s->lock);
  return r;
}

/* Position of index name in defs, or -1. Caller holds a lock. */
static long find_def(const kin_indexer *s, const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < s->ndefs; i++)
    if (strcmp(s->defs[i].name, name) == 0) return (long)i;
  return -1;
}

/* Index i's set for value, or NULL. Caller holds a lock. */
static kin__hmap *find_set(const kin_indexer *s, size_t i, const char *value) {
  void **p = kin__hmap_get(&s->data.indices[i], value);
  return p ? *p : NULL;
}

/* Appends new references to the objects of set to arr (which has room) at
 * *k, skipping keys already in seen (when seen is not NULL). Returns 0 or
 * KIN_ENOMEM. Caller holds a lock. */
static int collect(const kin_indexer *s, const kin__hmap *set, kin__hmap *seen, kin_obj **arr,
                   size_t *k) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(set, &pos))) {
    if (seen) {
      int r = kin__hmap_put(seen, e->key, NULL, NULL);
      if (r < 0) return r;
      if (r == 0) continue;
    }
    arr[(*k)++] = kin_obj_ref(e->val);
  }
  return 0;
}

/* client-go's Index: the objects sharing at least one of obj's values of
 * index name, each once. obj is borrowed and need not be in the store. */
int kin_indexer_index(kin_indexer *s, const char *name, const kin_obj *obj, kin_obj ***out,
                      size_t *n) {
  if (!s || !obj) return KIN_EINVAL;
  kin__vals v;
  kin__vals_init(&v);
  kin__hmap seen;
  kin__hmap_init(&seen);
  kin_obj **arr = NULL;
  size_t k = 0;
  int r;

  /* defs are only ever appended, and an entry never changes: a copy taken
   * under the lock stays valid, and the index function runs unlocked. */
  pthread_rwlock_rdlock(&s->lock);
  long i = find_def(s, name);
  kin__index_def def;
  if (i >= 0) def = s->defs[i];
  pthread_rwlock_unlock(&s->lock);
  if (i < 0) return KIN_ENOENT;
  if ((r = kin__vals_run(&v, &def, obj)) < 0) {
    kin__vals_free(&v);
    return r;
  }

  pthread_rwlock_rdlock(&s->lock);
  size_t cap = 0;
  for (size_t j = 0; j < v.n; j++) {
    kin__hmap *set = find_set(s, (size_t)i, kin__vals_at(&v, j));
    if (set) cap += kin__hmap_len(set);
  }
  if (!(arr = alloc_list(cap, sizeof(*arr)))) {
    r = KIN_ENOMEM;
    goto out;
  }
  for (size_t j = 0; j < v.n && r == 0; j++) {
    kin__hmap *set = find_set(s, (size_t)i, kin__vals_at(&v, j));
    if (set) r = collect(s, set, v.n > 1 ? &seen : NULL, arr, &k);
  }
out:
  pthread_rwlock_unlock(&s->lock);
  kin__hmap_free(&seen);
  kin__vals_free(&v);
  if (r < 0) {
    if (arr) kin_obj_list_free(arr, k);
    return r;
  }
  *out = arr;
  *n = k;
  return 0;
}

/* client-go's ByIndex: visits only the set for value, never the store. */
int kin_indexer_by_index(kin_indexer *s, const char *name, const char *value, kin_obj ***out,
                         size_t *n) {
  if (!s || !value) return KIN_EINVAL;
  int r = 0;
  size_t k = 0;
  kin_obj **arr = NULL;
  pthread_rwlock_rdlock(&s->lock);
  long i = find_def(s, name);
  if (i < 0) {
    r = KIN_ENOENT;
  } else {
    kin__hmap *set = find_set(s, (size_t)i, value);
    arr = alloc_list(set ? kin__hmap_len(set) : 0, sizeof(*arr));
    if (!arr)
      r = KIN_ENOMEM;
    else if (set)
      collect(s, set, NULL, arr, &k);
  }
  pthread_rwlock_unlock(&s->lock);
  if (r < 0) return r;
  *out = arr;
  *n = k;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* client-go's IndexKeys; the keys come sorted, as sets.List gives them. */
int kin_indexer_index_keys(kin_indexer *s, const char *name, const char *value, char ***out,
                           size_t *n) {
  if (!s || !value) return KIN_EINVAL;
  int r;
  pthread_rwlock_rdlock(&s->lock);
  long i = find_def(s, name);
  if (i < 0)
    r = KIN_ENOENT;
  else
    r = copy_keys(find_set(s, (size_t)i, value), out, n);
  pthread_rwlock_unlock(&s->lock);
  if (r == 0) qsort(*out, *n, sizeof(char *), cmp_str);
  return r;
}

/* client-go's ListIndexFuncValues: values with a non-empty set only, since
 * empty sets are dropped. */
int kin_indexer_list_index_func_values(kin_indexer *s, const char *name, char ***out,
                                       size_t *n) {
  if (!s) return KIN_EINVAL;
  int r;
  pthread_rwlock_rdlock(&s->lock);
  long i = find_def(s, name);
  if (i < 0)
    r = KIN_ENOENT;
  else
    r = copy_keys(&s->data.indices[i], out, n);
  pthread_rwlock_unlock(&s->lock);
  return r;
}

/* Runs over a snapshot (client-go's callers range over List() too), so fn
 * holds no lock and may use the store. */
int kin_indexer_foreach(kin_indexer *s, int (*fn)(void *ctx, kin_obj *obj), void *ctx) {
  kin_obj **objs;
  size_t n;
  int r = kin_indexer_list(s, &objs, &n);
  if (r < 0) return r;
  for (size_t i = 0; i < n && r == 0; i++) r = fn(ctx, objs[i]);
  kin_obj_list_free(objs, n);
  return r;
}

/* ---- the DeltaFIFO's knownObjects ----------------------------------------
 * list_keys works on a snapshot (as client-go's ListKeys returns a copy), so
 * the FIFO's callback runs with no indexer lock held. The key of a stored
 * object is its own kin_obj_key, so references stand in for key copies. */
static int lister_list_keys(void *ud, int (*fn)(void *ctx, const char *key), void *ctx) {
  kin_obj **objs;
  size_t n;
  int r = kin_indexer_list(ud, &objs, &n);
  if (r < 0) return r;
  for (size_t i = 0; i < n && r == 0; i++) r = fn(ctx, kin_obj_key(objs[i]));
  kin_obj_list_free(objs, n);
  return r;
}

static kin_obj *lister_get(void *ud, const char *key) { return kin_indexer_get(ud, key); }

kin_key_lister kin_indexer_key_lister(kin_indexer *s) {
  kin_key_lister l = {s, lister_list_keys, lister_get};
  return l;
}

void kin_obj_list_free(kin_obj **objs, size_t n) {
  if (!objs) return;
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
  free(objs);
}

void kin_str_list_free(char **strs, size_t n) {
  if (!strs) return;
  for (size_t i = 0; i < n; i++) free(strs[i]);
  free(strs);
}
