/* subject.c -- the user.Info of a request: the authenticated name and
 * groups, with the groups kube-apiserver's authenticators add (the
 * ServiceAccount token authenticator's, AuthenticatedGroupAdder's
 * system:authenticated, the anonymous system:unauthenticated), and
 * system:masters for the users the sim keeps all-powerful under RBAC. */
#include <stdio.h>
#include <string.h>

#include "auth_int.h"

/* Appends g to out unless already there or out is full. */
static void add_group(kin__sim_subject *out, const char *g) {
  for (int i = 0; i < out->ngroups; i++)
    if (!strcmp(out->groups[i], g)) return;
  if (out->ngroups < KIN__SIM_SUBJECT_MAX_GROUPS) out->groups[out->ngroups++] = g;
}

int kin__sim_subject_sa_groups(const char *user, kin__sim_subject *out) {
  static const char prefix[] = "system:serviceaccount:";
  if (strncmp(user, prefix, sizeof(prefix) - 1)) return 0;
  const char *ns = user + sizeof(prefix) - 1, *colon = strchr(ns, ':');
  if (!colon || colon == ns || !colon[1] || strchr(colon + 1, ':')) return 0;
  int n = snprintf(out->sa_group, sizeof(out->sa_group), "system:serviceaccounts:%.*s",
                   (int)(colon - ns), ns);
  if (n < 0 || (size_t)n >= sizeof(out->sa_group)) return 0;
  add_group(out, "system:serviceaccounts");
  add_group(out, out->sa_group);
  return 1;
}

void kin__sim_subject_of(kin__sim_req *req, kin__sim_subject *out) {
  memset(out, 0, sizeof(*out));
  kin_sim *sim = req->sim;
  /* "": an unauthenticated request let through (/healthz, /version) */
  int anonymous = !req->user[0] || !strcmp(req->user, "system:anonymous");
  out->user = req->user[0] ? req->user : "system:anonymous";
  for (int i = 0; i < req->ngroups; i++) add_group(out, req->groups[i]);
  if (!req->ngroups) kin__sim_subject_sa_groups(req->user, out);
  /* The sim's own user, and everyone on a sim without authentication. */
  if (sim->authz_rbac && !req->impersonated &&
      (!strcmp(req->user, "kinformer-sim") ||
       (!strcmp(req->user, "system:anonymous") && !sim->token && !sim->client_ca)))
    add_group(out, "system:masters");
  add_group(out, anonymous ? "system:unauthenticated" : "system:authenticated");
}
