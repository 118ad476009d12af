/* worker_slot.h -- internal to core/controller: what each worker of a
 * controller is doing (the reconcile slot: busy flag, key, start, deadline,
 * fired flag, the REST canceler of its calls, the shutdown's abort flag)
 * and the controller's watchdog thread, which fires the canceler of a
 * worker past its reconcile deadline, after a shutdown's timeout fires
 * every busy worker's, and logs the busy-worker warning once per episode
 * (every worker on its key longer than busy_warning_after).
 *
 * Locks: a slot's mu guards busy, key, start_ns, start_wall_ns,
 * deadline_ns, fired and the worker's counters (controller.c); it is taken
 * before the canceler's own lock, which is taken before the IO engine's.
 * abort is an atomic, read by kin_controller_interrupted on the worker's
 * thread. kin__watchdog.mu guards quit, abort_at and warned; it is held
 * during a tick and taken before a slot's mu. */
#ifndef KIN_WORKER_SLOT_H
#define KIN_WORKER_SLOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "call_ctx.h"
#include "io_engine.h"

typedef struct {
  pthread_mutex_t mu;
  int busy;
  char key[256];          /* truncated copy, for messages */
  uint64_t start_ns;      /* CLOCK_MONOTONIC */
  uint64_t start_wall_ns; /* CLOCK_REALTIME, for kin_controller_inflight */
  uint64_t deadline_ns;   /* CLOCK_MONOTONIC; 0: no reconcile_timeout */
  int fired;              /* the canceler was fired for this reconcile */
  kin_io_canceler cx;     /* the REST calls of the current reconcile */
  atomic_int abort;       /* shutdown: interrupt whatever runs */
  uint64_t epoch;         /* the reconcile's leadership epoch (mu) */
  atomic_int deposed;     /* its epoch ended: interrupt it (reset by begin) */
} kin__wslot;

typedef struct {
  const char *name;       /* the controller's (borrowed) */
  int workers;
  kin__wslot *slots;      /* borrowed: workers of them */
  uint64_t busy_warn_ns;  /* 0: never */
  /* NULL, or called on the watchdog thread (its mu held: it must not call
   * back into the controller) right after it fired a worker's canceler */
  void (*on_interrupt)(void *ud, int worker, int why);
  void *ud;
  const kin_fence *fence; /* NULL: none; set before the thread starts */
  pthread_mutex_t mu;
  pthread_cond_t cond;    /* CLOCK_MONOTONIC */
  pthread_t th;
  int running;            /* the owner thread's */
  int quit;
  uint64_t abort_at;      /* interrupt every busy worker from then on; 0: never */
  int warned;             /* a busy warning was logged for this episode */
} kin__watchdog;

/* CLOCK_MONOTONIC in ns. */
uint64_t kin__mono_ns(void);

/* Initialises / destroys a slot. init returns 0 or a KIN_E* error. */
int kin__wslot_init(kin__wslot *s);
void kin__wslot_destroy(kin__wslot *s);

/* Worker thread: marks s busy with key from now, with a deadline timeout_ns
 * away (0: none), and a fresh canceler (one fired already while aborting).
 * Fills ctx's deadline and canceler. */
void kin__wslot_begin(kin__wslot *s, const char *key, uint64_t timeout_ns, kin_call_ctx *ctx);
/* Worker thread: marks s idle; returns 1 when its canceler was fired
 * during the reconcile, else 0. */
int kin__wslot_end(kin__wslot *s);

/* Initialises w over slots (not started). Returns 0 or a KIN_E* error. */
int kin__watchdog_init(kin__watchdog *w, const char *name, kin__wslot *slots, int workers,
                       uint64_t busy_warn_ns, void (*on_interrupt)(void *, int, int), void *ud);
void kin__watchdog_destroy(kin__watchdog *w);
/* Starts the thread (it inherits the caller's signal mask). Owner thread.
 * Returns 0 or a negated errno. */
int kin__watchdog_start(kin__watchdog *w);
/* Stops and joins it; no-op when not running. Owner thread. */
void kin__watchdog_stop(kin__watchdog *w);
/* Every busy worker is interrupted after_ns from now (an earlier time
 * already armed stays). Any thread. */
void kin__watchdog_arm_abort(kin__watchdog *w, uint64_t after_ns);

#endif
