/* store_update.c -- Update (and Patch, through the same update
 * function) of the generic registry Store: optimistic concurrency,
 * server-owned metadata, the status subresource, generation on spec
 * change, no-op updates, and removal once the last finalizer goes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_delete.h"
#include "kin.h"
#include "store_int.h"

/* 1 when member key of a and b differ. */
static int member_changed(const json_t *a, const json_t *b, const char *key) {
  const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
  return x != y && (!x || !y || !json_equal(x, y));
}

/* 1 when a and b differ in what bumps metadata.generation: outside
 * metadata and status (custom resources; EndpointSlices, whose labels
 * count too), or in the member the built-in's strategy compares
 * (st->gen_field: spec, webhooks, template, spec and annotations). */
static int spec_changed(const kin__sim_storage *st, const json_t *a, const json_t *b) {
  if (!st->crd && st->gen_field && !strcmp(st->gen_field, "spec+annotations"))
    return member_changed(a, b, "spec") ||
           member_changed(json_object_get(a, "metadata"), json_object_get(b, "metadata"),
                          "annotations");
  if (!st->crd && st->gen_field && !strcmp(st->gen_field, "*") &&
      member_changed(json_object_get(a, "metadata"), json_object_get(b, "metadata"), "labels"))
    return 1;
  if (!st->crd && st->gen_field && strcmp(st->gen_field, "*"))
    return *st->gen_field && member_changed(a, b, st->gen_field);
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)a, k, v) {
    if (!strcmp(k, "metadata") || !strcmp(k, "status")) continue;
    if (!json_equal(v, json_object_get(b, k))) return 1;
  }
  json_object_foreach((json_t *)b, k, v) {
    if (!strcmp(k, "metadata") || !strcmp(k, "status")) continue;
    if (!json_object_get(a, k)) return 1;
  }
  return 0;
}

