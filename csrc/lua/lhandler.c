/* lhandler.c -- kinformer.handler: handler sets registered on an informer
 * with inf:add_handler, and the queue of main-state handler events that
 * env:step (lenv.c) runs (lhandler.h).
 *
 * Two kinds of handler set:
 *  - worker (the default): the informer gives the set its own listener
 *    (kin_informer_add_handler); the listener's thread builds a worker
 *    state from the captured code in on_start (lkin_ws_open), calls
 *    on_add/on_update/on_delete in it, in order, and closes it in on_stop.
 *    Errors are logged with the key and a traceback (lkin_ws_call_handler)
 *    and the thread goes on.
 *  - main (opts.main = true): the listener's thread only queues the event
 *    in C (struct lkin_mainq, objects held by reference); env:step(timeout)
 *    runs the queued events in the main state with protected calls
 *    (lkin_mainq_run). The
 *    functions may be any closures: they never leave the main state (they
 *    stay in a registry table keyed by the handler).
 *
 * Ownership: every handler set is on its env's lkin_mainq list and is freed
 * by inf:remove_handler (after its listener was joined) or by mainq_free,
 * which the env runs once its factory, hence every listener, is gone. The
 * kinformer.handler userdata only points at it: collecting the userdata
 * leaves the handler registered, as client-go's AddEventHandler does. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lhandler.h"

#include "kin.h"
#include "kobj.h"
#include "laux.h"
#include "lcall_limit.h"
#include "log.h"
#include "worker_state.h"

#define HANDLER_MT "kinformer.handler"
/* Registry table of the main state: lightuserdata(handler) -> the table of
 * functions of a main handler. */
#define MAIN_HANDLERS_KEY "kinformer.main_handlers"

typedef struct lkin_handler lkin_handler;

struct lkin_handler {
  /* Immutable after add_handler. */
  struct lkin_mainq *q;
  kin_informer *inf;
  lkin_ws_template *t; /* worker handlers; NULL for main ones */
  int main;
  char *name; /* "listener v1/pods #2": the worker state's name in logs */
  uint64_t timeout_ns;     /* handler_timeout of each call, 0: none */
  size_t memory_limit;     /* add_handler's memory_limit, 0: the default */
  lkin_env *env;           /* borrowed: the env frees every handler */
  /* Main thread only (the state that called add_handler). */
  kin_listener *l;
  /* Listener thread only, between on_start and on_stop. */
  lkin_ws *ws;
  /* Atomic: read by stats from the main thread. */
  atomic_ulong errors;
  /* Guarded by q->mu. */
  char *start_err; /* why on_start failed, or NULL */
  lkin_handler *next; /* q->handlers list */
};

typedef enum { EV_ADD, EV_UPDATE, EV_DELETE } ev_kind;

/* One event for a main handler; its objects are references it owns. Or,
 * with call set (h NULL), a C call posted by lkin_mainq_post. */
typedef struct mq_event {
  struct mq_event *next;
  lkin_handler *h;
  lua_CFunction call;
  void (*drop)(void *);
  void *arg;
  const char *what;
  ev_kind kind;
  kin_obj *a, *b; /* add/delete: a; update: a = old, b = new */
  int initial;
} mq_event;

struct lkin_mainq {
  pthread_mutex_t mu;  /* guards every field below but stepping */
  pthread_cond_t cond; /* signalled when an event is queued (CLOCK_MONOTONIC) */
  mq_event *head, *tail;
  size_t len;
  lkin_handler *handlers; /* every handler set of the env, owned */
  unsigned next_no;       /* numbers handler names */
  int stepping;           /* main thread only: env:step is running */
};

/* ---- the queue ---------------------------------------------------------- */

static void mainq_free(void *q);

/* Returns e's queue, creating it on first use; NULL when out of memory.
 * Main state's thread only: e->mainq is written once, here, before any
 * listener that uses it starts; the env frees it (lkin_env_on_free). */
static struct lkin_mainq *mainq_get(lkin_env *e) {
  if (e->mainq) return e->mainq;
  struct lkin_mainq *q = calloc(1, sizeof(*q));
  if (!q) return NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cond, &ca);
  pthread_condattr_destroy(&ca);
  if (lkin_env_on_free(e, mainq_free, q) < 0) {
    mainq_free(q);
    return NULL;
  }
  e->mainq = q;
  return q;
}

