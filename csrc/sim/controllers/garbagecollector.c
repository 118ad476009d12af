/* garbagecollector.c -- kube-controller-manager's "garbagecollector"
 * (pkg/controller/garbagecollector/garbagecollector.go): the workers of
 * attemptToDelete and attemptToOrphan over the graph gc_graph.c builds.
 *
 * attemptToDelete of a dependent reads it and looks up each owner it
 * names (by kind, name and uid, as the real GC's isDangling): with a live
 * owner it keeps the object and patches out the dangling references and
 * those to owners deleting in foreground; with none it deletes it (uid
 * precondition), in foreground when an owner waits in foreground and the
 * dependent has dependents itself, else as its own finalizers say
 * (background by default). A reference to a kind the sim does not serve
 * stops the decision (the real GC's REST mapping error, retried): such a
 * dependent is tried again when a CRD changes. attemptToDelete of an
 * owner deleting in foreground removes its foregroundDeletion finalizer
 * once no dependent with blockOwnerDeletion is left. attemptToOrphan
 * removes the owner's references from its dependents, then its orphan
 * finalizer. */
#include <stdlib.h>
#include <string.h>

#include "gc_int.h"
#include "kin.h"

enum { MAX_TRIES = 5, RETRY_MS = 1000 };

/* Returns a new empty graph and queue, or NULL on ENOMEM. */
static void *gc_create(kin__simctl *m) {
  (void)m;
  kin__simgc *g = calloc(1, sizeof(*g));
  if (!g) return NULL;
  kin__hmap_init_borrowed(&g->nodes);
  kin__hmap_init(&g->deps);
  kin__hmap_init(&g->unresolved);
  kin__hmap_init(&g->queued);
  return g;
}

/* Frees the graph, the queue and the state. */
static void gc_destroy(void *self) {
  kin__simgc_graph_free(self);
  free(self);
}

/* The object at st/key whose uid is uid, parsed (caller decrefs), or NULL
 * when absent or another object now has that name. */
static json_t *get_latest(kin__simctl *m, const kin__sim_storage *st, const char *key,
                          const char *uid) {
  char ns[256];
  const char *name = kin__simgc_split_key(st, key, ns, sizeof(ns));
  json_t *o = kin__simctl_get(m, st->group, st->resource, ns, name);
  const char *u = kin__sim_jstr(o, "metadata", "uid");
  if (o && u && !strcmp(u, uid)) return o;
  json_decref(o);
  return NULL;
}

/* Writes obj (its resourceVersion current) back to st/key. Returns the
 * HTTP code. */
static int put(kin__simctl *m, const kin__sim_storage *st, const char *key, json_t *obj) {
  char ns[256];
  kin__simgc_split_key(st, key, ns, sizeof(ns));
  return kin__simctl_update(m, st->group, st->resource, ns, obj, 0, NULL);
}

/* Removes finalizer f from uid at st/key (removeFinalizer). Returns 0,
 * 1 to retry (a conflict), or 0 when the object is gone. */
static int remove_finalizer(kin__simctl *m, const kin__sim_storage *st, const char *key,
                            const char *uid, const char *f) {
  json_t *o = get_latest(m, st, key, uid);
  if (!o) return 0;
  json_t *fins = json_object_get(json_object_get(o, "metadata"), "finalizers");
  size_t i;
  json_t *e;
  int found = 0;
  json_array_foreach(fins, i, e) {
    if (json_is_string(e) && !strcmp(json_string_value(e), f)) {
      json_array_remove(fins, i);
      found = 1;
      break;
    }
  }
  int code = found ? put(m, st, key, o) : 200;
  json_decref(o);
  return code == 409;
}

/* Removes from obj's ownerReferences those whose uid is in uids (n).
 * Returns 1 when one was removed. */
static int drop_refs(json_t *obj, const char *const *uids, size_t n) {
  json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
  int dropped = 0;
  for (size_t i = json_array_size(refs); i-- > 0;) {
    const char *u = kin__sim_jstr(json_array_get(refs, i), "uid", NULL);
    for (size_t j = 0; u && j < n; j++) {
      if (strcmp(u, uids[j])) continue;
      json_array_remove(refs, i);
      dropped = 1;
      break;
    }
  }
  if (dropped && !json_array_size(refs))
    json_object_del(json_object_get(obj, "metadata"), "ownerReferences");
  return dropped;
}

