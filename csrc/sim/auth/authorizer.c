/* authorizer.c -- kube-apiserver's authorizer chain with
 * --authorization-mode=RBAC: the privileged group system:masters first
 * (authorizerfactory.NewPrivilegedGroups), then the RBAC authorizer
 * (plugin/pkg/auth/authorizer/rbac: RuleAllows over the rules the resolver
 * visits, "RBAC: allowed by ..." or the resolution errors as the reason),
 * and the 403 a denied request gets (k8s.io/apiserver
 * pkg/endpoints/handlers/responsewriters ForbiddenStatusError). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_int.h"
#include "kin.h"

/* 1 when the array of strings arr holds "*" or s (VerbMatches,
 * APIGroupMatches). */
static int matches(const json_t *arr, const char *s) {
  size_t i;
  const json_t *v;
  json_array_foreach(arr, i, v) {
    const char *t = json_string_value(v);
    if (t && (!strcmp(t, "*") || !strcmp(t, s))) return 1;
  }
  return 0;
}

/* ResourceMatches: "*", the combined "resource/subresource", or
 * "*\/subresource" for a subresource. */
static int resource_matches(const json_t *arr, const char *combined, const char *sub) {
  size_t i;
  const json_t *v;
  json_array_foreach(arr, i, v) {
    const char *t = json_string_value(v);
    if (!t) continue;
    if (!strcmp(t, "*") || !strcmp(t, combined)) return 1;
    if (*sub && t[0] == '*' && t[1] == '/' && !strcmp(t + 2, sub)) return 1;
  }
  return 0;
}

/* NonResourceURLMatches: "*", the path, or a prefix ending in "*". */
static int url_matches(const json_t *arr, const char *path) {
  size_t i;
  const json_t *v;
  json_array_foreach(arr, i, v) {
    const char *t = json_string_value(v);
    if (!t) continue;
    size_t n = strlen(t);
    if (!strcmp(t, "*") || !strcmp(t, path)) return 1;
    if (n && t[n - 1] == '*' && !strncmp(t, path, n - 1)) return 1;
  }
  return 0;
}

int kin__sim_rule_allows(const json_t *rule, const kin__sim_authz_attrs *a) {
  if (!matches(json_object_get(rule, "verbs"), a->verb)) return 0;
  if (!a->is_resource) return url_matches(json_object_get(rule, "nonResourceURLs"), a->path);
  char combined[600];
  if (*a->subresource)
    snprintf(combined, sizeof(combined), "%s/%s", a->resource, a->subresource);
  else
    snprintf(combined, sizeof(combined), "%s", a->resource);
  if (!matches(json_object_get(rule, "apiGroups"), a->group) ||
      !resource_matches(json_object_get(rule, "resources"), combined, a->subresource))
    return 0;
  const json_t *names = json_object_get(rule, "resourceNames");
  if (!json_array_size(names)) return 1;
  size_t i;
  const json_t *v;
  json_array_foreach(names, i, v) {
    const char *t = json_string_value(v);
    if (t && *a->name && !strcmp(t, a->name)) return 1;
  }
  return 0;
}

/* The authorizingVisitor: the first rule that allows, else the errors. */
typedef struct {
  const kin__sim_authz_attrs *a;
  int allowed;
  kin__buf *reason;
  json_t *errors; /* distinct error texts, in order */
} visit_state;

/* The visitor of kin__sim_rbac_visit: stops (0) at the first rule that
 * allows, with the reason written; keeps each distinct error text (an
 * allocation failure loses it). */
static int visit(void *ud, const char *source, const json_t *rule, const char *err) {
  visit_state *v = ud;
  if (rule && kin__sim_rule_allows(rule, v->a)) {
    v->allowed = 1;
    kin__buf_printf(v->reason, "RBAC: allowed by %s", source);
    return 0;
  }
  if (err) {
    size_t i;
    const json_t *e;
    int seen = 0;
    json_array_foreach(v->errors, i, e) seen |= !strcmp(json_string_value(e), err);
    if (!seen) json_array_append_new(v->errors, json_string(err));
  }
  return 1;
}

