/* indexer_index.c -- the indexer's data, client-go's storeIndex
 * (tools/cache/thread_safe_store.go): an object's index values
 * (kin__vals), the index value sets, and the items + indexes writes that
 * keep them in step (kin__data_*). The layout and costs are described at
 * the top of indexer.c; the types are in indexer_int.h. Nothing here locks
 * or calls back into the store except through index functions: indexer.c
 * holds its locks around every call. */
#include "indexer_int.h"

#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "kin.h"

/* ---- index values of one object (kin__vals, see indexer_int.h) ---------- */

void kin__vals_init(kin__vals *v) {
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

void kin__vals_reset(kin__vals *v) {
  v->len = v->n = 0;
  v->err = 0;
  v->seg[0] = 0;
}

void kin__vals_free(kin__vals *v) {
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

static int vals_cmp(const void *a, const void *b, void *buf) {
  return strcmp((const char *)buf + *(const size_t *)a, (const char *)buf + *(const size_t *)b);
}

/* Appends def's values for obj as one sorted, deduplicated range. Returns 0
 * or the index function's (or an emit's) error. */
int kin__vals_run(kin__vals *v, const kin__index_def *def, const kin_obj *obj) {
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
      if (strcmp(kin__vals_at(v, j), kin__vals_at(v, w - 1)) != 0) v->off[w++] = v->off[j];
    v->n = w;
  }
  return 0;
}

/* Computes obj's values for every def into v (reset first). */
int kin__vals_all(kin__vals *v, const kin__index_def *defs, size_t ndefs, const kin_obj *obj) {
  kin__vals_reset(v);
  if (grow((void **)&v->seg, &v->scap, ndefs + 1, sizeof(size_t), v->iseg) < 0)
    return KIN_ENOMEM;
  for (size_t i = 0; i < ndefs; i++) {
    int r = kin__vals_run(v, &defs[i], obj);
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
    int c = strcmp(kin__vals_at(v, mid), value);
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
  if (m->borrowed) kin__hmap_init_borrowed(&n);
  else kin__hmap_init(&n);
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
int kin__index_add(kin__hmap *index, const char *value, const char *key, kin_obj *obj) {
  void **p = kin__hmap_get(index, value);
  if (p) {
    int r = kin__hmap_put(*p, key, obj, NULL);
    return r < 0 ? r : 0;
  }
  kin__hmap *set = malloc(sizeof(*set));
  if (!set) return KIN_ENOMEM;
  kin__hmap_init_borrowed(set); /* key is obj's own (kin_obj_key) */
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

void kin__index_free(kin__hmap *index) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(index, &pos))) set_free(e->val);
  kin__hmap_free(index);
}

/* Initialises empty data with ndefs indexes. Returns 0 or KIN_ENOMEM. */
int kin__data_init(kin__store_data *d, size_t ndefs) {
  kin__hmap_init_borrowed(&d->items); /* each key is its object's (kin_obj_key) */
  d->indices = calloc(ndefs ? ndefs : 1, sizeof(kin__hmap));
  return d->indices ? 0 : KIN_ENOMEM;
}

/* Releases every object reference, every index and the arrays. */
void kin__data_free(kin__store_data *d, size_t ndefs) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&d->items, &pos))) kin_obj_unref(e->val);
  kin__hmap_free(&d->items);
  if (d->indices)
    for (size_t i = 0; i < ndefs; i++) kin__index_free(&d->indices[i]);
  free(d->indices);
  d->indices = NULL;
}

/* client-go's updateIndices plus the items write, for one key.
 * obj non-NULL: stores obj under key, which must be kin_obj_key(obj) (the
 * maps borrow it from obj), taking over the caller's reference;
 * nv are obj's values, ov those of the object now under key (NULL when the
 * key is new). obj NULL: deletes key, whose current values are ov.
 * On success the replaced/deleted object's reference goes to *old (NULL if
 * none). Returns 0, or KIN_ENOMEM with d unchanged and obj still the
 * caller's. New entries are added before anything else changes, so a
 * failure only has to undo additions: an entry is an addition exactly when
 * its value is in nv but not in ov. Entries kept (in both) then point to
 * obj, and stale ones (only in ov) are dropped; neither step can fail. */
int kin__data_set(kin__store_data *d, size_t ndefs, const char *key, kin_obj *obj,
                    const kin__vals *ov, const kin__vals *nv, kin_obj **old) {
  void *prev = NULL;
  size_t i, j;
  *old = NULL;
  if (!obj) {
    for (i = 0; i < ndefs; i++)
      for (j = ov->seg[i]; j < ov->seg[i + 1]; j++) index_del(&d->indices[i], kin__vals_at(ov, j), key);
    kin__hmap_del(&d->items, key, &prev);
    maybe_shrink(&d->items);
    *old = prev;
    return 0;
  }
  int r = kin__hmap_put(&d->items, key, obj, &prev);
  if (r < 0) return r;
  for (i = 0; i < ndefs; i++)
    for (j = nv->seg[i]; j < nv->seg[i + 1]; j++) {
      if (vals_has(ov, i, kin__vals_at(nv, j))) continue;
      if ((r = kin__index_add(&d->indices[i], kin__vals_at(nv, j), key, obj)) < 0) goto undo;
    }
  if (ov)
    for (i = 0; i < ndefs; i++)
      for (j = ov->seg[i]; j < ov->seg[i + 1]; j++) {
        if (!vals_has(nv, i, kin__vals_at(ov, j))) {
          index_del(&d->indices[i], kin__vals_at(ov, j), key);
          continue;
        }
        /* the key exists: the put cannot fail, and takes obj's key */
        void **set = kin__hmap_get(&d->indices[i], kin__vals_at(ov, j));
        if (set) kin__hmap_put(*set, key, obj, NULL);
      }
  *old = prev;
  return 0;

undo:
  for (size_t ui = 0; ui <= i; ui++) {
    size_t end = ui == i ? j : nv->seg[ui + 1];
    for (size_t uj = nv->seg[ui]; uj < end; uj++)
      if (!vals_has(ov, ui, kin__vals_at(nv, uj))) index_del(&d->indices[ui], kin__vals_at(nv, uj), key);
  }
  if (prev)
    kin__hmap_put(&d->items, kin_obj_key(prev), prev, NULL); /* key exists: cannot fail */
  else
    kin__hmap_del(&d->items, key, NULL);
  return r;
}

/* Stores obj (borrowed; d takes a reference) in d, computing index values
 * with nv / ov as scratch. On success the object it replaced goes to *old. */
int kin__data_put(kin__store_data *d, const kin__index_def *defs, size_t ndefs, kin_obj *obj,
                    kin__vals *nv, kin__vals *ov, kin_obj **old) {
  const char *key = kin_obj_key(obj);
  void **p = kin__hmap_get(&d->items, key);
  kin_obj *cur = p ? *p : NULL;
  int r = kin__vals_all(nv, defs, ndefs, obj);
  if (r == 0 && cur) r = kin__vals_all(ov, defs, ndefs, cur);
  if (r < 0) return r;
  kin_obj_ref(obj);
  r = kin__data_set(d, ndefs, key, obj, cur ? ov : NULL, nv, old);
  if (r < 0) kin_obj_unref(obj);
  return r;
}
