/* namespace_lifecycle.c -- what kube-apiserver does for a namespace's
 * life: its Delete (pkg/registry/core/namespace/storage/storage.go:
 * deletionTimestamp, phase Terminating, the GC finalizers the options
 * ask for; the object stays while spec.finalizers holds "kubernetes")
 * and the NamespaceLifecycle admission plugin (no create in a missing or
 * terminating namespace, the immortal namespaces). The namespace
 * controller (controllers/namespace.c) does the rest. */
#include <stdio.h>
#include <string.h>

#include "gc_delete.h"
#include "kin.h"

int kin__sim_namespace_has_spec_finalizers(const json_t *obj) {
  return json_array_size(json_object_get(json_object_get(obj, "spec"), "finalizers")) > 0;
}

/* The namespace's own precondition check: 0, or -1 with its 409. */
static int check_preconditions(const kin__sim_obj *cur, const json_t *curj,
                               const kin__sim_delete_opts *o, kin__sim_result *out) {
  const char *name = kin__sim_jstr(curj, "metadata", "name");
  const char *uid = kin__sim_jstr(o->preconditions, "uid", NULL);
  const char *cur_uid = kin__sim_jstr(curj, "metadata", "uid");
  char why[512];
  if (uid && strcmp(uid, cur_uid ? cur_uid : "")) {
    snprintf(why, sizeof(why),
             "Precondition failed: UID in precondition: %s, UID in object meta: %s", uid,
             cur_uid ? cur_uid : "");
    kin__sim_err_conflict(out, "", "namespaces", name, why);
    return -1;
  }
  const char *rv = kin__sim_jstr(o->preconditions, "resourceVersion", NULL);
  char cur_rv[24];
  snprintf(cur_rv, sizeof(cur_rv), "%llu", (unsigned long long)cur->rv);
  if (rv && strcmp(rv, cur_rv)) {
    snprintf(why, sizeof(why),
             "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in "
             "object meta: %s",
             rv, cur_rv);
    kin__sim_err_conflict(out, "", "namespaces", name, why);
    return -1;
  }
  return 0;
}

/* shouldHaveOrphanFinalizer (orphan = 1) and
 * shouldHaveDeleteDependentsFinalizer (orphan = 0) of the namespace
 * storage; have: the namespace has it now. */
static int should_have(int orphan, const kin__sim_delete_opts *o, int have) {
  if (o->orphan_dependents >= 0) return orphan ? o->orphan_dependents : !o->orphan_dependents;
  if (o->propagation) return !strcmp(o->propagation, orphan ? "Orphan" : "Foreground");
  return have;
}

/* Sets metadata.finalizers of md to what the options ask for. */
static void set_gc_finalizers(json_t *md, const kin__sim_delete_opts *o) {
  json_t *cur = json_object_get(md, "finalizers");
  int have_o = 0, have_f = 0;
  size_t i;
  json_t *f;
  json_array_foreach(cur, i, f) {
    const char *s = json_string_value(f);
    if (s && !strcmp(s, "orphan")) have_o = 1;
    if (s && !strcmp(s, "foregroundDeletion")) have_f = 1;
  }
  int want_o = should_have(1, o, have_o), want_f = should_have(0, o, have_f);
  if (want_o == have_o && want_f == have_f) return;
  json_t *out = json_array();
  json_array_foreach(cur, i, f) {
    const char *s = json_string_value(f);
    if (s && (!strcmp(s, "orphan") || !strcmp(s, "foregroundDeletion"))) continue;
    json_array_append(out, f);
  }
  if (want_o) json_array_append_new(out, json_string("orphan"));
  if (want_f) json_array_append_new(out, json_string("foregroundDeletion"));
  if (json_array_size(out))
    json_object_set_new(md, "finalizers", out);
  else {
    json_decref(out);
    json_object_del(md, "finalizers");
  }
}

