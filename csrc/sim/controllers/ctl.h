/* ctl.h -- what a controller of the sim implements and what it may call.
 *
 * A controller is a kin__simctl_def: the manager's thread calls observe
 * for each committed change (in commit order, none lost), then run, which
 * does the work due and says when it wants to run again. A controller's
 * own state needs no lock: observe and run never run at the same time
 * (observe is called for the objects present at start before the thread
 * starts, with the store lock held; later on the thread, without it).
 * observe only records what changed: it must not call the store calls
 * below; run does the work.
 * It reads and writes the store only through the calls below, which take
 * the store lock themselves, as a client of the API would, so its writes
 * are validated, versioned and watched like any other; it sees them back
 * through observe. Objects handed to observe are immutable stored bytes
 * (kin__sim_obj_json parses one); they stay valid during the call only. */
#ifndef KIN_SIM_CTL_H
#define KIN_SIM_CTL_H

#include <jansson.h>
#include <stdint.h>

#include "controllers.h"
#include "store_int.h"

#define KIN__SIMCTL_NEVER UINT64_MAX

struct kin__simctl_def {
  const char *name; /* kube-controller-manager's name, e.g. "garbagecollector" */
  /* Returns the controller's state (any non-NULL pointer), or NULL on
   * ENOMEM. Runs on the manager's thread before any observe. */
  void *(*create)(kin__simctl *m);
  /* One committed change: type KIN__SIM_ADDED, _MODIFIED or _DELETED of
   * an object of st (obj its new state, or its last for DELETED; prev the
   * state before, NULL for ADDED). */
  void (*observe)(void *self, kin__simctl *m, int type, const kin__sim_storage *st,
                  const kin__sim_obj *obj, const kin__sim_obj *prev);
  /* Does the work due at now_ms (the sim's clock). Returns when it wants
   * to run next (ms on that clock): KIN__SIMCTL_NEVER for "after the next
   * change", now_ms or earlier for "at once". */
  uint64_t (*run)(void *self, kin__simctl *m, uint64_t now_ms);
  void (*destroy)(void *self);
  int off_by_default; /* only runs when named (kube-controller-manager's
                         disabled-by-default controllers) */
};

/* ---- the store, as a client (ctl_client.c); call without locks ---- */

/* The server (its store is sim->store). */
kin_sim *kin__simctl_sim(kin__simctl *m);

/* Returns a parsed copy of group/resource ns/name (ns NULL or "" for
 * cluster-scoped) that the caller decrefs, or NULL when absent. */
json_t *kin__simctl_get(kin__simctl *m, const char *group, const char *resource, const char *ns,
                        const char *name);

/* Returns a new array of parsed copies of the objects of group/resource in
 * ns (NULL: all) for which match (NULL: every one) returns 1, in key
 * order; the caller decrefs it. NULL on ENOMEM or unknown resource. */
json_t *kin__simctl_list(kin__simctl *m, const char *group, const char *resource, const char *ns,
                         int (*match)(void *ud, const json_t *obj), void *ud);

/* Creates obj (borrowed) in group/resource (its served storage version)
 * in ns. Returns the HTTP code (201 on success); *out (when non-NULL) gets
 * the stored object or the Status, which the caller decrefs. */
int kin__simctl_create(kin__simctl *m, const char *group, const char *resource, const char *ns,
                       const json_t *obj, json_t **out);

/* Replaces the object with obj (borrowed), whose metadata.resourceVersion
 * must be current (409 otherwise, as an update's); status_only writes the
 * status subresource. Returns the HTTP code (200 on success); *out as for
 * create. */
int kin__simctl_update(kin__simctl *m, const char *group, const char *resource, const char *ns,
                       const json_t *obj, int status_only, json_t **out);

/* Deletes ns/name; uid (NULL: any) is a precondition; propagation
 * ("Background", "Foreground", "Orphan" or NULL for the resource's
 * default) as DeleteOptions.propagationPolicy. Returns the HTTP code
 * (200/202 on success, 404 when absent, 409 on a uid mismatch). */
int kin__simctl_delete(kin__simctl *m, const char *group, const char *resource, const char *ns,
                       const char *name, const char *uid, const char *propagation);

/* Deletes every object of group/resource in ns (NULL: all) with
 * DeleteOptions.propagationPolicy propagation (NULL: the default), as a
 * deletecollection. Returns the HTTP code (200 on success). */
int kin__simctl_delete_collection(kin__simctl *m, const char *group, const char *resource,
                                  const char *ns, const char *propagation);

/* Returns a new array of [group, version, resource], one per namespaced
 * resource served with the delete verb (discovery's deletable namespaced
 * resources; the first version registered), or NULL on ENOMEM. */
json_t *kin__simctl_namespaced_resources(kin__simctl *m);

/* Resolves an owner reference's apiVersion and kind to the resource that
 * serves exactly that version (the REST mapper's RESTMapping): 0 with
 * *group and *resource (the storage's names, valid as long as the sim)
 * and *namespaced, or -1 when no served resource has that kind. */
int kin__simctl_resource_of_kind(kin__simctl *m, const char *api_version, const char *kind,
                                 const char **group, const char **resource, int *namespaced);

/* The sim's clock as a wall time, RFC 3339 in UTC ("2026-11-28T06:00:00Z"):
 * the real time on the real clock; on a fake clock the time of start plus
 * the fake clock's advance. */
void kin__simctl_wall_rfc3339(kin__simctl *m, char out[32]);

#endif
