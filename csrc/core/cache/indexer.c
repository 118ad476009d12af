/* indexer.c -- client-go's threadSafeMap + storeIndex
 * (tools/cache/thread_safe_store.go) behind the Indexer API.
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
#include "kin.h"

typedef struct {
  char *name;
  kin_index_func fn;
  void *ud;
  void (*ud_free)(void *);
} kin__index_def;

typedef struct {
  kin__hmap items;    /* key -> kin_obj* (a reference held by the store) */
  kin__hmap *indices; /* one per def: index value -> kin__hmap* set, which
                         maps key -> the kin_obj* items holds for it */
} kin__store_data;

struct kin_indexer {
  pthread_mutex_t write_mu; /* serializes writers (see top of file) */
  pthread_rwlock_t lock;    /* guards defs, ndefs and data against readers */
  kin__index_def *defs;
  size_t ndefs;
  kin__store_data data;
};

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

static void vals_init(kin__vals *v) {
  v->buf = v->ibuf;
  v->cap = sizeof(v->ibuf);
  v->off = v->ioff;
  v->ocap = sizeof(v->ioff) / sizeof(v->ioff[0]);
  v->seg = v->iseg;
  v->scap = sizeof(v->iseg) / sizeof(v->iseg[0]);
  v->len = v->n = 0;
  v->err = 0;
  v->seg[0] = 0;
}

static void vals_reset(kin__vals *v) {
  v->len = v->n = 0;
  v->err = 0;
  v->seg[0] = 0;
}

static void vals_free(kin__vals *v) {
  if (v->buf != v->ibuf) free(v->buf);
  if (v->off != v->ioff) free(v->off);
  if (v->seg != v->iseg) free(v->seg);
}

/* Grows the array *p (inline storage inl, *cap elements of size el) to hold
 * need elements. Returns 0 or KIN_ENOMEM with the array unchanged. */
static int grow(void **p, size_t *cap, size_t need, size_t el, void *inl) {
  if (need <= *cap) return 0;
  size_t nc = *cap * 2;
  while (nc < need) nc *= 2;
  void *np;
  if (*p == inl) {
    np = malloc(nc * el);
    if (np) memcpy(np, inl, *cap * el);
  } else {
    np = realloc(*p, nc * el);
  }
  if (!np) return KIN_ENOMEM;
  *p = np;
  *cap = nc;
  return 0;
}

static int vals_emit(void *ctx, const char *value) {
  kin__vals *v = ctx;
  if (!value) return v->err = KIN_EINVAL;
  size_t l = strlen(value) + 1;
  if (grow((void **)&v->buf, &v->cap, v->len + l, 1, v->ibuf) < 0 ||
      grow((void **)&v->off, &v->ocap, v->n + 1, sizeof(size_t), v->ioff) < 0)
    return v->err = KIN_ENOMEM;
  memcpy(v->buf + v->len, value, l);
  v->off[v->n++] = v->len;
  v->len += l;
  return 0;
}

static inline const char *vals_at(const kin__vals *v, size_t j) { return v->buf + v->off[j]; }

static int vals_cmp(const void *a, const void *b, void *buf) {
  return strcmp((const char *)buf + *(const size_t *)a, (const char *)buf + *(const size_t *)b);
}

/* Appends def's values for obj as one sorted, deduplicated range. Returns 0
 * or the index function's (or an emit's) error. */
static int vals_run(kin__vals *v, const kin__index_def *def, const kin_obj *obj) {
  size_t start = v->n;
  v->err = 0;
  int r = def->fn(def->ud, obj, vals_emit, v);
  if (r >= 0) r = v->err;
  if (r < 0) {
    v->n = start;
    return r;
  }
  if (v->n - start > 1) {
    qsort_r(v->off + start, v->n - start, sizeof(size_t), vals_cmp, v->buf);
    size_t w = start + 1;
    for (size_t j = start + 1; j < v->n; j++)
      if (strcmp(vals_at(v, j), vals_at(v, w - 1)) != 0) v->off[w++] = v->off[j];
    v->n = w;
  }
  return 0;
}

