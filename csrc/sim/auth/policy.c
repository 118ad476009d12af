/* policy.c -- the RBAC objects as the authorizer reads them: a snapshot of
 * the ClusterRoles, ClusterRoleBindings, Roles and RoleBindings of the
 * store, parsed once and kept until one of them changes (the listers of
 * kube-apiserver's RBAC authorizer); the rule resolver's walk over them
 * (pkg/registry/rbac/validation DefaultRuleResolver.VisitRulesFor); and
 * the aggregation of cluster roles, as the clusterrole-aggregation
 * controller of kube-controller-manager keeps it (the sim computes it
 * here, when the policy is compiled, instead of writing it back).
 *
 * The policy is guarded by the store lock (kin__sim_store.mu): it is
 * compiled and read with that lock held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_int.h"
#include "hmap.h"
#include "label_selector.h"
#include "selector_string.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

enum { CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, ROLES, ROLE_BINDINGS, NKINDS };
static const char *const resources[NKINDS] = {"clusterroles", "clusterrolebindings", "roles",
                                              "rolebindings"};

struct kin__sim_rbac {
  /* what the snapshot was taken of, per kind: object count and largest
   * resourceVersion (a write raises the largest, a delete lowers the
   * count, so equal pairs mean the same objects) */
  size_t count[NKINDS];
  uint64_t max_rv[NKINDS];
  json_t *crbs;   /* ClusterRoleBindings, by name */
  json_t *rbs;    /* RoleBindings, by namespace then name */
  json_t *croles; /* name -> ClusterRole, aggregated rules filled */
  json_t *roles;  /* "ns/name" -> Role */
};

void kin__sim_rbac_free(kin__sim_rbac *p) {
  if (!p) return;
  json_decref(p->crbs);
  json_decref(p->rbs);
  json_decref(p->croles);
  json_decref(p->roles);
  free(p);
}

/* The label getter of kin_label_selector_matches over a labels object. */
static const char *get_label(void *ud, const char *key) {
  return json_string_value(json_object_get(ud, key));
}

/* 1 when rule equals one of the array rules (ruleExists: semantic equality). */
static int has_rule(const json_t *rules, const json_t *rule) {
  size_t i;
  const json_t *r;
  json_array_foreach(rules, i, r) if (json_equal(r, rule)) return 1;
  return 0;
}

/* Appends to out the rules of the roles other than name that sel (a
 * LabelSelector) matches, in name order; depth bounds the aggregation of
 * aggregated roles (a cycle stops there). Returns 0 or -1 (ENOMEM, or a
 * selector that does not parse: the controller then gives up). */
static int aggregate_into(const json_t *roles, const char *name, const json_t *sel, json_t *out,
                          int depth) {
  char *text = kin__sim_label_selector_string(sel);
  kin_label_selector *ls = NULL;
  char err[256];
  int rc = text && !kin_label_selector_parse(text, &ls, err, sizeof(err)) ? 0 : -1;
  free(text);
  if (rc) return -1;
  /* jansson objects iterate in insertion order; roles was filled by key */
  const char *k;
  json_t *role;
  json_object_foreach((json_t *)roles, k, role) {
    if (!strcmp(k, name)) continue;
    json_t *labels = json_object_get(json_object_get(role, "metadata"), "labels");
    if (!kin_label_selector_matches(ls, get_label, labels)) continue;
    json_t *rules = json_object_get(role, "rules"), *own = NULL;
    if (json_is_object(json_object_get(role, "aggregationRule")) && depth > 0) {
      own = json_array();
      const json_t *sels = json_object_get(json_object_get(role, "aggregationRule"),
                                           "clusterRoleSelectors");
      size_t i;
      const json_t *s;
      json_array_foreach(sels, i, s) if (own) aggregate_into(roles, k, s, own, depth - 1);
      rules = own;
    }
    size_t i;
    json_t *rule;
    json_array_foreach(rules, i, rule) {
      if (!has_rule(out, rule) && json_array_append(out, rule)) rc = -1;
    }
    json_decref(own);
  }
  kin_label_selector_free(ls);
  return rc;
}

json_t *kin__sim_rbac_aggregate(const json_t *roles, const char *name) {
  const json_t *role = json_object_get(roles, name);
  const json_t *sels =
      json_object_get(json_object_get(role, "aggregationRule"), "clusterRoleSelectors");
  json_t *out = json_array();
  size_t i;
  const json_t *sel;
  json_array_foreach(sels, i, sel) {
    if (out && aggregate_into(roles, name, sel, out, 8)) {
      /* the controller stops at an error and writes nothing */
      json_decref(out);
      json_t *rules = json_object_get(role, "rules");
      return rules ? json_incref(rules) : json_array();
    }
  }
  return out;
}

/* The signature of st: its object count and largest resourceVersion into
 * *count and *max_rv (0 and 0 for no storage). Caller holds mu. */
