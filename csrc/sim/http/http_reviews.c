/* http_reviews.c -- the review APIs, answered on create and never stored
 * (k8s.io/kubernetes pkg/registry/authorization and authentication):
 * SubjectAccessReview, LocalSubjectAccessReview and SelfSubjectAccessReview
 * ask the authorizer chain (system:masters, RBAC) about a user or the
 * caller; SelfSubjectRulesReview lists the caller's rules in a namespace;
 * TokenReview authenticates a bearer token of the sim; SelfSubjectReview
 * (`kubectl auth whoami`) tells the caller who it is. The validation
 * messages are pkg/apis/authorization/validation's, the first error only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_int.h"
#include "http_int.h"

/* 422 for one field of a review: ".<group> \"\" is invalid: ...". */
static void invalid(kin__sim_result *out, const char *group, const char *field,
                    const json_t *value, const char *why) {
  char *v = value ? json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  char detail[1024];
  snprintf(detail, sizeof(detail), "Invalid value: %s: %s", v ? v : "null", why);
  free(v);
  kin__sim_err_invalid(out, group, "", "", field, "FieldValueInvalid", detail);
}

/* The attributes of a review's spec (authorizationutil.ResourceAttributesFrom
 * and NonResourceAttributesFrom); strings borrowed from spec. */
static void attrs_of(const json_t *spec, kin__sim_authz_attrs *a) {
  const json_t *ra = json_object_get(spec, "resourceAttributes");
  const json_t *na = json_object_get(spec, "nonResourceAttributes");
#define S(o, k) (kin__sim_jstr(o, k, NULL) ? kin__sim_jstr(o, k, NULL) : "")
  memset(a, 0, sizeof(*a));
  a->is_resource = ra != NULL;
  a->verb = S(ra ? ra : na, "verb");
  a->group = S(ra, "group");
  a->version = S(ra, "version");
  a->resource = S(ra, "resource");
  a->subresource = S(ra, "subresource");
  a->ns = S(ra, "namespace");
  a->name = S(ra, "name");
  a->path = S(na, "path");
#undef S
}

/* Checks that spec has exactly one kind of attributes; 0 or -1 with the
 * 422 in out. */
