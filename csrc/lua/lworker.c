/* lworker.c -- kinformer.core.worker: one C thread owning one worker state
 * (worker_state.h), driven synchronously from the main state. The low-level
 * building block under listeners and controllers, and a way to try code in
 * a worker state from a script or a spec.
 *
 * Values cross as bytes: nil, a kinformer.object (the immutable kin_obj is
 * shared by reference and arrives as a fresh table), or anything else as
 * JSON (ljson.h: integers stay integers, floats keep 17 digits, arrays
 * stay arrays), so tables must be JSON-encodable. */
#include "lworker.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kin.h"
#include "kobj.h"
#include "laux.h"
#include "ljson.h"
#include "lobject.h"
#include "worker_state.h"

#define WORKER_MT "kinformer.worker"

typedef enum { VAL_NIL, VAL_JSON, VAL_OBJ } val_kind;

typedef struct {
  val_kind kind;
  char *json; /* VAL_JSON, malloc'd */
  size_t len;
  kin_obj *obj; /* VAL_OBJ, one reference */
} val;

typedef struct {
  val *v;
  int n, cap;
} vals;

typedef enum { OP_NONE, OP_CALL, OP_DISPATCH, OP_STOP } op_kind;

typedef struct {
  pthread_t thread;
  lkin_ws_template *tmpl; /* immutable, shared with the thread */
  char *name;             /* for log lines */
  pthread_mutex_t mu;     /* guards everything below */
  pthread_cond_t cond;    /* signalled on ready, on a new op, on done */
  int ready;              /* the thread has built its state, or failed */
  int open_rc;
  char *open_err;
  op_kind op; /* the request being served; OP_NONE when idle */
  /* Request and reply. The main thread writes the request and reads the
   * reply only while op is OP_NONE; the thread touches them only while op
   * is set: the handoff through mu orders the two. */
  char *fname; /* function (call) or handler (dispatch) name, or NULL */
  char *key;   /* dispatch: the key for log lines */
  vals args, results;
  const char *code; /* reply: NULL on success, else "ELUA", "ENOMEM", ... */
  char *err;
  lkin_ws *ws; /* the thread's state; read by main only while idle */
  unsigned calls, errors;
} worker;

typedef struct {
  worker *w; /* NULL once closed */
} lworker;

static void vals_clear(vals *vs) {
  for (int i = 0; i < vs->n; i++) {
    free(vs->v[i].json);
    kin_obj_unref(vs->v[i].obj);
  }
  vs->n = 0;
}

static val *vals_add(vals *vs) {
  if (vs->n == vs->cap) {
    int cap = vs->cap ? vs->cap * 2 : 4;
    val *nv = realloc(vs->v, (size_t)cap * sizeof(*nv));
    if (!nv) return NULL;
    vs->v = nv;
    vs->cap = cap;
  }
  val *v = &vs->v[vs->n++];
  memset(v, 0, sizeof(*v));
  return v;
}

/* Encodes the value at i into a new slot of vs. Returns 0; KIN_EINVAL with
 * a message on the stack (not encodable); KIN_ENOMEM. Raises only on Lua
 * memory errors; vs stays consistent (its owner frees it). */
static int encode(lua_State *L, int i, vals *vs) {
  i = lua_absindex(L, i);
  luaL_checkstack(L, 4, NULL);
  val *v = vals_add(vs);
  if (!v) return KIN_ENOMEM;
  kin_obj *o;
  if (lua_isnil(L, i)) {
    v->kind = VAL_NIL;
  } else if (lkin_test_object(L, i, &o)) {
    if (!o) {
      vs->n--;
      lua_pushliteral(L, "object is closed");
      return KIN_EINVAL;
    }
    v->kind = VAL_OBJ;
    v->obj = kin_obj_ref(o);
  } else {
    vs->n--; /* until the JSON is in hand */
    int rc = lkin_json_encode(L, i);
    if (rc == KIN_ENOMEM) lua_pop(L, 1);
    if (rc < 0) return rc;
    size_t n;
    const char *s = lua_tolstring(L, -1, &n);
    char *json = malloc(n + 1);
    if (!json) {
      lua_pop(L, 1);
      return KIN_ENOMEM;
    }
    memcpy(json, s, n + 1);
    lua_pop(L, 1);
    v = &vs->v[vs->n++];
    v->kind = VAL_JSON;
    v->json = json;
    v->len = n;
  }
  return 0;
}

/* Pushes v as the receiver sees it: objects as fresh tables in a worker
 * (as handlers get them), as kinformer.object userdata in the main state. */
