/* sim_util.h -- small helpers of kinformer.sim (sim_util.c): uids,
 * timestamps, JSON field access, base64url. Thread-safe. */
#ifndef KIN_SIM_UTIL_H
#define KIN_SIM_UTIL_H

#include <jansson.h>
#include <stddef.h>

void kin__sim_uuid(char out[37]);
void kin__sim_now_rfc3339(char out[32]);
char *kin__sim_strdup(const char *s);
const char *kin__sim_jstr(const json_t *o, const char *k1, const char *k2);
/* Base64url without padding, as Go's RawURLEncoding; caller frees. */
char *kin__sim_b64url_encode(const char *s, size_t n);
/* Returns the decoded bytes (NUL-terminated, caller frees) or NULL. */
char *kin__sim_b64url_decode(const char *s, size_t *n);

#endif