/* Computes obj's values for every def into v (reset first). */
static int vals_all(kin__vals *v, const kin__index_def *defs, size_t ndefs, const kin_obj *obj) {
  vals_reset(v);
  if (grow((void **)&v->seg, &v->scap, ndefs + 1, sizeof(size_t), v->iseg) < 0)
    return KIN_ENOMEM;
  for (size_t i = 0; i < ndefs; i++) {
    int r = vals_run(v, &defs[i], obj);
    if (r < 0) return r;
    v->seg[i + 1] = v->n;
  }
  return 0;
}

/* 1 when value is among index i's values in v (v may be NULL: none). */
static int vals_has(const kin__vals *v, size_t i, const char *value) {
  if (!v) return 0;
  size_t lo = v->seg[i], hi = v->seg[i + 1];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(vals_at(v, mid), value);
    if (c == 0) return 1;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* ---- sets and indexes ------------------------------------------------------ */

/* kin__hmap never shrinks; rebuild a map left mostly empty so iteration stays
 * proportional to its content. Best effort: on ENOMEM the map stays as is. */
static void maybe_shrink(kin__hmap *m) {
  if (m->cap <= 64 || m->len * 8 >= m->cap) return;
  kin__hmap n;
  kin__hmap_init(&n);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(m, &pos)))
    if (kin__hmap_put(&n, e->key, e->val, NULL) < 0) {
      kin__hmap_free(&n);
      return;
    }
  kin__hmap_free(m);
  *m = n;
}

static void set_free(kin__hmap *set) {
  kin__hmap_free(set);
  free(set);
}

/* Adds key (whose object is obj) to index's set for value, creating the
 * set. Returns 0 or KIN_ENOMEM with the index unchanged. */
static int index_add(kin__hmap *index, const char *value, const char *key, kin_obj *obj) {
  void **p = kin__hmap_get(index, value);
  if (p) {
    int r = kin__hmap_put(*p, key, obj, NULL);
    return r < 0 ? r : 0;
  }
  kin__hmap *set = malloc(sizeof(*set));
  if (!set) return KIN_ENOMEM;
  kin__hmap_init(set);
  if (kin__hmap_put(set, key, obj, NULL) < 0 || kin__hmap_put(index, value, set, NULL) < 0) {
    set_free(set);
    return KIN_ENOMEM;
  }
  return 0;
}

/* Removes key from index's set for value, and the set once empty. */
static void index_del(kin__hmap *index, const char *value, const char *key) {
  void **p = kin__hmap_get(index, value);
  if (!p) return;
  kin__hmap *set = *p;
  kin__hmap_del(set, key, NULL);
  if (kin__hmap_len(set) > 0) {
    maybe_shrink(set);
    return;
  }
  kin__hmap_del(index, value, NULL);
  set_free(set);
  maybe_shrink(index);
}

static void index_free(kin__hmap *index) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(index, &pos))) set_free(e->val);
  kin__hmap_free(index);
}

/* Initialises empty data with ndefs indexes. Returns 0 or KIN_ENOMEM. */
static int data_init(kin__store_data *d, size_t ndefs) {
  kin__hmap_init(&d->items);
  d->indices = calloc(ndefs ? ndefs : 1, sizeof(kin__hmap));
  return d->indices ? 0 : KIN_ENOMEM;
}

/* Releases every object reference, every index and the arrays. */
static void data_free(kin__store_data *d, size_t ndefs) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&d->items, &pos))) kin_obj_unref(e->val);
  kin__hmap_free(&d->items);
  if (d->indices)
    for (size_t i = 0; i < ndefs; i++) index_free(&d->indices[i]);
  free(d->indices);
  d->indices = NULL;
}

