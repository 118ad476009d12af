/* reconcile.h -- controller-runtime's pkg/reconcile: the request a
 * controller's workers reconcile (a namespace and a name) and the result a
 * reconciler hands back.
 *
 * In the workqueue a request is its key, "namespace/name", or "name" for a
 * cluster-scoped object: the same string kin_obj_key gives the object. */
#ifndef KIN_RECONCILE_H
#define KIN_RECONCILE_H

#include <stdint.h>

#include "call_ctx.h"
#include "workqueue.h"

/* reconcile.Request. The strings are borrowed for the duration of the
 * reconcile call. */
typedef struct {
  const char *ns;   /* "" for a cluster-scoped object */
  const char *name;
  const char *key;  /* "ns/name" or "name": the workqueue item */
} kin_request;

/* What the controller does with the request afterwards (controller-runtime
 * reconcileHandler):
 *   DONE            Forget (success)
 *   REQUEUE         AddRateLimited (Result{Requeue: true})
 *   REQUEUE_AFTER   Forget, then AddAfter(requeue_after_ns)
 *                   (Result{RequeueAfter}; with 0 ns it is a success)
 *   ERROR           AddRateLimited (a non-nil error)
 *   TERMINAL_ERROR  nothing: no retry until the next event, counted
 *                   apart (reconcile.TerminalError) */
typedef enum {
  KIN_RESULT_DONE = 0,
  KIN_RESULT_REQUEUE,
  KIN_RESULT_REQUEUE_AFTER,
  KIN_RESULT_ERROR,
  KIN_RESULT_TERMINAL_ERROR
} kin_result_kind;

typedef struct {
  kin_result_kind kind;
  uint64_t requeue_after_ns;
  char message[256]; /* error text for the log ("" when none) */
  int logged;        /* the reconciler already logged this error in full
                        (a traceback does not fit message): no second line */
  /* A reconciler that stopped because kin_controller_interrupted told it
   * to sets interrupted to what that returned (KIN_INTERRUPT_DEADLINE,
   * _SHUTDOWN or _LEADERSHIP) and where to where it stopped (" at
   * mod.lua:12", or ""): the controller logs and counts the interruption
   * (controller.h). A reconcile whose REST call the watchdog cut is
   * recognised without them. */
  int interrupted;
  char where[160];
  /* has_priority: the requeue (REQUEUE, REQUEUE_AFTER, ERROR) is queued at
   * priority (workqueue.h); else at the priority the request had. */
  int has_priority;
  int priority;
} kin_result_action;

/* Why a reconcile is interrupted (kin_controller_interrupted): its
 * reconcile_timeout passed, a shutdown's timeout passed, or the leadership
 * epoch it started in ended (the controller's fence). */
enum { KIN_INTERRUPT_DEADLINE = 1, KIN_INTERRUPT_SHUTDOWN = 2, KIN_INTERRUPT_LEADERSHIP = 3 };

/* The reconciler: runs on worker thread worker_index (0..workers-1); *out
 * arrives as {KIN_RESULT_DONE, 0, ""}. ctx (never NULL, valid during the
 * call) is the reconcile's call context (call_ctx.h; controller-runtime's
 * ctx): its deadline (reconcile_timeout), its canceler (fired by the
 * controller's watchdog at the deadline or when a shutdown gives up
 * waiting), the write observer of the key's history and the leadership
 * fence with the epoch open when the reconcile started. The reconciler
 * passes it to every kin_client_* call it makes. A non-zero return means
 * the reconciler itself failed (controller-runtime: a recovered panic): it
 * is an error result whatever *out says, counted as a panic too. */
typedef int (*kin_reconcile_fn)(void *ud, int worker_index, const kin_request *req,
                                const kin_call_ctx *ctx, kin_result_action *out);

/* Adds the request (ns, name) to q as its key; ns NULL or "" makes a
 * cluster-scoped key. Returns 0, or KIN_ENOMEM or KIN_EINVAL (nothing
 * added). */
int kin_request_add(kin_workqueue *q, const char *ns, const char *name);
/* The same at priority (kin_workqueue_add_priority). */
int kin_request_add_priority(kin_workqueue *q, const char *ns, const char *name, int priority);

#endif
