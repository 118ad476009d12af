/* lhandler.h -- kinformer.handler (lhandler.c): handler sets of an
 * informer, and the env's queue of main-state handler events. */
#ifndef LKIN_HANDLER_H
#define LKIN_HANDLER_H

#include <lua.h>

#include "lenv_core.h"

/* inf:add_handler(h [, opts]), for linformer.c: the informer at 1 (inf,
 * of env e, registered as infname), h at 2, opts at 3. Returns 1 with a
 * kinformer.handler pushed, or 3 (nil, msg, code; "ECLOSED" after
 * shutdown). Misuse (an upvalue that cannot be sent, a bad option, a main
 * module that returns no table) raises. Main state only. */
int lkin_handler_add(lua_State *L, lkin_env *e, kin_informer *inf, const char *infname);

/* inf:remove_handler(h), for linformer.c (informer at 1, handler at 2):
 * stops deliveries, joins the listener (its worker state is closed there),
 * drops the events a main handler still had queued and frees the set.
 * Pushes true, or nil, msg, code: "ENOENT" when already removed, "EINVAL"
 * when h belongs to another informer. */
int lkin_handler_remove(lua_State *L, lkin_env *e, kin_informer *inf);

/* env:step's work, for lenv.c: waits up to timeout seconds (>= 0; 0: no
 * wait) for a main-handler event of e, then runs the events queued at that
 * moment in L (the main state), each in a protected call: an error is
 * logged with the handler, the object's key and a traceback, and the next
 * event runs. Each call runs under the env's handler_timeout and the
 * handler's memory_limit (else the env's main_memory_limit), and is
 * interrupted by a pending SIGINT/SIGTERM (lcall_limit.h); with one
 * pending, the events left stay queued for the loop that takes the
 * signal. Pushes how many events ran (0 at once from inside a main
 * handler), or nil, msg, code when out of memory. */
int lkin_mainq_run(lua_State *L, lkin_env *e, double timeout);

/* Creates e's main-state queue if needed, so that other threads may then
 * post to it (lkin_mainq_post). Main state's thread only. Returns 0 or
 * KIN_ENOMEM. */
int lkin_mainq_prepare(lkin_env *e);

/* Queues a C call for the main state, from any thread once
 * lkin_mainq_prepare(e) returned 0: the next env:step runs call in the main
 * state with arg as a light userdata at index 1, protected (an error is
 * logged naming what, a static string, with a traceback), then drop(arg);
 * a queue freed before that only drops it. drop may be NULL. Returns 0, or
 * KIN_ENOMEM (arg is then dropped), or KIN_EINVAL when e's queue was never
 * prepared. Used by the leader elector's callbacks (lleader.c). */
int lkin_mainq_post(lkin_env *e, const char *what, lua_CFunction call, void (*drop)(void *),
                    void *arg);

/* Registers the kinformer.handler metatable in L. */
void lkin_open_handler(lua_State *L);

#endif
