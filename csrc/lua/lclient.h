/* lclient.h -- kinformer.client (lclient.c): the REST verbs of a manager's
 * client, usable from any Lua state. */
#ifndef LKIN_CLIENT_H
#define LKIN_CLIENT_H

#include <lua.h>

#include "lenv_core.h"

/* Pushes a kinformer.client userdata over e->client (a new reference on e). */
void lkin_push_client(lua_State *L, lkin_env *e);

/* Pushes r as {group=, version=, resource=, kind=, namespaced=}. */
void lkin_push_resource(lua_State *L, const kin_resource *r);

/* Registers the kinformer.client metatable in L. */
void lkin_open_client(lua_State *L);

#endif
