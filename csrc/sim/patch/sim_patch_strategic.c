/* sim_patch_strategic.c -- strategic merge patch, ported from
 * k8s.io/apimachinery pkg/util/strategicpatch (v0.36) with the options the
 * API server applies patches with (MergeParallelList, IgnoreUnmatchedNulls),
 * over a table of the patchStrategy / patchMergeKey tags of the k8s.io/api
 * types the sim serves.
 *
 * The result is returned as the API server would store it: upstream
 * produces a map that is then decoded into the Go type, which drops null
 * members and the directive keys left in subtrees copied verbatim from the
 * patch ("$patch", "$retainKeys", "$setElementOrder/...",
 * "$deleteFromPrimitiveList/..."); the sim has no typed decode, so
 * kin_sim_strategic_merge_patch drops them from the result itself.
 *
 * Not reproduced: upstream fails with "unable to find api field in struct"
 * when a field the Go type lacks appears in both the object and the patch;
 * here fields outside the table carry no patch metadata (lists replace,
 * maps merge). When a patch holds both <list> and
 * $deleteFromPrimitiveList/<list>, upstream applies them in Go's random
 * map order; here in the patch's key order.
 *
 * The schema: sim_patch_strategic_schema.c; errors, directives and list
 * helpers: sim_patch_strategic_util.c (sim_patch_strategic_int.h).
 */
#include "sim_patch.h"
#include "sim_patch_strategic_schema.h"
#include "sim_patch_strategic_util.h"
#include "buf.h"
#include "kin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- merging ----------------------------------------------------------- */

static json_t *merge_map(cx *c, json_t *orig, json_t *patch, const smp_type *t);

