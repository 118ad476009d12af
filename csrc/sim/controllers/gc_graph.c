/* gc_graph.c -- the garbage collector's graph builder
 * (pkg/controller/garbagecollector/graph_builder.go): from every
 * committed change, the owners of each object by uid and the dependents
 * of each owner, and the work the changes call for: an owner gone or
 * starting foreground deletion (its dependents), a dependent gone or
 * unblocking (its owner waiting in foreground), an owner starting orphan
 * deletion, a new owner reference (verified: a dangling one gets the
 * dependent collected). The commit hook feeds every write, so an object
 * whose bytes mention neither ownerReferences nor deletionTimestamp (now
 * and before) is passed over without parsing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc_int.h"
#include "kin.h"

const char *kin__simgc_split_key(const kin__sim_storage *st, const char *key, char *ns,
                                 size_t cap) {
  ns[0] = 0;
  if (!st->namespaced) return key;
  const char *slash = strchr(key, '/');
  if (!slash) return key;
  size_t n = (size_t)(slash - key);
  if (n >= cap) n = cap - 1;
  memcpy(ns, key, n);
  ns[n] = 0;
  return slash + 1;
}

kin__simgc_node *kin__simgc_node_of(kin__simgc *g, const char *uid) {
  void **v = uid ? kin__hmap_get(&g->nodes, uid) : NULL;
  return v ? *v : NULL;
}

kin__simgc_deps *kin__simgc_deps_of(kin__simgc *g, const char *uid) {
  void **v = uid ? kin__hmap_get(&g->deps, uid) : NULL;
  return v ? *v : NULL;
}

kin__simgc_item *kin__simgc_enqueue(kin__simgc *g, int op, const char *uid,
                                    const kin__sim_storage *st, const char *key, uint64_t due) {
  char qk[128];
  snprintf(qk, sizeof(qk), "%d:%s", op, uid);
  void **v = kin__hmap_get(&g->queued, qk);
  if (v) {
    kin__simgc_item *it = &g->q[(uintptr_t)*v - 1];
    if (due < it->due) it->due = due;
    return it;
  }
  if (g->nq == g->capq) {
    size_t nc = g->capq ? g->capq * 2 : 32;
    kin__simgc_item *p = realloc(g->q, nc * sizeof(*p));
    if (!p) return NULL;
    g->q = p;
    g->capq = nc;
  }
  kin__simgc_item *it = &g->q[g->nq];
  it->op = op;
  it->uid = strdup(uid);
  it->key = strdup(key);
  it->st = st;
  it->due = due;
  it->tries = 0;
  if (!it->uid || !it->key ||
      kin__hmap_put(&g->queued, qk, (void *)(uintptr_t)(g->nq + 1), NULL) < 0) {
    free(it->uid);
    free(it->key);
    return NULL;
  }
  g->nq++;
  return it;
}

void kin__simgc_queue_reset(kin__simgc *g) {
  kin__hmap_free(&g->queued);
  kin__hmap_init(&g->queued);
}

void kin__simgc_enqueue_dependents(kin__simgc *g, const char *uid, uint64_t due) {
  kin__simgc_deps *d = kin__simgc_deps_of(g, uid);
  for (size_t i = 0; d && i < d->n; i++) {
    kin__simgc_node *n = d->nodes[i];
    kin__simgc_enqueue(g, KIN__SIMGC_ATTEMPT, n->uid, n->st, n->key, due);
  }
}

/* Adds dep to the dependents of owner (once); on ENOMEM it is left out
 * (its owner's deletion then goes unseen by it). */
static void deps_add(kin__simgc *g, const char *owner, kin__simgc_node *dep) {
  kin__simgc_deps *d = kin__simgc_deps_of(g, owner);
  if (!d) {
    d = calloc(1, sizeof(*d));
    if (!d) return;
    if (kin__hmap_put(&g->deps, owner, d, NULL) < 0) {
      free(d);
      return;
    }
  }
  for (size_t i = 0; i < d->n; i++)
    if (d->nodes[i] == dep) return;
  if (d->n == d->cap) {
    size_t nc = d->cap ? d->cap * 2 : 4;
    kin__simgc_node **p = realloc(d->nodes, nc * sizeof(*p));
    if (!p) return;
    d->nodes = p;
    d->cap = nc;
  }
  d->nodes[d->n++] = dep;
}

/* Frees a dependents list (not the nodes). */
static void deps_free(kin__simgc_deps *d) {
  free(d->nodes);
  free(d);
}

