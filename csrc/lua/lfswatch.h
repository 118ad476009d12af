/* lfswatch.h -- kinformer.fs_watch (lfswatch.c): core.fs_watch, the
 * directory watcher of `kinformer run --watch` (fs_watch.h). */
#ifndef LKIN_FSWATCH_H
#define LKIN_FSWATCH_H

#include <lua.h>

/* Registers the kinformer.fs_watch metatable in L and sets
 * core.fs_watch in the module table at the top of the stack. */
void lkin_open_fswatch(lua_State *L);

#endif