static void push_val(lua_State *L, const val *v, int objects_as_tables) {
  switch (v->kind) {
  case VAL_NIL: lua_pushnil(L); break;
  case VAL_OBJ:
    if (objects_as_tables) lkin_ws_push_object(L, v->obj);
    else lkin_push_object(L, v->obj);
    break;
  case VAL_JSON: {
    char msg[192];
    if (lkin_json_push_msg(L, v->json, v->len, msg, sizeof(msg)) < 0)
      luaL_error(L, "receive a value: %s", msg);
    break;
  }
  }
}

/* ---- the thread --------------------------------------------------------- */

static void reply_error(worker *w, const char *code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
  va_end(ap);
  w->code = code;
  free(w->err);
  w->err = msg;
}

static const char *status_code(int st) { return st == LUA_ERRMEM ? "ENOMEM" : "ELUA"; }

/* Runs in lkin_ws_protect on the worker state. */
static int serve_call(lua_State *L) {
  worker *w = lua_touserdata(L, 1);
  lua_settop(L, 0);
  if (lkin_ws_push_function(L, w->fname) < 0) {
    reply_error(w, "ENOENT", "%s", lua_tostring(L, -1));
    return 0;
  }
  luaL_checkstack(L, w->args.n + 4, "too many arguments");
  for (int i = 0; i < w->args.n; i++) push_val(L, &w->args.v[i], 1);
  int st = lkin_ws_call(L, w->args.n, LUA_MULTRET);
  if (st != LUA_OK) {
    reply_error(w, status_code(st), "%s", lua_tostring(L, -1));
    return 0;
  }
  int nres = lua_gettop(L);
  for (int i = 1; i <= nres; i++) {
    int rc = encode(L, i, &w->results);
    if (rc == KIN_ENOMEM) {
      reply_error(w, "ENOMEM", "result #%d: not enough memory", i);
      return 0;
    }
    if (rc < 0) {
      reply_error(w, "EINVAL", "result #%d cannot be sent back: %s", i, lua_tostring(L, -1));
      return 0;
    }
  }
  return 0;
}

static void serve(worker *w, op_kind op) {
  w->code = NULL;
  w->calls++;
  unsigned rebuilds = lkin_ws_rebuilds(w->ws);
  char *err = NULL;
  int rc;
  if (op == OP_CALL) {
    rc = lkin_ws_protect(w->ws, serve_call, w, &err);
    if (rc < 0) reply_error(w, rc == KIN_ENOMEM ? "ENOMEM" : "ELUA", "%s", err ? err : "not enough memory");
  } else {
    kin_obj **objs = malloc((size_t)(w->args.n ? w->args.n : 1) * sizeof(*objs));
    if (!objs) {
      reply_error(w, "ENOMEM", "not enough memory");
    } else {
      for (int i = 0; i < w->args.n; i++) objs[i] = w->args.v[i].obj;
      rc = lkin_ws_call_handler(w->ws, w->fname, w->key, objs, w->args.n, &err);
      free(objs);
      if (rc < 0)
        reply_error(w, rc == KIN_ENOENT ? "ENOENT" : rc == KIN_ENOMEM ? "ENOMEM" : "ELUA", "%s",
                    err ? err : "not enough memory");
    }
  }
  free(err);
  if (w->code) {
    w->errors++;
    vals_clear(&w->results);
  }
  if (w->code && !strcmp(w->code, "ENOMEM") && lkin_ws_rebuilds(w->ws) != rebuilds) {
    char *msg = w->err;
    w->err = NULL;
    reply_error(w, "ENOMEM", "%s (memory_limit %zu bytes); the worker's Lua state was rebuilt",
                msg ? msg : "not enough memory", lkin_ws_template_memory_limit(w->tmpl));
    free(msg);
  }
}

static void *worker_main(void *arg) {
  worker *w = arg;
  lkin_ws *ws = NULL;
  char *err = NULL;
  int rc = lkin_ws_open(w->tmpl, w->name, &ws, &err);
  pthread_mutex_lock(&w->mu);
  w->ws = ws;
  w->open_rc = rc;
  w->open_err = err;
  w->ready = 1;
  pthread_cond_broadcast(&w->cond);
  while (rc == 0) {
    while (w->op == OP_NONE) pthread_cond_wait(&w->cond, &w->mu);
    op_kind op = w->op;
    if (op == OP_STOP) break;
    pthread_mutex_unlock(&w->mu);
    serve(w, op);
    pthread_mutex_lock(&w->mu);
    w->op = OP_NONE;
    pthread_cond_broadcast(&w->cond);
  }
  w->ws = NULL;
  pthread_mutex_unlock(&w->mu);
  lkin_ws_close(ws);
  return NULL;
}

