/* projection.h -- internal: an informer's projection (kin_informer_opts.fields):
 * a cached object keeps only the listed dotted paths, plus apiVersion,
 * kind and metadata. Runs in the informer's transform chain, on the JSON
 * text both encodings give, before the object enters the FIFO and cache. */
#ifndef KIN_PROJECTION_H
#define KIN_PROJECTION_H

#include <stddef.h>

#include "kobj.h"

/* An immutable set of paths; shared read-only by every thread. */
typedef struct kin__projection kin__projection;

/* Checks fields (NULL-terminated dotted paths) and returns in *out a new
 * projection owning copies of them. Returns 0, KIN_EINVAL (err says which
 * path and why: empty, an empty segment, over 64 segments, a duplicate) or
 * KIN_ENOMEM; *out is NULL on failure. NULL or empty fields: KIN_EINVAL. */
int kin__projection_new(const char *const *fields, kin__projection **out, char *err,
                        size_t errlen);

/* Frees p. NULL is a no-op. */
void kin__projection_free(kin__projection *p);

/* Appends the paths, sorted, joined by ',' to the identity buffer dst of
 * size n (always NUL-terminated). Returns the length it needed. */
size_t kin__projection_key(const kin__projection *p, char *dst, size_t n);

/* How p treats the dotted path (a member below the object's top; "" the
 * object itself): KIN__PROJ_KEPT (p keeps it or a path above it),
 * KIN__PROJ_PARTLY (p keeps paths below it only), KIN__PROJ_DROPPED. */
#define KIN__PROJ_KEPT 0
#define KIN__PROJ_PARTLY 1
#define KIN__PROJ_DROPPED 2
int kin__projection_relation(const kin__projection *p, const char *path);

/* Returns in *out a new object holding only p's paths of in (plus
 * apiVersion, kind, metadata); tombstones and non-objects are passed as a
 * new reference. Returns 0, KIN_EINVAL when in's JSON is malformed,
 * KIN_ENOMEM; *out is NULL on failure, in stays the caller's. */
int kin__projection_apply(const kin__projection *p, kin_obj *in, kin_obj **out);

/* Projects the JSON object js[0..len) into a new malloc'd text in *out
 * (length *out_len). Returns 0, KIN_EINVAL (malformed), KIN_ENOMEM. */
int kin__projection_text(const kin__projection *p, const char *js, size_t len, char **out,
                         size_t *out_len);

#endif
