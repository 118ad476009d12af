/* lcall_limit.h -- calling user Lua under a time limit and a memory limit
 * (issue 24), in any Lua state of the binding: the main state (main-state
 * handlers, health checks, on_start) and worker states (transforms,
 * handlers, map functions).
 *
 * A limited call is bracketed by lkin_call_limit_begin/_end on the state's
 * own thread. While it runs, a count hook (every LKIN_CALL_LIMIT_COUNT
 * instructions) raises "<what> <name> exceeded its time limit of Xs
 * (option <opt>)" past the deadline, "... interrupted: the manager is
 * stopping" once the abort flag (any thread may set it) is set, and, for
 * main-state calls that ask for it, "... interrupted by SIGTERM" once
 * SIGINT or SIGTERM is pending for the process (mgr:run blocks them and
 * takes them afterwards: the signal stays pending). Once it fired, the hook
 * raises again at every check (at every instruction after ten), so code
 * catching the error with pcall cannot keep running.
 *
 * Memory: the main state is made by the `lua` interpreter, whose
 * allocator we cannot choose; lkin_call_limit_wrap_alloc (run when the
 * binding is opened) wraps it with lua_setallocf. The wrapper counts only
 * while a limited call runs: the call's net growth past memory_limit is
 * refused (Lua then collects and raises a memory error), and the state
 * stays usable afterwards. Worker states keep their own accounting
 * allocator (worker_state.c: the whole state under its memory_limit).
 *
 * A coroutine made before the call does not inherit the hook (Lua copies
 * hooks into new threads only): its code is cut at the deadline only once
 * it returns to the limited thread. Code blocked in C (a read, a sleep) is
 * not interrupted by the hook; os.execute and io.popen of worker states
 * (lcall_proc.h) honour the deadline themselves.
 *
 * Besides, lkin_call_limit_set records a deadline and an abort flag for
 * the state without a hook (the reconcile path, which has its own hook):
 * os.execute and io.popen read it through lkin_call_limit_current. */
#ifndef LKIN_CALL_LIMIT_H
#define LKIN_CALL_LIMIT_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The defaults of the options (seconds): handler_timeout (handlers, map
 * functions, main-state handlers), transform_timeout. The Lua side's
 * check_timeout (5) and on_start_timeout (30) are manager.lua's. */
#define LKIN_DEFAULT_HANDLER_TIMEOUT_S 10
#define LKIN_DEFAULT_TRANSFORM_TIMEOUT_S 10

/* Instructions between two checks of the hook. */
#define LKIN_CALL_LIMIT_COUNT 1000

/* Why a limited call was cut (lkin_call_limit.why). */
enum { LKIN_CL_NONE, LKIN_CL_TIMEOUT, LKIN_CL_ABORT, LKIN_CL_SIGNAL, LKIN_CL_MEMORY };

/* One limited call: filled by the caller (the first block), on its stack,
 * alive from _begin to _end. Owner thread only. */
typedef struct lkin_call_limit {
  const char *what;        /* "main-state handler", "transform"...: borrowed */
  const char *name;        /* "listener v1/pods #1": borrowed, may be NULL */
  const char *option;      /* the option that sets the time limit, or NULL */
  const char *mem_option;  /* the option that sets the memory limit, or NULL */
  uint64_t timeout_ns;     /* 0: no time limit */
  size_t memory_limit;     /* net growth allowed (main state only); 0: none */
  const atomic_int *abort; /* another thread sets it to interrupt; NULL: none */
  int signals;             /* 1: a pending SIGINT/SIGTERM interrupts (main state) */
  /* Set by the call. */
  int why;                 /* LKIN_CL_*: what cut the call */
  char where[160];         /* " at file:line" where the hook cut it, or "" */
  /* Private. */
  uint64_t deadline_ns, sig_checked_ns;
  int nraises, hooked;
  ptrdiff_t mem_used;
  struct lkin_call_limit *prev;
  lua_Hook prev_hook;
  int prev_mask, prev_count;
} lkin_call_limit;

/* Where a state keeps its current limit: the main state's allocator
 * wrapper and each worker state (worker_state.c) hold one. */
typedef struct lkin_call_limit_slot {
  lkin_call_limit *cur;  /* the innermost limited call, or NULL */
  lkin_call_limit fixed; /* lkin_call_limit_set's record */
} lkin_call_limit_slot;

/* Tells the hook how to find the slot of a worker state: states whose
 * allocator is f keep their slot at slot(ud) (worker_state.c registers
 * its allocator before it builds the first state). Any thread; the last
 * registration wins (there is one). */
void lkin_call_limit_register(lua_Alloc f, lkin_call_limit_slot *(*slot)(void *ud));

/* Wraps L's allocator with the accounting one (once per state; a worker
 * state is left alone). Never raises. Call on L's thread before any
 * limited call in it, while no other thread uses L. */
void lkin_call_limit_wrap_alloc(lua_State *L);

/* Starts the limited call cl on L: computes the deadline (the earlier of
 * cl's and an enclosing limited call's), installs the count hook (keeping
 * the one in place, restored by _end) and makes cl L's current limit.
 * Never raises, never allocates. A state with no slot (not the binding's)
 * gets the hook with nothing to check: no limit. */
void lkin_call_limit_begin(lua_State *L, lkin_call_limit *cl);
/* Ends it: restores the previous hook and limit. Call after the protected
 * call returned, before reading cl->why. Never raises. */
void lkin_call_limit_end(lua_State *L, lkin_call_limit *cl);

/* Writes the message of a cut call ("<what> <name> exceeded its time limit
 * of 10s (option handler_timeout)") into buf; returns buf, or NULL when
 * cl->why is LKIN_CL_NONE. */
const char *lkin_call_limit_message(const lkin_call_limit *cl, char *buf, size_t len);

/* Records for L a deadline (CLOCK_MONOTONIC ns, 0: none) and an abort
 * flag (NULL: none) that os.execute/io.popen honour, without a hook:
 * what a reconcile calls around the reconciler (0, NULL after it). A
 * limited call in progress keeps its own. Never raises. */
void lkin_call_limit_set(lua_State *L, uint64_t deadline_ns, const atomic_int *abort);

/* The deadline (0: none) and abort flag (NULL: none) in force for L now:
 * the innermost limited call's, else lkin_call_limit_set's. Returns 1 when
 * either is set, 0 when neither. Never raises. */
int lkin_call_limit_current(lua_State *L, uint64_t *deadline_ns, const atomic_int **abort,
                            const char **what);

/* The record in force for L (the innermost limited call, else
 * lkin_call_limit_set's, whose what is "reconcile"), or NULL when L has
 * no slot. Its why may be set by the caller that cut the call in C (an
 * os.execute killed at the deadline). Never raises. */
lkin_call_limit *lkin_call_limit_active(lua_State *L);

/* CLOCK_MONOTONIC in ns. */
uint64_t lkin_mono_ns(void);
/* 1 when SIGINT or SIGTERM is pending for the process or the thread. */
int lkin_term_signal_pending(void);

/* Registers core.limited_call (below) in the table at the top of L. */
void lkin_open_call_limit(lua_State *L);

#endif
