/* lcontroller.c -- kinformer.controller (lcontroller.h): env:controller(spec)
 * (lenv.c calls lkin_controller_new) builds a
 * kin_controller (controller.h) whose watches enqueue in C and whose
 * workers each run the reconciler in their own worker state.
 *
 * The spec (the normalised one lua/kinformer/controller.lua builds) is read
 * here and in lcontroller_spec.c (watches, predicates, rate limiter); the
 * count hook that stops Lua code at the reconcile deadline lives in
 * lcontroller_hook.c (the deadline itself, the watchdog and the busy
 * warning in the core's controller, worker_slot.h); lcontroller_int.h
 * holds the shared types.
 *
 * Calls into Lua: reconcile(req, ctx) with req = {namespace=, name=, key=}
 * and ctx = for_request(env, controller, worker (1-based), req, for resource), the
 * constructor of the module the spec names (spec.ctx: kinformer.ctx, set by
 * controller.lua); map(obj, ctx) with ctx over {controller=},
 * returning a list of {namespace=, name=}. Results map to kin_result_action
 * as lresult.h (the one owner of those rules) says; a raised non-terminal
 * error also counts as a panic (reconcile_panics) and is logged with its
 * traceback.
 *
 * Deadlines (issue 12; the core's controller.h): a reconcile cut at
 * spec.reconcile_timeout or by a shutdown's timeout is logged once by the
 * core (controller, key, limit, duration, where the hook stopped it),
 * counted (stats().reconcile_timeouts / reconcile_interrupts) and retried
 * with the key's backoff; the state is kept (the hook is removed after
 * the call). The reconcile's kin_call_ctx (deadline, canceler, the
 * history's write observer, the leadership fence and the epoch open when
 * the reconcile started) is the worker state's current call while the
 * reconciler runs (lkin_set_call_ctx), so its client calls carry it.
 *
 * Threads: the controller's workers call reconcile (each owns the state
 * in lctl.ws[i], built in on_worker_start and closed in on_worker_stop);
 * the informers' listener threads run the map functions (each map watch
 * owns lmap.ws, built in the listener's on_start). The main state owns the
 * userdata: start/stop/free happen there, never from a reconcile. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "kin.h"
#include "laux.h"
#include "lclient.h"
#include "lcontroller_int.h"
#include "log.h"
#include "lresult.h"
#include "metrics_collectors.h"

#define CONTROLLER_MT "kinformer.controller"
static const lkin_type controller_type; /* at the end, with the methods */
/* Registry keys looked up on every reconcile: light userdata of these
 * addresses (lua_rawgetp), no string interning or comparison. */
static const char do_call_key;  /* its do_call closure */

typedef struct {
  lctl *p; /* NULL once closed */
} lctl_ud;

/* ---- inside worker states ---------------------------------------------- */

/* Message handler: terminal errors stay intact (the caller tells them
 * apart); anything else becomes its text with a traceback. */
