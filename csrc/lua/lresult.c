/* lresult.c -- what a reconciler's outcome means (lresult.h): the one
 * terminal-error test and the one mapping of returned values / raised
 * errors to a kin_result_action, for the controller's workers
 * (lcontroller.c) and, through core.reconcile_result / core.is_terminal,
 * for lua/kinformer/controller.lua and errors.lua. */
#include "lresult.h"

#include <lauxlib.h>
#include <stdint.h>

int lkin_is_terminal(lua_State *L, int i) {
  i = lua_absindex(L, i);
  if (lua_type(L, i) != LUA_TTABLE) return 0;
  lua_pushliteral(L, "kinformer_terminal");
  lua_rawget(L, i);
  int t = lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1);
  lua_pop(L, 1);
  return t;
}

const char *lkin_push_error_text(lua_State *L, int i) {
  i = lua_absindex(L, i);
  if (lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER) {
    lua_pushvalue(L, i);
    return lua_tostring(L, -1);
  }
  if (luaL_getmetafield(L, i, "__tostring") != LUA_TNIL) {
    lua_pop(L, 1);
    return luaL_tolstring(L, i, NULL);
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

int lkin_result_of_return(lua_State *L, int r, kin_result_action *out) {
  int res = lua_absindex(L, r), err = res + 1;
  out->requeue_after_ns = 0;
  if (lkin_is_terminal(L, res) || (!lua_toboolean(L, res) && lkin_is_terminal(L, err))) {
    out->kind = KIN_RESULT_TERMINAL_ERROR;
    lkin_push_error_text(L, lkin_is_terminal(L, res) ? res : err);
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
    lkin_push_error_text(L, err);
    return lua_gettop(L);
  case LUA_TTABLE: {
    /* priority = n: the requeue's priority (workqueue.h; default: the one
     * the request had) */
    lua_getfield(L, res, "priority");
    if (!lua_isnil(L, -1)) {
      int isint;
      lua_Integer p = lua_tointegerx(L, -1, &isint);
      if (!isint || p < -1000000000 || p > 1000000000) {
        lua_pop(L, 1);
        out->kind = KIN_RESULT_ERROR;
        lua_pushliteral(L, "reconcile returned a bad priority (want an integer; higher goes first)");
        return lua_gettop(L);
      }
      out->has_priority = 1;
      out->priority = (int)p;
    }
    lua_pop(L, 1);
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
                    "{requeue = true} (either with priority = n), or nil and an error",
                    luaL_typename(L, res));
    return lua_gettop(L);
  }
}

int lkin_result_of_raise(lua_State *L, int i, kin_result_action *out) {
  i = lua_absindex(L, i);
  out->requeue_after_ns = 0;
  out->kind = lkin_is_terminal(L, i) ? KIN_RESULT_TERMINAL_ERROR : KIN_RESULT_ERROR;
  lkin_push_error_text(L, i);
  return lua_gettop(L);
}

/* core.reconcile_result(ok, a, b) -> kind [, detail]: the outcome of
 * ok, a, b = pcall(reconcile, ...) as the controller's workers see it
 * (lkin_result_of_return / lkin_result_of_raise). kind is "done",
 * "requeue", "requeue_after" (detail: seconds), "error" or "terminal"
 * (detail: the error's text). */
static int l_reconcile_result(lua_State *L) {
  lua_settop(L, 3);
  kin_result_action out = {0};
  int text = lua_toboolean(L, 1) ? lkin_result_of_return(L, 2, &out)
                                 : lkin_result_of_raise(L, 2, &out);
  static const char *const names[] = {"done", "requeue", "requeue_after", "error", "terminal"};
  lua_pushstring(L, names[out.kind]);
  if (out.kind == KIN_RESULT_REQUEUE_AFTER) {
    lua_pushnumber(L, (lua_Number)out.requeue_after_ns / 1e9);
    return 2;
  }
  if (text) {
    lua_pushvalue(L, text);
    return 2;
  }
  return 1;
}

/* core.is_terminal(v) -> boolean */
static int l_is_terminal(lua_State *L) {
  lua_pushboolean(L, lkin_is_terminal(L, 1));
  return 1;
}

void lkin_open_result(lua_State *L) {
  lua_pushcfunction(L, l_reconcile_result);
  lua_setfield(L, -2, "reconcile_result");
  lua_pushcfunction(L, l_is_terminal);
  lua_setfield(L, -2, "is_terminal");
}
