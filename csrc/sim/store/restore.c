/* restore.c -- objects put into the store as state restored from storage
 * rather than written by a client: the seed file (seed.c) and kin_sim_put
 * (kinformer.replay). An API create ignores a client's uid,
 * creationTimestamp and resourceVersion, as kube-apiserver does; a put
 * keeps them, so a replayed object carries the identity it had in the
 * recorded cluster. The resourceVersion stays monotonic: the counter jumps
 * to a given resourceVersion above it (the object is committed under that
 * version, later writes get higher ones); one at or below it is not
 * reusable and the object gets the next. Every function here but the two
 * public ones runs with kin__sim_store.mu held. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "store_int.h"

/* Copies the message of a Status body (or why) into msg (cap bytes, may be
 * NULL). */
static void set_msg(char *msg, size_t cap, const json_t *status, const char *why) {
  if (!msg || !cap) return;
  const char *m = status ? kin__sim_jstr(status, "message", NULL) : NULL;
  snprintf(msg, cap, "%s", m ? m : why);
}

/* The resourceVersion a put asks for: metadata.resourceVersion as a
 * decimal number; 0 when absent or not a number (the next one then). */
static uint64_t wanted_rv(const json_t *md) {
  const char *s = kin__sim_jstr(md, "resourceVersion", NULL);
  if (!s || !*s) return 0;
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  return (errno || *end || s[0] == '-') ? 0 : (uint64_t)v;
}

/* Moves the counter so that the next commit is want (when above it). */
static void jump_rv(kin__sim_store *s, uint64_t want) {
  if (want > s->rv + 1) s->rv = want - 1;
}

/* Makes namespace ns exist (a Namespace with the create defaults). Returns
 * 0 or KIN_ENOMEM. */
static int ensure_namespace(kin__sim_store *s, const char *ns) {
  if (kin__hmap_get(&kin__sim_namespaces_storage(s)->objects, ns)) return 0;
  json_t *nso = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                          "metadata", "name", ns);
  if (!nso) return KIN_ENOMEM;
  kin__sim_result res = {0, NULL};
  kin__sim_create_locked(s, kin__sim_registry_find(s, "", "v1", "namespaces"), "", nso, 0, &res);
  json_decref(nso);
  json_decref(res.body);
  return res.code == 201 || res.code == 409 ? 0 : KIN_ENOMEM;
}

/* Replaces cur with in (borrowed): what in lacks of uid, creationTimestamp
 * and generation comes from cur. Returns 0 or KIN_ENOMEM. */
static int replace(kin__sim_store *s, kin__sim_resource *r, const char *ns, const json_t *in,
                   kin__sim_obj *cur, uint64_t want) {
  kin__sim_storage *st = r->storage;
  json_t *obj = json_deep_copy(in);
  json_t *old = kin__sim_obj_member(cur, "metadata");
  json_t *md = obj ? json_object_get(obj, "metadata") : NULL;
  if (!md || !old) {
    json_decref(obj);
    json_decref(old);
    return KIN_ENOMEM;
  }
  static const char *const kept[] = {"uid", "creationTimestamp", "generation", NULL};
  for (int i = 0; kept[i]; i++) {
    json_t *v = json_object_get(old, kept[i]);
    if (v && !json_object_get(md, kept[i])) json_object_set(md, kept[i], v);
  }
  json_decref(old);
  if (st->namespaced)
    json_object_set_new(md, "namespace", json_string(ns));
  else
    json_object_del(md, "namespace");
  json_object_set_new(obj, "apiVersion", json_string(st->storage_version));
  json_object_set_new(obj, "kind", json_string(st->kind));
  jump_rv(s, want);
  return kin__sim_commit(s, st, KIN__SIM_MODIFIED, obj, cur->key, cur) ? 0 : KIN_ENOMEM;
}

/* A deletion of cur while finalizers it has and no deletionTimestamp yet
 * hold it: marks it as a delete request does (deletionTimestamp now,
 * grace 0, MODIFIED), so that what holds those finalizers still runs.
 * Returns 0 when marked, 1 when cur is to be removed now, KIN_ENOMEM. */
static int mark_deleted(kin__sim_store *s, kin__sim_storage *st, kin__sim_obj *cur) {
  json_t *obj = kin__sim_obj_json(cur);
  json_t *md = obj ? json_object_get(obj, "metadata") : NULL;
  if (!md) {
    json_decref(obj);
    return KIN_ENOMEM;
  }
  if (kin__sim_finalizers_empty(obj) || json_object_get(md, "deletionTimestamp")) {
    json_decref(obj);
    return 1;
  }
  char now[32];
  kin__sim_now_rfc3339(now);
  json_object_set_new(md, "deletionTimestamp", json_string(now));
  json_object_set_new(md, "deletionGracePeriodSeconds", json_integer(0));
  return kin__sim_commit(s, st, KIN__SIM_MODIFIED, obj, cur->key, cur) ? 0 : KIN_ENOMEM;
}