int kin__sim_authorize(kin_sim *sim, const kin__sim_subject *u, const kin__sim_authz_attrs *a,
                       kin__buf *reason) {
  for (int i = 0; i < u->ngroups; i++)
    if (!strcmp(u->groups[i], "system:masters")) return 1;
  visit_state v = {a, 0, reason, json_array()};
  if (!v.errors) return 0;
  pthread_mutex_lock(&sim->store.mu);
  const kin__sim_rbac *p = kin__sim_rbac_policy(&sim->store, &sim->rbac);
  if (p) kin__sim_rbac_visit(p, u, a->ns, visit, &v);
  pthread_mutex_unlock(&sim->store.mu);
  if (!v.allowed && json_array_size(v.errors)) {
    /* utilerrors.NewAggregate(...).Error(): one alone, else "[a, b]" */
    size_t n = json_array_size(v.errors), i;
    const json_t *e;
    kin__buf_puts(reason, n > 1 ? "RBAC: [" : "RBAC: ");
    json_array_foreach(v.errors, i, e) {
      if (i) kin__buf_puts(reason, ", ");
      kin__buf_puts(reason, json_string_value(e));
    }
    if (n > 1) kin__buf_puts(reason, "]");
  }
  json_decref(v.errors);
  return v.allowed;
}

/* Appends s to b as Go's %q writes a printable string, with the
 * sanitizer's HTML escapes of responsewriters (&, <, >) when sanitize. */
static void quote_as(kin__buf *b, const char *s, int sanitize) {
  kin__buf_add(b, "\"", 1);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') kin__buf_add(b, "\\", 1);
    if (!sanitize) kin__buf_add(b, s, 1);
    else if (*s == '&') kin__buf_puts(b, "&amp;");
    else if (*s == '<') kin__buf_puts(b, "&lt;");
    else if (*s == '>') kin__buf_puts(b, "&gt;");
    else kin__buf_add(b, s, 1);
  }
  kin__buf_add(b, "\"", 1);
}

/* quote_as with the sanitizer's escapes. */
static void quote_sanitized(kin__buf *b, const char *s) { quote_as(b, s, 1); }

void kin__sim_forbidden(kin__sim_result *out, const kin__sim_subject *u,
                        const kin__sim_authz_attrs *a, const char *reason) {
  kin__buf m = {0};
  /* NewForbidden's prefix: "forbidden", "<resource>[.<group>] is
   * forbidden" or "<resource>[.<group>] \"<name>\" is forbidden" */
  if (!a->is_resource || (!*a->resource && !*a->group)) {
    kin__buf_puts(&m, "forbidden: ");
  } else {
    kin__buf_printf(&m, "%s%s%s ", a->resource, *a->group ? "." : "", a->group);
    if (*a->name) {
      quote_as(&m, a->name, 0); /* NewForbidden's %q: not sanitized */
      kin__buf_add(&m, " ", 1);
    }
    kin__buf_puts(&m, "is forbidden: ");
  }
  kin__buf_puts(&m, "User ");
  quote_sanitized(&m, u->user);
  kin__buf_printf(&m, " cannot %s ", a->verb);
  if (!a->is_resource) {
    kin__buf_puts(&m, "path ");
    quote_sanitized(&m, a->path);
  } else {
    char res[600];
    snprintf(res, sizeof(res), "%s%s%s", a->resource, *a->subresource ? "/" : "", a->subresource);
    kin__buf_puts(&m, "resource ");
    quote_sanitized(&m, res);
    kin__buf_puts(&m, " in API group ");
    quote_sanitized(&m, a->group);
    if (*a->ns) {
      kin__buf_puts(&m, " in the namespace ");
      quote_sanitized(&m, a->ns);
    } else {
      kin__buf_puts(&m, " at the cluster scope");
    }
  }
  if (reason && *reason) kin__buf_printf(&m, ": %s", reason);
  json_t *details = json_object();
  if (a->is_resource && *a->name) json_object_set_new(details, "name", json_string(a->name));
  if (a->is_resource && *a->group) json_object_set_new(details, "group", json_string(a->group));
  if (a->is_resource && *a->resource)
    json_object_set_new(details, "kind", json_string(a->resource));
  kin__sim_err(out, 403, "Forbidden", details, "%s", m.p ? m.p : "forbidden");
  kin__buf_free(&m);
}
