/* lwebhook_call.c -- one review through a hook's Lua handler
 * (lwebhook_int.h): the kin_webhook_fn the server calls on a connection
 * thread (or on the thread of kin_webhook_server_serve).
 *
 * The hook keeps a pool of at most `workers` worker states (made on first
 * need from the handler's template: the closure rules of reconcilers).
 * A call takes a free state, waiting until the review's deadline when all
 * are busy, and runs require("kinformer.webhook_run").run(kind, handler,
 * req, original, env, info) in it under lkin_ws_protect with a limited
 * call (lcall_limit.h) whose deadline is the review's: a handler that
 * loops is cut there. While it runs, the state's current call context
 * (lkin_set_call_ctx) carries the same deadline, so ctx.client's requests
 * end in time too. The result table fills the kin_webhook_response; an
 * error, a cut or an out-of-memory (the state is rebuilt) gives a negative
 * code with resp->message naming the hook and the cause, and is logged
 * with the traceback. */
#include <errno.h>
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "lcall_limit.h"
#include "lclient.h"
#include "lenv.h"
#include "ljson.h"
#include "log.h"
#include "lwebhook_int.h"

static const char run_key; /* a state's kinformer.webhook_run.run */
static const char env_key; /* a state's kinformer.env userdata */

lwh_hook *lwh_hook_new(const char *name, const char *path, kin_webhook_type type, lkin_env *env,
                       lkin_ws_template *tmpl, const atomic_int *abort, int workers) {
  lwh_hook *h = calloc(1, sizeof(*h));
  if (!h) return NULL;
  h->name = strdup(name);
  h->path = strdup(path);
  h->pool = calloc((size_t)workers, sizeof(*h->pool));
  pthread_condattr_t ca;
  int cond_ok = 0;
  if (pthread_condattr_init(&ca) == 0) {
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    cond_ok = pthread_cond_init(&h->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
  }
  if (!h->name || !h->path || !h->pool || !cond_ok || pthread_mutex_init(&h->mu, NULL)) {
    if (cond_ok) pthread_cond_destroy(&h->cv);
    free(h->name);
    free(h->path);
    free(h->pool);
    free(h);
    return NULL;
  }
  h->type = type;
  h->env = lkin_env_ref(env);
  h->tmpl = lkin_ws_template_ref(tmpl);
  h->abort = abort;
  h->workers = workers;
  return h;
}

void lwh_hook_free(lwh_hook *h) {
  if (!h) return;
  for (int i = 0; i < h->nfree; i++) lkin_ws_close(h->pool[i]);
  lkin_ws_template_unref(h->tmpl);
  lkin_env_unref(h->env);
  pthread_cond_destroy(&h->cv);
  pthread_mutex_destroy(&h->mu);
  free(h->pool);
  free(h->name);
  free(h->path);
  free(h);
}

/* ---- the pool ----------------------------------------------------------- */

/* Takes a free state of h into *out, making one while fewer than workers
 * exist, else waiting until deadline_ns. Returns 0; KIN_ETIMEDOUT (none
 * came free in time), KIN_ECANCELED (the server is closing), or
 * lkin_ws_open's error with *err (the caller frees it). */
static int take(lwh_hook *h, uint64_t deadline_ns, lkin_ws **out, char **err) {
  pthread_mutex_lock(&h->mu);
  for (;;) {
    if (h->nfree > 0) {
      *out = h->pool[--h->nfree];
      pthread_mutex_unlock(&h->mu);
      return 0;
    }
    if (h->nopen < h->workers) {
      int n = ++h->nopen;
      pthread_mutex_unlock(&h->mu);
      char label[200];
      snprintf(label, sizeof(label), "webhook %s worker %d", h->name, n);
      int rc = lkin_ws_open(h->tmpl, label, out, err);
      if (rc < 0) {
        pthread_mutex_lock(&h->mu);
        h->nopen--;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
      }
      return rc;
    }
    if (h->abort && atomic_load(h->abort)) {
      pthread_mutex_unlock(&h->mu);
      return KIN_ECANCELED;
    }
    struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
    if (pthread_cond_timedwait(&h->cv, &h->mu, &ts) == ETIMEDOUT && h->nfree == 0) {
      pthread_mutex_unlock(&h->mu);
      return KIN_ETIMEDOUT;
    }
  }
}

/* Puts w back into h's pool and wakes a waiter. */
static void put(lwh_hook *h, lkin_ws *w) {
  pthread_mutex_lock(&h->mu);
  h->pool[h->nfree++] = w;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&h->mu);
}

