/* http_discovery.c -- /version, /api, /api/v1, /apis, /apis/<g>,
 * /apis/<g>/<v> in the shapes of apimachinery's APIVersions, APIGroupList,
 * APIGroup and APIResourceList (the legacy, non-aggregated discovery, which
 * client-go and kubectl fall back to), and the health endpoints. */
#include <stdio.h>
#include <string.h>

#include "http_int.h"

/* Returns a new version.Info (caller decrefs). */
static json_t *version_info(void) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major",
                   "1", "minor", "36", "emulationMajor", "1", "emulationMinor", "36",
                   "minCompatibilityMajor", "1", "minCompatibilityMinor", "35", "gitVersion", "v1.36.0-kinformer.sim", "gitCommit", "", "gitTreeState",
                   "clean", "buildDate", "1970-01-01T00:00:00Z", "goVersion", "", "compiler",
                   "kinformer-sim", "platform", "linux/amd64");
}

/* Returns a new JSON array of verbs (caller decrefs). */
static json_t *verbs_json(const char *const *verbs) {
  json_t *a = json_array();
  for (int i = 0; verbs[i]; i++) json_array_append_new(a, json_string(verbs[i]));
  return a;
}

/* Returns a new APIResourceList of group/version (caller decrefs), NULL
 * when nothing is served there. Caller holds the store lock. */
static json_t *resource_list(kin__sim_store *s, const char *group, const char *version) {
  json_t *list = json_array();
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed || strcmp(r->group, group) || strcmp(r->version, version)) continue;
    json_t *e = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", r->resource, "singularName",
                          r->singular, "namespaced", r->namespaced, "kind", r->kind, "verbs",
                          verbs_json(r->verbs));
    if (r->short_names) json_object_set(e, "shortNames", r->short_names);
    if (r->categories) json_object_set(e, "categories", r->categories);
    if (r->storage_version_hash)
      json_object_set_new(e, "storageVersionHash", json_string(r->storage_version_hash));
    json_array_append_new(list, e);
    if (r->has_scale) {
      char sub[300];
      snprintf(sub, sizeof(sub), "%s/scale", r->resource);
      json_array_append_new(list, json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:o}", "name", sub,
                                            "singularName", "", "namespaced", r->namespaced,
                                            "group", "autoscaling", "version", "v1", "kind",
                                            "Scale", "verbs", verbs_json(kin__sim_verbs_status)));
    }
    if (r->has_status) {
      char sub[300];
      snprintf(sub, sizeof(sub), "%s/status", r->resource);
      json_array_append_new(list, json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", sub,
                                            "singularName", "", "namespaced", r->namespaced,
                                            "kind", r->kind, "verbs",
                                            verbs_json(kin__sim_verbs_status)));
    }
  }
  if (!json_array_size(list)) {
    json_decref(list);
    return NULL;
  }
  char gv[320];
  snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
  json_t *out = json_pack("{s:s}", "kind", "APIResourceList");
  if (*group) json_object_set_new(out, "apiVersion", json_string("v1"));
  json_object_set_new(out, "groupVersion", json_string(gv));
  json_object_set_new(out, "resources", list);
  return out;
}

/* Returns a new APIGroup body of name (caller decrefs) or NULL. Caller
 * holds the store lock. */
static json_t *api_group(kin__sim_store *s, const char *name) {
  json_t *versions = json_array();
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed || strcmp(r->group, name)) continue;
    int seen = 0;
    size_t j;
    json_t *v;
    json_array_foreach(versions, j, v) {
      if (!strcmp(kin__sim_jstr(v, "version", NULL), r->version)) seen = 1;
    }
    if (seen) continue;
    char gv[320];
    snprintf(gv, sizeof(gv), "%s/%s", name, r->version);
    json_array_append_new(versions,
                          json_pack("{s:s, s:s}", "groupVersion", gv, "version", r->version));
  }
  if (!json_array_size(versions)) {
    json_decref(versions);
    return NULL;
  }
  json_t *preferred = json_incref(json_array_get(versions, 0));
  return json_pack("{s:s, s:o, s:o}", "name", name, "versions", versions, "preferredVersion",
                   preferred);
}

/* Returns a new APIGroupList (caller decrefs). Caller holds the lock. */
static json_t *group_list(kin__sim_store *s) {
  json_t *groups = json_array();
  for (size_t i = 0; i < s->nres; i++) {
    const char *g = s->res[i]->group;
    if (!*g || s->res[i]->removed) continue;
    int seen = 0;
    size_t j;
    json_t *v;
    json_array_foreach(groups, j, v) {
      if (!strcmp(kin__sim_jstr(v, "name", NULL), g)) seen = 1;
    }
    if (!seen) {
      json_t *grp = api_group(s, g);
      if (grp) json_array_append_new(groups, grp);
    }
  }
  return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                   groups);
}

int kin__sim_handle_discovery(kin__sim_req *req, const char *url, enum MHD_Result *ret) {
  kin__sim_store *s = &req->sim->store;
  char path[512];
  snprintf(path, sizeof(path), "%s", url);
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') path[--n] = 0;
  if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/livez")) {
    kin__buf b = {0};
    kin__buf_add(&b, "ok", 2);
    *ret = kin__sim_respond_buf(req, 200, &b, "text/plain; charset=utf-8");
    return 1;
  }
  if (!strcmp(path, "/version")) {
    *ret = kin__sim_respond_json(req, 200, version_info());
    return 1;
  }
  if ((!strcmp(path, "/api") || !strcmp(path, "/apis")) &&
      kin__sim_discovery_aggregated_wanted(
          MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Accept"))) {
    *ret = kin__sim_discovery_aggregated(req, !strcmp(path, "/api"));
    return 1;
  }
  if (!strcmp(path, "/api")) {
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%u", (unsigned)req->sim->port);
    *ret = kin__sim_respond_json(
        req, 200,
        json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                  "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
                  addr));
    return 1;
  }
  json_t *body = NULL;
  int matched = 0;
  char g[256], v[64];
  int end = 0;
  pthread_mutex_lock(&s->mu);
  if (!strcmp(path, "/api/v1")) {
    matched = 1;
    body = resource_list(s, "", "v1");
  } else if (!strcmp(path, "/apis")) {
    matched = 1;
    body = group_list(s);
  } else if (sscanf(path, "/apis/%255[^/]/%63[^/]%n", g, v, &end) == 2 && !path[end]) {
    matched = 1;
    body = resource_list(s, g, v);
  } else if ((end = 0, sscanf(path, "/apis/%255[^/]%n", g, &end) == 1) && !path[end]) {
    matched = 1;
    body = api_group(s, g);
    if (body) {
      json_t *out = json_pack("{s:s, s:s}", "kind", "APIGroup", "apiVersion", "v1");
      json_object_update(out, body);
      json_decref(body);
      body = out;
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (!matched) return 0;
  if (!body) {
    kin__buf b = {0};
    kin__buf_add(&b, "404 page not found\n", 19);
    *ret = kin__sim_respond_buf(req, 404, &b, "text/plain; charset=utf-8");
    return 1;
  }
  *ret = kin__sim_respond_json(req, 200, body);
  return 1;
}
