/* pb_envelope.h -- internal: the envelope of every protobuf body of
 * kube-apiserver, read by pb_envelope.c. Reentrant. */
#ifndef KIN_PB_ENVELOPE_H
#define KIN_PB_ENVELOPE_H

#include <stddef.h>
#include <stdint.h>

/* The `k8s\0` + runtime.Unknown envelope of a protobuf body. */
typedef struct {
  int read;           /* its fields were read (a failure after is the content encoding's) */
  char api_version[256], kind[256];
  const uint8_t *raw; /* the object's bytes, inside the body */
  size_t raw_len;
} kin__pb_unknown;

/* Reads the envelope of the n bytes at p into *u. 0, or KIN_EINVAL with the
 * Go serializer's words in err (empty, no magic, truncated, a content
 * encoding). */
int kin__pb_envelope(const uint8_t *p, size_t n, kin__pb_unknown *u, char *err, size_t cap);

/* 1 when the n bytes at p start with the envelope's magic `k8s\0`. */
int kin__pb_is_enveloped(const void *p, size_t n);

#endif
