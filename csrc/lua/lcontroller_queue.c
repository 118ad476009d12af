/* lcontroller_queue.c -- ctl:queue([max]): what a controller's workqueue
 * holds now (kin_workqueue_snapshot, the data `kinformer inspect` shows),
 * as a Lua list of
 *
 *   {key=, state="ready"|"processing"|"waiting", due_in= (waiting: seconds
 *    until it is added, on the controller's clock; 0 once due),
 *    processing_for= (processing: seconds), requeues= (its retries)}
 *
 * ready items first in queue order, then those being processed, then the
 * waiting ones. The second result is the smallest due_in of the waiting
 * items (nil when none wait): with a fake clock (kinformer.manager{clock =
 * "fake"}) it tells how far to advance for the next requeue_after or retry
 * to fire. The picture is taken part by part, not atomically. */
#include <lauxlib.h>
#include <lua.h>
#include <stdint.h>

#include "controller.h"
#include "lcontroller_int.h"
#include "workqueue.h"

static const char *state_name(kin_wq_state s) {
  switch (s) {
  case KIN_WQ_READY: return "ready";
  case KIN_WQ_PROCESSING: return "processing";
  default: return "waiting";
  }
}

int lctl_push_queue(lua_State *L, kin_controller *c, lua_Integer max) {
  kin_wq_item *v;
  size_t n;
  size_t cap = max < 0 ? SIZE_MAX : (size_t)max;
  int rc = kin_workqueue_snapshot(kin_controller_queue(c), cap, &v, &n);
  if (rc < 0) return luaL_error(L, "ctl:queue: not enough memory");
  lua_createtable(L, (int)(n < 1000000 ? n : 1000000), 0);
  uint64_t next = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 5);
    lua_pushstring(L, v[i].key);
    lua_setfield(L, -2, "key");
    lua_pushstring(L, state_name(v[i].state));
    lua_setfield(L, -2, "state");
    lua_pushnumber(L, (lua_Number)v[i].due_in_ns / 1e9);
    lua_setfield(L, -2, "due_in");
    lua_pushnumber(L, (lua_Number)v[i].since_ns / 1e9);
    lua_setfield(L, -2, "processing_for");
    lua_pushinteger(L, v[i].requeues);
    lua_setfield(L, -2, "requeues");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
    if (v[i].state == KIN_WQ_WAITING && v[i].due_in_ns < next) next = v[i].due_in_ns;
  }
  kin_workqueue_snapshot_free(v, n);
  if (next == UINT64_MAX) lua_pushnil(L);
  else lua_pushnumber(L, (lua_Number)next / 1e9);
  return 2;
}
