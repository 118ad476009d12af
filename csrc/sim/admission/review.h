/* review.h -- AdmissionReview v1 requests and responses (review.c), as
 * k8s.io/apiserver pkg/admission/plugin/webhook/request. */
#ifndef KIN_SIM_REVIEW_H
#define KIN_SIM_REVIEW_H

#include "admit_ctx.h"

/* The AdmissionReview v1 request kube-apiserver sends for a (compact
 * JSON, malloc'd; NULL on ENOMEM), the objects at version as; uid gets
 * the request's uid (37 bytes). */
char *kin__sim_review_request(const kin__sim_admit_ctx *c, const kin__sim_admit_attrs *a,
                              const kin__sim_resource *as, const json_t *obj, const json_t *old,
                              char uid[37]);
/* Reads a webhook's answer body (len bytes) to the review uid: returns 0
 * with *resp the response object (a new reference), or -1 with the
 * reason in err (kube-apiserver's words). */
int kin__sim_review_response(const char *body, size_t len, const char *uid, json_t **resp,
                             char *err, size_t errcap);

#endif
