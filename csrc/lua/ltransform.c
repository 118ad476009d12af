/* ltransform.c -- an informer's Lua transform under a time limit
 * (ltransform.h). */
#include "ltransform.h"

#include <lauxlib.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "lcall_limit.h"
#include "ljson.h"
#include "log.h"
#include "worker_state.h"

/* One worker state shared by the reflector threads of one informer, built
 * on first use. mu guards ws (a Lua state is not reentrant); the rest is
 * immutable after lkin_transform_new. */
struct lkin_transform {
  pthread_mutex_t mu;
  lkin_ws_template *tmpl;
  lkin_ws *ws;
  char *name;
  int drop;
  const atomic_int *abort;
};

lkin_transform *lkin_transform_new(lua_State *L, int idx, const char *name, size_t memory_limit,
                                   uint64_t timeout_ns, int drop, const atomic_int *abort) {
  lkin_ws_template *tmpl = lkin_ws_template_new(L, idx, "transform", memory_limit);
  lkin_ws_template_set_call_limit(tmpl, timeout_ns, "transform_timeout");
  lkin_transform *t = calloc(1, sizeof(*t));
  if (!t || !(t->name = strdup(name))) {
    free(t);
    lkin_ws_template_unref(tmpl);
    luaL_error(L, "not enough memory");
    return NULL;
  }
  t->tmpl = tmpl;
  t->drop = drop;
  t->abort = abort;
  pthread_mutex_init(&t->mu, NULL);
  return t;
}

void lkin_transform_free(void *arg) {
  lkin_transform *t = arg;
  lkin_ws_close(t->ws);
  lkin_ws_template_unref(t->tmpl);
  pthread_mutex_destroy(&t->mu);
  free(t->name);
  free(t);
}

typedef struct {
  kin_obj *in;
  kin_obj *out; /* the new object, one reference */
  int rc;       /* parse error of the returned table's JSON */
} transform_job;

/* Runs in the transform's worker state (lkin_ws_protect): calls t(obj) and
 * parses the table it returns into job->out. Raises on a Lua error. */
static int transform_in_state(lua_State *L) {
  transform_job *j = lua_touserdata(L, 1);
  lua_settop(L, 0);
  if (lkin_ws_push_function(L, NULL) < 0) return lua_error(L);
  lkin_ws_push_object(L, j->in);
  if (lkin_ws_call(L, 1, 1) != LUA_OK) return lua_error(L);
  if (!lua_istable(L, -1))
    return luaL_error(L, "transform must return the object (a table), got %s",
                      luaL_typename(L, -1));
  if (lkin_json_encode(L, -1) < 0)
    return luaL_error(L, "transform returned a table that cannot be encoded: %s",
                      lua_tostring(L, -1));
  size_t n;
  const char *json = lua_tolstring(L, -1, &n);
  j->rc = kin_obj_parse(json, n, &j->out);
  return 0;
}

/* Appends s as a JSON string to b (room for 6 bytes per input byte + 3
 * is the caller's). */
static size_t put_str(char *b, size_t n, const char *s) {
  b[n++] = '"';
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') {
      b[n++] = '\\';
      b[n++] = (char)*p;
    } else if (*p < 0x20) {
      n += (size_t)sprintf(b + n, "\\u%04x", *p);
    } else {
      b[n++] = (char)*p;
    }
  }
  b[n++] = '"';
  return n;
}

/* Returns a new object holding only in's identity (ltransform.h's
 * "drop"), or NULL when out of memory. */
static kin_obj *identity_of(kin_obj *in) {
  const char *f[] = {kin_obj_api_version(in), kin_obj_kind_name(in), kin_obj_name(in),
                     kin_obj_namespace(in), kin_obj_uid(in), kin_obj_resource_version(in)};
  size_t cap = 128;
  for (size_t i = 0; i < 6; i++) cap += 6 * strlen(f[i] ? f[i] : "") + 32;
  char *b = malloc(cap);
  if (!b) return NULL;
  size_t n = 0;
  n += (size_t)sprintf(b + n, "{\"apiVersion\":");
  n = put_str(b, n, f[0]);
  n += (size_t)sprintf(b + n, ",\"kind\":");
  n = put_str(b, n, f[1]);
  n += (size_t)sprintf(b + n, ",\"metadata\":{\"name\":");
  n = put_str(b, n, f[2]);
  if (f[3] && *f[3]) {
    n += (size_t)sprintf(b + n, ",\"namespace\":");
    n = put_str(b, n, f[3]);
  }
  n += (size_t)sprintf(b + n, ",\"uid\":");
  n = put_str(b, n, f[4]);
  n += (size_t)sprintf(b + n, ",\"resourceVersion\":");
  n = put_str(b, n, f[5]);
  n += (size_t)sprintf(b + n, "}}");
  kin_obj *o = NULL;
  kin_obj_parse(b, n, &o);
  free(b);
  return o;
}

int lkin_transform_run(void *ud, kin_obj *in, kin_obj **out) {
  lkin_transform *t = ud;
  if (kin_obj_kind_of(in) == KIN_OBJ_TOMBSTONE) {
    *out = kin_obj_ref(in);
    return 0;
  }
  transform_job job = {in, NULL, 0};
  char *err = NULL;
  int rc = 0, cut = LKIN_CL_NONE;
  pthread_mutex_lock(&t->mu);
  if (!t->ws && (rc = lkin_ws_open(t->tmpl, t->name, &t->ws, &err)) == 0)
    lkin_ws_set_abort(t->ws, t->abort);
  if (rc == 0) {
    rc = lkin_ws_protect(t->ws, transform_in_state, &job, &err);
    cut = lkin_ws_last_cut(t->ws);
  }
  pthread_mutex_unlock(&t->mu);
  if (rc == 0 && job.out) {
    free(err);
    *out = job.out;
    return 0;
  }
  kin_obj_unref(job.out);
  const char *why = err ? err : job.rc ? kin_strerror(job.rc) : "not enough memory";
  size_t wl = strcspn(why, "\n"); /* the traceback's first line */
  if (cut != LKIN_CL_NONE && t->drop) {
    kin_log(KIN_LOG_ERROR, "transform",
            "informer %s: transform of %s cut (%.*s): cached as its identity only "
            "(transform_on_timeout = \"drop\")",
            t->name, kin_obj_key(in), (int)wl, why);
    free(err);
    *out = identity_of(in);
    return *out ? 0 : KIN_ENOMEM;
  }
  if (cut != LKIN_CL_NONE)
    kin_log(KIN_LOG_ERROR, "transform", "informer %s: transform of %s cut (%.*s): cached untransformed",
            t->name, kin_obj_key(in), (int)wl, why);
  else
    kin_log(KIN_LOG_ERROR, "transform", "%s: transform of %s failed, cached unchanged: %s",
            t->name, kin_obj_key(in), why);
  free(err);
  *out = kin_obj_ref(in);
  return 0;
}
