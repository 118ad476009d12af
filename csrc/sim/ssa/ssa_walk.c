/* ssa_walk.c -- the walks of structured-merge-diff's typed package that
 * read an object by its schema: ToFieldSet (what an applied configuration
 * owns) and Compare (what an update added, modified and removed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssa.h"

#define MAX_DEPTH 128

/* How a value is walked: as one leaf, as a map of fields, or as a list of
 * items named by path elements. */
enum shape { LEAF, MAP, LIST };

/* The shape of v under node; *declared_fields tells whether map keys are
 * declared struct fields (else every key is a member). */
static enum shape shape_of(const kin__ssa_schema *s, const json_t *node, const json_t *v,
                           int *struct_fields) {
  kin__ssa_kind k = kin__ssa_kind_of(s, node);
  *struct_fields = k == KIN__SSA_STRUCT;
  switch (k) {
  case KIN__SSA_STRUCT:
  case KIN__SSA_MAP:
  case KIN__SSA_DEDUCED:
    return json_is_object(v) ? MAP : LEAF;
  case KIN__SSA_SET:
  case KIN__SSA_LIST_MAP:
    return json_is_array(v) ? LIST : LEAF;
  default:
    return LEAF;
  }
}

typedef struct {
  const kin__ssa_schema *s;
  char *err;
  size_t errlen;
  int failed;
} walk;

/* Fills out (the set node of v) with v's members; returns 1 when v itself
 * is a member (a leaf), 0 when its children decide, -1 on failure. */
static int to_set(walk *w, const json_t *node, const json_t *v, json_t *out, int depth) {
  if (depth > MAX_DEPTH) {
    snprintf(w->err, w->errlen, "object nested too deeply");
    return -1;
  }
  int struct_fields;
  enum shape sh = shape_of(w->s, node, v, &struct_fields);
  if (sh == LEAF) return 1;
  if (sh == MAP) {
    const char *k;
    json_t *cv;
    json_object_foreach((json_t *)v, k, cv) {
      int declared;
      const json_t *cn = kin__ssa_field(w->s, node, k, &declared);
      json_t *child = json_object();
      char el[1024];
      snprintf(el, sizeof(el), "f:%s", k);
      int self = to_set(w, cn, cv, child, depth + 1);
      if (self < 0) {
        json_decref(child);
        return -1;
      }
      int member = self || json_is_null(cv) || (json_is_object(cv) && !json_object_size(cv)) ||
                   !declared || !struct_fields;
      if (member && json_object_size(child)) json_object_set_new(child, ".", json_object());
      if (member || json_object_size(child))
        json_object_set_new(out, el, child);
      else
        json_decref(child);
    }
    return 0;
  }
  const json_t *in = kin__ssa_items(w->s, node);
  size_t i;
  json_t *item;
  json_array_foreach(v, i, item) {
    char *el = kin__ssa_item_element(w->s, node, item, w->err, w->errlen);
    if (!el) {
      if (!w->err[0]) snprintf(w->err, w->errlen, "out of memory");
      return -1;
    }
    if (json_object_get(out, el)) {
      /* a duplicate item: a member as a whole */
      json_object_set_new(out, el, json_object());
      free(el);
      continue;
    }
    json_t *child = json_object();
    if (to_set(w, in, item, child, depth + 1) < 0) {
      json_decref(child);
      free(el);
      return -1;
    }
    if (json_object_size(child)) json_object_set_new(child, ".", json_object());
    json_object_set_new(out, el, child);
    free(el);
  }
  return 0;
}

json_t *kin__ssa_to_set(const kin__ssa_schema *s, const json_t *obj, char *err, size_t errlen) {
  walk w = {s, err, errlen, 0};
  err[0] = 0;
  json_t *set = json_object();
  if (!set || to_set(&w, s->root, obj, set, 0) < 0) {
    json_decref(set);
    return NULL;
  }
  json_object_del(set, ".");
  return set;
}

typedef struct {
  walk w;
  json_t *added, *modified, *removed;
  const char *path[MAX_DEPTH + 1];
  size_t depth;
} cmp;

/* Inserts the current path into set (the root path is never a member);
 * out of memory leaves the set short of it. */
static void mark(cmp *c, json_t *set) {
  if (c->depth) kin__ssa_set_insert(set, c->path, c->depth);
}