/* mergeSlice: returns a new array. */
static json_t *merge_slice(cx *c, const json_t *orig_a, const json_t *patch_a, const smp_field *f,
                           int is_delete_list) {
  const char *mk = f ? f->merge_key : NULL;
  if (json_array_size(orig_a) == 0 && json_array_size(patch_a) == 0) return json_incref((json_t *)orig_a);
  vec orig = {0}, patch = {0}, merged = {0}, in = {0}, out = {0};
  json_t *res = NULL;
  if (kin__smp_vec_from_array(&orig, orig_a) < 0 || kin__smp_vec_from_array(&patch, patch_a) < 0) {
    kin__smp_oom(c);
    goto done;
  }
  int kind = kin__smp_slice_elem_kind(c, &orig, &patch);
  if (!kind) goto done;
  if (kind != K_MAP) {
    if (is_delete_list) {
      /* deleteFromSlice */
      for (size_t i = 0; i < orig.n; i++) {
        int del = 0;
        for (size_t k = 0; k < patch.n && !del; k++) del = kin__smp_go_eq(orig.v[i], patch.v[k]);
        if (!del && kin__smp_vec_push(&merged, json_incref(orig.v[i])) < 0) {
          kin__smp_oom(c);
          goto done;
        }
      }
      res = kin__smp_vec_to_array(&merged, c);
      goto done;
    }
    /* deduplicateScalars(append(original, patch...)), with its swaps */
    for (size_t i = 0; i < orig.n; i++)
      if (kin__smp_vec_push(&merged, json_incref(orig.v[i])) < 0) goto nomem;
    for (size_t i = 0; i < patch.n; i++)
      if (kin__smp_vec_push(&merged, json_incref(patch.v[i])) < 0) goto nomem;
    if (merged.n) {
      size_t length = merged.n - 1;
      for (size_t i = 0; i < length; i++)
        for (size_t j = i + 1; j <= length; j++)
          if (kin__smp_go_eq(merged.v[i], merged.v[j])) {
            json_decref(merged.v[j]);
            merged.v[j] = merged.v[length];
            merged.n = length;
            length--;
            j--;
          }
    }
    if (kin__smp_partition(c, &merged, &patch, NULL, &in, &out) < 0) goto done;
    res = kin__smp_normalize_element_order(c, &in, &out, &patch, &orig, NULL, kind);
    goto done;
  }
  if (!mk) {
    kin__smp_fail(c, "cannot merge lists without merge key for %s", f && f->type ? f->type->kind : "interface");
    goto done;
  }
  /* mergeSliceWithSpecialElements */
  vec plain = {0};
  int replace = 0;
  for (size_t i = 0; i < patch.n; i++) {
    json_t *v = patch.v[i];
    json_t *d = json_object_get(v, DIRECTIVE);
    if (!d) {
      if (kin__smp_vec_push(&plain, json_incref(v)) < 0) {
        kin__smp_vec_free(&plain);
        goto nomem;
      }
      continue;
    }
    if (kin__smp_is_directive(d, "delete")) {
      json_t *mv = json_object_get(v, mk);
      if (!mv) {
        kin__smp_no_merge_key(c, v, mk);
        kin__smp_vec_free(&plain);
        goto done;
      }
      for (;;) {
        long at = kin__smp_find_map(c, &orig, mk, mv);
        if (at == -2) {
          kin__smp_vec_free(&plain);
          goto done;
        }
        if (at < 0) break;
        json_decref(orig.v[at]);
        memmove(orig.v + at, orig.v + at + 1, (orig.n - (size_t)at - 1) * sizeof(*orig.v));
        orig.n--;
      }
    } else if (kin__smp_is_directive(d, "replace")) {
      replace = 1;
    } else if (kin__smp_is_directive(d, "merge")) {
      kin__smp_fail(c, "merging lists cannot yet be specified in the patch");
      kin__smp_vec_free(&plain);
      goto done;
    } else {
      kin__smp_bad_patch_type(c, d, v);
      kin__smp_vec_free(&plain);
      goto done;
    }
  }
  kin__smp_vec_free(&patch);
  if (replace) {
    kin__smp_vec_free(&orig);
    orig = plain; /* the list is the patch's, without the directives */
  } else {
    patch = plain;
  }
  /* mergeSliceWithoutSpecialElements, on a working list that starts as
   * the original and grows with the new items */
  for (size_t i = 0; i < orig.n; i++)
    if (kin__smp_vec_push(&merged, json_incref(orig.v[i])) < 0) goto nomem;
  for (size_t i = 0; i < patch.n; i++) {
    json_t *v = patch.v[i];
    json_t *mv = json_object_get(v, mk);
    if (!mv) {
      kin__smp_no_merge_key(c, v, mk);
      goto done;
    }
    long at = kin__smp_find_map(c, &merged, mk, mv);
    if (at == -2) goto done;
    if (at >= 0) {
      json_t *m = merge_map(c, merged.v[at], v, f->type);
      if (!m) goto done;
      json_decref(merged.v[at]);
      merged.v[at] = m;
    } else if (kin__smp_vec_push(&merged, json_incref(v)) < 0) {
      goto nomem;
    }
  }
  if (kin__smp_partition(c, &merged, &patch, mk, &in, &out) < 0) goto done;
  res = kin__smp_normalize_element_order(c, &in, &out, &patch, &orig, mk, kind);
  goto done;
nomem:
  kin__smp_oom(c);
done:
  kin__smp_vec_free(&orig);
  kin__smp_vec_free(&patch);
  kin__smp_vec_free(&merged);
  kin__smp_vec_free(&in);
  kin__smp_vec_free(&out);
  return res;
}

/* mergeSliceHandler: merge when the field's strategy says so (or for a
 * $deleteFromPrimitiveList), else the patch's list replaces. */
static json_t *merge_slice_handler(cx *c, const json_t *orig, const json_t *patch, const smp_field *f,
                                   int is_delete_list) {
  if ((f && f->merge) || is_delete_list) return merge_slice(c, orig, patch, f, is_delete_list);
  return json_incref((json_t *)patch);
}

