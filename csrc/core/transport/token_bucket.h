/* token_bucket.h -- internal: client-go's flowcontrol.NewTokenBucketRateLimiter: the
 * client-side limit on requests to the API server (internal). The bucket
 * starts full (burst tokens) and refills at qps; Accept reserves a token
 * and blocks until it is due, on the kin_clock so tests drive it with a
 * fake clock. The reservation itself is the workqueue's BucketRateLimiter
 * (rate_limiters.c, golang.org/x/time/rate semantics); this adds the wait.
 *
 * Thread-safe: the reservation has its own lock inside the bucket limiter;
 * mu only pairs with cond for kin_clock_wait. */
#ifndef KIN_TOKEN_BUCKET_H
#define KIN_TOKEN_BUCKET_H

#include <pthread.h>
#include <stdint.h>

#include "clock.h"
#include "rate_limiter.h"

typedef struct {
  kin_rate_limiter *bucket; /* owned; immutable pointer */
  kin_clock *clock;         /* borrowed; immutable */
  pthread_mutex_t mu;       /* held only around kin_clock_wait */
  pthread_cond_t cond;
} kin__token_bucket;

/* Initialises tb for qps tokens per second and burst (burst < 1 counts as
 * 1); clock NULL: the real clock. Returns 0 or KIN_ENOMEM (nothing to free
 * then). */
int kin__token_bucket_init(kin__token_bucket *tb, double qps, int burst, kin_clock *clock);
void kin__token_bucket_destroy(kin__token_bucket *tb);

/* Takes one token, blocking until it is available (flowcontrol Accept).
 * Returns the time waited in ns. */
uint64_t kin__token_bucket_accept(kin__token_bucket *tb);

/* Blocks on clock until it reads deadline_ns, with mu/cond subscribed to
 * it (shared by the client's retry waits). */
void kin__clock_sleep_until(kin_clock *clock, pthread_mutex_t *mu, pthread_cond_t *cond,
                            uint64_t deadline_ns);

#endif