static int compare(cmp *c, const json_t *node, const json_t *o, const json_t *n);

/* Indexes the items of list by path element into a new object (element ->
 * item, borrowed through the object's reference); NULL on failure. */
static json_t *index_items(cmp *c, const json_t *node, const json_t *list) {
  json_t *idx = json_object();
  size_t i;
  json_t *item;
  json_array_foreach(list, i, item) {
    char *el = idx ? kin__ssa_item_element(c->w.s, node, item, c->w.err, c->w.errlen) : NULL;
    if (!el) {
      json_decref(idx);
      return NULL;
    }
    json_object_set(idx, el, item);
    free(el);
  }
  return idx;
}

/* Compares the items of two lists (either may be NULL) by path element. */
static int compare_items(cmp *c, const json_t *node, const json_t *o, const json_t *n) {
  const json_t *in = kin__ssa_items(c->w.s, node);
  json_t *oi = index_items(c, node, o), *ni = oi ? index_items(c, node, n) : NULL;
  int rc = ni ? 0 : -1;
  const json_t *sides[2] = {oi, ni};
  for (int side = 0; side < 2 && !rc; side++) {
    const char *el;
    json_t *item;
    json_object_foreach((json_t *)sides[side], el, item) {
      if (side == 1 && json_object_get(oi, el)) continue; /* seen from o */
      c->path[c->depth++] = el;
      rc = compare(c, in, json_object_get(oi, el), json_object_get(ni, el));
      c->depth--;
      if (rc) break;
    }
  }
  json_decref(oi);
  json_decref(ni);
  return rc;
}

/* Records what differs between o and n (either may be NULL) at the
 * current path; 0 or -1 with the reason in c->w.err. */
static int compare(cmp *c, const json_t *node, const json_t *o, const json_t *n) {
  if (c->depth >= MAX_DEPTH) {
    snprintf(c->w.err, c->w.errlen, "object nested too deeply");
    return -1;
  }
  int sf;
  enum shape so = o ? shape_of(c->w.s, node, o, &sf) : LEAF;
  enum shape sn = n ? shape_of(c->w.s, node, n, &sf) : LEAF;
  enum shape sh = o ? so : sn;
  int empty_o = !o || (sh == MAP ? json_object_size(o) == 0 : sh == LIST ? json_array_size(o) == 0 : 0);
  int empty_n = !n || (sh == MAP ? json_object_size(n) == 0 : sh == LIST ? json_array_size(n) == 0 : 0);
  if ((o && n && so != sn) || sh == LEAF || (empty_o && empty_n)) {
    if (!o)
      mark(c, c->added);
    else if (!n)
      mark(c, c->removed);
    else if (!json_equal((json_t *)o, (json_t *)n))
      mark(c, c->modified);
    return 0;
  }
  if (!o) mark(c, c->added);
  if (!n) mark(c, c->removed);
  if (sh == LIST) return compare_items(c, node, o, n);
  const json_t *sides[2] = {o, n};
  for (int side = 0; side < 2; side++) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)sides[side], k, v) {
      if (side == 1 && o && json_object_get(o, k)) continue; /* seen from o */
      int declared;
      const json_t *cn = kin__ssa_field(c->w.s, node, k, &declared);
      char el[1024];
      snprintf(el, sizeof(el), "f:%s", k);
      c->path[c->depth++] = el;
      int rc = compare(c, cn, json_object_get(o, k), json_object_get(n, k));
      c->depth--;
      if (rc) return rc;
    }
  }
  return 0;
}

int kin__ssa_compare(const kin__ssa_schema *s, const json_t *old, const json_t *new_,
                     json_t **added, json_t **modified, json_t **removed, char *err,
                     size_t errlen) {
  cmp c = {{s, err, errlen, 0}, json_object(), json_object(), json_object(), {0}, 0};
  err[0] = 0;
  if (!c.added || !c.modified || !c.removed || compare(&c, s->root, old, new_)) {
    if (!err[0]) snprintf(err, errlen, "out of memory");
    json_decref(c.added);
    json_decref(c.modified);
    json_decref(c.removed);
    return -1;
  }
  *added = c.added;
  *modified = c.modified;
  *removed = c.removed;
  return 0;
}
