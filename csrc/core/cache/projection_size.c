/* projection_size.c -- kin_informer_projection_size and
 * kin_informer_advise (informer_factory.h): what a cache would weigh with
 * a projection, measured by projecting its objects, and the projection
 * that keeps what was read (read_paths.h), for `kinformer inspect advise`. Apart from projection.c so
 * that the factory (which uses the projection) and this (which reads the
 * factory's header) do not include each other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "informer_factory.h"
#include "kin.h"
#include "projection.h"
#include "read_paths.h"
#include "shared_informer.h"

/* Projects objs[0..n) with p into *out's counts. 0 or KIN_ENOMEM. */
static int measure(const kin__projection *p, kin_obj **objs, size_t n, kin_projection_size *out) {
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    size_t len;
    const char *js = kin_obj_json(objs[i], &len);
    if (!js) continue;
    char *t = NULL;
    size_t tl = 0;
    int r = p ? kin__projection_text(p, js, len, &t, &tl) : 0;
    if (r == KIN_ENOMEM) rc = r;
    if (r) continue;
    free(t);
    out->objects++;
    out->bytes += len;
    out->projected_bytes += p ? tl : len;
  }
  return rc;
}

static void unref_all(kin_obj **objs, size_t n) {
  for (size_t i = 0; i < n; i++) kin_obj_unref(objs[i]);
  free(objs);
}

int kin_informer_projection_size(kin_informer *inf, const char *const *fields,
                                 kin_projection_size *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  kin__projection *p = NULL;
  int rc = kin__projection_new(fields, &p, err, errlen);
  if (rc) return rc;
  kin_obj **objs = NULL;
  size_t n = 0;
  if (!(rc = kin_indexer_list(kin_informer_indexer(inf), &objs, &n))) rc = measure(p, objs, n, out);
  unref_all(objs, n);
  kin__projection_free(p);
  return rc;
}

int kin_informer_advise(kin_informer *inf, kin_informer_advice *out) {
  memset(out, 0, sizeof(*out));
  kin_obj **objs = NULL;
  size_t n = 0;
  int rc = kin_indexer_list(kin_informer_indexer(inf), &objs, &n);
  if (rc || !n) {
    unref_all(objs, n);
    return rc;
  }
  const char *av = kin_obj_api_version(objs[0]), *kind = kin_obj_kind_name(objs[0]);
  snprintf(out->api_version, sizeof(out->api_version), "%s", av ? av : "");
  snprintf(out->kind, sizeof(out->kind), "%s", kind ? kind : "");
  rc = kin_read_paths_advise(out->api_version, out->kind, &out->fields);
  kin__projection *p = NULL;
  char err[256];
  if (rc == KIN_ENOENT) rc = 0;
  else if (!rc && !out->fields) out->reads_all = 1;
  else if (!rc && kin__projection_new((const char *const *)out->fields, &p, err, sizeof(err)))
    p = NULL; /* a path the projection refuses (cannot happen: recorded ones are
                 plain segments): measured as it is */
  if (!rc) rc = measure(p, objs, n, &out->size);
  kin__projection_free(p);
  unref_all(objs, n);
  return rc;
}

void kin_informer_advice_free(kin_informer_advice *a) {
  kin_read_paths_free(a->fields);
  a->fields = NULL;
}
