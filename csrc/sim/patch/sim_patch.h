/* sim_patch.h -- the patch formats kinformer.sim accepts, over jansson
 * values. Pure functions: the inputs are borrowed and never modified. */
#ifndef KIN_SIM_PATCH_H
#define KIN_SIM_PATCH_H

#include <jansson.h>
#include <stddef.h>

/* RFC 7386 JSON merge patch (application/merge-patch+json). Returns a new
 * value (caller decrefs) or NULL when out of memory. */
json_t *kin_sim_merge_patch(const json_t *target, const json_t *patch);

/* RFC 6902 JSON patch (application/json-patch+json): ops is an array of
 * {op, path, value, from}, applied as kube-apiserver applies it (see
 * sim_patch.c for where that goes beyond the RFC). Returns 0 and a new
 * document in *out, or KIN_EINVAL with the API server's message in err, or
 * KIN_ENOMEM. The API server answers 400 BadRequest when the patch is not a
 * JSON patch document at all (kin_sim_json_patch_malformed) and 422 for
 * every other failure (bad operation, missing path, failed "test"). */
int kin_sim_json_patch(const json_t *doc, const json_t *ops, json_t **out, char *err,
                       size_t errlen);

/* 1 when ops is not an array of objects (null counts as an empty patch):
 * the patches kube-apiserver refuses with 400 before applying them. */
int kin_sim_json_patch_malformed(const json_t *ops);

/* Strategic merge patch (application/strategic-merge-patch+json) for the
 * built-in types the sim serves, as apimachinery's strategicpatch applies
 * it: a merge patch in which lists with patchStrategy "merge" merge --
 * lists of objects by their patchMergeKey (containers, env, ports,
 * volumes, volumeMounts, ownerReferences, conditions, ...), lists of
 * scalars (finalizers) as a set union -- and every other list is replaced;
 * the $patch: replace|delete directives, $deleteFromPrimitiveList/<list>,
 * $setElementOrder/<list> and $retainKeys are honoured and null deletes a
 * field. The schema is chosen by target's "kind" (else patch's); unknown
 * kinds get ObjectMeta's merge keys only. Returns 0 and a new value in
 * *out, or KIN_EINVAL with the API server's message in err (status:
 * kin_sim_strategic_merge_patch_status), or KIN_ENOMEM. */
int kin_sim_strategic_merge_patch(const json_t *target, const json_t *patch, json_t **out,
                                  char *err, size_t errlen);

/* HTTP status kube-apiserver answers for the strategic merge patch error
 * message err: 400 for a malformed patch (bad JSON, bad directive list
 * format), 422 for lists of lists and a retainKeys mismatch, 500 for the
 * rest (it reports those as InternalError). */
int kin_sim_strategic_merge_patch_status(const char *err);

#endif