/* Removes dep from the dependents of owner; the list goes when empty. */
static void deps_remove(kin__simgc *g, const char *owner, const kin__simgc_node *dep) {
  kin__simgc_deps *d = kin__simgc_deps_of(g, owner);
  if (!d) return;
  for (size_t i = 0; i < d->n; i++) {
    if (d->nodes[i] != dep) continue;
    d->nodes[i] = d->nodes[--d->n];
    break;
  }
  if (!d->n) {
    kin__hmap_del(&g->deps, owner, NULL);
    deps_free(d);
  }
}

/* Frees n references and their array (NULL: nothing). */
static void refs_free(kin__simgc_ref *r, size_t n) {
  for (size_t i = 0; i < n; i++) free(r[i].uid);
  free(r);
}

/* Frees a node and what it owns (NULL: nothing); it must be out of the
 * maps. */
static void node_free(kin__simgc_node *n) {
  if (!n) return;
  refs_free(n->owners, n->nowners);
  free(n->key);
  free(n->uid);
  free(n);
}

/* The hash of a reference's apiVersion, kind and name. */
static uint64_t coords_of(const json_t *ref) {
  char buf[1024];
  const char *av = kin__sim_jstr(ref, "apiVersion", NULL), *k = kin__sim_jstr(ref, "kind", NULL);
  const char *nm = kin__sim_jstr(ref, "name", NULL);
  int n = snprintf(buf, sizeof(buf), "%s\x01%s\x01%s", av ? av : "", k ? k : "", nm ? nm : "");
  return kin__hash(buf, n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Returns the references of arr (metadata.ownerReferences) that carry a
 * uid, copied; *n their count. NULL with *n = 0 when none (or ENOMEM). */
static kin__simgc_ref *refs_of(const json_t *arr, size_t *n) {
  *n = 0;
  size_t cap = json_array_size(arr);
  if (!cap) return NULL;
  kin__simgc_ref *out = calloc(cap, sizeof(*out));
  if (!out) return NULL;
  size_t i;
  json_t *e;
  json_array_foreach(arr, i, e) {
    const char *uid = kin__sim_jstr(e, "uid", NULL);
    if (!uid) continue;
    char *dup = strdup(uid);
    if (!dup) continue;
    kin__simgc_ref *r = &out[(*n)++];
    r->uid = dup;
    r->coords = coords_of(e);
    r->block = json_is_true(json_object_get(e, "blockOwnerDeletion"));
  }
  return out;
}

static const kin__simgc_ref *find_ref(const kin__simgc_ref *r, size_t n, const char *uid) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(r[i].uid, uid)) return &r[i];
  return NULL;
}

/* 1 when the finalizers array has f. */
static int has_finalizer(const json_t *md, const char *f) {
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(md, "finalizers"), i, e) {
    if (json_is_string(e) && !strcmp(json_string_value(e), f)) return 1;
  }
  return 0;
}

/* Queues the owner of uid when it waits for its dependents in
 * foreground (addUnblockedOwnersToDeleteQueue, and a dependent gone). */
static void wake_owner(kin__simgc *g, const char *owner, uint64_t due) {
  kin__simgc_node *o = kin__simgc_node_of(g, owner);
  if (o && o->deleting_deps)
    kin__simgc_enqueue(g, KIN__SIMGC_ATTEMPT, o->uid, o->st, o->key, due);
}

/* Takes n out of the graph (its owners' lists, the node map) and frees it. */
static void remove_node(kin__simgc *g, kin__simgc_node *n) {
  for (size_t i = 0; i < n->nowners; i++) deps_remove(g, n->owners[i].uid, n);
  kin__hmap_del(&g->nodes, n->uid, NULL);
  node_free(n);
}

/* A DELETED object (metadata md): its dependents are attempted, the
 * owners waiting for it in foreground are woken, its node goes. */
static void observe_deleted(kin__simgc *g, const json_t *md, uint64_t now) {
  const char *uid = kin__sim_jstr(md, "uid", NULL);
  if (!uid) return;
  kin__simgc_enqueue_dependents(g, uid, now);
  kin__simgc_node *n = kin__simgc_node_of(g, uid);
  if (!n) return;
  for (size_t i = 0; i < n->nowners; i++) wake_owner(g, n->owners[i].uid, now);
  remove_node(g, n);
}

