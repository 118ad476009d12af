/* gc_int.h -- the garbage collector's state, shared by its two files:
 * gc_graph.c (the graph builder: observe) and garbagecollector.c (the
 * workers: run). Both run on the controller manager's thread only, so
 * nothing here needs a lock. */
#ifndef KIN_SIM_GC_INT_H
#define KIN_SIM_GC_INT_H

#include <stdint.h>

#include "ctl.h"
#include "hmap.h"

/* One metadata.ownerReferences entry: its uid, and a hash of its
 * apiVersion, kind and name (a change of them is verified again). */
typedef struct {
  char *uid;
  uint64_t coords;
  int block; /* blockOwnerDeletion */
} kin__simgc_ref;

/* An observed object that has owners or is being deleted with a GC
 * finalizer (pkg/controller/garbagecollector/graph.go's node, without
 * the virtual ones: an owner not observed is verified by a lookup). */
struct kin__simgc_node {
  const kin__sim_storage *st; /* never freed before the store */
  char *key;                  /* "ns/name" or "name" */
  char *uid;
  kin__simgc_ref *owners;
  size_t nowners;
  int being_deleted;
  int deleting_deps; /* deletionTimestamp and the foregroundDeletion finalizer */
  int orphaning;     /* deletionTimestamp and the orphan finalizer */
};

/* The dependents of an owner (the nodes whose ownerReferences name it). */
typedef struct kin__simgc_node kin__simgc_node;
typedef struct {
  kin__simgc_node **nodes;
  size_t n, cap;
} kin__simgc_deps;

enum { KIN__SIMGC_ATTEMPT = 1, KIN__SIMGC_ORPHAN };

/* A queued piece of work: attemptToDelete or attemptToOrphan of uid,
 * stored at st/key. */
typedef struct {
  int op;
  char *uid;
  const kin__sim_storage *st;
  char *key;
  uint64_t due;
  int tries;
} kin__simgc_item;

typedef struct {
  kin__hmap nodes;      /* uid -> kin__simgc_node* (borrowed keys: the node's uid) */
  kin__hmap deps;       /* owner uid -> kin__simgc_deps* */
  kin__hmap unresolved; /* uid -> NULL: dependents with a reference to a kind not served */
  kin__simgc_item *q;
  size_t nq, capq;
  kin__hmap queued;     /* "<op>:<uid>" -> index in q + 1 (the queue's dedupe) */
} kin__simgc;

/* Queues op for uid at st/key unless the same op for uid is queued (then
 * its due time becomes the earlier of the two). Returns the queued item
 * (valid until the next enqueue), or NULL on ENOMEM: the work is dropped. */
kin__simgc_item *kin__simgc_enqueue(kin__simgc *g, int op, const char *uid,
                                    const kin__sim_storage *st, const char *key, uint64_t due);

/* Empties the queue's dedupe (the queue was taken whole). */
void kin__simgc_queue_reset(kin__simgc *g);

/* Queues ATTEMPT for every dependent of owner uid that is a node. */
void kin__simgc_enqueue_dependents(kin__simgc *g, const char *uid, uint64_t due);

/* The dependents of owner uid, or NULL when none is known. */
kin__simgc_deps *kin__simgc_deps_of(kin__simgc *g, const char *uid);

/* The node of uid or NULL. */
kin__simgc_node *kin__simgc_node_of(kin__simgc *g, const char *uid);

/* The graph builder: kin__simctl_def.observe of the garbage collector. */
void kin__simgc_observe(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                        const kin__sim_obj *obj, const kin__sim_obj *prev);

/* Frees the graph and the queue (not g itself). */
void kin__simgc_graph_free(kin__simgc *g);

/* Splits key of an object of st into its namespace (copied to ns, cap
 * bytes; "" for cluster-scoped) and returns its name (inside key). */
const char *kin__simgc_split_key(const kin__sim_storage *st, const char *key, char *ns,
                                 size_t cap);

#endif
