/* store_delete.c -- Delete and DeleteCollection of the generic registry
 * Store: preconditions, finalizers (deletionTimestamp, removal later),
 * the garbage collector's finalizers the DeleteOptions ask for
 * (gc_delete.c), the namespace's own Delete
 * (namespace_lifecycle.c), and the one cascade the sim does at
 * once: a CRD's custom resources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_delete.h"
#include "kin.h"
#include "store_int.h"

/* Removes every object of st (a deleted CRD's custom resources). */
static void delete_all(kin__sim_store *s, kin__sim_storage *st) {
  size_t n = 0;
  int too_old;
  kin__sim_obj **arr = kin__sim_store_snapshot(s, st, 0, &n, &too_old);
  for (size_t i = 0; i < n; i++) kin__sim_delete_locked(s, st, arr[i]);
  free(arr);
}

/* Removes cur: the DELETED event carries its last state under a new
 * resourceVersion. A CRD takes its custom resources along (the CRD
 * finalizer's work, done at once); a namespace's contents are the
 * namespace controller's (controllers/namespace.c). */
void kin__sim_delete_locked(kin__sim_store *s, kin__sim_storage *st, kin__sim_obj *cur) {
  if (!st->crd && !strcmp(st->resource, "customresourcedefinitions")) {
    const char *name = cur->key;
    kin__sim_storage *crs = kin__sim_registry_remove_crd(s, name);
    if (crs) {
      delete_all(s, crs);
      crs->served = 0;
    }
  }
  cur->refs++;
  json_t *last = kin__sim_obj_json(cur);
  /* On ENOMEM the object stays: nothing was changed. */
  if (last) kin__sim_commit(s, st, KIN__SIM_DELETED, last, cur->key, cur);
  kin__sim_obj_unref(cur);
}

/* Checks DeleteOptions.preconditions; 0 or -1 with a 409 in out. */
static int check_preconditions(kin__sim_resource *r, kin__sim_obj *cur, const json_t *curj,
                               const json_t *pre, kin__sim_result *out) {
  const char *name = kin__sim_jstr(curj, "metadata", "name");
  const char *uid = kin__sim_jstr(pre, "uid", NULL);
  const char *cur_uid = kin__sim_jstr(curj, "metadata", "uid");
  char why[512];
  if (uid && strcmp(uid, cur_uid ? cur_uid : "")) {
    snprintf(why, sizeof(why),
             "the UID in the precondition (%s) does not match the UID in record (%s). The "
             "object might have been deleted and then recreated",
             uid, cur_uid ? cur_uid : "");
    kin__sim_err_conflict(out, r->group, r->kind, name, why);
    return -1;
  }
  const char *rv = kin__sim_jstr(pre, "resourceVersion", NULL);
  char cur_rv[24];
  snprintf(cur_rv, sizeof(cur_rv), "%llu", (unsigned long long)cur->rv);
  if (rv && strcmp(rv, cur_rv)) {
    snprintf(why, sizeof(why),
             "the ResourceVersion in the precondition (%s) does not match the ResourceVersion "
             "in record (%s). The object might have been modified",
             rv, cur_rv);
    kin__sim_err_conflict(out, r->group, r->kind, name, why);
    return -1;
  }
  return 0;
}

/* markAsDeleting of store.go on obj's metadata md: deletionTimestamp
 * (kept when set), deletionGracePeriodSeconds 0, and the generation
 * bumped the first time. */
static void mark_as_deleting(json_t *md) {
  if (!json_object_get(md, "deletionTimestamp")) {
    json_t *g = json_object_get(md, "generation");
    if (json_integer_value(g) > 0)
      json_object_set_new(md, "generation", json_integer(json_integer_value(g) + 1));
    char now[32];
    kin__sim_now_rfc3339(now);
    json_object_set_new(md, "deletionTimestamp", json_string(now));
  }
  json_object_set_new(md, "deletionGracePeriodSeconds", json_integer(0));
}

/* Deletes or marks cur, whose tree curj is (borrowed), as store.go's
 * Delete and updateForGracefulDeletionAndFinalizers: the finalizers the
 * options ask for are set (also on an object already being deleted);
 * with finalizers left the object is marked and answered, else it goes
 * and the answer is a Success Status. */