static int msgh(lua_State *L) {
  if (lkin_is_terminal(L, 1)) return 1;
  const char *msg = lkin_push_error_text(L, 1);
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Pushes the worker's code as a function: the code itself, or its field
 * `field` when it is a table. Returns 0, or KIN_ENOENT with a message
 * pushed instead. */
static int push_code(lua_State *L, const char *field, const char *what) {
  if (lkin_ws_push_function(L, NULL) == 0) return 0;
  lua_pop(L, 1);
  if (lkin_ws_push_function(L, field) == 0) return 0;
  lua_pushfstring(L, "%s: %s (return a function, or a table with a function '%s')", what,
                  lua_tostring(L, -1), field);
  lua_remove(L, -2);
  return KIN_ENOENT;
}

/* Copies the string at i into a malloc'd string (NULL when out of memory;
 * the caller reports that). */
static char *dup_top(lua_State *L, int i) {
  const char *s = lua_tostring(L, i);
  return strdup(s ? s : "(no message)");
}

/* ---- reconcile ----------------------------------------------------------- */

typedef struct {
  lctl *p;
  int worker;
  const kin_request *req;
  const kin_call_ctx *ctx; /* the worker state's current call during the pcall */
  kin_result_action *out;
  int raised;  /* a non-terminal error was raised: counted as a panic */
  char *msg;   /* full error text (with traceback when raised), malloc'd */
} reconcile_call;

/* Runs in the worker's state under lkin_ws_protect. */
static int run_reconcile(lua_State *L) {
  reconcile_call *rc = lua_touserdata(L, 1);
  lctl *p = rc->p;
  lua_settop(L, 0);
  luaL_checkstack(L, 12, NULL);
  lua_pushcfunction(L, msgh); /* 1 */
  /* the do_call closure over this state's env, made once per state */
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &do_call_key) != LUA_TFUNCTION) {
    lua_pop(L, 1);
    lctl_push_call(L, p, 1);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &do_call_key);
  } /* 2 */
  if (push_code(L, "reconcile", "reconciler") < 0) {
    rc->out->kind = KIN_RESULT_ERROR;
    rc->raised = 1;
    rc->msg = dup_top(L, -1);
    return 0;
  }
  lua_pushinteger(L, rc->worker + 1);
  lua_pushstring(L, rc->req->ns);
  lua_pushstring(L, rc->req->name);
  lua_pushstring(L, rc->req->key);
  lkin_set_call_ctx(L, rc->ctx);
  lkin_call_limit_set(L, rc->ctx->deadline_ns, kin_controller_abort_flag(p->c, rc->worker));
  lua_sethook(L, lctl_interrupt_hook, LUA_MASKCOUNT, HOOK_COUNT);
  int st = lua_pcall(L, 5, 2, 1);
  lua_sethook(L, NULL, 0, 0);
  lkin_set_call_ctx(L, NULL);
  int text = 0;
  if (st != LUA_OK) {
    text = lkin_result_of_raise(L, -1, rc->out);
    rc->raised = rc->out->kind == KIN_RESULT_ERROR;
  } else {
    text = lkin_result_of_return(L, lua_gettop(L) - 1, rc->out);
  }
  if (text && !(rc->msg = dup_top(L, text))) return luaL_error(L, "not enough memory");
  return 0;
}

/* Copies the first line of msg into the action's message. */
static void set_message(kin_result_action *out, const char *msg) {
  size_t n = strcspn(msg, "\n");
  if (n >= sizeof(out->message)) n = sizeof(out->message) - 1;
  memcpy(out->message, msg, n);
  out->message[n] = 0;
}

static int reconcile_body(lctl *p, int worker, const kin_request *req, const kin_call_ctx *ctx,
                          kin_result_action *out);

/* kin_reconcile_fn: worker thread `worker`. Runs the reconciler under the
 * count hook with ctx as the state's current call; a reconcile the hook
 * stopped says so (interrupted, where) for the core to log and count. */
static int reconcile(void *ud, int worker, const kin_request *req, const kin_call_ctx *ctx,
                     kin_result_action *out) {
  lctl *p = ud;
  wslot *s = &p->slots[worker];
  lctl_refresh_worker(p, worker); /* after a ctl:reload: the new code (not timed) */
  s->interrupted = 0;
  s->nraises = 0;
  s->where[0] = 0;
  int raised = reconcile_body(p, worker, req, ctx, out);
  if (s->interrupted) {
    out->interrupted = s->interrupted;
    snprintf(out->where, sizeof(out->where), "%s", s->where);
  }
  return raised;
}

