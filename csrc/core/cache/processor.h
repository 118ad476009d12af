/* processor.h -- client-go's sharedProcessor (internal): the list of
 * listeners of one informer and the distribution of notifications to them.
 *
 * Sync notifications (resyncs, and updates whose resourceVersion did not
 * change) go only to the "syncing" set, the listeners that should_resync
 * last found due a resync (every listener starts in it, as in client-go);
 * every other notification goes to every listener. */
#ifndef KIN_PROCESSOR_H
#define KIN_PROCESSOR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "listener.h"

typedef struct {
  pthread_rwlock_t lock; /* guards head, len, started, stopped and each
                            listener's syncing flag and list links */
  kin_listener *head;
  size_t len;
  int started;           /* listener threads run (added ones start at once) */
  int stopped;           /* kin__processor_stop was called */
  kin_clock *clock;      /* immutable */
  kin__listener_group threads; /* every listener thread started; own lock */
} kin__processor;

/* Returns 0 or a negative errno. */
int kin__processor_init(kin__processor *p, kin_clock *clock);
/* Stops every listener, drops the processor's references and frees. */
void kin__processor_destroy(kin__processor *p);

/* Adds l, taking over one reference; starts its thread when the processor
 * runs. Returns 0, or the thread creation error (l is then not added and
 * the reference is still the caller's). */
int kin__processor_add_listener(kin__processor *p, kin_listener *l);
/* Unlinks l and hands the processor's reference to the caller (who stops
 * and unrefs it). Returns 0 or KIN_ENOENT. */
int kin__processor_remove_listener(kin__processor *p, kin_listener *l);
int kin__processor_has_listener(kin__processor *p, kin_listener *l);
size_t kin__processor_len(kin__processor *p);

/* Starts the thread of every listener. Returns 0 or the first error. */
int kin__processor_run(kin__processor *p);
/* Stops and joins every listener thread, and waits for those a handler
 * detached by removing its own listener (all but the caller's own thread
 * when called from a handler); the listeners stay registered (their
 * handles remain valid until removed or the processor is destroyed).
 * Callers serialize calls to this function. */
void kin__processor_stop(kin__processor *p);

/* Queues *n (borrowed) to every listener, or only to the syncing set when
 * is_sync. Never blocks on a handler. */
void kin__processor_distribute(kin__processor *p, const kin__note *n, int is_sync);

/* Queues the n notes of v (borrowed), in order, as n calls of
 * kin__processor_distribute would, but taking the processor's lock once and
 * each listener's lock once, with one wake-up per listener. */
void kin__processor_distribute_n(kin__processor *p, const kin__batch_note *v, size_t n);
/* Recomputes the syncing set at the clock's now and reschedules the
 * listeners that are due. Returns 1 when any listener is due. */
int kin__processor_should_resync(kin__processor *p);
/* Applies a new resync check period to every listener's effective period. */
void kin__processor_resync_check_period_changed(kin__processor *p, uint64_t check_ns);

#endif