static void signature(kin__sim_storage *st, size_t *count, uint64_t *max_rv) {
  *count = 0;
  *max_rv = 0;
  if (!st) return;
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&st->objects, &pos))) {
    kin__sim_obj *o = e->val;
    (*count)++;
    if (o->rv > *max_rv) *max_rv = o->rv;
  }
}

/* Parses every object of st (key order) into arr (appended) and, when map
 * is not NULL, map (by key). Returns 0 or -1 (ENOMEM). Caller holds mu. */
static int load(kin__sim_store *s, kin__sim_storage *st, json_t *arr, json_t *map) {
  if (!st) return 0;
  size_t n = 0;
  int too_old = 0;
  kin__sim_obj **objs = kin__sim_store_snapshot(s, st, 0, &n, &too_old);
  int rc = n && !objs ? -1 : 0;
  for (size_t i = 0; i < n && !rc; i++) {
    json_t *o = kin__sim_obj_json(objs[i]);
    if (!o) rc = -1;
    else if (map) rc = json_object_set(map, objs[i]->key, o) ? -1 : 0;
    if (!rc && arr) rc = json_array_append(arr, o) ? -1 : 0;
    json_decref(o);
  }
  free(objs);
  return rc;
}

const kin__sim_rbac *kin__sim_rbac_policy(kin__sim_store *s, kin__sim_rbac **cache) {
  kin__sim_storage *st[NKINDS];
  size_t count[NKINDS];
  uint64_t max_rv[NKINDS];
  for (int k = 0; k < NKINDS; k++) {
    st[k] = kin__sim_registry_storage(s, RBAC_GROUP, resources[k]);
    signature(st[k], &count[k], &max_rv[k]);
  }
  kin__sim_rbac *p = *cache;
  if (p && !memcmp(p->count, count, sizeof(count)) && !memcmp(p->max_rv, max_rv, sizeof(max_rv)))
    return p;
  kin__sim_rbac *np = calloc(1, sizeof(*np));
  if (!np) return NULL;
  memcpy(np->count, count, sizeof(count));
  memcpy(np->max_rv, max_rv, sizeof(max_rv));
  np->crbs = json_array();
  np->rbs = json_array();
  np->croles = json_object();
  np->roles = json_object();
  int rc = np->crbs && np->rbs && np->croles && np->roles ? 0 : -1;
  if (!rc) rc = load(s, st[CLUSTER_ROLES], NULL, np->croles);
  if (!rc) rc = load(s, st[CLUSTER_ROLE_BINDINGS], np->crbs, NULL);
  if (!rc) rc = load(s, st[ROLES], NULL, np->roles);
  if (!rc) rc = load(s, st[ROLE_BINDINGS], np->rbs, NULL);
  /* The aggregated rules, computed from the stored ones before any is
   * replaced. */
  json_t *agg = rc ? NULL : json_object();
  const char *name;
  json_t *role;
  json_object_foreach(np->croles, name, role) {
    if (!agg || !json_is_object(json_object_get(role, "aggregationRule"))) continue;
    json_t *rules = kin__sim_rbac_aggregate(np->croles, name);
    if (!rules || json_object_set_new(agg, name, rules)) rc = -1;
  }
  json_object_foreach(agg, name, role) json_object_set(json_object_get(np->croles, name), "rules", role);
  json_decref(agg);
  if (rc || !agg) {
    kin__sim_rbac_free(np);
    return NULL;
  }
  kin__sim_rbac_free(p);
  *cache = np;
  return np;
}

/* Go's %q of s into b (the names here are printable: '"' and '\\' escaped). */
static void quote(kin__buf *b, const char *s) {
  kin__buf_add(b, "\"", 1);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') kin__buf_add(b, "\\", 1);
    kin__buf_add(b, s, 1);
  }
  kin__buf_add(b, "\"", 1);
}

/* 1 when subject (an rbacv1.Subject) is u (appliesToUser); ns is the
 * binding's namespace ("" for a cluster role binding). */
static int applies(const kin__sim_subject *u, const json_t *subject, const char *ns) {
  const char *kind = kin__sim_jstr(subject, "kind", NULL);
  const char *name = kin__sim_jstr(subject, "name", NULL);
  if (!kind || !name) return 0;
  if (!strcmp(kind, "User")) return !strcmp(u->user, name);
  if (!strcmp(kind, "Group")) {
    for (int i = 0; i < u->ngroups; i++)
      if (!strcmp(u->groups[i], name)) return 1;
    return 0;
  }
  if (strcmp(kind, "ServiceAccount")) return 0;
  const char *sns = kin__sim_jstr(subject, "namespace", NULL);
  if (!sns || !*sns) sns = ns;
  if (!*sns) return 0;
  static const char prefix[] = "system:serviceaccount:";
  size_t nl = strlen(sns);
  return !strncmp(u->user, prefix, sizeof(prefix) - 1) &&
         !strncmp(u->user + sizeof(prefix) - 1, sns, nl) &&
         u->user[sizeof(prefix) - 1 + nl] == ':' &&
         !strcmp(u->user + sizeof(prefix) + nl, name);
}

