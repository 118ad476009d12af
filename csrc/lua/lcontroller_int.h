/* lcontroller_int.h -- internal to the Lua controller (lcontroller.c, the
 * type and its workers; lcontroller_watchdog.c, the reconcile deadline
 * watchdog and count hook; lcontroller_spec.c, building the watches,
 * predicates and rate limiter from the spec; lcontroller_reload.c,
 * ctl:reload). Not for other files. */
#ifndef LKIN_CONTROLLER_INT_H
#define LKIN_CONTROLLER_INT_H

#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "controller.h"
#include "lcontroller.h"
#include "lenv_core.h"
#include "rest_client.h"
#include "worker_state.h"

/* Instructions between two checks of the interrupt hook. */
#define HOOK_COUNT 1000
/* How long ctl:close() / __gc lets in-flight reconciles run before
 * interrupting them (the manager's default shutdown_timeout). */
#define CLOSE_GRACE_S 30.0

typedef struct lctl lctl;

/* What a worker is doing, for the watchdog and ctl:busy(). mu guards busy,
 * key, start_ns, deadline_ns and fired; the canceler has its own lock
 * (taken under mu: mu > cx.mu > the IO engine's lock). abort is read by
 * the interrupt hook on the worker's thread. interrupted, nraises and
 * timeout are the worker thread's own. */
typedef struct {
  pthread_mutex_t mu;
  int busy;
  char key[256];        /* truncated copy, for messages */
  uint64_t start_ns;    /* CLOCK_MONOTONIC */
  uint64_t deadline_ns; /* 0: no reconcile_timeout */
  int fired;            /* the canceler was fired for this reconcile */
  kin_io_canceler cx;   /* the REST calls of the current reconcile */
  atomic_int abort;     /* shutdown: interrupt whatever runs */
  int interrupted;      /* the hook raised: 1 deadline, 2 shutdown */
  int nraises;
  char where[160];      /* "mod.lua:12": where the hook first raised */
  atomic_size_t mem;    /* the worker state's bytes after its start and each
                           reconcile, 0 once closed: written by the worker,
                           read by the metrics collector */
  unsigned gen;         /* the worker thread's own: lctl.gen its state was
                           built at (ctl:reload, lcontroller_reload.c) */
} wslot;

/* One map watch: its code and the state of its listener thread. */
typedef struct {
  lctl *ctl;
  lkin_ws_template *tmpl; /* owned; ctl->mu guards it (ctl:reload swaps it) */
  lkin_ws *ws;            /* owned by the listener thread (on_start..on_stop) */
  unsigned gen;           /* the listener thread's own: ctl->gen of ws */
  char *label;            /* "map v1/configmaps", for log lines */
} lmap;

/* Immutable after env:controller returns except where noted. */
struct lctl {
  kin_controller *c;      /* owned */
  int metrics_id;         /* its collectors in kin_metrics_default() (controller-runtime's */
  int lua_metrics_id;     /* series; kinformer_reconcile_*); <= 0: none */
  int admin_id;           /* its entry in the admin registry (admin.h); <= 0: none */
  lkin_env *env;          /* one reference */
  lkin_push_env_fn *push_env; /* pushes env's userdata in worker states */
  lkin_ws_template *tmpl; /* the reconciler; owned; mu guards it (written by
                             ctl:reload on the main thread, read by workers) */
  atomic_uint gen;        /* bumped by each ctl:reload: states built at an
                             older one are rebuilt before their next call */
  char *name;
  char *ctx_module;       /* spec.ctx: require(it).for_request builds a ctx */
  char *for_resource;     /* spec.for_resource ("" when none): the ctx's, for
                             ctx:ensure's owner and the lifecycle helpers */
  int workers;
  lkin_ws **ws;           /* ws[i] belongs to worker thread i while it runs */
  lmap **maps;            /* owned; freed after c is stopped */
  size_t nmaps;
  pthread_mutex_t mu;     /* guards start_err, tmpl and the maps' tmpl */
  char *start_err;        /* the first on_worker_start failure */
  uint64_t timeout_ns;    /* reconcile_timeout; 0: none */
  uint64_t busy_warn_ns;  /* busy_warning_after; 0: never */
  wslot *slots;           /* one per worker */
  int slots_init;         /* how many slots are initialised */
  atomic_ullong timeouts;   /* reconciles interrupted at their deadline */
  atomic_ullong interrupts; /* reconciles interrupted by a shutdown */
  /* the watchdog thread: wd_mu guards wd_quit, abort_at, warned */
  pthread_mutex_t wd_mu;
  pthread_cond_t wd_cond;   /* CLOCK_MONOTONIC */
  pthread_t wd;
  int wd_running;           /* owner thread only */
  int wd_quit;
  uint64_t abort_at;        /* shutdown: interrupt reconciles from then on; 0: never */
  int warned;               /* a busy warning was logged for this episode */
};