/* The update without webhooks, all under mu (kin__sim_store_update). */
static void update_plain(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                         const char *name, int status_only, kin__sim_update_fn fn, void *ud,
                         int dry_run, kin__sim_result *out) {
  json_t *curj = NULL;
  pthread_mutex_lock(&s->mu);
  kin__sim_storage *st = r->storage;
  kin__sim_obj *cur = kin__sim_lookup(st, ns, name);
  if (!cur) {
    kin__sim_err_not_found(out, r->group, r->resource, name);
    goto done;
  }
  /* The current object as a tree for this write only, freed at done. */
  curj = kin__sim_obj_json(cur);
  if (!curj) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    goto done;
  }
  /* A version stored in another form (events.k8s.io/v1 Events) updates
   * its own view of the object, converted back to the stored form. */
  json_t *view = r->convert_out ? r->convert_out(curj) : NULL;
  if (r->convert_out && !view) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    goto done;
  }
  json_t *in = fn(ud, view ? view : curj, out);
  json_decref(view);
  if (in && json_is_object(in) && r->convert_in) {
    kin__sim_result cerr = {0, NULL};
    json_t *stored = r->convert_in(in, &cerr);
    json_decref(in);
    if (!stored && cerr.body) {
      json_decref(out->body);
      *out = cerr;
      goto done;
    }
    if (!stored) {
      kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
      goto done;
    }
    in = stored;
  }
  if (!in) goto done;
  if (!json_is_object(in)) {
    /* e.g. a merge patch that replaces the whole document by a scalar */
    kin__sim_err_bad_request(out, "the object provided is unrecognized (must be of type %s): "
                                  "not a JSON object", r->kind);
    json_decref(in);
    goto done;
  }
  json_t *inmd = json_object_get(in, "metadata");
  const char *want_rv = kin__sim_jstr(inmd, "resourceVersion", NULL);
  char cur_rv[24];
  snprintf(cur_rv, sizeof(cur_rv), "%llu", (unsigned long long)cur->rv);
  if (want_rv && *want_rv && strcmp(want_rv, cur_rv)) {
    kin__sim_err_conflict(out, r->group, r->resource, name,
                          "the object has been modified; please apply your changes to the "
                          "latest version and try again");
    json_decref(in);
    goto done;
  }
  json_t *obj;
  const json_t *curmd = json_object_get(curj, "metadata");
  int is_ns = !st->crd && !*st->group && !strcmp(st->resource, "namespaces");
  if (status_only == KIN__SIM_UPDATE_STATUS) {
    obj = json_deep_copy(curj);
    json_t *stv = json_object_get(in, "status");
    if (stv)
      json_object_set(obj, "status", stv);
    else
      json_object_del(obj, "status");
    /* the field manager's record of the write (http_apply.c) */
    json_t *mf = json_object_get(json_object_get(in, "metadata"), "managedFields");
    json_t *md = json_object_get(obj, "metadata");
    /* deploymentStatusStrategy keeps the annotations sent (the deployment
     * controller writes its revision annotation through /status, without
     * bumping the generation); spec and labels stay the old ones. */
    if (!st->crd && !strcmp(st->group, "apps") && !strcmp(st->resource, "deployments") &&
        json_is_object(md)) {
      json_t *ann = json_object_get(json_object_get(in, "metadata"), "annotations");
      if (ann)
        json_object_set(md, "annotations", ann);
      else
        json_object_del(md, "annotations");
    }
    if (mf && json_is_object(md))
      json_object_set(md, "managedFields", mf);
    else if (json_is_object(md))
      json_object_del(md, "managedFields");
  } else {
    obj = json_deep_copy(in);
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md)) {
      md = json_object();
      json_object_set_new(obj, "metadata", md);
    }
    /* Fields the server owns: the client cannot change them by update. */
    static const char *const owned[] = {"name",       "namespace",         "uid",
                                        "creationTimestamp", "deletionTimestamp",
                                        "deletionGracePeriodSeconds", "generation", NULL};
    for (int i = 0; owned[i]; i++) {
      json_t *v = json_object_get(curmd, owned[i]);
      if (v)
        json_object_set(md, owned[i], v);
      else
        json_object_del(md, owned[i]);
    }
    json_object_set_new(obj, "apiVersion", json_string(st->storage_version));
    json_object_set_new(obj, "kind", json_string(st->kind));
    if (st->has_status) {
      json_t *stv = json_object_get(curj, "status");
      if (stv)
        json_object_set(obj, "status", stv);
      else
        json_object_del(obj, "status");
    }
    /* A namespace's spec (its finalizers) changes only through finalize
     * (namespaceStrategy.PrepareForUpdate). */
    if (is_ns && status_only != KIN__SIM_UPDATE_FINALIZE) {
      json_t *spec = json_object_get(curj, "spec");
      if (spec)
        json_object_set(obj, "spec", spec);
      else
        json_object_del(obj, "spec");
    } else if (is_ns) {
      json_t *spec = json_object_get(obj, "spec");
      if (!json_is_object(spec)) json_object_set_new(obj, "spec", spec = json_object());
      if (!json_array_size(json_object_get(spec, "finalizers")))
        json_object_del(spec, "finalizers");
    }
    if (kin__sim_tracks_generation(st) && spec_changed(st, curj, obj)) {
      json_int_t g = json_integer_value(json_object_get(curmd, "generation"));
      json_object_set_new(md, "generation", json_integer(g + 1));
    }
    if (!strcmp(st->resource, "customresourcedefinitions") && !st->crd) {
      if (!dry_run) kin__sim_registry_add_crd(s, obj);
      json_object_set(obj, "status", json_object_get(curj, "status"));
    }
  }
  json_decref(in);
  if (!obj) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    goto done;
  }
  if ((r->validate && r->validate(r, obj, curj, out)) ||
      (status_only == KIN__SIM_UPDATE_MAIN && kin__sim_validate_update(r, name, curj, obj, out))) {
    json_decref(obj);
    goto done;
  }
  /* A no-op update keeps the resourceVersion and sends no event. */
  json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion", json_string(cur_rv));
  if (dry_run) {
    /* The would-be object under the current resourceVersion. */
    json_decref(out->body);
    out->code = 200;
    out->body = obj;
    goto done;
  }
  if (json_equal(obj, curj)) {
    json_decref(obj);
    kin__sim_result_obj(out, 200, cur);
    goto done;
  }
  /* The last finalizer gone from a deleted object: as the real registry
   * (errEmptiedFinalizers), the update is not stored; the object is deleted
   * and the answer is the updated object at its last stored version. A
   * namespace also waits for its spec.finalizers
   * (ShouldDeleteNamespaceDuringUpdate). */
  if (json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") &&
      kin__sim_finalizers_empty(obj) && !(is_ns && kin__sim_namespace_has_spec_finalizers(obj))) {
    json_decref(out->body);
    out->code = 200;
    out->body = obj;
    kin__sim_delete_locked(s, st, cur);
    goto done;
  }
  kin__sim_obj *o = kin__sim_commit(s, st, KIN__SIM_MODIFIED, obj, cur->key, cur);
  if (!o) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    goto done;
  }
  kin__sim_result_obj(out, 200, o);
done:
  pthread_mutex_unlock(&s->mu);
  json_decref(curj);
}


/* What the first pass of an admitted update keeps: the write's own update
 * function's result on the current object, that object and its
 * resourceVersion. */
