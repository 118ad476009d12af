/* store_create.c -- Create of the generic registry Store with the
 * strategies' PrepareForCreate the sim keeps: generateName, uid,
 * creationTimestamp, generation, name validation, the namespace must
 * exist and not be terminating (namespace_lifecycle.c), AlreadyExists,
 * and the defaults of namespaces, pods and CRDs.
 * kin__sim_create_keep_locked is the same create for state restored from
 * storage (the seed, kin_sim_put): what the object gives of those fields
 * is kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_delete.h"
#include "kin.h"
#include "store_int.h"

static void crd_set_status(json_t *crd) {
  json_t *names = json_object_get(json_object_get(crd, "spec"), "names");
  char now[32];
  kin__sim_now_rfc3339(now);
  json_t *st = json_pack(
      "{s:[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}], s:O, s:[s]}", "conditions",
      "type", "NamesAccepted", "status", "True", "lastTransitionTime", now, "reason",
      "NoConflicts", "message", "no conflicts found", "type", "Established", "status", "True",
      "lastTransitionTime", now, "reason", "InitialNamesAccepted", "message",
      "the initial names have been accepted", "acceptedNames", names ? names : json_object(),
      "storedVersions", "v1");
  json_t *versions = json_object_get(json_object_get(crd, "spec"), "versions");
  size_t i;
  json_t *v;
  json_array_foreach(versions, i, v) {
    if (json_is_true(json_object_get(v, "storage")))
      json_array_set_new(json_object_get(st, "storedVersions"), 0,
                         json_string(kin__sim_jstr(v, "name", NULL)));
  }
  json_object_set_new(crd, "status", st);
}

/* The create of both entry points below: keep = 1 keeps the object's uid,
 * creationTimestamp, generation, deletion fields, status and (namespaces)
 * spec when it has them. Caller holds mu. */
