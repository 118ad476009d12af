/* authfilter.h -- internal: controller-runtime's
 * filters.WithAuthenticationAndAuthorization for the manager's endpoints.
 * A request's bearer token is authenticated by a TokenReview
 * (authentication.k8s.io/v1), its user authorized by a SubjectAccessReview
 * (authorization.k8s.io/v1) of the lower-case method on the non-resource
 * path, both sent with the manager's REST client (kin_client_do, on the
 * calling thread: an HTTP server thread, never the IO thread; outside the
 * client's rate limiter, as controller-runtime's reviews have clients of
 * their own, and one at a time per endpoint thread; a 10 s timeout,
 * retried on 429/5xx as any idempotent request).
 *
 * Caches as controller-runtime's (apiserver's delegating authenticator and
 * authorizer): a TokenReview's answer, authenticated or not, 1 minute
 * (keyed by the token's SHA-256, never the token); an allowed decision 5
 * minutes, a denied one 30 seconds. At most 4096 entries each (expired ones
 * are dropped first, then all).
 *
 * Answers: 401 "Unauthorized" without a bearer token or for one the
 * TokenReview did not authenticate; 403 "Authorization denied for user
 * <name>"; 500 "Authentication failed" / "Authorization for user <name>
 * failed" when a review could not be made (logged with the server's
 * reason: a missing RBAC rule shows there). No token ever reaches a log.
 *
 * Threads: kin__authfilter.mu guards both caches (a leaf; never held
 * during a review). */
#ifndef KIN_METRICS_AUTHFILTER_H
#define KIN_METRICS_AUTHFILTER_H

#include <stddef.h>

#include "rest_client.h"

typedef struct kin__authfilter kin__authfilter;

/* A filter that reviews with c (borrowed: it must outlive the filter);
 * what names the endpoint in log lines. NULL on OOM. */
kin__authfilter *kin__authfilter_new(kin_client *c, const char *what);
void kin__authfilter_free(kin__authfilter *f);

/* Decides one request: authorization is its Authorization header (or
 * NULL), method its HTTP method, path its path. Returns the HTTP status to
 * answer (200 when the request may go on) and, for any other, the text
 * of the answer in msg. */
int kin__authfilter_check(kin__authfilter *f, const char *authorization, const char *method,
                          const char *path, char *msg, size_t msglen);

#endif
