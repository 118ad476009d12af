/* worker_int.h -- internals shared by worker_code.c (which captures
 * templates), worker_state.c (which builds states from them) and
 * worker_copy.c (the copy of functions and their upvalues that travels
 * from the one to the other): the template's layout. Includes nothing of
 * the binding. */
#ifndef LKIN_WORKER_INT_H
#define LKIN_WORKER_INT_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>

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
};

/* Serializes the value at idx of the main state L (a Lua function, or a
 * table whose values are Lua functions: the caller checks the shape) with
 * everything its functions' upvalues reach, as worker_copy.c describes.
 * Returns the buffer (malloc'd, the caller frees) and its length in *len.
 * When some upvalue cannot be sent (a userdata, a coroutine, a C function
 * of no loaded module, anywhere in it), or the whole comes to more than
 * 64 MiB, raises an argument error on arg naming every such upvalue, what
 * ("reconciler") starting the message; raises on memory errors. Nothing
 * leaks when it raises. L's own thread only; runs no Lua code of L. */
char *lkin_ws_copy_capture(lua_State *L, int idx, int arg, const char *what, size_t *len);

/* Pushes onto the worker state L a new copy of the value serialized in
 * buf: its tables, functions and strings made in L, _ENV upvalues bound
 * to L's globals, modules required in L. Raises (in a protected call of
 * the caller's) when a module fails to load or lacks a field, with a
 * message naming what ("reconciler"), the upvalue and the module; and on
 * memory errors. buf is only read: any number of states may load it at
 * once. */
void lkin_ws_copy_load(lua_State *L, const char *buf, size_t len, const char *what);

#endif
