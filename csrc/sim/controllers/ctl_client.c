/* ctl_client.c -- the store as the controllers' client: get, list,
 * create, update and delete through the generic registry's write paths
 * (store_*.c), which take the store lock themselves. The controllers
 * write as kube-controller-manager does, without the HTTP layer: no
 * authentication, no request or write log entry (those record what
 * clients asked, and a controller is part of the server here). */
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "kin.h"

/* The served resource of group/resource in its storage version (else any
 * served version); NULL when none. Caller holds the store lock. */
static kin__sim_resource *find_res(kin__sim_store *s, const char *group, const char *resource) {
  kin__sim_resource *any = NULL;
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed || strcmp(r->resource, resource) || strcmp(r->group, group)) continue;
    const char *sv = r->storage->storage_version;
    const char *slash = sv ? strchr(sv, '/') : NULL;
    if (sv && !strcmp(slash ? slash + 1 : sv, r->version)) return r;
    if (!any) any = r;
  }
  return any;
}

/* Looks up r under the lock; the registry never frees a resource before
 * the store, so the pointer stays usable after. */
static kin__sim_resource *resource_of(kin__simctl *m, const char *group, const char *resource) {
  kin__sim_store *s = &kin__simctl_sim(m)->store;
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *r = find_res(s, group, resource);
  pthread_mutex_unlock(&s->mu);
  return r;
}

static int finish(kin__sim_result *res, json_t **out) {
  if (out)
    *out = res->body;
  else
    json_decref(res->body);
  return res->code;
}

json_t *kin__simctl_get(kin__simctl *m, const char *group, const char *resource, const char *ns,
                        const char *name) {
  kin__sim_store *s = &kin__simctl_sim(m)->store;
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *r = find_res(s, group, resource);
  kin__sim_obj *o = r ? kin__sim_lookup(r->storage, ns, name) : NULL;
  json_t *j = o ? kin__sim_obj_json(o) : NULL;
  pthread_mutex_unlock(&s->mu);
  return j;
}

json_t *kin__simctl_list(kin__simctl *m, const char *group, const char *resource, const char *ns,
                         int (*match)(void *ud, const json_t *obj), void *ud) {
  kin__sim_store *s = &kin__simctl_sim(m)->store;
  json_t *items = json_array();
  if (!items) return NULL;
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *r = find_res(s, group, resource);
  size_t n = 0;
  int too_old = 0;
  kin__sim_obj **arr = r ? kin__sim_store_snapshot(s, r->storage, 0, &n, &too_old) : NULL;
  for (size_t i = 0; i < n; i++) {
    if (ns && *ns && !kin__sim_key_in_namespace(arr[i]->key, ns)) continue;
    json_t *j = kin__sim_obj_json(arr[i]);
    if (j && (!match || match(ud, j)))
      json_array_append_new(items, j);
    else
      json_decref(j);
  }
  pthread_mutex_unlock(&s->mu);
  free(arr);
  if (!r) {
    json_decref(items);
    return NULL;
  }
  return items;
}

int kin__simctl_create(kin__simctl *m, const char *group, const char *resource, const char *ns,
                       const json_t *obj, json_t **out) {
  kin__sim_result res = {0, NULL};
  kin__sim_resource *r = resource_of(m, group, resource);
  if (out) *out = NULL;
  if (!r) return 404;
  kin__sim_store_create(&kin__simctl_sim(m)->store, r, ns ? ns : "", obj, 0, &res);
  return finish(&res, out);
}

/* The update function of kin__simctl_update: the new object as given. */
static json_t *replace_with(void *ud, const json_t *cur, kin__sim_result *err) {
  (void)cur;
  json_t *copy = json_deep_copy(ud);
  if (!copy) kin__sim_err(err, 500, "InternalError", NULL, "out of memory");
  return copy;
}

int kin__simctl_update(kin__simctl *m, const char *group, const char *resource, const char *ns,
                       const json_t *obj, int status_only, json_t **out) {
  kin__sim_result res = {0, NULL};
  kin__sim_resource *r = resource_of(m, group, resource);
  const char *name = kin__sim_jstr(obj, "metadata", "name");
  if (out) *out = NULL;
  if (!r || !name) return 404;
  kin__sim_store_update(&kin__simctl_sim(m)->store, r, ns ? ns : "", name, status_only,
                        replace_with, (void *)obj, 0, &res);
  return finish(&res, out);
}

int kin__simctl_delete(kin__simctl *m, const char *group, const char *resource, const char *ns,
                       const char *name, const char *uid, const char *propagation) {
  kin__sim_result res = {0, NULL};
  kin__sim_resource *r = resource_of(m, group, resource);
  if (!r) return 404;
  json_t *opts = json_object();
  if (uid) json_object_set_new(opts, "preconditions", json_pack("{s:s}", "uid", uid));
  if (propagation) json_object_set_new(opts, "propagationPolicy", json_string(propagation));
  kin__sim_store_delete(&kin__simctl_sim(m)->store, r, ns ? ns : "", name, opts, 0, &res);
  json_decref(opts);
  return finish(&res, NULL);
}

int kin__simctl_delete_collection(kin__simctl *m, const char *group, const char *resource,
                                  const char *ns, const char *propagation) {
  kin__sim_result res = {0, NULL};
  kin__sim_resource *r = resource_of(m, group, resource);
  if (!r) return 404;
  json_t *opts = json_object();
  if (propagation) json_object_set_new(opts, "propagationPolicy", json_string(propagation));
  kin__sim_store_delete_collection(&kin__simctl_sim(m)->store, r, ns, NULL, NULL, opts, 0, &res);
  json_decref(opts);
  return finish(&res, NULL);
}

/* 1 when r serves verb. */
static int has_verb(const kin__sim_resource *r, const char *verb) {
  for (int i = 0; r->verbs && r->verbs[i]; i++)
    if (!strcmp(r->verbs[i], verb)) return 1;
  return 0;
}

json_t *kin__simctl_namespaced_resources(kin__simctl *m) {
  kin__sim_store *s = &kin__simctl_sim(m)->store;
  json_t *out = json_array();
  if (!out) return NULL;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nres; i++) {
    kin__sim_resource *r = s->res[i];
    if (r->removed || !r->namespaced || !has_verb(r, "delete")) continue;
    size_t j;
    json_t *e;
    int seen = 0;
    json_array_foreach(out, j, e) {
      if (!strcmp(json_string_value(json_array_get(e, 0)), r->group) &&
          !strcmp(json_string_value(json_array_get(e, 2)), r->resource))
        seen = 1;
    }
    if (!seen)
      json_array_append_new(out, json_pack("[s, s, s]", r->group, r->version, r->resource));
  }
  pthread_mutex_unlock(&s->mu);
  return out;
}

int kin__simctl_resource_of_kind(kin__simctl *m, const char *api_version, const char *kind,
                                 const char **group, const char **resource, int *namespaced) {
  kin__sim_store *s = &kin__simctl_sim(m)->store;
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *r = kin__sim_registry_find_kind(s, api_version, kind);
  int ok = r && !r->removed;
  if (ok) {
    *group = r->storage->group;
    *resource = r->storage->resource;
    *namespaced = r->namespaced;
  }
  pthread_mutex_unlock(&s->mu);
  return ok ? 0 : -1;
}
