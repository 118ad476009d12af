/* registry.c -- the resources a kinformer.sim serves: the built-ins of
 * issue 4 and the versions of each CustomResourceDefinition, as discovery
 * (APIResource) describes them. Caller holds the store lock for every
 * function except init. */
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

static const char *const verbs_all[] = {"create", "delete", "deletecollection", "get", "list",
                                        "patch",  "update", "watch",            NULL};
static const char *const verbs_status[] = {"get", "patch", "update", NULL};
/* The review APIs are create only (helper-rbac). */
static const char *const verbs_create[] = {"create", NULL};
/* Namespaces cannot be deleted as a collection. */
static const char *const verbs_namespaces[] = {"create", "delete", "get", "list",
                                               "patch",  "update", "watch", NULL};

typedef struct {
  const char *group, *version, *resource, *singular, *kind;
  int namespaced, has_status;
  const char *short_names; /* comma-separated */
} builtin;

static const builtin builtins[] = {
    {"", "v1", "namespaces", "namespace", "Namespace", 0, 1, "ns"},
    {"", "v1", "configmaps", "configmap", "ConfigMap", 1, 0, "cm"},
    {"", "v1", "secrets", "secret", "Secret", 1, 0, NULL},
    {"", "v1", "pods", "pod", "Pod", 1, 1, "po"},
    {"", "v1", "services", "service", "Service", 1, 1, "svc"},
    {"", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", 1, 0, "sa"},
    {"", "v1", "events", "event", "Event", 1, 0, "ev"},
    {"", "v1", "nodes", "node", "Node", 0, 1, "no"},
    {"apps", "v1", "deployments", "deployment", "Deployment", 1, 1, "deploy"},
    {"apps", "v1", "replicasets", "replicaset", "ReplicaSet", 1, 1, "rs"},
    {"apps", "v1", "statefulsets", "statefulset", "StatefulSet", 1, 1, "sts"},
    {"apps", "v1", "daemonsets", "daemonset", "DaemonSet", 1, 1, "ds"},
    {"coordination.k8s.io", "v1", "leases", "lease", "Lease", 1, 0, NULL},
    /* the workload controllers' (controllers/job.c, cronjob.c) */
    {"batch", "v1", "jobs", "job", "Job", 1, 1, NULL},
    {"batch", "v1", "cronjobs", "cronjob", "CronJob", 1, 1, "cj"},
    /* events.k8s.io/v1 Events: the storage of core v1 Events, converted
     * (issue 23; init_builtins below, convert/events.c) */
    {"events.k8s.io", "v1", "events", "event", "Event", 1, 0, "ev"},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
     "CustomResourceDefinition", 0, 1, "crd,crds"},
    /* ---- helper-rbac (issue 23): RBAC, and the review APIs (create only,
     * nothing stored: csrc/sim/http/http_reviews.c answers their creates). To
     * be merged into the registry built from the captured discovery. ---- */
    {"rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", 0, 0, NULL},
    {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
     "ClusterRoleBinding", 0, 0, NULL},
    {"rbac.authorization.k8s.io", "v1", "roles", "role", "Role", 1, 0, NULL},
    {"rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", 1, 0, NULL},
    {"authorization.k8s.io", "v1", "subjectaccessreviews", "subjectaccessreview",
     "SubjectAccessReview", 0, 0, NULL},
    {"authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
     "SelfSubjectAccessReview", 0, 0, NULL},
    {"authorization.k8s.io", "v1", "localsubjectaccessreviews", "localsubjectaccessreview",
     "LocalSubjectAccessReview", 1, 0, NULL},
    {"authorization.k8s.io", "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
     "SelfSubjectRulesReview", 0, 0, NULL},
    {"authentication.k8s.io", "v1", "tokenreviews", "tokenreview", "TokenReview", 0, 0, NULL},
    {"authentication.k8s.io", "v1", "selfsubjectreviews", "selfsubjectreview",
     "SelfSubjectReview", 0, 0, NULL},
    /* ---- end helper-rbac ---- */
};

const char *const *kin__sim_verbs_status = verbs_status;

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 32;
  void *p = realloc(*arr, nc * elem);
  if (!p) return KIN_ENOMEM;
  *arr = p;
  *cap = nc;
  return 0;
}

kin__sim_storage *kin__sim_registry_storage(kin__sim_store *s, const char *group,
                                            const char *resource) {
  for (size_t i = 0; i < s->nst; i++) {
    kin__sim_storage *st = s->storages[i];
    if (st->served && !strcmp(st->group, group) && !strcmp(st->resource, resource)) return st;
  }
  return NULL;
}

kin__sim_storage *kin__sim_namespaces_storage(kin__sim_store *s) {
  return kin__sim_registry_storage(s, "", "namespaces");
}

