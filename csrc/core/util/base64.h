/* base64.h -- internal: standard base64 (RFC 4648) as kubeconfig *-data
 * fields and ExecCredential use it. */
#ifndef KIN_BASE64_H
#define KIN_BASE64_H

#include <stddef.h>

/* Decodes len bytes of src (whitespace ignored, padding optional) into a
 * new NUL-terminated buffer the caller frees, its length in *outlen.
 * Returns KIN_EINVAL on a bad character or length, KIN_ENOMEM. */
int kin__base64_decode(const char *src, size_t len, unsigned char **out, size_t *outlen);

/* Encodes len bytes into a new NUL-terminated string the caller frees;
 * NULL on OOM. */
char *kin__base64_encode(const unsigned char *src, size_t len);

#endif