/* Runs the reconciler in the worker's state; returns 1 when it raised. */
static int reconcile_body(lctl *p, int worker, const kin_request *req, const kin_call_ctx *ctx,
                          kin_result_action *out) {
  reconcile_call rc = {p, worker, req, ctx, out, 0, NULL};
  char *err = NULL;
  int r = lkin_ws_protect(p->ws[worker], run_reconcile, &rc, &err);
  atomic_store_explicit(&p->slots[worker].mem, lkin_ws_memory(p->ws[worker]),
                        memory_order_relaxed);
  if (r < 0) {
    /* run_reconcile itself failed: out of memory (the state was rebuilt) */
    out->kind = KIN_RESULT_ERROR;
    kin_log(KIN_LOG_ERROR, "controller", "%s: Reconciler error for %s (worker %d): %s", p->name,
            req->key, worker + 1, err ? err : "not enough memory");
    out->logged = 1;
    set_message(out, err ? err : "not enough memory");
    free(err);
    free(rc.msg);
    return 1;
  }
  free(err);
  if (rc.msg) {
    if (rc.raised && strchr(rc.msg, '\n') && !p->slots[worker].interrupted) {
      /* the traceback does not fit the action's message: log it whole, once */
      kin_log(KIN_LOG_ERROR, "controller", "%s: Reconciler error for %s: %s", p->name, req->key,
              rc.msg);
      out->logged = 1;
    }
    set_message(out, rc.msg);
    free(rc.msg);
  }
  return rc.raised;
}

static int worker_start(void *ud, int worker) {
  lctl *p = ud;
  char label[256], *err = NULL;
  snprintf(label, sizeof(label), "controller %s worker %d", p->name, worker + 1);
  p->slots[worker].gen = atomic_load(&p->gen);
  lkin_ws_template *t = lctl_tmpl(p);
  int rc = lkin_ws_open(t, label, &p->ws[worker], &err);
  lkin_ws_template_unref(t);
  if (rc == 0) {
    lkin_ws_set_user(p->ws[worker], &p->slots[worker]);
    atomic_store_explicit(&p->slots[worker].mem, lkin_ws_memory(p->ws[worker]),
                          memory_order_relaxed);
  }
  if (rc < 0) {
    kin_log(KIN_LOG_ERROR, "controller", "%s: %s", label, err ? err : "not enough memory");
    pthread_mutex_lock(&p->mu);
    if (!p->start_err && err) {
      p->start_err = err;
      err = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    free(err);
    return rc;
  }
  return 0;
}

static void worker_stop(void *ud, int worker) {
  lctl *p = ud;
  lkin_ws_close(p->ws[worker]);
  p->ws[worker] = NULL;
  atomic_store_explicit(&p->slots[worker].mem, 0, memory_order_relaxed);
}

/* ---- map functions (listener threads) ------------------------------------ */

typedef struct {
  lmap *m;
  kin_obj *obj;
  kin_request_emit_fn emit;
  void *ectx;
  int emit_rc;
  char *msg; /* error text, malloc'd */
} map_call;

static int run_map(lua_State *L) {
  map_call *mc = lua_touserdata(L, 1);
  lmap *m = mc->m;
  lua_settop(L, 0);
  luaL_checkstack(L, 12, NULL);
  lua_pushcfunction(L, msgh); /* 1 */
  lctl_push_call(L, m->ctl, 0);
  if (push_code(L, "map", "map function") < 0) {
    mc->msg = dup_top(L, -1);
    return 0;
  }
  lkin_ws_push_object(L, mc->obj);
  if (lua_pcall(L, 2, 1, 1) != LUA_OK) {
    if (!lua_isstring(L, -1)) lkin_push_error_text(L, -1);
    mc->msg = dup_top(L, -1);
    return 0;
  }
  int list = lua_gettop(L);
  if (lua_isnil(L, list)) return 0;
  if (!lua_istable(L, list)) {
    lua_pushfstring(L, "returned a %s; return a list of {namespace =, name =}",
                    luaL_typename(L, list));
    mc->msg = dup_top(L, -1);
    return 0;
  }
  lua_Integer n = luaL_len(L, list);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, list, i);
    const char *ns = NULL, *name = NULL;
    if (lua_istable(L, -1)) {
      lua_getfield(L, -1, "namespace");
      lua_getfield(L, -2, "name");
      ns = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
      name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    }
    if (!name || !*name) {
      lua_pushfstring(L, "request #%d is not a {namespace =, name =} table", (int)i);
      mc->msg = dup_top(L, -1);
      return 0;
    }
    int rc = mc->emit(mc->ectx, ns, name);
    if (rc < 0 && !mc->emit_rc) mc->emit_rc = rc;
    lua_settop(L, list);
  }
  return 0;
}

