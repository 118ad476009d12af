/* namespace.c -- kube-controller-manager's "namespace" controller
 * (pkg/controller/namespace: namespace_controller.go and
 * deletion/namespaced_resources_deleter.go, status_condition_utils.go).
 *
 * A namespace with a deletionTimestamp is synced 5 s later (the real
 * controller's namespaceDeletionGracePeriod): its phase is made
 * Terminating, the pods in it are deleted first (deletecollection,
 * background propagation), then every other namespaced resource's
 * objects; the conditions NamespaceDeletionDiscoveryFailure,
 * NamespaceDeletionGroupVersionParsingFailure,
 * NamespaceDeletionContentFailure, NamespaceContentRemaining and
 * NamespaceFinalizersRemaining say how it went. Objects left behind by
 * their finalizers bring the namespace back after the estimate (15 s,
 * halved plus one); once none is left, "kubernetes" leaves
 * spec.finalizers through the finalize subresource and the API server
 * removes the namespace (when its metadata.finalizers are empty too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "kin.h"

enum {
  GRACE_MS = 5000,           /* namespaceDeletionGracePeriod */
  FINALIZER_ESTIMATE_S = 15, /* finalizerEstimateSeconds */
  RETRY_MS = 1000,           /* AddRateLimited, simplified */
};

typedef struct {
  char *name;
  uint64_t due;
} ns_item;

/* The controller's state: the manager thread's own, no lock. */
typedef struct {
  ns_item *q;
  size_t n, cap;
} ns_ctl;

/* Returns a new empty queue, or NULL on ENOMEM. */
static void *ns_create(kin__simctl *m) {
  (void)m;
  return calloc(1, sizeof(ns_ctl));
}

/* Frees the queue and the state. */
static void ns_destroy(void *self) {
  ns_ctl *c = self;
  for (size_t i = 0; i < c->n; i++) free(c->q[i].name);
  free(c->q);
  free(c);
}

/* Queues name at due, or earlier if queued (AddAfter); on ENOMEM the
 * namespace waits for its next change. */
static void enqueue(ns_ctl *c, const char *name, uint64_t due) {
  for (size_t i = 0; i < c->n; i++) {
    if (strcmp(c->q[i].name, name)) continue;
    if (due < c->q[i].due) c->q[i].due = due;
    return;
  }
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 8;
    ns_item *p = realloc(c->q, nc * sizeof(*p));
    if (!p) return;
    c->q = p;
    c->cap = nc;
  }
  char *dup = strdup(name);
  if (!dup) return;
  c->q[c->n].name = dup;
  c->q[c->n].due = due;
  c->n++;
}

/* Queues a namespace with a deletionTimestamp, 5 s from now. */
static void ns_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                       const kin__sim_obj *obj, const kin__sim_obj *prev) {
  (void)prev;
  if (st->crd || *st->group || strcmp(st->resource, "namespaces") || type == KIN__SIM_DELETED)
    return;
  if (!strstr(obj->raw, "\"deletionTimestamp\"")) return;
  enqueue(self, obj->key, kin__simctl_now_ms(m) + GRACE_MS);
}

/* What deleting one resource's objects left (gvrDeletionMetadata). */
typedef struct {
  int64_t estimate;
  size_t remaining;
  json_t *finalizers; /* finalizer -> count, borrowed from the caller */
} gvr_left;

/* deleteAllContentForGroupVersionResource: deletes the objects of
 * group/resource in ns and counts what is left. Returns 0, or -1 with
 * the error's text in err (cap bytes). */
