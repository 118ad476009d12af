/* http_rbac_escalation.c -- RBAC's privilege-escalation prevention on the writes of
 * roles and bindings (k8s.io/kubernetes pkg/registry/rbac: the policybased
 * storages, escalation_check.go, validation.ConfirmNoEscalation, and
 * component-helpers' policy_comparator.go): under authorization mode RBAC
 * a Role or ClusterRole may be written (created, replaced, patched,
 * applied: http_resource.c passes the object the write would store) only
 * by system:masters,
 * by a user allowed to `escalate` it, or by one who already holds every
 * rule it grants (an aggregated ClusterRole: everything); a RoleBinding or
 * ClusterRoleBinding only by system:masters, a user allowed to `bind` its
 * role, or one who holds every rule of that role (a role that does not
 * exist: 404 `rolebindings.rbac.authorization.k8s.io "<role>" not found`,
 * as the server words it). Otherwise 403 with the
 * server's text: `user "u" (groups=["g"]) is attempting to grant RBAC
 * permissions not currently held:` and the missing rules, compacted and
 * sorted, one a line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_int.h"
#include "http_int.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

static int has(const json_t *arr, const char *s) {
  size_t i;
  const json_t *v;
  json_array_foreach(arr, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return 1;
  return 0;
}

/* 1 when every string of contains is in set (hasAll). */
static int has_all(const json_t *set, const json_t *contains) {
  size_t i;
  const json_t *v;
  json_array_foreach(contains, i, v) if (!has(set, json_string_value(v))) return 0;
  return 1;
}

/* resourceCoversAll: "*", every one, or "*\/sub" for "res/sub". */
static int resources_cover(const json_t *set, const json_t *covers) {
  if (has(set, "*") || has_all(set, covers)) return 1;
  size_t i;
  const json_t *v;
  json_array_foreach(covers, i, v) {
    const char *path = json_string_value(v), *slash = strchr(path, '/');
    if (has(set, path)) continue;
    if (!slash) return 0;
    char any[600];
    snprintf(any, sizeof(any), "*/%s", slash + 1);
    if (!has(set, any)) return 0;
  }
  return 1;
}

/* nonResourceURLsCoversAll: each path equal to, or under a "*" prefix of,
 * an owner's. */
static int urls_cover(const json_t *set, const json_t *covers) {
  size_t i, j;
  const json_t *v, *o;
  json_array_foreach(covers, i, v) {
    const char *path = json_string_value(v);
    int covered = 0;
    json_array_foreach(set, j, o) {
      const char *owner = json_string_value(o);
      size_t n = owner ? strlen(owner) : 0;
      while (n && owner[n - 1] == '*') n--;
      if (owner && (!strcmp(owner, path) ||
                    (owner[0] && owner[strlen(owner) - 1] == '*' && !strncmp(path, owner, n))))
        covered = 1;
    }
    if (!covered) return 0;
  }
  return 1;
}

/* ruleCovers: 1 when owner grants everything sub (a broken-down rule) does. */
static int rule_covers(const json_t *owner, const json_t *sub) {
  const json_t *ov = json_object_get(owner, "verbs"), *og = json_object_get(owner, "apiGroups");
  const json_t *on = json_object_get(owner, "resourceNames");
  const json_t *sn = json_object_get(sub, "resourceNames");
  int names = !json_array_size(sn) ? !json_array_size(on)
                                   : (!json_array_size(on) || has_all(on, sn));
  return (has(ov, "*") || has_all(ov, json_object_get(sub, "verbs"))) &&
         (has(og, "*") || has_all(og, json_object_get(sub, "apiGroups"))) &&
         resources_cover(json_object_get(owner, "resources"), json_object_get(sub, "resources")) &&
         urls_cover(json_object_get(owner, "nonResourceURLs"), json_object_get(sub, "nonResourceURLs")) &&
         names;
}

/* BreakdownRule: one rule per group, resource, verb (and name), then per
 * non-resource URL and verb, appended to out. */
static void breakdown(const json_t *rule, json_t *out) {
  const json_t *groups = json_object_get(rule, "apiGroups"), *res = json_object_get(rule, "resources");
  const json_t *verbs = json_object_get(rule, "verbs"), *names = json_object_get(rule, "resourceNames");
  size_t a, b, c, d;
  const json_t *g, *r, *v, *n;
  json_array_foreach(groups, a, g) json_array_foreach(res, b, r) json_array_foreach(verbs, c, v) {
    if (!json_array_size(names))
      json_array_append_new(out, json_pack("{s:[O], s:[O], s:[O]}", "apiGroups", g, "resources", r,
                                           "verbs", v));
    json_array_foreach(names, d, n)
      json_array_append_new(out, json_pack("{s:[O], s:[O], s:[O], s:[O]}", "apiGroups", g,
                                           "resources", r, "verbs", v, "resourceNames", n));
  }
  json_array_foreach(json_object_get(rule, "nonResourceURLs"), a, n) json_array_foreach(verbs, c, v)
    json_array_append_new(out, json_pack("{s:[O], s:[O]}", "nonResourceURLs", n, "verbs", v));
}