/* Frees w; its thread must have been joined (or never started). */
static void worker_free(worker *w) {
  vals_clear(&w->args);
  vals_clear(&w->results);
  free(w->args.v);
  free(w->results.v);
  free(w->fname);
  free(w->key);
  free(w->err);
  free(w->open_err);
  free(w->name);
  lkin_ws_template_unref(w->tmpl);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cond);
  free(w);
}

/* Hands op to the thread and waits until it is served. */
static void post(worker *w, op_kind op) {
  pthread_mutex_lock(&w->mu);
  w->op = op;
  pthread_cond_broadcast(&w->cond);
  if (op != OP_STOP)
    while (w->op != OP_NONE) pthread_cond_wait(&w->cond, &w->mu);
  pthread_mutex_unlock(&w->mu);
}

/* ---- the main state side ------------------------------------------------ */

static worker *check(lua_State *L, int i) {
  lworker *u = luaL_checkudata(L, i, WORKER_MT);
  luaL_argcheck(L, u->w != NULL, i, "worker is closed");
  return u->w;
}

/* worker(code [, opts]) -> worker | nil, msg, code
 *   code: a module name, a function or a table of functions (sent with
 *         copies of their upvalues, worker_state.h)
 *   opts: memory_limit (bytes, default 512 MiB), name (for log lines),
 *         timeout (seconds: the time limit of each call, lcall_limit.h;
 *         default none) */
static int l_worker(lua_State *L) {
  luaL_checkany(L, 1);
  size_t limit = 0;
  const char *name = "worker";
  uint64_t timeout_ns = 0;
  if (!lua_isnoneornil(L, 2)) {
    timeout_ns = lkin_opt_ns(L, 2, "timeout", 0);
    if (timeout_ns == KIN_FOREVER) timeout_ns = 0;
    luaL_checktype(L, 2, LUA_TTABLE);
    if (lua_getfield(L, 2, "memory_limit") != LUA_TNIL) {
      lua_Integer m = luaL_checkinteger(L, -1);
      luaL_argcheck(L, m >= (lua_Integer)LKIN_WS_MIN_MEMORY_LIMIT, 2,
                    lua_pushfstring(L, "memory_limit must be at least %d bytes",
                                    (int)LKIN_WS_MIN_MEMORY_LIMIT));
      limit = (size_t)m;
    }
    if (lua_getfield(L, 2, "name") != LUA_TNIL) name = luaL_checkstring(L, -1);
    lua_pop(L, 2); /* name stays alive: it is a field of opts */
  }
  lworker *u = lua_newuserdatauv(L, sizeof(*u), 0);
  u->w = NULL;
  luaL_setmetatable(L, WORKER_MT);
  lkin_ws_template *t = lkin_ws_template_new(L, 1, "handler", limit);
  if (timeout_ns) lkin_ws_template_set_call_limit(t, timeout_ns, "timeout");
  worker *w = calloc(1, sizeof(*w));
  if (!w || !(w->name = strdup(name))) {
    free(w);
    lkin_ws_template_unref(t);
    return lkin_fail(L, KIN_ENOMEM, "start worker");
  }
  w->tmpl = t;
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cond, NULL);
  /* signals stay with the main thread (Ctrl-C interrupts the script) */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int prc = pthread_create(&w->thread, NULL, worker_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (prc != 0) {
    worker_free(w);
    return lkin_fail(L, KIN_ENOMEM, "start worker thread");
  }
  pthread_mutex_lock(&w->mu);
  while (!w->ready) pthread_cond_wait(&w->cond, &w->mu);
  pthread_mutex_unlock(&w->mu);
  if (w->open_rc < 0) {
    pthread_join(w->thread, NULL);
    lua_pushnil(L);
    lua_pushstring(L, w->open_err ? w->open_err : "not enough memory");
    lua_pushstring(L, w->open_rc == KIN_ENOMEM ? "ENOMEM" : "ELUA");
    worker_free(w);
    return 3;
  }
  u->w = w;
  return 1;
}

/* Frees what the previous request left; the thread is idle. */
static void reset(worker *w) {
  vals_clear(&w->args);
  vals_clear(&w->results);
  free(w->fname);
  free(w->key);
  free(w->err);
  w->fname = w->key = w->err = NULL;
  w->code = NULL;
}

static int reply(lua_State *L, worker *w) {
  if (w->code) {
    lua_pushnil(L);
    lua_pushstring(L, w->err ? w->err : "not enough memory");
    lua_pushstring(L, w->code);
    return 3;
  }
  luaL_checkstack(L, w->results.n + 4, "too many results");
  for (int i = 0; i < w->results.n; i++) push_val(L, &w->results.v[i], 0);
  return w->results.n;
}