/* ---- inside the worker state ----------------------------------------------- */

typedef struct {
  lwh_hook *h;
  const kin_webhook_request *req;
  kin_webhook_response *resp;
  int st;          /* Lua status of the run (LUA_OK when it returned) */
  int why;         /* LKIN_CL_*: what cut it */
  char where[160]; /* where the cut hit */
  char *errmsg;    /* the error with its traceback (malloc'd), when st != LUA_OK */
} review;

/* Sets field k of the table at the top to v ("" for NULL). Raises only on
 * memory errors. */
static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v ? v : "");
  lua_setfield(L, -2, k);
}

/* Pushes {a=, b=, c=} with the three names and values. */
static void push_gvk(lua_State *L, const char *const names[3], const char *g, const char *v,
                     const char *k) {
  lua_createtable(L, 0, 3);
  set_str(L, names[0], g);
  set_str(L, names[1], v);
  set_str(L, names[2], k);
}

/* Pushes the JSON text as Lua values; nil for null, an empty table for
 * text that does not decode. */
static void push_json(lua_State *L, const char *s, size_t n) {
  if (!s || lkin_json_push(L, s, n) != 0) {
    lua_newtable(L);
    return;
  }
  if (lua_islightuserdata(L, -1) && lua_touserdata(L, -1) == NULL) {
    lua_pop(L, 1);
    lua_pushnil(L);
  }
}

/* Pushes the req table of r (webhook_run.lua's shape): objects as lazy
 * views holding references, userInfo/options decoded. Raises only on
 * memory errors (nothing C-side to free then). */
static void push_request(lua_State *L, const kin_webhook_request *r) {
  static const char *const kind_names[3] = {"group", "version", "kind"};
  static const char *const res_names[3] = {"group", "version", "resource"};
  if (r->type == KIN_WEBHOOK_CONVERSION) {
    lua_createtable(L, 0, 3);
    set_str(L, "uid", r->uid);
    set_str(L, "desired_api_version", r->desired_api_version);
    lua_createtable(L, (int)r->nobjects, 0);
    for (size_t i = 0; i < r->nobjects; i++) {
      lkin_ws_push_object(L, r->objects[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "objects");
    return;
  }
  lua_createtable(L, 0, 14);
  set_str(L, "uid", r->uid);
  set_str(L, "operation", r->operation);
  set_str(L, "name", r->name);
  set_str(L, "namespace", r->namespace_);
  set_str(L, "sub_resource", r->sub_resource);
  push_gvk(L, kind_names, r->kind_group, r->kind_version, r->kind);
  lua_setfield(L, -2, "kind");
  push_gvk(L, res_names, r->resource_group, r->resource_version, r->resource);
  lua_setfield(L, -2, "resource");
  lua_pushboolean(L, r->dry_run);
  lua_setfield(L, -2, "dry_run");
  push_json(L, r->user_info, r->user_info_len);
  lua_setfield(L, -2, "user_info");
  push_json(L, r->options, r->options_len);
  lua_setfield(L, -2, "options");
  if (r->object) {
    lkin_ws_push_object(L, r->object);
    lua_setfield(L, -2, "object");
  }
  if (r->old_object) {
    lkin_ws_push_object(L, r->old_object);
    lua_setfield(L, -2, "old_object");
  }
}

/* The kind argument of webhook_run.run for t (a static string). */
static const char *type_name(kin_webhook_type t) {
  return t == KIN_WEBHOOK_VALIDATING ? "validating"
         : t == KIN_WEBHOOK_MUTATING ? "mutating"
                                     : "conversion";
}

/* Pushes the state's cached value under key, made by make() on first use. */
static void push_cached(lua_State *L, const void *key, void (*make)(lua_State *, lwh_hook *),
                        lwh_hook *h) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, key) != LUA_TNIL) return;
  lua_pop(L, 1);
  make(L, h);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

/* Pushes require("kinformer.webhook_run").run; raises when it cannot load. */
static void make_run(lua_State *L, lwh_hook *h) {
  (void)h;
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kinformer.webhook_run");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "run");
  lua_remove(L, -2);
}

/* Pushes a kinformer.env userdata over h's env (a new reference, dropped
 * by its __gc). */
static void make_env(lua_State *L, lwh_hook *h) { lkin_push_env(L, h->env); }