static void create(kin__sim_store *s, kin__sim_resource *r, const char *ns, const json_t *in,
                   int dry_run, int keep, kin__sim_result *out) {
  kin__sim_storage *st = r->storage;
  /* the stored form (an events.k8s.io/v1 Event converted to core v1) */
  kin__sim_result cerr = {0, NULL};
  json_t *obj = r->convert_in ? r->convert_in(in, &cerr) : json_deep_copy(in);
  if (!obj && cerr.body) {
    json_decref(out->body);
    *out = cerr;
    return;
  }
  if (!obj) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return;
  }
  json_t *md = json_object_get(obj, "metadata");
  if (!json_is_object(md)) {
    md = json_object();
    json_object_set_new(obj, "metadata", md);
  }
  const char *name = kin__sim_jstr(md, "name", NULL);
  const char *gen = kin__sim_jstr(md, "generateName", NULL);
  /* NamespaceLifecycle admission runs before the name is generated or
   * validated; it names the object by its generateName then. */
  if (r->namespaced &&
      kin__sim_namespace_admit_create(s, r, ns, name && *name ? name : gen, out)) {
    json_decref(obj);
    return;
  }
  char namebuf[300];
  if ((!name || !*name) && gen && *gen) {
    /* utilrand.String(5) over its 27 letters (27^5 names), and, as
     * kube-apiserver's RetryGenerateName (GA in v1.32), up to 8 tries when
     * the name is taken; the last taken one answers AlreadyExists below */
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    for (int attempt = 0; attempt < 8; attempt++) {
      char uid[37];
      kin__sim_uuid(uid);
      uint64_t x = 0;
      for (int i = 0; uid[i]; i++)
        if (uid[i] != '-') x = x * 16 + (uint64_t)(uid[i] <= '9' ? uid[i] - '0' : uid[i] - 'a' + 10);
      char suffix[6];
      for (int i = 0; i < 5; i++, x /= 27) suffix[i] = alphabet[x % 27];
      suffix[5] = 0;
      snprintf(namebuf, sizeof(namebuf), "%.250s%s", gen, suffix);
      char k[768];
      kin__sim_key_of(k, sizeof(k), st->namespaced, ns, namebuf);
      if (!kin__hmap_get(&st->objects, k)) break;
    }
    json_object_set_new(md, "name", json_string(namebuf));
    name = kin__sim_jstr(md, "name", NULL);
  }
  if (!name || !*name) {
    kin__sim_err_invalid(out, r->group, r->kind, "", "metadata.name", "FieldValueRequired",
                         "Required value: name or generateName is required");
    json_decref(obj);
    return;
  }
  /* a resource with a validate hook checks its names there */
  if (!r->validate && kin__sim_validate_name(r, name, out)) {
    json_decref(obj);
    return;
  }
  if (r->namespaced) {
    json_object_set_new(md, "namespace", json_string(ns));
  } else {
    json_object_del(md, "namespace");
  }
  if (r->validate && r->validate(r, obj, NULL, out)) {
    json_decref(obj);
    return;
  }
  char key[768];
  kin__sim_key_of(key, sizeof(key), st->namespaced, ns, name);
  if (kin__hmap_get(&st->objects, key)) {
    kin__sim_err_already_exists(out, r->group, r->resource, name);
    json_decref(obj);
    return;
  }
  char uid[37], now[32];
  kin__sim_uuid(uid);
  kin__sim_now_rfc3339(now);
  if (!keep || !json_is_string(json_object_get(md, "uid")))
    json_object_set_new(md, "uid", json_string(uid));
  if (!keep || !json_is_string(json_object_get(md, "creationTimestamp")))
    json_object_set_new(md, "creationTimestamp", json_string(now));
  if (!keep) {
    json_object_del(md, "deletionTimestamp");
    json_object_del(md, "deletionGracePeriodSeconds");
    json_object_del(md, "generation");
  }
  if (kin__sim_tracks_generation(st) && !json_is_integer(json_object_get(md, "generation")))
    json_object_set_new(md, "generation", json_integer(1));
  json_object_set_new(obj, "apiVersion", json_string(st->storage_version));
  json_object_set_new(obj, "kind", json_string(st->kind));
  int has_status = keep && json_object_get(obj, "status");
  if (!keep) kin__sim_defaults_create(st, obj);
  if (!strcmp(st->resource, "namespaces") && !st->crd) {
    /* PrepareForCreate: the finalizers asked for, and "kubernetes" (a
     * restored namespace keeps its spec as it is). */
    json_t *spec = json_object_get(obj, "spec");
    if (!keep || !spec) {
      json_t *fins = json_object_get(spec, "finalizers");
      json_t *kept = json_array();
      size_t i;
      json_t *f;
      int has_kube = 0;
      json_array_foreach(fins, i, f) {
        if (!json_is_string(f)) continue;
        if (!strcmp(json_string_value(f), "kubernetes")) has_kube = 1;
        json_array_append(kept, f);
      }
      if (!has_kube) json_array_append_new(kept, json_string("kubernetes"));
      json_object_set_new(obj, "spec", json_pack("{s:o}", "finalizers", kept));
    }
    if (!has_status) json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
    json_t *labels = json_object_get(md, "labels");
    if (!json_is_object(labels)) {
      labels = json_object();
      json_object_set_new(md, "labels", labels);
    }
    json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
  } else if (!strcmp(st->resource, "customresourcedefinitions") && !st->crd) {
    if (!dry_run && kin__sim_registry_add_crd(s, obj)) {
      kin__sim_err_invalid(out, r->group, r->kind, name, "spec", "FieldValueInvalid",
                           "Invalid value: spec.group, spec.names and spec.versions are required");
      json_decref(obj);
      return;
    }
    if (!has_status) crd_set_status(obj);
  } else if (!strcmp(st->resource, "pods") && !st->crd) {
    if (!has_status) json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending"));
  } else if (!*st->group && !strcmp(st->resource, "persistentvolumeclaims") && !st->crd) {
    /* SetDefaults_PersistentVolumeClaim, after the strategy's reset */
    if (!has_status) json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending"));
  } else if (!*st->group && !strcmp(st->resource, "persistentvolumes") && !st->crd) {
    if (!has_status)
      json_object_set_new(obj, "status", json_pack("{s:s, s:s}", "phase", "Pending",
                                                   "lastPhaseTransitionTime", now));
  } else if (st->has_status && !has_status) {
    json_object_del(obj, "status");
  }
  if (dry_run) {
    /* What would be stored, without a resourceVersion: nothing was. */
    json_object_del(md, "resourceVersion");
    json_decref(out->body);
    out->code = 201;
    out->body = obj;
    return;
  }
  kin__sim_obj *o = kin__sim_commit(s, st, KIN__SIM_ADDED, obj, key, NULL);
  if (!o) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return;
  }
  kin__sim_result_obj(out, 201, o);
}

