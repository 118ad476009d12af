/* lkin.h -- the entry of the Lua module kinformer.core (lkin.c). */
#ifndef LKIN_H
#define LKIN_H

#include <lua.h>

/* require "kinformer.core": registers every type of the binding in L and
 * returns the module table (the constructors, the JSON codec and the
 * module-level functions). Also hands itself to worker_state.c, which
 * preloads it in every worker state. */
int luaopen_kinformer_core(lua_State *L);

#endif
