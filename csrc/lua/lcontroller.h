/* lcontroller.h -- kinformer.controller (lcontroller.c): a kin_controller
 * whose watches enqueue in C and whose workers each run the reconciler in
 * their own worker state. */
#ifndef LKIN_CONTROLLER_H
#define LKIN_CONTROLLER_H

#include <lua.h>

#include "lenv_core.h"

/* Pushes a userdata over e holding a new reference on it: lkin_push_env
 * (lenv.h), passed in so that this file needs nothing of the env type. */
typedef void lkin_push_env_fn(lua_State *L, lkin_env *e);

/* env:controller(spec), for lenv.c: the spec table at 2 (the normalised
 * one lua/kinformer/controller.lua builds). Pushes the controller userdata
 * and returns 1; raises on a bad spec (the message names the field);
 * nothing leaks then. Worker states get their ctx's env from push_env.
 * Main state only. */
int lkin_controller_new(lua_State *L, lkin_env *e, lkin_push_env_fn *push_env);

/* Registers the kinformer.controller metatable in L. */
void lkin_open_controller(lua_State *L);

#endif
