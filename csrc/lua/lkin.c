/* lkin.c -- luaopen_kinformer_core, the entry of the C module under
 * require "kinformer": it registers the types (one file each, see their
 * headers) and holds the module-level functions, which belong to no type:
 * core.log, core.log_enabled, core.set_log_level, core.monotime,
 * core.block_signals, core.exit_now (core.limited_call and
 * core.term_signal_pending come from lcall_limit.c, core.stop_requested
 * from lcall_proc.c, core.log_hold and core.log_take come
 * from lloghold.c, core.reconcile_result and
 * core.is_terminal come from lresult.c). */
#include "lkin.h"

#include <lauxlib.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "kin.h"
#include "ladmin.h"
#include "laux.h"
#include "lcall_limit.h"
#include "lcall_proc.h"
#include "lclient.h"
#include "lcontroller.h"
#include "levent.h"
#include "lenv.h"
#include "lhandler.h"
#include "lfswatch.h"
#include "lleader.h"
#include "lshard.h"
#include "linformer.h"
#include "ljson.h"
#include "lmetrics.h"
#include "lloghold.h"
#include "lobject.h"
#include "lresult.h"
#include "lselector.h"
#include "lview.h"
#include "log.h"
#include "lwebhook.h"
#include "lworker.h"
#include "worker_state.h"

/* ---- logging ------------------------------------------------------------- */

static const char *const level_names[] = {"error", "warn", "info", "debug", NULL};

static kin_log_level check_level(lua_State *L, int i) {
  if (lua_type(L, i) == LUA_TNUMBER) {
    lua_Integer v = luaL_checkinteger(L, i);
    luaL_argcheck(L, v >= 0 && v <= 3, i, "level must be 0..3");
    return (kin_log_level)v;
  }
  return (kin_log_level)luaL_checkoption(L, i, NULL, level_names);
}

/* core.log(level, component, msg): one line through kin's log (its sink and
 * level: KINFORMER_LOG_LEVEL). level: "error"|"warn"|"info"|"debug" or 0..3. */
static int l_log(lua_State *L) {
  kin_log_level lv = check_level(L, 1);
  const char *comp = luaL_checkstring(L, 2);
  const char *msg = luaL_checkstring(L, 3);
  if (kin_log_enabled(lv)) kin_log(lv, comp, "%s", msg);
  return 0;
}

/* core.log_enabled(level) -> boolean: whether core.log at level prints. */
static int l_log_enabled(lua_State *L) {
  lua_pushboolean(L, kin_log_enabled(check_level(L, 1)));
  return 1;
}

/* core.set_log_level("error"|"warn"|"info"|"debug") sets the process-wide
 * log verbosity; raises on another name. */
static int l_set_log_level(lua_State *L) {
  kin_log_set_level((kin_log_level)luaL_checkoption(L, 1, NULL, level_names));
  return 0;
}

/* ---- time, signals, exit ------------------------------------------------- */

/* core.monotime() -> seconds on a monotonic clock (a float). Any state. */
static int l_monotime(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
  return 1;
}

/* core.block_signals(): blocks SIGINT and SIGTERM in the calling thread;
 * call before starting anything that makes threads (an in-process sim, a
 * manager) when the script will wait for signals (env:wait_signal). */
static int l_block_signals(lua_State *L) {
  (void)L;
  lkin_signals_block_term();
  return 0;
}

/* core.exit_now(code): flushes stdout and stderr and ends the process at
 * once (_exit), without closing Lua states or joining threads: what a
 * second SIGINT/SIGTERM does while reconciles are still running. */
/* core.sleep(seconds): blocks the calling thread (0 .. 60 s), e.g. a
 * reconciler standing in for a call to a slow external system. Not cut by
 * reconcile_timeout while it sleeps (it is C); the hook runs after. */
static int l_sleep(lua_State *L) {
  lua_Number s = luaL_checknumber(L, 1);
  luaL_argcheck(L, s >= 0 && s <= 60, 1, "seconds must be 0..60");
  struct timespec ts = {(time_t)s, (long)((s - (lua_Number)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return 0;
}

static int l_exit_now(lua_State *L) {
  int code = (int)luaL_optinteger(L, 1, 1);
  fflush(NULL);
  _exit(code);
  return 0;
}

/* ---- the module ---------------------------------------------------------- */

static const luaL_Reg module_funcs[] = {
    {"log", l_log},
    {"log_enabled", l_log_enabled},
    {"set_log_level", l_set_log_level},
    {"monotime", l_monotime},
    {"block_signals", l_block_signals},
    {"exit_now", l_exit_now},
    {"sleep", l_sleep},
    {NULL, NULL},
};

int luaopen_kinformer_core(lua_State *L) {
  /* the worker states built from now on preload this very module */
  lkin_ws_set_core(luaopen_kinformer_core);
  /* the main state's limited calls count memory through this wrapper */
  lkin_call_limit_wrap_alloc(L);
  lua_newtable(L);
  lua_pushliteral(L, KIN_VERSION);
  lua_setfield(L, -2, "version");
  lkin_open_object(L);
  lkin_open_worker(L);
  lkin_open_env(L);
  lkin_open_informer(L);
  lkin_open_handler(L);
  lkin_open_client(L);
  lkin_open_event(L);
  lkin_open_controller(L);
  lkin_open_leader(L);
  lkin_open_shard(L);
  lkin_open_fswatch(L);
  lkin_open_json(L);
  lkin_open_view(L);
  lkin_open_result(L);
  lkin_open_metrics(L);
  lkin_open_admin(L);
  lkin_open_loghold(L);
  lkin_open_selector(L);
  lkin_open_call_limit(L);
  lkin_open_proc(L);
  lkin_open_webhook(L);
  luaL_setfuncs(L, module_funcs, 0);
  return 1;
}
