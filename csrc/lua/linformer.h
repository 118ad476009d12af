/* linformer.h -- kinformer.informer (linformer.c): a Lua view of one shared
 * informer of a manager; a read-only lister in worker states. */
#ifndef LKIN_INFORMER_H
#define LKIN_INFORMER_H

#include <lua.h>

#include "lenv_core.h"

/* Pushes a kinformer.informer userdata over inf (which must belong to e;
 * it takes a reference on e). readonly: add_handler/remove_handler raise
 * (listers in worker states). */
void lkin_push_informer(lua_State *L, lkin_env *e, kin_informer *inf, const char *name,
                        int readonly);
/* Returns the informer at i and its env in *e (raises otherwise). */
kin_informer *lkin_check_informer(lua_State *L, int i, lkin_env **e);

/* Registers the kinformer.informer metatable in L. */
void lkin_open_informer(lua_State *L);

#endif
