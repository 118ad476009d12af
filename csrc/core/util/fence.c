/* fence.c -- the leadership fence of call_ctx.h: an atomic epoch and the
 * monotonic time it is valid until. */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "call_ctx.h"

struct kin_fence {
  _Atomic uint64_t open;  /* the open epoch; 0 while closed */
  _Atomic uint64_t until; /* CLOCK_MONOTONIC ns the open epoch holds until; 0: no bound */
  _Atomic uint64_t last;  /* the last epoch handed out */
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

kin_fence *kin_fence_new(void) {
  return calloc(1, sizeof(kin_fence));
}

void kin_fence_free(kin_fence *f) {
  free(f);
}

uint64_t kin_fence_open(kin_fence *f, uint64_t until_ns) {
  uint64_t e = atomic_fetch_add(&f->last, 1) + 1;
  atomic_store(&f->open, 0); /* no reader sees the new epoch with the old bound */
  atomic_store(&f->until, until_ns);
  atomic_store(&f->open, e);
  return e;
}

int kin_fence_renew(kin_fence *f, uint64_t epoch, uint64_t until_ns) {
  if (epoch == 0 || atomic_load(&f->open) != epoch) return KIN_EFENCED;
  atomic_store(&f->until, until_ns);
  /* A close that raced the store wins: the epoch is checked again. */
  return atomic_load(&f->open) == epoch ? 0 : KIN_EFENCED;
}

void kin_fence_close(kin_fence *f) {
  atomic_store(&f->open, 0);
}

uint64_t kin_fence_epoch(const kin_fence *f) {
  return atomic_load(&((kin_fence *)f)->open);
}

int kin_fence_holds(const kin_fence *f, uint64_t epoch) {
  if (!f) return 1;
  kin_fence *m = (kin_fence *)f;
  if (epoch == 0 || atomic_load(&m->open) != epoch) return 0;
  uint64_t until = atomic_load(&m->until);
  if (until && mono_ns() >= until) return 0;
  return atomic_load(&m->open) == epoch;
}

uint64_t kin_fence_until(const kin_fence *f, uint64_t epoch) {
  if (!f) return UINT64_MAX;
  kin_fence *m = (kin_fence *)f;
  if (epoch == 0 || atomic_load(&m->open) != epoch) return 1;
  uint64_t until = atomic_load(&m->until);
  return atomic_load(&m->open) == epoch ? until : 1;
}

int kin_call_ctx_may_write(const kin_call_ctx *ctx) {
  if (!ctx || !ctx->fence) return 0;
  return kin_fence_holds(ctx->fence, ctx->epoch) ? 0 : KIN_EFENCED;
}
