/* rest_ctx.c -- the call context of a kin_client_request (rest_ctx.h):
 * the leadership fence checked before a write is sent, the deadline
 * capping the timeout, the canceler, the write observer. */
#include "rest_ctx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int is_write(const char *method) { return method && strcmp(method, "GET") != 0; }

/* "write refused: leadership ended (epoch N)", malloc'd, or NULL. */
static char *refusal(const kin_call_ctx *ctx) {
  char m[96];
  snprintf(m, sizeof m, "write refused: leadership ended (epoch %llu)",
           (unsigned long long)ctx->epoch);
  return strdup(m);
}

int kin__ctx_refuse(const kin_call_ctx *ctx, const char *method, const char *path,
                    char **message) {
  *message = refusal(ctx);
  kin__ctx_observe(ctx, method, path, 0, *message);
  return *message ? KIN_EFENCED : KIN_ENOMEM;
}

int kin__ctx_prepare(const kin_call_ctx *ctx, const char *method, long def_timeout_ms,
                     long *timeout_ms, kin_io_canceler **cancel, char **message) {
  *message = NULL;
  /* nothing is sent once the leadership epoch ended (the caller observes) */
  if (is_write(method) && kin_call_ctx_may_write(ctx) != 0) {
    *message = refusal(ctx);
    return *message ? KIN_EFENCED : KIN_ENOMEM;
  }
  if (!*cancel) *cancel = ctx->cancel;
  if (ctx->deadline_ns) {
    uint64_t now = mono_ns();
    if (now >= ctx->deadline_ns) {
      *message = strdup("deadline exceeded before the request was sent");
      return *message ? KIN_ETIMEDOUT : KIN_ENOMEM;
    }
    long left_ms = (long)((ctx->deadline_ns - now + 999999) / 1000000);
    long own = *timeout_ms > 0 ? *timeout_ms : *timeout_ms < 0 ? 0 : def_timeout_ms;
    *timeout_ms = own > 0 && own < left_ms ? own : left_ms;
  }
  return 0;
}

void kin__ctx_observe(const kin_call_ctx *ctx, const char *method, const char *path, long code,
                      const char *message) {
  if (ctx && ctx->on_write && is_write(method))
    ctx->on_write(ctx->on_write_ud, method, path, code, message);
}
