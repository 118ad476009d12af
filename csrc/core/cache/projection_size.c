/* projection_size.c -- kin_informer_projection_size (informer_factory.h):
 * what a cache would weigh with a projection, measured by projecting its
 * objects (for `kinformer inspect advise`). Apart from projection.c so
 * that the factory (which uses the projection) and this (which reads the
 * factory's header) do not include each other. */
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "informer_factory.h"
#include "kin.h"
#include "projection.h"
#include "shared_informer.h"

int kin_informer_projection_size(kin_informer *inf, const char *const *fields,
                                 kin_projection_size *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  kin__projection *p = NULL;
  int rc = kin__projection_new(fields, &p, err, errlen);
  if (rc) return rc;
  kin_obj **objs = NULL;
  size_t n = 0;
  if ((rc = kin_indexer_list(kin_informer_indexer(inf), &objs, &n))) {
    kin__projection_free(p);
    return rc;
  }
  for (size_t i = 0; i < n && !rc; i++) {
    size_t len;
    const char *js = kin_obj_json(objs[i], &len);
    if (!js) continue;
    char *t = NULL;
    size_t tl = 0;
    int r = kin__projection_text(p, js, len, &t, &tl);
    if (r == KIN_ENOMEM) rc = r;
    if (r) continue;
    free(t);
    out->objects++;
    out->bytes += len;
    out->projected_bytes += tl;
  }
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
  free(objs);
  kin__projection_free(p);
  return rc;
}
