/* sim_patch_strategic_util.c -- what the strategic merge patch
 * (sim_patch_strategic.c) is written with: the first error of a merge in
 * upstream's words (values printed as Go's %v), copying patch subtrees
 * without their directives, and the list helpers (element kinds, merge-key
 * lookup, $setElementOrder ordering, partitions). Ported from
 * k8s.io/apimachinery pkg/util/strategicpatch (v0.36). */
#include "sim_patch.h"
#include "sim_patch_strategic_util.h"
#include "buf.h"
#include "kin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and Go formatting ------------------------------------------ */

static int cmp_cstr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's %v of a decoded JSON value: map[k:v ...] with sorted keys, [a b],
 * strings bare, nil as <nil>. */
static void go_v(kin__buf *b, const json_t *v) {
  char num[64];
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    size_t n = json_object_size(v), i = 0;
    const char **keys = malloc((n ? n : 1) * sizeof(*keys));
    if (!keys) {
      b->oom = 1;
      return;
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) keys[i++] = k;
    qsort(keys, n, sizeof(*keys), cmp_cstr);
    kin__buf_puts(b, "map[");
    for (i = 0; i < n; i++) {
      if (i) kin__buf_puts(b, " ");
      kin__buf_puts(b, keys[i]);
      kin__buf_puts(b, ":");
      go_v(b, json_object_get(v, keys[i]));
    }
    kin__buf_puts(b, "]");
    free(keys);
    break;
  }
  case JSON_ARRAY: {
    kin__buf_puts(b, "[");
    for (size_t i = 0; i < json_array_size(v); i++) {
      if (i) kin__buf_puts(b, " ");
      go_v(b, json_array_get(v, i));
    }
    kin__buf_puts(b, "]");
    break;
  }
  case JSON_STRING: kin__buf_add(b, json_string_value(v), json_string_length(v)); break;
  case JSON_INTEGER:
    snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    kin__buf_puts(b, num);
    break;
  case JSON_REAL: {
    /* shortest representation that reads back, like Go's %v */
    double d = json_real_value(v);
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(num, sizeof(num), "%.*g", prec, d);
      if (strtod(num, NULL) == d) break;
    }
    kin__buf_puts(b, num);
    break;
  }
  case JSON_TRUE: kin__buf_puts(b, "true"); break;
  case JSON_FALSE: kin__buf_puts(b, "false"); break;
  default: kin__buf_puts(b, "<nil>"); break;
  }
}

/* reflect.TypeOf(v).String() for decoded JSON, as in ErrBadArgType. */
const char *kin__smp_go_type(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: return "map[string]interface {}";
  case JSON_ARRAY: return "[]interface {}";
  case JSON_STRING: return "string";
  case JSON_INTEGER: return "int64";
  case JSON_REAL: return "float64";
  case JSON_TRUE:
  case JSON_FALSE: return "bool";
  default: return "%!s(<nil>)";
  }
}

/* Same Go type (true and false are both bool). */
int kin__smp_same_type(const json_t *a, const json_t *b) {
  return strcmp(kin__smp_go_type(a), kin__smp_go_type(b)) == 0;
}

/* Records the first error of a merge (%s: a C string, %v: a json_t
 * printed as Go's %v); returns NULL for the caller to pass on. */
json_t *kin__smp_fail(cx *c, const char *fmt, ...) {
  if (c->rc) return NULL;
  kin__buf b = {0};
  va_list ap;
  va_start(ap, fmt);
  for (const char *p = fmt; *p; p++) {
    if (*p != '%' || !p[1]) {
      kin__buf_add(&b, p, 1);
      continue;
    }
    p++;
    if (*p == 's') {
      const char *arg = va_arg(ap, const char *);
      kin__buf_puts(&b, arg ? arg : "");
    }
    else if (*p == 'v')
      go_v(&b, va_arg(ap, const json_t *));
    else
      kin__buf_add(&b, p, 1);
  }
  va_end(ap);
  if (b.oom) {
    c->rc = KIN_ENOMEM;
  } else {
    c->rc = KIN_EINVAL;
    snprintf(c->msg, sizeof(c->msg), "%s", b.p ? b.p : "");
  }
  free(b.p);
  return NULL;
}

/* Records an allocation failure; returns NULL for the caller to pass on. */
json_t *kin__smp_oom(cx *c) {
  if (!c->rc) c->rc = KIN_ENOMEM;
  return NULL;
}

int kin__smp_has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

int kin__smp_is_directive(const json_t *v, const char *which) {
  const char *s = json_string_value(v);
  return s && strcmp(s, which) == 0;
}

