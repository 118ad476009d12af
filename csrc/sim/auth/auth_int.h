/* auth_int.h -- the interface of csrc/sim/auth/: kube-apiserver's RBAC
 * authorizer (k8s.io/kubernetes plugin/pkg/auth/authorizer/rbac and
 * pkg/registry/rbac/validation), its bootstrap policy, and the review APIs
 * (authorization.k8s.io/v1 SubjectAccessReview, LocalSubjectAccessReview,
 * SelfSubjectAccessReview, SelfSubjectRulesReview; authentication.k8s.io/v1
 * TokenReview, SelfSubjectReview).
 *
 * Locks: the compiled policy (kin__sim_rbac, policy.c) is guarded by the
 * store lock kin__sim_store.mu, as the objects it is compiled from; every
 * function here that reads it takes that lock itself, and none is called
 * with it held. */
#ifndef KIN_SIM_AUTH_INT_H
#define KIN_SIM_AUTH_INT_H

#include <jansson.h>

#include "buf.h"
#include "store_int.h"

/* Groups kept from a client certificate's subject O entries. */
#define KIN__SIM_MAX_GROUPS 16

/* The compiled RBAC policy of a sim (policy.c), guarded by the store lock. */
typedef struct kin__sim_rbac kin__sim_rbac;
void kin__sim_rbac_free(kin__sim_rbac *p);

/* Groups a subject may have: a certificate's O entries, the
 * ServiceAccount groups, system:masters, system:authenticated. */
#define KIN__SIM_SUBJECT_MAX_GROUPS (KIN__SIM_MAX_GROUPS + 4)

/* A user as authorizers see it (user.Info): name and groups, borrowed. */
typedef struct {
  const char *user;
  const char *groups[KIN__SIM_SUBJECT_MAX_GROUPS];
  int ngroups;
  char sa_group[320]; /* "system:serviceaccounts:<ns>", pointed to by groups */
} kin__sim_subject;

/* authorizer.Attributes of one request or review: every string borrowed,
 * "" when empty (never NULL). path is the non-resource URL. */
typedef struct {
  int is_resource;
  const char *verb, *group, *version, *resource, *subresource, *ns, *name, *path;
} kin__sim_authz_attrs;

/* ---- subject.c ---- */
/* Appends g to out's groups unless already there or out is full. */
void kin__sim_subject_add_group(kin__sim_subject *out, const char *g);
/* Appends the groups of a ServiceAccount user name
 * ("system:serviceaccount:<ns>:<name>") to out; 1 when user is one. */
int kin__sim_subject_sa_groups(const char *user, kin__sim_subject *out);

/* ---- policy.c (the compiled RBAC objects, aggregation) ---- */
/* The compiled policy of a store: a snapshot of the RBAC objects parsed
 * once per change (guarded by kin__sim_store.mu). */
/* Returns the policy of s, rebuilt when the RBAC objects changed since the
 * last call, or NULL on ENOMEM. *cache is the sim's slot (kin_sim.rbac).
 * Caller holds s->mu; the result is valid until it drops it. */
const kin__sim_rbac *kin__sim_rbac_policy(kin__sim_store *s, kin__sim_rbac **cache);
/* The aggregated rules of a ClusterRole with an aggregationRule, as the
 * clusterrole-aggregation controller writes them: the rules of every
 * other cluster role of roles (name -> ClusterRole object) the selectors
 * match, in name order, each once, those of aggregated roles themselves
 * aggregated first. Returns a new array or NULL on ENOMEM. */
json_t *kin__sim_rbac_aggregate(const json_t *roles, const char *name);
/* Visits the rules that apply to subject u in namespace ns ("" for the
 * cluster scope only), in the resolver's order: cluster role bindings,
 * then role bindings of ns, each by name. fn gets the binding's describer
 * text ("ClusterRoleBinding \"b\" of ClusterRole \"r\" to User \"u\"")
 * and the rule, or NULL and an error text (a missing role); it returns 0
 * to stop. */
typedef int (*kin__sim_rule_visitor)(void *ud, const char *source, const json_t *rule,
                                     const char *err);
void kin__sim_rbac_visit(const kin__sim_rbac *p, const kin__sim_subject *u, const char *ns,
                         kin__sim_rule_visitor fn, void *ud);
/* The rules of the role binding's roleRef names, resolved in namespace ns
 * ("" for a cluster role binding): a new reference (an empty array for a
 * role without rules), or NULL with the lister's error appended to err
 * (`clusterrole.rbac.authorization.k8s.io "x" not found`). */
json_t *kin__sim_rbac_ref_rules(const kin__sim_rbac *p, const json_t *binding, const char *ns,
                                kin__buf *err);

/* Creates the bootstrap policy (csrc/sim/auth/bootstrap_policy.json,
 * compiled in) in s, as kube-apiserver's bootstrap-roles hook: the cluster
 * roles (aggregated ones with their rules filled), cluster role bindings,
 * roles and role bindings labelled kubernetes.io/bootstrapping=rbac-defaults.
 * An object that already exists is kept. Returns 0, KIN_EINVAL when the
 * data does not parse or a resource is not served, or KIN_ENOMEM. Takes the
 * store lock. */
int kin__sim_rbac_bootstrap(kin__sim_store *s);

/* ---- authorizer.c ---- */
/* 1 when rule (a PolicyRule) allows a (rbac.RuleAllows). */
int kin__sim_rule_allows(const json_t *rule, const kin__sim_authz_attrs *a);
/* Authorizes a for u as kube-apiserver's authorizer chain
 * (system:masters, then RBAC). Returns 1 (allowed) or 0 (denied; also on
 * ENOMEM); reason gets the decision's reason ("RBAC: allowed by ...", the
 * errors of a denial, or nothing). Takes the store lock. */
int kin__sim_authorize(kin_sim *sim, const kin__sim_subject *u, const kin__sim_authz_attrs *a,
                       kin__buf *reason);
/* The 403 Status of a denial (responsewriters.ForbiddenStatusError) into
 * out. */
void kin__sim_forbidden(kin__sim_result *out, const kin__sim_subject *u,
                        const kin__sim_authz_attrs *a, const char *reason);

/* ---- bootstrap.c: the policy's data, compiled in by tools/embed-json.sh ---- */
extern const char kin__sim_rbac_bootstrap_json[];
extern const unsigned long kin__sim_rbac_bootstrap_len;

#endif
