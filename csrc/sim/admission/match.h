/* match.h -- which webhooks a request calls (match.c), as
 * k8s.io/apiserver pkg/admission/plugin/webhook/predicates (rules,
 * namespace and object selectors) and generic's matchPolicy. */
#ifndef KIN_SIM_MATCH_H
#define KIN_SIM_MATCH_H

#include "webhook_set.h"

/* Whether h must be called for a: 1 (with the version of r it must see
 * in *as: r itself, or under matchPolicy Equivalent another served
 * version of the same group and resource), 0 when not; obj and old as
 * in kin__sim_admit_attrs. Takes the store's lock for the namespace's
 * labels and the served versions. */
int kin__sim_hook_matches(kin_sim *sim, const kin__sim_hook *h, const kin__sim_admit_attrs *a,
                          const char *subresource, const json_t *obj,
                          kin__sim_resource **as);

#endif