/* processDeletingDependentsItem: the owner n waits in foreground. */
static int process_deleting_dependents(kin__simgc *g, kin__simctl *m, kin__simgc_node *n,
                                       uint64_t now) {
  kin__simgc_deps *d = kin__simgc_deps_of(g, n->uid);
  int blocking = 0;
  for (size_t i = 0; d && i < d->n; i++) {
    kin__simgc_node *dep = d->nodes[i];
    for (size_t j = 0; j < dep->nowners; j++) {
      if (strcmp(dep->owners[j].uid, n->uid) || !dep->owners[j].block) continue;
      blocking = 1;
      if (!dep->deleting_deps)
        kin__simgc_enqueue(g, KIN__SIMGC_ATTEMPT, dep->uid, dep->st, dep->key, now);
    }
  }
  if (blocking) return 0;
  return remove_finalizer(m, n->st, n->key, n->uid, "foregroundDeletion");
}

enum { SOLID, DANGLING, WAITING, UNKNOWN_KIND, INVALID };

/* isDangling and classifyReferences for one reference of a dependent of
 * st in namespace ns. */
static int classify(kin__simctl *m, const kin__sim_storage *st, const char *ns,
                    const json_t *ref) {
  const char *group, *resource;
  int namespaced;
  if (kin__simctl_resource_of_kind(m, kin__sim_jstr(ref, "apiVersion", NULL),
                                   kin__sim_jstr(ref, "kind", NULL), &group, &resource,
                                   &namespaced))
    return UNKNOWN_KIND;
  /* A cluster-scoped object cannot have a namespaced owner. */
  if (!st->namespaced && namespaced) return INVALID;
  const char *name = kin__sim_jstr(ref, "name", NULL);
  json_t *owner = name ? kin__simctl_get(m, group, resource, namespaced ? ns : NULL, name) : NULL;
  const char *uid = kin__sim_jstr(owner, "metadata", "uid");
  const char *want = kin__sim_jstr(ref, "uid", NULL);
  int c = SOLID;
  if (!owner || !uid || !want || strcmp(uid, want)) {
    c = DANGLING;
  } else {
    const json_t *md = json_object_get(owner, "metadata");
    size_t i;
    json_t *f;
    if (json_object_get(md, "deletionTimestamp"))
      json_array_foreach(json_object_get(md, "finalizers"), i, f) {
        if (json_is_string(f) && !strcmp(json_string_value(f), "foregroundDeletion")) c = WAITING;
      }
  }
  json_decref(owner);
  return c;
}

/* 1 when the finalizers of md include f. */
static int has_finalizer(const json_t *md, const char *f) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(md, "finalizers"), i, e) {
    if (json_is_string(e) && !strcmp(json_string_value(e), f)) return 1;
  }
  return 0;
}