/* ---- copying patch subtrees ------------------------------------------- */

/* removeDirectives: a copy of v without the maps holding "$patch" (in
 * objects and lists); NULL with *drop set when v itself is one. */
json_t *kin__smp_remove_directives(const json_t *v, int *drop) {
  *drop = 0;
  if (json_is_object(v)) {
    if (json_object_get(v, DIRECTIVE)) {
      *drop = 1;
      return NULL;
    }
    json_t *o = json_object();
    if (!o) return NULL;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
      int d;
      json_t *cv = kin__smp_remove_directives(x, &d);
      if (d) continue;
      if (!cv || json_object_set_new(o, k, cv) < 0) {
        json_decref(o);
        return NULL;
      }
    }
    return o;
  }
  if (json_is_array(v)) {
    json_t *a = json_array();
    if (!a) return NULL;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
      int d;
      json_t *cv = kin__smp_remove_directives(x, &d);
      if (d) continue;
      if (!cv || json_array_append_new(a, cv) < 0) {
        json_decref(a);
        return NULL;
      }
    }
    return a;
  }
  return json_incref((json_t *)v);
}

/* discardNullValuesFromPatch: drops the null members of v's maps, in
 * place (v belongs to the working copy of the patch). */
void kin__smp_discard_nulls(json_t *v) {
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(v, tmp, k, x) {
      if (json_is_null(x))
        json_object_del(v, k);
      else
        kin__smp_discard_nulls(x);
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) kin__smp_discard_nulls(x);
  }
}

/* original[k], ok = removeDirectives(patchV); if !ok: delete(original, k) */
int kin__smp_set_without_directives(json_t *o, const char *key, const json_t *v, cx *c) {
  int drop;
  json_t *cv = kin__smp_remove_directives(v, &drop);
  if (drop) {
    json_object_del(o, key);
    return 0;
  }
  if (!cv || json_object_set_new(o, key, cv) < 0) {
    kin__smp_oom(c);
    return -1;
  }
  return 0;
}

/* What the typed decode of the result drops: null members and directive
 * keys, in place. */
void kin__smp_drop_as_decode(json_t *v) {
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(v, tmp, k, x) {
      if (json_is_null(x) || strcmp(k, DIRECTIVE) == 0 || strcmp(k, RETAIN_KEYS) == 0 ||
          kin__smp_has_prefix(k, ORDER_PREFIX "/") || kin__smp_has_prefix(k, DELETE_PREFIX "/"))
        json_object_del(v, k);
      else
        kin__smp_drop_as_decode(x);
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) kin__smp_drop_as_decode(x);
  }
}

/* ---- list helpers ------------------------------------------------------ */

/* Appends x, taking its reference (dropped when out of memory). */
int kin__smp_vec_push(vec *a, json_t *x) {
  if (a->n == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 8;
    json_t **nv = realloc(a->v, nc * sizeof(*nv));
    if (!nv) {
      json_decref(x);
      return KIN_ENOMEM;
    }
    a->v = nv;
    a->cap = nc;
  }
  a->v[a->n++] = x;
  return 0;
}

/* Drops every reference and the storage; a is empty again. */
void kin__smp_vec_free(vec *a) {
  for (size_t i = 0; i < a->n; i++) json_decref(a->v[i]);
  free(a->v);
  memset(a, 0, sizeof(*a));
}

/* Appends a new reference to each element of arr; KIN_ENOMEM leaves the
 * ones already pushed for vec_free. */
int kin__smp_vec_from_array(vec *a, const json_t *arr) {
  size_t i;
  json_t *x;
  json_array_foreach(arr, i, x) if (kin__smp_vec_push(a, json_incref(x)) < 0) return KIN_ENOMEM;
  return 0;
}

/* A new array holding a's elements (a keeps its references), or NULL with
 * KIN_ENOMEM in c. */
json_t *kin__smp_vec_to_array(vec *a, cx *c) {
  json_t *arr = json_array();
  if (!arr) return kin__smp_oom(c);
  for (size_t i = 0; i < a->n; i++)
    if (json_array_append(arr, a->v[i]) < 0) {
      json_decref(arr);
      return kin__smp_oom(c);
    }
  return arr;
}

/* A new array of a's elements, for error messages; NULL when out of
 * memory. */
json_t *kin__smp_vec_json(const vec *a) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < a->n; i++) json_array_append(arr, a->v[i]);
  return arr;
}

/* Go's == on two decoded scalars (and on the merge key values). */
int kin__smp_go_eq(const json_t *a, const json_t *b) {
  if (!a || !b) return a == b;
  return json_equal(a, b);
}

