/* workqueue.h -- client-go's util/workqueue: the queue (dirty and
 * processing sets), the delaying queue (AddAfter, a heap by ready time with
 * a 10 s heartbeat) and the rate-limiting queue, as one handle type whose
 * capabilities depend on the constructor.
 *
 * Items are NUL-terminated strings (typically "namespace/name" reconcile
 * requests); the queue copies what it is given.
 *
 * Guarantees (client-go's): an item is queued at most once however often it
 * is added while waiting; an item added while it is being processed is
 * handed out again only after kin_workqueue_done; so no item is ever
 * processed by two consumers at once.
 *
 * Every function is thread-safe: one mutex per queue guards its sets, its
 * order and its metrics; the delaying part has its own thread and heap. */
#ifndef KIN_WORKQUEUE_H
#define KIN_WORKQUEUE_H

#include <stdint.h>

#include "clock.h"
#include "rate_limiter.h"

typedef struct kin_workqueue kin_workqueue;

/* Priorities (controller-runtime's priorityqueue): a higher one is handed
 * out first, FIFO within one. Events fresh from the server are NORMAL; the
 * initial list's adds and resyncs (updates whose object did not change)
 * are LOW (handler.LowPriorityWhenUnchanged), so that after a restart a
 * user's change does not wait behind every object. KEEP (for a requeue)
 * keeps the priority the item had. */
#define KIN_PRIORITY_NORMAL 0
#define KIN_PRIORITY_LOW (-100)
#define KIN_PRIORITY_KEEP INT32_MIN

typedef struct {
  const char *name;          /* metrics label; may be NULL */
  /* Hand items out by priority (the *_priority adds); 0: every item at
   * NORMAL, client-go's FIFO, whatever priority an add gives. */
  int priority;
  kin_clock *clock;          /* NULL: real clock */
  int delaying;              /* enable AddAfter (starts the waiting thread) */
  kin_rate_limiter *rate_limiter; /* enable AddRateLimited (implies
                                     delaying); the queue takes ownership */
} kin_workqueue_config;

/* Returns a new queue in *out, or KIN_ENOMEM / a negative errno when a
 * thread cannot be started (the rate limiter is freed then too). */
int kin_workqueue_new(const kin_workqueue_config *cfg, kin_workqueue **out);

/* Shuts the queue down (if not already), joins its thread and frees it. No
 * other thread may use the queue any more. */
void kin_workqueue_free(kin_workqueue *q);

/* Marks item as needing processing. Ignored after shutdown. */
void kin_workqueue_add(kin_workqueue *q, const char *item);

/* kin_workqueue_add at priority (NORMAL for add). An item already queued
 * at a lower priority is raised to this one (moved behind the items of
 * its new priority); one queued at a higher priority stays where it is;
 * one being processed is queued again at the higher of the two at its
 * done. KEEP: the item's current priority, NORMAL for a new one. On a
 * queue made without priority every item is NORMAL. */
void kin_workqueue_add_priority(kin_workqueue *q, const char *item, int priority);

/* Number of items queued (dirty and not processing). */
int kin_workqueue_len(kin_workqueue *q);

/* Blocks until an item is available and returns 0 with *item pointing to
 * it; the string belongs to the queue and stays valid until
 * kin_workqueue_done(q, *item). Returns KIN_ECLOSED once the queue is shut
 * down and empty. */
int kin_workqueue_get(kin_workqueue *q, const char **item);

/* Like get, but gives up at deadline_ns on the queue's clock with
 * KIN_ETIMEDOUT. */
int kin_workqueue_get_until(kin_workqueue *q, uint64_t deadline_ns, const char **item);

/* Marks item as done; if it was added again while processing, it is
 * queued again. Accepts the pointer from get or any equal string. */
void kin_workqueue_done(kin_workqueue *q, const char *item);

/* A worker's loop step: kin_workqueue_done(q, done) (skipped when done is
 * NULL) then kin_workqueue_get(q, item), under one hold of the queue's
 * lock and with one clock reading for both, so a worker that finds the
 * next item ready goes on without sleeping or being woken. done is not
 * read after the call (it may be the string a get returned). Returns as
 * kin_workqueue_get. */
int kin_workqueue_done_get(kin_workqueue *q, const char *done, const char **item);

/* Stops accepting adds; getters drain what is queued, then see
 * KIN_ECLOSED. Does not wait. */
void kin_workqueue_shutdown(kin_workqueue *q);

/* Like shutdown, then waits until every item being processed is done. A
 * concurrent kin_workqueue_shutdown ends the wait early. */
