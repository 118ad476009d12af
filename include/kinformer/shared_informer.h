/* shared_informer.h -- client-go's sharedIndexInformer, sharedProcessor and
 * processorListener (tools/cache/shared_informer.go), without the reflector
 * (which feeds kin_informer_fifo() and lives in reflector.c).
 *
 * Data flow: producer -> DeltaFIFO -> informer thread (HandleDeltas: update
 * the indexer, then distribute notifications) -> one listener per handler
 * set, each with an unbounded growing ring buffer (initial 1024) and its own
 * thread that calls the handler in order, one notification at a time.
 *
 * Threads: the informer thread pops the FIFO; a resync thread ticks every
 * resync check period on the informer's clock; each listener has a thread.
 * Locks: see ARCHITECTURE.md (started_lock > block_deltas > processor
 * listeners_lock > listener lock). */
#ifndef KIN_SHARED_INFORMER_H
#define KIN_SHARED_INFORMER_H

#include <stdint.h>

#include "clock.h"
#include "delta_fifo.h"
#include "event_handler.h"
#include "indexer.h"
#include "kobj.h"

typedef struct kin_informer kin_informer;

#define KIN_MIN_RESYNC_PERIOD (1 * KIN_NSEC_PER_SEC)

typedef struct {
  kin_clock *clock;               /* NULL: real clock */
  uint64_t default_resync_ns;     /* default handler resync period; 0: none */
  kin_transform_fn transform;     /* applied by the FIFO on enqueue */
  void *transform_ud;
  const char *name;               /* for logs, e.g. "v1/pods" */
} kin_informer_config;

int kin_informer_new(const kin_informer_config *cfg, kin_informer **out);
/* Stops the informer if running, joins every thread and frees it. */
void kin_informer_free(kin_informer *inf);

/* The FIFO the reflector (or a test) feeds, and the cache. Borrowed. */
kin_delta_fifo *kin_informer_fifo(kin_informer *inf);
kin_indexer *kin_informer_indexer(kin_informer *inf);

/* Starts the informer thread, the resync thread and every listener. Returns
 * 0, KIN_EBUSY when already started, KIN_ECLOSED when stopped. */
int kin_informer_run(kin_informer *inf);
/* Closes the FIFO, stops every listener (each drains nothing further) and
 * joins all threads. Idempotent. */
void kin_informer_stop(kin_informer *inf);

/* Adds a handler set with its resync period (0: none; below 1 s it is
 * raised to 1 s; below the informer's check period after start it is raised
 * to the check period; before start a smaller one lowers the check period).
 * After start, the new listener first receives a synthetic on_add (with
 * is_in_initial_list = 1) for every cached object. Returns 0 and the
 * listener in *out (owned by the informer), or KIN_ECLOSED when the
 * informer was stopped. The handler struct is copied. */
int kin_informer_add_handler(kin_informer *inf, const kin_event_handler *h,
                             uint64_t resync_ns, kin_listener **out);
/* Stops deliveries to l, joins its thread and frees it. Returns 0 or
 * KIN_ENOENT. */
int kin_informer_remove_handler(kin_informer *inf, kin_listener *l);

/* True once the FIFO has synced and its initial list was processed. */
int kin_informer_has_synced(kin_informer *inf);
/* Waits until has_synced or timeout_ns on the informer's clock. Returns 0,
 * KIN_ETIMEDOUT, or KIN_ECLOSED when the informer stops first. */
int kin_informer_wait_for_cache_sync(kin_informer *inf, uint64_t timeout_ns);

uint64_t kin_informer_resync_check_period(kin_informer *inf);

#endif
