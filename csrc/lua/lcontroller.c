/* lcontroller.c -- kinformer.controller (lcontroller.h): env:controller(spec)
 * (lenv.c calls lkin_controller_new) builds a
 * kin_controller (controller.h) whose watches enqueue in C and whose
 * workers each run the reconciler in their own worker state.
 *
 * The spec is the normalised one lua/kinformer/controller.lua builds:
 *   { name = "web", workers = 2, memory_limit = bytes,
 *     reconciler = "mymod" | self-contained function,
 *     rate_limiter = { base_delay = s, max_delay = s, qps = n, burst = n },
 *     watches = {
 *       { informer = <kinformer.informer>, kind = "object" | "owner" | "map",
 *         owner_group = "apps", owner_kind = "Deployment", cluster_scoped = bool,
 *         all_owners = bool, map = "mod" | function, resync = s,
 *         predicates = <tree> }, ... } }
 * A predicate tree is a name ("generation_changed", ...), {label_selector =
 * "a=b"}, {"and", p...}, {"or", p...}, {"not", p}, or a list of trees (And).
 *
 * Calls into Lua: reconcile(req, ctx) with req = {namespace=, name=, key=}
 * and ctx = require("kinformer.ctx").new(env, {controller=, worker=
 * (1-based), request=req}); map(obj, ctx) with ctx over {controller=},
 * returning a list of {namespace=, name=}. Results map to kin_result_action
 * as controller.lua documents; a raised non-terminal error also counts as a
 * panic (reconcile_panics) and is logged with its traceback.
 *
 * Deadlines (issue 12): spec.reconcile_timeout (s, 0: none) and
 * spec.busy_warning_after (s, default 60, 0: never). Around each reconcile
 * the worker installs a count hook (every HOOK_COUNT instructions) that
 * raises "reconcile interrupted: ..." past the deadline or once a shutdown
 * armed by ctl:stop(t)/ctl:shutdown(t) gave up waiting, and sets the
 * thread's REST limits (kin_client_set_thread_limits: the time left caps
 * each request's timeout; the worker slot's canceler ends it). Such a
 * reconcile is logged once (controller, key, limit, duration), counted
 * (stats().reconcile_timeouts / reconcile_interrupts) and retried with the
 * key's backoff; the state is kept (the hook is removed after the call).
 * A watchdog thread per started controller ticks every 50 ms: it fires the
 * canceler of a worker past its deadline or, after the shutdown's abort
 * time, of every busy worker, and logs one warning per episode when every
 * worker has been on its key longer than busy_warning_after.
 *
 * Threads: the controller's workers call reconcile (each owns the state
 * in lctl.ws[i], built in on_worker_start and closed in on_worker_stop);
 * the informers' listener threads run the map functions (each map watch
 * owns lmap.ws, built in the listener's on_start). The main state owns the
 * userdata: start/stop/free happen there, never from a reconcile. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lcontroller.h"

#include "controller.h"
#include "kin.h"
#include "laux.h"
#include "linformer.h"
#include "log.h"
#include "rest_client.h"
#include "worker_state.h"

/* Instructions between two checks of the interrupt hook. */
#define HOOK_COUNT 1000
/* How long ctl:close() / __gc lets in-flight reconciles run before
 * interrupting them (the manager's default shutdown_timeout). */
#define CLOSE_GRACE_S 30.0
/* The watchdog's tick. */
#define WATCH_TICK_NS (50 * 1000000ull)

#define CONTROLLER_MT "kinformer.controller"
static const lkin_type controller_type; /* at the end, with the methods */
#define ENV_KEY "kinformer.controller.env" /* a worker state's env userdata */

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
} wslot;

/* One map watch: its code and the state of its listener thread. */
typedef struct {
  lctl *ctl;
  lkin_ws_template *tmpl; /* owned */
  lkin_ws *ws;            /* owned by the listener thread (on_start..on_stop) */
  char *label;            /* "map v1/configmaps", for log lines */
} lmap;

