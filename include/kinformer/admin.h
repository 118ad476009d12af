/* admin.h -- what `kinformer inspect` asks a running operator: a process-
 * wide registry of the informers and controllers to show, and its JSON
 * answers, served by the manager's admin endpoint (metrics_server.h,
 * admin_bind) from C state only (no Lua runs on the HTTP threads):
 *
 *   GET /caches     {"caches":[{"name":,"objects":,"synced":bool}]}
 *   GET /queues     {"queues":[{"controller":,"depth":,"items":[{"key":,
 *                   "state":"ready"|"processing"|"waiting","due_in":s,
 *                   "processing_for":s,"requeues":n}]}]} (at most 500
 *                   items per queue; "truncated":true when cut)
 *   GET /inflight   {"inflight":[{"controller":,"key":,"worker": (1-based),
 *                   "seconds":}]}
 *   GET /advise     {"advise":[{"informer":,"api_version":,"kind":,
 *                   "objects":,"bytes_per_object":,
 *                   "advised_bytes_per_object":,"fields":[paths...]|null}]}
 *                   the projection that keeps what code read (read_paths.h)
 *   GET /why?key=K[&controller=NAME]
 *                   {"key":,"why":[{"controller":,"lines":[text...],
 *                   "entries":[{"type":"event"|"reconcile"|"write",...}]}]}
 *                   one item per controller with history for K
 *   GET /           {"endpoints":[...]}
 *
 * Registration: whoever owns an informer or a controller adds it and
 * removes it (by the returned id) before freeing it; the registry's lock
 * is held while an answer reads them, so a removal waits for that answer.
 * Lock order: the registry's lock, then a controller's, queue's or
 * history's own. All functions are thread-safe. */
#ifndef KIN_ADMIN_H
#define KIN_ADMIN_H

#include <stddef.h>

#include "controller.h"
#include "shared_informer.h"

/* Registers inf under name (copied) / controller c (borrowed). Returns an
 * id > 0 for kin_admin_remove, or KIN_ENOMEM. */
int kin_admin_add_informer(const char *name, kin_informer *inf);
int kin_admin_add_controller(kin_controller *c);

/* Unregisters id (<= 0 or unknown: nothing). */
void kin_admin_remove(int id);

/* Publishes the JSON document served at /shards (kinformer.sharding's
 * state, refreshed by its main-state loop; NULL: none). Copied. Returns 0
 * or KIN_ENOMEM. Any thread. */
int kin_admin_set_shards(const char *json);

/* Renders the answer for path (with query string) into a new buffer *body
 * (malloc'd, the caller frees it; JSON) of *len bytes, and returns the
 * HTTP status: 200, 400 (why without key), 404 (unknown path), or 500 when
 * out of memory (then *body is NULL). */
int kin_admin_render(const char *path, const char *key, const char *controller, char **body,
                     size_t *len);

#endif
