/* leader_election.h -- client-go's leader election (tools/leaderelection
 * with a resourcelock.LeaseLock) on coordination.k8s.io/v1 Leases.
 *
 * One elector is one candidate: a thread of its own that tries to acquire
 * the Lease every 0.5 to 0.9 retry period at random while it is a follower
 * and once more when the observed record expires (client-go: 1 to 2.2
 * retry periods; see follower_wait in leader_election.c), renews it every
 * retry period while it leads, and gives up
 * leadership when it could not renew within the renew deadline. A
 * follower takes the Lease over once the record it observed has not
 * changed for the record's leaseDurationSeconds, measured on the local
 * monotonic clock from when it last saw the record change (the server's
 * and the holder's clocks are never compared). Every write is an update
 * with the resourceVersion last read: a 409 Conflict means another
 * candidate won the race. A new holder increments leaseTransitions;
 * acquireTime and renewTime are MicroTime (RFC 3339, microseconds, UTC).
 * On kin_leader_elector_stop a leader with release_on_cancel writes the
 * Lease with an empty holder and leaseDurationSeconds 1, so another
 * candidate takes over within about one retry period. Its requests skip
 * the client's rate limiter (client-go gives the election a client of its
 * own), so busy controllers sharing the client never delay a renewal; each
 * is bounded by the renew deadline while leading, and cancelled by stop.
 *
 * The leadership fence (call_ctx.h), when given, says whether this
 * candidate may act as leader right now: the elector opens a new epoch
 * when it acquires the Lease, valid until the start of the acquiring
 * attempt (on the real monotonic clock, taken before its first request)
 * plus the renew deadline, moves that bound the same way on every
 * successful renewal, and closes the epoch the moment leadership is lost
 * or unknowable: a Lease read that shows another valid holder (at once, no
 * retrying until the renew deadline), no successful renewal within the
 * renew deadline of the last one's start, the deadline found already
 * passed when the thread runs again (the process was paused: its fence had
 * expired by itself meanwhile), and stop or abandon (before any release).
 * Other candidates take over no earlier than that start plus the lease
 * duration, so the lease duration minus the renew deadline is the margin
 * for clock rates and writes still on their way. Writes made under a
 * context of an ended epoch are refused locally (KIN_EFENCED). Unlike
 * client-go, which keeps acting until its renew deadline whatever the
 * Lease read said.
 *
 * Callbacks run on the elector's thread: they must be quick and must not
 * call back into the elector's stop/free (the Lua binding only queues them
 * to the manager's main state).
 *
 * Thread-safety: every function may be called from any thread but the
 * elector's own (stop and free join it). kin_leader_elector.mu guards the
 * observed record, the state kin_leader_elector_get_state reports and the
 * stop flag; no request runs and no callback is called under it. */
#ifndef KIN_LEADER_ELECTION_H
#define KIN_LEADER_ELECTION_H

#include <stddef.h>
#include <stdint.h>

#include "call_ctx.h"
#include "clock.h"
#include "rest_client.h"

typedef struct kin_leader_elector kin_leader_elector;

/* client-go's (and controller-runtime's) defaults. */
#define KIN_LE_DEFAULT_LEASE_DURATION_NS (15ull * 1000000000ull)
#define KIN_LE_DEFAULT_RENEW_DEADLINE_NS (10ull * 1000000000ull)
#define KIN_LE_DEFAULT_RETRY_PERIOD_NS (2ull * 1000000000ull)
/* client-go's JitterFactor: renew_deadline must exceed it times retry. */
#define KIN_LE_JITTER_FACTOR 1.2

