/* rest_ctx.h -- internal to core/transport: the call context (call_ctx.h)
 * of a request, as kin_client_do applies it (rest_ctx.c). Depends on no
 * other unit of the transport but the IO engine's canceler type, so the
 * verbs, kin_client_do and this stay free of cycles. */
#ifndef KIN_REST_CTX_H
#define KIN_REST_CTX_H

#include "call_ctx.h"
#include "io_engine.h"

/* Prepares a request of method under ctx (not NULL): *timeout_ms (the
 * request's: > 0 its own, 0 the client's def_timeout_ms, < 0 none) is
 * capped to the time left before ctx's deadline, and *cancel, when NULL,
 * becomes ctx's canceler. Returns 0, or refuses the request before
 * anything is sent with *message set (malloc'd; the caller owns it):
 * KIN_EFENCED for a write (any method but GET) whose fence no longer
 * holds its epoch ("write refused: leadership ended (epoch N)"),
 * KIN_ETIMEDOUT past the deadline; KIN_ENOMEM when the message cannot be
 * made. */
int kin__ctx_prepare(const kin_call_ctx *ctx, const char *method, long def_timeout_ms,
                     long *timeout_ms, kin_io_canceler **cancel, char **message);

/* Tells ctx's write observer (if ctx and it are set) about a write of
 * method (any but GET; a GET is ignored) to path, answered with code (0:
 * none came, or refused) and message (the error's, or NULL). */
void kin__ctx_observe(const kin_call_ctx *ctx, const char *method, const char *path, long code,
                      const char *message);

/* The refusal of a write whose leadership epoch ended (at the first check,
 * at an attempt, or on the IO thread before sending): sets *message (the
 * caller frees it) to "write refused: leadership ended (epoch N)", tells
 * the write observer (code 0). Returns KIN_EFENCED, or KIN_ENOMEM. */
int kin__ctx_refuse(const kin_call_ctx *ctx, const char *method, const char *path,
                    char **message);

#endif
