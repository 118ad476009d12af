/* rate_limiting_queue.c -- client-go's rateLimitingType: the delaying queue
 * plus a rate limiter that decides how long a failed item waits. The
 * limiter has its own lock, so none of these touch the queue's mutex
 * except through add_after. */
#include "workqueue_int.h"

#include "kin.h"

int kin_workqueue_add_rate_limited(kin_workqueue *q, const char *item) {
  return kin_workqueue_add_rate_limited_priority(q, item, KIN_PRIORITY_NORMAL);
}

int kin_workqueue_add_rate_limited_priority(kin_workqueue *q, const char *item, int priority) {
  if (!q->rate_limiter) return KIN_EINVAL;
  return kin_workqueue_add_after_priority(q, item, kin_rate_limiter_when(q->rate_limiter, item),
                                          priority);
}

int kin_workqueue_forget(kin_workqueue *q, const char *item) {
  if (!q->rate_limiter) return KIN_EINVAL;
  kin_rate_limiter_forget(q->rate_limiter, item);
  return 0;
}

int kin_workqueue_num_requeues(kin_workqueue *q, const char *item) {
  if (!q->rate_limiter) return 0;
  return kin_rate_limiter_num_requeues(q->rate_limiter, item);
}