/* sliceElementType over the given lists: every element has the same type,
 * not a list. Returns K_MAP / K_OTHER, or 0 with the error in c. */
int kin__smp_slice_elem_kind(cx *c, const vec *a, const vec *b) {
  const json_t *first = NULL;
  const vec *lists[2] = {a, b};
  for (int l = 0; l < 2; l++) {
    for (size_t i = 0; lists[l] && i < lists[l]->n; i++) {
      const json_t *v = lists[l]->v[i];
      if (!first) {
        first = v;
        if (json_is_array(v)) {
          kin__smp_fail(c, E_NO_LIST_OF_LISTS);
          return 0;
        }
      } else if (!kin__smp_same_type(first, v)) {
        json_t *both = json_array();
        if (!both) {
          kin__smp_oom(c);
          return 0;
        }
        json_array_append_new(both, a ? kin__smp_vec_json(a) : json_array());
        json_array_append_new(both, b ? kin__smp_vec_json(b) : json_array());
        kin__smp_fail(c, "list element types are not identical: %v", both);
        json_decref(both);
        return 0;
      }
    }
  }
  if (!first) {
    kin__smp_fail(c, "no elements in any of the given slices");
    return 0;
  }
  return json_is_object(first) ? K_MAP : K_OTHER;
}

/* ErrBadPatchType: "%s" of a non-string prints as Go's %!s(type=value). */
void kin__smp_bad_patch_type(cx *c, const json_t *d, const json_t *m) {
  if (json_is_string(d)) {
    kin__smp_fail(c, "unknown patch type: %s in map: %v", json_string_value(d), m);
    return;
  }
  kin__buf b = {0};
  if (json_is_null(d)) {
    kin__buf_puts(&b, "%!s(<nil>)");
  } else {
    kin__buf_puts(&b, "%!s(");
    kin__buf_puts(&b, kin__smp_go_type(d));
    kin__buf_puts(&b, "=");
    go_v(&b, d);
    kin__buf_puts(&b, ")");
  }
  if (b.oom)
    kin__smp_oom(c);
  else
    kin__smp_fail(c, "unknown patch type: %s in map: %v", b.p, m);
  free(b.p);
}

int kin__smp_no_merge_key(cx *c, const json_t *m, const char *key) {
  kin__smp_fail(c, "map: %v does not contain declared merge key: %s", m, key);
  return -1;
}

/* findMapInSliceBasedOnKeyValue: index of the first map of l whose key
 * equals value, -1 when none, -2 (error in c) when an element is no map. */
long kin__smp_find_map(cx *c, const vec *l, const char *key, const json_t *value) {
  for (size_t i = 0; i < l->n; i++) {
    if (!json_is_object(l->v[i])) {
      char num[32];
      snprintf(num, sizeof(num), "%zu", i);
      kin__smp_fail(c, "value for key %s is not a map", num);
      return -2;
    }
    const json_t *m = json_object_get(l->v[i], key);
    if (m && kin__smp_go_eq(m, value)) return (long)i;
  }
  return -1;
}

/* index(): position of x in l, comparing merge key values for maps. */
static long index_of(const vec *l, const json_t *x, const char *mk, int kind) {
  const json_t *xv = kind == K_MAP ? (json_is_object(x) ? json_object_get(x, mk) : NULL) : x;
  for (size_t i = 0; i < l->n; i++) {
    const json_t *iv = kind == K_MAP ? (json_is_object(l->v[i]) ? json_object_get(l->v[i], mk) : NULL)
                                     : l->v[i];
    if (kin__smp_go_eq(xv, iv)) return (long)i;
  }
  return -1;
}

/* Go's insertionSort (what sort.SliceStable runs on short lists) of the
 * first n items by their positions in order; an item missing from order
 * compares as "less", as upstream's comparator says. The positions are
 * looked up once. Returns 0 or -1 when out of memory. */
static int sort_by_order(vec *v, size_t n, const vec *order, const char *mk, int kind) {
  if (n < 2) return 0;
  long *pos = malloc(n * sizeof(*pos));
  if (!pos) return -1;
  for (size_t i = 0; i < n; i++) pos[i] = index_of(order, v->v[i], mk, kind);
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0; j--) {
      long a = pos[j], b = pos[j - 1];
      if (!((a >= 0 && b >= 0) ? a < b : 1)) break;
      json_t *t = v->v[j];
      v->v[j] = v->v[j - 1];
      v->v[j - 1] = t;
      pos[j] = b;
      pos[j - 1] = a;
    }
  free(pos);
  return 0;
}