static void event_free(mq_event *ev) {
  if (ev->drop) ev->drop(ev->arg);
  kin_obj_unref(ev->a);
  kin_obj_unref(ev->b);
  free(ev);
}

static void handler_free(lkin_handler *h) {
  lkin_ws_template_unref(h->t);
  free(h->start_err);
  free(h->name);
  free(h);
}

/* Frees the queue: queued events, and every handler set. Every listener
 * must have been joined (the factory is shut down). Main-state registry
 * entries are left to the state's own collection. */
static void mainq_free(void *arg) {
  struct lkin_mainq *q = arg;
  while (q->head) {
    mq_event *ev = q->head;
    q->head = ev->next;
    event_free(ev);
  }
  while (q->handlers) {
    lkin_handler *h = q->handlers;
    q->handlers = h->next;
    handler_free(h);
  }
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mu);
  free(q);
}

/* Queues an event for main handler h (listener thread). Takes references on
 * a and b. Returns 0 or KIN_ENOMEM (the listener logs and skips it). */
static int enqueue(lkin_handler *h, ev_kind kind, kin_obj *a, kin_obj *b, int initial) {
  mq_event *ev = calloc(1, sizeof(*ev));
  if (!ev) return KIN_ENOMEM;
  ev->next = NULL;
  ev->h = h;
  ev->kind = kind;
  ev->a = a ? kin_obj_ref(a) : NULL;
  ev->b = b ? kin_obj_ref(b) : NULL;
  ev->initial = initial;
  struct lkin_mainq *q = h->q;
  pthread_mutex_lock(&q->mu);
  if (q->tail) q->tail->next = ev;
  else q->head = ev;
  q->tail = ev;
  q->len++;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->mu);
  return 0;
}

int lkin_mainq_prepare(lkin_env *e) { return mainq_get(e) ? 0 : KIN_ENOMEM; }

int lkin_mainq_post(lkin_env *e, const char *what, lua_CFunction call, void (*drop)(void *),
                    void *arg) {
  struct lkin_mainq *q = e->mainq; /* set before the posting thread started */
  mq_event *ev = q ? calloc(1, sizeof(*ev)) : NULL;
  if (!ev) {
    if (drop) drop(arg);
    return q ? KIN_ENOMEM : KIN_EINVAL;
  }
  ev->call = call;
  ev->drop = drop;
  ev->arg = arg;
  ev->what = what;
  pthread_mutex_lock(&q->mu);
  if (q->tail) q->tail->next = ev;
  else q->head = ev;
  q->tail = ev;
  q->len++;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->mu);
  return 0;
}

/* ---- listener callbacks ------------------------------------------------- */

static int main_on_add(void *ud, kin_obj *obj, int initial) {
  return enqueue(ud, EV_ADD, obj, NULL, initial);
}
static int main_on_update(void *ud, kin_obj *old_obj, kin_obj *new_obj) {
  return enqueue(ud, EV_UPDATE, old_obj, new_obj, 0);
}
static int main_on_delete(void *ud, kin_obj *obj) { return enqueue(ud, EV_DELETE, obj, NULL, 0); }

/* Listener thread: builds the worker state. A failure aborts the listener
 * (nothing is delivered); the reason is logged and kept for h:error(). */
static int ws_on_start(void *ud) {
  lkin_handler *h = ud;
  char *err = NULL;
  int rc = lkin_ws_open(h->t, h->name, &h->ws, &err);
  if (rc == 0) lkin_ws_set_abort(h->ws, &h->env->user_abort); /* mgr:stop joins at once */
  if (rc < 0) {
    kin_log(KIN_LOG_ERROR, "handler", "%s: cannot build its Lua state: %s", h->name,
            err ? err : "not enough memory");
    pthread_mutex_lock(&h->q->mu);
    free(h->start_err);
    h->start_err = err;
    pthread_mutex_unlock(&h->q->mu);
    return rc;
  }
  return 0;
}

static void ws_on_stop(void *ud) {
  lkin_handler *h = ud;
  lkin_ws_close(h->ws);
  h->ws = NULL;
}

/* Errors were logged with key and traceback by lkin_ws_call_handler: count
 * them and report success so the listener does not log them again. A
 * missing function (the set leaves it out) is no error. */
