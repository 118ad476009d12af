/* match.c -- whether a webhook is called for a request, as
 * k8s.io/apiserver pkg/admission/plugin/webhook/predicates (rules:
 * operations, apiGroups, apiVersions, resources with the wildcard forms
 * "*", "all/all", "pods/all", "all/status" (each "all" written "*"),
 * scope; namespaceSelector on the namespace's labels, a namespace's own for namespaces; objectSelector on the new or
 * the old object's labels) and generic's matchPolicy (Equivalent: another
 * served version of the same group and resource). */
#include <stdlib.h>
#include <string.h>

#include "label_selector.h"
#include "match.h"
#include "selector_string.h"

static const char *const OPS[] = {"", "CREATE", "UPDATE", "DELETE"};

/* 1 when the JSON array of strings list holds s or "*". */
static int list_has(const json_t *list, const char *s) {
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v) {
    const char *x = json_string_value(v);
    if (x && (!strcmp(x, "*") || !strcmp(x, s))) return 1;
  }
  return 0;
}

/* 1 when one of the rule's resources names resource/sub (sub "" for the
 * resource itself), as rules.go's resource(). */
static int resource_matches(const json_t *list, const char *resource, const char *sub) {
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v) {
    const char *x = json_string_value(v);
    if (!x) continue;
    if (!strcmp(x, "*/*")) return 1;
    const char *slash = strchr(x, '/');
    if (!slash) {
      if (!*sub && (!strcmp(x, "*") || !strcmp(x, resource))) return 1;
      continue;
    }
    size_t rl = (size_t)(slash - x);
    int res_ok = (rl == 1 && x[0] == '*') || (rl == strlen(resource) && !strncmp(x, resource, rl));
    int sub_ok = *sub && (!strcmp(slash + 1, "*") || !strcmp(slash + 1, sub));
    if (res_ok && sub_ok) return 1;
  }
  return 0;
}

/* 1 when rule matches the request on r (namespace ns, "" for a
 * cluster-scoped object). */
static int rule_matches(const json_t *rule, int op, const kin__sim_resource *r, const char *sub,
                        const char *ns) {
  if (!list_has(json_object_get(rule, "operations"), OPS[op])) return 0;
  if (!list_has(json_object_get(rule, "apiGroups"), r->group)) return 0;
  if (!list_has(json_object_get(rule, "apiVersions"), r->version)) return 0;
  if (!resource_matches(json_object_get(rule, "resources"), r->resource, sub)) return 0;
  const char *scope = kin__sim_jstr(rule, "scope", NULL);
  int is_ns = !r->crd_name && !*r->group && !strcmp(r->resource, "namespaces");
  if (scope && !strcmp(scope, "Namespaced")) return !is_ns && ns && *ns;
  if (scope && !strcmp(scope, "Cluster")) return is_ns || !ns || !*ns;
  return 1;
}

/* 1 when a rule of h matches r. */
static int rules_match(const kin__sim_hook *h, int op, const kin__sim_resource *r,
                       const char *sub, const char *ns) {
  size_t i;
  json_t *rule;
  json_array_foreach(h->rules, i, rule) {
    if (rule_matches(rule, op, r, sub, ns)) return 1;
  }
  return 0;
}

static const char *label_get(void *ud, const char *key) {
  return json_string_value(json_object_get(ud, key));
}

/* 1 when LabelSelector sel (JSON, NULL: everything) selects labels (an
 * object or NULL); 0 as well for a selector that does not parse. */
static int selects(const json_t *sel, const json_t *labels) {
  if (!sel) return 1;
  char *str = kin__sim_label_selector_string(sel);
  if (!str) return 0;
  kin_label_selector *ls = NULL;
  char err[128];
  int ok = 0;
  if (!kin_label_selector_parse(str, &ls, err, sizeof(err))) {
    json_t *empty = json_object();
    ok = kin_label_selector_matches(ls, label_get, (void *)(labels ? labels : empty));
    json_decref(empty);
    kin_label_selector_free(ls);
  }
  free(str);
  return ok;
}

static const json_t *labels_of(const json_t *obj) {
  return json_object_get(json_object_get(obj, "metadata"), "labels");
}

/* The labels of namespace ns (a new reference, an empty object when it
 * has none), or NULL when it does not exist. Takes the store's lock. */
static json_t *namespace_labels(kin_sim *sim, const char *ns) {
  kin__sim_store *s = &sim->store;
  json_t *labels = NULL;
  pthread_mutex_lock(&s->mu);
  kin__sim_storage *st = kin__sim_namespaces_storage(s);
  kin__sim_obj *o = st ? kin__sim_lookup(st, NULL, ns) : NULL;
  json_t *md = o ? kin__sim_obj_member(o, "metadata") : NULL;
  pthread_mutex_unlock(&s->mu);
  if (o) {
    json_t *l = json_object_get(md, "labels");
    labels = json_is_object(l) ? json_incref(l) : json_object();
  }
  json_decref(md);
  return labels;
}

/* Another served version of r's group and resource that h's rules
 * match (matchPolicy Equivalent), or NULL. Takes the store's lock. */
static kin__sim_resource *equivalent(kin_sim *sim, const kin__sim_hook *h, int op,
                                     const kin__sim_resource *r, const char *sub,
                                     const char *ns) {
  kin__sim_store *s = &sim->store;
  kin__sim_resource *found = NULL;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nres && !found; i++) {
    kin__sim_resource *o = s->res[i];
    if (o == r || o->removed || o->storage != r->storage || strcmp(o->group, r->group) ||
        strcmp(o->resource, r->resource))
      continue;
    if (rules_match(h, op, o, sub, ns)) found = o;
  }
  pthread_mutex_unlock(&s->mu);
  return found;
}

int kin__sim_hook_matches(kin_sim *sim, const kin__sim_hook *h, const kin__sim_admit_attrs *a,
                          const char *subresource, const json_t *obj, kin__sim_resource **as) {
  kin__sim_resource *r = a->r;
  const char *sub = subresource ? subresource : "";
  const char *ns = a->ns ? a->ns : "";
  *as = r;
  if (!rules_match(h, a->op, r, sub, ns)) {
    kin__sim_resource *o = h->exact ? NULL : equivalent(sim, h, a->op, r, sub, ns);
    if (!o) return 0;
    *as = o;
  }
  /* an empty selector selects all; else the new or the old object must
   * be there and selected */
  if (h->obj_sel && json_object_size(h->obj_sel) &&
      !(obj && selects(h->obj_sel, labels_of(obj))) &&
      !(a->old && selects(h->obj_sel, labels_of(a->old))))
    return 0;
  if (!h->ns_sel) return 1;
  int is_ns = !r->crd_name && !*r->group && !strcmp(r->resource, "namespaces");
  if (is_ns) return selects(h->ns_sel, labels_of(obj ? obj : a->old));
  if (!r->namespaced || !*ns) return 1;
  json_t *labels = namespace_labels(sim, ns);
  /* no namespace: NamespaceLifecycle refuses the write (the store) */
  int ok = labels && selects(h->ns_sel, labels);
  json_decref(labels);
  return ok;
}
