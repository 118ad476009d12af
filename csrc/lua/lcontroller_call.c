/* lcontroller_call.c -- the call of a controller's code in a worker
 * state: a reconcile's req and ctx made and the reconciler called, or a
 * map function called with its object and a ctx. The closures made here
 * run under lcontroller.c's pcall (and its message handler); what they
 * need of the state (its env, the ctx metatable, the field names) is
 * looked up once per state. */
#include <lauxlib.h>

#include "lcontroller_int.h"

#define ENV_KEY "kinformer.controller.env" /* a worker state's env userdata */

/* Registry key (its address): the ctx module's metatable, or its
 * for_request when it gives none. */
static const char ctx_new_key;

/* Pushes the state's env userdata, made on first use (and again after a
 * rebuild) and kept in the registry. */
static void push_state_env(lua_State *L, lctl *p) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, ENV_KEY) != LUA_TNIL) return;
  lua_pop(L, 1);
  p->push_env(L, p->env);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, ENV_KEY);
}

/* do_call's upvalues: the state's env, the ctx module's name, p's For
 * resource (or nil), the controller's name, then the field names of req
 * and ctx, interned once per state (a rawset with them costs a fraction
 * of a setfield's lookup). */
enum { UV_ENV = 1, UV_CTX_MODULE, UV_FOR, UV_NAME, UV_K_NAMESPACE, UV_K_NAME, UV_K_KEY, UV_K_ENV,
       UV_K_CONTROLLER, UV_K_WORKER, UV_K_REQUEST, UV_K_FOR_RESOURCE, UV_COUNT = UV_K_FOR_RESOURCE };
static const char *const uv_keys[] = {"namespace", "name", "key", "env", "controller", "worker",
                                      "request", "for_resource"};

/* t[upvalue k] = the value at v (t, v absolute), raw. */
static void set_uv(lua_State *L, int t, int k, int v) {
  lua_pushvalue(L, lua_upvalueindex(k));
  lua_pushvalue(L, v);
  lua_rawset(L, t);
}

/* Pushes the ctx of a call: worker and req at those stack indices (0:
 * nil), lookup the ctx module's metatable or for_request at index mt
 * (absolute, as do_call found it). */
static void push_ctx(lua_State *L, int mt, int worker, int req) {
  if (lua_type(L, mt) == LUA_TTABLE) {
    lua_createtable(L, 0, 5);
    int t = lua_gettop(L);
    set_uv(L, t, UV_K_ENV, lua_upvalueindex(UV_ENV));
    set_uv(L, t, UV_K_CONTROLLER, lua_upvalueindex(UV_NAME));
    if (worker) set_uv(L, t, UV_K_WORKER, worker);
    if (req) set_uv(L, t, UV_K_REQUEST, req);
    set_uv(L, t, UV_K_FOR_RESOURCE, lua_upvalueindex(UV_FOR));
    lua_pushvalue(L, mt);
    lua_setmetatable(L, t);
    return;
  }
  lua_pushvalue(L, mt);
  lua_pushvalue(L, lua_upvalueindex(UV_ENV));
  lua_pushvalue(L, lua_upvalueindex(UV_NAME));
  if (worker) lua_pushvalue(L, worker);
  else lua_pushnil(L);
  if (req) lua_pushvalue(L, req);
  else lua_pushnil(L);
  lua_pushvalue(L, lua_upvalueindex(UV_FOR));
  lua_call(L, 5, 1);
}

/* Pushes the ctx module's metatable (or for_request), found once per state. */
static void push_ctx_maker(lua_State *L) {
  int ty = lua_rawgetp(L, LUA_REGISTRYINDEX, &ctx_new_key);
  if (ty == LUA_TFUNCTION || ty == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_getglobal(L, "require");
  lua_pushvalue(L, lua_upvalueindex(UV_CTX_MODULE));
  lua_call(L, 1, 1);
  if (lua_getfield(L, -1, "metatable") != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_getfield(L, -1, "for_request");
  }
  lua_remove(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &ctx_new_key);
}

/* do_map(fn, obj) -> fn(obj, ctx): a map function's call (ctx without
 * worker or request). */
static int do_map(lua_State *L) {
  lua_settop(L, 2);
  push_ctx_maker(L); /* 3 */
  push_ctx(L, 3, 0, 0); /* 4 */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 4);
  lua_call(L, 2, 1);
  return 1;
}

/* do_call(fn, worker, namespace, name, key) -> fn(req, ctx), two results:
 * req = {namespace =, name =, key =}, ctx the table
 * require(ctx module).for_request(env, controller, worker, req, for
 * resource) makes. ctx is built here when the module gives its metatable
 * (`metatable`; kinformer.ctx does: the same five fields, no Lua call per
 * reconcile), else by calling for_request; either is looked up once per
 * state (reconciles are the hot path; a state serves one controller).
 * Runs under a pcall with msgh. */
static int do_call(lua_State *L) {
  lua_settop(L, 5);
  push_ctx_maker(L);        /* 6 */
  lua_createtable(L, 0, 3); /* 7: req */
  set_uv(L, 7, UV_K_NAMESPACE, 3);
  set_uv(L, 7, UV_K_NAME, 4);
  set_uv(L, 7, UV_K_KEY, 5);
  push_ctx(L, 6, 2, 7); /* 8 */
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 7);
  lua_pushvalue(L, 8);
  lua_call(L, 2, 2);
  return 2;
}

void lctl_push_call(lua_State *L, lctl *p, int reconcile) {
  luaL_checkstack(L, UV_COUNT + 2, "lctl_push_call");
  push_state_env(L, p);
  lua_pushstring(L, p->ctx_module);
  if (*p->for_resource) lua_pushstring(L, p->for_resource);
  else lua_pushnil(L);
  lua_pushstring(L, p->name);
  for (size_t i = 0; i < sizeof(uv_keys) / sizeof(uv_keys[0]); i++) lua_pushstring(L, uv_keys[i]);
  lua_pushcclosure(L, reconcile ? do_call : do_map, UV_COUNT);
}

