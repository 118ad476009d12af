/* lloghold.h -- core.log_hold and core.log_take (lloghold.c). */
#ifndef LLOGHOLD_H
#define LLOGHOLD_H

#include <lua.h>

/* Adds log_hold and log_take to the module table on top of L's stack. */
void lkin_open_loghold(lua_State *L);

#endif