/* client-go's updateIndices plus the items write, for one key.
 * obj non-NULL: stores obj under key (taking over the caller's reference);
 * nv are obj's values, ov those of the object now under key (NULL when the
 * key is new). obj NULL: deletes key, whose current values are ov.
 * On success the replaced/deleted object's reference goes to *old (NULL if
 * none). Returns 0, or KIN_ENOMEM with d unchanged and obj still the
 * caller's. New entries are added before anything else changes, so a
 * failure only has to undo additions: an entry is an addition exactly when
 * its value is in nv but not in ov. Entries kept (in both) then point to
 * obj, and stale ones (only in ov) are dropped; neither step can fail. */
static int data_set(kin__store_data *d, size_t ndefs, const char *key, kin_obj *obj,
                    const kin__vals *ov, const kin__vals *nv, kin_obj **old) {
  void *prev = NULL;
  size_t i, j;
  *old = NULL;
  if (!obj) {
    for (i = 0; i < ndefs; i++)
      for (j = ov->seg[i]; j < ov->seg[i + 1]; j++) index_del(&d->indices[i], vals_at(ov, j), key);
    kin__hmap_del(&d->items, key, &prev);
    maybe_shrink(&d->items);
    *old = prev;
    return 0;
  }
  int r = kin__hmap_put(&d->items, key, obj, &prev);
  if (r < 0) return r;
  for (i = 0; i < ndefs; i++)
    for (j = nv->seg[i]; j < nv->seg[i + 1]; j++) {
      if (vals_has(ov, i, vals_at(nv, j))) continue;
      if ((r = index_add(&d->indices[i], vals_at(nv, j), key, obj)) < 0) goto undo;
    }
  if (ov)
    for (i = 0; i < ndefs; i++)
      for (j = ov->seg[i]; j < ov->seg[i + 1]; j++) {
        if (!vals_has(nv, i, vals_at(ov, j))) {
          index_del(&d->indices[i], vals_at(ov, j), key);
          continue;
        }
        void **set = kin__hmap_get(&d->indices[i], vals_at(ov, j));
        void **slot = set ? kin__hmap_get(*set, key) : NULL;
        if (slot) *slot = obj;
      }
  *old = prev;
  return 0;

undo:
  for (size_t ui = 0; ui <= i; ui++) {
    size_t end = ui == i ? j : nv->seg[ui + 1];
    for (size_t uj = nv->seg[ui]; uj < end; uj++)
      if (!vals_has(ov, ui, vals_at(nv, uj))) index_del(&d->indices[ui], vals_at(nv, uj), key);
  }
  if (prev)
    kin__hmap_put(&d->items, key, prev, NULL); /* key exists: cannot fail */
  else
    kin__hmap_del(&d->items, key, NULL);
  return r;
}

/* Stores obj (borrowed; d takes a reference) in d, computing index values
 * with nv / ov as scratch. On success the object it replaced goes to *old. */
static int data_put(kin__store_data *d, const kin__index_def *defs, size_t ndefs, kin_obj *obj,
                    kin__vals *nv, kin__vals *ov, kin_obj **old) {
  const char *key = kin_obj_key(obj);
  void **p = kin__hmap_get(&d->items, key);
  kin_obj *cur = p ? *p : NULL;
  int r = vals_all(nv, defs, ndefs, obj);
  if (r == 0 && cur) r = vals_all(ov, defs, ndefs, cur);
  if (r < 0) return r;
  kin_obj_ref(obj);
  r = data_set(d, ndefs, key, obj, cur ? ov : NULL, nv, old);
  if (r < 0) kin_obj_unref(obj);
  return r;
}

/* ---- lifecycle ----------------------------------------------------------- */