/* normalizeSliceOrder: sorts to_sort by the positions in order; for maps
 * every item of both lists needs the merge key, and the "$patch: delete"
 * items go last, unsorted. */
static int normalize_slice_order(cx *c, vec *to_sort, const vec *order, const char *mk, int kind) {
  /* No schema entry (an unknown kind): Go looks the maps up by the merge
   * key "", and so fails on them as below. */
  if (!mk) mk = "";
  if (kind != K_MAP) {
    if (sort_by_order(to_sort, to_sort->n, order, mk, kind) < 0) {
      kin__smp_oom(c);
      return -1;
    }
    return 0;
  }
  const vec *lists[2] = {to_sort, order};
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < lists[l]->n; i++) {
      const json_t *m = lists[l]->v[i];
      if (!json_is_object(m)) {
        kin__smp_fail(c, "expected a map[string]interface {}, but received a %s", kin__smp_go_type(m));
        return -1;
      }
      if (!json_object_get(m, mk)) return kin__smp_no_merge_key(c, m, mk);
    }
  /* extractToDeleteItems: a stable partition, in place */
  size_t n = to_sort->n, keep = 0;
  json_t **tmp = malloc((n ? n : 1) * sizeof(*tmp));
  if (!tmp) {
    kin__smp_oom(c);
    return -1;
  }
  size_t del = 0;
  for (size_t i = 0; i < n; i++)
    if (!kin__smp_is_directive(json_object_get(to_sort->v[i], DIRECTIVE), "delete"))
      to_sort->v[keep++] = to_sort->v[i];
    else tmp[del++] = to_sort->v[i];
  if (del) memcpy(to_sort->v + keep, tmp, del * sizeof(*tmp));
  free(tmp);
  if (sort_by_order(to_sort, keep, order, mk, kind) < 0) {
    kin__smp_oom(c);
    return -1;
  }
  return 0;
}

/* normalizeElementOrder + mergeSortedSlice: the patch items in patch
 * order, the server-only items in server order, interleaved by their
 * positions in server_order. Consumes patch_items and server_only;
 * returns a new array. */
json_t *kin__smp_normalize_element_order(cx *c, vec *patch_items, vec *server_only, const vec *patch_order,
                                         const vec *server_order, const char *mk, int kind) {
  json_t *out = NULL;
  if (normalize_slice_order(c, patch_items, patch_order, mk, kind) < 0) goto done;
  if (normalize_slice_order(c, server_only, server_order, mk, kind) < 0) goto done;
  out = json_array();
  if (!out) {
    kin__smp_oom(c);
    goto done;
  }
  size_t i = 0, j = 0;
  while (i < server_only->n || j < patch_items->n) {
    json_t *pick;
    if (i >= server_only->n) {
      pick = patch_items->v[j++];
    } else if (j >= patch_items->n) {
      pick = server_only->v[i++];
    } else {
      long li = index_of(server_order, server_only->v[i], mk, kind);
      long ri = index_of(server_order, patch_items->v[j], mk, kind);
      if (li >= 0 && ri >= 0 && li < ri)
        pick = server_only->v[i++];
      else
        pick = patch_items->v[j++];
    }
    if (json_array_append(out, pick) < 0) {
      json_decref(out);
      out = kin__smp_oom(c);
      goto done;
    }
  }
done:
  kin__smp_vec_free(patch_items);
  kin__smp_vec_free(server_only);
  return out;
}

/* Splits merged into the items present in by (by merge key for maps) and
 * the others, keeping merged's order. */
int kin__smp_partition(cx *c, const vec *merged, const vec *by, const char *mk, vec *in, vec *out) {
  for (size_t i = 0; i < merged->n; i++) {
    json_t *v = merged->v[i];
    int found;
    if (mk) {
      if (!json_is_object(v)) {
        kin__smp_fail(c, "expected a map[string]interface {}, but received a %s", kin__smp_go_type(v));
        return -1;
      }
      const json_t *kv = json_object_get(v, mk);
      if (!kv) return kin__smp_no_merge_key(c, v, mk);
      long at = kin__smp_find_map(c, by, mk, kv);
      if (at == -2) return -1;
      found = at >= 0;
    } else {
      found = 0;
      for (size_t k = 0; k < by->n && !found; k++) found = kin__smp_go_eq(v, by->v[k]);
    }
    if (kin__smp_vec_push(found ? in : out, json_incref(v)) < 0) {
      kin__smp_oom(c);
      return -1;
    }
  }
  return 0;
}
