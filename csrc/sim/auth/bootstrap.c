/* bootstrap.c -- kube-apiserver's bootstrap policy in the sim's store at
 * start (the rbac/bootstrap-roles post-start hook of
 * plugin/pkg/auth/authorizer/rbac/bootstrappolicy): the cluster roles,
 * cluster role bindings, roles and role bindings labelled
 * kubernetes.io/bootstrapping=rbac-defaults, as kube-apiserver v1.36.3
 * created them (csrc/sim/auth/bootstrap_policy.json, captured by
 * spec/e2e/capture-rbac.sh, compiled in by tools/embed-json.sh). The
 * aggregated cluster roles (admin, edit, view, ...) get the rules the
 * clusterrole-aggregation controller gives them on a running cluster. */
#include <string.h>

#include "auth_int.h"
#include "kin.h"

int kin__sim_rbac_bootstrap(kin__sim_store *s) {
  json_error_t jerr;
  json_t *list = json_loadb(kin__sim_rbac_bootstrap_json, kin__sim_rbac_bootstrap_len, 0, &jerr);
  json_t *items = json_object_get(list, "items");
  if (!json_is_array(items)) {
    json_decref(list);
    return KIN_EINVAL;
  }
  /* name -> ClusterRole, to aggregate from */
  json_t *croles = json_object();
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o) {
    const char *kind = kin__sim_jstr(o, "kind", NULL), *name = kin__sim_jstr(o, "metadata", "name");
    if (kind && name && !strcmp(kind, "ClusterRole")) json_object_set(croles, name, o);
  }
  json_t *filled = json_object();
  const char *name;
  json_object_foreach(croles, name, o) {
    if (json_is_object(json_object_get(o, "aggregationRule")))
      json_object_set_new(filled, name, kin__sim_rbac_aggregate(croles, name));
  }
  json_object_foreach(filled, name, o) json_object_set(json_object_get(croles, name), "rules", o);
  json_decref(filled);
  json_decref(croles);
  int rc = 0;
  json_array_foreach(items, i, o) {
    pthread_mutex_lock(&s->mu);
    kin__sim_resource *r = kin__sim_registry_find_kind(s, kin__sim_jstr(o, "apiVersion", NULL),
                                                       kin__sim_jstr(o, "kind", NULL));
    pthread_mutex_unlock(&s->mu);
    if (!r) {
      rc = KIN_EINVAL;
      break;
    }
    const char *ns = kin__sim_jstr(o, "metadata", "namespace");
    kin__sim_result out = {0, NULL};
    kin__sim_store_create(s, r, ns ? ns : "", o, 0, &out);
    json_decref(out.body);
    if (out.code != 201 && out.code != 409) {
      rc = out.code == 500 ? KIN_ENOMEM : KIN_EINVAL;
      break;
    }
  }
  json_decref(list);
  return rc;
}
