/* ltransform.h -- the Lua transform of an informer (mgr:informer's
 * transform option, lenv.c): user code that turns each object into the one
 * cached, run in a worker state of its own by the reflector thread, under
 * the DeltaFIFO lock (delta_fifo.h), so under a time limit.
 *
 * Each call runs under transform_timeout (lcall_limit.h: a count hook in
 * the transform's state; os.execute/io.popen children killed at it) and
 * the state's transform_memory_limit. A transform that fails, times out or
 * is interrupted by the manager's shutdown (the env's user_abort flag, so
 * mgr:stop joins the reflector at once) is logged with the informer and
 * the object's key, and the object is cached
 *  - "keep" (transform_on_timeout's default): untransformed;
 *  - "drop": reduced to its identity (apiVersion, kind, metadata.name,
 *    namespace, uid, resourceVersion), everything else dropped. The FIFO
 *    cannot leave an object out of a list without the reflector's list
 *    bookkeeping, so the key stays cached and the cache's key set stays
 *    the server's.
 * A transform that raises an ordinary error keeps the object untransformed
 * in either mode. */
#ifndef LKIN_TRANSFORM_H
#define LKIN_TRANSFORM_H

#include <lua.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kobj.h"

typedef struct lkin_transform lkin_transform;

/* Captures the transform at index idx of the main state L (a function or
 * a module name, worker_state.h) for the informer named name. timeout_ns:
 * the time limit of each call (0: none); drop: transform_on_timeout is
 * "drop"; abort: interrupts calls once set (outlives the transform).
 * Returns it; raises on misuse (an upvalue that cannot be sent) and on
 * memory errors, leaking nothing. */
lkin_transform *lkin_transform_new(lua_State *L, int idx, const char *name, size_t memory_limit,
                                   uint64_t timeout_ns, int drop, const atomic_int *abort);

/* Frees t (void * for lkin_env_on_free): after every thread that calls it
 * is joined. */
void lkin_transform_free(void *t);

/* kin_transform_fn (delta_fifo.h) over a lkin_transform: *out is the
 * transformed object, or in untransformed / its identity as above. Returns
 * 0, or KIN_ENOMEM when even that cannot be made. Any thread; calls are
 * serialised on the transform's own lock. */
int lkin_transform_run(void *ud, kin_obj *in, kin_obj **out);

#endif
