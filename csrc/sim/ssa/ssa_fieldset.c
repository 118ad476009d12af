/* ssa_fieldset.c -- field sets in their FieldsV1 form (fieldpath.Set of
 * structured-merge-diff): insert, union, difference, intersection, and
 * the paths of the members as conflict messages print them. See ssa.h for
 * the representation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ssa.h"

int kin__ssa_set_is_member(const json_t *node) {
  return json_object_size(node) == 0 || json_object_get(node, ".") != NULL;
}

/* Number of children of node ("." not counted). */
static size_t nchildren(const json_t *node) {
  return json_object_size(node) - (json_object_get(node, ".") ? 1 : 0);
}

/* Restores the invariant of node after its children changed: "." only on
 * a member that has children. Returns 1 when node is left with nothing
 * (no child, no membership) and must be removed by its parent. */
static int fix(json_t *node, int member) {
  json_object_del(node, ".");
  size_t n = json_object_size(node);
  if (member && n) json_object_set_new(node, ".", json_object());
  return !member && !n;
}

int kin__ssa_set_insert(json_t *set, const char *const *elems, size_t n) {
  json_t *node = set;
  for (size_t i = 0; i < n; i++) {
    json_t *child = json_object_get(node, elems[i]);
    int last = i + 1 == n;
    if (!child) {
      child = json_object();
      if (!child || json_object_set_new(node, elems[i], child)) return -1;
      /* a new intermediate node gets its child next: not a member */
    } else if (!last && json_object_size(child) == 0) {
      /* a member leaf that gets a child keeps its membership */
      json_object_set_new(child, ".", json_object());
    } else if (last && json_object_size(child) > 0) {
      json_object_set_new(child, ".", json_object());
    }
    node = child;
  }
  return 0;
}

int kin__ssa_set_union(json_t *a, const json_t *b) {
  const char *k;
  json_t *bc;
  json_object_foreach((json_t *)b, k, bc) {
    if (!strcmp(k, ".")) continue;
    json_t *ac = json_object_get(a, k);
    if (!ac) {
      if (json_object_set_new(a, k, json_deep_copy(bc))) return -1;
      continue;
    }
    int member = kin__ssa_set_is_member(ac) || kin__ssa_set_is_member(bc);
    if (kin__ssa_set_union(ac, bc)) return -1;
    fix(ac, member);
  }
  return 0;
}

void kin__ssa_set_difference(json_t *a, const json_t *b) {
  const char *k;
  json_t *ac;
  void *tmp;
  json_object_foreach_safe(a, tmp, k, ac) {
    if (!strcmp(k, ".")) continue;
    const json_t *bc = json_object_get(b, k);
    if (!bc) continue;
    int member = kin__ssa_set_is_member(ac) && !kin__ssa_set_is_member(bc);
    kin__ssa_set_difference(ac, bc);
    if (fix(ac, member)) json_object_del(a, k);
  }
}

void kin__ssa_set_recursive_difference(json_t *a, const json_t *b) {
  const char *k;
  json_t *ac;
  void *tmp;
  json_object_foreach_safe(a, tmp, k, ac) {
    if (!strcmp(k, ".")) continue;
    const json_t *bc = json_object_get(b, k);
    if (!bc) continue;
    if (kin__ssa_set_is_member(bc)) {
      json_object_del(a, k);
      continue;
    }
    int member = kin__ssa_set_is_member(ac);
    kin__ssa_set_recursive_difference(ac, bc);
    if (fix(ac, member)) json_object_del(a, k);
  }
}

json_t *kin__ssa_set_intersection(const json_t *a, const json_t *b) {
  json_t *out = json_object();
  if (!out) return NULL;
  const char *k;
  json_t *ac;
  json_object_foreach((json_t *)a, k, ac) {
    if (!strcmp(k, ".")) continue;
    const json_t *bc = json_object_get(b, k);
    if (!bc) continue;
    int member = kin__ssa_set_is_member(ac) && kin__ssa_set_is_member(bc);
    json_t *child = kin__ssa_set_intersection(ac, bc);
    if (!child) {
      json_decref(out);
      return NULL;
    }
    if (fix(child, member))
      json_decref(child);
    else
      json_object_set_new(out, k, child);
  }
  return out;
}

int kin__ssa_set_empty(const json_t *set) { return nchildren(set) == 0; }

/* Appends the printed form of element e ("f:a" -> ".a", "k:{"a":1}" ->
 * "[a=1]", "v:"x"" -> "[=\"x\"]", "i:3" -> "[3]") to buf. */
static void print_element(char *buf, size_t cap, const char *e) {
  size_t len = strlen(buf);
  if (len >= cap - 1) return;
  char *p = buf + len;
  size_t room = cap - len;
  if (!strncmp(e, "f:", 2)) {
    snprintf(p, room, ".%s", e + 2);
  } else if (!strncmp(e, "v:", 2)) {
    snprintf(p, room, "[=%s]", e + 2);
  } else if (!strncmp(e, "i:", 2)) {
    snprintf(p, room, "[%s]", e + 2);
  } else if (!strncmp(e, "k:", 2)) {
    json_t *key = json_loads(e + 2, JSON_DECODE_ANY, NULL);
    size_t used = (size_t)snprintf(p, room, "[");
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach(key, k, v) {
      char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
      if (used < room)
        used += (size_t)snprintf(p + used, room - used, "%s%s=%s", first ? "" : ",", k,
                                 s ? s : "");
      free(s);
      first = 0;
    }
    if (used < room) snprintf(p + used, room - used, "]");
    json_decref(key);
  } else {
    snprintf(p, room, "%s", e);
  }
}

/* qsort order of path elements: byte order of their strings. */
static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The walk of kin__ssa_set_paths below node; path holds the prefix. */
static int paths_of(const json_t *node, char *path, size_t cap, kin__ssa_path_fn fn, void *ud) {
  size_t n = json_object_size(node), m = 0;
  const char **keys = malloc((n ? n : 1) * sizeof(*keys));
  if (!keys) return -1;
  const char *k;
  json_t *c;
  json_object_foreach((json_t *)node, k, c) {
    if (strcmp(k, ".")) keys[m++] = k;
  }
  /* structured-merge-diff orders fields before keys before values: the
   * prefixes f < i < k < v sort the same way but for indexes, which the
   * sim never writes. */
  qsort(keys, m, sizeof(*keys), cmp_keys);
  size_t len = strlen(path);
  int rc = 0;
  /* Set.Iterate: this level's members first, then each child's set */
  for (size_t i = 0; i < m && !rc; i++) {
    const json_t *child = json_object_get(node, keys[i]);
    if (!kin__ssa_set_is_member(child)) continue;
    print_element(path, cap, keys[i]);
    rc = fn(ud, path);
    path[len] = 0;
  }
  for (size_t i = 0; i < m && !rc; i++) {
    const json_t *child = json_object_get(node, keys[i]);
    if (!nchildren(child)) continue;
    print_element(path, cap, keys[i]);
    rc = paths_of(child, path, cap, fn, ud);
    path[len] = 0;
  }
  free(keys);
  return rc;
}

int kin__ssa_set_paths(const json_t *set, kin__ssa_path_fn fn, void *ud) {
  char path[2048] = "";
  return paths_of(set, path, sizeof(path), fn, ud);
}