typedef struct {
  kin__sim_update_fn fn;
  void *ud;
  json_t *in, *cur;
  uint64_t rv;
} capture_ud;

/* The resourceVersion in cur's metadata (0 when absent). */
static uint64_t rv_of(const json_t *cur) {
  const char *rv = kin__sim_jstr(cur, "metadata", "resourceVersion");
  return rv ? strtoull(rv, NULL, 10) : 0;
}

/* Runs the write's update function and keeps its result, then stops the
 * update (NULL with out untouched: nothing written). */
static json_t *capture_fn(void *ud, const json_t *cur, kin__sim_result *err) {
  capture_ud *c = ud;
  json_t *in = c->fn(c->ud, cur, err);
  if (!in) return NULL;
  c->in = in;
  c->cur = json_deep_copy(cur);
  c->rv = rv_of(cur);
  return NULL;
}

/* The admitted object again, as long as the object is still at the
 * resourceVersion admission saw (else *stale and a 409: the whole
 * update is done again, as GuaranteedUpdate's retry). */
typedef struct {
  const json_t *in;
  uint64_t rv;
  int stale;
} fixed_ud;

static json_t *fixed_fn(void *ud, const json_t *cur, kin__sim_result *err) {
  fixed_ud *f = ud;
  if (rv_of(cur) != f->rv) {
    f->stale = 1;
    kin__sim_err(err, 409, "Conflict", NULL, "the object changed during admission");
    return NULL;
  }
  json_t *in = json_deep_copy(f->in);
  if (!in) kin__sim_err(err, 500, "InternalError", NULL, "out of memory");
  return in;
}

/* One attempt of an update with admission webhooks, none called under
 * mu: the update function on the current object (under mu), the
 * mutating webhooks on its result, the update prepared as a dry run,
 * the validating webhooks on what it would store, then the write with a
 * precondition on the resourceVersion read. Returns 1 when the object
 * changed meanwhile (out reset: try again), else 0 with out filled. */
static int update_admitted(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const char *name, int status_only, kin__sim_update_fn fn, void *ud,
                           int dry_run, kin__sim_result *out) {
  capture_ud c = {fn, ud, NULL, NULL, 0};
  update_plain(s, r, ns, name, status_only, capture_fn, &c, 1, out);
  if (!c.in) {
    json_decref(c.cur);
    return 0; /* out holds the refusal (404, the patch's error) */
  }
  json_t *obj = c.in;
  kin__sim_admit_attrs a = {KIN__SIM_ADMIT_MUTATE, KIN__SIM_OP_UPDATE, r, ns, name, c.cur};
  int rc = 0;
  kin__sim_result pre = {0, NULL};
  json_t *view = NULL;
  if (s->admit(s->admit_ud, &a, &obj, out)) goto done;
  fixed_ud f = {obj, c.rv, 0};
  update_plain(s, r, ns, name, status_only, fixed_fn, &f, 1, &pre);
  if (f.stale) {
    rc = 1;
    goto done;
  }
  if (pre.code >= 300 || !pre.body) {
    json_decref(out->body);
    *out = pre;
    pre.body = NULL;
    goto done;
  }
  view = kin__sim_view_of(r, pre.body);
  a.stage = KIN__SIM_ADMIT_VALIDATE;
  if (!view) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    goto done;
  }
  if (s->admit(s->admit_ud, &a, &view, out)) goto done;
  if (dry_run) {
    json_decref(out->body);
    *out = pre;
    pre.body = NULL;
    goto done;
  }
  update_plain(s, r, ns, name, status_only, fixed_fn, &f, 0, out);
  rc = f.stale;
done:
  if (rc) {
    json_decref(out->body);
    out->body = NULL;
    out->code = 0;
  }
  json_decref(view);
  json_decref(pre.body);
  json_decref(obj);
  json_decref(c.cur);
  return rc;
}

void kin__sim_store_update(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const char *name, int status_only, kin__sim_update_fn fn, void *ud,
                           int dry_run, kin__sim_result *out) {
  if (!s->admit_active || !s->admit_active(s->admit_ud, r, KIN__SIM_OP_UPDATE)) {
    update_plain(s, r, ns, name, status_only, fn, ud, dry_run, out);
    return;
  }
  /* GuaranteedUpdate's loop: again while the object changes under it */
  for (int i = 0; i < 100; i++)
    if (!update_admitted(s, r, ns, name, status_only, fn, ud, dry_run, out)) return;
  kin__sim_err_conflict(out, r->group, r->resource, name,
                        "the object has been modified; please apply your changes to the "
                        "latest version and try again");
}
