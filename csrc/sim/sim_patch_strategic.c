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
 */
#include "sim_patch.h"
#include "buf.h"
#include "kin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- schema ------------------------------------------------------------ */

typedef struct smp_type smp_type;

typedef struct {
  const char *name;
  int merge;               /* patchStrategy includes "merge" */
  const char *merge_key;   /* patchMergeKey, for lists of objects */
  const smp_type *type;    /* struct type of the field or of the list's elements */
} smp_field;

struct smp_type {
  const char *kind;        /* Go Kind of the type, for "... for %s" messages */
  const smp_field *fields; /* terminated by a NULL name */
};

#define END {NULL, 0, NULL, NULL}

static const smp_type t_struct = {"struct", (const smp_field[]){END}};
static const smp_type t_string = {"string", (const smp_field[]){END}};

/* metav1.ObjectMeta */
static const smp_type t_object_meta = {"struct", (const smp_field[]){
    {"ownerReferences", 1, "uid", &t_struct},
    {"finalizers", 1, NULL, &t_string},
    END}};

/* core/v1 Container and EphemeralContainer(Common) */
static const smp_type t_container = {"struct", (const smp_field[]){
    {"ports", 1, "containerPort", &t_struct},
    {"env", 1, "name", &t_struct},
    {"volumeMounts", 1, "mountPath", &t_struct},
    {"volumeDevices", 1, "devicePath", &t_struct},
    END}};

static const smp_type t_pod_spec = {"struct", (const smp_field[]){
    {"volumes", 1, "name", &t_struct}, /* merge,retainKeys */
    {"initContainers", 1, "name", &t_container},
    {"containers", 1, "name", &t_container},
    {"ephemeralContainers", 1, "name", &t_container},
    {"imagePullSecrets", 1, "name", &t_struct},
    {"hostAliases", 1, "ip", &t_struct},
    {"topologySpreadConstraints", 1, "topologyKey", &t_struct},
    {"schedulingGates", 1, "name", &t_struct},
    {"resourceClaims", 1, "name", &t_struct}, /* merge,retainKeys */
    END}};

static const smp_type t_pod_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    {"hostIPs", 1, "ip", &t_struct},
    {"podIPs", 1, "ip", &t_struct},
    {"resourceClaimStatuses", 1, "name", &t_struct}, /* merge,retainKeys */
    END}};

static const smp_type t_pod_template_spec = {"struct", (const smp_field[]){
    {"metadata", 0, NULL, &t_object_meta},
    {"spec", 0, NULL, &t_pod_spec},
    END}};

/* status types whose only merge list is conditions, by type */
static const smp_type t_conditions_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    END}};

/* Deployment, ReplicaSet, StatefulSet, DaemonSet, ReplicationController
 * specs: the pod template (Deployment's strategy is retainKeys, which
 * only matters through the $retainKeys directive) */
static const smp_type t_workload_spec = {"struct", (const smp_field[]){
    {"template", 0, NULL, &t_pod_template_spec},
    END}};

static const smp_type t_service_spec = {"struct", (const smp_field[]){
    {"ports", 1, "port", &t_struct},
    END}};

static const smp_type t_node_spec = {"struct", (const smp_field[]){
    {"podCIDRs", 1, NULL, &t_string},
    END}};

static const smp_type t_node_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    {"addresses", 1, "type", &t_struct},
    END}};

static const smp_type t_pvc_status = {"struct", (const smp_field[]){
    {"conditions", 1, "type", &t_struct},
    END}};

#define META {"metadata", 0, NULL, &t_object_meta}

static const smp_type k_generic = {"struct", (const smp_field[]){META, END}};
static const smp_type k_pod = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_pod_spec}, {"status", 0, NULL, &t_pod_status}, END}};
static const smp_type k_pod_template = {"struct", (const smp_field[]){
    META, {"template", 0, NULL, &t_pod_template_spec}, END}};
static const smp_type k_workload = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_workload_spec}, {"status", 0, NULL, &t_conditions_status}, END}};
static const smp_type k_service = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_service_spec}, {"status", 0, NULL, &t_conditions_status}, END}};
static const smp_type k_service_account = {"struct", (const smp_field[]){
    META, {"secrets", 1, "name", &t_struct}, END}};