/* The rules a binding's roleRef names (GetRoleReferenceRules) into
 * *rules (NULL when the role has none); returns 1, or 0 with the lister's
 * error in err. */
static int role_rules(const kin__sim_rbac *p, const json_t *binding, const char *ns,
                      const json_t **rules, kin__buf *err) {
  const json_t *ref = json_object_get(binding, "roleRef");
  const char *kind = kin__sim_jstr(ref, "kind", NULL), *name = kin__sim_jstr(ref, "name", NULL);
  if (!name) name = "";
  const json_t *role = NULL;
  if (kind && !strcmp(kind, "ClusterRole")) {
    if ((role = json_object_get(p->croles, name))) {
      *rules = json_object_get(role, "rules");
      return 1;
    }
    kin__buf_puts(err, "clusterrole.rbac.authorization.k8s.io ");
  } else if (kind && !strcmp(kind, "Role")) {
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (*ns && (role = json_object_get(p->roles, key))) {
      *rules = json_object_get(role, "rules");
      return 1;
    }
    kin__buf_puts(err, "role.rbac.authorization.k8s.io ");
  } else {
    kin__buf_puts(err, "unsupported role reference kind: ");
    quote(err, kind ? kind : "");
    return 0;
  }
  quote(err, name);
  kin__buf_puts(err, " not found");
  return 0;
}

json_t *kin__sim_rbac_ref_rules(const kin__sim_rbac *p, const json_t *binding, const char *ns,
                                kin__buf *err) {
  const json_t *rules = NULL;
  if (!role_rules(p, binding, ns, &rules, err)) return NULL;
  return rules ? json_incref((json_t *)rules) : json_array();
}

/* The describer of a binding and its subject (clusterRoleBindingDescriber,
 * roleBindingDescriber, describeSubject) into b. */
static void describe(kin__buf *b, const json_t *binding, const json_t *subject, const char *ns) {
  const char *name = kin__sim_jstr(binding, "metadata", "name");
  const json_t *ref = json_object_get(binding, "roleRef");
  kin__buf_puts(b, *ns ? "RoleBinding " : "ClusterRoleBinding ");
  if (*ns) {
    char both[600];
    snprintf(both, sizeof(both), "%s/%s", name ? name : "", ns);
    quote(b, both);
  } else {
    quote(b, name ? name : "");
  }
  kin__buf_printf(b, " of %s ", kin__sim_jstr(ref, "kind", NULL));
  quote(b, kin__sim_jstr(ref, "name", NULL) ? kin__sim_jstr(ref, "name", NULL) : "");
  const char *kind = kin__sim_jstr(subject, "kind", NULL), *sname = kin__sim_jstr(subject, "name", NULL);
  kin__buf_printf(b, " to %s ", kind);
  if (!strcmp(kind, "ServiceAccount")) {
    const char *sns = kin__sim_jstr(subject, "namespace", NULL);
    char both[600];
    snprintf(both, sizeof(both), "%s/%s", sname, sns && *sns ? sns : ns);
    quote(b, both);
  } else {
    quote(b, sname);
  }
}

/* Visits the rules of the bindings of arr that apply to u (of namespace
 * ns; "" for cluster role bindings). Returns 0 when fn stopped. */
static int visit_bindings(const kin__sim_rbac *p, const json_t *arr, const kin__sim_subject *u,
                          const char *ns, kin__sim_rule_visitor fn, void *ud) {
  size_t i;
  const json_t *b;
  json_array_foreach(arr, i, b) {
    if (*ns) {
      const char *bns = kin__sim_jstr(b, "metadata", "namespace");
      if (!bns || strcmp(bns, ns)) continue;
    }
    const json_t *subjects = json_object_get(b, "subjects"), *subject = NULL;
    size_t j;
    const json_t *sj;
    json_array_foreach(subjects, j, sj) {
      if (applies(u, sj, ns)) {
        subject = sj;
        break;
      }
    }
    if (!subject) continue;
    kin__buf err = {0};
    const json_t *rules = NULL;
    if (!role_rules(p, b, ns, &rules, &err)) {
      int go_on = fn(ud, NULL, NULL, err.p ? err.p : "");
      kin__buf_free(&err);
      if (!go_on) return 0;
      continue;
    }
    kin__buf_free(&err);
    kin__buf src = {0};
    describe(&src, b, subject, ns);
    size_t k;
    const json_t *rule;
    json_array_foreach(rules, k, rule) {
      if (!fn(ud, src.p ? src.p : "", rule, NULL)) {
        kin__buf_free(&src);
        return 0;
      }
    }
    kin__buf_free(&src);
  }
  return 1;
}

void kin__sim_rbac_visit(const kin__sim_rbac *p, const kin__sim_subject *u, const char *ns,
                         kin__sim_rule_visitor fn, void *ud) {
  if (!visit_bindings(p, p->crbs, u, "", fn, ud)) return;
  if (*ns) visit_bindings(p, p->rbs, u, ns, fn, ud);
}
