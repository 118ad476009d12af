/* controller.h -- controller-runtime's Controller
 * (pkg/internal/controller/controller.go): a named, rate-limited workqueue
 * of reconcile requests, fed by event handlers on informers (Watch), and N
 * worker threads that reconcile one request at a time each.
 *
 * reconcileHandler semantics, per result (reconcile.h):
 *   error           AddRateLimited
 *   terminal error  no requeue and no Forget (controller-runtime keeps the
 *                   item's backoff), counted apart
 *   requeue_after   Forget, then AddAfter(d)
 *   requeue         AddRateLimited
 *   success         Forget
 * and Done after every reconcile. The workqueue never hands one key to two
 * workers at once, so a key is never reconciled concurrently.
 *
 * Start waits for the caches of every watched informer to sync (default
 * timeout 2 min, as CacheSyncTimeout), runs each worker's on_start on its
 * own thread (the Lua binding builds a lua_State per worker there) and
 * returns once all of them succeeded. Stop removes the handlers from their
 * informers, shuts the queue down, lets every in-flight reconcile finish
 * and joins the workers (each runs on_stop); requests still queued are
 * dropped, where controller-runtime would call Reconcile with a cancelled
 * context.
 *
 * Deadlines: each worker has a reconcile slot (its key, start, deadline
 * and the canceler of its REST calls) that the controller's watchdog
 * thread checks every 50 ms (csrc/core/controller/worker_slot.h): it cuts
 * a reconcile's REST call at reconcile_timeout, interrupts every busy
 * worker once a shutdown's timeout passed (kin_controller_abort_after),
 * and logs the busy-worker warning. The reconcile function receives the
 * kin_call_ctx that carries all this to its kin_client_* calls.
 *
 * Threads: the workers and the watchdog; handlers run on the informers'
 * listener threads.
 * Start, stop and free are called by one owner thread, never from a
 * reconcile. Informers must outlive the controller's stop. */
#ifndef KIN_CONTROLLER_H
#define KIN_CONTROLLER_H

#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "controller_handlers.h"
#include "controller_history.h"
#include "rate_limiter.h"
#include "reconcile.h"
#include "shared_informer.h"
#include "workqueue.h"

#define KIN_CONTROLLER_CACHE_SYNC_TIMEOUT (120 * KIN_NSEC_PER_SEC)

typedef struct kin_controller kin_controller;

typedef struct {
  const char *name;                /* required: logs, metrics, the queue's name */
  int workers;                     /* MaxConcurrentReconciles; <= 0: 1 */
  kin_reconcile_fn reconcile;      /* required */
  /* Run on worker thread worker_index before its first reconcile / after
   * its last. A non-zero on_start fails kin_controller_start (that worker's
   * on_stop is not called; the others' are). Either may be NULL. */
  int (*on_worker_start)(void *ud, int worker_index);
  void (*on_worker_stop)(void *ud, int worker_index);
  void *ud;                        /* for reconcile and both hooks */
  kin_rate_limiter *rate_limiter;  /* taken (also on failure); NULL: the
                                      default controller rate limiter */
  kin_clock *clock;                /* NULL: real clock */
  uint64_t cache_sync_timeout_ns;  /* 0: KIN_CONTROLLER_CACHE_SYNC_TIMEOUT */
  /* The per-key history (controller_history.h): entries per key (0: 32)
   * and keys (0: 10,000); history_entries < 0 disables it. */
  int history_entries;
  int history_keys;
  /* reconcile_timeout (0: none): each reconcile's ctx carries a deadline
   * this far from its start; the controller's watchdog (one thread per
   * started controller, 50 ms tick) fires the ctx's canceler then, so a
   * REST call still waiting ends (KIN_ECANCELED), and a reconcile that
   * fails after its deadline is logged once ("exceeded reconcile_timeout"),
   * counted (reconcile_timeouts) and retried with the key's backoff. */
  uint64_t reconcile_timeout_ns;
  /* busy_warning_after (0: never): one warning per episode when every
   * worker has been on its key this long, naming the keys. */
  uint64_t busy_warning_after_ns;
  /* The leadership fence of the reconciles' writes (call_ctx.h; borrowed,
   * must outlive the controller; NULL: not fenced). Each reconcile's ctx
   * carries the epoch open when the reconcile started, so one that
   * outlives its epoch writes nothing more. While the fence does not hold
   * (not leading, or leadership lost) the workers start no reconcile: a
   * request they take is put back for 200 ms; a reconcile in flight when
   * its epoch ends is interrupted within the watchdog's tick (50 ms): its
   * REST call cancelled, kin_controller_interrupted says
   * KIN_INTERRUPT_LEADERSHIP, and it is logged and counted
   * (reconcile_interrupts). */
  const kin_fence *fence;
  /* NULL, or run on the watchdog thread right after it fired a worker's
   * canceler (why: KIN_INTERRUPT_DEADLINE, _SHUTDOWN or _LEADERSHIP), e.g. to end a
   * child process the reconcile waits for. It must not call into the
   * controller. ud is the config's. */
  void (*on_interrupt)(void *ud, int worker_index, int why);
  /* 1: client-go's FIFO queue. 0 (the default): controller-runtime's
   * priority queue (workqueue.h's priorities): the initial list's adds and
   * resyncs at KIN_PRIORITY_LOW, fresh events at NORMAL, requeues at the
   * result's priority or the one the request had. */
  int fifo;
} kin_controller_config;