int lctl_map_fn(void *ud, kin_obj *obj, kin_request_emit_fn emit, void *ectx) {
  lmap *m = ud;
  if (!m->ws) return KIN_ECLOSED;
  lctl_refresh_map(m); /* after a ctl:reload: the new code */
  map_call mc = {m, obj, emit, ectx, 0, NULL};
  char *err = NULL;
  int rc = lkin_ws_protect(m->ws, run_map, &mc, &err);
  if (rc < 0 || mc.msg) {
    const char *msg = mc.msg ? mc.msg : err ? err : "not enough memory";
    kin_log(KIN_LOG_ERROR, "controller", "%s: %s for %s failed: %s", m->ctl->name, m->label,
            kin_obj_key(obj) ? kin_obj_key(obj) : "?", msg);
    if (rc == 0) rc = KIN_EINVAL;
  }
  free(mc.msg);
  free(err);
  return rc < 0 ? rc : mc.emit_rc;
}

int lctl_map_start(void *ud) {
  lmap *m = ud;
  char label[300], *err = NULL;
  snprintf(label, sizeof(label), "controller %s %s", m->ctl->name, m->label);
  m->gen = atomic_load(&m->ctl->gen);
  lkin_ws_template *t = lctl_map_tmpl(m);
  int rc = lkin_ws_open(t, label, &m->ws, &err);
  lkin_ws_template_unref(t);
  if (rc < 0) {
    kin_log(KIN_LOG_ERROR, "controller", "%s: %s", label, err ? err : "not enough memory");
    free(err);
    return 1;
  }
  return 0;
}

void lctl_map_stop(void *ud) {
  lmap *m = ud;
  lkin_ws_close(m->ws);
  m->ws = NULL;
}

static void map_free(lmap *m) {
  if (!m) return;
  lkin_ws_template_unref(m->tmpl);
  free(m->label);
  free(m);
}


/* The watchdog's counters as kinformer_reconcile_timeouts_total and
 * kinformer_reconcile_interrupts_total{controller}, and each worker
 * state's memory as kinformer_lua_state_memory_bytes{controller,worker},
 * read at scrape time (a metrics collector: the scraping thread, the
 * registry's lock held). */
static void collect_lctl(void *ud, kin_metrics_sink *s) {
  lctl *p = ud;
  static const char *const cl[] = {"controller"};
  const char *cv[] = {p->name};
  kin_controller_stats st;
  kin_controller_get_stats(p->c, &st);
  kin_metrics_emit(s, "kinformer_reconcile_timeouts_total",
                   "Reconciles interrupted at their reconcile_timeout", KIN_METRIC_COUNTER, cl, cv,
                   1, (double)st.reconcile_timeouts);
  kin_metrics_emit(s, "kinformer_reconcile_interrupts_total",
                   "Reconciles interrupted by a shutdown after shutdown_timeout",
                   KIN_METRIC_COUNTER, cl, cv, 1, (double)st.reconcile_interrupts);
  static const char *const wl[] = {"controller", "worker"};
  for (int i = 0; i < p->slots_init; i++) {
    char w[16];
    snprintf(w, sizeof w, "%d", i + 1);
    const char *wv[] = {p->name, w};
    kin_metrics_emit(s, "kinformer_lua_state_memory_bytes",
                     "Memory of a controller worker's Lua state after its last reconcile "
                     "(0: not running)",
                     KIN_METRIC_GAUGE, wl, wv, 2,
                     (double)atomic_load_explicit(&p->slots[i].mem, memory_order_relaxed));
  }
}

