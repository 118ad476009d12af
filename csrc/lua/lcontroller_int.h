/* lcontroller_int.h -- internal to the Lua controller (lcontroller.c, the
 * type and its workers; lcontroller_hook.c, the count hook that stops Lua
 * code once the core's reconcile slot says so; lcontroller_spec.c, building the watches,
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

/* The Lua side of a worker (the core's reconcile slot, its deadline and
 * the watchdog are in csrc/core/controller/worker_slot.h): the worker
 * state's lkin_ws_user, read by the count hook on the worker's thread.
 * interrupted, nraises and where are the worker thread's own. */
typedef struct {
  lctl *p;
  int worker;           /* 0-based */
  int interrupted;      /* the hook raised: KIN_INTERRUPT_DEADLINE or _SHUTDOWN */
  int nraises;
  char where[160];      /* " at mod.lua:12": where the hook first raised */
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
  uint64_t timeout_ns;    /* reconcile_timeout; 0: none (the core enforces it) */
  wslot *slots;           /* one per worker */
  int slots_init;         /* how many slots are initialised */
};

/* ---- lcontroller_hook.c ------------------------------------------------------ */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t lctl_mono_ns(void);
/* The count hook armed around a reconcile (the wslot is the worker state's
 * lkin_ws_user): raises once kin_controller_interrupted says the worker's
 * deadline or the shutdown's abort time passed. */
void lctl_interrupt_hook(lua_State *L, lua_Debug *ar);

/* ---- lcontroller_spec.c ----------------------------------------------------- */

/* The spec's rate_limiter (the table at index spec; its token bucket on
 * clock, NULL: the real one), or NULL for the default. Raises on a bad
 * one. */
kin_rate_limiter *lctl_make_rate_limiter(lua_State *L, int spec, kin_clock *clock);
/* Adds watch number wi (the table at w) to p. Raises on misuse; p owns
 * whatever was built so far, so nothing leaks. */
/* spec.sharded = true (kinformer.sharding): gives p's controller the env's
 * shard gate and the cache of its For informer (spec.watches[1], kind
 * "object") for the gate's key lookups. Before any watch is added; raises
 * on misuse. */
void lctl_set_shard(lua_State *L, lctl *p, int spec);
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

/* ---- lcontroller_call.c: the call of the code in a worker state ------------- */

/* Pushes the closure that calls p's code in this worker state (under the
 * caller's pcall): reconcile 1: f(fn, worker, namespace, name, key) ->
 * fn(req, ctx), two results; 0: f(fn, obj) -> fn(obj, ctx), one result
 * (a map function). */
void lctl_push_call(lua_State *L, lctl *p, int reconcile);

/* ---- lcontroller_why.c ------------------------------------------------------ */

/* ctl:why(key): pushes key's history of c as a list (see the file) and
 * returns 1, or nil, msg, code (out of memory) and returns 3. */
int lctl_push_why(lua_State *L, kin_controller *c, const char *key);

/* ---- lcontroller_queue.c ---------------------------------------------------- */

/* ctl:queue([max]): pushes up to max (< 0: all) of c's queued items as a
 * list and the smallest due_in of the waiting ones (or nil); returns 2. */
int lctl_push_queue(lua_State *L, kin_controller *c, lua_Integer max);

#endif
