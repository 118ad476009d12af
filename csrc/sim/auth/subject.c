/* subject.c -- the user.Info of a request: the authenticated name and
 * groups, with the groups kube-apiserver's authenticators add (the
 * ServiceAccount token authenticator's, AuthenticatedGroupAdder's
 * system:authenticated, the anonymous system:unauthenticated). The
 * subject of a request is http/http_authz.c's. */
#include <stdio.h>
#include <string.h>

#include "auth_int.h"

void kin__sim_subject_add_group(kin__sim_subject *out, const char *g) {
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
  kin__sim_subject_add_group(out, "system:serviceaccounts");
  kin__sim_subject_add_group(out, out->sa_group);
  return 1;
}
