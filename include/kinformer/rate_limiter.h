/* rate_limiter.h -- client-go's workqueue rate limiters
 * (util/workqueue/default_rate_limiters.go).
 *
 * A limiter answers "how long should this item wait before its next try";
 * limiters are thread-safe (each guards its state with its own mutex) and
 * keyed by the item string. Composite limiters (max_of, with_max_wait) take
 * ownership of the limiters passed to them.
 * layer: util */
#ifndef KIN_RATE_LIMITER_H
#define KIN_RATE_LIMITER_H

#include <stdint.h>

#include "clock.h"

typedef struct kin_rate_limiter kin_rate_limiter;

typedef struct {
  /* Returns the delay in ns before item should be retried, and records the
   * attempt. */
  uint64_t (*when)(kin_rate_limiter *rl, const char *item);
  /* Stops tracking item (it succeeded or was given up). */
  void (*forget)(kin_rate_limiter *rl, const char *item);
  /* Returns how many times item has failed since the last forget. */
  int (*num_requeues)(kin_rate_limiter *rl, const char *item);
  void (*free)(kin_rate_limiter *rl);
} kin_rate_limiter_vt;

struct kin_rate_limiter {
  const kin_rate_limiter_vt *vt;
};

static inline uint64_t kin_rate_limiter_when(kin_rate_limiter *rl, const char *item) {
  return rl->vt->when(rl, item);
}
static inline void kin_rate_limiter_forget(kin_rate_limiter *rl, const char *item) {
  rl->vt->forget(rl, item);
}
static inline int kin_rate_limiter_num_requeues(kin_rate_limiter *rl, const char *item) {
  return rl->vt->num_requeues(rl, item);
}
/* Frees rl (and every limiter it owns); NULL is a no-op. */
void kin_rate_limiter_free(kin_rate_limiter *rl);

/* Each constructor returns a new limiter, or NULL when out of memory (the
 * limiters passed to composite constructors are then freed too). */

/* base * 2^failures, capped at max (overflow gives max). */
kin_rate_limiter *kin_exponential_rate_limiter_new(uint64_t base_ns, uint64_t max_ns);
/* fast delay for the first max_fast_attempts tries of an item, then slow. */
kin_rate_limiter *kin_fast_slow_rate_limiter_new(uint64_t fast_ns, uint64_t slow_ns,
                                                 int max_fast_attempts);
/* Overall token bucket (golang.org/x/time/rate semantics: starts full,
 * refills at qps up to burst, each When reserves a token and returns the
 * wait until it is available). num_requeues is always 0. clock may be NULL
 * for the real clock. */
kin_rate_limiter *kin_bucket_rate_limiter_new(double qps, int burst, kin_clock *clock);
/* Max of the inner limiters' When; num_requeues the max; forget goes to
 * all. Takes ownership of the n limiters. */
kin_rate_limiter *kin_max_of_rate_limiter_new(kin_rate_limiter **limiters, int n);
/* Caps the inner limiter's delay at max_wait. Takes ownership of inner. */
kin_rate_limiter *kin_with_max_wait_rate_limiter_new(kin_rate_limiter *inner,
                                                     uint64_t max_wait_ns);
/* client-go DefaultControllerRateLimiter: max_of(exponential(5 ms, 1000 s),
 * bucket(10 qps, burst 100)). */
kin_rate_limiter *kin_default_controller_rate_limiter_new(kin_clock *clock);

#endif