/* attemptToDeleteItem of the item it. Returns 1 to retry (a conflict). */
static int attempt(kin__simgc *g, kin__simctl *m, const kin__simgc_item *it, uint64_t now) {
  kin__simgc_node *n = kin__simgc_node_of(g, it->uid);
  if (n && n->being_deleted && !n->deleting_deps) return 0;
  if (n && n->deleting_deps) return process_deleting_dependents(g, m, n, now);
  json_t *o = get_latest(m, it->st, it->key, it->uid);
  if (!o) return 0;
  json_t *md = json_object_get(o, "metadata");
  json_t *refs = json_object_get(md, "ownerReferences");
  char ns[256];
  kin__simgc_split_key(it->st, it->key, ns, sizeof(ns));
  size_t nrefs = json_array_size(refs), nsolid = 0, ndrop = 0, nwait = 0;
  const char **drop = nrefs ? calloc(nrefs, sizeof(*drop)) : NULL;
  int retry = 0;
  size_t i;
  json_t *ref;
  json_array_foreach(refs, i, ref) {
    int c = classify(m, it->st, ns, ref);
    if (c == UNKNOWN_KIND) {
      kin__hmap_put(&g->unresolved, it->uid, NULL, NULL);
      goto done;
    }
    if (c == INVALID) goto done;
    if (c == SOLID) nsolid++;
    if (c == WAITING) nwait++;
    if ((c == DANGLING || c == WAITING) && drop) drop[ndrop++] = kin__sim_jstr(ref, "uid", NULL);
  }
  kin__hmap_del(&g->unresolved, it->uid, NULL);
  if (!nrefs) goto done;
  const char *policy;
  if (nsolid) {
    /* A live owner keeps it: only the dangling references and those to
     * owners waiting in foreground go. */
    if (ndrop) {
      json_t *copy = json_deep_copy(o);
      drop_refs(copy, drop, ndrop);
      retry = put(m, it->st, it->key, copy) == 409;
      json_decref(copy);
    }
    goto done;
  } else if (nwait && kin__simgc_deps_of(g, it->uid)) {
    /* Foreground through a chain; a dependent of its own deleting in
     * foreground would wait for it in a cycle: its blocks go first. */
    kin__simgc_deps *d = kin__simgc_deps_of(g, it->uid);
    int cycle = 0;
    for (size_t j = 0; j < d->n && !cycle; j++) cycle = d->nodes[j]->deleting_deps;
    if (cycle) {
      json_t *copy = json_deep_copy(o);
      json_array_foreach(json_object_get(json_object_get(copy, "metadata"), "ownerReferences"), i,
                         ref) {
        if (json_is_true(json_object_get(ref, "blockOwnerDeletion")))
          json_object_set_new(ref, "blockOwnerDeletion", json_false());
      }
      int code = put(m, it->st, it->key, copy);
      json_decref(copy);
      if (code != 200) {
        retry = code == 409;
        goto done;
      }
    }
    policy = "Foreground";
  } else if (has_finalizer(md, "orphan")) {
    policy = "Orphan";
  } else if (has_finalizer(md, "foregroundDeletion")) {
    policy = "Foreground";
  } else {
    policy = "Background";
  }
  {
    const char *name = kin__simgc_split_key(it->st, it->key, ns, sizeof(ns));
    kin__simctl_delete(m, it->st->group, it->st->resource, ns, name, it->uid, policy);
  }
done:
  free(drop);
  json_decref(o);
  return retry;
}

/* attemptToOrphan of the owner of it: its references leave every
 * dependent, then its orphan finalizer goes. Returns 1 to retry. */
static int orphan(kin__simgc *g, kin__simctl *m, const kin__simgc_item *it) {
  kin__simgc_deps *d = kin__simgc_deps_of(g, it->uid);
  int retry = 0;
  const char *uids[1] = {it->uid};
  for (size_t i = 0; d && i < d->n; i++) {
    kin__simgc_node *dep = d->nodes[i];
    json_t *o = get_latest(m, dep->st, dep->key, dep->uid);
    if (o && drop_refs(o, uids, 1) && put(m, dep->st, dep->key, o) == 409) retry = 1;
    json_decref(o);
  }
  if (retry) return 1;
  return remove_finalizer(m, it->st, it->key, it->uid, "orphan");
}

/* Queues it again at due with tries. */
static void requeue(kin__simgc *g, const kin__simgc_item *it, uint64_t due, int tries) {
  kin__simgc_item *q = kin__simgc_enqueue(g, it->op, it->uid, it->st, it->key, due);
  if (q) q->tries = tries;
}

/* Works through the items due at now_ms; returns when the next one is
 * due (KIN__SIMCTL_NEVER when none is queued). */
static uint64_t gc_run(void *self, kin__simctl *m, uint64_t now_ms) {
  kin__simgc *g = self;
  /* The queue as it is now; what this pass queues waits for the next run
   * (after the writes here have been observed). */
  kin__simgc_item *work = g->q;
  size_t nwork = g->nq;
  g->q = NULL;
  g->nq = g->capq = 0;
  kin__simgc_queue_reset(g);
  for (size_t i = 0; i < nwork; i++) {
    kin__simgc_item *it = &work[i];
    if (it->due > now_ms) {
      requeue(g, it, it->due, it->tries);
    } else {
      int retry = it->op == KIN__SIMGC_ORPHAN ? orphan(g, m, it) : attempt(g, m, it, now_ms);
      if (retry && it->tries < MAX_TRIES)
        requeue(g, it, now_ms + (it->tries ? RETRY_MS : 0), it->tries + 1);
    }
    free(it->uid);
    free(it->key);
  }
  free(work);
  uint64_t next = KIN__SIMCTL_NEVER;
  for (size_t i = 0; i < g->nq; i++)
    if (g->q[i].due < next) next = g->q[i].due;
  return next;
}

const kin__simctl_def kin__simctl_garbagecollector = {
    .name = "garbagecollector",
    .create = gc_create,
    .observe = kin__simgc_observe,
    .run = gc_run,
    .destroy = gc_destroy,
};
