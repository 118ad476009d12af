/* lenv.h -- kinformer.env, the Lua face of a manager's C state
 * (lenv_core.h): env:informer, env:client, env:lister, env:controller,
 * env:step, ... (lenv.c). */
#ifndef LKIN_ENV_H
#define LKIN_ENV_H

#include <lua.h>

#include "lenv_core.h"

/* Pushes a kinformer.env userdata holding a new reference on e (any state:
 * a controller's worker states get one in their ctx). */
void lkin_push_env(lua_State *L, lkin_env *e);
/* Returns the env of the kinformer.env at i (raises when it is not one or
 * it was closed). */
lkin_env *lkin_check_env(lua_State *L, int i);

/* Registers the kinformer.env metatable in L and core.env and
 * core.controller into the module table at the top of the stack. */
void lkin_open_env(lua_State *L);

#endif
