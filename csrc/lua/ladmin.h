/* ladmin.h -- core.http_get (ladmin.c): the client side of the admin
 * endpoint, for `kinformer inspect`. */
#ifndef LKIN_ADMIN_H
#define LKIN_ADMIN_H

#include <lua.h>

/* Sets core.http_get in the module table at the top of L. */
void lkin_open_admin(lua_State *L);

#endif
