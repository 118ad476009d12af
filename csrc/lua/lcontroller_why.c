/* lcontroller_why.c -- ctl:why(key): a controller's per-key history
 * (controller_history.h) as a Lua list, oldest first, with a printable
 * form. Each item is a table:
 *
 *   event      {type="event", time=, cause="add"|"update"|"delete"|"resync"|
 *               "owner"|"map"|"requeue"|"requeue_after"|"retry"|"manual"|"handover",
 *               enqueued=bool (false: a predicate dropped it), detail=,
 *               predicates="passed"|"dropped"|nil, after= (requeue_after,
 *               seconds), error= (retry), line=}
 *   reconcile  {type="reconcile", time= (start), number=, worker= (1-based),
 *               duration= (seconds), result="success"|"requeue"|
 *               "requeue_after"|"error"|"terminal", message=, nwrites=,
 *               writes={{method=, path=, code=, denied=}, ...} (at most 8
 *               kept; denied = {webhook=, message=} when an admission
 *               webhook denied the write), line= (two lines: started, done)}
 *
 * time is the wall clock in seconds (a float). The list's metatable has a
 * __tostring that joins the lines, so the REPL prints it readably:
 *
 *   12:00:01.234 enqueued: update (resourceVersion 41 -> 42; predicates: generation_changed passed)
 *   12:00:01.240 reconcile #7 started (worker 1)
 *   12:00:01.243 reconcile #7 done in 3.1 ms: requeue_after 30s; writes: PUT /apis/apps/v1/namespaces/default/deployments/web 200
 *
 * Reads C state only (the history's lock); never blocks on a reconcile. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "controller_history.h"
#include "lcontroller_int.h"
#include "reconcile.h"

#define WHY_MT "kinformer.why"

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_num(lua_State *L, const char *k, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* Pushes the table of event e. */
static void push_event(lua_State *L, const kin_hist_entry *e) {
  const char *cause = kin_hist_cause_name(e->cause);
  int dropped = e->pred == KIN_PRED_DROPPED;
  lua_createtable(L, 0, 9);
  set_str(L, "type", "event");
  set_num(L, "time", (double)e->wall_ns / 1e9);
  set_str(L, "cause", cause);
  lua_pushboolean(L, !dropped);
  lua_setfield(L, -2, "enqueued");
  if (e->pred != KIN_PRED_NONE) set_str(L, "predicates", dropped ? "dropped" : "passed");
  if (e->cause == KIN_CAUSE_REQUEUE_AFTER) set_num(L, "after", (double)e->dur_ns / 1e9);
  if (e->cause == KIN_CAUSE_RETRY) set_str(L, "error", e->text);
  else if (e->text[0]) set_str(L, "detail", e->text);
}

/* Sets .denied = {webhook=, message=} on write nw of the list on the top of
 * the stack from the DENIAL entries starting at v[j] (their texts joined:
 * "<webhook>\t<message>", "..." when cut); returns the index after them. */
static size_t push_denial(lua_State *L, const kin_hist_entry *v, size_t n, size_t j, int nw) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  int cut = 0;
  uint32_t seq = v[j].seq;
  for (; j < n && v[j].type == KIN_HIST_DENIAL && v[j].seq == seq; j++) {
    luaL_addstring(&b, v[j].text);
    cut = v[j].truncated;
  }
  if (cut) luaL_addstring(&b, "...");
  luaL_pushresult(&b);
  const char *s = lua_tostring(L, -1), *tab = strchr(s, '\t');
  if (nw > 0) { /* the write it follows */
    if (lua_rawgeti(L, -2, nw) == LUA_TTABLE) {
      lua_createtable(L, 0, 2);
      lua_pushlstring(L, s, tab ? (size_t)(tab - s) : strlen(s));
      lua_setfield(L, -2, "webhook");
      lua_pushstring(L, tab ? tab + 1 : "");
      lua_setfield(L, -2, "message");
      lua_setfield(L, -2, "denied");
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return j;
}

/* Pushes the table of reconcile v[i] with its writes (the WRITE entries
 * that follow it) and returns the index after them. */
static size_t push_reconcile(lua_State *L, const kin_hist_entry *v, size_t n, size_t i) {
  const kin_hist_entry *e = &v[i];
  const char *result = kin_hist_result_name(e->cause);
  lua_createtable(L, 0, 11);
  set_str(L, "type", "reconcile");
  set_num(L, "time", (double)e->wall_ns / 1e9);
  set_int(L, "number", e->seq);
  set_int(L, "worker", e->worker + 1);
  set_num(L, "duration", (double)e->dur_ns / 1e9);
  set_str(L, "result", result);
  set_str(L, "message", e->text);
  set_int(L, "nwrites", e->code);
  size_t j = i + 1;
  lua_newtable(L);
  for (int nw = 0; j < n && (v[j].type == KIN_HIST_WRITE || v[j].type == KIN_HIST_DENIAL) &&
                   v[j].seq == e->seq;
       j++) {
    if (v[j].type == KIN_HIST_DENIAL) {
      j = push_denial(L, v, n, j, nw) - 1;
      continue;
    }
    const char *sp = strchr(v[j].text, ' ');
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, v[j].text, sp ? (size_t)(sp - v[j].text) : strlen(v[j].text));
    lua_setfield(L, -2, "method");
    set_str(L, "path", sp ? sp + 1 : "");
    set_int(L, "code", v[j].code);
    lua_rawseti(L, -2, ++nw);
  }
  lua_setfield(L, -2, "writes");
  /* the requeue_after delay is on the event that follows the writes */
  for (size_t k = j; k < n && v[k].seq == e->seq; k++)
    if (v[k].type == KIN_HIST_EVENT && v[k].cause == KIN_CAUSE_REQUEUE_AFTER)
      set_num(L, "after", (double)v[k].dur_ns / 1e9);
  return j;
}

static int why_tostring(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_Integer n = luaL_len(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    lua_getfield(L, -1, "line");
    lua_remove(L, -2);
    if (i > 1) luaL_addchar(&b, '\n');
    luaL_addvalue(&b);
  }
  if (n == 0) luaL_addstring(&b, "(no history)");
  luaL_pushresult(&b);
  return 1;
}

int lctl_push_why(lua_State *L, kin_controller *c, const char *key) {
  kin_history *h = kin_controller_history(c);
  kin_hist_entry *v = NULL;
  size_t n = 0;
  if (h && kin_history_get(h, key, &v, &n) < 0) {
    lua_pushnil(L);
    lua_pushliteral(L, "not enough memory");
    lua_pushliteral(L, "ENOMEM");
    return 3;
  }
  lua_createtable(L, (int)n, 0);
  lua_Integer k = 0;
  char line[1600];
  for (size_t i = 0; i < n;) {
    size_t next = kin_hist_format(v, n, i, line, sizeof(line));
    if (v[i].type == KIN_HIST_RECONCILE) push_reconcile(L, v, n, i);
    else if (v[i].type == KIN_HIST_EVENT) push_event(L, &v[i]);
    else { /* a write whose reconcile was overwritten by the ring */
      i = next;
      continue;
    }
    lua_pushstring(L, line);
    lua_setfield(L, -2, "line");
    lua_rawseti(L, -2, ++k);
    i = next;
  }
  free(v);
  if (luaL_newmetatable(L, WHY_MT)) {
    lua_pushcfunction(L, why_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "kinformer.why");
    lua_setfield(L, -2, "__name");
  }
  lua_setmetatable(L, -2);
  return 1;
}
