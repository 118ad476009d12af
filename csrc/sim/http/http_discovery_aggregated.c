/* http_discovery_aggregated.c -- the aggregated discovery of /api and
 * /apis (apidiscovery.k8s.io/v2 APIGroupDiscoveryList), which kubectl and
 * client-go ask for first (Accept: application/json;g=apidiscovery.k8s.io;
 * v=v2;as=APIGroupDiscoveryList): every group, version and resource in
 * one answer, built from the same registry as the legacy documents of
 * http_discovery.c. Takes the store lock. */
#include <string.h>

#include "http_int.h"

static const char aggregated_ct[] =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/* Whether accept asks for the aggregated form first. */
int kin__sim_discovery_aggregated_wanted(const char *accept) {
  if (!accept) return 0;
  /* the first media type of the list that names APIGroupDiscoveryList v2
   * before any plain application/json */
  const char *agg = strstr(accept, "as=APIGroupDiscoveryList");
  if (!agg) return 0;
  const char *start = agg;
  while (start > accept && start[-1] != ',') start--;
  const char *plain = strstr(accept, "application/json");
  while (plain && plain < start) {
    const char *end = plain + strlen("application/json");
    while (*end == ' ') end++;
    if (*end == ',' || !*end) return 0; /* plain JSON preferred */
    plain = strstr(end, "application/json");
  }
  size_t n = (size_t)(agg - start);
  char mt[256];
  if (n >= sizeof(mt)) return 0;
  memcpy(mt, start, n);
  mt[n] = 0;
  return strstr(mt, "g=apidiscovery.k8s.io") && strstr(mt, "v=v2;") != NULL;
}

/* Returns a new array of verbs (caller decrefs). */
static json_t *verbs_of(const char *const *verbs) {
  json_t *a = json_array();
  for (int i = 0; verbs[i]; i++) json_array_append_new(a, json_string(verbs[i]));
  return a;
}

/* Returns a new APIResourceDiscovery of r (caller decrefs). */
static json_t *resource_entry(const kin__sim_resource *r) {
  json_t *e = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:o}", "resource", r->resource,
                        "responseKind", "group", "", "version", "", "kind", r->kind, "scope",
                        r->namespaced ? "Namespaced" : "Cluster", "singularResource",
                        r->singular, "verbs", verbs_of(r->verbs));
  if (r->short_names) json_object_set(e, "shortNames", r->short_names);
  if (r->categories) json_object_set(e, "categories", r->categories);
  json_t *subs = json_array();
  if (r->has_scale)
    json_array_append_new(subs, json_pack("{s:s, s:{s:s, s:s, s:s}, s:o}", "subresource",
                                          "scale", "responseKind", "group", "autoscaling",
                                          "version", "v1", "kind", "Scale", "verbs",
                                          verbs_of(kin__sim_verbs_status)));
  if (r->has_status)
    json_array_append_new(subs, json_pack("{s:s, s:{s:s, s:s, s:s}, s:o}", "subresource",
                                          "status", "responseKind", "group", "", "version", "",
                                          "kind", r->kind, "verbs",
                                          verbs_of(kin__sim_verbs_status)));
  if (json_array_size(subs))
    json_object_set_new(e, "subresources", subs);
  else
    json_decref(subs);
  return e;
}

/* Returns the version entry named version of group entry g, adding it
 * (borrowed reference). */
static json_t *version_of(json_t *g, const char *version) {
  json_t *versions = json_object_get(g, "versions");
  size_t i;
  json_t *v;
  json_array_foreach(versions, i, v) {
    if (!strcmp(kin__sim_jstr(v, "version", NULL), version)) return v;
  }
  v = json_pack("{s:s, s:[], s:s}", "version", version, "resources", "freshness", "Current");
  json_array_append_new(versions, v);
  return v;
}

/* Returns a new APIGroupDiscoveryList of the core group (core != 0) or of
 * every named group, in registry order (caller decrefs). Caller holds the
 * store lock. */
static json_t *group_list(kin__sim_store *s, int core) {
  json_t *items = json_array();
  for (size_t i = 0; i < s->nres; i++) {
    const kin__sim_resource *r = s->res[i];
    if (r->removed || (core != !*r->group)) continue;
    json_t *g = NULL;
    size_t j;
    json_t *x;
    json_array_foreach(items, j, x) {
      const char *name = kin__sim_jstr(json_object_get(x, "metadata"), "name", NULL);
      if (!strcmp(name ? name : "", r->group)) g = x;
    }
    if (!g) {
      g = core ? json_pack("{s:{}, s:[]}", "metadata", "versions")
               : json_pack("{s:{s:s}, s:[]}", "metadata", "name", r->group, "versions");
      json_array_append_new(items, g);
    }
    json_array_append_new(json_object_get(version_of(g, r->version), "resources"),
                          resource_entry(r));
  }
  return json_pack("{s:s, s:s, s:{}, s:o}", "kind", "APIGroupDiscoveryList", "apiVersion",
                   "apidiscovery.k8s.io/v2", "metadata", "items", items);
}

/* Answers /api (core) or /apis in the aggregated form. */
enum MHD_Result kin__sim_discovery_aggregated(kin__sim_req *req, int core) {
  kin__sim_store *s = &req->sim->store;
  pthread_mutex_lock(&s->mu);
  json_t *body = group_list(s, core);
  pthread_mutex_unlock(&s->mu);
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (!text) return kin__sim_respond_json(req, 500, NULL);
  kin__buf b = {.p = text, .len = strlen(text), .cap = strlen(text) + 1};
  return kin__sim_respond_buf(req, 200, &b, aggregated_ct);
}