static int delete_resource(kin__simctl *m, const char *group, const char *version,
                           const char *resource, const char *ns, gvr_left *left, char *err,
                           size_t cap) {
  left->estimate = 0;
  left->remaining = 0;
  int code = kin__simctl_delete_collection(m, group, resource, ns, "Background");
  if (code != 200) {
    snprintf(err, cap, "failed to delete %s.%s in namespace %s: code %d", resource, group, ns,
             code);
    return -1;
  }
  json_t *items = kin__simctl_list(m, group, resource, ns, NULL, NULL);
  size_t n = json_array_size(items);
  size_t with_finalizers = 0;
  size_t i;
  json_t *it;
  json_array_foreach(items, i, it) {
    size_t j;
    json_t *f;
    json_t *fins = json_object_get(json_object_get(it, "metadata"), "finalizers");
    if (json_array_size(fins)) with_finalizers++;
    json_array_foreach(fins, j, f) {
      const char *name = json_string_value(f);
      if (!name) continue;
      json_int_t k = json_integer_value(json_object_get(left->finalizers, name));
      json_object_set_new(left->finalizers, name, json_integer(k + 1));
    }
  }
  json_decref(items);
  left->remaining = n;
  if (!n) return 0;
  if (with_finalizers) {
    left->estimate = FINALIZER_ESTIMATE_S;
    return 0;
  }
  snprintf(err, cap, "unexpected items still remain in namespace: %s for gvr: %s%s%s, Resource=%s",
           ns, group, "/", version, resource);
  return -1;
}

/* A condition {type, status, lastTransitionTime, reason, message}. */
static json_t *condition(const char *type, const char *status, const char *now,
                         const char *reason, const char *message) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status,
                   "lastTransitionTime", now, "reason", reason, "message", message);
}

/* The five condition types in the controller's order, their ok reasons
 * and messages. */
static const char *const types[][3] = {
    {"NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered",
     "All resources successfully discovered"},
    {"NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions",
     "All legacy kube types successfully parsed"},
    {"NamespaceDeletionContentFailure", "ContentDeleted",
     "All content successfully deleted, may be waiting on finalization"},
    {"NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"},
    {"NamespaceFinalizersRemaining", "ContentHasNoFinalizers",
     "All content-preserving finalizers finished"},
};

/* qsort's comparison of two C strings. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Joins the strings of arr sorted, with ", ", into out (cap bytes). */
static void join_sorted(json_t *arr, char *out, size_t cap) {
  size_t n = json_array_size(arr);
  const char **v = calloc(n ? n : 1, sizeof(*v));
  out[0] = 0;
  if (!v) return;
  for (size_t i = 0; i < n; i++) v[i] = json_string_value(json_array_get(arr, i));
  qsort(v, n, sizeof(*v), cmp_str);
  size_t len = 0;
  for (size_t i = 0; i < n && len < cap; i++)
    len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? ", " : "", v[i]);
  free(v);
}

/* updateConditions: merges the new conditions (type -> condition, the
 * failing ones) into ns's status; the others get their ok variant.
 * Returns 1 when the status changed. */
static int update_conditions(json_t *ns, json_t *failing, const char *now) {
  json_t *status = json_object_get(ns, "status");
  if (!json_is_object(status)) {
    status = json_object();
    json_object_set_new(ns, "status", status);
  }
  json_t *conds = json_object_get(status, "conditions");
  if (!json_is_array(conds)) {
    conds = json_array();
    json_object_set_new(status, "conditions", conds);
  }
  int changed = 0;
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    json_t *nc = json_object_get(failing, types[t][0]);
    json_t *want = nc ? json_incref(nc)
                      : condition(types[t][0], "False", now, types[t][1], types[t][2]);
    json_t *old = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
      const char *ty = kin__sim_jstr(c, "type", NULL);
      if (ty && !strcmp(ty, types[t][0])) old = c;
    }
    if (!old) {
      json_array_append(conds, want);
      changed = 1;
    } else {
      static const char *const fields[] = {"status", "reason", "message"};
      int differs = 0;
      for (int f = 0; f < 3; f++)
        if (!json_equal(json_object_get(old, fields[f]), json_object_get(want, fields[f])))
          differs = 1;
      if (differs) {
        if (!json_equal(json_object_get(old, "status"), json_object_get(want, "status")))
          json_object_set_new(old, "lastTransitionTime", json_string(now));
        for (int f = 0; f < 3; f++)
          json_object_set(old, fields[f], json_object_get(want, fields[f]));
        changed = 1;
      }
    }
    json_decref(want);
  }
  return changed;
}

/* Sets failing[type] to a True condition whose message is prefix and the
 * counts ({what: n}) written with each ("%s ... %lld ..."), sorted and
 * joined as the real controller joins them. */
