/* ssa_merge.c -- structured-merge-diff's Merge (an applied configuration
 * over the live object: maps and granular lists merge, list items by
 * their path element, in its order of shared items) and the updater's
 * prune (fields an applier dropped and nobody else owns are removed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssa.h"

/* 1 for the kinds whose objects merge key by key. */
static int is_map_kind(kin__ssa_kind k) {
  return k == KIN__SSA_STRUCT || k == KIN__SSA_MAP || k == KIN__SSA_DEDUCED;
}

/* 1 for the kinds whose lists merge item by item. */
static int is_list_kind(kin__ssa_kind k) { return k == KIN__SSA_SET || k == KIN__SSA_LIST_MAP; }

/* Frees what elements returned (NULL allowed). */
static void free_elements(char **els, size_t n) {
  for (size_t i = 0; els && i < n; i++) free(els[i]);
  free(els);
}

/* Path elements of list's items (new strings in a new array, caller frees
 * both with free_elements) and, in *index, element -> item; NULL when out
 * of memory. */
static char **elements(const kin__ssa_schema *s, const json_t *node, const json_t *list,
                       json_t **index) {
  size_t n = json_array_size(list);
  char **els = calloc(n ? n : 1, sizeof(*els));
  *index = json_object();
  char err[256];
  for (size_t i = 0; els && *index && i < n; i++) {
    const json_t *item = json_array_get(list, i);
    els[i] = kin__ssa_item_element(s, node, item, err, sizeof(err));
    if (!els[i]) {
      /* not keyable (validation would refuse it): the item's text keeps
       * it apart from every other item */
      char *t = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);
      els[i] = malloc(strlen(t ? t : "") + 3);
      if (els[i]) sprintf(els[i], "?:%s", t ? t : "");
      free(t);
    }
    if (!els[i]) {
      free_elements(els, n);
      return NULL;
    }
    if (!json_object_get(*index, els[i])) json_object_set(*index, els[i], (json_t *)item);
  }
  return els;
}

static json_t *merge(const kin__ssa_schema *s, const json_t *node, const json_t *live,
                     const json_t *config, int depth);

/* The merged list: live-only items where they are, shared items in the
 * configuration's order, new items after the shared item before them. */
static json_t *merge_list(const kin__ssa_schema *s, const json_t *node, const json_t *live,
                          const json_t *config, int depth) {
  const json_t *in = kin__ssa_items(s, node);
  size_t ln = json_array_size(live), rn = json_array_size(config);
  json_t *lidx = NULL, *ridx = NULL;
  char **lpe = elements(s, node, live, &lidx);
  char **rpe = elements(s, node, config, &ridx);
  json_t *merged = json_object(), *out = json_array();
  const char **shared = calloc(rn ? rn : 1, sizeof(*shared));
  size_t nshared = 0, si = 0;
  if (!lpe || !rpe || !lidx || !ridx || !merged || !out || !shared) goto fail;
  for (size_t i = 0; i < rn; i++)
    if (rpe[i] && json_object_get(lidx, rpe[i])) shared[nshared++] = rpe[i];
  const char *next = nshared ? shared[si++] : NULL;
  for (size_t li = 0, ri = 0; li < ln || ri < rn;) {
    if (li < ln && ri < rn) {
      const char *pe = lpe[li];
      if (!strcmp(pe, rpe[ri])) {
        json_object_set_new(merged, pe, json_true());
        json_t *m = merge(s, in, json_object_get(lidx, pe), json_object_get(ridx, pe), depth + 1);
        if (!m) goto fail;
        json_array_append_new(out, m);
        li++;
        ri++;
        next = si < nshared ? shared[si++] : NULL;
        continue;
      }
      if (json_object_get(ridx, pe) && next && strcmp(next, pe)) {
        li++; /* comes later, in the configuration's order */
        continue;
      }
    }
    if (li < ln) {
      const char *pe = lpe[li];
      if (!json_object_get(ridx, pe)) {
        json_array_append_new(out, json_deep_copy(json_array_get(live, li)));
        li++;
        continue;
      } else if (json_object_get(merged, pe)) {
        li++;
      }
    }
    if (ri < rn) {
      const char *pe = rpe[ri];
      if (!json_object_get(merged, pe)) {
        json_object_set_new(merged, pe, json_true());
        json_t *m = merge(s, in, json_object_get(lidx, pe), json_object_get(ridx, pe), depth + 1);
        if (!m) goto fail;
        json_array_append_new(out, m);
      }
      ri++;
      if (next && !strcmp(next, pe)) next = si < nshared ? shared[si++] : NULL;
    }
  }
  goto done;
fail:
  json_decref(out);
  out = NULL;
done:
  free_elements(lpe, ln);
  free_elements(rpe, rn);
  free(shared);
  json_decref(lidx);
  json_decref(ridx);
  json_decref(merged);
  return out;
}