/* Immutable after env:controller returns except where noted. */
struct lctl {
  kin_controller *c;      /* owned */
  lkin_env *env;          /* one reference */
  lkin_push_env_fn *push_env; /* pushes env's userdata in worker states */
  lkin_ws_template *tmpl; /* the reconciler; owned */
  char *name;
  int workers;
  lkin_ws **ws;           /* ws[i] belongs to worker thread i while it runs */
  lmap **maps;            /* owned; freed after c is stopped */
  size_t nmaps;
  pthread_mutex_t mu;     /* guards start_err */
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

typedef struct {
  lctl *p; /* NULL once closed */
} lctl_ud;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- interrupting a reconcile -------------------------------------------- */

/* The count hook of a worker state while it reconciles: past the deadline
 * or once the shutdown gave up waiting, raises "reconcile interrupted: ..."
 * (again at every later check, and after ten raises at every instruction,
 * so user code catching it with pcall cannot keep running). */
static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  wslot *s = lkin_ws_user(L);
  if (!s) return;
  int why = 0;
  if (atomic_load_explicit(&s->abort, memory_order_relaxed)) why = 2;
  else if (s->deadline_ns && mono_ns() >= s->deadline_ns) why = 1;
  if (!why) return;
  if (!s->interrupted) {
    s->interrupted = why;
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
      snprintf(s->where, sizeof(s->where), " at %s:%d", ar->short_src, ar->currentline);
  }
  if (++s->nraises == 10) lua_sethook(L, interrupt_hook, LUA_MASKCOUNT, 1);
  lua_pushstring(L, why == 2 ? "reconcile interrupted: the controller is shutting down"
                             : "reconcile interrupted: reconcile_timeout exceeded");
  lua_error(L);
}

/* Fires the canceler of slot s when it is busy and not fired yet; s->mu
 * held. */
static void fire_locked(wslot *s) {
  if (!s->busy || s->fired) return;
  s->fired = 1;
  kin_io_canceler_fire(&s->cx);
}

/* The watchdog: cuts REST calls at their deadline, interrupts everything
 * once abort_at passed, and warns when every worker has been busy longer
 * than busy_warning_after. */
static void *watchdog_main(void *arg) {
  lctl *p = arg;
  char *msg = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&p->wd_mu);
  while (!p->wd_quit) {
    uint64_t now = mono_ns();
    int aborting = p->abort_at && now >= p->abort_at;
    int over = 0;
    for (int i = 0; i < p->workers; i++) {
      wslot *s = &p->slots[i];
      if (aborting) atomic_store(&s->abort, 1);
      pthread_mutex_lock(&s->mu);
      if (aborting || (s->deadline_ns && now >= s->deadline_ns)) fire_locked(s);
      if (s->busy && p->busy_warn_ns && now - s->start_ns >= p->busy_warn_ns) over++;
      pthread_mutex_unlock(&s->mu);
    }
    if (over < p->workers || !p->busy_warn_ns) {
      p->warned = 0;
    } else if (!p->warned) {
      p->warned = 1;
      size_t need = 200 + (size_t)p->workers * 300;
      if (need > cap) {
        char *m = realloc(msg, need);
        if (m) msg = m, cap = need;
      }
      if (msg) {
        size_t n = 0;
        for (int i = 0; i < p->workers; i++) {
          wslot *s = &p->slots[i];
          pthread_mutex_lock(&s->mu);
          if (s->busy)
            n += (size_t)snprintf(msg + n, cap - n, "%s\"%s\" (%.1fs)", n ? ", " : "", s->key,
                                  (double)(now - s->start_ns) / 1e9);
          pthread_mutex_unlock(&s->mu);
          if (n >= cap) n = cap - 1;
        }
        kin_log(KIN_LOG_WARN, "controller",
                "controller \"%s\": all %d workers busy for more than %gs, nothing else is "
                "reconciled: %s",
                p->name, p->workers, (double)p->busy_warn_ns / 1e9, msg);
      }
    }
    struct timespec ts;
    uint64_t until = mono_ns() + WATCH_TICK_NS;
    ts.tv_sec = (time_t)(until / 1000000000u);
    ts.tv_nsec = (long)(until % 1000000000u);
    pthread_cond_timedwait(&p->wd_cond, &p->wd_mu, &ts);
  }
  pthread_mutex_unlock(&p->wd_mu);
  free(msg);
  return NULL;
}

/* Starts the watchdog (owner thread). Returns 0 or a KIN_E* error. */
static int watchdog_start(lctl *p) {
  if (p->wd_running) return 0;
  pthread_mutex_lock(&p->wd_mu);
  p->wd_quit = 0;
  pthread_mutex_unlock(&p->wd_mu);
  sigset_t old_mask;
  lkin_signals_block_all(&old_mask);
  int err = pthread_create(&p->wd, NULL, watchdog_main, p);
  lkin_signals_restore(&old_mask);
  if (err) return -err;
  p->wd_running = 1;
  return 0;
}

static void watchdog_stop(lctl *p) {
  if (!p->wd_running) return;
  pthread_mutex_lock(&p->wd_mu);
  p->wd_quit = 1;
  pthread_cond_signal(&p->wd_cond);
  pthread_mutex_unlock(&p->wd_mu);
  pthread_join(p->wd, NULL);
  p->wd_running = 0;
}

/* Interrupt what still runs `after_s` seconds from now (keeps an earlier
 * time). */