/* w:call(fname_or_nil, ...) -> results... | nil, msg, code
 * Arguments: nil, kinformer.object (a fresh table in the worker) or JSON-
 * encodable values; anything else raises. Codes: "ELUA" (the function
 * raised; msg has the traceback), "ENOMEM" (the state ran out of memory and
 * was rebuilt), "ENOENT" (no such function), "EINVAL" (a result cannot be
 * sent back). */
static int m_call(lua_State *L) {
  worker *w = check(L, 1);
  int t = lua_type(L, 2);
  luaL_argcheck(L, t == LUA_TNONE || t == LUA_TNIL || t == LUA_TSTRING, 2,
                "function name (string) or nil expected");
  reset(w);
  if (t == LUA_TSTRING && !(w->fname = strdup(lua_tostring(L, 2))))
    return lkin_fail(L, KIN_ENOMEM, "call");
  for (int i = 3; i <= lua_gettop(L); i++) {
    int rc = encode(L, i, &w->args);
    if (rc == KIN_ENOMEM) return lkin_fail(L, rc, "call");
    if (rc < 0) return luaL_argerror(L, i, lua_tostring(L, -1));
  }
  post(w, OP_CALL);
  return reply(L, w);
}

/* w:dispatch(handler, key, obj_or_nil...) -> true | nil, msg, code
 * Delivers objects to a handler as a listener does: errors are logged with
 * the key and the handler name, and also returned. */
static int m_dispatch(lua_State *L) {
  worker *w = check(L, 1);
  const char *handler = luaL_checkstring(L, 2);
  const char *key = luaL_checkstring(L, 3);
  for (int i = 4; i <= lua_gettop(L); i++) {
    kin_obj *o;
    luaL_argcheck(L, lua_isnil(L, i) || lkin_test_object(L, i, &o), i,
                  "kinformer.object or nil expected");
    luaL_argcheck(L, lua_isnil(L, i) || o, i, "object is closed");
  }
  reset(w);
  if (!(w->fname = strdup(handler)) || !(w->key = strdup(key)))
    return lkin_fail(L, KIN_ENOMEM, "dispatch");
  for (int i = 4; i <= lua_gettop(L); i++)
    if (encode(L, i, &w->args) < 0) return lkin_fail(L, KIN_ENOMEM, "dispatch");
  post(w, OP_DISPATCH);
  if (w->code) return reply(L, w);
  lua_pushboolean(L, 1);
  return 1;
}

/* w:stats() -> {calls=, errors=, rebuilds=, memory=} (memory: bytes the
 * worker state holds now) */
static int m_stats(lua_State *L) {
  worker *w = check(L, 1);
  pthread_mutex_lock(&w->mu);
  lua_Integer calls = w->calls, errors = w->errors;
  lua_Integer rebuilds = w->ws ? lkin_ws_rebuilds(w->ws) : 0;
  lua_Integer memory = w->ws ? (lua_Integer)lkin_ws_memory(w->ws) : 0;
  pthread_mutex_unlock(&w->mu);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, calls);
  lua_setfield(L, -2, "calls");
  lua_pushinteger(L, errors);
  lua_setfield(L, -2, "errors");
  lua_pushinteger(L, rebuilds);
  lua_setfield(L, -2, "rebuilds");
  lua_pushinteger(L, memory);
  lua_setfield(L, -2, "memory");
  return 1;
}

/* Stops and joins the thread (its state is closed there); idempotent. */
static int m_close(lua_State *L) {
  lworker *u = luaL_checkudata(L, 1, WORKER_MT);
  worker *w = u->w;
  if (!w) return 0;
  u->w = NULL;
  post(w, OP_STOP);
  pthread_join(w->thread, NULL);
  worker_free(w);
  return 0;
}

static int m_tostring(lua_State *L) {
  lworker *u = luaL_checkudata(L, 1, WORKER_MT);
  if (!u->w) lua_pushliteral(L, "kinformer.worker (closed)");
  else {
    const char *mod = lkin_ws_template_module(u->w->tmpl);
    lua_pushfstring(L, "kinformer.worker %s (%s)", u->w->name, mod ? mod : "functions");
  }
  return 1;
}

static const luaL_Reg methods[] = {
    {"call", m_call},
    {"dispatch", m_dispatch},
    {"stats", m_stats},
    {"close", m_close},
    {NULL, NULL}};

static const lkin_type worker_type = {WORKER_MT, methods, m_close, m_tostring};

void lkin_open_worker(lua_State *L) {
  lkin_new_type(L, &worker_type);
  lua_pushcfunction(L, l_worker);
  lua_setfield(L, -2, "worker");
}