static int ws_result(lkin_handler *h, int rc) {
  if (rc < 0 && rc != KIN_ENOENT) atomic_fetch_add(&h->errors, 1);
  return 0;
}

static int ws_on_add(void *ud, kin_obj *obj, int initial) {
  lkin_handler *h = ud;
  kin_obj *objs[1] = {obj};
  return ws_result(h, lkin_ws_call_handler_flag(h->ws, "on_add", kin_obj_key(obj), objs, 1,
                                                initial ? 1 : 0, NULL));
}

static int ws_on_update(void *ud, kin_obj *old_obj, kin_obj *new_obj) {
  lkin_handler *h = ud;
  kin_obj *objs[2] = {old_obj, new_obj};
  return ws_result(h, lkin_ws_call_handler(h->ws, "on_update", kin_obj_key(new_obj), objs, 2,
                                           NULL));
}

static int ws_on_delete(void *ud, kin_obj *obj) {
  lkin_handler *h = ud;
  kin_obj *objs[1] = {obj};
  return ws_result(h, lkin_ws_call_handler(h->ws, "on_delete", kin_obj_key(obj), objs, 1, NULL));
}

/* ---- kinformer.handler userdata ------------------------------------------ */

typedef struct {
  lkin_env *e;     /* one reference; NULL once closed */
  lkin_handler *h; /* NULL once removed */
} lhandler;

static lhandler *check_handler(lua_State *L, int i) {
  lhandler *u = luaL_checkudata(L, i, HANDLER_MT);
  luaL_argcheck(L, u->e != NULL, i, "handler is closed");
  return u;
}

static const lkin_type handler_type; /* below, with the methods */

static void push_main_handlers(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, MAIN_HANDLERS_KEY);
}

