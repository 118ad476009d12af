/* worker_int.h -- internals shared by worker_code.c (which captures
 * templates) and worker_state.c (which builds states from them): the
 * template's layout. Includes nothing of the binding. */
#ifndef LKIN_WORKER_INT_H
#define LKIN_WORKER_INT_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>

/* One function sent as bytecode. */
typedef struct {
  char *name;  /* its key in a table of functions; NULL for a lone function */
  char *chunk; /* lua_dump output, debug info kept for tracebacks */
  size_t len;
} lkin_ws_func;

/* Immutable after lkin_ws_template_new; only refs changes. The typedef
 * lkin_ws_template is worker_state.h's. */
struct lkin_ws_template {
  atomic_int refs;
  size_t memory_limit;
  char *path, *cpath; /* the main state's, NULL when it had none */
  char *module;       /* module name, or NULL when funcs are set */
  lkin_ws_func *funcs;
  size_t nfuncs;
};

#endif