/* Returns a new storage owned by the store, or NULL on ENOMEM. */
static kin__sim_storage *storage_new(kin__sim_store *s, const char *group, const char *resource,
                                     const char *kind, const char *version, int namespaced,
                                     int has_status, int crd) {
  if (grow((void **)&s->storages, &s->capst, s->nst, sizeof(*s->storages))) return NULL;
  kin__sim_storage *st = calloc(1, sizeof(*st));
  if (!st) return NULL;
  st->group = strdup(group);
  st->resource = strdup(resource);
  st->kind = strdup(kind);
  size_t n = strlen(group) + strlen(version) + 2;
  st->storage_version = malloc(n);
  if (st->storage_version) {
    if (*group)
      snprintf(st->storage_version, n, "%s/%s", group, version);
    else
      snprintf(st->storage_version, n, "%s", version);
  }
  st->namespaced = namespaced;
  st->has_status = has_status;
  st->crd = crd;
  st->served = 1;
  kin__hmap_init(&st->objects);
  s->storages[s->nst++] = st;
  return st;
}

static void resource_free(kin__sim_resource *r) {
  if (!r) return;
  free(r->group);
  free(r->version);
  free(r->resource);
  free(r->kind);
  free(r->list_kind);
  free(r->singular);
  free(r->crd_name);
  json_decref(r->short_names);
  json_decref(r->printer_columns);
  free(r);
}

/* Adds a served resource; short_names is stolen. Returns 0 or KIN_ENOMEM. */
static int add_resource(kin__sim_store *s, const char *group, const char *version,
                        const char *resource, const char *singular, const char *kind,
                        const char *list_kind, int namespaced, int has_status,
                        json_t *short_names, const char *crd_name, kin__sim_storage *st) {
  if (grow((void **)&s->res, &s->capres, s->nres, sizeof(*s->res))) {
    json_decref(short_names);
    return KIN_ENOMEM;
  }
  kin__sim_resource *r = calloc(1, sizeof(*r));
  if (!r) {
    json_decref(short_names);
    return KIN_ENOMEM;
  }
  char lk[256];
  if (!list_kind) {
    snprintf(lk, sizeof(lk), "%sList", kind);
    list_kind = lk;
  }
  r->group = strdup(group);
  r->version = strdup(version);
  r->resource = strdup(resource);
  r->singular = strdup(singular);
  r->kind = strdup(kind);
  r->list_kind = strdup(list_kind);
  r->crd_name = crd_name ? strdup(crd_name) : NULL;
  r->namespaced = namespaced;
  r->has_status = has_status;
  r->verbs = verbs_all;
  r->short_names = short_names;
  r->storage = st;
  if (!r->group || !r->version || !r->resource || !r->singular || !r->kind || !r->list_kind) {
    resource_free(r);
    return KIN_ENOMEM;
  }
  s->res[s->nres++] = r;
  return 0;
}

int kin__sim_registry_init_builtins(kin__sim_store *s) {
  for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
    const builtin *b = &builtins[i];
    /* issue 23: v1 and events.k8s.io/v1 Events share one storage in core
     * v1 form, whichever is registered first */
    int event = !strcmp(b->resource, "events") &&
                (!*b->group || !strcmp(b->group, "events.k8s.io"));
    kin__sim_storage *st = event ? kin__sim_registry_storage(s, "", "events") : NULL;
    if (!st)
      st = event ? storage_new(s, "", "events", "Event", "v1", 1, 0, 0)
                 : storage_new(s, b->group, b->resource, b->kind, b->version, b->namespaced,
                               b->has_status, 0);
    if (!st) return KIN_ENOMEM;
    json_t *sn = NULL;
    if (b->short_names) {
      sn = json_array();
      char tmp[64];
      snprintf(tmp, sizeof(tmp), "%s", b->short_names);
      for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(sn, json_string(t));
    }
    int rc = add_resource(s, b->group, b->version, b->resource, b->singular, b->kind, NULL,
                          b->namespaced, b->has_status, sn, NULL, st);
    if (rc) return rc;
    if (!strcmp(b->resource, "namespaces")) s->res[s->nres - 1]->verbs = verbs_namespaces;
    size_t rl = strlen(b->resource);
    if (rl > 7 && !strcmp(b->resource + rl - 7, "reviews")) s->res[s->nres - 1]->verbs = verbs_create;
    /* ScaleREST of the apps registries */
    if (!strcmp(b->group, "apps") &&
        (!strcmp(b->resource, "deployments") || !strcmp(b->resource, "replicasets") ||
         !strcmp(b->resource, "statefulsets")))
      s->res[s->nres - 1]->has_scale = 1;
  }
  return 0;
}

kin__sim_resource *kin__sim_registry_find(kin__sim_store *s, const char *group,
                                          const char *version, const char *resource) {
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (!r->removed && !strcmp(r->resource, resource) && !strcmp(r->group, group) &&
        !strcmp(r->version, version))
      return r;
  }
  return NULL;
}

