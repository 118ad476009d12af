/* laux.h -- the helpers every file of the Lua binding (csrc/lua) shares:
 * failures as nil, msg, code; userdata types and their metatables; option
 * tables; signal masks. The bottom of the binding: laux.c depends on Lua
 * and the core's headers only, never on another file of csrc/lua. */
#ifndef LKIN_LAUX_H
#define LKIN_LAUX_H

#include <lauxlib.h>
#include <lua.h>
#include <signal.h>
#include <stdint.h>

/* ---- failures ------------------------------------------------------------ */

/* Pushes nil, "<what>: <kin_strerror(err)>", "<CODE>" (the luv convention
 * for runtime failures) and returns 3. */
int lkin_fail(lua_State *L, int err, const char *what);

/* Returns the short name of a kin error code ("EINVAL", ...), from the
 * core's one table (kin_errname in kin.c). */
const char *lkin_errname(int err);

/* ---- userdata types ------------------------------------------------------ */

/* What a userdata type's metatable holds: methods as __index, close as both
 * __gc and __close (it must be idempotent), and tostring. Each type file
 * defines one, file-scoped and immutable. */
typedef struct {
  const char *name; /* the metatable's registry name, "kinformer.env" */
  const luaL_Reg *methods;
  lua_CFunction close;
  lua_CFunction tostring;
} lkin_type;

/* Registers (or refreshes) the metatable of type in L's registry. Leaves
 * the stack as it was. Raises only on memory errors. */
void lkin_new_type(lua_State *L, const lkin_type *type);

/* Callbacks of objects whose C threads post work to the main state
 * (lkin_mainq_post): each object names its Lua callback(s) by an id in a
 * table of the registry under key. lkin_callbacks_push pushes that table
 * (made on first use); lkin_callbacks_forget sets its entry id to nil;
 * lkin_callbacks_new_id returns a process-wide id, never 0. Main state
 * only (the id is atomic). */
void lkin_callbacks_push(lua_State *L, const char *key);
void lkin_callbacks_forget(lua_State *L, const char *key, lua_Integer id);
lua_Integer lkin_callbacks_new_id(void);

/* Sets the metatable of type on the value at the top of the stack, as
 * luaL_setmetatable, registering it first in a state that has none yet (a
 * worker state given a binding value before its code required the
 * binding): no module is opened for that. */
void lkin_setmetatable(lua_State *L, const lkin_type *type);

/* ---- option tables --------------------------------------------------------
 * Fields of the options table at index t (t == 0: no table, every field is
 * absent). An absent field (nil) gives the default; a field of the wrong
 * type raises an argument error on t: "option 'k' must be a number" (a
 * string, an integer, a number >= 0). Numbers convert as luaL_checknumber
 * does (a numeric string counts); strings must be strings. Strings stay
 * alive as fields of the table. */
/* 1 when field k is set (not nil); never raises but on memory errors. */
int lkin_opt_isset(lua_State *L, int t, const char *k);
const char *lkin_opt_string(lua_State *L, int t, const char *k);
lua_Number lkin_opt_number(lua_State *L, int t, const char *k, lua_Number def);
lua_Integer lkin_opt_integer(lua_State *L, int t, const char *k, lua_Integer def);
/* Lua truthiness: absent and false give 0. */
int lkin_opt_bool(lua_State *L, int t, const char *k);
/* A duration in seconds (default def_s), as nanoseconds: negative or NaN
 * raise "option 'k' must be >= 0"; math.huge (or anything past ~570
 * years) gives KIN_FOREVER (clock.h). */
uint64_t lkin_opt_ns(lua_State *L, int t, const char *k, lua_Number def_s);
/* Seconds s as nanoseconds, checked as lkin_opt_ns does (the message names
 * option k, the error is on argument arg). */
uint64_t lkin_secs_to_ns(lua_State *L, int arg, lua_Number s, const char *k);

/* Raises when the options table at t (0: none, nothing to check) has a key
 * not in known (a NULL-terminated list): 'unknown option "k" to fname (did
 * you mean "x"?)', the suggestion being lkin_closest's, or when it has a
 * key that is not a string. The error is at the C function's caller (the
 * Lua wrappers in lua/kinformer re-raise it at the user's line). Each
 * function that reads an options table keeps its list next to its doc
 * comment: add a key there when adding an option. */
void lkin_opt_check_keys(lua_State *L, int t, const char *const known[], const char *fname);

/* The same for a table that may hold other fields (a handler table that is
 * a module with helpers): raises 'unknown field "on_ad" in fname (did you
 * mean "on_add"?)' only for an unknown key close to a known one. */
void lkin_opt_check_near(lua_State *L, int t, const char *const known[], const char *fname);

/* The entry of list (NULL-terminated) closest to word by edit distance, or
 * NULL when none is close (more than a third of the letters differ and
 * neither is a prefix of the other). Never raises. */
const char *lkin_closest(const char *word, const char *const list[]);

/* ---- signals ------------------------------------------------------------- */

/* Blocks every signal in the calling thread and saves the old mask in
 * *old; threads created before lkin_signals_restore inherit the full mask,
 * so SIGINT and SIGTERM stay with the script's own thread (mgr:run's
 * sigtimedwait, the REPL's Ctrl-C) instead of killing the process from a
 * listener, worker or server thread. */
void lkin_signals_block_all(sigset_t *old);
void lkin_signals_restore(const sigset_t *old);

/* Blocks SIGINT and SIGTERM in the calling thread for good; threads created
 * later inherit the mask, so only sigtimedwait (env:wait_signal) takes
 * them. */
void lkin_signals_block_term(void);

#endif
