/* queue.c -- client-go's workqueue.Type: a FIFO of items with a dirty set
 * (items that need processing) and a processing set (items handed out and
 * not yet done). An item is queued only when it becomes dirty while not
 * processing, so a key is never worked on by two consumers at once and
 * repeated adds collapse into one. */
#include "workqueue_int.h"

#include "kin.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* The dirty set stores the first add time in the value pointer. */
_Static_assert(sizeof(void *) >= sizeof(uint64_t), "add times live in pointers");

/* Returns a new queue in *out; on any failure everything is released,
 * including cfg->rate_limiter, whose ownership always passes to us. */
int kin_workqueue_new(const kin_workqueue_config *cfg, kin_workqueue **out) {
  kin_workqueue_config none = {0};
  if (!cfg) cfg = &none;
  *out = NULL;
  kin_workqueue *q = calloc(1, sizeof(*q));
  if (!q) {
    kin_rate_limiter_free(cfg->rate_limiter);
    return KIN_ENOMEM;
  }
  q->clock = cfg->clock ? cfg->clock : kin_clock_real();
  q->rate_limiter = cfg->rate_limiter;
  kin__strq_init(&q->queue);
  kin__hmap_init(&q->dirty);
  kin__hmap_init(&q->processing);
  pthread_mutex_init(&q->mu, NULL);
  int rc = kin_cond_init(&q->cond);
  if (rc < 0) {
    pthread_mutex_destroy(&q->mu);
    kin_rate_limiter_free(q->rate_limiter);
    free(q);
    return rc;
  }
  if ((cfg->name && !(q->name = strdup(cfg->name))) ||
      kin_clock_subscribe(q->clock, &q->cond, &q->mu) < 0) {
    rc = KIN_ENOMEM;
    goto fail;
  }
  if (cfg->delaying || cfg->rate_limiter) {
    rc = kin__delaying_start(q);
    if (rc < 0) {
      kin_clock_unsubscribe(q->clock, &q->cond);
      goto fail;
    }
  }
  *out = q;
  return 0;

fail:
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mu);
  kin_rate_limiter_free(q->rate_limiter);
  free(q->name);
  free(q);
  return rc;
}

void kin_workqueue_free(kin_workqueue *q) {
  if (!q) return;
  kin_workqueue_shutdown(q);
  if (q->delaying) kin__delaying_free(q->delaying);
  kin_clock_unsubscribe(q->clock, &q->cond);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&q->processing, &pos))) free(e->val);
  kin__hmap_free(&q->processing);
  kin__hmap_free(&q->dirty);
  kin__strq_free(&q->queue);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mu);
  kin_rate_limiter_free(q->rate_limiter);
  free(q->name);
  free(q);
}

/* Copies item into the dirty set and, unless it is being processed, onto
 * the queue. On allocation failure the add is dropped (and logged): the
 * caller has no way to retry sooner than its next event would. */
void kin_workqueue_add(kin_workqueue *q, const char *item) {
  pthread_mutex_lock(&q->mu);
  if (q->shutting_down || kin__hmap_get(&q->dirty, item)) goto out;
  uint64_t now = kin_clock_now(q->clock);
  if (kin__hmap_put(&q->dirty, item, (void *)(uintptr_t)now, NULL) < 0) goto oom;
  if (!kin__hmap_get(&q->processing, item)) {
    if (kin__strq_push(&q->queue, item) < 0) {
      kin__hmap_del(&q->dirty, item, NULL);
      goto oom;
    }
    pthread_cond_signal(&q->cond);
  }
  q->adds_total++;
  goto out;
oom:
  kin_log(KIN_LOG_ERROR, "workqueue", "%s: out of memory, dropped add of %s",
          q->name ? q->name : "", item);
out:
  pthread_mutex_unlock(&q->mu);
}