static void arm_abort(lctl *p, double after_s) {
  uint64_t at = mono_ns() + (after_s > 0 ? (uint64_t)(after_s * 1e9) : 0);
  if (at == 0) at = 1;
  pthread_mutex_lock(&p->wd_mu);
  if (!p->abort_at || at < p->abort_at) p->abort_at = at;
  pthread_cond_signal(&p->wd_cond);
  pthread_mutex_unlock(&p->wd_mu);
}

/* ---- inside worker states ---------------------------------------------- */

/* Pushes the state's env userdata, made on first use (and again after a
 * rebuild) and kept in the registry. */
static void push_state_env(lua_State *L, lctl *p) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, ENV_KEY) != LUA_TNIL) return;
  lua_pop(L, 1);
  p->push_env(L, p->env);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, ENV_KEY);
}

/* 1 when the value at i is a terminal error: a table whose field
 * kinformer_terminal is true. Never raises. */
static int is_terminal(lua_State *L, int i) {
  i = lua_absindex(L, i);
  if (lua_type(L, i) != LUA_TTABLE) return 0;
  lua_pushliteral(L, "kinformer_terminal");
  lua_rawget(L, i);
  int t = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return t;
}

/* Pushes a string describing the error value at i: a string as is,
 * __tostring, a table's message or err field, else its type. */
static const char *push_error_text(lua_State *L, int i) {
  i = lua_absindex(L, i);
  if (lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER) {
    lua_pushvalue(L, i);
    return lua_tostring(L, -1);
  }
  if (luaL_getmetafield(L, i, "__tostring") != LUA_TNIL) {
    lua_pop(L, 1);
    const char *s = luaL_tolstring(L, i, NULL);
    return s;
  }
  if (lua_type(L, i) == LUA_TTABLE) {
    static const char *const fields[] = {"message", "err", "error", NULL};
    for (int k = 0; fields[k]; k++) {
      lua_pushstring(L, fields[k]);
      lua_rawget(L, i);
      if (lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
      lua_pop(L, 1);
    }
  }
  return lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, i));
}

/* Message handler: terminal errors stay intact (the caller tells them
 * apart); anything else becomes its text with a traceback. */
static int msgh(lua_State *L) {
  if (is_terminal(L, 1)) return 1;
  const char *msg = push_error_text(L, 1);
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* do_call(fn, arg, controller, worker, req; upvalue env) -> fn(arg, ctx)
 * with ctx = require("kinformer.ctx").for_request(env, controller, worker,
 * req), looked up once per state (reconciles are the hot path); two
 * results. Runs under a pcall with msgh. */
static int do_call(lua_State *L) {
  lua_settop(L, 5);
  if (lua_getfield(L, LUA_REGISTRYINDEX, "kinformer.ctx.for_request") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "kinformer.ctx");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "for_request");
    lua_remove(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "kinformer.ctx.for_request");
  }
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 4);
  lua_pushvalue(L, 5);
  lua_call(L, 4, 1); /* ctx */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, -3);
  lua_call(L, 2, 2);
  return 2;
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
  kin_result_action *out;
  int raised;  /* a non-terminal error was raised: counted as a panic */
  char *msg;   /* full error text (with traceback when raised), malloc'd */
} reconcile_call;

/* Sets the action for the result values at r (result) and r + 1 (err) of a
 * reconcile that returned. Returns the error text index or 0 when none;
 * pushes at most one value. */
static int classify_return(lua_State *L, int r, reconcile_call *rc) {
  kin_result_action *out = rc->out;
  int res = r, err = r + 1;
  if (is_terminal(L, res) || (!lua_toboolean(L, res) && is_terminal(L, err))) {
    out->kind = KIN_RESULT_TERMINAL_ERROR;
    push_error_text(L, is_terminal(L, res) ? res : err);
    return lua_gettop(L);
  }
  switch (lua_type(L, res)) {
  case LUA_TNIL:
  case LUA_TBOOLEAN:
    if (lua_toboolean(L, res) || lua_isnil(L, err)) {
      out->kind = KIN_RESULT_DONE;
      return 0;
    }
    out->kind = KIN_RESULT_ERROR;
    push_error_text(L, err);
    return lua_gettop(L);
  case LUA_TTABLE: {
    lua_getfield(L, res, "requeue_after");
    int isnum;
    lua_Number after = lua_tonumberx(L, -1, &isnum);
    int present = !lua_isnil(L, -1);
    lua_pop(L, 1);
    if (present && (!isnum || !(after >= 0) || after > 1e9)) {
      out->kind = KIN_RESULT_ERROR;
      lua_pushliteral(L, "reconcile returned a bad requeue_after (want seconds >= 0)");
      return lua_gettop(L);
    }
    if (present && after > 0) {
      out->kind = KIN_RESULT_REQUEUE_AFTER;
      out->requeue_after_ns = (uint64_t)(after * 1e9);
      if (out->requeue_after_ns == 0) out->requeue_after_ns = 1;
      return 0;
    }
    lua_getfield(L, res, "requeue");
    int requeue = lua_toboolean(L, -1);
    lua_pop(L, 1);
    out->kind = requeue ? KIN_RESULT_REQUEUE : KIN_RESULT_DONE;
    return 0;
  }
  default:
    out->kind = KIN_RESULT_ERROR;
    lua_pushfstring(L,
                    "reconcile returned a %s; return nothing, {requeue_after = seconds}, "
                    "{requeue = true}, or nil and an error",
                    luaL_typename(L, res));
    return lua_gettop(L);
  }
}

