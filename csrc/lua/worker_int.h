/* worker_int.h -- internals shared by worker_code.c and worker_state.c. */
#ifndef LKIN_WORKER_INT_H
#define LKIN_WORKER_INT_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>

#include "worker_state.h"

/* Registry key of the loaded code: a function or a table of functions. */
#define LKIN_WS_CODE_KEY "kinformer.worker.code"

/* One function sent as bytecode. */
typedef struct {
  char *name;  /* its key in a table of functions; NULL for a lone function */
  char *chunk; /* lua_dump output, debug info kept for tracebacks */
  size_t len;
} lkin_ws_func;

/* Immutable after lkin_ws_template_new; only refs changes. */
struct lkin_ws_template {
  atomic_int refs;
  size_t memory_limit;
  char *path, *cpath; /* the main state's, NULL when it had none */
  char *module;       /* module name, or NULL when funcs are set */
  lkin_ws_func *funcs;
  size_t nfuncs;
};

/* Loads t's code into L (a protected call) and stores it under
 * LKIN_WS_CODE_KEY; raises when it fails to load. */
void lkin__ws_load_code(lua_State *L, const lkin_ws_template *t);

#endif