static void lctl_free(lctl *p) {
  if (!p) return;
  /* like ctl:stop(30): a reconcile that never returns must not keep a
   * close (or the __gc at lua_close) waiting forever */
  if (p->c) kin_controller_abort_after(p->c, (uint64_t)(CLOSE_GRACE_S * 1e9));
  kin_metrics_remove_collector(kin_metrics_default(), p->metrics_id); /* before the free */
  kin_metrics_remove_collector(kin_metrics_default(), p->lua_metrics_id);
  kin_admin_remove(p->admin_id); /* before the free too */
  kin_controller_free(p->c); /* joins workers, watchdog and listeners: states closed */
  free(p->slots);
  for (size_t i = 0; i < p->nmaps; i++) map_free(p->maps[i]);
  free(p->maps);
  free(p->ws);
  lkin_ws_template_unref(p->tmpl);
  free(p->name);
  free(p->ctx_module);
  free(p->for_resource);
  free(p->start_err);
  pthread_mutex_destroy(&p->mu);
  if (p->env) lkin_env_unref(p->env);
  free(p);
}

static lctl *check_ctl(lua_State *L) {
  lctl_ud *u = luaL_checkudata(L, 1, CONTROLLER_MT);
  luaL_argcheck(L, u->p != NULL, 1, "controller is closed");
  return u->p;
}


int lkin_controller_new(lua_State *L, lkin_env *env, lkin_push_env_fn *push_env) {
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_settop(L, 2);
  lctl_ud *u = lua_newuserdatauv(L, sizeof(*u), 0); /* 3 */
  u->p = NULL;
  lkin_setmetatable(L, &controller_type);
  lctl *p = calloc(1, sizeof(*p));
  if (!p) return luaL_error(L, "not enough memory");
  pthread_mutex_init(&p->mu, NULL);
  u->p = p;
  p->env = lkin_env_ref(env);
  p->push_env = push_env;

  const char *name = lkin_opt_string(L, 2, "name");
  luaL_argcheck(L, name && *name, 2, "controller spec: name required");
  if (!(p->name = strdup(name))) return luaL_error(L, "not enough memory");
  const char *ctx_module = lkin_opt_string(L, 2, "ctx");
  luaL_argcheck(L, ctx_module && *ctx_module, 2, "controller spec: ctx (a module name) required");
  if (!(p->ctx_module = strdup(ctx_module))) return luaL_error(L, "not enough memory");
  const char *for_res = lkin_opt_string(L, 2, "for_resource");
  if (!(p->for_resource = strdup(for_res ? for_res : ""))) return luaL_error(L, "not enough memory");
  lua_Number workers = lkin_opt_number(L, 2, "workers", 1);
  luaL_argcheck(L, workers >= 1 && workers <= 1024, 2, "controller spec: workers must be 1..1024");
  p->workers = (int)workers;
  lua_Number mem = lkin_opt_number(L, 2, "memory_limit", 0);
  luaL_argcheck(L, mem == 0 || (mem >= (lua_Number)LKIN_WS_MIN_MEMORY_LIMIT && mem < 1e15), 2,
                lua_pushfstring(L, "controller spec: memory_limit must be at least %d bytes",
                                (int)LKIN_WS_MIN_MEMORY_LIMIT));
  if (!(p->ws = calloc((size_t)p->workers, sizeof(*p->ws)))) return luaL_error(L, "not enough memory");
  lua_Number rt = lkin_opt_number(L, 2, "reconcile_timeout", 0);
  luaL_argcheck(L, rt >= 0 && rt < 1e9, 2,
                "controller spec: reconcile_timeout must be a number of seconds >= 0");
  p->timeout_ns = (uint64_t)(rt * 1e9);
  lua_Number bw = lkin_opt_number(L, 2, "busy_warning_after", 60);
  /* priority_queue = false: client-go's FIFO (default: controller-runtime's
   * priority queue) */
  lua_getfield(L, 2, "priority_queue");
  luaL_argcheck(L, lua_isnil(L, -1) || lua_isboolean(L, -1), 2,
                "controller spec: priority_queue must be a boolean");
  int fifo = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
  lua_pop(L, 1);
  luaL_argcheck(L, bw >= 0 && bw < 1e9, 2,
                "controller spec: busy_warning_after must be a number of seconds >= 0");
  /* the leadership fence (NULL without leader election): each reconcile
   * writes under the epoch open when it started */
  const kin_fence *fence = lkin_env_fence(env);
  if (!(p->slots = calloc((size_t)p->workers, sizeof(*p->slots))))
    return luaL_error(L, "not enough memory");
  for (; p->slots_init < p->workers; p->slots_init++) {
    wslot *s = &p->slots[p->slots_init];
    s->p = p;
    s->worker = p->slots_init;
    atomic_init(&s->mem, 0);
  }
  lua_getfield(L, 2, "reconciler");
  luaL_argcheck(L, !lua_isnil(L, -1), 2, "controller spec: reconciler required");
  p->tmpl = lkin_ws_template_new(L, lua_gettop(L), "reconciler", (size_t)mem);
  lua_pop(L, 1);

  kin_controller_config cfg = {.name = p->name,
                               .workers = p->workers,
                               .reconcile = reconcile,
                               .on_worker_start = worker_start,
                               .on_worker_stop = worker_stop,
                               .ud = p,
                               /* the env's fake clock, if any (lenv.c: what stays real) */
                               .clock = env->clock,
                               .rate_limiter = lctl_make_rate_limiter(L, 2, env->clock),
                               .reconcile_timeout_ns = p->timeout_ns,
                               .busy_warning_after_ns = (uint64_t)(bw * 1e9),
                               .fence = fence,
                               .fifo = fifo};
  sigset_t old_mask; /* the queue's waiting thread starts here */
  lkin_signals_block_all(&old_mask);
  int rc = kin_controller_new(&cfg, &p->c);
  lkin_signals_restore(&old_mask);
  if (rc < 0) return luaL_error(L, "controller %s: %s", p->name, kin_strerror(rc));
  p->metrics_id = kin_metrics_add_controller(kin_metrics_default(), p->c);
  p->lua_metrics_id = kin_metrics_add_collector(kin_metrics_default(), collect_lctl, p, NULL);
  p->admin_id = kin_admin_add_controller(p->c);

  lctl_set_shard(L, p, 2); /* before the watches: their handlers take the gate */
  if (lua_getfield(L, 2, "watches") != LUA_TNIL) {
    luaL_argcheck(L, lua_istable(L, -1), 2, "controller spec: watches must be a list");
    int ws = lua_gettop(L);
    lua_Integer n = luaL_len(L, ws);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, ws, i);
      if (!lua_istable(L, -1)) luaL_error(L, "controller spec: watch #%d is not a table", (int)i);
      lctl_add_watch(L, p, lua_gettop(L), (int)i);
      lua_pop(L, 1);
    }
  }
  lua_settop(L, 3);
  return 1;
}

