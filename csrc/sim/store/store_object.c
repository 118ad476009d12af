/* store_object.c -- the object-level pieces of the generic registry Store
 * (k8s.io/apiserver pkg/registry/generic/registry/store.go) shared by its
 * verbs: keys, lookup, commit under the next resourceVersion, get, and an
 * object at its resource's version for the admission webhooks.
 * Functions named kin__sim_* here run with kin__sim_store.mu held, except
 * kin__sim_store_get, which takes it, and kin__sim_view_of, which needs
 * none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

void kin__sim_key_of(char *buf, size_t cap, int namespaced, const char *ns, const char *name) {
  if (namespaced)
    snprintf(buf, cap, "%s/%s", ns ? ns : "", name);
  else
    snprintf(buf, cap, "%s", name);
}

kin__sim_obj *kin__sim_lookup(kin__sim_storage *st, const char *ns, const char *name) {
  char key[768];
  kin__sim_key_of(key, sizeof(key), st->namespaced, ns, name);
  void **v = kin__hmap_get(&st->objects, key);
  return v ? *v : NULL;
}

int kin__sim_key_in_namespace(const char *key, const char *ns) {
  size_t n = strlen(ns);
  return !strncmp(key, ns, n) && key[n] == '/';
}

/* Whether the kind keeps metadata.generation (the built-ins whose
 * strategy sets it, registry_builtins.c, and every custom resource). */
int kin__sim_tracks_generation(const kin__sim_storage *st) {
  return st->crd || st->gen_field != NULL;
}

static void set_rv(json_t *obj, uint64_t rv) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%llu", (unsigned long long)rv);
  json_t *md = json_object_get(obj, "metadata");
  json_object_set_new(md, "resourceVersion", json_string(buf));
}

/* Returns obj (stolen) with kind, apiVersion and metadata first, the order
 * of the server's encoder, so a list can drop the first two cheaply. */
static json_t *canonical_order(json_t *obj) {
  json_t *out = json_object();
  if (!out) return obj;
  static const char *const first[] = {"kind", "apiVersion", "metadata", NULL};
  for (int i = 0; first[i]; i++) {
    json_t *v = json_object_get(obj, first[i]);
    if (v) json_object_set(out, first[i], v);
  }
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    if (!json_object_get(out, k)) json_object_set(out, k, v);
  }
  json_decref(obj);
  return out;
}

/* Commits obj (stolen) under the next resourceVersion, replacing prev (may
 * be NULL) in the map, and records the event. Returns the stored object
 * (borrowed) or NULL on ENOMEM. */
kin__sim_obj *kin__sim_commit(kin__sim_store *s, kin__sim_storage *st, int type, json_t *obj,
                              const char *key, kin__sim_obj *prev) {
  uint64_t rv = s->rv + 1;
  obj = canonical_order(obj);
  set_rv(obj, rv);
  unsigned char *pb = NULL;
  size_t pblen = 0, msg_off = 0, msg_len = 0;
  if (s->pre_encode && !st->crd && s->pre_encode(obj, &pb, &pblen, &msg_off, &msg_len))
    pb = NULL;
  kin__sim_obj *o = kin__sim_obj_new(obj, rv, key);
  if (!o) {
    free(pb);
    return NULL;
  }
  o->pb = pb;
  o->pblen = pblen;
  o->pb_msg_off = msg_off;
  o->pb_msg_len = msg_len;
  if (type == KIN__SIM_DELETED) {
    void *old = NULL;
    kin__hmap_del(&st->objects, key, &old);
    /* On ENOMEM the event is lost but the object still goes away. */
    (void)kin__sim_history_append(s, type, st, o, prev);
    kin__sim_obj_unref(old);
    s->rv = rv;
    st->sorted_dirty = 1;
    if (s->commit_hook) s->commit_hook(s->commit_hook_ud, type, st, o, prev);
    kin__sim_obj_unref(o); /* the history holds it */
    return o;
  }
  void *old = NULL;
  if (kin__hmap_put(&st->objects, key, o, &old) < 0) {
    kin__sim_obj_unref(o);
    return NULL;
  }
  s->rv = rv;
  st->sorted_dirty = 1;
  kin__sim_history_append(s, type, st, o, prev);
  if (s->commit_hook) s->commit_hook(s->commit_hook_ud, type, st, o, prev);
  kin__sim_obj_unref(old);
  return o;
}

void kin__sim_result_obj(kin__sim_result *out, int code, const kin__sim_obj *o) {
  json_decref(out->body);
  out->body = kin__sim_obj_json(o);
  out->code = code;
  if (!out->body) kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
}

int kin__sim_finalizers_empty(const json_t *obj) {
  return json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) == 0;
}

void kin__sim_store_get(kin__sim_store *s, kin__sim_resource *r, const char *ns,
                        const char *name, kin__sim_result *out) {
  pthread_mutex_lock(&s->mu);
  kin__sim_obj *o = kin__sim_lookup(r->storage, ns, name);
  if (o)
    kin__sim_result_obj(out, 200, o);
  else
    kin__sim_err_not_found(out, r->group, r->resource, name);
  pthread_mutex_unlock(&s->mu);
}


/* See store_int.h: stored (borrowed) at r's version (the resource's
 * convert_out, else a copy with r's apiVersion): a new tree the caller
 * frees, or NULL on ENOMEM. Needs no lock. */
json_t *kin__sim_view_of(const kin__sim_resource *r, const json_t *stored) {
  if (r->convert_out) return r->convert_out(stored);
  json_t *v = json_deep_copy(stored);
  char av[320];
  snprintf(av, sizeof(av), "%s%s%s", r->group, *r->group ? "/" : "", r->version);
  if (v) json_object_set_new(v, "apiVersion", json_string(av));
  return v;
}
