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
#include <stdio.h>
#include <string.h>

int luaopen_kinformer_core(lua_State *L);

static int traceback(lua_State *L) {
  luaL_traceback(L, L, luaL_tolstring(L, 1, NULL), 1);
  return 1;
}

/* Runs spec/c/lua/scenarios/<name>.lua in a fresh state whose
 * require "kinformer.core" is this binary's binding. */
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

static void test_lua_scenarios_Informers(void **state) { run_scenario("informers"); }
static void test_lua_scenarios_Controller(void **state) { run_scenario("controller"); }


KIN_SUITE(lua_scenarios, cmocka_unit_test(test_lua_scenarios_Informers),
          cmocka_unit_test(test_lua_scenarios_Controller))