void kin__sim_create_locked(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                            const json_t *in, int dry_run, kin__sim_result *out) {
  create(s, r, ns, in, dry_run, 0, out);
}

void kin__sim_create_keep_locked(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                                 const json_t *in, kin__sim_result *out) {
  create(s, r, ns, in, 0, 1, out);
}

/* The create with admission webhooks, none called under mu: the
 * mutating ones on the object sent, the create prepared as a dry run,
 * the validating ones on what it would store (generated name, uid,
 * defaults), then that object created (its uid and timestamps kept), or
 * for a dry run answered (201, nothing stored). */
static void create_admitted(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                            const json_t *in, int dry_run, kin__sim_result *out) {
  json_t *obj = json_deep_copy(in);
  if (!obj) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return;
  }
  /* the name sent (a copy: a mutating webhook's patch replaces obj) */
  const char *sent = kin__sim_jstr(obj, "metadata", "name");
  char name[300];
  snprintf(name, sizeof(name), "%s", sent ? sent : "");
  kin__sim_admit_attrs a = {KIN__SIM_ADMIT_MUTATE, KIN__SIM_OP_CREATE, r, ns, name, NULL};
  if (s->admit(s->admit_ud, &a, &obj, out)) {
    json_decref(obj);
    return;
  }
  kin__sim_result pre = {0, NULL};
  pthread_mutex_lock(&s->mu);
  create(s, r, ns, obj, 1, 0, &pre);
  pthread_mutex_unlock(&s->mu);
  json_decref(obj);
  if (pre.code >= 300 || !pre.body) {
    json_decref(out->body);
    *out = pre;
    return;
  }
  json_t *view = kin__sim_view_of(r, pre.body);
  if (!view) {
    kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    json_decref(pre.body);
    return;
  }
  a.stage = KIN__SIM_ADMIT_VALIDATE;
  a.name = kin__sim_jstr(view, "metadata", "name");
  int refused = s->admit(s->admit_ud, &a, &view, out);
  if (refused || dry_run) {
    /* admitted dry run: the answer is the would-be object, whatever out
     * held before (an apply's 404 from its update attempt) */
    if (!refused) {
      json_decref(out->body);
      *out = pre;
      pre.body = NULL;
    }
    json_decref(view);
    json_decref(pre.body);
    return;
  }
  json_decref(pre.body);
  pthread_mutex_lock(&s->mu);
  create(s, r, ns, view, 0, 1, out);
  pthread_mutex_unlock(&s->mu);
  json_decref(view);
}

void kin__sim_store_create(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                           const json_t *obj, int dry_run, kin__sim_result *out) {
  if (s->admit_active && s->admit_active(s->admit_ud, r, KIN__SIM_OP_CREATE)) {
    create_admitted(s, r, ns, obj, dry_run, out);
    return;
  }
  pthread_mutex_lock(&s->mu);
  kin__sim_create_locked(s, r, ns, obj, dry_run, out);
  pthread_mutex_unlock(&s->mu);
}

