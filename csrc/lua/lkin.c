/* lkin.c -- luaopen_kinformer_core: the C module under require "kinformer". */
#include "lkin.h"

#include <pthread.h>

#include "kin.h"
#include "lenv.h"

/* The names come from the core's one table (kin_errname in kin.c). */
const char *lkin_errname(int err) { return kin_errname(err); }

int lkin_fail(lua_State *L, int err, const char *what) {
  lua_pushnil(L);
  lua_pushfstring(L, "%s: %s", what, kin_strerror(err));
  lua_pushstring(L, lkin_errname(err));
  return 3;
}

void lkin_new_type(lua_State *L, const char *name, const luaL_Reg *methods,
                   lua_CFunction close, lua_CFunction tostring) {
  luaL_newmetatable(L, name);
  lua_newtable(L); /* luaL_newlib needs an array, not a pointer */
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

void lkin_signals_block_all(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
}

void lkin_signals_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

void lkin_setmetatable(lua_State *L, const char *name) {
  if (luaL_getmetatable(L, name) == LUA_TNIL) {
    /* A worker state may push a binding value before its code ever
     * required the binding: open it now so the metatables exist. */
    lua_pop(L, 1);
    luaL_requiref(L, "kinformer.core", luaopen_kinformer_core, 0);
    lua_pop(L, 1);
    luaL_getmetatable(L, name);
  }
  lua_setmetatable(L, -2);
}

int luaopen_kinformer_core(lua_State *L) {
  lua_newtable(L);
  lua_pushliteral(L, KIN_VERSION);
  lua_setfield(L, -2, "version");
  lkin_open_object(L);
  lkin_open_sim(L);
  lkin_open_worker(L);
  lkin_open_env(L);
  lkin_open_informer(L);
  lkin_open_client(L);
  lkin_open_controller(L);
  lkin_open_json(L);
  return 1;
}
