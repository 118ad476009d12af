/* lselector.h -- kinformer.label_selector (lselector.c): core.label_selector(s)
 * and sel:matches(labels). */
#ifndef LKIN_SELECTOR_H
#define LKIN_SELECTOR_H

#include <lua.h>

/* Registers the type and core.label_selector in the table at the top of
 * the stack (the module being opened). */
void lkin_open_selector(lua_State *L);

#endif
