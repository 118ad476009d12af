/* shard_gate.h -- which reconcile requests this replica may take when an
 * operator is sharded (kinformer.sharding): a shard selector over the
 * For object's metadata.uid (or namespace) that the sharding coordinator
 * swaps as ranges move between replicas, checked by the controller's
 * event handlers when they enqueue (the object's, or its owner's, uid)
 * and by its workers before each reconcile (the For object in the cache).
 *
 * A gate starts closed (admits nothing) until kin_shard_gate_set gives it
 * ranges. A set that admits more than before runs the gate's watchers, so
 * that a controller enqueues the cached objects the gate turned away
 * while they were not this replica's (their events were dropped then).
 * Thread-safe: one mutex guards the selector, another the watchers (taken
 * first, held while they run); the counters are atomic. */
#ifndef KIN_SHARD_GATE_H
#define KIN_SHARD_GATE_H

#include <stdint.h>

#include "indexer.h"

typedef struct kin_shard_gate kin_shard_gate;

/* Returns a new closed gate in *out, or KIN_ENOMEM. */
int kin_shard_gate_new(kin_shard_gate **out);
void kin_shard_gate_free(kin_shard_gate *g);

/* Sets the ranges this replica owns: a shard selector string
 * (shard_selector.h), "*" for everything (static sharding off), or NULL
 * for nothing. Returns 0 and bumps the gate's generation, KIN_EINVAL with
 * the parser's message in err (the gate unchanged), or KIN_ENOMEM. Any
 * thread. */
int kin_shard_gate_set(kin_shard_gate *g, const char *selector, char *err, size_t errlen);

/* What the gate admitted just before a kin_shard_gate_set, as its
 * watchers see it (kin_shard_gate_watch); valid only during the call. */
typedef struct kin_shard_gate_prev kin_shard_gate_prev;

/* Called after a set that may admit more than before, on the setter's
 * thread, outside the gate's own lock (it may call kin_shard_gate_admits
 * and kin_shard_gate_gained), with no other watcher running. */
typedef void (*kin_shard_gate_watch_fn)(void *ud, kin_shard_gate *g, const kin_shard_gate_prev *prev);

/* Registers fn(ud) to run after each set: a controller re-enqueues the
 * cached objects whose range came to it, whose events the gate dropped
 * while they were another's (or while the term was another). Returns 0
 * or KIN_ENOMEM. Any thread. */
int kin_shard_gate_watch(kin_shard_gate *g, kin_shard_gate_watch_fn fn, void *ud);
/* Removes fn(ud); once it returns no call of it is running. Any thread
 * but a watcher's own. */
void kin_shard_gate_unwatch(kin_shard_gate *g, kin_shard_gate_watch_fn fn, void *ud);
/* 1 when the gate admits an object with this uid and namespace now and did
 * not before the set prev describes (the ranges did not hold it, or the
 * term they were set in had ended since), else 0. Any thread. */
int kin_shard_gate_gained(kin_shard_gate *g, const kin_shard_gate_prev *prev, const char *uid,
                          const char *namespace_);

/* Ties g to a leadership fence (call_ctx.h; borrowed, outliving g; NULL:
 * none): a set records the epoch open at that moment, and the gate admits
 * nothing while the fence's open epoch is another (a replica that lost its
 * member Lease and got it back owns nothing until its ranges are set in
 * the new term). Binding the fence g is bound to again changes nothing.
 * Any thread. */
struct kin_fence;
void kin_shard_gate_bind_fence(kin_shard_gate *g, const struct kin_fence *fence);

/* The generation (sets so far) and the CLOCK_MONOTONIC time of the last
 * set, in *changed_mono_ns when not NULL. Any thread. */
uint64_t kin_shard_gate_generation(kin_shard_gate *g, uint64_t *changed_mono_ns);

/* 1 when an object with this uid and namespace (either may be NULL) is
 * this replica's, else 0. Any thread. */
int kin_shard_gate_admits(kin_shard_gate *g, const char *uid, const char *namespace_);

/* For a request key ("ns/name" or "name"): 1 when the object under key in
 * store is this replica's, 0 when it is another's or it left store because
 * its range moved away (kin_shard_gate_moved), -1 when store has no such
 * object otherwise (a deleted object, or one this replica never held).
 * Any thread. */
int kin_shard_gate_admits_key(kin_shard_gate *g, kin_indexer *store, const char *key);

/* Records that key's object left the cache because its range moved to
 * another replica (its delete event's object is not admitted), so that a
 * request for it still queued is not reconciled here; moved 0 forgets it
 * (the object is this replica's again). The set is bounded (cleared past
 * a million keys, with a log line). Any thread. */
void kin_shard_gate_moved(kin_shard_gate *g, const char *key, int moved);

/* Counts a request the gate turned away: at enqueue (an event for
 * another replica's object) or before a reconcile (its range moved). */
void kin_shard_gate_count(kin_shard_gate *g, int at_reconcile);
/* Counts n cached objects a watcher enqueued because their range came here. */
void kin_shard_gate_count_requeued(kin_shard_gate *g, uint64_t n);

typedef struct {
  uint64_t generation;
  uint64_t dropped_enqueues;  /* events whose object is another replica's */
  uint64_t skipped_reconciles; /* requests dequeued after their range moved */
  uint64_t requeued;          /* cached objects enqueued when their range came here */
  int open;                   /* 1 when the gate admits anything */
} kin_shard_gate_stats;
void kin_shard_gate_get_stats(kin_shard_gate *g, kin_shard_gate_stats *st);

#endif
