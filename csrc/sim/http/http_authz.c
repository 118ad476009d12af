/* http_authz.c -- a request's side of authorization: its subject
 * (user.Info: the authenticated name and groups, with the groups
 * kube-apiserver's authenticators add, and system:masters for the users
 * the sim keeps all-powerful under RBAC) and the authorization filter
 * (k8s.io/apiserver pkg/endpoints/filters/authorization.go) over the RBAC
 * authorizer of auth/. */
#include <stdio.h>
#include <string.h>

#include "auth_int.h"
#include "http_int.h"
#include "kin.h"

void kin__sim_subject_of(kin__sim_req *req, kin__sim_subject *out) {
  memset(out, 0, sizeof(*out));
  kin_sim *sim = req->sim;
  /* "": an unauthenticated request let through (/healthz, /version) */
  int anonymous = !req->user[0] || !strcmp(req->user, "system:anonymous");
  out->user = req->user[0] ? req->user : "system:anonymous";
  for (int i = 0; i < req->ngroups; i++) kin__sim_subject_add_group(out, req->groups[i]);
  if (!req->ngroups) kin__sim_subject_sa_groups(req->user, out);
  /* The sim's own user, and everyone on a sim without authentication. */
  if (sim->authz_rbac && !req->impersonated &&
      (!strcmp(req->user, "kinformer-sim") ||
       (!strcmp(req->user, "system:anonymous") && !sim->token && !sim->client_ca)))
    kin__sim_subject_add_group(out, "system:masters");
  kin__sim_subject_add_group(out, anonymous ? "system:unauthenticated" : "system:authenticated");
}

int kin__sim_authz_request(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  if (!req->sim->authz_rbac) return 0;
  kin__sim_request_attrs ra;
  kin__sim_request_attrs_of(req, url, &ra);
  kin__sim_authz_attrs a = {ra.resource_path,
                            ra.verb,
                            ra.ri.group,
                            ra.ri.version,
                            ra.ri.resource,
                            ra.ri.subresource,
                            ra.ns,
                            ra.name,
                            url};
  kin__sim_subject u;
  kin__sim_subject_of(req, &u);
  kin__buf reason = {0};
  int allowed = kin__sim_authorize(req->sim, &u, &a, &reason);
  if (!allowed) {
    kin__sim_result out = {0, NULL};
    kin__sim_forbidden(&out, &u, &a, reason.p);
    *ret = kin__sim_respond_result(req, &out);
  }
  kin__buf_free(&reason);
  return !allowed;
}