int lkin_handler_add(lua_State *L, lkin_env *e, kin_informer *inf, const char *infname) {
  int ty = lua_type(L, 2);
  luaL_argcheck(L, ty == LUA_TTABLE || ty == LUA_TSTRING, 2,
                "handler must be a table {on_add=, on_update=, on_delete=} or a module name");
  /* the handler table's callbacks: a misspelt one raises */
  static const char *const callbacks[] = {"on_add", "on_update", "on_delete", NULL};
  if (ty == LUA_TTABLE) lkin_opt_check_near(L, 2, callbacks, "the handler");
  int main = 0;
  size_t limit = 0;
  uint64_t resync = 0;
  if (!lua_isnoneornil(L, 3)) {
    /* add_handler's options (lhandler.h); add new keys here */
    static const char *const known[] = {"main", "resync", "memory_limit", NULL};
    luaL_checktype(L, 3, LUA_TTABLE);
    lkin_opt_check_keys(L, 3, known, "add_handler");
    main = lkin_opt_bool(L, 3, "main");
    resync = lkin_opt_ns(L, 3, "resync", 0);
    if (resync == KIN_FOREVER) resync = 0; /* math.huge: never */
    lua_Integer m = lkin_opt_integer(L, 3, "memory_limit", 0);
    luaL_argcheck(L, m == 0 || m >= (lua_Integer)LKIN_WS_MIN_MEMORY_LIMIT, 3,
                  lua_pushfstring(L, "option 'memory_limit' must be at least %d bytes",
                                  (int)LKIN_WS_MIN_MEMORY_LIMIT));
    limit = (size_t)m;
  }
  lua_settop(L, 3);

  /* main: resolve the functions now, in this state */
  if (main) {
    if (ty == LUA_TSTRING) {
      lua_getglobal(L, "require");
      lua_pushvalue(L, 2);
      lua_call(L, 1, 1);
      if (!lua_istable(L, -1))
        return luaL_argerror(L, 2, lua_pushfstring(L, "module '%s' must return a table of handler functions",
                                                   lua_tostring(L, 2)));
      lua_replace(L, 2);
    }
    static const char *const names[] = {"on_add", "on_update", "on_delete"};
    for (int i = 0; i < 3; i++) {
      int ft = lua_getfield(L, 2, names[i]);
      if (ft != LUA_TNIL && ft != LUA_TFUNCTION && !luaL_getmetafield(L, -1, "__call"))
        return luaL_argerror(L, 2, lua_pushfstring(L, "'%s' is a %s, not a function", names[i],
                                                   luaL_typename(L, -1)));
      lua_settop(L, 3);
    }
  }

  struct lkin_mainq *q = mainq_get(e);
  if (!q) return lkin_fail(L, KIN_ENOMEM, "add_handler");
  lhandler *u = lua_newuserdatauv(L, sizeof(*u), 0); /* at 4 */
  u->e = NULL;
  u->h = NULL;
  lkin_setmetatable(L, &handler_type);

  /* raises with the culprit named; nothing is allocated before */
  lkin_ws_template *t = main ? NULL : lkin_ws_template_new(L, 2, "handler", limit);
  if (t) lkin_ws_template_set_call_limit(t, e->handler_timeout_ns, "handler_timeout");
  lkin_handler *h = calloc(1, sizeof(*h));
  if (!h) {
    lkin_ws_template_unref(t);
    return lkin_fail(L, KIN_ENOMEM, "add_handler");
  }
  h->timeout_ns = e->handler_timeout_ns;
  h->memory_limit = limit;
  h->env = e;
  h->q = q;
  h->inf = inf;
  h->t = t;
  h->main = main;
  pthread_mutex_lock(&q->mu);
  unsigned no = ++q->next_no;
  pthread_mutex_unlock(&q->mu);
  char buf[64];
  snprintf(buf, sizeof(buf), " #%u%s", no, main ? " (main)" : "");
  size_t n = strlen(infname) + strlen(buf) + 16;
  h->name = malloc(n);
  if (!h->name) {
    handler_free(h);
    return lkin_fail(L, KIN_ENOMEM, "add_handler");
  }
  snprintf(h->name, n, "listener %s%s", infname, buf);

  if (main) {
    push_main_handlers(L);
    lua_pushvalue(L, 2);
    lua_rawsetp(L, -2, h); /* may raise (memory): h not yet registered anywhere */
    lua_pop(L, 1);
  }
  /* keep h on the list before its listener can run */
  pthread_mutex_lock(&q->mu);
  h->next = q->handlers;
  q->handlers = h;
  pthread_mutex_unlock(&q->mu);

  kin_event_handler eh;
  memset(&eh, 0, sizeof(eh));
  eh.ud = h;
  if (main) {
    eh.on_add = main_on_add;
    eh.on_update = main_on_update;
    eh.on_delete = main_on_delete;
  } else {
    eh.on_add = ws_on_add;
    eh.on_update = ws_on_update;
    eh.on_delete = ws_on_delete;
    eh.on_start = ws_on_start;
    eh.on_stop = ws_on_stop;
  }
  kin_listener *l = NULL;
  int rc;
  {
    sigset_t old_mask; /* new threads must not take SIGINT/SIGTERM */
    lkin_signals_block_all(&old_mask);
    rc = kin_informer_add_handler(inf, &eh, resync, &l);
    lkin_signals_restore(&old_mask);
  }
  if (rc < 0) {
    /* never registered: unlink and free */
    pthread_mutex_lock(&q->mu);
    for (lkin_handler **pp = &q->handlers; *pp; pp = &(*pp)->next)
      if (*pp == h) {
        *pp = h->next;
        break;
      }
    pthread_mutex_unlock(&q->mu);
    if (main) {
      push_main_handlers(L);
      lua_pushnil(L);
      lua_rawsetp(L, -2, h);
      lua_pop(L, 1);
    }
    handler_free(h);
    return lkin_fail(L, rc, "add_handler");
  }
  h->l = l;
  u->h = h;
  u->e = lkin_env_ref(e);
  lua_settop(L, 4);
  return 1;
}

