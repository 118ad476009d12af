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
#include "workqueue.h"

/* An item the queue holds: dirty (to be handed out, or to be queued again
 * at its done), processing (handed out, done not yet called), or both. One
 * node per item, in kin_workqueue.items from the add that makes it dirty
 * until it is neither; then back to the queue's free list, so that the
 * steady state allocates nothing per item. item is what get hands out
 * (valid until the done that ends the processing). */
typedef struct kin__wq_node kin__wq_node;
struct kin__wq_node {
  kin__wq_node *next_free; /* on kin_workqueue.free_nodes */
  uint64_t hash;           /* kin__hash(item) */
  uint64_t added_ns;       /* while dirty: the add that made it dirty */
  uint64_t start_ns;       /* while processing: when get handed it out */
  uint32_t len, cap;       /* strlen(item); bytes item has room for */
  int32_t prio;            /* while dirty: its priority (its band when ready) */
  uint8_t dirty, processing;
  char item[];
};

typedef struct kin__delaying kin__delaying;

/* The ready items of one priority, in order: a ring of nodes. */
typedef struct {
  int prio;
  kin__wq_node **ring;
  size_t head, len, cap; /* cap: a power of two, or 0 */
} kin__wq_band;

struct kin_workqueue {
  /* Immutable after kin_workqueue_new. */
  kin_clock *clock;
  char *name;
  kin__delaying *delaying;        /* NULL without AddAfter */
  kin_rate_limiter *rate_limiter; /* NULL without AddRateLimited; has its own lock */

  pthread_mutex_t mu;   /* guards everything below */
  pthread_cond_t cond;  /* getters and the drainer wait here */
  /* the ready items (each dirty, not processing): one band per priority,
   * highest first (one band at NORMAL without priority); ready_len counts
   * them all */
  int priority; /* immutable: bands by priority */
  kin__wq_band bands[KIN_WQ_PRIO_MAX];
  int nbands;
  size_t ready_len;
  kin__hmap items;      /* item -> kin__wq_node * (keys borrowed: node->item) */
  size_t ndirty, nprocessing;
  kin__wq_node *free_nodes; /* released nodes for reuse, at most FREE_MAX */
  size_t nfree;
  int waiters;          /* getters blocked in kin_clock_wait: add signals only then */
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
/* queue.c: the i-th ready item in the order get hands them out. Caller
 * holds q->mu; i < q->ready_len. */
kin__wq_node *kin__wq_ready_at(const kin_workqueue *q, size_t i);

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