typedef struct {
  const char *name;      /* the Lease's name (required) */
  const char *namespace; /* NULL or "": the client's namespace */
  const char *identity;  /* NULL or "": "<hostname>_<uuid v4>" */
  /* 0: the defaults above. Need lease_duration > renew_deadline >
   * retry_period * 1.2 (client-go's checks). lease_duration is written as
   * whole seconds (at least 1), as client-go does. */
  uint64_t lease_duration_ns, renew_deadline_ns, retry_period_ns;
  int release_on_cancel; /* stop writes the released record */
  /* After losing the lease: 0 ends the elector's thread (client-go's
   * Run); 1 makes it a candidate again. */
  int rejoin_after_loss;
  kin_clock *clock; /* NULL: real; expiry and sleeps use it (the fence's
                       time bound is always on CLOCK_MONOTONIC) */
  /* The leadership fence the elector opens, renews and closes (see
   * above); borrowed: it must outlive the elector. NULL: none. */
  kin_fence *fence;
  /* Callbacks (each may be NULL), on the elector's thread, with ud. */
  void (*on_started_leading)(void *ud);
  /* lost: 1 when the lease could not be renewed, 0 on stop. Called only
   * after on_started_leading. */
  void (*on_stopped_leading)(void *ud, int lost);
  /* The holder the elector observed changed (identity "" when released);
   * called for the first holder seen too, and for itself. */
  void (*on_new_leader)(void *ud, const char *identity);
  void *ud;
} kin_leader_election_opts;

/* Creates an elector (not started) that talks through c (borrowed: it must
 * outlive the elector). o's strings are copied. Returns 0, KIN_ENOMEM, or
 * KIN_EINVAL with a reason in err (if errlen > 0) when a field is missing
 * or the durations break the rule above. */
int kin_leader_elector_new(kin_client *c, const kin_leader_election_opts *o,
                           kin_leader_elector **out, char *err, size_t errlen);

/* Starts the elector's thread. Returns 0, KIN_EBUSY when started before,
 * or a negated errno from pthread_create. */
int kin_leader_elector_start(kin_leader_elector *le);

/* Stops the elector and joins its thread: a request in flight is
 * cancelled; a leader then releases the Lease when release_on_cancel
 * (bounded by the renew deadline; a failure is logged) and calls
 * on_stopped_leading(ud, 0). Idempotent. */
void kin_leader_elector_stop(kin_leader_elector *le);

/* Stops the thread as a crash would: nothing more is written (no release),
 * the Lease stays held until it expires. on_stopped_leading(ud, 0) is still
 * called when it led. For tests and for processes about to exit. */
void kin_leader_elector_abandon(kin_leader_elector *le);

/* Stops (as kin_leader_elector_stop) and frees. NULL is a no-op. */
void kin_leader_elector_free(kin_leader_elector *le);

/* What an elector knows; strings are copies the caller frees with
 * kin_leader_election_state_free. */
typedef struct {
  char *identity;         /* this candidate */
  char *name, *namespace; /* the Lease */
  char *leader;           /* the holder last observed ("" none / released) */
  int is_leader;          /* between on_started_leading and on_stopped_leading */
  long long transitions;  /* leaseTransitions last observed */
  long long lease_duration_seconds; /* of the record last observed */
  char *acquire_time, *renew_time;  /* of the record last observed ("" none) */
  /* kin_clock time when the record was last seen to change (0: never). */
  uint64_t observed_ns;
  uint64_t acquisitions;  /* times this candidate became leader */
  uint64_t losses;        /* times it lost the lease without being stopped */
  int running;            /* the thread runs */
} kin_leader_election_state;

/* Fills *st (the caller frees it with kin_leader_election_state_free).
 * Returns 0 or KIN_ENOMEM (then *st is zeroed). */
int kin_leader_elector_get_state(kin_leader_elector *le, kin_leader_election_state *st);
void kin_leader_election_state_free(kin_leader_election_state *st);

/* 1 while this candidate leads (cheap: one atomic load), for a metrics
 * collector's leader_election_master_status gauge. */
int kin_leader_elector_is_leader(kin_leader_elector *le);

/* The Lease's name (borrowed, lives as long as le): the gauge's label. */
const char *kin_leader_elector_name(kin_leader_elector *le);

/* Writes "<hostname>_<uuid v4>" into buf (controller-runtime's default
 * identity). Returns 0, or KIN_EINVAL when it does not fit. */
int kin_leader_election_default_identity(char *buf, size_t n);

#endif