int lkin_handler_remove(lua_State *L, lkin_env *e, kin_informer *inf) {
  lhandler *u = check_handler(L, 2);
  lkin_handler *h = u->h;
  if (!h) {
    lua_pushnil(L);
    lua_pushliteral(L, "remove_handler: handler already removed");
    lua_pushliteral(L, "ENOENT");
    return 3;
  }
  if (h->inf != inf || u->e != e) {
    lua_pushnil(L);
    lua_pushliteral(L, "remove_handler: the handler belongs to another informer");
    lua_pushliteral(L, "EINVAL");
    return 3;
  }
  int rc = kin_informer_remove_handler(inf, h->l);
  if (rc < 0 && rc != KIN_ENOENT) return lkin_fail(L, rc, "remove_handler");
  /* the listener is joined (or was never linked): nothing queues for h */
  struct lkin_mainq *q = h->q;
  pthread_mutex_lock(&q->mu);
  mq_event **pp = &q->head, *last = NULL;
  while (*pp) {
    mq_event *ev = *pp;
    if (ev->h == h) {
      *pp = ev->next;
      q->len--;
      event_free(ev);
    } else {
      last = ev;
      pp = &ev->next;
    }
  }
  q->tail = last;
  for (lkin_handler **hp = &q->handlers; *hp; hp = &(*hp)->next)
    if (*hp == h) {
      *hp = h->next;
      break;
    }
  pthread_mutex_unlock(&q->mu);
  u->h = NULL;
  if (h->main) {
    push_main_handlers(L);
    lua_pushnil(L);
    lua_rawsetp(L, -2, h);
    lua_pop(L, 1);
  }
  handler_free(h);
  lua_pushboolean(L, 1);
  return 1;
}

/* h:has_synced() -> true once the handler has handled its initial list */
static int h_has_synced(lua_State *L) {
  lhandler *u = check_handler(L, 1);
  lua_pushboolean(L, u->h && u->h->l && kin_listener_has_synced(u->h->l));
  return 1;
}

/* h:stats() -> {delivered=, errors=, pending=, last_delivered=} (nil once
 * removed); last_delivered: when the handler finished its last batch of
 * notifications, in core.monotime()'s seconds (absent before the first),
 * so a caller polling rarely still knows when the work ended. */
static int h_stats(lua_State *L) {
  lhandler *u = check_handler(L, 1);
  if (!u->h) {
    lua_pushnil(L);
    return 1;
  }
  kin_listener_stats st;
  kin_listener_get_stats(u->h->l, &st);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)st.delivered);
  lua_setfield(L, -2, "delivered");
  lua_pushinteger(L, (lua_Integer)(st.errors + atomic_load(&u->h->errors)));
  lua_setfield(L, -2, "errors");
  lua_pushinteger(L, (lua_Integer)st.pending);
  lua_setfield(L, -2, "pending");
  if (st.last_delivered_ns) {
    lua_pushnumber(L, (lua_Number)st.last_delivered_ns / 1e9);
    lua_setfield(L, -2, "last_delivered");
  }
  return 1;
}

/* h:error() -> why the handler's Lua state could not be built, or nil */
static int h_error(lua_State *L) {
  lhandler *u = check_handler(L, 1);
  if (!u->h) {
    lua_pushnil(L);
    return 1;
  }
  pthread_mutex_lock(&u->h->q->mu);
  char *m = u->h->start_err ? strdup(u->h->start_err) : NULL;
  pthread_mutex_unlock(&u->h->q->mu);
  lua_pushstring(L, m);
  free(m);
  return 1;
}

/* h:name() -> "listener v1/pods #1" */
static int h_name(lua_State *L) {
  lhandler *u = check_handler(L, 1);
  if (u->h) lua_pushstring(L, u->h->name);
  else lua_pushnil(L);
  return 1;
}

/* Drops the env reference; the handler stays registered. Idempotent. */
static int h_close(lua_State *L) {
  lhandler *u = luaL_checkudata(L, 1, HANDLER_MT);
  lkin_env *e = u->e;
  u->e = NULL;
  u->h = NULL;
  lkin_env_unref(e);
  return 0;
}

static int h_tostring(lua_State *L) {
  lhandler *u = luaL_checkudata(L, 1, HANDLER_MT);
  if (!u->e) lua_pushliteral(L, "kinformer.handler (closed)");
  else if (!u->h) lua_pushliteral(L, "kinformer.handler (removed)");
  else lua_pushfstring(L, "kinformer.%s", u->h->name);
  return 1;
}

/* ---- running the queue (env:step) ---------------------------------------- */

static const char *const ev_names[] = {"on_add", "on_update", "on_delete"};

/* Protected: runs one event in the main state. Upvalue-free; the event at
 * 1 as a light userdata. Errors propagate to lkin_ws_call's traceback. */