/* applyRetainKeysDirective */
static int apply_retain_keys(cx *c, json_t *orig, json_t *patch) {
  json_t *list = json_object_get(patch, RETAIN_KEYS);
  if (!list) return 0;
  json_incref(list);
  json_object_del(patch, RETAIN_KEYS);
  int rc = 0;
  if (!json_is_array(list)) {
    kin__smp_fail(c, E_BAD_RETAIN_KEYS);
    rc = -1;
    goto done;
  }
  const char *k;
  json_t *v;
  json_object_foreach(patch, k, v) {
    if (json_is_null(v) || kin__smp_has_prefix(k, DELETE_PREFIX) || kin__smp_has_prefix(k, ORDER_PREFIX))
      continue;
    int found = 0;
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) found |= json_is_string(x) && strcmp(json_string_value(x), k) == 0;
    if (!found) {
      kin__smp_fail(c, E_BAD_RETAIN_KEYS);
      rc = -1;
      goto done;
    }
  }
  void *tmp;
  json_object_foreach_safe(orig, tmp, k, v) {
    int found = 0;
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) found |= json_is_string(x) && strcmp(json_string_value(x), k) == 0;
    if (!found) json_object_del(orig, k);
  }
done:
  json_decref(list);
  return rc;
}

/* validatePatchWithSetOrderList */
static int validate_set_order(cx *c, const vec *patch_list, const vec *order, const char *mk) {
  if (order->n == 0 || patch_list->n == 0) return 0;
  vec non_delete = {0};
  for (size_t i = 0; i < patch_list->n; i++) {
    const json_t *v = patch_list->v[i];
    if (mk) {
      if (!json_is_object(v)) {
        kin__smp_fail(c, "expected a map[string]interface {}, but received a %s", kin__smp_go_type(v));
        kin__smp_vec_free(&non_delete);
        return -1;
      }
      if (kin__smp_is_directive(json_object_get(v, DIRECTIVE), "delete")) continue;
    }
    if (kin__smp_vec_push(&non_delete, json_incref((json_t *)v)) < 0) {
      kin__smp_vec_free(&non_delete);
      kin__smp_oom(c);
      return -1;
    }
  }
  size_t pi = 0, si = 0;
  int rc = 0;
  while (pi < non_delete.n && si < order->n) {
    const json_t *pv = non_delete.v[pi];
    if (json_is_object(pv) && json_object_get(pv, DIRECTIVE)) {
      pi++;
      continue;
    }
    int eq;
    if (!mk) {
      eq = kin__smp_go_eq(pv, order->v[si]);
    } else {
      const json_t *ov = order->v[si];
      if (!json_is_object(pv) || !json_is_object(ov)) {
        kin__smp_fail(c, "expected a map[string]interface {}, but received a %s",
                      kin__smp_go_type(json_is_object(pv) ? ov : pv));
        rc = -1;
        break;
      }
      const json_t *a = json_object_get(pv, mk), *b = json_object_get(ov, mk);
      if (!a) {
        rc = kin__smp_no_merge_key(c, pv, mk);
        break;
      }
      if (!b) {
        rc = kin__smp_no_merge_key(c, ov, mk);
        break;
      }
      eq = kin__smp_go_eq(a, b);
    }
    if (eq) pi++;
    si++;
  }
  if (rc == 0 && pi < non_delete.n && si >= order->n) {
    json_t *pl = kin__smp_vec_json(patch_list), *ol = kin__smp_vec_json(order);
    if (pl && ol)
      kin__smp_fail(c, "The order in patch list:\n%v\n doesn't match " ORDER_PREFIX " list:\n%v\n", pl, ol);
    else
      kin__smp_oom(c);
    json_decref(pl);
    json_decref(ol);
    rc = -1;
  }
  kin__smp_vec_free(&non_delete);
  return rc;
}

/* mergePatchIntoOriginal: each $setElementOrder/<list> merges its list now
 * and orders the result: $setElementOrder first, then the live order for
 * the items it does not name. */
