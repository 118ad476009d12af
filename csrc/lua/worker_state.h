/* worker_state.h -- the factory of worker Lua states: each listener or
 * controller worker thread owns one lua_State built here, runs user code in
 * it with protected calls, and rebuilds it when it runs out of memory.
 *
 * Two sides. The main state (the user's script, on its own thread) captures
 * a template: package.path/cpath and the code to run. The owner thread then
 * opens states from the template; nothing of the main state is touched
 * after capture, so Lua states never share values (DESIGN.md section 2).
 *
 * Code reaches a worker state in one of three shapes:
 *   "myop.reconcile"   a module name: the worker requires it; the module
 *                      returns a function or a table of functions, and its
 *                      module-level variables are per state;
 *   function           a Lua function, sent with copies of its upvalues;
 *   {on_add = f, ...}  a table of Lua functions, sent together: what they
 *                      share (a local, a table) they share in the worker.
 * As Lanes does (worker_copy.c): each state built from the template, and
 * each rebuild, gets its own copy of the upvalues, recursively (strings,
 * numbers, booleans, tables with their metatables, cycles and shared
 * references, Lua functions with their upvalues), so a change one worker
 * makes to a copied table stays in that worker. _ENV is the worker's global
 * table (whatever it was in the main state); a module (package.loaded) or
 * a module's field (string.format, kinformer.terminal) is the worker's own,
 * required there. An upvalue that cannot be copied (a userdata such as the
 * manager's env, an informer or a client; a coroutine; a C function of no
 * module) is refused at capture, naming every such upvalue.
 *
 * Lookup (lkin_ws_push_function): with no name, the code itself must be a
 * function (a function, or a module returning one); with a name, the code
 * must be a table (a table of functions, or a module returning one) and
 * code[name] a function. So handler sets use on_add/on_update/on_delete and
 * reconcilers "reconcile" or the bare function, as the caller chooses.
 *
 * Each state has the standard libraries, the binding preloaded
 * (require "kinformer" works), its own cjson.new() instance, and an
 * allocator that refuses to grow past the template's memory limit. */
#ifndef LKIN_WORKER_STATE_H
#define LKIN_WORKER_STATE_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kobj.h"

#define LKIN_WS_DEFAULT_MEMORY_LIMIT ((size_t)512 << 20)
/* Below this a state cannot hold the standard libraries and cjson. */
#define LKIN_WS_MIN_MEMORY_LIMIT ((size_t)256 << 10)

typedef struct lkin_ws_template lkin_ws_template;
typedef struct lkin_ws lkin_ws;

/* Sets the opener of kinformer.core that every state built afterwards
 * preloads (package.preload["kinformer.core"]): the binding already in the
 * process, whatever the template's cpath says. luaopen_kinformer_core
 * calls it, so any state built for the binding has it; before, states get
 * no preload. Any thread. */
void lkin_ws_set_core(lua_CFunction open);

/* ---- main state side -------------------------------------------------- */

/* Captures the code at index idx of the main state L (a module name, a
 * function or a table of functions) with L's package.path/cpath and the
 * memory limit (0: the default) into a new template holding one reference.
 * what names the code in messages ("handler", "reconciler"). Programming
 * errors raise an argument error on idx that names the culprit (every
 * upvalue that cannot be sent, with the path to what cannot; a C function;
 * a non-function in the table...); memory errors raise. Nothing leaks when
 * it raises. Call on L's own thread. */
lkin_ws_template *lkin_ws_template_new(lua_State *L, int idx, const char *what,
                                       size_t memory_limit);
/* Templates are immutable and shared by the threads built from them;
 * references are atomic. unref of NULL is a no-op. */
lkin_ws_template *lkin_ws_template_ref(lkin_ws_template *t);
void lkin_ws_template_unref(lkin_ws_template *t);
size_t lkin_ws_template_memory_limit(const lkin_ws_template *t);
/* Sets the time limit of every call made through lkin_ws_protect in the
 * states built from t (0: none; the count hook of lcall_limit.h) and the
 * option named in the message (copied; NULL: none; out of memory leaves
 * it unnamed). Call before t is shared. Without it a template takes the
 * main state's default for its `what` (registry table
 * LKIN_WS_CALL_TIMEOUTS: what -> {seconds, option}, written by core.env),
 * e.g. "map function" -> handler_timeout. */
void lkin_ws_template_set_call_limit(lkin_ws_template *t, uint64_t timeout_ns, const char *option);
#define LKIN_WS_CALL_TIMEOUTS "kinformer.call_timeouts"
/* The module name, or NULL when the code was sent as function(s). */
const char *lkin_ws_template_module(const lkin_ws_template *t);

/* ---- owner thread side ------------------------------------------------ */

/* Builds a state from t (which it references) and loads the code into it.
 * name labels the state in log lines ("worker", "listener pods"...).
 * Returns 0 and the state in *out; or KIN_ENOMEM (allocation failed or the
 * state hit its limit while loading) or KIN_EINVAL (the code failed to
 * load, e.g. a missing module, an error in its body, or a module an
 * upvalue refers to that this state cannot require), with a message in
 * *err that the caller frees (NULL when even that could not be allocated). */
