/* seed.c -- objects created at start from a seed file: a JSON array, a
 * List ({"items": [...]}) or one JSON object per line. A seed is state
 * restored from storage rather than a client's create, so an object keeps
 * the status it is given (a create resets it, as the real strategies do). */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

/* Gives the object just created from seed its seed status back, as a
 * second write (a CRD keeps the conditions the sim sets). Caller holds mu. */
static int keep_status(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                       const json_t *seed) {
  json_t *want = json_object_get(seed, "status");
  const char *name = kin__sim_jstr(seed, "metadata", "name");
  if (!want || !name || (!r->crd_name && !strcmp(r->resource, "customresourcedefinitions")))
    return 0;
  kin__sim_obj *cur = kin__sim_lookup(r->storage, ns, name);
  if (!cur) return 0;
  json_t *obj = kin__sim_obj_json(cur);
  if (obj && json_equal(want, json_object_get(obj, "status"))) {
    json_decref(obj);
    return 0;
  }
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

/* Seeds one object per line from f, each parsed, created and freed before
 * the next is read, so no more than one seed tree is alive at a time.
 * Returns 0, KIN_EINVAL (a line that is not JSON or an object not
 * served; the start fails, so what was seeded before does not matter).
 * Caller holds mu. */
static int seed_lines(kin__sim_store *s, FILE *f) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = 0;
  while (!rc && (n = getline(&line, &cap, f)) > 0) {
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\n' || *p == 0 || *p == '#') continue;
    json_error_t jerr;
    json_t *o = json_loadb(line, (size_t)n, 0, &jerr);
    rc = o ? seed_one(s, o) : KIN_EINVAL;
    json_decref(o);
  }
  free(line);
  return rc;
}

int kin__sim_store_seed(kin__sim_store *s, const char *path) {
  json_error_t jerr;
  json_t *doc = json_load_file(path, 0, &jerr);
  json_t *items = NULL;
  if (doc) {
    items = json_is_array(doc) ? json_incref(doc) : json_incref(json_object_get(doc, "items"));
    if (!items) items = json_pack("[O]", doc);
    json_decref(doc);
    if (!items) return KIN_EINVAL;
  }
  FILE *f = NULL;
  if (!items && !(f = fopen(path, "r"))) return KIN_EINVAL;
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  if (items) {
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o) {
      if ((rc = seed_one(s, o))) break;
    }
  } else {
    rc = seed_lines(s, f); /* one object per line */
  }
  pthread_mutex_unlock(&s->mu);
  json_decref(items);
  if (f) fclose(f);
  /* A big seed leaves the freed parse trees and serializations in the
   * heap: hand what is free back to the system, so the sim's RSS is the
   * objects it holds. */
  malloc_trim(0);
  return rc;
}
