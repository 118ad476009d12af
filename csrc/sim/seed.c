/* seed.c -- objects created at start from a seed file: a JSON array, a
 * List ({"items": [...]}) or one JSON object per line. A seed is state
 * restored from storage rather than a client's create, so an object keeps
 * the status it is given (a create resets it, as the real strategies do). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "sim_int.h"

/* Gives the object just created from seed its seed status back, as a
 * second write (a CRD keeps the conditions the sim sets). Caller holds mu. */
static int keep_status(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                       const json_t *seed) {
  json_t *want = json_object_get(seed, "status");
  const char *name = kin__sim_jstr(seed, "metadata", "name");
  if (!want || !name || (!r->crd_name && !strcmp(r->resource, "customresourcedefinitions")))
    return 0;
  kin__sim_obj *cur = kin__sim_lookup(r->storage, ns, name);
  if (!cur || json_equal(want, json_object_get(cur->obj, "status"))) return 0;
  json_t *obj = json_deep_copy(cur->obj);
  if (!obj || json_object_set(obj, "status", want)) {
    json_decref(obj);
    return KIN_ENOMEM;
  }
  return kin__sim_commit(s, r->storage, KIN__SIM_MODIFIED, obj, cur->key, cur) ? 0 : KIN_ENOMEM;
}

/* Creates one seed object, making its namespace when missing. */
static int seed_one(kin__sim_store *s, const json_t *obj) {
  kin__sim_resource *r = kin__sim_registry_find_kind(s, kin__sim_jstr(obj, "apiVersion", NULL),
                                                     kin__sim_jstr(obj, "kind", NULL));
  if (!r) return KIN_EINVAL;
  const char *ns = kin__sim_jstr(obj, "metadata", "namespace");
  if (!ns || !*ns) ns = "default";
  kin__sim_result res = {0, NULL};
  if (r->namespaced && !kin__hmap_get(&kin__sim_namespaces_storage(s)->objects, ns)) {
    json_t *nso = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                            "metadata", "name", ns);
    kin__sim_create_locked(s, kin__sim_registry_find(s, "", "v1", "namespaces"), "", nso, 0,
                           &res);
    json_decref(nso);
    json_decref(res.body);
    res.body = NULL;
  }
  kin__sim_create_locked(s, r, ns, obj, 0, &res);
  json_decref(res.body);
  if (res.code == 201) return keep_status(s, r, ns, obj);
  return res.code == 409 ? 0 : KIN_EINVAL;
}

int kin__sim_store_seed(kin__sim_store *s, const char *path) {
  json_error_t jerr;
  json_t *doc = json_load_file(path, 0, &jerr);
  json_t *items = NULL;
  if (doc) {
    items = json_is_array(doc) ? json_incref(doc) : json_incref(json_object_get(doc, "items"));
    if (!items) items = json_pack("[O]", doc);
  } else {
    /* One object per line. */
    FILE *f = fopen(path, "r");
    if (!f) return KIN_EINVAL;
    items = json_array();
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
      const char *p = line;
      while (*p == ' ' || *p == '\t') p++;
      if (*p == '\n' || *p == 0 || *p == '#') continue;
      json_t *o = json_loads(line, 0, &jerr);
      if (!o) {
        json_decref(items);
        items = NULL;
        break;
      }
      json_array_append_new(items, o);
    }
    free(line);
    fclose(f);
  }
  json_decref(doc);
  if (!items) return KIN_EINVAL;
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  size_t i;
  json_t *o;
  json_array_foreach(items, i, o) {
    if ((rc = seed_one(s, o))) break;
  }
  pthread_mutex_unlock(&s->mu);
  json_decref(items);
  return rc;
}

