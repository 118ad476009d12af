/* lkin.h -- shared by the files of the Lua binding (csrc/lua). */
#ifndef LKIN_H
#define LKIN_H

#include <lauxlib.h>
#include <signal.h>
#include <lua.h>

/* Pushes nil, "<msg>", "<CODE>" (the luv convention for runtime failures)
 * and returns 3. */
int lkin_fail(lua_State *L, int err, const char *what);

/* Returns the short name of a kin error code ("EINVAL", ...). */
const char *lkin_errname(int err);

/* Registers the metatable name for a userdata type: methods as __index,
 * close as both __gc and __close (it must be idempotent), and tostring. */
void lkin_new_type(lua_State *L, const char *name, const luaL_Reg *methods,
                   lua_CFunction close, lua_CFunction tostring);

/* Sets the metatable registered as name on the value at the top of the
 * stack, as luaL_setmetatable, opening the binding first in a state that
 * has not required it yet (a worker state given a binding value). */
void lkin_setmetatable(lua_State *L, const char *name);

/* Blocks every signal in the calling thread and saves the old mask in
 * *old; threads created before lkin_signals_restore inherit the full mask,
 * so SIGINT and SIGTERM stay with the script's own thread (mgr:run's
 * sigtimedwait, the REPL's Ctrl-C) instead of killing the process from a
 * listener, worker or server thread. */
void lkin_signals_block_all(sigset_t *old);
void lkin_signals_restore(const sigset_t *old);

/* One function per exposed type registers its metatable and constructors
 * into the module table at the top of the stack. */
void lkin_open_object(lua_State *L);
void lkin_open_sim(lua_State *L);
void lkin_open_worker(lua_State *L);
void lkin_open_json(lua_State *L); /* ljson.c */

/* The module entry point; worker states preload it (worker_state.c). */
int luaopen_kinformer_core(lua_State *L);

/* Pushes a new kinformer.object userdata holding its own reference. */
struct kin_obj;
void lkin_push_object(lua_State *L, struct kin_obj *o);
/* Returns 1 when the value at i is a kinformer.object, with its object
 * (borrowed; NULL once closed) in *o; 0 otherwise. Never raises. */
int lkin_test_object(lua_State *L, int i, struct kin_obj **o);

#endif