int kin__sim_namespace_delete(kin__sim_store *s, kin__sim_resource *r, kin__sim_obj *cur,
                              const json_t *curj, const kin__sim_delete_opts *o, int dry_run,
                              kin__sim_result *out) {
  if (check_preconditions(cur, curj, o, out)) return 1;
  const json_t *curmd = json_object_get(curj, "metadata");
  if (!json_object_get(curmd, "deletionTimestamp")) {
    json_t *obj = json_deep_copy(curj);
    json_t *md = json_object_get(obj, "metadata");
    if (!obj || !md) {
      json_decref(obj);
      kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
      return 1;
    }
    char now[32];
    kin__sim_now_rfc3339(now);
    json_object_set_new(md, "deletionTimestamp", json_string(now));
    json_t *status = json_object_get(obj, "status");
    if (!json_is_object(status)) {
      status = json_object();
      json_object_set_new(obj, "status", status);
    }
    json_object_set_new(status, "phase", json_string("Terminating"));
    set_gc_finalizers(md, o);
    if (dry_run) {
      json_decref(out->body);
      out->code = 200;
      out->body = obj;
      return 1;
    }
    kin__sim_obj *n = kin__sim_commit(s, r->storage, KIN__SIM_MODIFIED, obj, cur->key, cur);
    if (n)
      kin__sim_result_obj(out, 200, n);
    else
      kin__sim_err(out, 500, "InternalError", NULL, "out of memory");
    return 1;
  }
  if (kin__sim_namespace_has_spec_finalizers(curj)) {
    kin__sim_result_obj(out, 200, cur);
    return 1;
  }
  return 0;
}

int kin__sim_namespace_admit_create(kin__sim_store *s, const kin__sim_resource *r,
                                    const char *ns, const char *name, kin__sim_result *out) {
  kin__sim_storage *nss = kin__sim_namespaces_storage(s);
  void **v = nss ? kin__hmap_get(&nss->objects, ns) : NULL;
  if (!v) {
    kin__sim_err_not_found(out, "", "namespaces", ns);
    return -1;
  }
  json_t *status = kin__sim_obj_member(*v, "status");
  const char *phase = kin__sim_jstr(status, "phase", NULL);
  int terminating = phase && !strcmp(phase, "Terminating");
  json_decref(status);
  if (!terminating) return 0;
  char q[256], why[512];
  if (*r->group)
    snprintf(q, sizeof(q), "%s.%s", r->resource, r->group);
  else
    snprintf(q, sizeof(q), "%s", r->resource);
  json_t *d = json_object();
  if (name && *name) json_object_set_new(d, "name", json_string(name));
  if (*r->group) json_object_set_new(d, "group", json_string(r->group));
  json_object_set_new(d, "kind", json_string(r->resource));
  snprintf(why, sizeof(why), "namespace %s is being terminated", ns);
  json_object_set_new(d, "causes",
                      json_pack("[{s:s, s:s, s:s}]", "reason", "NamespaceTerminating", "message",
                                why, "field", "metadata.namespace"));
  if (name && *name)
    kin__sim_err(out, 403, "Forbidden", d,
                 "%s \"%s\" is forbidden: unable to create new content in namespace %s because "
                 "it is being terminated",
                 q, name, ns);
  else
    kin__sim_err(out, 403, "Forbidden", d,
                 "%s is forbidden: unable to create new content in namespace %s because it is "
                 "being terminated",
                 q, ns);
  return -1;
}

int kin__sim_namespace_admit_delete(const char *name, kin__sim_result *out) {
  static const char *const immortal[] = {"default", "kube-system", "kube-public", NULL};
  for (int i = 0; immortal[i]; i++) {
    if (strcmp(name, immortal[i])) continue;
    kin__sim_err(out, 403, "Forbidden", json_pack("{s:s, s:s}", "name", name, "kind", "namespaces"),
                 "namespaces \"%s\" is forbidden: this namespace may not be deleted", name);
    return -1;
  }
  return 0;
}