int kin_indexer_new(kin_indexer **out) {
  kin_indexer *s = calloc(1, sizeof(*s));
  if (!s) return KIN_ENOMEM;
  if (data_init(&s->data, 0) < 0) {
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
  data_free(&s->data, s->ndefs);
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
  vals_init(&v);
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
    vals_reset(&v);
    if ((r = vals_run(&v, &def, e->val)) < 0) goto out;
    for (size_t j = 0; j < v.n; j++)
      if ((r = index_add(&index, vals_at(&v, j), e->key, e->val)) < 0) goto out;
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
  vals_free(&v);
  return 0;

out:
  pthread_mutex_unlock(&s->write_mu);
  free(def.name);
  free(ndefs);
  free(nind);
  index_free(&index);
  vals_free(&v);
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
  vals_init(&nv);
  vals_init(&ov);
  kin_obj *old = NULL;

  pthread_mutex_lock(&s->write_mu);
  void **p = kin__hmap_get(&s->data.items, key);
  kin_obj *cur = p ? *p : NULL;
  int r = vals_all(&nv, s->defs, s->ndefs, obj);
  if (r == 0 && cur) r = vals_all(&ov, s->defs, s->ndefs, cur);
  if (r == 0) {
    kin_obj_ref(obj);
    pthread_rwlock_wrlock(&s->lock);
    r = data_set(&s->data, s->ndefs, key, obj, cur ? &ov : NULL, &nv, &old);
    pthread_rwlock_unlock(&s->lock);
    if (r < 0) kin_obj_unref(obj);
  }
  pthread_mutex_unlock(&s->write_mu);

  kin_obj_unref(old); /* may free a large object: outside every lock */
  vals_free(&nv);
  vals_free(&ov);
  return r;
}

/* client-go's Delete: removes whatever is stored under obj's key (obj may
 * be a tombstone); a key not in the store is not an error. */
int kin_indexer_delete(kin_indexer *s, kin_obj *obj) {
  if (!s || !obj || !kin_obj_key(obj)) return KIN_EINVAL;
  const char *key = kin_obj_key(obj);
  kin__vals ov;
  vals_init(&ov);
  kin_obj *old = NULL;
  int r = 0;

  pthread_mutex_lock(&s->write_mu);
  void **p = kin__hmap_get(&s->data.items, key);
  if (p) {
    r = vals_all(&ov, s->defs, s->ndefs, *p);
    if (r == 0) {
      pthread_rwlock_wrlock(&s->lock);
      data_set(&s->data, s->ndefs, key, NULL, &ov, NULL, &old);
      pthread_rwlock_unlock(&s->lock);
    }
  }
  pthread_mutex_unlock(&s->write_mu);

  kin_obj_unref(old);
  vals_free(&ov);
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
  vals_init(&nv);
  vals_init(&ov);
  kin__store_data nd;

  pthread_mutex_lock(&s->write_mu);
  size_t ndefs = s->ndefs;
  int r = data_init(&nd, ndefs);
  for (size_t k = 0; r == 0 && k < n; k++) {
    kin_obj *dup = NULL;
    r = data_put(&nd, s->defs, ndefs, objs[k], &nv, &ov, &dup);
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

  data_free(&nd, ndefs);
  vals_free(&nv);
  vals_free(&ov);
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
  vals_init(&v);
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
  if ((r = vals_run(&v, &def, obj)) < 0) {
    vals_free(&v);
    return r;
  }

  pthread_rwlock_rdlock(&s->lock);
  size_t cap = 0;
  for (size_t j = 0; j < v.n; j++) {
    kin__hmap *set = find_set(s, (size_t)i, vals_at(&v, j));
    if (set) cap += kin__hmap_len(set);
  }
  if (!(arr = alloc_list(cap, sizeof(*arr)))) {
    r = KIN_ENOMEM;
    goto out;
  }
  for (size_t j = 0; j < v.n && r == 0; j++) {
    kin__hmap *set = find_set(s, (size_t)i, vals_at(&v, j));
    if (set) r = collect(s, set, v.n > 1 ? &seen : NULL, arr, &k);
  }
out:
  pthread_rwlock_unlock(&s->lock);
  kin__hmap_free(&seen);
  vals_free(&v);
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
