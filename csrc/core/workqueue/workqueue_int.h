/* workqueue_int.h -- internal: what queue.c, delaying_queue.c, rate_limiting_queue.c
 * and workqueue_metrics.c share about a kin_workqueue (internal).
 *
 * Lock order: the delaying part's mutex may be held while taking the
 * queue's mutex (the waiting thread adds ready items under its own lock so
 * that they enter the queue in ready-time order), never the reverse. */
#ifndef KIN_WORKQUEUE_INT_H
#define KIN_WORKQUEUE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "hmap.h"
#include "strq.h"
#include "workqueue.h"

/* An item being processed: the string handed out by get (valid until done)
 * and when get handed it out (for work duration and the two gauges). */
typedef struct {
  uint64_t start_ns;
  char item[];
} kin__wq_proc;

typedef struct kin__delaying kin__delaying;

struct kin_workqueue {
  /* Immutable after kin_workqueue_new. */
  kin_clock *clock;
  char *name;
  kin__delaying *delaying;        /* NULL without AddAfter */
  kin_rate_limiter *rate_limiter; /* NULL without AddRateLimited; has its own lock */

  pthread_mutex_t mu;   /* guards everything below */
  pthread_cond_t cond;  /* getters and the drainer wait here */
  kin__strq queue;      /* order of the items ready to be handed out */
  kin__hmap dirty;      /* item -> first add time (ns, as uintptr_t) */
  kin__hmap processing; /* item -> kin__wq_proc * */
  int shutting_down;
  int drain;            /* a shutdown_with_drain is waiting */
  uint64_t adds_total;
  uint64_t retries_total;
  kin_histogram queue_duration;
  kin_histogram work_duration;
};

/* workqueue_metrics.c: records seconds into h. Caller holds the lock that
 * guards h. */
void kin__histogram_observe(kin_histogram *h, double seconds);
static inline double kin__wq_seconds(uint64_t from_ns, uint64_t to_ns) {
  return to_ns > from_ns ? (double)(to_ns - from_ns) / 1e9 : 0.0;
}

/* delaying_queue.c: starts the waiting thread for q. Returns 0, KIN_ENOMEM
 * or a negative errno; q->delaying is set only on success. */
int kin__delaying_start(kin_workqueue *q);
/* Tells the waiting thread to stop; safe to call repeatedly. Caller must
 * not hold q->mu. */
void kin__delaying_stop(kin__delaying *d);
/* Stops and joins the thread, frees the waiting items and d. */
void kin__delaying_free(kin__delaying *d);
/* Test hook: the ready time of item if it is waiting (0) or KIN_ENOENT. */
int kin__delaying_ready_at(kin_workqueue *q, const char *item, uint64_t *ready_ns);

/* Calls fn(ud, item, due_in_ns) for each waiting item under the delaying
 * part's lock (fn must not call into q). */
void kin__delaying_each(kin_workqueue *q, void (*fn)(void *ud, const char *item, uint64_t due_in_ns),
                        void *ud);

#endif