/* ---- methods ------------------------------------------------------------ */

/* ctl:start() -> true | nil, msg, code. Waits for the watched caches, then
 * starts the workers (each builds its state). */
static int ctl_start(lua_State *L) {
  lctl *p = check_ctl(L);
  /* a fence the leader election made after env:controller (see below) */
  const kin_fence *fence = lkin_env_fence(p->env);
  if (fence) kin_controller_set_fence(p->c, fence); /* KIN_EBUSY once started: kept */
  sigset_t old_mask; /* new threads (workers, watchdog) must not take SIGINT/SIGTERM */
  lkin_signals_block_all(&old_mask);
  int rc = kin_controller_start(p->c);
  lkin_signals_restore(&old_mask);
  if (rc == 0) {
    lua_pushboolean(L, 1);
    return 1;
  }
  pthread_mutex_lock(&p->mu);
  char *why = p->start_err;
  p->start_err = NULL;
  pthread_mutex_unlock(&p->mu);
  lua_pushnil(L);
  if (why) lua_pushfstring(L, "controller %s: a worker failed to start: %s", p->name, why);
  else if (rc == KIN_EBUSY) lua_pushfstring(L, "controller %s: already started", p->name);
  else if (rc == KIN_ECLOSED) lua_pushfstring(L, "controller %s: stopped", p->name);
  else lua_pushfstring(L, "controller %s: %s", p->name, kin_strerror(rc));
  lua_pushstring(L, lkin_errname(rc));
  free(why);
  return 3;
}

