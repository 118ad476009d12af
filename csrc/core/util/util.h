/* util.h -- small internal helpers shared by the configuration and auth
 * code (kubeconfig.c, in_cluster.c, exec_credential.c) and the sim. */
#ifndef KIN_UTIL_H
#define KIN_UTIL_H

#include <stddef.h>

/* snprintf into err when err is non-NULL and errlen > 0 (error reports are
 * optional everywhere they are offered). */
void kin__errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Zeroes the NUL-terminated secret s before freeing it, so tokens and keys
 * do not linger in freed heap. NULL is a no-op. */
void kin__wipe_free(char *s);

/* Reads a whole small file into a new string without trailing whitespace
 * (the caller frees it, with kin__wipe_free when it is a secret). Returns
 * NULL with errno set on failure. */
char *kin__read_trimmed(const char *path);

#endif
