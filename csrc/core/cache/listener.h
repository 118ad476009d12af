/* listener.h -- client-go's processorListener (internal): relays the
 * notifications of one informer to one kin_event_handler on a thread of
 * its own, in order, one at a time, through an unbounded ring buffer, so
 * the informer thread that adds never blocks on a slow handler.
 *
 * It also keeps the handler's resync bookkeeping (requested and effective
 * period, next resync time on the informer's clock) and its HasSynced
 * tracker (synctrack.SingleFileTracker): the upstream (the informer) has
 * synced and every notification queued with is_in_initial_list was
 * handled.
 *
 * Lifetime: reference counted. Whoever created it holds one reference, the
 * running thread holds another until it returns, so a handler that removes
 * its own listener (or stops the informer) does not free it under itself. */
#ifndef KIN_LISTENER_H
#define KIN_LISTENER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "event_handler.h"
#include "ring_buffer.h"

typedef int (*kin__upstream_synced_fn)(void *ud);

/* The listener threads of one owner (the processor) that have not finished
 * yet. A handler that removes its own listener or stops the informer
 * cannot join its own thread and detaches it; the thread then still calls
 * on_stop, so the owner waits here before it lets its caller free
 * anything. */
typedef struct {
  pthread_mutex_t mu;  /* guards running */
  pthread_cond_t cond; /* broadcast whenever running drops */
  int running;         /* threads started and not yet finished */
} kin__listener_group;

/* Returns 0 or a negative errno. */
int kin__listener_group_init(kin__listener_group *g);
void kin__listener_group_destroy(kin__listener_group *g);
/* Waits until no thread of g runs but the caller's own (when the caller is
 * a listener thread of g). */
void kin__listener_group_wait(kin__listener_group *g);

enum {
  KIN__LT_NONE = 0,    /* thread never started */
  KIN__LT_RUNNING,     /* thread started, joinable */
  KIN__LT_JOINING,     /* some thread is in pthread_join */
  KIN__LT_DONE         /* joined or detached */
};

struct kin_listener {
  kin_event_handler h;           /* immutable */
  const char *name;              /* informer name for logs, borrowed, immutable */
  void *owner;                   /* the informer, immutable (may be NULL) */
  kin__upstream_synced_fn upstream; /* immutable */
  void *upstream_ud;
  kin__listener_group *group;    /* set before the thread starts; may be NULL */

  pthread_mutex_t mu;  /* guards every field down to thread */
  pthread_cond_t cond; /* new note, stop request, join finished */
  kin__ring ring;
  int stopping;        /* deliver nothing further and exit */
  atomic_int stop_seen; /* mirror of stopping, read between the notes of a
                           batch the thread took (no lock) */
  int aborted;         /* on_start failed: notes are dropped */
  int inflight;        /* notes the thread took and has not handled yet */
  int waiting;         /* the thread waits on cond for a note */
  uint64_t delivered, errors;
  uint64_t last_delivered_ns; /* kin_clock_real() time the last batch was handled; 0: none */
  uint64_t requested_resync_ns; /* after the 1 s minimum */
  uint64_t resync_ns;           /* effective period; 0: no resync */
  uint64_t next_resync_ns;      /* on the informer's clock */
  int thread_state;             /* KIN__LT_* */
  int exited;                   /* no thread runs, or it has finished with
                                   the handler (set even when detached) */
  pthread_t thread;

  atomic_long initial_pending;  /* initial-list notes queued, not handled */
  atomic_int refs;

  /* Guarded by the owning processor's lock. */
  int syncing;                  /* in the set due a resync */
  struct kin_listener *prev, *next;
  struct kin_listener *stop_next; /* used only by kin__processor_stop */
};

/* The listener whose thread is the calling thread, or NULL. */
kin_listener *kin__listener_current(void);

/* Returns the effective resync period of a handler asking for desired
 * when the informer checks every check ns (determineResyncPeriod). */
uint64_t kin__determine_resync_period(uint64_t desired, uint64_t check);

/* Creates a listener holding one reference for the caller; the handler is
 * copied, name is borrowed. now_ns starts the resync schedule. Returns 0
 * or KIN_ENOMEM. */
int kin__listener_new(const kin_event_handler *h, uint64_t requested_resync_ns,
                      uint64_t resync_ns, uint64_t now_ns, kin__upstream_synced_fn upstream,
                      void *upstream_ud, void *owner, const char *name, kin_listener **out);
kin_listener *kin__listener_ref(kin_listener *l);
/* Drops a reference; the last one frees the listener and its queued notes. */
void kin__listener_unref(kin_listener *l);

/* Starts the delivery thread (once). Returns 0, KIN_ECLOSED when stopped
 * already, or a negative errno when the thread cannot be created. */
int kin__listener_start(kin_listener *l);
/* Queues a copy of *n (taking new references to its objects); never
 * blocks on the handler. Dropped when the listener is stopped or aborted. */
void kin__listener_add(kin_listener *l, const kin__note *n);
/* One notification of a batch (kin__processor_distribute_n): is_sync marks
 * a resync, which only listeners due one get. */
typedef struct {
  kin__note n;
  int is_sync;
} kin__batch_note;
/* Queues copies of the n notes of v that this listener gets (all when
 * syncing, else those that are not resyncs), in order, under one hold of
 * its lock and with at most one wake-up of its thread. Never blocks on the
 * handler. Called under the processor's lock (syncing is its field). */
void kin__listener_add_n(kin_listener *l, const kin__batch_note *v, size_t n, int syncing);
/* Asks the thread to exit after the current notification, without
 * waiting. */
void kin__listener_request_stop(kin_listener *l);
/* Requests stop and waits for the thread to exit (idempotent, any number
 * of concurrent callers), also when a handler detached it by stopping its
 * own listener earlier. Called on the listener's own thread it detaches
 * instead of joining. */
void kin__listener_stop(kin_listener *l);

/* Resync bookkeeping (shouldResync, determineNextResync, setResyncPeriod). */
int kin__listener_should_resync(kin_listener *l, uint64_t now_ns);
void kin__listener_determine_next_resync(kin_listener *l, uint64_t now_ns);
void kin__listener_set_resync_period(kin_listener *l, uint64_t resync_ns);
uint64_t kin__listener_requested_resync_period(kin_listener *l);

#endif
