/* backoff.h -- apimachinery's wait.Backoff (its Step and Jitter) and the
 * exponential BackoffManager of wait.NewExponentialBackoffManager, which
 * the reflector uses between ListAndWatch rounds (800 ms doubling to 30 s,
 * jitter 1.0, reset after 2 minutes without a backoff).
 *
 * Not thread-safe: a backoff belongs to the one thread that waits on it
 * (the reflector thread). Jitter draws from a private xorshift state, so
 * no global random generator is shared between threads. */
#ifndef KIN_BACKOFF_H
#define KIN_BACKOFF_H

#include <stdint.h>

#include "clock.h"

typedef struct {
  uint64_t duration_ns; /* the base delay of the next step */
  double factor;        /* duration is multiplied by it after each step; 0: constant */
  double jitter;        /* > 0: each delay gains a random extra in [0, jitter * d) */
  int steps;            /* steps left before the duration stops changing */
  uint64_t cap_ns;      /* 0: none; reaching it ends the steps */
  uint64_t rng;         /* jitter state; 0 is seeded on first use */
} kin_backoff;

/* Returns the next delay and advances b, as wait.Backoff.Step: once the
 * steps are used up the base duration no longer changes (it is still
 * jittered). NULL returns 0. */
uint64_t kin_backoff_step(kin_backoff *b);

/* Returns d plus a random extra in [0, max_factor * d) (max_factor <= 0
 * counts as 1.0, as wait.Jitter), drawing from *rng (0: seeded here). */
uint64_t kin_jitter(uint64_t d, double max_factor, uint64_t *rng);

/* A uniform double in [0, 1) from *rng (0: seeded here). */
double kin_rand_float(uint64_t *rng);

typedef struct {
  kin_backoff backoff;
  uint64_t initial_ns;
  uint64_t reset_ns;      /* a gap longer than this since the last backoff resets it */
  uint64_t last_start_ns; /* clock time of the last backoff (creation at first) */
  kin_clock *clock;       /* borrowed */
} kin_backoff_manager;

/* Sets m up as wait.NewExponentialBackoffManager(initial, max, reset,
 * factor, jitter, clock); clock NULL means the real clock. */
void kin_backoff_manager_init(kin_backoff_manager *m, uint64_t initial_ns, uint64_t max_ns,
                              uint64_t reset_ns, double factor, double jitter, kin_clock *clock);

/* The delay to wait now (getNextBackoff): the backoff restarts from the
 * initial delay when more than reset_ns passed since the previous call. */
uint64_t kin_backoff_manager_next(kin_backoff_manager *m);

#endif