/* Appends Go's %q of a []string ("[\"a\" \"b\"]") to b. */
static void quote_list(kin__buf *b, const json_t *arr) {
  kin__buf_add(b, "[", 1);
  size_t i;
  const json_t *v;
  json_array_foreach(arr, i, v) {
    kin__buf_puts(b, i ? " \"" : "\"");
    for (const char *s = json_string_value(v); s && *s; s++) {
      if (*s == '"' || *s == '\\') kin__buf_add(b, "\\", 1);
      kin__buf_add(b, s, 1);
    }
    kin__buf_add(b, "\"", 1);
  }
  kin__buf_add(b, "]", 1);
}

/* rbacv1helpers.CompactString of rule into a new string (caller frees). */
static char *compact_string(const json_t *rule) {
  static const char *const keys[] = {"apiGroups", "resources", "nonResourceURLs", "resourceNames",
                                     "verbs"};
  static const char *const names[] = {"APIGroups", "Resources", "NonResourceURLs", "ResourceNames",
                                      "Verbs"};
  kin__buf b = {0};
  kin__buf_add(&b, "{", 1);
  int first = 1;
  for (int k = 0; k < 5; k++) {
    const json_t *arr = json_object_get(rule, keys[k]);
    if (!json_array_size(arr)) continue;
    kin__buf_printf(&b, "%s%s:", first ? "" : ", ", names[k]);
    quote_list(&b, arr);
    first = 0;
  }
  kin__buf_add(&b, "}", 1);
  return b.p;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The owner's rules collected by kin__sim_rbac_visit (RulesFor). */
typedef struct {
  json_t *rules, *errors;
} owner_acc;

/* Keeps each rule (a reference) and each distinct error; always goes on. */
static int collect(void *ud, const char *source, const json_t *rule, const char *err) {
  owner_acc *acc = ud;
  if (rule) json_array_append(acc->rules, (json_t *)rule);
  if (err && !has(acc->errors, err)) json_array_append_new(acc->errors, json_string(err));
  return 1;
}

/* ConfirmNoEscalation: NULL when u's RBAC rules in ns cover rules, else
 * the refusal's text (malloc'd, the caller frees). Takes the store lock. */
static char *confirm(kin_sim *sim, const kin__sim_subject *u, const char *ns, const json_t *rules) {
  owner_acc acc = {json_array(), json_array()};
  pthread_mutex_lock(&sim->store.mu);
  const kin__sim_rbac *p = kin__sim_rbac_policy(&sim->store, &sim->rbac);
  if (p) kin__sim_rbac_visit(p, u, ns, collect, &acc);
  pthread_mutex_unlock(&sim->store.mu);
  json_t *subs = json_array(), *missing = json_object();
  size_t i, j;
  const json_t *r, *o;
  json_array_foreach(rules, i, r) breakdown(r, subs);
  json_array_foreach(subs, i, r) {
    int covered = 0;
    json_array_foreach(acc.rules, j, o) if (!covered && rule_covers(o, r)) covered = 1;
    if (covered) continue;
    /* CompactRules: simple rules of one group, resource (and name) merge
     * their verbs; the non-resource ones stay as they are */
    char key[1400];
    const json_t *n = json_object_get(r, "resourceNames");
    if (json_object_get(r, "nonResourceURLs"))
      snprintf(key, sizeof(key), "u%zu", i);
    else
      snprintf(key, sizeof(key), "r%s\n%s\n%d\n%s",
               json_string_value(json_array_get(json_object_get(r, "apiGroups"), 0)),
               json_string_value(json_array_get(json_object_get(r, "resources"), 0)),
               json_array_size(n) > 0, json_array_size(n) ? json_string_value(json_array_get(n, 0)) : "");
    json_t *have = json_object_get(missing, key);
    if (have)
      json_array_extend(json_object_get(have, "verbs"), json_object_get(r, "verbs"));
    else
      json_object_set_new(missing, key, json_deep_copy(r));
  }
  char *msg = NULL;
  size_t nm = json_object_size(missing), ns_ = 0;
  if (nm) {
    char **lines = calloc(nm, sizeof(*lines));
    const char *k;
    json_t *m;
    json_object_foreach(missing, k, m) if (lines) lines[ns_++] = compact_string(m);
    if (lines) qsort(lines, ns_, sizeof(*lines), cmp_str);
    kin__buf b = {0};
    kin__buf_printf(&b, "user \"%s\" (groups=", u->user);
    json_t *groups = json_array();
    for (int g = 0; g < u->ngroups; g++) json_array_append_new(groups, json_string(u->groups[g]));
    quote_list(&b, groups);
    json_decref(groups);
    kin__buf_puts(&b, ") is attempting to grant RBAC permissions not currently held:");
    for (size_t l = 0; lines && l < ns_; l++) {
      if (lines[l] && (!l || !lines[l - 1] || strcmp(lines[l], lines[l - 1])))
        kin__buf_printf(&b, "\n%s", lines[l]);
    }
    for (size_t l = 0; lines && l < ns_; l++) free(lines[l]);
    free(lines);
    size_t ne = json_array_size(acc.errors);
    if (ne) {
      kin__buf_puts(&b, "; resolution errors: [");
      if (ne > 1) kin__buf_add(&b, "[", 1);
      json_array_foreach(acc.errors, i, o) kin__buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(o));
      kin__buf_puts(&b, ne > 1 ? "]]" : "]");
    }
    msg = b.p ? b.p : strdup("out of memory");
  }
  json_decref(subs);
  json_decref(missing);
  json_decref(acc.rules);
  json_decref(acc.errors);
  return msg;
}