static void delete_one(kin__sim_store *s, kin__sim_resource *r, kin__sim_obj *cur,
                       const json_t *curj, const kin__sim_delete_opts *o, int dry_run,
                       kin__sim_result *out) {
  kin__sim_storage *st = r->storage;
  const json_t *curmd = json_object_get(curj, "metadata");
  int changed = 0;
  json_t *fin = kin__sim_gc_finalizers(r, json_object_get(curmd, "finalizers"), o, &changed);
  if (!fin) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return;
  }
  if (json_array_size(fin)) {
    json_t *obj = json_deep_copy(curj);
    json_t *md = json_object_get(obj, "metadata");
    if (!md) {
      json_decref(obj);
      json_decref(fin);
      kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
      return;
    }
    if (changed) json_object_set(md, "finalizers", fin);
    json_decref(fin);
    mark_as_deleting(md);
    if (dry_run) {
      json_decref(out->body);
      out->code = 200;
      out->body = obj;
      return;
    }
    if (json_equal(obj, curj)) { /* a no-op update: nothing stored */
      json_decref(obj);
      kin__sim_result_obj(out, 200, cur);
      return;
    }
    kin__sim_obj *n = kin__sim_commit(s, st, KIN__SIM_MODIFIED, obj, cur->key, cur);
    if (n)
      kin__sim_result_obj(out, 200, n);
    else
      kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return;
  }
  json_decref(fin);
  json_t *details = json_pack("{s:s}", "name", kin__sim_jstr(curj, "metadata", "name"));
  if (*r->group) json_object_set_new(details, "group", json_string(r->group));
  json_object_set_new(details, "kind", json_string(r->resource));
  json_object_set_new(details, "uid", json_string(kin__sim_jstr(curj, "metadata", "uid")));
  if (!dry_run) kin__sim_delete_locked(s, st, cur);
  json_decref(out->body);
  out->code = 200;
  out->body = kin__sim_status(200, NULL, NULL, details);
  json_object_del(out->body, "message");
}

/* 1 for core namespaces, whose Delete is their own. */
static int is_namespaces(const kin__sim_resource *r) {
  return !r->crd_name && !*r->group && !strcmp(r->resource, "namespaces");
}

/* The delete of cur under mu (opts read, cur its object): the
 * namespace's own, or the preconditions then delete_one. */
static void delete_locked(kin__sim_store *s, kin__sim_resource *r, const char *name,
                          kin__sim_obj *cur, const kin__sim_delete_opts *o, int dry_run,
                          kin__sim_result *out) {
  json_t *curj = cur ? kin__sim_obj_json(cur) : NULL;
  if (!cur)
    kin__sim_err_not_found(out, r->group, r->resource, name);
  else if (!curj)
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
  else if (is_namespaces(r) && (kin__sim_namespace_admit_delete(name, out) ||
                                kin__sim_namespace_delete(s, r, cur, curj, o, dry_run, out)))
    ; /* out holds the namespace's answer */
  else if (!o->preconditions || !check_preconditions(r, cur, curj, o->preconditions, out))
    delete_one(s, r, cur, curj, o, dry_run, out);
  json_decref(curj);
}

/* One attempt of a delete with admission webhooks: the current object
 * read, the mutating then validating webhooks called (no lock held) with
 * it as oldObject, then the delete if the object is still at the
 * resourceVersion they saw. Returns 1 when it changed meanwhile (try
 * again), else 0 with out filled. */
static int delete_admitted(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const char *name, const kin__sim_delete_opts *o, int dry_run,
                           kin__sim_result *out) {
  pthread_mutex_lock(&s->mu);
  kin__sim_obj *cur = kin__sim_lookup(r->storage, ns, name);
  json_t *curj = cur ? kin__sim_obj_json(cur) : NULL;
  uint64_t rv = cur ? cur->rv : 0;
  pthread_mutex_unlock(&s->mu);
  if (!cur) {
    kin__sim_err_not_found(out, r->group, r->resource, name);
    return 0;
  }
  json_t *old = curj ? kin__sim_view_of(r, curj) : NULL;
  json_decref(curj);
  if (!old) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return 0;
  }
  kin__sim_admit_attrs a = {KIN__SIM_ADMIT_MUTATE, KIN__SIM_OP_DELETE, r, ns, name, old};
  json_t *none = NULL;
  int refused = s->admit(s->admit_ud, &a, &none, out);
  a.stage = KIN__SIM_ADMIT_VALIDATE;
  if (!refused) refused = s->admit(s->admit_ud, &a, &none, out);
  json_decref(none);
  json_decref(old);
  if (refused) return 0;
  pthread_mutex_lock(&s->mu);
  cur = kin__sim_lookup(r->storage, ns, name);
  int stale = cur && cur->rv != rv;
  if (!stale) delete_locked(s, r, name, cur, o, dry_run, out);
  pthread_mutex_unlock(&s->mu);
  return stale;
}

/* The handler's 202: not deleted at once although orphanDependents was
 * false (delete.go). */
static void accepted(const kin__sim_delete_opts *o, kin__sim_result *out) {
  const char *kind = kin__sim_jstr(out->body, "kind", NULL);
  if (out->code == 200 && o->orphan_dependents == 0 && kind && strcmp(kind, "Status"))
    out->code = 202;
}

