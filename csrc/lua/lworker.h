/* lworker.h -- kinformer.worker (lworker.c): core.worker(code [, opts]), a
 * thread owning one worker Lua state. */
#ifndef LKIN_WORKER_H
#define LKIN_WORKER_H

#include <lua.h>

/* Registers the kinformer.worker metatable in L and core.worker into the
 * module table at the top of the stack. */
void lkin_open_worker(lua_State *L);

#endif
