/* controller_handlers.h -- controller-runtime's pkg/handler: the event
 * handlers that turn informer notifications into reconcile requests in a
 * controller's workqueue, behind its predicates (pkg/predicate, applied
 * first, as source.Kind's event handler does).
 *
 *   EnqueueRequestForObject     the object's own namespace/name (For)
 *   EnqueueRequestForOwner      the owner named by the object's
 *                               ownerReferences whose apiVersion group and
 *                               kind match the owner type (Owns); by
 *                               default only the controller reference
 *                               (OnlyControllerOwner)
 *   EnqueueRequestsFromMapFunc  whatever a map callback emits (Watches);
 *                               the Lua binding implements it by calling Lua
 *
 * For and Owns run entirely in C on the informer's listener thread; only a
 * map callback may enter Lua. An update enqueues for both the old and the
 * new object (owners and map results; For uses the new object), a delete
 * of a tombstone (DeletedFinalStateUnknown) uses its last known state, and
 * a tombstone without one is dropped with a log line, as controller-runtime
 * drops a tombstone whose object it cannot read. Requests are plain
 * workqueue adds: the queue de-duplicates them. */
#ifndef KIN_CONTROLLER_HANDLERS_H
#define KIN_CONTROLLER_HANDLERS_H

#include <stdint.h>

#include "kobj.h"
#include "predicate.h"
#include "shared_informer.h"
#include "workqueue.h"

typedef enum {
  KIN_ENQUEUE_REQUEST_FOR_OBJECT = 0,
  KIN_ENQUEUE_REQUEST_FOR_OWNER,
  KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC
} kin_enqueue_kind;

/* Called by a map function once per request; ns NULL or "" for a
 * cluster-scoped one. Returns 0 or KIN_ENOMEM. */
typedef int (*kin_request_emit_fn)(void *ctx, const char *ns, const char *name);

/* handler.MapFunc: emits the requests for obj (borrowed; never a
 * tombstone). A negative return is logged; what was emitted stays queued. */
typedef int (*kin_map_fn)(void *ud, kin_obj *obj, kin_request_emit_fn emit, void *ctx);

typedef struct {
  kin_enqueue_kind kind;

  /* KIN_ENQUEUE_REQUEST_FOR_OWNER. The owner type's API group ("" for the
   * core group) and kind; only group and kind are compared, any version
   * matches. The RESTMapper's answer is owner_cluster_scoped: requests for
   * a cluster-scoped owner carry no namespace, the others the object's. */
  const char *owner_group;
  const char *owner_kind;
  int owner_cluster_scoped;
  int all_owners; /* 0 (default): only the controller reference
                     (OnlyControllerOwner); 1: every ownerReference */

  /* KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC */
  kin_map_fn map;

  /* Forwarded as the listener's on_start / on_stop (run on the listener
   * thread: the Lua binding builds the map function's state there). Any
   * kind may set them; ud is also the map function's. */
  int (*on_start)(void *ud);
  void (*on_stop)(void *ud);
  void *ud;

  /* Applied before the handler; NULL passes everything. The handler takes
   * ownership, also when kin_enqueue_handler_new fails. */
  kin_predicate *predicate;

  /* The per-key history the handler records its events in (borrowed; it
   * must outlive the handler), or NULL. kin_controller_watch sets it to
   * the controller's. */
  struct kin_history *history;

  /* Sharding (shard_gate.h; both borrowed, outliving the handler; NULL:
   * not sharded). A request is added only when the gate admits the object
   * it is about: For the object's uid, Owns the owner reference's uid, a
   * map's request the object under its key in shard_store (the For
   * informer's cache; absent: not added). kin_controller_watch sets both
   * to the controller's. */
  struct kin_shard_gate *shard_gate;
  struct kin_indexer *shard_store;
} kin_handler_config;

typedef struct kin_enqueue_handler kin_enqueue_handler;

/* Returns a new handler in *out (the caller frees it with
 * kin_enqueue_handler_free) that adds to q (borrowed: it must outlive every
 * delivery). Copies the strings of cfg. KIN_EINVAL when the config is
 * incomplete (owner kind, map function), KIN_ENOMEM. */
int kin_enqueue_handler_new(kin_workqueue *q, const kin_handler_config *cfg,
                            kin_enqueue_handler **out);

/* Frees h and its predicate. Nothing may deliver to it any more (remove
 * its listener first). NULL is a no-op. */
void kin_enqueue_handler_free(kin_enqueue_handler *h);

/* The kin_event_handler to register with an informer (ud is h). */
kin_event_handler kin_enqueue_handler_callbacks(kin_enqueue_handler *h);

/* Counters of one handler (relaxed atomics, any thread). */
typedef struct {
  uint64_t events;   /* notifications received */
  uint64_t filtered; /* of which a predicate dropped */
  uint64_t requests; /* requests added to the queue (before its dedup) */
} kin_enqueue_handler_stats;
void kin_enqueue_handler_get_stats(kin_enqueue_handler *h, kin_enqueue_handler_stats *st);

/* The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> ""), as
 * schema.ParseGroupVersion: writes it (NUL-terminated) to group and returns
 * 0, or KIN_EINVAL when apiVersion has more than one '/' or the group does
 * not fit cap. */
int kin_api_version_group(const char *api_version, char *group, size_t cap);

#endif