static const smp_type k_node = {"struct", (const smp_field[]){
    META, {"spec", 0, NULL, &t_node_spec}, {"status", 0, NULL, &t_node_status}, END}};
static const smp_type k_namespace = {"struct", (const smp_field[]){
    META, {"status", 0, NULL, &t_conditions_status}, END}};
static const smp_type k_pvc = {"struct", (const smp_field[]){
    META, {"status", 0, NULL, &t_pvc_status}, END}};

static const struct {
  const char *kind;
  const smp_type *type;
} kinds[] = {
    {"Pod", &k_pod},
    {"PodTemplate", &k_pod_template},
    {"Deployment", &k_workload},
    {"ReplicaSet", &k_workload},
    {"StatefulSet", &k_workload},
    {"DaemonSet", &k_workload},
    {"ReplicationController", &k_workload},
    {"Service", &k_service},
    {"ServiceAccount", &k_service_account},
    {"Node", &k_node},
    {"Namespace", &k_namespace},
    {"PersistentVolumeClaim", &k_pvc},
};

static const smp_type *schema_for(const json_t *target, const json_t *patch) {
  const char *kind = json_string_value(json_object_get(target, "kind"));
  if (!kind) kind = json_string_value(json_object_get(patch, "kind"));
  for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (strcmp(kinds[i].kind, kind) == 0) return kinds[i].type;
  return &k_generic;
}

/* Field metadata of key in t; fields of unknown types have none (NULL). */
static const smp_field *lookup(const smp_type *t, const char *key) {
  for (const smp_field *f = t ? t->fields : NULL; f && f->name; f++)
    if (strcmp(f->name, key) == 0) return f;
  return NULL;
}

/* ---- errors and Go formatting ------------------------------------------ */

#define E_BAD_PATCH_TYPE_PRIMITIVE "invalid patch format of primitive list"
#define E_BAD_RETAIN_KEYS "invalid patch format of retainKeys"
#define E_BAD_SET_ORDER "invalid patch format of setElementOrder list"
#define E_BAD_JSON_DOC "invalid JSON document"
#define E_NO_LIST_OF_LISTS "lists of lists are not supported"
#define E_RETAIN_KEYS_MISMATCH "patch content doesn't match retainKeys list"
#define E_UNSUPPORTED "strategic merge patch format is not supported"

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define DELETE_PREFIX "$deleteFromPrimitiveList"
#define ORDER_PREFIX "$setElementOrder"

