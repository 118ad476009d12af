/* registry_builtins.c -- the built-in resources of kube-apiserver, read at
 * start from the capture of its discovery (csrc/sim/discovery/
 * discovery.json, `make sim-discovery`, compiled in by
 * tools/embed-discovery.sh): every group-version's APIResourceList gives
 * the resources with their group, version, scope, singular name, kind,
 * verbs, short names, categories, storage version hash and their status
 * and scale subresources. Runs at the store's init, before any request:
 * no lock. */
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

/* What discovery does not say about a resource, from the registries'
 * strategies in k8s.io/kubernetes pkg/registry (PrepareForCreate /
 * PrepareForUpdate, AllowCreateOnUpdate): which part of the object bumps
 * metadata.generation (resources not listed here have no generation),
 * whether a PUT of a missing object creates it, and the storage version
 * of the group/resources that several versions serve (one storage shared
 * by the versions, as etcd keeps one object: autoscaling v1 and v2
 * HorizontalPodAutoscalers are stored as v2). */
typedef struct {
  const char *group, *resource;
  const char *gen_field;       /* see kin__sim_storage.gen_field */
  const char *storage_version; /* NULL: the group's preferred version */
  int create_on_update;        /* the strategy's AllowCreateOnUpdate */
} builtin_extra;

static const builtin_extra extras[] = {
    {"", "services", NULL, NULL, 1},
    {"", "endpoints", NULL, NULL, 1},
    {"", "events", NULL, NULL, 1},
    {"", "limitranges", NULL, NULL, 1},
    {"events.k8s.io", "events", NULL, NULL, 1},
    {"coordination.k8s.io", "leases", NULL, NULL, 1},
    {"node.k8s.io", "runtimeclasses", NULL, NULL, 1},
    {"rbac.authorization.k8s.io", "roles", NULL, NULL, 1},
    {"rbac.authorization.k8s.io", "rolebindings", NULL, NULL, 1},
    {"rbac.authorization.k8s.io", "clusterroles", NULL, NULL, 1},
    {"rbac.authorization.k8s.io", "clusterrolebindings", NULL, NULL, 1},
    {"", "pods", "spec", NULL, 0},
    {"", "podtemplates", "template", NULL, 0},
    {"", "replicationcontrollers", "spec", NULL, 0},
    {"apps", "deployments", "spec+annotations", NULL, 0},
    {"apps", "replicasets", "spec", NULL, 0},
    {"apps", "statefulsets", "spec", NULL, 0},
    {"apps", "daemonsets", "spec", NULL, 0},
    {"batch", "jobs", "spec", NULL, 0},
    {"batch", "cronjobs", "spec", NULL, 0},
    {"autoscaling", "horizontalpodautoscalers", NULL, "v2", 0},
    {"policy", "poddisruptionbudgets", "spec", NULL, 0},
    {"networking.k8s.io", "ingresses", "spec", NULL, 0},
    {"networking.k8s.io", "ingressclasses", "spec", NULL, 0},
    {"networking.k8s.io", "networkpolicies", "spec", NULL, 0},
    {"discovery.k8s.io", "endpointslices", "*", NULL, 0},
    {"storage.k8s.io", "csidrivers", "spec", NULL, 0},
    {"scheduling.k8s.io", "priorityclasses", "", NULL, 0},
    {"admissionregistration.k8s.io", "validatingwebhookconfigurations", "webhooks", NULL, 0},
    {"admissionregistration.k8s.io", "mutatingwebhookconfigurations", "webhooks", NULL, 0},
    {"admissionregistration.k8s.io", "validatingadmissionpolicies", "spec", NULL, 0},
    {"admissionregistration.k8s.io", "validatingadmissionpolicybindings", "spec", NULL, 0},
    {"admissionregistration.k8s.io", "mutatingadmissionpolicies", "spec", NULL, 0},
    {"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", "spec", NULL, 0},
    {"apiextensions.k8s.io", "customresourcedefinitions", "spec", NULL, 0},
    {"flowcontrol.apiserver.k8s.io", "flowschemas", "spec", NULL, 0},
    {"flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", "spec", NULL, 0},
    {"resource.k8s.io", "deviceclasses", "spec", NULL, 0},
    {"resource.k8s.io", "resourceslices", "spec", NULL, 0},
};

/* Returns the extra entry of group/resource or NULL. */
static const builtin_extra *extra_of(const char *group, const char *resource) {
  for (size_t i = 0; i < sizeof(extras) / sizeof(extras[0]); i++)
    if (!strcmp(extras[i].group, group) && !strcmp(extras[i].resource, resource))
      return &extras[i];
  return NULL;
}

/* Returns a NULL-terminated copy of a JSON array of strings (caller frees
 * each and the array), or NULL on ENOMEM. */
static char **strings_of(const json_t *a) {
  size_t n = json_array_size(a), i;
  char **out = calloc(n + 1, sizeof(*out));
  if (!out) return NULL;
  for (i = 0; i < n; i++) {
    const char *v = json_string_value(json_array_get(a, i));
    if (!(out[i] = strdup(v ? v : ""))) {
      while (i) free(out[--i]);
      free(out);
      return NULL;
    }
  }
  return out;
}

/* Returns a copy of a non-empty array member or NULL. */
static json_t *array_copy(const json_t *e, const char *key) {
  json_t *a = json_object_get(e, key);
  return json_is_array(a) && json_array_size(a) ? json_deep_copy(a) : NULL;
}

