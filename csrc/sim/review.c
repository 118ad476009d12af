/* review.c -- the create of the review resources, which kube-apiserver
 * answers without storing anything: authentication.k8s.io TokenReview and
 * SelfSubjectReview, authorization.k8s.io SubjectAccessReview,
 * LocalSubjectAccessReview, SelfSubjectAccessReview and
 * SelfSubjectRulesReview (registry_builtins.c marks them r->review: their
 * only verb is create). This answer is the placeholder of the registry's
 * part: the object back with 201, status left as sent; the RBAC part of
 * issue 23 computes the real status in place of this function. */
#include <string.h>

#include "http_int.h"

/* Placeholder answer: a copy of obj (kind, apiVersion and the namespace
 * of the path set) with 201 in out (the caller frees out->body); 500 on
 * ENOMEM. No lock, no storage. */
void kin__sim_review_create(kin__sim_req *req, kin__sim_resource *r, kin__sim_request_info *ri,
                            const json_t *obj, kin__sim_result *out) {
  (void)req;
  json_t *o = json_deep_copy(obj);
  if (!o) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return;
  }
  char av[320];
  kin__sim_api_version(r, av, sizeof(av));
  json_object_set_new(o, "kind", json_string(r->kind));
  json_object_set_new(o, "apiVersion", json_string(av));
  json_t *md = json_object_get(o, "metadata");
  if (!json_is_object(md)) json_object_set_new(o, "metadata", json_object());
  if (r->namespaced && ri->ns[0])
    json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ri->ns));
  out->code = 201;
  out->body = o;
}