typedef struct {
  int rc; /* 0, KIN_EINVAL or KIN_ENOMEM */
  char msg[2048];
} cx;

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
static const char *go_type(const json_t *v) {
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
static int same_type(const json_t *a, const json_t *b) { return strcmp(go_type(a), go_type(b)) == 0; }

/* Records the first error of a merge (%s: a C string, %v: a json_t
 * printed as Go's %v); returns NULL for the caller to pass on. */
static json_t *fail(cx *c, const char *fmt, ...) {
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
    if (*p == 's')
      kin__buf_puts(&b, va_arg(ap, const char *));
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
static json_t *oom(cx *c) {
  if (!c->rc) c->rc = KIN_ENOMEM;
  return NULL;
}

static int has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int is_directive(const json_t *v, const char *which) {
  const char *s = json_string_value(v);
  return s && strcmp(s, which) == 0;
}

/* ---- copying patch subtrees ------------------------------------------- */

/* removeDirectives: a copy of v without the maps holding "$patch" (in
 * objects and lists); NULL with *drop set when v itself is one. */
static json_t *remove_directives(const json_t *v, int *drop) {
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
      json_t *cv = remove_directives(x, &d);
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
      json_t *cv = remove_directives(x, &d);
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
static void discard_nulls(json_t *v) {
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(v, tmp, k, x) {
      if (json_is_null(x))
        json_object_del(v, k);
      else
        discard_nulls(x);
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) discard_nulls(x);
  }
}

/* original[k], ok = removeDirectives(patchV); if !ok: delete(original, k) */
static int set_without_directives(json_t *o, const char *key, const json_t *v, cx *c) {
  int drop;
  json_t *cv = remove_directives(v, &drop);
  if (drop) {
    json_object_del(o, key);
    return 0;
  }
  if (!cv || json_object_set_new(o, key, cv) < 0) {
    oom(c);
    return -1;
  }
  return 0;
}

/* What the typed decode of the result drops: null members and directive
 * keys, in place. */
static void drop_as_decode(json_t *v) {
  if (json_is_object(v)) {
    const char *k;
    json_t *x;
    void *tmp;
    json_object_foreach_safe(v, tmp, k, x) {
      if (json_is_null(x) || strcmp(k, DIRECTIVE) == 0 || strcmp(k, RETAIN_KEYS) == 0 ||
          has_prefix(k, ORDER_PREFIX "/") || has_prefix(k, DELETE_PREFIX "/"))
        json_object_del(v, k);
      else
        drop_as_decode(x);
    }
  } else if (json_is_array(v)) {
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) drop_as_decode(x);
  }
}

/* ---- list helpers ------------------------------------------------------ */

/* A growable list of borrowed or owned json_t references: every element
 * holds one reference (json_incref when borrowed). */
typedef struct {
  json_t **v;
  size_t n, cap;
} vec;

/* Appends x, taking its reference (dropped when out of memory). */
static int vec_push(vec *a, json_t *x) {
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
static void vec_free(vec *a) {
  for (size_t i = 0; i < a->n; i++) json_decref(a->v[i]);
  free(a->v);
  memset(a, 0, sizeof(*a));
}

/* Appends a new reference to each element of arr; KIN_ENOMEM leaves the
 * ones already pushed for vec_free. */
static int vec_from_array(vec *a, const json_t *arr) {
  size_t i;
  json_t *x;
  json_array_foreach(arr, i, x) if (vec_push(a, json_incref(x)) < 0) return KIN_ENOMEM;
  return 0;
}

/* A new array holding a's elements (a keeps its references), or NULL with
 * KIN_ENOMEM in c. */
static json_t *vec_to_array(vec *a, cx *c) {
  json_t *arr = json_array();
  if (!arr) return oom(c);
  for (size_t i = 0; i < a->n; i++)
    if (json_array_append(arr, a->v[i]) < 0) {
      json_decref(arr);
      return oom(c);
    }
  return arr;
}

/* A new array of a's elements, for error messages; NULL when out of
 * memory. */
static json_t *vec_json(const vec *a) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < a->n; i++) json_array_append(arr, a->v[i]);
  return arr;
}

/* Go's == on two decoded scalars (and on the merge key values). */
static int go_eq(const json_t *a, const json_t *b) {
  if (!a || !b) return a == b;
  return json_equal(a, b);
}

/* reflect kinds that matter here */
enum { K_MAP = 1, K_OTHER = 2 };

/* sliceElementType over the given lists: every element has the same type,
 * not a list. Returns K_MAP / K_OTHER, or 0 with the error in c. */
static int slice_elem_kind(cx *c, const vec *a, const vec *b) {
  const json_t *first = NULL;
  const vec *lists[2] = {a, b};
  for (int l = 0; l < 2; l++) {
    for (size_t i = 0; lists[l] && i < lists[l]->n; i++) {
      const json_t *v = lists[l]->v[i];
      if (!first) {
        first = v;
        if (json_is_array(v)) {
          fail(c, E_NO_LIST_OF_LISTS);
          return 0;
        }
      } else if (!same_type(first, v)) {
        json_t *both = json_array();
        if (!both) {
          oom(c);
          return 0;
        }
        json_array_append_new(both, a ? vec_json(a) : json_array());
        json_array_append_new(both, b ? vec_json(b) : json_array());
        fail(c, "list element types are not identical: %v", both);
        json_decref(both);
        return 0;
      }
    }
  }
  if (!first) {
    fail(c, "no elements in any of the given slices");
    return 0;
  }
  return json_is_object(first) ? K_MAP : K_OTHER;
}

/* ErrBadPatchType: "%s" of a non-string prints as Go's %!s(type=value). */
static void bad_patch_type(cx *c, const json_t *d, const json_t *m) {
  if (json_is_string(d)) {
    fail(c, "unknown patch type: %s in map: %v", json_string_value(d), m);
    return;
  }
  kin__buf b = {0};
  if (json_is_null(d)) {
    kin__buf_puts(&b, "%!s(<nil>)");
  } else {
    kin__buf_puts(&b, "%!s(");
    kin__buf_puts(&b, go_type(d));
    kin__buf_puts(&b, "=");
    go_v(&b, d);
    kin__buf_puts(&b, ")");
  }
  if (b.oom)
    oom(c);
  else
    fail(c, "unknown patch type: %s in map: %v", b.p, m);
  free(b.p);
}