/* An added or modified object (metadata md) of st at key. */
static void observe_changed(kin__simgc *g, const kin__sim_storage *st, const char *key,
                            const json_t *md, uint64_t now) {
  const char *uid = kin__sim_jstr(md, "uid", NULL);
  if (!uid) return;
  size_t nrefs;
  kin__simgc_ref *refs = refs_of(json_object_get(md, "ownerReferences"), &nrefs);
  int deleting = json_object_get(md, "deletionTimestamp") != NULL;
  int fg = deleting && has_finalizer(md, "foregroundDeletion");
  int orphan = deleting && has_finalizer(md, "orphan");
  kin__simgc_node *n = kin__simgc_node_of(g, uid);
  if (!n && !nrefs && !fg && !orphan) return;
  if (!n) {
    n = calloc(1, sizeof(*n));
    if (!n || !(n->uid = strdup(uid)) || !(n->key = strdup(key)) ||
        kin__hmap_put(&g->nodes, n->uid, n, NULL) < 0) {
      node_free(n);
      refs_free(refs, nrefs);
      return;
    }
    n->st = st;
  }
  int verify = 0;
  for (size_t i = 0; i < n->nowners; i++) {
    const kin__simgc_ref *old = &n->owners[i];
    const kin__simgc_ref *nw = find_ref(refs, nrefs, old->uid);
    if (!nw) deps_remove(g, old->uid, n);
    if (old->block && (!nw || !nw->block)) wake_owner(g, old->uid, now);
  }
  for (size_t i = 0; i < nrefs; i++) {
    const kin__simgc_ref *old = find_ref(n->owners, n->nowners, refs[i].uid);
    if (!old) {
      deps_add(g, refs[i].uid, n);
      verify = 1;
    } else if (old->coords != refs[i].coords) {
      verify = 1;
    }
  }
  refs_free(n->owners, n->nowners);
  n->owners = refs;
  n->nowners = nrefs;
  n->being_deleted = deleting;
  /* A new reference: its owner is verified (the real graph's virtual
   * node, looked up by name and uid). */
  if (verify) kin__simgc_enqueue(g, KIN__SIMGC_ATTEMPT, uid, st, key, now);
  if (orphan && !n->orphaning) kin__simgc_enqueue(g, KIN__SIMGC_ORPHAN, uid, st, key, now);
  n->orphaning = orphan;
  if (fg && !n->deleting_deps) {
    n->deleting_deps = 1;
    kin__simgc_enqueue_dependents(g, uid, now);
    kin__simgc_enqueue(g, KIN__SIMGC_ATTEMPT, uid, st, key, now);
  }
  n->deleting_deps = fg;
  if (!n->nowners && !fg && !orphan) remove_node(g, n);
}

/* 1 when the stored bytes of o may hold metadata the graph needs. */
static int mentions(const kin__sim_obj *o) {
  return o && (strstr(o->raw, "\"ownerReferences\"") || strstr(o->raw, "\"deletionTimestamp\""));
}

void kin__simgc_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                        const kin__sim_obj *obj, const kin__sim_obj *prev) {
  kin__simgc *g = self;
  /* The GC's ignored resources (DefaultIgnoredResources): events. */
  if (!st->crd && !strcmp(st->resource, "events") &&
      (!*st->group || !strcmp(st->group, "events.k8s.io")))
    return;
  uint64_t now = kin__simctl_now_ms(m);
  if (!st->crd && !strcmp(st->resource, "customresourcedefinitions") &&
      type != KIN__SIM_DELETED) {
    /* A new kind may resolve references the REST mapper did not know. */
    size_t pos = 0;
    kin__hmap_entry *e;
    while ((e = kin__hmap_next(&g->unresolved, &pos))) {
      kin__simgc_node *n = kin__simgc_node_of(g, e->key);
      if (n) kin__simgc_enqueue(g, KIN__SIMGC_ATTEMPT, n->uid, n->st, n->key, now);
    }
  }
  if (type == KIN__SIM_DELETED) {
    if (!g->nodes.len && !g->deps.len) return;
  } else if (!mentions(obj) && !mentions(prev)) {
    return;
  }
  json_t *md = kin__sim_obj_member(obj, "metadata");
  if (!md) return;
  if (type == KIN__SIM_DELETED)
    observe_deleted(g, md, now);
  else
    observe_changed(g, st, obj->key, md, now);
  json_decref(md);
}

void kin__simgc_graph_free(kin__simgc *g) {
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&g->nodes, &pos))) node_free(e->val);
  pos = 0;
  while ((e = kin__hmap_next(&g->deps, &pos))) deps_free(e->val);
  kin__hmap_free(&g->nodes);
  kin__hmap_free(&g->deps);
  kin__hmap_free(&g->unresolved);
  kin__hmap_free(&g->queued);
  for (size_t i = 0; i < g->nq; i++) {
    free(g->q[i].uid);
    free(g->q[i].key);
  }
  free(g->q);
}