static int run_event(lua_State *L) {
  mq_event *ev = lua_touserdata(L, 1);
  push_main_handlers(L);
  if (lua_rawgetp(L, -1, ev->h) != LUA_TTABLE) return 0; /* removed meanwhile */
  if (lua_getfield(L, -1, ev_names[ev->kind]) == LUA_TNIL) return 0;
  int nargs = 1;
  lkin_ws_push_object(L, ev->a);
  if (ev->kind == EV_ADD) {
    lua_pushboolean(L, ev->initial);
    nargs = 2;
  } else if (ev->kind == EV_UPDATE) {
    lkin_ws_push_object(L, ev->b);
    nargs = 2;
  }
  lua_call(L, nargs, 0);
  return 0;
}

int lkin_mainq_run(lua_State *L, lkin_env *e, double timeout) {
  struct lkin_mainq *q = mainq_get(e);
  if (!q) return lkin_fail(L, KIN_ENOMEM, "step");
  if (q->stepping) {
    lua_pushinteger(L, 0);
    return 1;
  }
  pthread_mutex_lock(&q->mu);
  if (!q->head && timeout > 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (timeout > 1e8) timeout = 1e8;
    double whole = (double)(time_t)timeout;
    ts.tv_sec += (time_t)timeout;
    ts.tv_nsec += (long)((timeout - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    while (!q->head)
      if (pthread_cond_timedwait(&q->cond, &q->mu, &ts) != 0) break;
  }
  size_t todo = q->len;
  pthread_mutex_unlock(&q->mu);

  q->stepping = 1;
  lua_Integer ran = 0;
  while (todo-- > 0) {
    /* a SIGINT/SIGTERM waits for mgr:run's loop: leave the rest queued */
    if (lkin_term_signal_pending()) break;
    pthread_mutex_lock(&q->mu);
    mq_event *ev = q->head;
    if (ev) {
      q->head = ev->next;
      if (!q->head) q->tail = NULL;
      q->len--;
    }
    pthread_mutex_unlock(&q->mu);
    if (!ev) break;
    if (ev->call) {
      int ctop = lua_gettop(L);
      lua_pushcfunction(L, ev->call);
      lua_pushlightuserdata(L, ev->arg);
      if (lkin_ws_call(L, 1, 0) != LUA_OK) {
        const char *msg = lua_tostring(L, -1);
        kin_log(KIN_LOG_ERROR, "manager", "%s failed: %s", ev->what,
                msg ? msg : "(error object is not a string)");
      }
      lua_settop(L, ctop);
      event_free(ev);
      ran++;
      continue;
    }
    /* copied before the call: a handler may remove its own set */
    char who[160];
    snprintf(who, sizeof(who), "%s", ev->h->name);
    int top = lua_gettop(L);
    lua_pushcfunction(L, run_event);
    lua_pushlightuserdata(L, ev);
    /* under handler_timeout and the memory limit; a SIGINT/SIGTERM that
     * mgr:run will take interrupts it (lcall_limit.h) */
    lkin_call_limit cl = {0};
    cl.what = "main-state handler";
    cl.name = who;
    cl.option = "handler_timeout";
    cl.timeout_ns = ev->h->timeout_ns;
    cl.memory_limit = ev->h->memory_limit ? ev->h->memory_limit : e->main_memory_limit;
    cl.mem_option = ev->h->memory_limit ? "memory_limit" : "main_memory_limit";
    cl.signals = 1;
    lkin_call_limit_begin(L, &cl);
    int st = lkin_ws_call(L, 1, 0);
    lkin_call_limit_end(L, &cl);
    if (st != LUA_OK) {
      char lim[512];
      const char *msg = cl.why == LKIN_CL_MEMORY ? lkin_call_limit_message(&cl, lim, sizeof(lim))
                                                 : lua_tostring(L, -1);
      kin_log(KIN_LOG_ERROR, "handler", "%s: handler %s for %s failed: %s", who,
              ev_names[ev->kind], kin_obj_key(ev->a), msg ? msg : "(error object is not a string)");
    }
    lua_settop(L, top);
    event_free(ev);
    ran++;
  }
  q->stepping = 0;
  lua_pushinteger(L, ran);
  return 1;
}

static const luaL_Reg methods[] = {
    {"has_synced", h_has_synced},
    {"stats", h_stats},
    {"error", h_error},
    {"name", h_name},
    {NULL, NULL}};

static const lkin_type handler_type = {HANDLER_MT, methods, h_close, h_tostring};

void lkin_open_handler(lua_State *L) { lkin_new_type(L, &handler_type); }