/* ---- lcontroller_watchdog.c ----------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t lctl_mono_ns(void);
/* The count hook armed around a reconcile (the slot is the worker state's
 * lkin_ws_user): raises once the deadline or the shutdown's abort time
 * passed. */
void lctl_interrupt_hook(lua_State *L, lua_Debug *ar);
/* Starts the watchdog thread (owner thread). Returns 0 or a KIN_E* error. */
int lctl_watchdog_start(lctl *p);
/* Stops and joins it; no-op when not running. */
void lctl_watchdog_stop(lctl *p);
/* Interrupt what still runs `after_s` seconds from now (keeps an earlier
 * time). */
void lctl_arm_abort(lctl *p, double after_s);

/* ---- lcontroller_spec.c ----------------------------------------------------- */

/* The spec's rate_limiter (the table at index spec; its token bucket on
 * clock, NULL: the real one), or NULL for the default. Raises on a bad
 * one. */
kin_rate_limiter *lctl_make_rate_limiter(lua_State *L, int spec, kin_clock *clock);
/* Adds watch number wi (the table at w) to p. Raises on misuse; p owns
 * whatever was built so far, so nothing leaks. */
void lctl_add_watch(lua_State *L, lctl *p, int w, int wi);

/* ---- lcontroller_reload.c: ctl:reload ------------------------------------- */

/* A new reference to the reconciler's current template (any thread). */
lkin_ws_template *lctl_tmpl(lctl *p);
/* The same for a map watch's template. */
lkin_ws_template *lctl_map_tmpl(lmap *m);
/* Worker thread `worker`, between reconciles: when ctl:reload ran since
 * its state was built, builds a state from the current template and
 * swaps it in; when that fails, logs it and keeps the old state (and
 * code). Never raises. */
void lctl_refresh_worker(lctl *p, int worker);
/* The same for a map watch, on its listener thread. */
void lctl_refresh_map(lmap *m);
/* ctl:reload([code]) for p (the userdata at 1, code at 2): see
 * lcontroller_reload.c. Pushes true, or nil, msg, "EINVAL" when the new
 * code fails to load (the old code keeps running); misuse raises. */
int lctl_reload(lua_State *L, lctl *p);

/* ---- lcontroller.c: the map watches' callbacks (kin_handler_config) ------- */

int lctl_map_fn(void *ud, kin_obj *obj, kin_request_emit_fn emit, void *ectx);
int lctl_map_start(void *ud);
void lctl_map_stop(void *ud);

/* ---- lcontroller_why.c ------------------------------------------------------ */

/* ctl:why(key): pushes key's history of c as a list (see the file) and
 * returns 1, or nil, msg, code (out of memory) and returns 3. */
int lctl_push_why(lua_State *L, kin_controller *c, const char *key);

/* ---- lcontroller_queue.c ---------------------------------------------------- */

/* ctl:queue([max]): pushes up to max (< 0: all) of c's queued items as a
 * list and the smallest due_in of the waiting ones (or nil); returns 2. */
int lctl_push_queue(lua_State *L, kin_controller *c, lua_Integer max);

#endif
