/* token_bucket.c -- the client-side request limiter (see token_bucket.h). */
#include "token_bucket.h"

#include "kin.h"

int kin__token_bucket_init(kin__token_bucket *tb, double qps, int burst, kin_clock *clock) {
  tb->clock = clock ? clock : kin_clock_real();
  tb->bucket = kin_bucket_rate_limiter_new(qps, burst < 1 ? 1 : burst, tb->clock);
  if (!tb->bucket) return KIN_ENOMEM;
  pthread_mutex_init(&tb->mu, NULL);
  if (kin_cond_init(&tb->cond) != 0 || kin_clock_subscribe(tb->clock, &tb->cond, &tb->mu) != 0) {
    pthread_mutex_destroy(&tb->mu);
    kin_rate_limiter_free(tb->bucket);
    return KIN_ENOMEM;
  }
  return 0;
}

void kin__token_bucket_destroy(kin__token_bucket *tb) {
  kin_clock_unsubscribe(tb->clock, &tb->cond);
  pthread_cond_destroy(&tb->cond);
  pthread_mutex_destroy(&tb->mu);
  kin_rate_limiter_free(tb->bucket);
}

void kin__clock_sleep_until(kin_clock *clock, pthread_mutex_t *mu, pthread_cond_t *cond,
                            uint64_t deadline_ns) {
  pthread_mutex_lock(mu);
  while (kin_clock_now(clock) < deadline_ns &&
         kin_clock_wait(clock, cond, mu, deadline_ns) != KIN_ETIMEDOUT) {
  }
  pthread_mutex_unlock(mu);
}

uint64_t kin__token_bucket_accept(kin__token_bucket *tb) {
  /* The reservation is taken at once, so concurrent callers queue up in
   * the order they asked, as x/time/rate's Wait. */
  uint64_t wait = kin_rate_limiter_when(tb->bucket, "");
  if (wait) kin__clock_sleep_until(tb->clock, &tb->mu, &tb->cond, kin_clock_now(tb->clock) + wait);
  return wait;
}