static int no_merge_key(cx *c, const json_t *m, const char *key) {
  fail(c, "map: %v does not contain declared merge key: %s", m, key);
  return -1;
}

/* findMapInSliceBasedOnKeyValue: index of the first map of l whose key
 * equals value, -1 when none, -2 (error in c) when an element is no map. */
static long find_map(cx *c, const vec *l, const char *key, const json_t *value) {
  for (size_t i = 0; i < l->n; i++) {
    if (!json_is_object(l->v[i])) {
      char num[32];
      snprintf(num, sizeof(num), "%zu", i);
      fail(c, "value for key %s is not a map", num);
      return -2;
    }
    const json_t *m = json_object_get(l->v[i], key);
    if (m && go_eq(m, value)) return (long)i;
  }
  return -1;
}

/* index(): position of x in l, comparing merge key values for maps. */
static long index_of(const vec *l, const json_t *x, const char *mk, int kind) {
  const json_t *xv = kind == K_MAP ? (json_is_object(x) ? json_object_get(x, mk) : NULL) : x;
  for (size_t i = 0; i < l->n; i++) {
    const json_t *iv = kind == K_MAP ? (json_is_object(l->v[i]) ? json_object_get(l->v[i], mk) : NULL)
                                     : l->v[i];
    if (go_eq(xv, iv)) return (long)i;
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
  if (kind != K_MAP) {
    if (sort_by_order(to_sort, to_sort->n, order, mk, kind) < 0) {
      oom(c);
      return -1;
    }
    return 0;
  }
  const vec *lists[2] = {to_sort, order};
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < lists[l]->n; i++) {
      const json_t *m = lists[l]->v[i];
      if (!json_is_object(m)) {
        fail(c, "expected a map[string]interface {}, but received a %s", go_type(m));
        return -1;
      }
      if (!json_object_get(m, mk)) return no_merge_key(c, m, mk);
    }
  /* extractToDeleteItems: a stable partition, in place */
  size_t n = to_sort->n, keep = 0;
  json_t **tmp = malloc((n ? n : 1) * sizeof(*tmp));
  if (!tmp) {
    oom(c);
    return -1;
  }
  size_t del = 0;
  for (size_t i = 0; i < n; i++)
    if (!is_directive(json_object_get(to_sort->v[i], DIRECTIVE), "delete")) to_sort->v[keep++] = to_sort->v[i];
    else tmp[del++] = to_sort->v[i];
  if (del) memcpy(to_sort->v + keep, tmp, del * sizeof(*tmp));
  free(tmp);
  if (sort_by_order(to_sort, keep, order, mk, kind) < 0) {
    oom(c);
    return -1;
  }
  return 0;
}

/* normalizeElementOrder + mergeSortedSlice: the patch items in patch
 * order, the server-only items in server order, interleaved by their
 * positions in server_order. Consumes patch_items and server_only;
 * returns a new array. */
static json_t *normalize_element_order(cx *c, vec *patch_items, vec *server_only, const vec *patch_order,
                                       const vec *server_order, const char *mk, int kind) {
  json_t *out = NULL;
  if (normalize_slice_order(c, patch_items, patch_order, mk, kind) < 0) goto done;
  if (normalize_slice_order(c, server_only, server_order, mk, kind) < 0) goto done;
  out = json_array();
  if (!out) {
    oom(c);
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
      out = oom(c);
      goto done;
    }
  }
done:
  vec_free(patch_items);
  vec_free(server_only);
  return out;
}

/* Splits merged into the items present in by (by merge key for maps) and
 * the others, keeping merged's order. */