/* Reads an optional timeout in seconds at i (nil: none, returns -1). */
static double opt_timeout(lua_State *L, int i) {
  if (lua_isnoneornil(L, i)) return -1;
  double t = luaL_checknumber(L, i);
  luaL_argcheck(L, t >= 0 && t < 1e9, i, "timeout must be a number of seconds >= 0");
  return t;
}

/* ctl:stop([timeout_s]): in-flight reconciles finish, queued requests are
 * dropped, watches removed, workers joined. With timeout_s, what still
 * runs after it (counted from now, or from an earlier ctl:shutdown) is
 * interrupted: the hook raises in its Lua code, its REST call is
 * cancelled. Idempotent. */
static int ctl_stop(lua_State *L) {
  lctl *p = check_ctl(L);
  double t = opt_timeout(L, 2);
  if (t >= 0) kin_controller_abort_after(p->c, (uint64_t)(t * 1e9));
  kin_controller_stop(p->c); /* joins the workers, then the watchdog */
  return 0;
}

/* ctl:shutdown([timeout_s]): stops taking work without waiting: queued
 * requests are dropped and each worker ends after its current reconcile;
 * with timeout_s, reconciles still running then are interrupted. ctl:stop
 * must follow (it joins). Idempotent. */
static int ctl_shutdown(lua_State *L) {
  lctl *p = check_ctl(L);
  double t = opt_timeout(L, 2);
  kin_controller_shutdown(p->c);
  if (t >= 0) kin_controller_abort_after(p->c, (uint64_t)(t * 1e9));
  return 0;
}

/* ctl:busy() -> list of {worker =, key =, seconds =}: the reconciles in
 * flight now. */
static int ctl_busy(lua_State *L) {
  lctl *p = check_ctl(L);
  lua_newtable(L);
  kin_inflight in[64], *fl = p->workers <= 64 ? in : malloc((size_t)p->workers * sizeof(*fl));
  if (!fl) return luaL_error(L, "not enough memory");
  uint64_t now = lctl_mono_ns();
  int n = kin_controller_inflight(p->c, fl, p->workers);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, fl[i].worker + 1);
    lua_setfield(L, -2, "worker");
    lua_pushstring(L, fl[i].key);
    lua_setfield(L, -2, "key");
    lua_pushnumber(L, now > fl[i].start_mono_ns ? (double)(now - fl[i].start_mono_ns) / 1e9 : 0);
    lua_setfield(L, -2, "seconds");
    lua_rawseti(L, -2, i + 1);
  }
  if (fl != in) free(fl);
  return 1;
}

static int ctl_stats(lua_State *L) {
  lctl *p = check_ctl(L);
  kin_controller_stats st;
  kin_controller_get_stats(p->c, &st);
  lua_createtable(L, 0, 14);
#define F(k) (lua_pushinteger(L, (lua_Integer)st.k), lua_setfield(L, -2, #k))
  F(reconcile_success);
  F(reconcile_requeue);
  F(reconcile_requeue_after);
  F(reconcile_errors);
  F(terminal_reconcile_errors);
  F(reconcile_panics);
  F(reconcile_time_count);
  F(active_workers);
  F(max_concurrent_reconciles);
#undef F
  lua_pushnumber(L, st.reconcile_time_sum_seconds);
  lua_setfield(L, -2, "reconcile_time_sum_seconds");
  lua_pushinteger(L, kin_workqueue_len(kin_controller_queue(p->c)));
  lua_setfield(L, -2, "queue_len");
  lua_pushinteger(L, kin_controller_stopping(p->c));
  lua_setfield(L, -2, "stopping");
  lua_pushinteger(L, (lua_Integer)st.reconcile_timeouts);
  lua_setfield(L, -2, "reconcile_timeouts");
  lua_pushinteger(L, (lua_Integer)st.reconcile_interrupts);
  lua_setfield(L, -2, "reconcile_interrupts");
  return 1;
}

/* ctl:enqueue(ns, name) -> true | nil, msg, code. ns nil or "" for a
 * cluster-scoped object. */
