/* test_lua_scenarios.c -- Lua scripts (spec/c/lua/scenarios/NAME.lua) that
 * drive the whole binding against an in-process kinformer.sim: managers,
 * informers with handlers on listener threads, controllers with worker
 * states, the REST client from several states at once. Run in this binary
 * so that ASan and TSan instrument the binding's threads, which busted
 * (release core.so under the stock lua5.4) cannot show them.
 *
 * A scenario fails by raising (assert); the message and traceback become
 * the test's failure. Run from the repository root. */
#include "kin_test.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

int luaopen_kinformer_core(lua_State *L);
int luaopen_kinformer_simcore(lua_State *L); /* lsim.c: require "kinformer.sim" */

static int traceback(lua_State *L) {
  luaL_traceback(L, L, luaL_tolstring(L, 1, NULL), 1);
  return 1;
}

/* Runs spec/c/lua/scenarios/<name>.lua in a fresh state whose
 * require "kinformer.core" and require "kinformer.simcore" (under
 * kinformer.sim) are this binary's binding. */
static void run_scenario(const char *name) {
  lua_State *L = luaL_newstate();
  assert_non_null(L);
  luaL_openlibs(L);
  assert_int_equal(luaL_dostring(L, "package.path = 'lua/?.lua;lua/?/init.lua;"
                                    "spec/c/lua/scenarios/?.lua;' .. package.path"),
                   LUA_OK);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_kinformer_core);
  lua_setfield(L, -2, "kinformer.core");
  lua_pushcfunction(L, luaopen_kinformer_simcore);
  lua_setfield(L, -2, "kinformer.simcore");
  lua_pop(L, 1);
  char path[256];
  snprintf(path, sizeof(path), "spec/c/lua/scenarios/%s.lua", name);
  lua_pushcfunction(L, traceback);
  int rc = luaL_loadfile(L, path);
  if (rc == LUA_OK) rc = lua_pcall(L, 0, 0, -2);
  if (rc != LUA_OK) {
    char msg[4096];
    snprintf(msg, sizeof(msg), "%s", lua_tostring(L, -1));
    lua_close(L);
    fail_msg("scenario %s failed: %s", name, msg);
  }
  lua_close(L); /* runs every __gc: managers, controllers and envs shut down here */
}


/* Warnings and errors of a scenario that provokes them on purpose: kept
 * (guarded by g_log_mu, written from the binding's threads) and asserted
 * instead of printed into a green run. */
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[16384];
static size_t g_log_len;

static void capture_sink(void *ud, kin_log_level level, const char *component, const char *msg) {
  if (level > KIN_LOG_WARN) return;
  pthread_mutex_lock(&g_log_mu);
  int n = snprintf(g_log + g_log_len, sizeof(g_log) - g_log_len, "[%s] %s\n", component, msg);
  if (n > 0) g_log_len += (size_t)n < sizeof(g_log) - g_log_len ? (size_t)n : sizeof(g_log) - g_log_len - 1;
  pthread_mutex_unlock(&g_log_mu);
}

/* Runs scenario name with its warnings and errors captured. */
static void run_captured(const char *name) {
  g_log_len = 0;
  g_log[0] = 0;
  kin_log_set_sink(capture_sink, NULL);
  run_scenario(name);
  kin_log_set_sink(NULL, NULL);
}

static void assert_logged(const char *what) {
  pthread_mutex_lock(&g_log_mu);
  const char *hit = strstr(g_log, what);
  pthread_mutex_unlock(&g_log_mu);
  if (!hit) fail_msg("expected a log line with %s; captured:\n%s", what, g_log);
}

static void test_lua_scenarios_Informers(void **state) {
  run_captured("informers");
  for (int i = 10; i <= 40; i += 10) {
    char want[160];
    snprintf(want, sizeof(want), "handler on_update for default/cm%d failed: "
             "spec/c/lua/scenarios/informers.lua:25: refused cm%d", i, i);
    assert_logged(want);
  }
}

static void test_lua_scenarios_Controller(void **state) {
  run_captured("controller");
  assert_logged("[controller] mirror: Reconciler error for default/cm-fail: "
                "spec/c/lua/scenarios/controller.lua:26: always fails\nstack traceback:");
}

static void test_lua_scenarios_NeverWedged(void **state) {
  run_captured("never_wedged");
  assert_logged("[controller] controller \"timed\": reconcile of \"default/loop\" exceeded "
                "reconcile_timeout 0.3s (ran ");
  assert_logged("); interrupted at spec/c/lua/scenarios/never_wedged.lua:");
  assert_logged("reconcile of \"default/slow\" exceeded reconcile_timeout 0.3s (ran ");
  assert_logged("); interrupted (in a REST call)");
  assert_logged("[controller] controller \"stuck\": all 1 workers busy for more than 0.2s, "
                "nothing else is reconciled: \"default/loop\" (");
  assert_logged("[controller] controller \"stuck\": reconcile of \"default/loop\" still running "
                "when shutdown_timeout passed (ran ");
}


KIN_SUITE(lua_scenarios, cmocka_unit_test(test_lua_scenarios_Informers),
          cmocka_unit_test(test_lua_scenarios_Controller),
          cmocka_unit_test(test_lua_scenarios_NeverWedged))