static int partition(cx *c, const vec *merged, const vec *by, const char *mk, vec *in, vec *out) {
  for (size_t i = 0; i < merged->n; i++) {
    json_t *v = merged->v[i];
    int found;
    if (mk) {
      if (!json_is_object(v)) {
        fail(c, "expected a map[string]interface {}, but received a %s", go_type(v));
        return -1;
      }
      const json_t *kv = json_object_get(v, mk);
      if (!kv) return no_merge_key(c, v, mk);
      long at = find_map(c, by, mk, kv);
      if (at == -2) return -1;
      found = at >= 0;
    } else {
      found = 0;
      for (size_t k = 0; k < by->n && !found; k++) found = go_eq(v, by->v[k]);
    }
    if (vec_push(found ? in : out, json_incref(v)) < 0) {
      oom(c);
      return -1;
    }
  }
  return 0;
}

/* ---- merging ----------------------------------------------------------- */

static json_t *merge_map(cx *c, json_t *orig, json_t *patch, const smp_type *t);

/* mergeSlice: returns a new array. */
static json_t *merge_slice(cx *c, const json_t *orig_a, const json_t *patch_a, const smp_field *f,
                           int is_delete_list) {
  const char *mk = f ? f->merge_key : NULL;
  if (json_array_size(orig_a) == 0 && json_array_size(patch_a) == 0) return json_incref((json_t *)orig_a);
  vec orig = {0}, patch = {0}, merged = {0}, in = {0}, out = {0};
  json_t *res = NULL;
  if (vec_from_array(&orig, orig_a) < 0 || vec_from_array(&patch, patch_a) < 0) {
    oom(c);
    goto done;
  }
  int kind = slice_elem_kind(c, &orig, &patch);
  if (!kind) goto done;
  if (kind != K_MAP) {
    if (is_delete_list) {
      /* deleteFromSlice */
      for (size_t i = 0; i < orig.n; i++) {
        int del = 0;
        for (size_t k = 0; k < patch.n && !del; k++) del = go_eq(orig.v[i], patch.v[k]);
        if (!del && vec_push(&merged, json_incref(orig.v[i])) < 0) {
          oom(c);
          goto done;
        }
      }
      res = vec_to_array(&merged, c);
      goto done;
    }
    /* deduplicateScalars(append(original, patch...)), with its swaps */
    for (size_t i = 0; i < orig.n; i++)
      if (vec_push(&merged, json_incref(orig.v[i])) < 0) goto nomem;
    for (size_t i = 0; i < patch.n; i++)
      if (vec_push(&merged, json_incref(patch.v[i])) < 0) goto nomem;
    if (merged.n) {
      size_t length = merged.n - 1;
      for (size_t i = 0; i < length; i++)
        for (size_t j = i + 1; j <= length; j++)
          if (go_eq(merged.v[i], merged.v[j])) {
            json_decref(merged.v[j]);
            merged.v[j] = merged.v[length];
            merged.n = length;
            length--;
            j--;
          }
    }
    if (partition(c, &merged, &patch, NULL, &in, &out) < 0) goto done;
    res = normalize_element_order(c, &in, &out, &patch, &orig, NULL, kind);
    goto done;
  }
  if (!mk) {
    fail(c, "cannot merge lists without merge key for %s", f && f->type ? f->type->kind : "interface");
    goto done;
  }
  /* mergeSliceWithSpecialElements */
  vec plain = {0};
  int replace = 0;
  for (size_t i = 0; i < patch.n; i++) {
    json_t *v = patch.v[i];
    json_t *d = json_object_get(v, DIRECTIVE);
    if (!d) {
      if (vec_push(&plain, json_incref(v)) < 0) {
        vec_free(&plain);
        goto nomem;
      }
      continue;
    }
    if (is_directive(d, "delete")) {
      json_t *mv = json_object_get(v, mk);
      if (!mv) {
        no_merge_key(c, v, mk);
        vec_free(&plain);
        goto done;
      }
      for (;;) {
        long at = find_map(c, &orig, mk, mv);
        if (at == -2) {
          vec_free(&plain);
          goto done;
        }
        if (at < 0) break;
        json_decref(orig.v[at]);
        memmove(orig.v + at, orig.v + at + 1, (orig.n - (size_t)at - 1) * sizeof(*orig.v));
        orig.n--;
      }
    } else if (is_directive(d, "replace")) {
      replace = 1;
    } else if (is_directive(d, "merge")) {
      fail(c, "merging lists cannot yet be specified in the patch");
      vec_free(&plain);
      goto done;
    } else {
      bad_patch_type(c, d, v);
      vec_free(&plain);
      goto done;
    }
  }
  vec_free(&patch);
  if (replace) {
    vec_free(&orig);
    orig = plain; /* the list is the patch's, without the directives */
  } else {
    patch = plain;
  }
  /* mergeSliceWithoutSpecialElements, on a working list that starts as
   * the original and grows with the new items */
  for (size_t i = 0; i < orig.n; i++)
    if (vec_push(&merged, json_incref(orig.v[i])) < 0) goto nomem;
  for (size_t i = 0; i < patch.n; i++) {
    json_t *v = patch.v[i];
    json_t *mv = json_object_get(v, mk);
    if (!mv) {
      no_merge_key(c, v, mk);
      goto done;
    }
    long at = find_map(c, &merged, mk, mv);
    if (at == -2) goto done;
    if (at >= 0) {
      json_t *m = merge_map(c, merged.v[at], v, f->type);
      if (!m) goto done;
      json_decref(merged.v[at]);
      merged.v[at] = m;
    } else if (vec_push(&merged, json_incref(v)) < 0) {
      goto nomem;
    }
  }
  if (partition(c, &merged, &patch, mk, &in, &out) < 0) goto done;
  res = normalize_element_order(c, &in, &out, &patch, &orig, mk, kind);
  goto done;
nomem:
  oom(c);
done:
  vec_free(&orig);
  vec_free(&patch);
  vec_free(&merged);
  vec_free(&in);
  vec_free(&out);
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
    fail(c, E_BAD_RETAIN_KEYS);
    rc = -1;
    goto done;
  }
  const char *k;
  json_t *v;
  json_object_foreach(patch, k, v) {
    if (json_is_null(v) || has_prefix(k, DELETE_PREFIX) || has_prefix(k, ORDER_PREFIX)) continue;
    int found = 0;
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) found |= json_is_string(x) && strcmp(json_string_value(x), k) == 0;
    if (!found) {
      fail(c, E_BAD_RETAIN_KEYS);
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
        fail(c, "expected a map[string]interface {}, but received a %s", go_type(v));
        vec_free(&non_delete);
        return -1;
      }
      if (is_directive(json_object_get(v, DIRECTIVE), "delete")) continue;
    }
    if (vec_push(&non_delete, json_incref((json_t *)v)) < 0) {
      vec_free(&non_delete);
      oom(c);
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
      eq = go_eq(pv, order->v[si]);
    } else {
      const json_t *ov = order->v[si];
      if (!json_is_object(pv) || !json_is_object(ov)) {
        fail(c, "expected a map[string]interface {}, but received a %s", go_type(json_is_object(pv) ? ov : pv));
        rc = -1;
        break;
      }
      const json_t *a = json_object_get(pv, mk), *b = json_object_get(ov, mk);
      if (!a) {
        rc = no_merge_key(c, pv, mk);
        break;
      }
      if (!b) {
        rc = no_merge_key(c, ov, mk);
        break;
      }
      eq = go_eq(a, b);
    }
    if (eq) pi++;
    si++;
  }
  if (rc == 0 && pi < non_delete.n && si >= order->n) {
    json_t *pl = vec_json(patch_list), *ol = vec_json(order);
    if (pl && ol)
      fail(c, "The order in patch list:\n%v\n doesn't match " ORDER_PREFIX " list:\n%v\n", pl, ol);
    else
      oom(c);
    json_decref(pl);
    json_decref(ol);
    rc = -1;
  }
  vec_free(&non_delete);
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
  json_object_foreach(patch, k, v) if (has_prefix(k, ORDER_PREFIX)) {
    json_t *ks = json_string(k);
    if (!ks || vec_push(&keys, ks) < 0) {
      vec_free(&keys);
      oom(c);
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
      fail(c, "expected a []interface {}, but received a %s", go_type(order_v));
      rc = -1;
      goto next;
    }
    const char *slash = strchr(key, '/');
    if (!slash || (size_t)(slash - key) != strlen(ORDER_PREFIX)) {
      fail(c, E_BAD_SET_ORDER);
      rc = -1;
      goto next;
    }
    const char *field = slash + 1;
    json_t *orig_list = json_object_get(orig, field), *patch_list = json_object_get(patch, field);
    if (orig_list && !json_is_array(orig_list)) {
      fail(c, "expected a []interface {}, but received a %s", go_type(orig_list));
      rc = -1;
      goto next;
    }
    if (patch_list && !json_is_array(patch_list)) {
      fail(c, "expected a []interface {}, but received a %s", go_type(patch_list));
      rc = -1;
      goto next;
    }
    const smp_field *f = lookup(t, field);
    const char *mk = f ? f->merge_key : NULL;
    if (vec_from_array(&order, order_v) < 0 || (orig_list && vec_from_array(&ol, orig_list) < 0) ||
        (patch_list && vec_from_array(&pl, patch_list) < 0)) {
      oom(c);
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
      merged = remove_directives(patch_list, &drop);
      if (!merged) {
        oom(c);
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
    if (vec_from_array(&mv, merged) < 0) {
      vec_free(&mv);
      oom(c);
      rc = -1;
      goto next;
    }
    rc = partition(c, &mv, &order, mk, &in, &out);
    vec_free(&mv);
    if (rc < 0) goto next;
    int kind = slice_elem_kind(c, &ol, &pl);
    if (!kind) {
      rc = -1;
      goto next;
    }
    json_t *both = normalize_element_order(c, &in, &out, &order, &ol, mk, kind);
    if (!both || json_object_set_new(orig, field, both) < 0) {
      if (both) oom(c);
      rc = -1;
      goto next;
    }
    json_object_del(patch, field);
  next:
    json_decref(merged);
    json_decref(order_v);
    vec_free(&order);
    vec_free(&ol);
    vec_free(&pl);
    vec_free(&in);
    vec_free(&out);
  }
  vec_free(&keys);
  return rc;
}

/* mergeMap: merges patch into orig (both may be edited; orig may be NULL)
 * and returns a new reference to the result, or NULL with the error in c. */
static json_t *merge_map(cx *c, json_t *orig, json_t *patch, const smp_type *t) {
  json_t *d = json_object_get(patch, DIRECTIVE);
  if (d) {
    if (is_directive(d, "replace")) {
      json_object_del(patch, DIRECTIVE);
      return json_incref(patch);
    }
    if (is_directive(d, "delete")) {
      json_t *v = json_object();
      return v ? v : oom(c);
    }
    bad_patch_type(c, d, patch);
    return NULL;
  }
  json_t *o = orig ? json_incref(orig) : json_object();
  if (!o) return oom(c);
  if (apply_retain_keys(c, o, patch) < 0 || merge_set_element_order(c, o, patch, t) < 0) goto fail;

  const char *k;
  json_t *pv;
  json_object_foreach(patch, k, pv) {
    const char *key = k;
    int is_delete_list = 0;
    if (has_prefix(k, DELETE_PREFIX)) {
      const char *slash = strchr(k, '/');
      if (!slash || (size_t)(slash - k) != strlen(DELETE_PREFIX)) {
        fail(c, E_BAD_PATCH_TYPE_PRIMITIVE);
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
    if (!ov || !same_type(ov, pv)) {
      if (!is_delete_list) {
        discard_nulls(pv);
        if (set_without_directives(o, key, pv, c) < 0) goto fail;
      }
      continue;
    }
    const smp_field *f = lookup(t, key);
    json_t *nv;
    if (json_is_object(ov)) {
      nv = merge_map(c, ov, pv, f ? f->type : NULL);
    } else if (json_is_array(ov)) {
      nv = merge_slice_handler(c, ov, pv, f, is_delete_list);
    } else {
      if (set_without_directives(o, key, pv, c) < 0) goto fail;
      continue;
    }
    if (!nv || json_object_set_new(o, key, nv) < 0) {
      if (nv) oom(c);
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
    res = merge_map(&c, o, p, schema_for(target, patch));
  } else {
    c.rc = KIN_ENOMEM;
  }
  json_decref(o);
  json_decref(p);
  if (res) drop_as_decode(res);
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
  if (has_prefix(err, "json: cannot unmarshal")) return 400;
  if (strcmp(err, E_NO_LIST_OF_LISTS) == 0 || strcmp(err, E_RETAIN_KEYS_MISMATCH) == 0) return 422;
  return 500;
}
