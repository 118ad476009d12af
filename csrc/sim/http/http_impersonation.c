/* http_impersonation.c -- the Impersonate-User and Impersonate-Group headers
 * (`kubectl --as`, `--as-group`), as k8s.io/apiserver
 * pkg/endpoints/filters/impersonation: the authenticated user must be
 * authorized to impersonate (verb impersonate on users, groups, or
 * serviceaccounts in the user's namespace; always, in AlwaysAllow mode),
 * then the request runs as the impersonated user, with the groups asked
 * for (a ServiceAccount without any: its ServiceAccount groups) and
 * system:authenticated. Impersonate-Uid and Impersonate-Extra-* are not
 * read. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth_int.h"
#include "http_int.h"

typedef struct {
  char (*groups)[128];
  int n, too_long;
} group_headers;

/* MHD's header iterator: collects every Impersonate-Group value. */
static enum MHD_Result collect_group(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
  group_headers *g = cls;
  if (strcasecmp(key, "Impersonate-Group") || !value) return MHD_YES;
  if (g->n == KIN__SIM_MAX_GROUPS || strlen(value) >= 128) {
    g->too_long = 1;
    return MHD_YES;
  }
  snprintf(g->groups[g->n++], 128, "%s", value);
  return MHD_YES;
}

/* Authorizes actor to impersonate: 1 when allowed, else 0 with the 403 in
 * out (responsewriters.Forbidden of the impersonate attributes). */
static int may(kin__sim_req *req, const kin__sim_subject *actor, const char *resource,
               const char *ns, const char *name, kin__sim_result *out) {
  if (!req->sim->authz_rbac) return 1;
  kin__sim_authz_attrs a = {1, "impersonate", "", "v1", resource, "", ns, name, ""};
  kin__buf reason = {0};
  int ok = kin__sim_authorize(req->sim, actor, &a, &reason);
  if (!ok) kin__sim_forbidden(out, actor, &a, reason.p);
  kin__buf_free(&reason);
  return ok;
}

int kin__sim_impersonate(kin__sim_req *req, enum MHD_Result *ret) {
  const char *user =
      MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Impersonate-User");
  char groups[KIN__SIM_MAX_GROUPS][128];
  group_headers g = {groups, 0, 0};
  MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_group, &g);
  if (!user && !g.n) return 0;
  kin__sim_result out = {0, NULL};
  if (!user || !*user) {
    kin__sim_err_bad_request(&out, "requested impersonation of groups without impersonating a user");
  } else if (strlen(user) >= sizeof(req->user) || g.too_long) {
    kin__sim_err_bad_request(&out, "impersonation request too long for kinformer.sim");
  }
  kin__sim_subject actor;
  kin__sim_subject_of(req, &actor);
  /* "system:serviceaccount:<ns>:<name>": impersonating a ServiceAccount */
  kin__sim_subject probe;
  memset(&probe, 0, sizeof(probe));
  int sa = !out.code && kin__sim_subject_sa_groups(user, &probe);
  char ns[256] = "";
  const char *name = user;
  if (sa) {
    const char *p = user + strlen("system:serviceaccount:"), *colon = strchr(p, ':');
    snprintf(ns, sizeof(ns), "%.*s", (int)(colon - p), p);
    name = colon + 1;
  }
  if (!out.code) may(req, &actor, sa ? "serviceaccounts" : "users", ns, name, &out);
  for (int i = 0; i < g.n && !out.code; i++) may(req, &actor, "groups", "", groups[i], &out);
  if (out.code) {
    *ret = kin__sim_respond_result(req, &out);
    return 1;
  }
  snprintf(req->user, sizeof(req->user), "%s", user);
  memcpy(req->groups, groups, sizeof(groups));
  req->ngroups = g.n;
  req->credential_id[0] = 0;
  req->impersonated = 1;
  return 0;
}