static int ctl_enqueue(lua_State *L) {
  lctl *p = check_ctl(L);
  const char *ns = luaL_optstring(L, 2, "");
  const char *name = luaL_checkstring(L, 3);
  luaL_argcheck(L, *name, 3, "name must not be empty");
  int rc = kin_controller_enqueue(p->c, ns, name);
  if (rc < 0) return lkin_fail(L, rc, "enqueue");
  lua_pushboolean(L, 1);
  return 1;
}

/* ctl:enqueue_many(ns, names) -> true | nil, msg, code: ctl:enqueue(ns,
 * name) for each string of the array names, in one C loop (a batch, as the
 * C event handlers enqueue; the benchmarks time the workers, not a Lua
 * loop). Stops at the first failure; names already added stay queued. */
static int ctl_enqueue_many(lua_State *L) {
  lctl *p = check_ctl(L);
  const char *ns = luaL_optstring(L, 2, "");
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 3);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 3, i);
    const char *name = lua_tostring(L, -1);
    if (!name || !*name) return luaL_error(L, "enqueue_many: names[%d] must be a non-empty string", (int)i);
    int rc = kin_controller_enqueue(p->c, ns, name);
    lua_pop(L, 1);
    if (rc < 0) return lkin_fail(L, rc, "enqueue");
  }
  lua_pushboolean(L, 1);
  return 1;
}

/* ctl:why(key) -> the key's history (lcontroller_why.c). */
static int ctl_why(lua_State *L) {
  lctl *p = check_ctl(L);
  return lctl_push_why(L, p->c, luaL_checkstring(L, 2));
}

static int ctl_name(lua_State *L) {
  lua_pushstring(L, check_ctl(L)->name);
  return 1;
}

static int ctl_queue_len(lua_State *L) {
  lua_pushinteger(L, kin_workqueue_len(kin_controller_queue(check_ctl(L)->c)));
  return 1;
}

/* ctl:queue([max]) -> items, next_due (lcontroller_queue.c). */
static int ctl_queue(lua_State *L) {
  lctl *p = check_ctl(L);
  lua_Integer max = luaL_optinteger(L, 2, -1);
  return lctl_push_queue(L, p->c, max);
}

/* __gc / __close / ctl:close(): stops and frees. Idempotent. */
static int ctl_close(lua_State *L) {
  lctl_ud *u = luaL_checkudata(L, 1, CONTROLLER_MT);
  lctl *p = u->p;
  u->p = NULL;
  lctl_free(p);
  return 0;
}

/* ctl:num_requeues(key) -> integer: the key's failures so far, which its
 * backoff grows with (0 once it succeeded or was forgotten). */
static int ctl_num_requeues(lua_State *L) {
  lctl *p = check_ctl(L);
  int n = kin_workqueue_num_requeues(kin_controller_queue(p->c), luaL_checkstring(L, 2));
  lua_pushinteger(L, n < 0 ? 0 : n);
  return 1;
}

/* ctl:reload([code]): lcontroller_reload.c. */
static int ctl_reload(lua_State *L) { return lctl_reload(L, check_ctl(L)); }

static int ctl_tostring(lua_State *L) {
  lctl_ud *u = luaL_checkudata(L, 1, CONTROLLER_MT);
  if (u->p) lua_pushfstring(L, "kinformer.controller (%s)", u->p->name);
  else lua_pushliteral(L, "kinformer.controller (closed)");
  return 1;
}

static const luaL_Reg methods[] = {
    {"start", ctl_start}, {"stop", ctl_stop},   {"stats", ctl_stats},
    {"shutdown", ctl_shutdown}, {"busy", ctl_busy},
    {"enqueue", ctl_enqueue}, {"enqueue_many", ctl_enqueue_many}, {"why", ctl_why}, {"name", ctl_name}, {"queue_len", ctl_queue_len},
    {"queue", ctl_queue},
    {"close", ctl_close}, {"reload", ctl_reload},
    {"num_requeues", ctl_num_requeues}, {NULL, NULL}};

static const lkin_type controller_type = {CONTROLLER_MT, methods, ctl_close, ctl_tostring};

void lkin_open_controller(lua_State *L) { lkin_new_type(L, &controller_type); }
