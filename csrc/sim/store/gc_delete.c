/* gc_delete.c -- DeleteOptions and the garbage collector's finalizers
 * that a delete puts on an object (k8s.io/apiserver registry/generic/
 * registry/store.go deletionFinalizersForGarbageCollection,
 * shouldOrphanDependents, shouldDeleteDependents; the strategies'
 * DefaultGarbageCollectionPolicy). */
#include <stdio.h>
#include <string.h>

#include "gc_delete.h"

enum { POLICY_DELETE_DEPENDENTS, POLICY_ORPHAN, POLICY_UNSUPPORTED };

/* The strategy's DefaultGarbageCollectionPolicy for a request served at
 * r's group/version: events have none, core/v1 ReplicationControllers
 * and batch/v1 Jobs orphan for backward compatibility, the rest delete
 * their dependents in the background. */
static int default_policy(const kin__sim_resource *r) {
  if (r->crd_name) return POLICY_DELETE_DEPENDENTS;
  if (!strcmp(r->resource, "events") && (!*r->group || !strcmp(r->group, "events.k8s.io")))
    return POLICY_UNSUPPORTED;
  if (!*r->group && !strcmp(r->resource, "replicationcontrollers") && !strcmp(r->version, "v1"))
    return POLICY_ORPHAN;
  if (!strcmp(r->group, "batch") && !strcmp(r->resource, "jobs") && !strcmp(r->version, "v1"))
    return POLICY_ORPHAN;
  return POLICY_DELETE_DEPENDENTS;
}

int kin__sim_delete_opts_read(const json_t *opts, kin__sim_delete_opts *o, kin__sim_result *out) {
  o->preconditions = json_object_get(opts, "preconditions");
  o->propagation = NULL;
  o->orphan_dependents = -1;
  json_t *p = json_object_get(opts, "propagationPolicy");
  json_t *od = json_object_get(opts, "orphanDependents");
  if (json_is_boolean(od)) o->orphan_dependents = json_is_true(od);
  if (json_is_string(p)) o->propagation = json_string_value(p);
  if (!o->propagation) return 0;
  char detail[512];
  if (o->orphan_dependents >= 0) {
    snprintf(detail, sizeof(detail),
             "Invalid value: \"%.100s\": orphanDependents and deletionPropagation cannot be both "
             "set",
             o->propagation);
    kin__sim_err_invalid(out, "meta.k8s.io", "DeleteOptions", "", "propagationPolicy",
                         "FieldValueInvalid", detail);
    return -1;
  }
  if (strcmp(o->propagation, "Foreground") && strcmp(o->propagation, "Background") &&
      strcmp(o->propagation, "Orphan")) {
    snprintf(detail, sizeof(detail),
             "Unsupported value: \"%.100s\": supported values: \"Foreground\", \"Background\", "
             "\"Orphan\", \"nil\"",
             o->propagation);
    kin__sim_err_invalid(out, "meta.k8s.io", "DeleteOptions", "", "propagationPolicy",
                         "FieldValueNotSupported", detail);
    return -1;
  }
  return 0;
}

/* shouldOrphanDependents (orphan = 1) or shouldDeleteDependents
 * (orphan = 0) of store.go. */
static int should(int orphan, int policy, const json_t *cur, const kin__sim_delete_opts *o) {
  if (o->orphan_dependents >= 0) return orphan ? o->orphan_dependents : 0;
  if (o->propagation) return !strcmp(o->propagation, orphan ? "Orphan" : "Foreground");
  size_t i;
  json_t *f;
  json_array_foreach(cur, i, f) {
    const char *s = json_string_value(f);
    if (s && !strcmp(s, "orphan")) return orphan;
    if (s && !strcmp(s, "foregroundDeletion")) return !orphan;
  }
  return orphan && policy == POLICY_ORPHAN;
}

/* 1 when arr holds the string s. */
static int has(const json_t *arr, const char *s) {
  size_t i;
  json_t *f;
  json_array_foreach(arr, i, f) {
    if (json_is_string(f) && !strcmp(json_string_value(f), s)) return 1;
  }
  return 0;
}

json_t *kin__sim_gc_finalizers(const kin__sim_resource *r, const json_t *cur,
                               const kin__sim_delete_opts *o, int *changed) {
  int policy = default_policy(r);
  *changed = 0;
  if (policy == POLICY_UNSUPPORTED) return cur ? json_deep_copy(cur) : json_array();
  int orphan = should(1, policy, cur, o), fg = should(0, policy, cur, o);
  json_t *out = json_array();
  if (!out) return NULL;
  size_t i;
  json_t *f;
  json_array_foreach(cur, i, f) {
    const char *s = json_string_value(f);
    if (s && (!strcmp(s, "orphan") || !strcmp(s, "foregroundDeletion"))) continue;
    json_array_append(out, f);
  }
  if (orphan) json_array_append_new(out, json_string("orphan"));
  if (fg) json_array_append_new(out, json_string("foregroundDeletion"));
  /* As sets: every member of one is in the other. */
  json_array_foreach(out, i, f) {
    if (!has(cur, json_string_value(f))) *changed = 1;
  }
  json_array_foreach(cur, i, f) {
    if (json_is_string(f) && !has(out, json_string_value(f))) *changed = 1;
  }
  return out;
}