/* live merged with config under schema node: a new value, or NULL when
 * out of memory. Below 128 levels the configuration wins whole. */
static json_t *merge(const kin__ssa_schema *s, const json_t *node, const json_t *live,
                     const json_t *config, int depth) {
  if (!config) return json_deep_copy(live);
  if (!live || depth > 128) return json_deep_copy(config);
  kin__ssa_kind k = kin__ssa_kind_of(s, node);
  if (is_map_kind(k) && json_is_object(live) && json_is_object(config)) {
    json_t *out = json_deep_copy(live);
    const char *key;
    json_t *cv;
    json_object_foreach((json_t *)config, key, cv) {
      int declared;
      json_t *m = out ? merge(s, kin__ssa_field(s, node, key, &declared),
                              json_object_get(live, key), cv, depth + 1)
                      : NULL;
      if (!m) {
        json_decref(out);
        return NULL;
      }
      json_object_set_new(out, key, m);
    }
    return out;
  }
  if (is_list_kind(k) && json_is_array(live) && json_is_array(config))
    return merge_list(s, node, live, config, depth);
  return json_deep_copy(config);
}

json_t *kin__ssa_merge(const kin__ssa_schema *s, const json_t *live, const json_t *config) {
  return merge(s, s->root, live, config, 0);
}

/* kin__ssa_prune below schema node: v modified in place; out of memory
 * leaves a list as it is. */
static void prune(const kin__ssa_schema *s, const json_t *node, json_t *v, const json_t *last,
                  const json_t *owned, int depth) {
  if (depth > 128) return;
  kin__ssa_kind k = kin__ssa_kind_of(s, node);
  const char *e;
  json_t *lc;
  if (is_map_kind(k) && json_is_object(v)) {
    json_object_foreach((json_t *)last, e, lc) {
      if (strncmp(e, "f:", 2)) continue;
      json_t *child = json_object_get(v, e + 2);
      if (!child) continue;
      const json_t *oc = json_object_get(owned, e);
      /* a field is removed with what is below it unless someone owns it
       * or something below it (EnsureNamedFieldsAreMembers) */
      if (!oc) {
        json_object_del(v, e + 2);
      } else {
        int declared;
        prune(s, kin__ssa_field(s, node, e + 2, &declared), child, lc, oc, depth + 1);
      }
    }
    return;
  }
  if (!is_list_kind(k) || !json_is_array(v)) return;
  json_t *idx = NULL;
  size_t n = json_array_size(v);
  char **els = elements(s, node, v, &idx);
  if (!els || !idx) {
    free_elements(els, n);
    json_decref(idx);
    return;
  }
  const json_t *in = kin__ssa_items(s, node);
  for (size_t i = n; i-- > 0;) {
    lc = els[i] ? json_object_get(last, els[i]) : NULL;
    if (!lc) continue;
    const json_t *oc = json_object_get(owned, els[i]);
    if (kin__ssa_set_is_member(lc) && !(oc && kin__ssa_set_is_member(oc)))
      json_array_remove(v, i);
    else
      prune(s, in, json_array_get(v, i), lc, oc, depth + 1);
  }
  free_elements(els, n);
  json_decref(idx);
}

void kin__ssa_prune(const kin__ssa_schema *s, json_t *obj, const json_t *last,
                    const json_t *owned) {
  prune(s, s->root, obj, last, owned, 0);
}
