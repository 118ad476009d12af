/* call.h -- a webhook's call (call.c): through an in-process
 * registration's function, or a POST over HTTPS with libcurl. */
#ifndef KIN_SIM_CALL_H
#define KIN_SIM_CALL_H

#include "webhook_set.h"

/* Posts body to h (in process, or over HTTPS with its caBundle), with
 * ?timeout=<timeoutSeconds>s. Returns 0 with the answer in *out (malloc'd,
 * the caller frees), or -1 with kube-apiserver's "failed to call
 * webhook: ..." reason in err. */
int kin__sim_hook_call(kin_sim *sim, const kin__sim_hook *h, const char *body, char **out,
                       size_t *outlen, char *err, size_t errcap);

#endif