static void counts_condition(json_t *failing, const json_t *counts, const char *each,
                             const char *prefix, const char *type, const char *reason,
                             const char *now) {
  char list[4096], msg[4200];
  const char *k;
  json_t *v;
  json_t *parts = json_array();
  json_object_foreach((json_t *)counts, k, v) {
    char one[512];
    snprintf(one, sizeof(one), each, k, (long long)json_integer_value(v));
    json_array_append_new(parts, json_string(one));
  }
  join_sorted(parts, list, sizeof(list));
  json_decref(parts);
  snprintf(msg, sizeof(msg), "%s%s", prefix, list);
  json_object_set_new(failing, type, condition(type, "True", now, reason, msg));
}

/* ProcessContentTotals: the conditions for what is left (remaining:
 * "resource.group" -> count; finalizers: name -> count). */
static void content_totals(json_t *failing, json_t *remaining, json_t *finalizers,
                           const char *now) {
  if (json_object_size(remaining))
    counts_condition(failing, remaining, "%s has %lld resource instances",
                     "Some resources are remaining: ", "NamespaceContentRemaining",
                     "SomeResourcesRemain", now);
  if (json_object_size(finalizers))
    counts_condition(failing, finalizers, "%s in %lld resource instances",
                     "Some content in the namespace has finalizers remaining: ",
                     "NamespaceFinalizersRemaining", "SomeFinalizersRemain", now);
}

/* Writes the conditions onto the current namespace (UpdateStatus; a
 * conflict or a namespace gone is left for the next sync, as the real
 * controller logs it). */
static void write_conditions(kin__simctl *m, const char *name, json_t *failing,
                             const char *now) {
  json_t *ns = kin__simctl_get(m, "", "namespaces", NULL, name);
  if (ns && update_conditions(ns, failing, now))
    kin__simctl_update(m, "", "namespaces", NULL, ns, 1, NULL);
  json_decref(ns);
}

/* deleteAllContent of namespace name: returns the estimate in seconds
 * (0: nothing left), or -1 on an error. */
static int64_t delete_all_content(kin__simctl *m, const char *name) {
  char now[32];
  kin__simctl_wall_rfc3339(m, now);
  json_t *resources = kin__simctl_namespaced_resources(m);
  json_t *failing = json_object(), *remaining = json_object(), *fins = json_object();
  json_t *errors = json_array();
  int64_t estimate = 0;
  /* Pods first (OrderedNamespaceDeletion), then the rest if none is left. */
  for (int pass = 0; pass < 2; pass++) {
    size_t i;
    json_t *e;
    json_array_foreach(resources, i, e) {
      const char *g = json_string_value(json_array_get(e, 0));
      const char *v = json_string_value(json_array_get(e, 1));
      const char *r = json_string_value(json_array_get(e, 2));
      int pods = !*g && !strcmp(r, "pods");
      if (pods != (pass == 0)) continue;
      gvr_left left = {0, 0, json_object()};
      char err[512];
      if (delete_resource(m, g, v, r, name, &left, err, sizeof(err)))
        json_array_append_new(errors, json_string(err));
      if (left.estimate > estimate) estimate = left.estimate;
      if (left.remaining) {
        char gr[300];
        snprintf(gr, sizeof(gr), "%s.%s", r, g);
        json_object_set_new(remaining, gr, json_integer((json_int_t)left.remaining));
        const char *k;
        json_t *c;
        json_object_foreach(left.finalizers, k, c) {
          json_int_t had = json_integer_value(json_object_get(fins, k));
          json_object_set_new(fins, k, json_integer(had + json_integer_value(c)));
        }
      }
      json_decref(left.finalizers);
    }
    if (pass == 0 && json_object_size(remaining)) break; /* pods remain: wait */
  }
  int pods_wait = json_object_size(remaining) && json_object_get(remaining, "pods.");
  if (!pods_wait || json_object_size(remaining) > 1) content_totals(failing, remaining, fins, now);
  if (json_array_size(errors)) {
    char list[4096], msg[4300];
    join_sorted(errors, list, sizeof(list));
    snprintf(msg, sizeof(msg), "Failed to delete all resource types, %zu remaining: %s",
             json_array_size(errors), list);
    json_object_set_new(failing, "NamespaceDeletionContentFailure",
                        condition("NamespaceDeletionContentFailure", "True", now,
                                  "ContentDeletionFailed", msg));
  }
  write_conditions(m, name, failing, now);
  int failed = json_array_size(errors) > 0;
  json_decref(resources);
  json_decref(failing);
  json_decref(remaining);
  json_decref(fins);
  json_decref(errors);
  return failed ? -1 : estimate;
}