/* 1 when list (an APIResourceList's resources) holds "<resource>/<sub>". */
static int has_sub(const json_t *list, const char *resource, const char *sub) {
  size_t i, n = strlen(resource);
  json_t *e;
  json_array_foreach(list, i, e) {
    const char *name = kin__sim_jstr(e, "name", NULL);
    if (name && !strncmp(name, resource, n) && name[n] == '/' && !strcmp(name + n + 1, sub))
      return 1;
  }
  return 0;
}

/* Fills r->unserved_subs with the subresources of r in list other than
 * status, scale, namespaces/finalize and serviceaccounts/token (pods/log,
 * pods/exec, ...); 0 or KIN_ENOMEM. */
static int unserved_subs(kin__sim_resource *r, const json_t *list) {
  size_t i, n = strlen(r->resource);
  json_t *e;
  json_array_foreach(list, i, e) {
    const char *name = kin__sim_jstr(e, "name", NULL);
    if (!name || strncmp(name, r->resource, n) || name[n] != '/') continue;
    const char *sub = name + n + 1;
    if (!strcmp(sub, "status") || !strcmp(sub, "scale")) continue;
    /* served by store/namespace_lifecycle.c and http/http_token_request.c */
    if (!*r->group && ((!strcmp(r->resource, "namespaces") && !strcmp(sub, "finalize")) ||
                       (!strcmp(r->resource, "serviceaccounts") && !strcmp(sub, "token"))))
      continue;
    if (!r->unserved_subs && !(r->unserved_subs = json_array())) return KIN_ENOMEM;
    if (json_array_append_new(r->unserved_subs, json_string(sub))) return KIN_ENOMEM;
  }
  return 0;
}

/* Registers the resources of one APIResourceList (group/version). */
static int add_list(kin__sim_store *s, const char *group, const char *version,
                    const json_t *list) {
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    const char *name = kin__sim_jstr(e, "name", NULL);
    const char *kind = kin__sim_jstr(e, "kind", NULL);
    if (!name || !kind) return KIN_EINVAL;
    if (strchr(name, '/')) continue; /* subresources: below */
    const char *singular = kin__sim_jstr(e, "singularName", NULL);
    int namespaced = json_is_true(json_object_get(e, "namespaced"));
    int has_status = has_sub(list, name, "status");
    const builtin_extra *x = extra_of(group, name);
    /* v1 and events.k8s.io/v1 Events share one storage in core v1 form
     * (convert/events.c converts), whichever group-version comes first */
    int event = !strcmp(name, "events") && (!*group || !strcmp(group, "events.k8s.io"));
    kin__sim_storage *st = kin__sim_registry_storage(s, event ? "" : group, name);
    if (!st) {
      const char *sv = x && x->storage_version ? x->storage_version : version;
      st = event ? kin__sim_registry_storage_new(s, "", "events", "Event", "v1", 1, 0, 0)
                 : kin__sim_registry_storage_new(s, group, name, kind, sv, namespaced, has_status,
                                                 0);
      if (!st) return KIN_ENOMEM;
      st->gen_field = x ? x->gen_field : NULL;
      st->create_on_update = x ? x->create_on_update : 0;
    }
    kin__sim_resource *r = kin__sim_registry_add(
        s, group, version, name, singular && *singular ? singular : name, kind, NULL, namespaced,
        has_status, array_copy(e, "shortNames"), array_copy(e, "categories"), NULL, st);
    if (!r) return KIN_ENOMEM;
    json_t *verbs = json_object_get(e, "verbs");
    const char *hash = kin__sim_jstr(e, "storageVersionHash", NULL);
    if (!(r->own_verbs = strings_of(verbs)) || (hash && !(r->storage_version_hash = strdup(hash))))
      return KIN_ENOMEM;
    r->verbs = (const char *const *)r->own_verbs;
    r->has_scale = has_sub(list, name, "scale");
    if (unserved_subs(r, list)) return KIN_ENOMEM;
    /* Create is the only verb of the review APIs (and of bindings). */
    r->review = json_array_size(verbs) == 1 &&
                !strcmp(json_string_value(json_array_get(verbs, 0)), "create");
  }
  return 0;
}

/* Parses the embedded capture (freed before returning) and registers its
 * resources in the server's order; 0, KIN_ENOMEM or KIN_EINVAL. */
int kin__sim_registry_init_builtins(kin__sim_store *s) {
  json_error_t jerr;
  json_t *doc = json_loadb((const char *)kin__sim_discovery_json, kin__sim_discovery_json_len, 0,
                           &jerr);
  json_t *lists = json_object_get(doc, "resources");
  int rc = json_is_object(lists) ? 0 : KIN_EINVAL;
  /* The core group first, then the groups in the server's order, each
   * group's versions preferred first: discovery lists them in this order. */
  if (!rc) rc = add_list(s, "", "v1", json_object_get(lists, "v1"));
  size_t i, j;
  json_t *g, *v;
  json_array_foreach(json_object_get(doc, "groups"), i, g) {
    const char *name = kin__sim_jstr(g, "name", NULL);
    json_array_foreach(json_object_get(g, "versions"), j, v) {
      const char *gv = kin__sim_jstr(v, "groupVersion", NULL);
      const char *ver = kin__sim_jstr(v, "version", NULL);
      if (rc) break;
      if (!name || !gv || !ver || !json_is_array(json_object_get(lists, gv)))
        rc = KIN_EINVAL;
      else
        rc = add_list(s, name, ver, json_object_get(lists, gv));
    }
  }
  json_decref(doc);
  return rc;
}