int lkin_ws_open(lkin_ws_template *t, const char *name, lkin_ws **out, char **err);
/* Closes the Lua state and frees w; NULL is a no-op. Owner thread only. */
void lkin_ws_close(lkin_ws *w);

/* Runs fn in protected mode on w's state, with ud as a light userdata
 * argument; fn reports its outcome through ud. Returns 0 when fn returned;
 * KIN_EINVAL when fn raised, with the message (and a traceback when raised
 * under lkin_ws_call) in *err, which the caller frees; KIN_ENOMEM when the
 * state ran out of memory, *err "not enough memory". After any
 * out-of-memory (also one that fn caught through lkin_ws_call) the state
 * is closed and rebuilt from the template before returning, and that is
 * logged; if the rebuild fails, this and later calls try again first and
 * fail with the rebuild's error. Owner thread only. */
int lkin_ws_protect(lkin_ws *w, lua_CFunction fn, void *ud, char **err);

/* Calls handler `handler` of w's code with nobjs objects (NULL: nil) pushed
 * as lazy views (lkin_ws_push_object), as a listener delivers an event.
 * Returns 0 when it ran; KIN_ENOENT when the code has no such function
 * (nothing logged: a handler set may leave some out); KIN_EINVAL when it
 * raised, KIN_ENOMEM when the state ran out of memory (then rebuilt): both
 * logged with key and handler name. When err is not NULL, the error text
 * goes there (caller frees). The thread always survives. Owner thread only. */
int lkin_ws_call_handler(lkin_ws *w, const char *handler, const char *key,
                         kin_obj *const *objs, int nobjs, char **err);
/* The same with flag (0 or 1) passed as a boolean after the objects, as
 * on_add(obj, is_in_initial_list) gets it; flag < 0 passes nothing. */
int lkin_ws_call_handler_flag(lkin_ws *w, const char *handler, const char *key,
                              kin_obj *const *objs, int nobjs, int flag, char **err);

/* A pointer of the owner's, kept across rebuilds: set on the owner thread,
 * read from inside the state (a hook) with lkin_ws_user. */
void lkin_ws_set_user(lkin_ws *w, void *user);
/* An abort flag (NULL: none) that interrupts every later call of w's
 * (lkin_ws_protect) once another thread sets it: the env's stop flag for
 * transforms and handlers, so mgr:stop joins their threads at once. The
 * flag outlives w. Owner thread. */
void lkin_ws_set_abort(lkin_ws *w, const atomic_int *abort);
/* What cut w's last lkin_ws_protect call: LKIN_CL_NONE, LKIN_CL_TIMEOUT
 * or LKIN_CL_ABORT (lcall_limit.h). Owner thread. */
int lkin_ws_last_cut(const lkin_ws *w);
/* Records for L a deadline (CLOCK_MONOTONIC ns, 0: none) and an abort flag
 * (NULL: none) that os.execute/io.popen honour until the current
 * lkin_ws_protect call returns (it clears them): what a reconcile calls
 * before the reconciler runs. Implemented in lcall_limit.c (declared
 * there too); here so that the reconcile path needs no other header. */
void lkin_call_limit_set(lua_State *L, uint64_t deadline_ns, const atomic_int *abort);
/* The limit slot of the worker state L belongs to (lcall_limit.h), or
 * NULL when L is not a worker state. Cheap: read from the hook. */
struct lkin_call_limit_slot *lkin_ws_limit_slot(lua_State *L);
/* The user pointer of the worker state L belongs to (NULL when L is not a
 * worker state or none was set). Cheap: callable from a count hook. */
void *lkin_ws_user(lua_State *L);

/* Counters for the owner (and for others while the owner is known idle). */
unsigned lkin_ws_rebuilds(const lkin_ws *w);
size_t lkin_ws_memory(const lkin_ws *w);
const char *lkin_ws_name(const lkin_ws *w);

/* ---- inside lkin_ws_protect (the state of a worker) ------------------- */

/* Pushes the function name of the state's code (NULL: the code itself) and
 * returns 0; or pushes a message saying why there is none and returns
 * KIN_ENOENT. */
int lkin_ws_push_function(lua_State *L, const char *name);
/* lua_pcall with luaL_traceback as message handler: the function and
 * nargs arguments on the stack are replaced by nresults results, or by the
 * error message with a traceback. Returns the Lua status. An out-of-memory
 * is noted so that lkin_ws_protect rebuilds the state afterwards. */
int lkin_ws_call(lua_State *L, int nargs, int nresults);
/* Pushes a lazy view of o's JSON (lview.h: a table decoding each member
 * on first read as ljson.h would, integers as Lua integers, arrays marked
 * to encode back as []; changes stay in that table); for a tombstone,
 * {key = ..., object = <view of the last state or nil>,
 * final_state_unknown = true}. Raises on memory errors. Usable in any
 * state. */
void lkin_ws_push_object(lua_State *L, const kin_obj *o);

/* ---- any state --------------------------------------------------------- */

/* Pushes L's private cjson instance (cjson.new(), made on first use and
 * kept in the registry), so that user code reconfiguring require "cjson"
 * does not change how the binding encodes and decodes. Raises when cjson
 * cannot be loaded. */
void lkin_cjson(lua_State *L);

#endif
