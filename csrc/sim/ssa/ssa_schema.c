/* ssa_schema.c -- reading OpenAPI v3 schema nodes as structured-merge-diff
 * types, as kube-openapi's schemaconv converts them: "$ref" and allOf
 * followed, x-kubernetes-list-type / list-map-keys / map-type honoured,
 * a patch strategy "merge" read as a list-map (with a merge key) or a set,
 * other lists atomic, objects without a schema deduced. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssa.h"

#define REF_PREFIX "#/components/schemas/"

const json_t *kin__ssa_resolve(const kin__ssa_schema *s, const json_t *node) {
  for (int depth = 0; node && depth < 32; depth++) {
    const char *ref = json_string_value(json_object_get(node, "$ref"));
    if (ref) {
      if (strncmp(ref, REF_PREFIX, strlen(REF_PREFIX))) return NULL;
      node = json_object_get(s->defs, ref + strlen(REF_PREFIX));
      continue;
    }
    const json_t *all = json_object_get(node, "allOf");
    if (json_array_size(all) == 1 && !json_object_get(node, "properties") &&
        !json_object_get(node, "type")) {
      node = json_array_get(all, 0);
      continue;
    }
    return node;
  }
  return node;
}

/* The string extension name of node, looked up on the node as written
 * and then on what it refers to (a field's annotations win). */
static const char *ext(const kin__ssa_schema *s, const json_t *node, const char *name) {
  const char *v = json_string_value(json_object_get(node, name));
  if (v) return v;
  return json_string_value(json_object_get(kin__ssa_resolve(s, node), name));
}

kin__ssa_kind kin__ssa_kind_of(const kin__ssa_schema *s, const json_t *node) {
  const json_t *r = kin__ssa_resolve(s, node);
  if (!r) return KIN__SSA_DEDUCED;
  if (json_is_true(json_object_get(r, "x-kubernetes-int-or-string"))) return KIN__SSA_SCALAR;
  const char *type = json_string_value(json_object_get(r, "type"));
  const json_t *props = json_object_get(r, "properties");
  const json_t *addl = json_object_get(r, "additionalProperties");
  if ((type && !strcmp(type, "array")) || json_object_get(r, "items")) {
    const char *lt = ext(s, node, "x-kubernetes-list-type");
    if (lt) {
      if (!strcmp(lt, "set")) return KIN__SSA_SET;
      if (!strcmp(lt, "map")) return KIN__SSA_LIST_MAP;
      return KIN__SSA_ATOMIC;
    }
    const char *ps = ext(s, node, "x-kubernetes-patch-strategy");
    if (ps && strstr(ps, "merge"))
      return ext(s, node, "x-kubernetes-patch-merge-key") ? KIN__SSA_LIST_MAP : KIN__SSA_SET;
    return KIN__SSA_ATOMIC;
  }
  if ((type && !strcmp(type, "object")) || props || addl) {
    const char *mt = ext(s, node, "x-kubernetes-map-type");
    if (mt && !strcmp(mt, "atomic")) return KIN__SSA_ATOMIC;
    if (json_object_size(props)) return KIN__SSA_STRUCT;
    if (json_is_object(addl) || json_is_true(addl)) return KIN__SSA_MAP;
    return KIN__SSA_DEDUCED;
  }
  if (type) return KIN__SSA_SCALAR;
  return KIN__SSA_DEDUCED;
}

const json_t *kin__ssa_field(const kin__ssa_schema *s, const json_t *node, const char *key,
                             int *declared) {
  const json_t *r = kin__ssa_resolve(s, node);
  const json_t *f = json_object_get(json_object_get(r, "properties"), key);
  *declared = f != NULL;
  if (f) return f;
  const json_t *addl = json_object_get(r, "additionalProperties");
  return json_is_object(addl) ? addl : NULL;
}

const json_t *kin__ssa_items(const kin__ssa_schema *s, const json_t *node) {
  return json_object_get(kin__ssa_resolve(s, node), "items");
}

size_t kin__ssa_map_keys(const kin__ssa_schema *s, const json_t *node, const char **keys,
                         size_t max) {
  const json_t *arr = json_object_get(node, "x-kubernetes-list-map-keys");
  if (!arr) arr = json_object_get(kin__ssa_resolve(s, node), "x-kubernetes-list-map-keys");
  size_t n = 0;
  if (json_is_array(arr)) {
    for (size_t i = 0; i < json_array_size(arr) && n < max; i++) {
      const char *k = json_string_value(json_array_get(arr, i));
      if (k) keys[n++] = k;
    }
    return n;
  }
  const char *mk = ext(s, node, "x-kubernetes-patch-merge-key");
  if (mk && max) keys[n++] = mk;
  return n;
}

char *kin__ssa_item_element(const kin__ssa_schema *s, const json_t *node, const json_t *item,
                            char *err, size_t errlen) {
  if (kin__ssa_kind_of(s, node) == KIN__SSA_SET) {
    char *v = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!v) return NULL;
    char *e = malloc(strlen(v) + 3);
    if (e) sprintf(e, "v:%s", v);
    free(v);
    return e;
  }
  const char *keys[16];
  size_t n = kin__ssa_map_keys(s, node, keys, 16);
  if (!json_is_object(item)) {
    snprintf(err, errlen, "expected map, got %s",
             json_is_array(item) ? "list" : json_is_null(item) ? "null" : "scalar");
    return NULL;
  }
  const json_t *item_schema = kin__ssa_items(s, node);
  json_t *key = json_object();
  for (size_t i = 0; key && i < n; i++) {
    const json_t *v = json_object_get(item, keys[i]);
    if (!v) {
      /* a key field with a default in the schema takes it */
      int declared;
      v = json_object_get(kin__ssa_resolve(s, kin__ssa_field(s, item_schema, keys[i], &declared)),
                          "default");
    }
    if (!v) {
      snprintf(err, errlen,
               "associative list with keys has an element that omits key field \"%s\" (and "
               "doesn't have default value)",
               keys[i]);
      json_decref(key);
      return NULL;
    }
    /* a copy: the schema is shared by every request's thread */
    json_object_set_new(key, keys[i], json_deep_copy(v));
  }
  char *k = key ? json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(key);
  if (!k) return NULL;
  char *e = malloc(strlen(k) + 3);
  if (e) sprintf(e, "k:%s", k);
  free(k);
  return e;
}