/* Returns a new, not yet started controller in *out (its queue exists at
 * once, so handlers may enqueue before start). KIN_EINVAL without a name
 * or reconcile function, KIN_ENOMEM, or a negative errno from the queue's
 * thread. */
int kin_controller_new(const kin_controller_config *cfg, kin_controller **out);

/* Stops the controller if needed and frees it with its handlers and queue. */
void kin_controller_free(kin_controller *c);

/* Watch: registers an enqueue handler built from cfg on inf (with resync
 * period resync_ns, see kin_informer_add_handler) and remembers it, so
 * start waits for inf to sync and stop removes it. The predicate of cfg is
 * taken, also on failure. Returns 0 and the listener in *out when out is
 * not NULL; KIN_ECLOSED when the controller was stopped; the errors of
 * kin_enqueue_handler_new and kin_informer_add_handler. */
int kin_controller_watch(kin_controller *c, kin_informer *inf, const kin_handler_config *cfg,
                         uint64_t resync_ns, kin_listener **out);

/* Waits for the watched informers' caches (KIN_ETIMEDOUT, logged as
 * "failed to wait for <name> caches to sync", or KIN_ECLOSED when one was
 * stopped; the controller may be started again then), then starts the
 * workers. Returns 0 once every on_worker_start succeeded; KIN_EBUSY when
 * started before; the hook's error (a positive one as KIN_ECANCELED) or a
 * negative errno of pthread_create, after which the controller is stopped. */
int kin_controller_start(kin_controller *c);

/* Stops as described above. Idempotent. */
void kin_controller_stop(kin_controller *c);

/* The first half of stop, without waiting: marks the controller stopping
 * and shuts its queue down, so queued requests are dropped and each worker
 * ends after its current reconcile. kin_controller_stop still has to be
 * called (it removes the watches and joins). Idempotent; any thread. */
void kin_controller_shutdown(kin_controller *c);

/* 1 once stop has begun: a long reconcile may check it to give up early
 * (controller-runtime's cancelled context). */
int kin_controller_stopping(kin_controller *c);

/* Worker thread worker_index, during a reconcile: KIN_INTERRUPT_DEADLINE
 * once its reconcile_timeout passed, KIN_INTERRUPT_SHUTDOWN once a
 * shutdown's timeout (kin_controller_abort_after) passed,
 * KIN_INTERRUPT_LEADERSHIP once the watchdog saw its epoch end, else 0. Cheap (an
 * atomic and a clock read): a binding polls it from its interpreter (the
 * Lua count hook) to stop user code. */
int kin_controller_interrupted(kin_controller *c, int worker_index);

/* Returns worker worker_index's shutdown abort flag (nonzero once a
 * shutdown's timeout passed while it was busy; it lives as long as c), for
 * a binding whose own waits must end with the reconcile (a child process
 * of os.execute). Any thread may read it. */
const atomic_int *kin_controller_abort_flag(kin_controller *c, int worker_index);

/* Sets the leadership fence of the reconciles' writes (as the config's
 * fence; NULL: none) before start, for a fence made after the controller.
 * Returns 0, or KIN_EBUSY once started. Owner thread. */
int kin_controller_set_fence(kin_controller *c, const kin_fence *fence);

