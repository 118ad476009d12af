/* auth.h -- what the rest of kinformer.sim calls in csrc/sim/auth/ (RBAC
 * authorization, the bootstrap policy, the review APIs); the folder's own
 * interface is auth_int.h. */
#ifndef KIN_SIM_AUTH_H
#define KIN_SIM_AUTH_H

#include "http_int.h"

/* The compiled RBAC policy of a sim (policy.c), guarded by the store lock. */
typedef struct kin__sim_rbac kin__sim_rbac;
void kin__sim_rbac_free(kin__sim_rbac *p);

/* Authorizes req (after authentication) when the sim runs with
 * authorization mode RBAC: returns 1 with *ret set when it answered 403
 * Forbidden, 0 when the request may proceed (always 0 in AlwaysAllow
 * mode). Takes the store lock. */
int kin__sim_authz_request(kin__sim_req *req, const char *url, enum MHD_Result *ret);

/* Creates the bootstrap policy (csrc/sim/auth/bootstrap_policy.json,
 * compiled in) in s, as kube-apiserver's bootstrap-roles hook: the cluster
 * roles (aggregated ones with their rules filled), cluster role bindings,
 * roles and role bindings labelled kubernetes.io/bootstrapping=rbac-defaults.
 * An object that already exists is kept. Returns 0, KIN_EINVAL when the
 * data does not parse or a resource is not served, or KIN_ENOMEM. Takes the
 * store lock. */
int kin__sim_rbac_bootstrap(kin__sim_store *s);

/* The create of a review resource (reviews.c): authorization.k8s.io/v1
 * subjectaccessreviews, localsubjectaccessreviews,
 * selfsubjectaccessreviews, selfsubjectrulesreviews and
 * authentication.k8s.io/v1 tokenreviews, selfsubjectreviews. When r is one
 * of them, fills out with the answered review (201) or a Status (400, 422)
 * and returns 1; else returns 0 and leaves out alone. obj is the decoded
 * body (borrowed, may be modified), ns the path's namespace. Nothing is
 * stored. */
int kin__sim_review_create(kin__sim_req *req, kin__sim_resource *r, const char *ns, json_t *obj,
                           kin__sim_result *out);

#endif
