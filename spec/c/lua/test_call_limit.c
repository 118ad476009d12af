/* test_call_limit.c -- limited calls (csrc/lua/lcall_limit.h): the count
 * hook against a deadline and an abort flag set by another thread, nested
 * limits, and the main state's accounting allocator wrapper (a limited
 * call's growth refused, the state usable afterwards, nothing counted
 * outside a call). */
#include "kin_test.h"

#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "lcall_limit.h"

/* A state as the `lua` interpreter makes one, with the wrapper. */
static lua_State *wrapped_state(void) {
  lua_State *L = luaL_newstate();
  assert_non_null(L);
  luaL_openlibs(L);
  lkin_call_limit_wrap_alloc(L);
  return L;
}

/* Runs the Lua source src under cl; returns the status and leaves the
 * message (or nothing) on the stack. */
static int run_limited(lua_State *L, const char *src, lkin_call_limit *cl) {
  assert_int_equal(luaL_loadstring(L, src), LUA_OK);
  lkin_call_limit_begin(L, cl);
  int st = lua_pcall(L, 0, 0, 0);
  lkin_call_limit_end(L, cl);
  return st;
}

static void test_call_limit_Deadline(void **state) {
  (void)state;
  lua_State *L = wrapped_state();
  lkin_call_limit cl = {.what = "main-state handler", .name = "h", .option = "handler_timeout",
                        .timeout_ns = 200 * 1000000ull};
  uint64_t t0 = lkin_mono_ns();
  /* catching the error does not keep it running */
  int st = run_limited(L, "while true do pcall(function() while true do end end) end", &cl);
  uint64_t took = lkin_mono_ns() - t0;
  assert_int_equal(st, LUA_ERRRUN);
  assert_int_equal(cl.why, LKIN_CL_TIMEOUT);
  assert_true(took >= 200 * 1000000ull && took < 600 * 1000000ull);
  assert_non_null(strstr(lua_tostring(L, -1), "main-state handler h exceeded its time limit of 0.2s "
                                              "(option handler_timeout) at "));
  lua_pop(L, 1);
  /* the hook is gone: a long loop runs to its end */
  assert_int_equal(luaL_dostring(L, "local n = 0 for i = 1, 3e6 do n = n + 1 end return n"), 0);
  assert_int_equal(lua_tointeger(L, -1), 3000000);
  assert_null(lua_gethook(L));
  lua_close(L);
}

typedef struct {
  atomic_int *flag;
} setter;

static void *set_later(void *arg) {
  setter *s = arg;
  struct timespec ts = {0, 100 * 1000000L};
  nanosleep(&ts, NULL);
  atomic_store(s->flag, 1);
  return NULL;
}

static void test_call_limit_AbortFromAnotherThread(void **state) {
  (void)state;
  lua_State *L = wrapped_state();
  atomic_int flag = 0;
  lkin_call_limit cl = {.what = "transform", .name = "v1/pods", .abort = &flag};
  setter s = {&flag};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, set_later, &s), 0);
  int st = run_limited(L, "while true do end", &cl);
  pthread_join(t, NULL);
  assert_int_equal(st, LUA_ERRRUN);
  assert_int_equal(cl.why, LKIN_CL_ABORT);
  assert_non_null(strstr(lua_tostring(L, -1), "transform v1/pods interrupted: the manager is stopping"));
  lua_close(L);
}

static void test_call_limit_NestedEarlierDeadlineWins(void **state) {
  (void)state;
  lua_State *L = wrapped_state();
  lkin_call_limit outer = {.what = "outer", .option = "a", .timeout_ns = 150 * 1000000ull};
  lkin_call_limit inner = {.what = "inner", .option = "b", .timeout_ns = 60ull * 1000000000ull};
  lkin_call_limit_begin(L, &outer);
  assert_int_equal(run_limited(L, "while true do end", &inner), LUA_ERRRUN);
  lkin_call_limit_end(L, &outer);
  assert_int_equal(inner.why, LKIN_CL_TIMEOUT);
  assert_non_null(strstr(lua_tostring(L, -1), "inner exceeded its time limit of 0.15s (option a)"));
  /* what os.execute would honour: nothing once both ended */
  uint64_t dl;
  const atomic_int *ab;
  assert_int_equal(lkin_call_limit_current(L, &dl, &ab, NULL), 0);
  lua_close(L);
}

static void test_call_limit_Memory(void **state) {
  (void)state;
  lua_State *L = wrapped_state();
  lkin_call_limit cl = {.what = "on_start", .memory_limit = 8u << 20,
                        .mem_option = "main_memory_limit"};
  int st = run_limited(L, "local t = {} for i = 1, 1e8 do t[i] = ('x'):rep(64) .. i end", &cl);
  assert_int_equal(st, LUA_ERRMEM);
  assert_int_equal(cl.why, LKIN_CL_MEMORY);
  char msg[256];
  assert_string_equal(lkin_call_limit_message(&cl, msg, sizeof(msg)),
                      "on_start exceeded its memory limit of 8388608 bytes (option main_memory_limit)");
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT);
  /* outside a limited call nothing is counted: 32 MiB are fine */
  assert_int_equal(luaL_dostring(L, "local t = {} for i = 1, 4e5 do t[i] = ('y'):rep(64) .. i end "
                                    "return #t"), 0);
  assert_int_equal(lua_tointeger(L, -1), 400000);
  lua_pop(L, 1);
  /* a call that frees what was made before it is not charged for it */
  assert_int_equal(luaL_dostring(L, "big = {} for i = 1, 2e5 do big[i] = ('z'):rep(64) .. i end"), 0);
  lkin_call_limit cl2 = {.what = "check", .memory_limit = 4u << 20};
  st = run_limited(L, "big = nil collectgarbage() local t = {} for i = 1, 3e4 do t[i] = ('w'):rep(64) .. i end",
                   &cl2);
  assert_int_equal(st, LUA_OK);
  assert_int_equal(cl2.why, LKIN_CL_NONE);
  lua_close(L);
}

KIN_SUITE(call_limit, cmocka_unit_test(test_call_limit_Deadline),
          cmocka_unit_test(test_call_limit_AbortFromAnotherThread),
          cmocka_unit_test(test_call_limit_NestedEarlierDeadlineWins),
          cmocka_unit_test(test_call_limit_Memory))