/* Shards the controller (shard_gate.h): its handlers enqueue only what
 * gate admits, and a request dequeued after its range left (the For
 * object in store says so) is forgotten, not reconciled, and noted in the
 * history ("handover"). A set of the gate that admits more enqueues the
 * objects of store it admits now and did not before (their events were
 * dropped meanwhile; history "handover"). Both borrowed; they must outlive
 * the controller. Returns 0, KIN_ENOMEM, or KIN_EBUSY once started or
 * once a watch was added (the handlers take the gate when they are made).
 * Owner thread. */
struct kin_shard_gate;
int kin_controller_set_shard_gate(kin_controller *c, struct kin_shard_gate *gate,
                                  kin_indexer *store);

/* Interrupts every reconcile still running after_ns from now (an earlier
 * time armed before stays): its canceler is fired (its REST call ends with
 * KIN_ECANCELED, later ones fail at once) and kin_controller_interrupted
 * says KIN_INTERRUPT_SHUTDOWN; such a reconcile is logged once as
 * interrupted by the shutdown and counted (reconcile_interrupts). Call it
 * before kin_controller_stop to bound the stop. Any thread. */
void kin_controller_abort_after(kin_controller *c, uint64_t after_ns);

/* Adds the request (ns, name) to the queue, as a handler would. Returns 0
 * or KIN_ENOMEM. */
int kin_controller_enqueue(kin_controller *c, const char *ns, const char *name);

/* The controller's per-key history (borrowed, lives as long as c; NULL
 * when disabled). The controller records in it: the events its watches'
 * handlers saw (with the predicates' verdicts), manual enqueues, each
 * reconcile with the writes made under its ctx (the ctx's write
 * observer), and the requeue or retry that followed. */
kin_history *kin_controller_history(kin_controller *c);

/* A reconcile in flight (kin_controller_inflight). */
typedef struct {
  int worker;             /* 0-based */
  uint64_t start_wall_ns; /* CLOCK_REALTIME */
  uint64_t start_mono_ns; /* CLOCK_MONOTONIC */
  char key[256];          /* truncated */
} kin_inflight;

/* Copies up to cap of the reconciles running now into out; returns how
 * many. Any thread. */
int kin_controller_inflight(kin_controller *c, kin_inflight *out, int cap);

/* The controller's queue (borrowed; for metrics and tests). */
kin_workqueue *kin_controller_queue(kin_controller *c);
const char *kin_controller_name(const kin_controller *c);

/* controller_runtime_reconcile_time_seconds' bucket upper bounds,
 * controller-runtime's (pkg/internal/controller/metrics): 5 ms to 60 s. */
#define KIN_CONTROLLER_RECONCILE_TIME_BUCKETS 40
extern const double kin_controller_reconcile_time_bounds[KIN_CONTROLLER_RECONCILE_TIME_BUCKETS];

/* Counters, named after controller-runtime's metrics. */
typedef struct {
  uint64_t reconcile_success;       /* controller_runtime_reconcile_total{result="success"} */
  uint64_t reconcile_requeue;       /* {result="requeue"} */
  uint64_t reconcile_requeue_after; /* {result="requeue_after"} */
  uint64_t reconcile_errors;        /* controller_runtime_reconcile_errors_total and
                                       reconcile_total{result="error"}: the same count,
                                       terminal errors included */
  uint64_t terminal_reconcile_errors; /* controller_runtime_terminal_reconcile_errors_total */
  uint64_t reconcile_panics;        /* controller_runtime_reconcile_panics_total:
                                       the reconcile function returned non-zero */
  uint64_t reconcile_time_count;    /* controller_runtime_reconcile_time_seconds */
  double reconcile_time_sum_seconds;
  /* cumulative: reconciles that took <= kin_controller_reconcile_time_bounds[i] */
  uint64_t reconcile_time_buckets[KIN_CONTROLLER_RECONCILE_TIME_BUCKETS];
  uint64_t reconcile_timeouts;      /* kinformer_reconcile_timeouts_total: cut at
                                       reconcile_timeout */
  uint64_t reconcile_interrupts;    /* kinformer_reconcile_interrupts_total: cut by a
                                       shutdown (kin_controller_abort_after) */
  int active_workers;               /* controller_runtime_active_workers */
  int max_concurrent_reconciles;    /* controller_runtime_max_concurrent_reconciles */
} kin_controller_stats;
void kin_controller_get_stats(kin_controller *c, kin_controller_stats *st);

#endif
