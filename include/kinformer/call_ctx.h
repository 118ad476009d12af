/* call_ctx.h -- the explicit call context of a request (client-go's
 * context.Context, kube-rs's Arc<Context>): a deadline, a canceler, a
 * write observer and a leadership fence travel with every kin_client_*
 * verb instead of thread-locals between layers. (layer: util, with
 * fence.c)
 *
 * A kin_call_ctx is a plain struct the caller owns and fills; a zeroed
 * struct (or a NULL pointer where a verb takes one) means "no deadline, no
 * canceler, no observer, no fence". Verbs read it during the call only.
 *
 * The fence (kin_fence) is a leadership epoch: a leader elector bumps it
 * when it starts leading and closes it the moment leadership is lost or
 * unknowable. A context carries the epoch it was made in; a write (any
 * method but GET) whose epoch is no longer the fence's open epoch is
 * refused locally with KIN_EFENCED, before any byte is sent.
 *
 * Every kin_client_* verb takes a const kin_call_ctx * as its second
 * parameter (rest_client.h), and kin_client_request carries one; a
 * controller hands each reconcile its own (controller.h, reconcile.h). */
#ifndef KIN_CALL_CTX_H
#define KIN_CALL_CTX_H

#include <stdint.h>

#include "kin.h"

struct kin_io_canceler; /* io_engine.h */

/* A leadership fence. Thread-safe: every function may be called from any
 * thread (atomics: the open epoch, 0 while closed, and the CLOCK_MONOTONIC
 * time it is valid until). The time bound makes a paused process safe: a
 * leader stopped (SIGSTOP, a frozen VM) past its Lease finds its fence
 * expired the moment it runs again, before its elector thread has read the
 * Lease. */
typedef struct kin_fence kin_fence;

/* Returns a new fence, closed (epoch 0), or NULL when out of memory. The
 * caller frees it with kin_fence_free once no context refers to it. */
kin_fence *kin_fence_new(void);
void kin_fence_free(kin_fence *f);

/* Opens a new epoch (the previous one, if open, ends) valid until
 * until_ns (CLOCK_MONOTONIC ns; 0: no time bound) and returns it (>= 1). */
uint64_t kin_fence_open(kin_fence *f, uint64_t until_ns);

/* Moves the open epoch's time bound to until_ns (a renewal), when epoch is
 * still the open one. Returns 0, or KIN_EFENCED when it is not. */
int kin_fence_renew(kin_fence *f, uint64_t epoch, uint64_t until_ns);

/* Ends the open epoch, if any: every context holding it is refused from
 * now on. Idempotent. */
void kin_fence_close(kin_fence *f);

/* Returns the open epoch, 0 when closed (an expired epoch is still
 * returned: kin_fence_holds tells whether it holds now). */
uint64_t kin_fence_epoch(const kin_fence *f);

/* Returns 1 when f is NULL (no fence), or epoch is f's open epoch and its
 * time bound has not passed; else 0. */
int kin_fence_holds(const kin_fence *f, uint64_t epoch);

/* Returns the CLOCK_MONOTONIC ns epoch holds until (0: no time bound), or
 * 1 (long passed) when epoch is not f's open epoch; UINT64_MAX when f is
 * NULL. A verb may cap a write's timeout to it, so that a request that
 * passed the fence just before a pause cannot go out long after. */
uint64_t kin_fence_until(const kin_fence *f, uint64_t epoch);

/* Called after each mutating verb (any method but GET) with its method,
 * path with query string, HTTP status (0 for a transport failure or a
 * local refusal) and, when it failed, the error's message (the answer's
 * Status.message, e.g. an admission webhook's denial; NULL on success or
 * when there is none; valid during the call only); runs on the calling
 * thread. */
typedef void (*kin_client_write_fn)(void *ud, const char *method, const char *path, long code,
                                    const char *message);

typedef struct kin_call_ctx {
  uint64_t deadline_ns;     /* CLOCK_MONOTONIC ns; 0: none. Caps each
                               request's timeout to the time left; a verb
                               called after it fails at once (KIN_ETIMEDOUT) */
  struct kin_io_canceler *cancel; /* NULL: none; another thread may fire it to end
                               the request in flight (KIN_ECANCELED) */
  kin_client_write_fn on_write; /* NULL: none */
  void *on_write_ud;
  const kin_fence *fence;   /* NULL: writes are not fenced */
  uint64_t epoch;           /* the epoch the caller works in (kin_fence_epoch
                               when the work started) */
} kin_call_ctx;

/* Returns 0 when a write may be sent under ctx (NULL: always), or
 * KIN_EFENCED when its fence no longer holds its epoch. */
int kin_call_ctx_may_write(const kin_call_ctx *ctx);

#endif