/* A malloc'd copy of the string at i (raises when out of memory). */
static char *dup_at(lua_State *L, int i) {
  size_t n;
  const char *s = lua_tolstring(L, i, &n);
  char *d = malloc(n + 1);
  if (!d) luaL_error(L, "not enough memory");
  memcpy(d, s, n + 1);
  return d;
}

/* Reads the list of strings in field k of the table at t into *out and *n
 * (each stored as soon as made: the server frees what resp holds). */
static void read_strings(lua_State *L, int t, const char *k, char ***out, size_t **lens, size_t *n) {
  if (lua_getfield(L, t, k) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  size_t len = (size_t)luaL_len(L, -1);
  if (len) {
    *out = calloc(len, sizeof(**out));
    if (lens) *lens = calloc(len, sizeof(**lens));
    if (!*out || (lens && !*lens)) luaL_error(L, "not enough memory");
  }
  for (size_t i = 0; i < len; i++) {
    lua_geti(L, -1, (lua_Integer)i + 1);
    if (lua_type(L, -1) == LUA_TSTRING) {
      (*out)[*n] = dup_at(L, -1);
      if (lens) (*lens)[*n] = lua_rawlen(L, -1);
      (*n)++;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* Fills the response from the result table at t; each string is malloc'd
 * into resp at once (the server frees what resp holds, also when this
 * raises: out of memory, a result that is no table). */
static void read_result(lua_State *L, int t, review *rv) {
  kin_webhook_response *resp = rv->resp;
  luaL_checktype(L, t, LUA_TTABLE);
  if (lua_getfield(L, t, "message") == LUA_TSTRING) resp->message = dup_at(L, -1);
  lua_pop(L, 1);
  if (rv->h->type == KIN_WEBHOOK_CONVERSION) {
    lua_getfield(L, t, "failed");
    resp->failed = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!resp->failed)
      read_strings(L, t, "converted", &resp->converted, &resp->converted_len, &resp->nconverted);
    return;
  }
  lua_getfield(L, t, "allowed");
  resp->allowed = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (lua_getfield(L, t, "code") == LUA_TNUMBER) resp->code = (int32_t)lua_tointeger(L, -1);
  lua_pop(L, 1);
  read_strings(L, t, "warnings", &resp->warnings, NULL, &resp->nwarnings);
  if (lua_getfield(L, t, "patch") == LUA_TSTRING) {
    resp->patch_len = lua_rawlen(L, -1);
    resp->patch = dup_at(L, -1);
  }
  lua_pop(L, 1);
}

/* Runs in the worker state under lkin_ws_protect (ud: the review): the
 * handler through webhook_run.run under the review's deadline and call
 * context. Returns 0 with rv->st the run's Lua status (rv->errmsg, malloc'd,
 * the error with its traceback when it failed) and resp filled when it
 * returned; raises on a failure around the run (out of memory, no code). */
static int run_review(lua_State *L) {
  review *rv = lua_touserdata(L, 1);
  lwh_hook *h = rv->h;
  const kin_webhook_request *req = rv->req;
  lua_settop(L, 0);
  luaL_checkstack(L, 24, NULL);
  push_cached(L, &run_key, make_run, h);
  lua_pushstring(L, type_name(h->type));
  if (lkin_ws_push_function(L, NULL) != 0) return lua_error(L);
  push_request(L, req);
  if (h->type == KIN_WEBHOOK_MUTATING && req->object) lkin_ws_push_object(L, req->object);
  else lua_pushnil(L);
  push_cached(L, &env_key, make_env, h);
  uint64_t now = lkin_mono_ns();
  lua_createtable(L, 0, 4);
  set_str(L, "name", h->name);
  set_str(L, "path", h->path);
  lua_pushnumber(L, (double)req->deadline_ns / 1e9);
  lua_setfield(L, -2, "deadline");
  kin_call_ctx cc = {.deadline_ns = req->deadline_ns};
  lkin_call_limit cl = {.what = "webhook", .name = h->name, .option = "timeout"};
  cl.timeout_ns = req->deadline_ns > now ? req->deadline_ns - now : 1;
  cl.abort = h->abort;
  lkin_set_call_ctx(L, &cc);
  lkin_call_limit_begin(L, &cl);
  int st = lkin_ws_call(L, 6, 1);
  lkin_call_limit_end(L, &cl);
  lkin_set_call_ctx(L, NULL);
  rv->why = cl.why;
  snprintf(rv->where, sizeof(rv->where), "%s", cl.where);
  rv->st = st;
  if (st != LUA_OK) {
    const char *m = lua_tostring(L, -1);
    rv->errmsg = strdup(m ? m : "(error object is not a string)");
    return 0;
  }
  read_result(L, lua_gettop(L), rv);
  return 0;
}

/* ---- the kin_webhook_fn ------------------------------------------------------ */

/* Sets resp->message to "webhook <name>: <text>" (the first line of text;
 * a previous message is freed; NULL when out of memory) and denies. */
static void fail_message(lwh_hook *h, kin_webhook_response *resp, const char *text) {
  char buf[1024];
  int n = (int)strcspn(text, "\n");
  snprintf(buf, sizeof(buf), "webhook %s: %.*s", h->name, n, text);
  free(resp->message);
  resp->message = strdup(buf);
  resp->allowed = 0;
}

/* The kin_webhook_fn: see the top of this file and lwebhook_int.h. Returns
 * 0 when the handler ran; KIN_ETIMEDOUT (cut at the deadline, or no free
 * state in time), KIN_ECANCELED (the server is closing), KIN_ENOMEM (the
 * state ran out of memory: rebuilt), KIN_EINVAL (the handler raised, or its
 * result could not be read) with resp->message saying so; each failure
 * logged once. */
int lwh_hook_call(void *ud, const kin_webhook_request *req, kin_webhook_response *resp) {
  lwh_hook *h = ud;
  uint64_t start = lkin_mono_ns();
  double budget = req->deadline_ns > start ? (double)(req->deadline_ns - start) / 1e9 : 0;
  lkin_ws *w = NULL;
  char *err = NULL, text[512];
  int rc = take(h, req->deadline_ns, &w, &err);
  if (rc < 0) {
    if (rc == KIN_ETIMEDOUT)
      snprintf(text, sizeof(text),
               "timed out after %.3gs (webhook timeout) waiting for a free worker (workers = %d)",
               budget, h->workers);
    else if (rc == KIN_ECANCELED) snprintf(text, sizeof(text), "the manager is stopping");
    else snprintf(text, sizeof(text), "%s", err ? err : "not enough memory");
    fail_message(h, resp, text);
    kin_log(KIN_LOG_ERROR, "webhook", "%s", resp->message ? resp->message : text);
    free(err);
    return rc;
  }
  review rv = {.h = h, .req = req, .resp = resp};
  rc = lkin_ws_protect(w, run_review, &rv, &err);
  put(h, w);
  if (rc == 0 && rv.st == LUA_OK) {
    free(err);
    return 0;
  }
  const char *full = rv.errmsg ? rv.errmsg : err ? err : "not enough memory";
  if (rv.why == LKIN_CL_TIMEOUT) {
    snprintf(text, sizeof(text), "timed out after %.3gs (webhook timeout)%s", budget, rv.where);
    rc = KIN_ETIMEDOUT;
  } else if (rv.why == LKIN_CL_ABORT) {
    snprintf(text, sizeof(text), "interrupted: the manager is stopping%s", rv.where);
    rc = KIN_ECANCELED;
  } else if (rc == KIN_ENOMEM || rv.st == LUA_ERRMEM) {
    snprintf(text, sizeof(text), "out of memory (memory_limit %zu bytes; the state is rebuilt)",
             lkin_ws_template_memory_limit(h->tmpl));
    rc = KIN_ENOMEM;
  } else {
    snprintf(text, sizeof(text), "%s", full);
    rc = KIN_EINVAL;
  }
  fail_message(h, resp, text);
  const char *ns = req->namespace_ ? req->namespace_ : "";
  if (req->type == KIN_WEBHOOK_CONVERSION)
    kin_log(KIN_LOG_ERROR, "webhook", "%s (converting %zu objects to %s)%s%s",
            resp->message ? resp->message : text, req->nobjects, req->desired_api_version,
            rc == KIN_EINVAL ? ": " : "", rc == KIN_EINVAL ? full : "");
  else
    kin_log(KIN_LOG_ERROR, "webhook", "%s (%s %s%s%s)%s%s", resp->message ? resp->message : text,
            req->operation, ns, *ns ? "/" : "", req->name ? req->name : "",
            rc == KIN_EINVAL ? ": " : "", rc == KIN_EINVAL ? full : "");
  free(rv.errmsg);
  free(err);
  return rc;
}