static int check_attrs(const json_t *spec, kin__sim_result *out) {
  const json_t *ra = json_object_get(spec, "resourceAttributes");
  const json_t *na = json_object_get(spec, "nonResourceAttributes");
  if (ra && na) {
    invalid(out, "authorization.k8s.io", "spec.nonResourceAttributes", na,
            "cannot be specified in combination with resourceAttributes");
    return -1;
  }
  if (!ra && !na) {
    invalid(out, "authorization.k8s.io", "spec.resourceAttributes", NULL,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified");
    return -1;
  }
  return 0;
}

/* Sets obj's status from authorizing a for u; fills out with obj (201). */
static void answer_access(kin__sim_req *req, const kin__sim_subject *u,
                          const kin__sim_authz_attrs *a, json_t *obj, kin__sim_result *out) {
  kin__buf reason = {0};
  int allowed = kin__sim_authorize(req->sim, u, a, &reason);
  json_t *st = json_pack("{s:b}", "allowed", allowed);
  if (st && reason.p && *reason.p) json_object_set_new(st, "reason", json_string(reason.p));
  kin__buf_free(&reason);
  json_object_set_new(obj, "status", st);
  if (!json_object_get(obj, "metadata")) json_object_set_new(obj, "metadata", json_object());
  out->code = 201;
  out->body = json_incref(obj);
}

/* SubjectAccessReview and LocalSubjectAccessReview (ns: the path's). */
static void subject_access(kin__sim_req *req, const char *ns, json_t *obj, kin__sim_result *out) {
  json_t *spec = json_object_get(obj, "spec");
  if (check_attrs(spec, out)) return;
  if (ns && *ns) {
    const json_t *ra = json_object_get(spec, "resourceAttributes");
    if (!ra) {
      invalid(out, "authorization.k8s.io", "spec.nonResourceAttributes",
              json_object_get(spec, "nonResourceAttributes"), "disallowed on this kind of request");
      return;
    }
    const char *rns = kin__sim_jstr(ra, "namespace", NULL);
    if (strcmp(rns ? rns : "", ns)) {
      json_t *v = json_string(rns ? rns : "");
      invalid(out, "authorization.k8s.io", "spec.resourceAttributes.namespace", v,
              "must match metadata.namespace");
      json_decref(v);
      return;
    }
  }
  const char *user = kin__sim_jstr(spec, "user", NULL);
  const json_t *groups = json_object_get(spec, "groups");
  if ((!user || !*user) && !json_array_size(groups)) {
    json_t *v = json_string(user ? user : "");
    invalid(out, "authorization.k8s.io", "spec.user", v,
            "at least one of user or group must be specified");
    json_decref(v);
    return;
  }
  kin__sim_subject u;
  memset(&u, 0, sizeof(u));
  u.user = user ? user : "";
  size_t i;
  const json_t *g;
  json_array_foreach(groups, i, g) {
    if (json_is_string(g) && u.ngroups < KIN__SIM_SUBJECT_MAX_GROUPS)
      u.groups[u.ngroups++] = json_string_value(g);
  }
  kin__sim_authz_attrs a;
  attrs_of(spec, &a);
  if (!json_is_object(json_object_get(obj, "metadata")))
    json_object_set_new(obj, "metadata", json_object());
  if (ns && *ns) json_object_set_new(json_object_get(obj, "metadata"), "namespace", json_string(ns));
  answer_access(req, &u, &a, obj, out);
}

/* SelfSubjectAccessReview: the caller's own access. */
static void self_access(kin__sim_req *req, json_t *obj, kin__sim_result *out) {
  json_t *spec = json_object_get(obj, "spec");
  if (check_attrs(spec, out)) return;
  kin__sim_subject u;
  kin__sim_subject_of(req, &u);
  kin__sim_authz_attrs a;
  attrs_of(spec, &a);
  answer_access(req, &u, &a, obj, out);
}

/* The rules collected by a SelfSubjectRulesReview (the ruleAccumulator). */
typedef struct {
  json_t *res, *nonres;
  json_t *errors;
} rules_acc;

/* The visitor of a SelfSubjectRulesReview: every rule into the resource
 * or non-resource list (as authorizer.ResourceRuleInfo and
 * NonResourceRuleInfo), each distinct error kept; always goes on (1). */
static int collect(void *ud, const char *source, const json_t *rule, const char *err) {
  rules_acc *acc = ud;
  if (err) {
    size_t i;
    const json_t *e;
    int seen = 0;
    json_array_foreach(acc->errors, i, e) seen |= !strcmp(json_string_value(e), err);
    if (!seen) json_array_append_new(acc->errors, json_string(err));
  }
  if (!rule) return 1;
  static const char *const res_keys[] = {"verbs", "apiGroups", "resources", "resourceNames"};
  if (json_array_size(json_object_get(rule, "resources"))) {
    json_t *r = json_object();
    for (int k = 0; k < 4; k++) {
      json_t *v = json_object_get(rule, res_keys[k]);
      if (v && (k == 0 || json_array_size(v))) json_object_set(r, res_keys[k], v);
    }
    json_array_append_new(acc->res, r);
  }
  if (json_array_size(json_object_get(rule, "nonResourceURLs")))
    json_array_append_new(acc->nonres,
                          json_pack("{s:O, s:O}", "verbs", json_object_get(rule, "verbs"),
                                    "nonResourceURLs", json_object_get(rule, "nonResourceURLs")));
  return 1;
}

/* SelfSubjectRulesReview: the caller's rules in spec.namespace. */
static void self_rules(kin__sim_req *req, json_t *obj, kin__sim_result *out) {
  const char *ns = kin__sim_jstr(obj, "spec", "namespace");
  if (!ns || !*ns) {
    kin__sim_err_bad_request(out, "no namespace on request");
    return;
  }
  kin__sim_subject u;
  kin__sim_subject_of(req, &u);
  rules_acc acc = {json_array(), json_array(), json_array()};
  for (int i = 0; i < u.ngroups; i++) {
    if (strcmp(u.groups[i], "system:masters")) continue;
    /* the privileged group authorizer's rules come first */
    json_array_append_new(acc.res, json_pack("{s:[s], s:[s], s:[s]}", "verbs", "*", "apiGroups",
                                             "*", "resources", "*"));
    json_array_append_new(acc.nonres,
                          json_pack("{s:[s], s:[s]}", "verbs", "*", "nonResourceURLs", "*"));
  }
  pthread_mutex_lock(&req->sim->store.mu);
  const kin__sim_rbac *p = kin__sim_rbac_policy(&req->sim->store, &req->sim->rbac);
  if (p) kin__sim_rbac_visit(p, &u, ns, collect, &acc);
  pthread_mutex_unlock(&req->sim->store.mu);
  json_t *st = json_pack("{s:o, s:o, s:b}", "resourceRules", acc.res, "nonResourceRules",
                         acc.nonres, "incomplete", 0);
  size_t n = json_array_size(acc.errors);
  if (st && n) {
    kin__buf e = {0};
    size_t i;
    const json_t *t;
    if (n > 1) kin__buf_puts(&e, "[");
    json_array_foreach(acc.errors, i, t) kin__buf_printf(&e, "%s%s", i ? ", " : "", json_string_value(t));
    if (n > 1) kin__buf_puts(&e, "]");
    if (e.p) json_object_set_new(st, "evaluationError", json_string(e.p));
    kin__buf_free(&e);
  }
  json_decref(acc.errors);
  out->code = 201;
  out->body = json_pack("{s:s, s:s, s:{}, s:{}, s:o}", "kind", "SelfSubjectRulesReview",
                        "apiVersion", "authorization.k8s.io/v1", "metadata", "spec", "status", st);
}

/* The userInfo of subject u ({username, groups[, extra]}). */
static json_t *user_info(const kin__sim_subject *u, const char *credential_id) {
  json_t *groups = json_array();
  for (int i = 0; i < u->ngroups; i++) json_array_append_new(groups, json_string(u->groups[i]));
  json_t *info = json_pack("{s:s, s:o}", "username", u->user, "groups", groups);
  if (info && credential_id && *credential_id)
    json_object_set_new(info, "extra", json_pack("{s:[s]}", "authentication.kubernetes.io/credential-id",
                                                 credential_id));
  return info;
}

/* TokenReview: a bearer token of the sim (the config's or a named user's). */
static void token_review(kin__sim_req *req, json_t *obj, kin__sim_result *out) {
  const char *token = kin__sim_jstr(obj, "spec", "token");
  if (!token || !*token) {
    kin__sim_err_bad_request(out, "token is required for TokenReview in authentication");
    return;
  }
  kin__sim_req fake;
  memset(&fake, 0, sizeof(fake));
  fake.sim = req->sim;
  json_t *st;
  if (kin__sim_token_user(req->sim, token, fake.user, sizeof(fake.user))) {
    kin__sim_subject u;
    kin__sim_subject_of(&fake, &u);
    st = json_pack("{s:b, s:o, s:[s]}", "authenticated", 1, "user", user_info(&u, NULL),
                   "audiences", "https://kubernetes.default.svc.cluster.local");
  } else {
    st = json_pack("{s:{}, s:s}", "user", "error", "invalid bearer token");
  }
  json_object_set_new(obj, "status", st);
  if (!json_object_get(obj, "metadata")) json_object_set_new(obj, "metadata", json_object());
  out->code = 201;
  out->body = json_incref(obj);
}

/* SelfSubjectReview: who the server thinks the caller is. */
static void self_subject(kin__sim_req *req, kin__sim_result *out) {
  kin__sim_subject u;
  kin__sim_subject_of(req, &u);
  char now[32];
  kin__sim_now_rfc3339(now);
  out->code = 201;
  out->body = json_pack("{s:s, s:s, s:{s:s}, s:{s:o}}", "kind", "SelfSubjectReview", "apiVersion",
                        "authentication.k8s.io/v1", "metadata", "creationTimestamp", now,
                        "status", "userInfo", user_info(&u, req->credential_id));
}

int kin__sim_review_create(kin__sim_req *req, kin__sim_resource *r, const char *ns, json_t *obj,
                           kin__sim_result *out) {
  if (r->crd_name) return 0;
  const char *res = r->resource;
  if (!json_is_object(json_object_get(obj, "metadata")))
    json_object_set_new(obj, "metadata", json_object());
  if (!strcmp(r->group, "authorization.k8s.io")) {
    if (!strcmp(res, "subjectaccessreviews")) {
      kin__sim_managed_create(req, r, obj);
      subject_access(req, NULL, obj, out);
    } else if (!strcmp(res, "localsubjectaccessreviews")) {
      kin__sim_managed_create(req, r, obj);
      subject_access(req, ns, obj, out);
    } else if (!strcmp(res, "selfsubjectaccessreviews")) {
      kin__sim_managed_create(req, r, obj);
      self_access(req, obj, out);
    } else if (!strcmp(res, "selfsubjectrulesreviews")) {
      self_rules(req, obj, out);
    } else {
      return 0;
    }
  } else if (!strcmp(r->group, "authentication.k8s.io")) {
    if (!strcmp(res, "tokenreviews")) {
      kin__sim_managed_create(req, r, obj);
      token_review(req, obj, out);
    } else if (!strcmp(res, "selfsubjectreviews")) {
      self_subject(req, out);
    } else {
      return 0;
    }
  } else {
    return 0;
  }
  if (!out->body) kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
  return 1;
}