/* Puts in (borrowed) as restored state (store_int.h, kin_sim_put's rules in
 * sim.h). Returns 0 (the resourceVersion written in *rv, 0 when nothing
 * changed), KIN_EINVAL with the reason in msg, or KIN_ENOMEM. */
int kin__sim_restore_locked(kin__sim_store *s, const json_t *in, int deleted, uint64_t *rv,
                            char *msg, size_t msgcap) {
  if (rv) *rv = 0;
  const char *av = kin__sim_jstr(in, "apiVersion", NULL), *kind = kin__sim_jstr(in, "kind", NULL);
  kin__sim_resource *r = json_is_object(in) ? kin__sim_registry_find_kind(s, av, kind) : NULL;
  if (!r) {
    set_msg(msg, msgcap, NULL, "not a JSON object of a served apiVersion and kind");
    return KIN_EINVAL;
  }
  const json_t *md = json_object_get(in, "metadata");
  const char *name = kin__sim_jstr(md, "name", NULL);
  kin__sim_result res = {0, NULL};
  if (!name || kin__sim_validate_name(r, name, &res)) {
    set_msg(msg, msgcap, res.body, "metadata.name is required");
    json_decref(res.body);
    return KIN_EINVAL;
  }
  const char *ns = r->namespaced ? kin__sim_jstr(md, "namespace", NULL) : "";
  if (!ns || !*ns) ns = r->namespaced ? "default" : "";
  kin__sim_obj *cur = kin__sim_lookup(r->storage, ns, name);
  uint64_t want = wanted_rv(md);
  /* deleted, or a state the server never keeps: gone */
  if (deleted || (json_object_get(md, "deletionTimestamp") && kin__sim_finalizers_empty(in))) {
    if (!cur) return 0;
    jump_rv(s, want);
    int rc = deleted ? mark_deleted(s, r->storage, cur) : 1;
    if (rc < 0) return rc;
    if (rc == 1) kin__sim_delete_locked(s, r->storage, cur);
    if (rv) *rv = s->rv;
    return 0;
  }
  if (r->namespaced && ensure_namespace(s, ns)) return KIN_ENOMEM;
  int rc = 0;
  if (cur) {
    rc = replace(s, r, ns, in, cur, want);
  } else {
    jump_rv(s, want);
    kin__sim_create_keep_locked(s, r, ns, in, &res);
    if (res.code != 201) {
      set_msg(msg, msgcap, res.body, "create failed");
      rc = res.code == 500 ? KIN_ENOMEM : KIN_EINVAL;
    }
    json_decref(res.body);
  }
  if (!rc && rv) *rv = s->rv;
  return rc;
}

/* Parses json and puts it under the store lock (sim.h). Returns 0,
 * KIN_EINVAL (not JSON, or kin__sim_restore_locked's) or KIN_ENOMEM; the
 * parsed tree is freed here. */
int kin_sim_put(kin_sim *sim, const char *json, size_t len, int deleted, uint64_t *rv,
                char *msg, size_t msgcap) {
  if (rv) *rv = 0;
  json_error_t jerr;
  json_t *in = json ? json_loadb(json, len, 0, &jerr) : NULL;
  if (!in) {
    set_msg(msg, msgcap, NULL, json ? jerr.text : "no object");
    return KIN_EINVAL;
  }
  kin__sim_store *s = &sim->store;
  pthread_mutex_lock(&s->mu);
  int rc = kin__sim_restore_locked(s, in, deleted, rv, msg, msgcap);
  pthread_mutex_unlock(&s->mu);
  json_decref(in);
  return rc;
}

/* Copies the stored bytes of one object under the store lock (sim.h).
 * Returns malloc'd JSON text the caller frees, or NULL (absent, not
 * served, ENOMEM). */
char *kin_sim_get(kin_sim *sim, const char *api_version, const char *kind, const char *ns,
                  const char *name) {
  if (!api_version || !kind || !name) return NULL;
  kin__sim_store *s = &sim->store;
  char *out = NULL;
  pthread_mutex_lock(&s->mu);
  kin__sim_resource *r = kin__sim_registry_find_kind(s, api_version, kind);
  if (r) {
    if (!ns || !*ns) ns = r->namespaced ? "default" : "";
    kin__sim_obj *o = kin__sim_lookup(r->storage, r->namespaced ? ns : "", name);
    if (o) out = kin__sim_strdup(o->raw);
  }
  pthread_mutex_unlock(&s->mu);
  return out;
}
