/* registry.c -- the resources a kinformer.sim serves, as discovery
 * (APIResource) describes them: the entries and storages themselves, and
 * the versions of each CustomResourceDefinition (the built-ins come from
 * registry_builtins.c). Caller holds the store lock for every function
 * except those the init of the store calls. */
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

static const char *const verbs_all[] = {"create", "delete", "deletecollection", "get", "list",
                                        "patch",  "update", "watch",            NULL};
static const char *const verbs_status[] = {"get", "patch", "update", NULL};

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

/* A new storage, owned by the store (freed with it); NULL on ENOMEM. */
kin__sim_storage *kin__sim_registry_storage_new(kin__sim_store *s, const char *group,
                                                const char *resource, const char *kind,
                                                const char *version, int namespaced,
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
  json_decref(r->categories);
  json_decref(r->unserved_subs);
  json_decref(r->printer_columns);
  free(r->storage_version_hash);
  if (r->own_verbs)
    for (size_t i = 0; r->own_verbs[i]; i++) free(r->own_verbs[i]);
  free(r->own_verbs);
  free(r);
}

/* The new entry (owned by the store) or NULL on ENOMEM, short_names and
 * categories released either way. */
kin__sim_resource *kin__sim_registry_add(kin__sim_store *s, const char *group,
                                         const char *version, const char *resource,
                                         const char *singular, const char *kind,
                                         const char *list_kind, int namespaced, int has_status,
                                         json_t *short_names, json_t *categories,
                                         const char *crd_name, kin__sim_storage *st) {
  kin__sim_resource *r = NULL;
  if (grow((void **)&s->res, &s->capres, s->nres, sizeof(*s->res)) ||
      !(r = calloc(1, sizeof(*r)))) {
    json_decref(short_names);
    json_decref(categories);
    return NULL;
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
  r->categories = categories;
  r->storage = st;
  if (!r->group || !r->version || !r->resource || !r->singular || !r->kind || !r->list_kind) {
    resource_free(r);
    return NULL;
  }
  s->res[s->nres++] = r;
  return r;
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
    st = kin__sim_registry_storage_new(s, group, plural, kind, storage_version, namespaced, 0,
                                       1);
    if (!st) return KIN_ENOMEM;
  }
  json_array_foreach(versions, i, v) {
    const char *vname = kin__sim_jstr(v, "name", NULL);
    if (!vname || !json_is_true(json_object_get(v, "served"))) continue;
    if (kin__sim_registry_find(s, group, vname, plural)) continue;
    int has_status = json_object_get(json_object_get(v, "subresources"), "status") != NULL;
    if (has_status) st->has_status = 1;
    json_t *sn = json_object_get(names, "shortNames");
    json_t *cat = json_object_get(names, "categories");
    if (!kin__sim_registry_add(s, group, vname, plural, singular, kind, list_kind, namespaced,
                               has_status, json_is_array(sn) ? json_deep_copy(sn) : NULL,
                               json_is_array(cat) && json_array_size(cat) ? json_deep_copy(cat)
                                                                          : NULL,
                               crd_name, st))
      return KIN_ENOMEM;
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

/* 1 when sub is in r->unserved_subs (built-ins only). Caller holds mu or
 * owns r before the server runs. */
int kin__sim_registry_real_sub(const kin__sim_resource *r, const char *sub) {
  size_t i;
  json_t *v;
  json_array_foreach(r->unserved_subs, i, v) {
    if (!strcmp(json_string_value(v), sub)) return 1;
  }
  return 0;
}

/* 1 when a served built-in lives at group/version; caller holds mu. */
int kin__sim_registry_builtin_gv(kin__sim_store *s, const char *group, const char *version) {
  for (size_t i = 0; i < s->nres; i++) {
    const kin__sim_resource *r = s->res[i];
    if (!r->crd_name && !r->removed && !strcmp(r->group, group) && !strcmp(r->version, version))
      return 1;
  }
  return 0;
}