void kin_workqueue_shutdown_with_drain(kin_workqueue *q);

int kin_workqueue_shutting_down(kin_workqueue *q);

/* Delaying queue: adds item once delay_ns has passed on the queue's clock
 * (at once when delay_ns is 0). If item is already waiting, the earlier
 * ready time wins. Returns KIN_EINVAL on a queue without delaying. */
int kin_workqueue_add_after(kin_workqueue *q, const char *item, uint64_t delay_ns);
/* The same, the item added at priority when its time comes (KEEP: the
 * priority it had when add_after was called; an item waiting already
 * keeps the higher of the two). */
int kin_workqueue_add_after_priority(kin_workqueue *q, const char *item, uint64_t delay_ns,
                                     int priority);

/* Rate-limiting queue: add_after(item, limiter.when(item)); forget and
 * num_requeues forward to the limiter. Return KIN_EINVAL on a queue
 * without a limiter (num_requeues returns 0). */
int kin_workqueue_add_rate_limited(kin_workqueue *q, const char *item);
int kin_workqueue_add_rate_limited_priority(kin_workqueue *q, const char *item, int priority);
int kin_workqueue_forget(kin_workqueue *q, const char *item);
int kin_workqueue_num_requeues(kin_workqueue *q, const char *item);

/* Prometheus-style histogram with client-go/controller-runtime's buckets
 * for workqueue durations: 1e-8 s * 10^i, i = 0..11 (upper bounds). */
#define KIN_WQ_HIST_BUCKETS 12
/* Distinct priorities a queue keeps apart; an item of one more shares the
 * band of the nearest priority below it (the lowest band's, when it is
 * below all). */
#define KIN_WQ_PRIO_MAX 8
typedef struct {
  uint64_t count;
  double sum_seconds;
  uint64_t buckets[KIN_WQ_HIST_BUCKETS]; /* cumulative counts, le bound i */
} kin_histogram;

/* Snapshot of the queue's metrics (names as client-go's). Depth and adds
 * move only when an item newly becomes dirty; queue duration is first add
 * -> get, work duration get -> done; the two gauges are computed at
 * snapshot time from the start times of items being processed. */
typedef struct {
  int64_t depth;                               /* workqueue_depth */
  uint64_t adds_total;                         /* workqueue_adds_total */
  uint64_t retries_total;                      /* workqueue_retries_total: every
                                                  add_after (so every add_rate_limited)
                                                  before shutdown, as client-go */
  kin_histogram queue_duration;                /* workqueue_queue_duration_seconds */
  kin_histogram work_duration;                 /* workqueue_work_duration_seconds */
  double unfinished_work_seconds;              /* workqueue_unfinished_work_seconds */
  double longest_running_processor_seconds;    /* workqueue_longest_running_processor_seconds */
  /* workqueue_depth by priority (controller-runtime's priority queue
   * labels depth with it): the ready items of each priority, highest
   * first; nprio 0 on a queue without priority. */
  int nprio;
  struct {
    int priority;
    int64_t depth;
  } prio[KIN_WQ_PRIO_MAX];
} kin_workqueue_metrics;

void kin_workqueue_get_metrics(kin_workqueue *q, kin_workqueue_metrics *m);
const char *kin_workqueue_name(const kin_workqueue *q);

/* ---- snapshot (workqueue_snapshot.c), for kinformer inspect ----------------- */

typedef enum {
  KIN_WQ_READY = 0,  /* waiting for a worker */
  KIN_WQ_PROCESSING, /* handed out, not done (it may be dirty again too) */
  KIN_WQ_WAITING     /* in the delaying part: added after due_in_ns */
} kin_wq_state;

typedef struct {
  char *key;          /* malloc'd */
  kin_wq_state state;
  uint64_t due_in_ns; /* WAITING: how long until it is added (queue clock); 0 else */
  uint64_t since_ns;  /* PROCESSING: how long it has been handed out */
  int requeues;       /* the rate limiter's count for the key (retries) */
} kin_wq_item;

/* Copies up to max items of q (ready ones in queue order, then those being
 * processed, then the waiting ones by due time... as found) into a new
 * array *out (free with kin_workqueue_snapshot_free) with their count in
 * *n. The array grows with what is found, so max may be SIZE_MAX (all).
 * Takes each lock of q in turn, so the picture is per part, not
 * atomic across parts. Returns 0 or KIN_ENOMEM (nothing returned). */
int kin_workqueue_snapshot(kin_workqueue *q, size_t max, kin_wq_item **out, size_t *n);
void kin_workqueue_snapshot_free(kin_wq_item *v, size_t n);

#endif