/* 1 when ns's spec.finalizers holds "kubernetes". */
static int has_kubernetes(const json_t *ns) {
  size_t i;
  json_t *f;
  json_array_foreach(json_object_get(json_object_get(ns, "spec"), "finalizers"), i, f) {
    if (json_is_string(f) && !strcmp(json_string_value(f), "kubernetes")) return 1;
  }
  return 0;
}

/* The namespace controller's Delete of namespace name. Returns when to
 * sync it again (ms from now) or KIN__SIMCTL_NEVER when done. */
static uint64_t sync_namespace(kin__simctl *m, const char *name) {
  for (int attempt = 0; attempt < 3; attempt++) {
    json_t *ns = kin__simctl_get(m, "", "namespaces", NULL, name);
    if (!ns || !json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp")) {
      json_decref(ns);
      return KIN__SIMCTL_NEVER;
    }
    const char *phase = kin__sim_jstr(ns, "status", "phase");
    if (!phase || strcmp(phase, "Terminating")) {
      json_t *st = json_object_get(ns, "status");
      if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(ns, "status", st);
      }
      json_object_set_new(st, "phase", json_string("Terminating"));
      int code = kin__simctl_update(m, "", "namespaces", NULL, ns, 1, NULL);
      json_decref(ns);
      if (code == 409) continue;
      if (code != 200) return code == 404 ? KIN__SIMCTL_NEVER : RETRY_MS;
      continue; /* read it again */
    }
    int todo = has_kubernetes(ns);
    json_decref(ns);
    if (!todo) return KIN__SIMCTL_NEVER;
    break;
  }
  int64_t estimate = delete_all_content(m, name);
  if (estimate < 0) return RETRY_MS;
  if (estimate > 0) return (uint64_t)(estimate / 2 + 1) * 1000;
  for (int attempt = 0; attempt < 3; attempt++) {
    json_t *ns = kin__simctl_get(m, "", "namespaces", NULL, name);
    if (!ns) return KIN__SIMCTL_NEVER;
    json_t *fins = json_object_get(json_object_get(ns, "spec"), "finalizers");
    for (size_t i = json_array_size(fins); i-- > 0;) {
      const char *f = json_string_value(json_array_get(fins, i));
      if (f && !strcmp(f, "kubernetes")) json_array_remove(fins, i);
    }
    int code = kin__simctl_update(m, "", "namespaces", NULL, ns, 2, NULL);
    json_decref(ns);
    if (code != 409) return code == 200 || code == 404 ? KIN__SIMCTL_NEVER : RETRY_MS;
  }
  return RETRY_MS;
}

/* Syncs the namespaces due at now_ms; returns when the next one is due
 * (KIN__SIMCTL_NEVER when none is queued). */
static uint64_t ns_run(void *self, kin__simctl *m, uint64_t now_ms) {
  ns_ctl *c = self;
  for (size_t i = 0; i < c->n;) {
    if (c->q[i].due > now_ms) {
      i++;
      continue;
    }
    char *name = c->q[i].name;
    c->q[i] = c->q[--c->n];
    uint64_t again = sync_namespace(m, name);
    if (again != KIN__SIMCTL_NEVER) enqueue(c, name, now_ms + again);
    free(name);
  }
  uint64_t next = KIN__SIMCTL_NEVER;
  for (size_t i = 0; i < c->n; i++)
    if (c->q[i].due < next) next = c->q[i].due;
  return next;
}

const kin__simctl_def kin__simctl_namespace = {
    .name = "namespace",
    .create = ns_create,
    .observe = ns_observe,
    .run = ns_run,
    .destroy = ns_destroy,
};