/* A CRD serves spec.names.plural in spec.group at each version with
 * served: true; every version shares one storage (conversion strategy
 * None: only apiVersion changes between versions). */
int kin__sim_registry_add_crd(kin__sim_store *s, const json_t *crd) {
  const json_t *spec = json_object_get(crd, "spec");
  const json_t *names = json_object_get(spec, "names");
  const char *group = kin__sim_jstr(spec, "group", NULL);
  const char *plural = kin__sim_jstr(names, "plural", NULL);
  const char *kind = kin__sim_jstr(names, "kind", NULL);
  const char *crd_name = kin__sim_jstr(crd, "metadata", "name");
  if (!group || !plural || !kind || !crd_name) return KIN_EINVAL;
  const char *singular = kin__sim_jstr(names, "singular", NULL);
  char lower[256];
  if (!singular || !*singular) {
    size_t i = 0;
    for (; kind[i] && i + 1 < sizeof(lower); i++)
      lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
    lower[i] = 0;
    singular = lower;
  }
  const char *list_kind = kin__sim_jstr(names, "listKind", NULL);
  const char *scope = kin__sim_jstr(spec, "scope", NULL);
  int namespaced = !scope || strcmp(scope, "Cluster") != 0;
  const json_t *versions = json_object_get(spec, "versions");
  const char *storage_version = NULL;
  size_t i;
  json_t *v;
  json_array_foreach(versions, i, v) {
    if (json_is_true(json_object_get(v, "storage"))) storage_version = kin__sim_jstr(v, "name", NULL);
  }
  if (!storage_version) storage_version = kin__sim_jstr(json_array_get(versions, 0), "name", NULL);
  if (!storage_version) return KIN_EINVAL;
  kin__sim_storage *st = kin__sim_registry_storage(s, group, plural);
  if (!st) {
    st = storage_new(s, group, plural, kind, storage_version, namespaced, 0, 1);
    if (!st) return KIN_ENOMEM;
  }
  json_array_foreach(versions, i, v) {
    const char *vname = kin__sim_jstr(v, "name", NULL);
    if (!vname || !json_is_true(json_object_get(v, "served"))) continue;
    if (kin__sim_registry_find(s, group, vname, plural)) continue;
    int has_status = json_object_get(json_object_get(v, "subresources"), "status") != NULL;
    if (has_status) st->has_status = 1;
    json_t *sn = json_object_get(names, "shortNames");
    int rc = add_resource(s, group, vname, plural, singular, kind, list_kind, namespaced,
                          has_status, json_is_array(sn) ? json_deep_copy(sn) : NULL, crd_name,
                          st);
    if (rc) return rc;
    json_t *pc = json_object_get(v, "additionalPrinterColumns");
    if (json_is_array(pc)) s->res[s->nres - 1]->printer_columns = json_deep_copy(pc);
  }
  return 0;
}

/* The entries stay allocated (flagged removed) until the store is freed:
 * a handler may still hold one after dropping the lock. */
kin__sim_storage *kin__sim_registry_remove_crd(kin__sim_store *s, const char *crd_name) {
  kin__sim_storage *st = NULL;
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (!r->removed && r->crd_name && !strcmp(r->crd_name, crd_name)) {
      st = r->storage;
      r->removed = 1;
    }
  }
  return st;
}

void kin__sim_registry_free(kin__sim_store *s) {
  for (size_t i = 0; i < s->nres; i++) resource_free(s->res[i]);
  free(s->res);
  s->res = NULL;
  s->nres = s->capres = 0;
  for (size_t i = 0; i < s->nst; i++) {
    kin__sim_storage *st = s->storages[i];
    size_t pos = 0;
    kin__hmap_entry *e;
    while ((e = kin__hmap_next(&st->objects, &pos))) kin__sim_obj_unref(e->val);
    kin__hmap_free(&st->objects);
    free(st->sorted);
    free(st->group);
    free(st->resource);
    free(st->kind);
    free(st->storage_version);
    free(st);
  }
  free(s->storages);
  s->storages = NULL;
  s->nst = s->capst = 0;
}

kin__sim_resource *kin__sim_registry_find_kind(kin__sim_store *s, const char *api_version,
                                               const char *kind) {
  if (!api_version || !kind) return NULL;
  const char *slash = strchr(api_version, '/');
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed || strcmp(r->kind, kind)) continue;
    if (slash) {
      size_t gl = (size_t)(slash - api_version);
      if (strlen(r->group) == gl && !strncmp(r->group, api_version, gl) &&
          !strcmp(r->version, slash + 1))
        return r;
    } else if (!*r->group && !strcmp(r->version, api_version)) {
      return r;
    }
  }
  return NULL;
}