/* 1 when u may verb (escalate, bind) the role kind/name in ns. */
static int may(kin_sim *sim, const kin__sim_subject *u, const char *verb, const char *group,
               const char *resource, const char *ns, const char *name) {
  kin__sim_authz_attrs a = {1, verb, group, "*", resource, "", ns, name, ""};
  kin__buf reason = {0};
  int ok = kin__sim_authorize(sim, u, &a, &reason);
  kin__buf_free(&reason);
  return ok;
}

int kin__sim_rbac_escalation_check(kin__sim_req *req, kin__sim_resource *r, const char *ns,
                                   const json_t *obj, kin__sim_result *out) {
  if (!req->sim->authz_rbac || r->crd_name || strcmp(r->group, RBAC_GROUP)) return 0;
  const char *res = r->resource;
  int role = !strcmp(res, "roles") || !strcmp(res, "clusterroles");
  if (!role && strcmp(res, "rolebindings") && strcmp(res, "clusterrolebindings")) return 0;
  if (!r->namespaced) ns = "";
  kin__sim_subject u;
  kin__sim_subject_of(req, &u);
  for (int i = 0; i < u.ngroups; i++)
    if (!strcmp(u.groups[i], "system:masters")) return 0;
  const char *name = kin__sim_jstr(obj, "metadata", "name");
  if (!name) name = "";
  char *msg = NULL;
  if (role) {
    if (may(req->sim, &u, "escalate", RBAC_GROUP, res, ns, name)) return 0;
    json_t *rules = json_is_object(json_object_get(obj, "aggregationRule"))
                        ? json_pack("[{s:[s], s:[s], s:[s]}, {s:[s], s:[s]}]", "verbs", "*",
                                    "apiGroups", "*", "resources", "*", "verbs", "*",
                                    "nonResourceURLs", "*")
                        : json_incref(json_object_get(obj, "rules"));
    msg = confirm(req->sim, &u, ns, rules);
    json_decref(rules);
  } else {
    const json_t *ref = json_object_get(obj, "roleRef");
    const char *kind = kin__sim_jstr(ref, "kind", NULL), *rname = kin__sim_jstr(ref, "name", NULL);
    const char *rgroup = kin__sim_jstr(ref, "apiGroup", NULL);
    if (kind && rname && (!strcmp(kind, "ClusterRole") || !strcmp(kind, "Role")) &&
        may(req->sim, &u, "bind", rgroup ? rgroup : "",
            !strcmp(kind, "ClusterRole") ? "clusterroles" : "roles", ns, rname))
      return 0;
    kin__buf err = {0};
    pthread_mutex_lock(&req->sim->store.mu);
    const kin__sim_rbac *p = kin__sim_rbac_policy(&req->sim->store, &req->sim->rbac);
    json_t *rules = p ? kin__sim_rbac_ref_rules(p, obj, ns, &err) : NULL;
    pthread_mutex_unlock(&req->sim->store.mu);
    kin__buf_free(&err);
    if (!rules) {
      /* the missing role's NotFound, as the binding storage reports it */
      kin__sim_err_not_found(out, RBAC_GROUP, res, rname ? rname : "");
      return 1;
    }
    msg = confirm(req->sim, &u, ns, rules);
    json_decref(rules);
  }
  if (!msg) return 0;
  json_t *details = json_pack("{s:s, s:s}", "group", RBAC_GROUP, "kind", res);
  if (*name) json_object_set_new(details, "name", json_string(name));
  /* NewForbidden's text; built here, as the missing rules may be many
   * (kin__sim_err's message is bounded) */
  kin__buf m = {0};
  kin__buf_printf(&m, "%s.%s ", res, RBAC_GROUP);
  if (*name) kin__buf_printf(&m, "\"%s\" ", name);
  kin__buf_printf(&m, "is forbidden: %s", msg);
  free(msg);
  json_decref(out->body);
  out->code = 403;
  out->body = kin__sim_status(403, "Forbidden", m.p ? m.p : "forbidden", details);
  kin__buf_free(&m);
  if (!out->body) kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
  return 1;
}
