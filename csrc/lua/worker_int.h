/* worker_int.h -- internals shared by worker_code.c (which captures
 * templates), worker_copy.c (which writes the copy of functions and their
 * upvalues that a template carries) and worker_state.c (which builds
 * states from templates, reading that copy): the template's layout and
 * the copy's format. Includes nothing of the binding. */
#ifndef LKIN_WORKER_INT_H
#define LKIN_WORKER_INT_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Immutable after lkin_ws_template_new; only refs changes. The typedef
 * lkin_ws_template is worker_state.h's. */
struct lkin_ws_template {
  atomic_int refs;
  size_t memory_limit;
  char *path, *cpath; /* the main state's, NULL when it had none */
  char *module;       /* module name, or NULL when code is set */
  char *what;         /* "reconciler", "handler"...: for messages of the load */
  char *code;         /* the function or table of functions, copied with
                         their upvalues (lkin_ws_copy_capture) */
  size_t code_len;
  /* The time limit of each call (lkin_ws_protect), 0: none, and the
   * option that sets it (for the message), or NULL. Set before the
   * template is shared (lkin_ws_template_set_call_limit, or the main
   * state's defaults read by lkin_ws_template_new). */
  uint64_t call_timeout_ns;
  char *call_option;
};

/* The copy of functions and their upvalues (worker_copy.c writes it,
 * worker_state.c reads it): a sequence of records, a one-byte tag each. An
 * object (table, function, long string, module reference) is numbered in
 * the order it is first written, and written again as a back-reference:
 *
 *   NIL FALSE TRUE            INT i64  FLT f64       (host byte order)
 *   STR n bytes               LSTR n bytes (numbered)        REF number
 *   TABLE narr:u32 nhash:u32 (key value)* END metatable-value  (numbered)
 *   FUNC n:u32 bytecode nups:u8 (UP_ENV | UP_JOIN number up:u8
 *                                | UP_VAL value)*              (numbered)
 *   MOD name flag:u8 [field] where  (numbered; strings as STR; where
 *                                    names the upvalue for messages)
 *
 * n and numbers are varints. Bytecode is not portable across builds, but
 * template and workers are one process. */
enum {
  WC_NIL, WC_FALSE, WC_TRUE, WC_INT, WC_FLT, WC_STR, WC_LSTR, WC_REF,
  WC_TABLE, WC_FUNC, WC_MOD, WC_END
};
enum { WC_UP_ENV, WC_UP_JOIN, WC_UP_VAL };

/* The largest copy: a capture over it is refused. */
#define LKIN_WS_COPY_MAX ((size_t)64 << 20)

/* Serializes the value at idx of the main state L (a Lua function, or a
 * table whose values are Lua functions: the caller checks the shape) with
 * everything its functions' upvalues reach, in the format above. Returns
 * the buffer (malloc'd, the caller frees) and its length in *len. When
 * some upvalue cannot be sent (a userdata, a coroutine, a C function of
 * no loaded module, anywhere in it), or the whole comes to more than
 * LKIN_WS_COPY_MAX, raises an argument error on arg naming every such
 * upvalue, what ("reconciler") starting the message; raises on memory
 * errors. Nothing leaks when it raises. L's own thread only; runs no Lua
 * code of L. */
char *lkin_ws_copy_capture(lua_State *L, int idx, int arg, const char *what, size_t *len);

#endif
