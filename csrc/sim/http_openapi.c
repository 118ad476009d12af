/* http_openapi.c -- a skeleton OpenAPI v3 (/openapi/v3 and
 * /openapi/v3/<api|apis/g>/<v>): one PATCH operation per resource carrying
 * x-kubernetes-group-version-kind and the fieldValidation query parameter.
 * That is what kubectl's queryParamVerifierV3 reads to choose server-side
 * field validation, so `kubectl apply` works without --validate=false.
 * The scale subresources get theirs (autoscaling/v1 Scale). There are no
 * schemas: the sim validates nothing beyond names, and `kubectl explain`,
 * which reads them, cannot work. */
#include <stdio.h>
#include <string.h>

#include "http_int.h"

/* Returns the new /openapi/v3 index (caller decrefs). Caller holds the
 * store lock. */
static json_t *root(kin__sim_store *s) {
  json_t *paths = json_object();
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed) continue;
    char key[320], url[340];
    if (*r->group)
      snprintf(key, sizeof(key), "apis/%s/%s", r->group, r->version);
    else
      snprintf(key, sizeof(key), "api/%s", r->version);
    snprintf(url, sizeof(url), "/openapi/v3/%s", key);
    json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
  }
  return json_pack("{s:o}", "paths", paths);
}

/* Returns the new document of group/version (caller decrefs), NULL when
 * gv is not served. Caller holds the store lock. */
static json_t *gv_doc(kin__sim_store *s, const char *group, const char *version) {
  json_t *paths = json_object();
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed || strcmp(r->group, group) || strcmp(r->version, version)) continue;
    char p[600];
    if (*group)
      snprintf(p, sizeof(p), "/apis/%s/%s%s/%s/{name}", group, version,
               r->namespaced ? "/namespaces/{namespace}" : "", r->resource);
    else
      snprintf(p, sizeof(p), "/api/%s%s/%s/{name}", version,
               r->namespaced ? "/namespaces/{namespace}" : "", r->resource);
    json_t *op = json_pack("{s:{s:s, s:s, s:s}, s:s, s:[{s:s, s:s, s:{s:s}}], s:{}}",
                           "x-kubernetes-group-version-kind", "group", group, "version",
                           version, "kind", r->kind, "x-kubernetes-action", "patch",
                           "parameters", "name", "fieldValidation", "in", "query", "schema",
                           "type", "string", "responses");
    json_object_set_new(paths, p, json_pack("{s:o}", "patch", op));
    if (r->has_scale) {
      /* .../{name}/scale speaks autoscaling/v1 Scale */
      char sp[620];
      snprintf(sp, sizeof(sp), "%s/scale", p);
      op = json_pack("{s:{s:s, s:s, s:s}, s:s, s:[{s:s, s:s, s:{s:s}}], s:{}}",
                     "x-kubernetes-group-version-kind", "group", "autoscaling", "version", "v1",
                     "kind", "Scale", "x-kubernetes-action", "patch", "parameters", "name",
                     "fieldValidation", "in", "query", "schema", "type", "string", "responses");
      json_object_set_new(paths, sp, json_pack("{s:o}", "patch", op));
    }
  }
  if (!json_object_size(paths)) {
    json_decref(paths);
    return NULL;
  }
  return json_pack("{s:s, s:{s:s, s:s}, s:o}", "openapi", "3.0.0", "info", "title",
                   "Kubernetes", "version", "v1.36.0", "paths", paths);
}

int kin__sim_handle_openapi(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  if (strncmp(url, "/openapi/", 9)) return 0;
  kin__sim_store *s = &req->sim->store;
  json_t *body = NULL;
  char g[256], v[64];
  int end = 0;
  pthread_mutex_lock(&s->mu);
  if (!strcmp(url, "/openapi/v3"))
    body = root(s);
  else if (sscanf(url, "/openapi/v3/api/%63[^/]%n", v, &end) == 1 && !url[end])
    body = gv_doc(s, "", v);
  else if ((end = 0, sscanf(url, "/openapi/v3/apis/%255[^/]/%63[^/]%n", g, v, &end) == 2) &&
           !url[end])
    body = gv_doc(s, g, v);
  pthread_mutex_unlock(&s->mu);
  if (!body) {
    kin__buf b = {0};
    kin__buf_add(&b, "404 page not found\n", 19);
    *ret = kin__sim_respond_buf(req, 404, &b, "text/plain; charset=utf-8");
    return 1;
  }
  *ret = kin__sim_respond_json(req, 200, body);
  return 1;
}
