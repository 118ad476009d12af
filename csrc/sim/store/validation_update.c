/* validation_update.c -- the immutable fields of built-in kinds that the
 * sim checks on update, with kube-apiserver v1.36.3's messages (its
 * ValidateXUpdate functions; values quoted as the 1.36 field errors quote
 * them, compact JSON): the selector of Deployments, ReplicaSets,
 * StatefulSets and DaemonSets, the data of an immutable ConfigMap or
 * Secret and a Secret's type, the roleRef of RoleBindings and
 * ClusterRoleBindings, a StorageClass's provisioner, a PriorityClass's
 * value. Other immutable and required fields (a Job's selector and
 * template, a Service's clusterIP, a bound PVC's spec...) are not checked:
 * docs/sim.md lists the gap. Runs under the store lock. */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* 1 when member key differs between a and b (absent counts). */
static int differs(const json_t *a, const json_t *b, const char *key) {
  const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
  if (!x && !y) return 0;
  return !x || !y || !json_equal(x, y);
}

/* Returns a new metav1.LabelSelector in Go's field order (matchLabels
 * with sorted keys, then matchExpressions: key, operator, values). */
static json_t *selector_go(const json_t *sel) {
  json_t *out = json_object();
  const json_t *ml = json_object_get(sel, "matchLabels");
  if (json_is_object(ml) && json_object_size(ml)) json_object_set(out, "matchLabels", (json_t *)ml);
  const json_t *me = json_object_get(sel, "matchExpressions");
  if (json_is_array(me) && json_array_size(me)) {
    json_t *arr = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(me, i, e) {
      json_t *x = json_object();
      static const char *const keys[] = {"key", "operator", "values", NULL};
      for (int k = 0; keys[k]; k++)
        if (json_object_get(e, keys[k])) json_object_set(x, keys[k], json_object_get(e, keys[k]));
      json_array_append_new(arr, x);
    }
    json_object_set_new(out, "matchExpressions", arr);
  }
  return out;
}

/* Fills out with the 422 of field and detail "Invalid value: <v as JSON,
 * map keys sorted if sort>: why"; returns -1. v is stolen. */
static int invalid(const kin__sim_resource *r, const char *name, const char *field, json_t *v,
                   int sort, const char *why, kin__sim_result *out) {
  char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | (sort ? JSON_SORT_KEYS : 0));
  json_decref(v);
  size_t n = (text ? strlen(text) : 0) + strlen(why) + 32;
  char *detail = malloc(n);
  if (detail) snprintf(detail, n, "Invalid value: %s: %s", text ? text : "null", why);
  kin__sim_err_invalid(out, r->group, r->kind, name, field, "FieldValueInvalid",
                       detail ? detail : why);
  free(text);
  free(detail);
  return -1;
}

/* The string member key of o, "" when absent. */
static const char *str_of(const json_t *o, const char *key) {
  const char *v = kin__sim_jstr(o, key, NULL);
  return v ? v : "";
}

/* Fills out with the 422 Forbidden of field; returns -1. */
static int forbidden(const kin__sim_resource *r, const char *name, const char *field,
                     const char *why, kin__sim_result *out) {
  char detail[256];
  snprintf(detail, sizeof(detail), "Forbidden: %s", why);
  kin__sim_err_invalid(out, r->group, r->kind, name, field, "FieldValueForbidden", detail);
  return -1;
}

/* 0, or -1 with the 422 of the first immutable field that changed in out
 * (caller frees its body). old and obj borrowed. */
int kin__sim_validate_update(const kin__sim_resource *r, const char *name, const json_t *old,
                             const json_t *obj, kin__sim_result *out) {
  if (r->crd_name) return 0;
  const char *g = r->group, *res = r->resource;
  if (!strcmp(g, "apps") && (!strcmp(res, "deployments") || !strcmp(res, "replicasets") ||
                             !strcmp(res, "statefulsets") || !strcmp(res, "daemonsets"))) {
    const json_t *a = json_object_get(old, "spec"), *b = json_object_get(obj, "spec");
    /* (a selector removed is the real server's Required value, not checked) */
    if (json_object_get(b, "selector") && differs(a, b, "selector"))
      return invalid(r, name, "spec.selector", selector_go(json_object_get(b, "selector")), 0,
                     "field is immutable", out);
    return 0;
  }
  if (!*g && (!strcmp(res, "configmaps") || !strcmp(res, "secrets"))) {
    int secret = !strcmp(res, "secrets");
    /* an absent type is SetDefaults_Secret's Opaque */
    const char *ot = kin__sim_jstr(old, "type", NULL), *nt = kin__sim_jstr(obj, "type", NULL);
    if (secret && strcmp(ot ? ot : "Opaque", nt ? nt : "Opaque"))
      return invalid(r, name, "type", json_string(nt ? nt : "Opaque"), 0, "field is immutable",
                     out);
    if (!json_is_true(json_object_get(old, "immutable"))) return 0;
    static const char why[] = "field is immutable when `immutable` is set";
    if (differs(old, obj, "immutable")) return forbidden(r, name, "immutable", why, out);
    if (differs(old, obj, "data")) return forbidden(r, name, "data", why, out);
    if (!secret && differs(old, obj, "binaryData"))
      return forbidden(r, name, "binaryData", why, out);
    return 0;
  }
  if (!strcmp(g, "rbac.authorization.k8s.io") &&
      (!strcmp(res, "rolebindings") || !strcmp(res, "clusterrolebindings"))) {
    if (!differs(old, obj, "roleRef")) return 0;
    /* rbac.RoleRef has no json tags inside the server: Go's field names */
    const json_t *rr = json_object_get(obj, "roleRef");
    json_t *v = json_pack("{s:s, s:s, s:s}", "APIGroup", str_of(rr, "apiGroup"), "Kind",
                          str_of(rr, "kind"), "Name", str_of(rr, "name"));
    return invalid(r, name, "roleRef", v, 0, "cannot change roleRef", out);
  }
  if (!strcmp(g, "storage.k8s.io") && !strcmp(res, "storageclasses") &&
      differs(old, obj, "provisioner"))
    return invalid(r, name, "provisioner", json_incref(json_object_get(obj, "provisioner")), 0,
                   "field is immutable", out);
  if (!strcmp(g, "scheduling.k8s.io") && !strcmp(res, "priorityclasses") &&
      differs(old, obj, "value"))
    return forbidden(r, name, "value", "may not be changed in an update.", out);
  return 0;
}