void kin__sim_store_delete(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const char *name, const json_t *opts, int dry_run,
                           kin__sim_result *out) {
  kin__sim_delete_opts o;
  if (kin__sim_delete_opts_read(opts, &o, out)) return;
  if (s->admit_active && s->admit_active(s->admit_ud, r, KIN__SIM_OP_DELETE)) {
    int i = 0;
    while (delete_admitted(s, r, ns, name, &o, dry_run, out) && ++i < 100) {
    }
    accepted(&o, out);
    return;
  }
  pthread_mutex_lock(&s->mu);
  delete_locked(s, r, name, kin__sim_lookup(r->storage, ns, name), &o, dry_run, out);
  pthread_mutex_unlock(&s->mu);
  accepted(&o, out);
}

/* DeleteCollection with admission webhooks: each object that matches
 * deleted as a DELETE of its own (its webhooks called with it); the
 * first refusal ends it with that refusal, as the real one. */
static void delete_collection_admitted(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                                       kin__sim_match_fn match, void *ud,
                                       const kin__sim_delete_opts *o, int dry_run,
                                       kin__sim_result *out) {
  json_t *items = json_array();
  pthread_mutex_lock(&s->mu);
  size_t n = 0;
  int too_old;
  kin__sim_obj **arr = kin__sim_store_snapshot(s, r->storage, 0, &n, &too_old);
  for (size_t i = 0; i < n; i++) {
    if (ns && !kin__sim_key_in_namespace(arr[i]->key, ns)) continue;
    json_t *curj = kin__sim_obj_json(arr[i]);
    if (curj && (!match || match(ud, curj))) json_array_append(items, curj);
    json_decref(curj);
  }
  free(arr);
  pthread_mutex_unlock(&s->mu);
  json_t *done = json_array();
  size_t i;
  json_t *it;
  json_array_foreach(items, i, it) {
    kin__sim_result one = {0, NULL};
    const char *name = kin__sim_jstr(it, "metadata", "name");
    const char *ons = kin__sim_jstr(it, "metadata", "namespace");
    int k = 0;
    while (delete_admitted(s, r, ons ? ons : "", name ? name : "", o, dry_run, &one) &&
           ++k < 100) {
    }
    if (one.code >= 300 && one.code != 404) {
      json_decref(out->body);
      *out = one;
      json_decref(items);
      json_decref(done);
      return;
    }
    json_decref(one.body);
    json_t *v = one.code == 404 ? NULL : kin__sim_view_of(r, it);
    if (v) json_array_append_new(done, v);
  }
  json_decref(items);
  char apiv[256];
  snprintf(apiv, sizeof(apiv), "%s%s%s", r->group, *r->group ? "/" : "", r->version);
  pthread_mutex_lock(&s->mu);
  char rv[24];
  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)s->rv);
  pthread_mutex_unlock(&s->mu);
  json_decref(out->body);
  out->code = 200;
  out->body = json_pack("{s:s, s:s, s:{s:s}, s:o}", "kind", r->list_kind, "apiVersion", apiv,
                        "metadata", "resourceVersion", rv, "items", done);
}

void kin__sim_store_delete_collection(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                                      kin__sim_match_fn match, void *ud, const json_t *opts,
                                      int dry_run, kin__sim_result *out) {
  kin__sim_delete_opts o;
  if (kin__sim_delete_opts_read(opts, &o, out)) return;
  if (s->admit_active && s->admit_active(s->admit_ud, r, KIN__SIM_OP_DELETE)) {
    delete_collection_admitted(s, r, ns, match, ud, &o, dry_run, out);
    return;
  }
  pthread_mutex_lock(&s->mu);
  size_t n = 0;
  int too_old;
  kin__sim_obj **arr = kin__sim_store_snapshot(s, r->storage, 0, &n, &too_old);
  json_t *items = json_array();
  for (size_t i = 0; i < n; i++) {
    if (ns && !kin__sim_key_in_namespace(arr[i]->key, ns)) continue;
    json_t *curj = kin__sim_obj_json(arr[i]);
    if (!curj || (match && !match(ud, curj))) {
      json_decref(curj);
      continue;
    }
    kin__sim_result one = {0, NULL};
    if (!o.preconditions || !check_preconditions(r, arr[i], curj, o.preconditions, &one))
      delete_one(s, r, arr[i], curj, &o, dry_run, &one);
    json_decref(one.body);
    if (r->convert_out) { /* the List answers in r's version */
      json_t *conv = r->convert_out(curj);
      json_decref(curj);
      if (!(curj = conv)) continue;
    }
    json_array_append_new(items, curj);
  }
  free(arr);
  char apiv[256];
  snprintf(apiv, sizeof(apiv), "%s%s%s", r->group, *r->group ? "/" : "", r->version);
  char rv[24];
  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)s->rv);
  json_decref(out->body);
  out->code = 200;
  out->body = json_pack("{s:s, s:s, s:{s:s}, s:o}", "kind", r->list_kind, "apiVersion", apiv,
                        "metadata", "resourceVersion", rv, "items", items);
  pthread_mutex_unlock(&s->mu);
}