int kin_workqueue_len(kin_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  int n = (int)kin__strq_len(&q->queue);
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* Moves the front item to the processing set. Caller holds q->mu and has
 * checked the queue is not empty. The entry is built before the item
 * leaves the queue, so KIN_ENOMEM loses nothing. */
static int take_front(kin_workqueue *q, const char **item) {
  const char *front = kin__strq_at(&q->queue, 0);
  size_t n = strlen(front);
  kin__wq_proc *p = malloc(sizeof(*p) + n + 1);
  if (!p) return KIN_ENOMEM;
  memcpy(p->item, front, n + 1);
  p->start_ns = kin_clock_now(q->clock);
  if (kin__hmap_put(&q->processing, p->item, p, NULL) < 0) {
    free(p);
    return KIN_ENOMEM;
  }
  free(kin__strq_pop(&q->queue));
  void *added = NULL;
  if (kin__hmap_del(&q->dirty, p->item, &added))
    kin__histogram_observe(&q->queue_duration,
                           kin__wq_seconds((uint64_t)(uintptr_t)added, p->start_ns));
  *item = p->item;
  return 0;
}

int kin_workqueue_get_until(kin_workqueue *q, uint64_t deadline_ns, const char **item) {
  int rc = 0;
  *item = NULL;
  pthread_mutex_lock(&q->mu);
  while (kin__strq_len(&q->queue) == 0 && !q->shutting_down) {
    if (kin_clock_wait(q->clock, &q->cond, &q->mu, deadline_ns) == KIN_ETIMEDOUT &&
        kin__strq_len(&q->queue) == 0 && !q->shutting_down) {
      rc = KIN_ETIMEDOUT;
      goto out;
    }
  }
  /* Shutting down still hands out what is queued. */
  rc = kin__strq_len(&q->queue) == 0 ? KIN_ECLOSED : take_front(q, item);
out:
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int kin_workqueue_get(kin_workqueue *q, const char **item) {
  return kin_workqueue_get_until(q, KIN_FOREVER, item);
}

/* item may be the very string get returned, so it is not used after the
 * processing entry that owns it is freed. */
void kin_workqueue_done(kin_workqueue *q, const char *item) {
  pthread_mutex_lock(&q->mu);
  void *v = NULL;
  if (!kin__hmap_del(&q->processing, item, &v)) goto out;
  kin__wq_proc *p = v;
  kin__histogram_observe(&q->work_duration,
                         kin__wq_seconds(p->start_ns, kin_clock_now(q->clock)));
  if (kin__hmap_get(&q->dirty, p->item)) {
    if (kin__strq_push(&q->queue, p->item) < 0) {
      kin_log(KIN_LOG_ERROR, "workqueue", "%s: out of memory, dropped re-add of %s",
              q->name ? q->name : "", p->item);
      kin__hmap_del(&q->dirty, p->item, NULL);
    } else {
      pthread_cond_signal(&q->cond);
    }
  }
  /* The drainer waits on the same cond as the getters; a signal could
   * wake a getter instead, so the last done wakes everyone. */
  if (kin__hmap_len(&q->processing) == 0 && q->drain) pthread_cond_broadcast(&q->cond);
  free(p);
out:
  pthread_mutex_unlock(&q->mu);
}

static void begin_shutdown(kin_workqueue *q, int drain) {
  pthread_mutex_lock(&q->mu);
  q->shutting_down = 1;
  q->drain = drain;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->mu);
  if (q->delaying) kin__delaying_stop(q->delaying);
}

void kin_workqueue_shutdown(kin_workqueue *q) { begin_shutdown(q, 0); }

void kin_workqueue_shutdown_with_drain(kin_workqueue *q) {
  begin_shutdown(q, 1);
  pthread_mutex_lock(&q->mu);
  while (q->drain && kin__hmap_len(&q->processing) > 0) pthread_cond_wait(&q->cond, &q->mu);
  pthread_mutex_unlock(&q->mu);
}

int kin_workqueue_shutting_down(kin_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  int s = q->shutting_down;
  pthread_mutex_unlock(&q->mu);
  return s;
}

const char *kin_workqueue_name(const kin_workqueue *q) { return q->name ? q->name : ""; }