/* Runs in the worker's state under lkin_ws_protect. */
static int run_reconcile(lua_State *L) {
  reconcile_call *rc = lua_touserdata(L, 1);
  lctl *p = rc->p;
  lua_settop(L, 0);
  luaL_checkstack(L, 12, NULL);
  lua_pushcfunction(L, msgh); /* 1 */
  /* the do_call closure over this state's env, made once per state */
  if (lua_getfield(L, LUA_REGISTRYINDEX, "kinformer.controller.do_call") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    push_state_env(L, p);
    lua_pushcclosure(L, do_call, 1);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, "kinformer.controller.do_call");
  } /* 2 */
  if (push_code(L, "reconcile", "reconciler") < 0) {
    rc->out->kind = KIN_RESULT_ERROR;
    rc->raised = 1;
    rc->msg = dup_top(L, -1);
    return 0;
  }
  lua_createtable(L, 0, 3); /* req */
  lua_pushstring(L, rc->req->ns);
  lua_setfield(L, -2, "namespace");
  lua_pushstring(L, rc->req->name);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, rc->req->key);
  lua_setfield(L, -2, "key");
  lua_pushstring(L, p->name);
  lua_pushinteger(L, rc->worker + 1);
  lua_pushvalue(L, -3);
  lua_sethook(L, interrupt_hook, LUA_MASKCOUNT, HOOK_COUNT);
  int st = lua_pcall(L, 5, 2, 1);
  lua_sethook(L, NULL, 0, 0);
  int text = 0;
  if (st != LUA_OK) {
    if (is_terminal(L, -1)) {
      rc->out->kind = KIN_RESULT_TERMINAL_ERROR;
      push_error_text(L, -1);
    } else {
      rc->out->kind = KIN_RESULT_ERROR;
      rc->raised = 1;
      if (!lua_isstring(L, -1)) lua_pushliteral(L, "not enough memory");
    }
    text = lua_gettop(L);
  } else {
    text = classify_return(L, lua_gettop(L) - 1, rc);
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

/* Logs an interrupted reconcile, counts it and makes it a rate-limited
 * retry. */
static void interrupted(lctl *p, wslot *s, const kin_request *req, kin_result_action *out,
                        int why, uint64_t took_ns, int in_call) {
  double took = (double)took_ns / 1e9;
  if (why == 2) {
    atomic_fetch_add(&p->interrupts, 1);
    kin_log(KIN_LOG_WARN, "controller",
            "controller \"%s\": reconcile of \"%s\" still running when shutdown_timeout passed "
            "(ran %.3fs); interrupted%s",
            p->name, req->key, took, in_call ? " (in a REST call)" : s->where);
    snprintf(out->message, sizeof(out->message), "reconcile interrupted: shutting down");
  } else {
    atomic_fetch_add(&p->timeouts, 1);
    kin_log(KIN_LOG_ERROR, "controller",
            "controller \"%s\": reconcile of \"%s\" exceeded reconcile_timeout %gs (ran "
            "%.3fs); interrupted%s",
            p->name, req->key, (double)p->timeout_ns / 1e9, took,
            in_call ? " (in a REST call)" : s->where);
    snprintf(out->message, sizeof(out->message), "reconcile interrupted: reconcile_timeout %gs",
             (double)p->timeout_ns / 1e9);
  }
  out->kind = KIN_RESULT_ERROR;
  out->logged = 1;
}

static int reconcile_body(lctl *p, int worker, const kin_request *req, kin_result_action *out);

/* kin_reconcile_fn: worker thread `worker`. Arms the deadline (the hook
 * and the REST calls' limits), runs the reconciler, and turns a reconcile
 * cut at its deadline or by a shutdown into a logged, counted retry. */
static int reconcile(void *ud, int worker, const kin_request *req, kin_result_action *out) {
  lctl *p = ud;
  wslot *s = &p->slots[worker];
  uint64_t t0 = mono_ns();
  pthread_mutex_lock(&s->mu);
  s->busy = 1;
  snprintf(s->key, sizeof(s->key), "%s", req->key);
  s->start_ns = t0;
  s->deadline_ns = p->timeout_ns ? t0 + p->timeout_ns : 0;
  s->fired = 0;
  pthread_mutex_lock(&s->cx.mu);
  s->cx.fired = atomic_load(&s->abort); /* a fresh canceler, unless aborting */
  pthread_mutex_unlock(&s->cx.mu);
  pthread_mutex_unlock(&s->mu);
  s->interrupted = 0;
  s->nraises = 0;
  s->where[0] = 0;
  kin_client_set_thread_limits(s->deadline_ns, &s->cx);
  int raised = reconcile_body(p, worker, req, out);
  kin_client_set_thread_limits(0, NULL);
  uint64_t took = mono_ns() - t0;
  pthread_mutex_lock(&s->mu);
  s->busy = 0;
  int fired = s->fired;
  pthread_mutex_unlock(&s->mu);
  int why = s->interrupted;
  /* a REST call cut at the deadline surfaces as an error the reconciler
   * returned (or raised); a terminal error stays terminal */
  int failed = out->kind == KIN_RESULT_ERROR;
  if (!why && failed && atomic_load(&s->abort) && fired) why = 2;
  if (!why && failed && p->timeout_ns && took >= p->timeout_ns) why = 1;
  if (why) {
    interrupted(p, s, req, out, why, took, !s->interrupted);
    return 0;
  }
  return raised;
}

/* Runs the reconciler in the worker's state; returns 1 when it raised. */
static int reconcile_body(lctl *p, int worker, const kin_request *req, kin_result_action *out) {
  reconcile_call rc = {p, worker, req, out, 0, NULL};
  char *err = NULL;
  int r = lkin_ws_protect(p->ws[worker], run_reconcile, &rc, &err);
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
  int rc = lkin_ws_open(p->tmpl, label, &p->ws[worker], &err);
  if (rc == 0) lkin_ws_set_user(p->ws[worker], &p->slots[worker]);
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
  push_state_env(L, m->ctl);
  lua_pushcclosure(L, do_call, 1);
  if (push_code(L, "map", "map function") < 0) {
    mc->msg = dup_top(L, -1);
    return 0;
  }
  lkin_ws_push_object(L, mc->obj);
  lua_pushstring(L, m->ctl->name);
  if (lua_pcall(L, 3, 1, 1) != LUA_OK) {
    if (!lua_isstring(L, -1)) push_error_text(L, -1);
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

static int map_fn(void *ud, kin_obj *obj, kin_request_emit_fn emit, void *ectx) {
  lmap *m = ud;
  if (!m->ws) return KIN_ECLOSED;
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

static int map_start(void *ud) {
  lmap *m = ud;
  char label[300], *err = NULL;
  snprintf(label, sizeof(label), "controller %s %s", m->ctl->name, m->label);
  int rc = lkin_ws_open(m->tmpl, label, &m->ws, &err);
  if (rc < 0) {
    kin_log(KIN_LOG_ERROR, "controller", "%s: %s", label, err ? err : "not enough memory");
    free(err);
    return 1;
  }
  return 0;
}

static void map_stop(void *ud) {
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

/* ---- building from the spec (main state) --------------------------------- */

/* Builds the predicate tree at index i into *out. Never raises (raw
 * accesses only). Returns 0, or KIN_EINVAL with a message in err, or
 * KIN_ENOMEM. *out is NULL on failure. */
static int build_predicate(lua_State *L, int i, kin_predicate **out, char *err, size_t errlen,
                           int depth) {
  *out = NULL;
  i = lua_absindex(L, i);
  if (depth > 32 || !lua_checkstack(L, 4)) {
    snprintf(err, errlen, "predicates nest too deeply");
    return KIN_EINVAL;
  }
  if (lua_type(L, i) == LUA_TSTRING) {
    int rc = kin_predicate_from_name(lua_tostring(L, i), out);
    if (rc == KIN_EINVAL)
      snprintf(err, errlen,
               "unknown predicate '%s' (generation_changed, resource_version_changed, "
               "label_changed, annotation_changed, {label_selector = ...}, {\"and\", ...}, "
               "{\"or\", ...}, {\"not\", p})",
               lua_tostring(L, i));
    return rc;
  }
  if (lua_type(L, i) != LUA_TTABLE) {
    snprintf(err, errlen, "a predicate is a name or a table, not a %s", luaL_typename(L, i));
    return KIN_EINVAL;
  }
  lua_pushliteral(L, "label_selector");
  lua_rawget(L, i);
  if (!lua_isnil(L, -1)) {
    int rc = KIN_EINVAL;
    if (lua_type(L, -1) != LUA_TSTRING) {
      snprintf(err, errlen, "label_selector must be a string");
    } else {
      char perr[200] = "";
      const char *sel = lua_tostring(L, -1);
      rc = kin_predicate_label_selector(sel, out, perr, sizeof(perr));
      if (rc == KIN_EINVAL) snprintf(err, errlen, "bad label_selector '%s': %s", sel, perr);
    }
    lua_pop(L, 1);
    return rc;
  }
  lua_pop(L, 1);
  size_t n = lua_rawlen(L, i), first = 1;
  kin_predicate_kind kind = KIN_PREDICATE_AND;
  lua_rawgeti(L, i, 1);
  if (lua_type(L, -1) == LUA_TSTRING) {
    const char *op = lua_tostring(L, -1);
    if (strcmp(op, "and") == 0) kind = KIN_PREDICATE_AND, first = 2;
    else if (strcmp(op, "or") == 0) kind = KIN_PREDICATE_OR, first = 2;
    else if (strcmp(op, "not") == 0) kind = KIN_PREDICATE_NOT, first = 2;
  }
  lua_pop(L, 1);
  if (kind == KIN_PREDICATE_NOT) {
    if (n != 2) {
      snprintf(err, errlen, "{\"not\", p} takes exactly one predicate");
      return KIN_EINVAL;
    }
    lua_rawgeti(L, i, 2);
    kin_predicate *child;
    int rc = build_predicate(L, -1, &child, err, errlen, depth + 1);
    lua_pop(L, 1);
    if (rc < 0) return rc;
    return kin_predicate_not(child, out);
  }
  size_t nc = n >= first ? n - first + 1 : 0;
  kin_predicate **kids = calloc(nc ? nc : 1, sizeof(*kids));
  if (!kids) return KIN_ENOMEM;
  int rc = 0;
  size_t k = 0;
  for (size_t j = first; j <= n; j++) {
    lua_rawgeti(L, i, (lua_Integer)j);
    rc = build_predicate(L, -1, &kids[k], err, errlen, depth + 1);
    lua_pop(L, 1);
    if (rc < 0) break;
    k++;
  }
  if (rc < 0) {
    for (size_t j = 0; j < k; j++) kin_predicate_free(kids[j]);
    free(kids);
    return rc;
  }
  rc = kin_predicate_combine(kind, kids, k, out);
  free(kids);
  return rc;
}

static void lctl_free(lctl *p) {
  if (!p) return;
  /* like ctl:stop(30): a reconcile that never returns must not keep a
   * close (or the __gc at lua_close) waiting forever */
  if (p->c) arm_abort(p, CLOSE_GRACE_S);
  kin_controller_free(p->c); /* joins workers and listeners: states closed */
  watchdog_stop(p);
  for (int i = 0; i < p->slots_init; i++) {
    kin_io_canceler_destroy(&p->slots[i].cx);
    pthread_mutex_destroy(&p->slots[i].mu);
  }
  free(p->slots);
  pthread_cond_destroy(&p->wd_cond);
  pthread_mutex_destroy(&p->wd_mu);
  for (size_t i = 0; i < p->nmaps; i++) map_free(p->maps[i]);
  free(p->maps);
  free(p->ws);
  lkin_ws_template_unref(p->tmpl);
  free(p->name);
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

static kin_rate_limiter *make_rate_limiter(lua_State *L, int spec) {
  if (lua_getfield(L, spec, "rate_limiter") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL; /* the default */
  }
  luaL_argcheck(L, lua_istable(L, -1), 2, "rate_limiter must be a table");
  int t = lua_gettop(L);
  lua_Number base = lkin_opt_number(L, t, "base_delay", 0.005);
  lua_Number max = lkin_opt_number(L, t, "max_delay", 1000);
  lua_Number qps = lkin_opt_number(L, t, "qps", 10);
  lua_Number burst = lkin_opt_number(L, t, "burst", 100);
  lua_pop(L, 1);
  luaL_argcheck(L, base > 0 && max >= base && max < 1e9, 2,
                "rate_limiter: want 0 < base_delay <= max_delay (seconds)");
  luaL_argcheck(L, qps > 0 && burst >= 1 && burst < 1e9, 2,
                "rate_limiter: want qps > 0 and burst >= 1");
  kin_rate_limiter *rl[2] = {
      kin_exponential_rate_limiter_new((uint64_t)(base * 1e9), (uint64_t)(max * 1e9)),
      kin_bucket_rate_limiter_new((double)qps, (int)burst, NULL),
  };
  if (!rl[0] || !rl[1]) {
    kin_rate_limiter_free(rl[0]);
    kin_rate_limiter_free(rl[1]);
    luaL_error(L, "not enough memory");
  }
  kin_rate_limiter *r = kin_max_of_rate_limiter_new(rl, 2);
  if (!r) luaL_error(L, "not enough memory");
  return r;
}

/* Adds watch number wi (the table at w) to p. Raises on misuse; p owns
 * whatever was built so far, so nothing leaks. */
static void add_watch(lua_State *L, lctl *p, int w, int wi) {
  luaL_checkstack(L, 8, NULL);
  if (lua_getfield(L, w, "informer") == LUA_TNIL)
    luaL_error(L, "controller spec: watch #%d has no informer", wi);
  lkin_env *ie;
  kin_informer *inf = lkin_check_informer(L, -1, &ie);
  lua_pop(L, 1);
  if (ie != p->env) luaL_error(L, "controller spec: watch #%d: informer of another manager", wi);
  kin_handler_config cfg = {0};
  const char *kind = lkin_opt_string(L, w, "kind");
  char group[256];
  if (!kind || strcmp(kind, "object") == 0) {
    cfg.kind = KIN_ENQUEUE_REQUEST_FOR_OBJECT;
  } else if (strcmp(kind, "owner") == 0) {
    cfg.kind = KIN_ENQUEUE_REQUEST_FOR_OWNER;
    const char *g = lkin_opt_string(L, w, "owner_group");
    cfg.owner_kind = lkin_opt_string(L, w, "owner_kind");
    if (!cfg.owner_kind) luaL_error(L, "controller spec: watch #%d: owner_kind missing", wi);
    snprintf(group, sizeof(group), "%s", g ? g : "");
    cfg.owner_group = group;
    lua_getfield(L, w, "cluster_scoped");
    cfg.owner_cluster_scoped = lua_toboolean(L, -1);
    lua_getfield(L, w, "all_owners");
    cfg.all_owners = lua_toboolean(L, -1);
    lua_pop(L, 2);
  } else if (strcmp(kind, "map") == 0) {
    cfg.kind = KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC;
  } else {
    luaL_error(L, "controller spec: watch #%d: kind must be object, owner or map", wi);
  }
  lua_Number resync = lkin_opt_number(L, w, "resync", 0);
  if (resync < 0 || resync > 1e9) luaL_error(L, "controller spec: watch #%d: bad resync", wi);

  if (cfg.kind == KIN_ENQUEUE_REQUESTS_FROM_MAP_FUNC) {
    lmap **nm = realloc(p->maps, (p->nmaps + 1) * sizeof(*nm));
    if (!nm) luaL_error(L, "not enough memory");
    p->maps = nm;
    lmap *m = calloc(1, sizeof(*m));
    if (!m) luaL_error(L, "not enough memory");
    p->maps[p->nmaps++] = m;
    m->ctl = p;
    lua_getfield(L, w, "map");
    if (lua_isnil(L, -1)) luaL_error(L, "controller spec: watch #%d: map missing", wi);
    m->tmpl = lkin_ws_template_new(L, lua_gettop(L), "map function",
                                   lkin_ws_template_memory_limit(p->tmpl));
    lua_pop(L, 1);
    char label[300];
    const char *iname = lkin_opt_string(L, w, "name");
    snprintf(label, sizeof(label), "map %s", iname ? iname : "");
    if (!(m->label = strdup(label))) luaL_error(L, "not enough memory");
    cfg.map = map_fn;
    cfg.on_start = map_start;
    cfg.on_stop = map_stop;
    cfg.ud = m;
  }

  if (lua_getfield(L, w, "predicates") != LUA_TNIL) {
    char err[512] = "";
    int rc = build_predicate(L, -1, &cfg.predicate, err, sizeof(err), 0);
    if (rc == KIN_ENOMEM) luaL_error(L, "not enough memory");
    if (rc < 0) luaL_error(L, "controller spec: watch #%d: %s", wi, err);
  }
  lua_pop(L, 1);
  sigset_t old_mask; /* a listener thread may start here: no SIGINT/SIGTERM for it */
  lkin_signals_block_all(&old_mask);
  int rc = kin_controller_watch(p->c, inf, &cfg, (uint64_t)(resync * 1e9), NULL);
  lkin_signals_restore(&old_mask);
  if (rc < 0) luaL_error(L, "controller %s: watch #%d: %s", p->name, wi, kin_strerror(rc));
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
  pthread_mutex_init(&p->wd_mu, NULL);
  {
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->wd_cond, &ca);
    pthread_condattr_destroy(&ca);
  }
  u->p = p;
  p->env = lkin_env_ref(env);
  p->push_env = push_env;

  const char *name = lkin_opt_string(L, 2, "name");
  luaL_argcheck(L, name && *name, 2, "controller spec: name required");
  if (!(p->name = strdup(name))) return luaL_error(L, "not enough memory");
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
  luaL_argcheck(L, bw >= 0 && bw < 1e9, 2,
                "controller spec: busy_warning_after must be a number of seconds >= 0");
  p->busy_warn_ns = (uint64_t)(bw * 1e9);
  if (!(p->slots = calloc((size_t)p->workers, sizeof(*p->slots))))
    return luaL_error(L, "not enough memory");
  for (; p->slots_init < p->workers; p->slots_init++) {
    wslot *s = &p->slots[p->slots_init];
    if (kin_io_canceler_init(&s->cx) < 0) return luaL_error(L, "not enough memory");
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->abort, 0);
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
                               .rate_limiter = make_rate_limiter(L, 2)};
  sigset_t old_mask; /* the queue's waiting thread starts here */
  lkin_signals_block_all(&old_mask);
  int rc = kin_controller_new(&cfg, &p->c);
  lkin_signals_restore(&old_mask);
  if (rc < 0) return luaL_error(L, "controller %s: %s", p->name, kin_strerror(rc));

  if (lua_getfield(L, 2, "watches") != LUA_TNIL) {
    luaL_argcheck(L, lua_istable(L, -1), 2, "controller spec: watches must be a list");
    int ws = lua_gettop(L);
    lua_Integer n = luaL_len(L, ws);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, ws, i);
      if (!lua_istable(L, -1)) luaL_error(L, "controller spec: watch #%d is not a table", (int)i);
      add_watch(L, p, lua_gettop(L), (int)i);
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
  int rc = watchdog_start(p);
  if (rc == 0) {
    sigset_t old_mask; /* new threads must not take SIGINT/SIGTERM */
    lkin_signals_block_all(&old_mask);
    rc = kin_controller_start(p->c);
    lkin_signals_restore(&old_mask);
  }
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
  if (t >= 0) arm_abort(p, t);
  kin_controller_stop(p->c);
  watchdog_stop(p);
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
  if (t >= 0) arm_abort(p, t);
  return 0;
}

/* ctl:busy() -> list of {worker =, key =, seconds =}: the reconciles in
 * flight now. */
static int ctl_busy(lua_State *L) {
  lctl *p = check_ctl(L);
  lua_newtable(L);
  uint64_t now = mono_ns();
  int n = 0;
  for (int i = 0; i < p->workers; i++) {
    wslot *s = &p->slots[i];
    char key[sizeof(s->key)];
    pthread_mutex_lock(&s->mu);
    int busy = s->busy;
    uint64_t start = s->start_ns;
    memcpy(key, s->key, sizeof(key));
    pthread_mutex_unlock(&s->mu);
    if (!busy) continue;
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, i + 1);
    lua_setfield(L, -2, "worker");
    lua_pushstring(L, key);
    lua_setfield(L, -2, "key");
    lua_pushnumber(L, (double)(now - start) / 1e9);
    lua_setfield(L, -2, "seconds");
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

static int ctl_stats(lua_State *L) {
  lctl *p = check_ctl(L);
  kin_controller_stats st;
  kin_controller_get_stats(p->c, &st);
  lua_createtable(L, 0, 14);
#define F(k) (lua_pushinteger(L, (lua_Integer)st.k), lua_setfield(L, -2, #k))
  F(reconcile_success);
  F(reconcile_error);
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
  lua_pushinteger(L, (lua_Integer)atomic_load(&p->timeouts));
  lua_setfield(L, -2, "reconcile_timeouts");
  lua_pushinteger(L, (lua_Integer)atomic_load(&p->interrupts));
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

static int ctl_name(lua_State *L) {
  lua_pushstring(L, check_ctl(L)->name);
  return 1;
}

static int ctl_queue_len(lua_State *L) {
  lua_pushinteger(L, kin_workqueue_len(kin_controller_queue(check_ctl(L)->c)));
  return 1;
}

/* __gc / __close / ctl:close(): stops and frees. Idempotent. */
static int ctl_close(lua_State *L) {
  lctl_ud *u = luaL_checkudata(L, 1, CONTROLLER_MT);
  lctl *p = u->p;
  u->p = NULL;
  lctl_free(p);
  return 0;
}

static int ctl_tostring(lua_State *L) {
  lctl_ud *u = luaL_checkudata(L, 1, CONTROLLER_MT);
  if (u->p) lua_pushfstring(L, "kinformer.controller (%s)", u->p->name);
  else lua_pushliteral(L, "kinformer.controller (closed)");
  return 1;
}

static const luaL_Reg methods[] = {
    {"start", ctl_start}, {"stop", ctl_stop},   {"stats", ctl_stats},
    {"shutdown", ctl_shutdown}, {"busy", ctl_busy},
    {"enqueue", ctl_enqueue}, {"name", ctl_name}, {"queue_len", ctl_queue_len},
    {"close", ctl_close}, {NULL, NULL}};

static const lkin_type controller_type = {CONTROLLER_MT, methods, ctl_close, ctl_tostring};

void lkin_open_controller(lua_State *L) { lkin_new_type(L, &controller_type); }