static int merge_set_element_order(cx *c, json_t *orig, json_t *patch, const smp_type *t) {
  /* the keys first: the loop below edits patch */
  vec keys = {0};
  const char *k;
  json_t *v;
  json_object_foreach(patch, k, v) if (kin__smp_has_prefix(k, ORDER_PREFIX)) {
    json_t *ks = json_string(k);
    if (!ks || kin__smp_vec_push(&keys, ks) < 0) {
      kin__smp_vec_free(&keys);
      kin__smp_oom(c);
      return -1;
    }
  }
  int rc = 0;
  for (size_t ki = 0; ki < keys.n && rc == 0; ki++) {
    const char *key = json_string_value(keys.v[ki]);
    json_t *order_v = json_incref(json_object_get(patch, key));
    json_object_del(patch, key);
    vec order = {0}, ol = {0}, pl = {0}, in = {0}, out = {0};
    json_t *merged = NULL;
    if (!json_is_array(order_v)) {
      kin__smp_fail(c, "expected a []interface {}, but received a %s", kin__smp_go_type(order_v));
      rc = -1;
      goto next;
    }
    const char *slash = strchr(key, '/');
    if (!slash || (size_t)(slash - key) != strlen(ORDER_PREFIX)) {
      kin__smp_fail(c, E_BAD_SET_ORDER);
      rc = -1;
      goto next;
    }
    const char *field = slash + 1;
    json_t *orig_list = json_object_get(orig, field), *patch_list = json_object_get(patch, field);
    if (orig_list && !json_is_array(orig_list)) {
      kin__smp_fail(c, "expected a []interface {}, but received a %s", kin__smp_go_type(orig_list));
      rc = -1;
      goto next;
    }
    if (patch_list && !json_is_array(patch_list)) {
      kin__smp_fail(c, "expected a []interface {}, but received a %s", kin__smp_go_type(patch_list));
      rc = -1;
      goto next;
    }
    const smp_field *f = kin__smp_lookup(t, field);
    const char *mk = f ? f->merge_key : NULL;
    if (kin__smp_vec_from_array(&order, order_v) < 0 || (orig_list && kin__smp_vec_from_array(&ol, orig_list) < 0) ||
        (patch_list && kin__smp_vec_from_array(&pl, patch_list) < 0)) {
      kin__smp_oom(c);
      rc = -1;
      goto next;
    }
    if (validate_set_order(c, &pl, &order, mk) < 0) {
      rc = -1;
      goto next;
    }
    if (orig_list && !patch_list) {
      merged = json_incref(orig_list);
    } else if (!orig_list && patch_list) {
      int drop;
      merged = kin__smp_remove_directives(patch_list, &drop);
      if (!merged) {
        kin__smp_oom(c);
        rc = -1;
        goto next;
      }
    } else if (orig_list && patch_list) {
      merged = merge_slice_handler(c, orig_list, patch_list, f, 0);
      if (!merged) {
        rc = -1;
        goto next;
      }
    } else {
      goto next;
    }
    vec mv = {0};
    if (kin__smp_vec_from_array(&mv, merged) < 0) {
      kin__smp_vec_free(&mv);
      kin__smp_oom(c);
      rc = -1;
      goto next;
    }
    rc = kin__smp_partition(c, &mv, &order, mk, &in, &out);
    kin__smp_vec_free(&mv);
    if (rc < 0) goto next;
    int kind = kin__smp_slice_elem_kind(c, &ol, &pl);
    if (!kind) {
      rc = -1;
      goto next;
    }
    json_t *both = kin__smp_normalize_element_order(c, &in, &out, &order, &ol, mk, kind);
    if (!both || json_object_set_new(orig, field, both) < 0) {
      if (both) kin__smp_oom(c);
      rc = -1;
      goto next;
    }
    json_object_del(patch, field);
  next:
    json_decref(merged);
    json_decref(order_v);
    kin__smp_vec_free(&order);
    kin__smp_vec_free(&ol);
    kin__smp_vec_free(&pl);
    kin__smp_vec_free(&in);
    kin__smp_vec_free(&out);
  }
  kin__smp_vec_free(&keys);
  return rc;
}

/* mergeMap: merges patch into orig (both may be edited; orig may be NULL)
 * and returns a new reference to the result, or NULL with the error in c. */
