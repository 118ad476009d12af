/* fence.c -- the leadership fence of call_ctx.h: one atomic epoch. */
#include <stdatomic.h>
#include <stdlib.h>

#include "call_ctx.h"

struct kin_fence {
  _Atomic uint64_t open;  /* the open epoch; 0 while closed */
  _Atomic uint64_t last;  /* the last epoch handed out */
};

kin_fence *kin_fence_new(void) {
  return calloc(1, sizeof(kin_fence));
}

void kin_fence_free(kin_fence *f) {
  free(f);
}

uint64_t kin_fence_open(kin_fence *f) {
  uint64_t e = atomic_fetch_add(&f->last, 1) + 1;
  atomic_store(&f->open, e);
  return e;
}

void kin_fence_close(kin_fence *f) {
  atomic_store(&f->open, 0);
}

uint64_t kin_fence_epoch(const kin_fence *f) {
  return atomic_load(&((kin_fence *)f)->open);
}

int kin_fence_holds(const kin_fence *f, uint64_t epoch) {
  if (!f) return 1;
  uint64_t e = kin_fence_epoch(f);
  return e != 0 && e == epoch;
}

int kin_call_ctx_may_write(const kin_call_ctx *ctx) {
  if (!ctx || !ctx->fence) return 0;
  return kin_fence_holds(ctx->fence, ctx->epoch) ? 0 : KIN_EFENCED;
}