static json_t *merge_map(cx *c, json_t *orig, json_t *patch, const smp_type *t) {
  json_t *d = json_object_get(patch, DIRECTIVE);
  if (d) {
    if (kin__smp_is_directive(d, "replace")) {
      json_object_del(patch, DIRECTIVE);
      return json_incref(patch);
    }
    if (kin__smp_is_directive(d, "delete")) {
      json_t *v = json_object();
      return v ? v : kin__smp_oom(c);
    }
    kin__smp_bad_patch_type(c, d, patch);
    return NULL;
  }
  json_t *o = orig ? json_incref(orig) : json_object();
  if (!o) return kin__smp_oom(c);
  if (apply_retain_keys(c, o, patch) < 0 || merge_set_element_order(c, o, patch, t) < 0) goto fail;

  const char *k;
  json_t *pv;
  json_object_foreach(patch, k, pv) {
    const char *key = k;
    int is_delete_list = 0;
    if (kin__smp_has_prefix(k, DELETE_PREFIX)) {
      const char *slash = strchr(k, '/');
      if (!slash || (size_t)(slash - k) != strlen(DELETE_PREFIX)) {
        kin__smp_fail(c, E_BAD_PATCH_TYPE_PRIMITIVE);
        goto fail;
      }
      is_delete_list = 1;
      if (slash[1]) key = slash + 1;
    }
    if (json_is_null(pv)) {
      json_object_del(o, key);
      continue;
    }
    json_t *ov = json_object_get(o, key);
    if (!ov || !kin__smp_same_type(ov, pv)) {
      if (!is_delete_list) {
        kin__smp_discard_nulls(pv);
        if (kin__smp_set_without_directives(o, key, pv, c) < 0) goto fail;
      }
      continue;
    }
    const smp_field *f = kin__smp_lookup(t, key);
    json_t *nv;
    if (json_is_object(ov)) {
      nv = merge_map(c, ov, pv, f ? f->type : NULL);
    } else if (json_is_array(ov)) {
      nv = merge_slice_handler(c, ov, pv, f, is_delete_list);
    } else {
      if (kin__smp_set_without_directives(o, key, pv, c) < 0) goto fail;
      continue;
    }
    if (!nv || json_object_set_new(o, key, nv) < 0) {
      if (nv) kin__smp_oom(c);
      goto fail;
    }
  }
  return o;
fail:
  json_decref(o);
  return NULL;
}

int kin_sim_strategic_merge_patch(const json_t *target, const json_t *patch, json_t **out, char *err,
                                  size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  cx c = {0};
  if (!json_is_object(patch)) {
    /* the API server decodes the patch into a map first */
    snprintf(c.msg, sizeof(c.msg), "json: cannot unmarshal %s into Go value of type map[string]interface {}",
             json_is_array(patch) ? "array" : json_is_string(patch) ? "string"
                                          : json_is_number(patch) ? "number"
                                          : json_is_boolean(patch) ? "bool" : "null");
    if (err && errlen) snprintf(err, errlen, "%s", c.msg);
    return KIN_EINVAL;
  }
  if (!json_is_object(target)) {
    if (err && errlen) snprintf(err, errlen, "%s", E_BAD_JSON_DOC);
    return KIN_EINVAL;
  }
  json_t *o = json_deep_copy(target), *p = json_deep_copy(patch);
  json_t *res = NULL;
  if (o && p) {
    res = merge_map(&c, o, p, kin__smp_schema_for(target, patch));
  } else {
    c.rc = KIN_ENOMEM;
  }
  json_decref(o);
  json_decref(p);
  if (res) kin__smp_drop_as_decode(res);
  if (!res) {
    if (!c.rc) c.rc = KIN_ENOMEM;
    if (err && errlen) snprintf(err, errlen, "%s", c.rc == KIN_ENOMEM ? "out of memory" : c.msg);
    return c.rc;
  }
  *out = res;
  return 0;
}

int kin_sim_strategic_merge_patch_status(const char *err) {
  static const char *const bad_request[] = {E_BAD_JSON_DOC, E_BAD_PATCH_TYPE_PRIMITIVE, E_BAD_RETAIN_KEYS,
                                            E_BAD_SET_ORDER, E_UNSUPPORTED};
  if (!err) return 500;
  for (size_t i = 0; i < sizeof(bad_request) / sizeof(bad_request[0]); i++)
    if (strcmp(err, bad_request[i]) == 0) return 400;
  if (kin__smp_has_prefix(err, "json: cannot unmarshal")) return 400;
  if (strcmp(err, E_NO_LIST_OF_LISTS) == 0 || strcmp(err, E_RETAIN_KEYS_MISMATCH) == 0) return 422;
  return 500;
}
