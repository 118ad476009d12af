/* delaying_queue.c -- client-go's delayingType: AddAfter keeps items in a
 * binary min-heap ordered by ready time, and a waiting thread adds each
 * item to the queue once its time has come. The thread sleeps on the
 * queue's clock until the earliest ready time, but never longer than a 10 s
 * heartbeat (client-go's maxWait: insurance against a missed wake-up). */
#include "workqueue_int.h"

#include "kin.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

#define HEARTBEAT_NS (10 * KIN_NSEC_PER_SEC)

typedef struct {
  uint64_t ready_ns;
  uint64_t seq;  /* insertion order, so equal ready times come out FIFO */
  int prio;      /* added at this priority */
  size_t index;  /* position in the heap, for the in-place update on dedup */
  char item[];
} wait_for;

struct kin__delaying {
  kin_workqueue *q; /* immutable */
  pthread_t thread; /* immutable */

  pthread_mutex_t mu;  /* guards everything below */
  pthread_cond_t cond; /* the waiting thread sleeps here */
  wait_for **heap;
  size_t len, cap;
  kin__hmap waiting; /* item -> wait_for *, the heap's entries by item */
  uint64_t seq;
  int stop;
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int before(const wait_for *a, const wait_for *b) {
  return a->ready_ns < b->ready_ns || (a->ready_ns == b->ready_ns && a->seq < b->seq);
}

static void place(kin__delaying *d, size_t i, wait_for *w) {
  d->heap[i] = w;
  w->index = i;
}

static void sift_up(kin__delaying *d, size_t i) {
  wait_for *w = d->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(w, d->heap[parent])) break;
    place(d, i, d->heap[parent]);
    i = parent;
  }
  place(d, i, w);
}

static void sift_down(kin__delaying *d, size_t i) {
  wait_for *w = d->heap[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= d->len) break;
    if (c + 1 < d->len && before(d->heap[c + 1], d->heap[c])) c++;
    if (!before(d->heap[c], w)) break;
    place(d, i, d->heap[c]);
    i = c;
  }
  place(d, i, w);
}

/* Removes and returns the earliest entry (caller frees); d->len > 0. */
static wait_for *heap_pop(kin__delaying *d) {
  wait_for *top = d->heap[0];
  d->len--;
  if (d->len > 0) {
    place(d, 0, d->heap[d->len]);
    sift_down(d, 0);
  }
  kin__hmap_del(&d->waiting, top->item, NULL);
  return top;
}

/* Schedules item at ready_ns, or moves an already waiting item earlier.
 * Caller holds d->mu. Returns 1 when the earliest ready time changed (the
 * thread must recompute its deadline), 0 otherwise, KIN_ENOMEM. */
static int schedule(kin__delaying *d, const char *item, uint64_t ready_ns, int prio) {
  void **slot = kin__hmap_get(&d->waiting, item);
  if (slot) {
    wait_for *w = *slot;
    if (prio > w->prio) w->prio = prio;
    if (ready_ns >= w->ready_ns) return 0;
    w->ready_ns = ready_ns;
    sift_up(d, w->index);
    return w->index == 0;
  }
  if (d->len == d->cap) {
    size_t ncap = d->cap ? d->cap * 2 : 16;
    wait_for **nh = realloc(d->heap, ncap * sizeof(*nh));
    if (!nh) return KIN_ENOMEM;
    d->heap = nh;
    d->cap = ncap;
  }
  size_t n = strlen(item);
  wait_for *w = malloc(sizeof(*w) + n + 1);
  if (!w) return KIN_ENOMEM;
  memcpy(w->item, item, n + 1);
  w->ready_ns = ready_ns;
  w->prio = prio;
  w->seq = d->seq++;
  if (kin__hmap_put(&d->waiting, w->item, w, NULL) < 0) {
    free(w);
    return KIN_ENOMEM;
  }
  place(d, d->len++, w);
  sift_up(d, w->index);
  return w->index == 0;
}

static void *waiting_loop(void *arg) {
  kin__delaying *d = arg;
  kin_clock *clock = d->q->clock;
  pthread_mutex_lock(&d->mu);
  while (!d->stop) {
    uint64_t now = kin_clock_now(clock);
    /* Adding under d->mu keeps ready-time order against concurrent
     * add_after calls (lock order: d->mu, then the queue's mutex). */
    while (d->len > 0 && d->heap[0]->ready_ns <= now) {
      wait_for *w = heap_pop(d);
      kin_workqueue_add_priority(d->q, w->item, w->prio);
      free(w);
    }
    uint64_t deadline = sat_add(now, HEARTBEAT_NS);
    if (d->len > 0 && d->heap[0]->ready_ns < deadline) deadline = d->heap[0]->ready_ns;
    kin_clock_wait(clock, &d->cond, &d->mu, deadline);
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

/* Allocates the delaying part and starts its thread; on failure nothing is
 * left behind and q->delaying stays NULL. */
int kin__delaying_start(kin_workqueue *q) {
  kin__delaying *d = calloc(1, sizeof(*d));
  if (!d) return KIN_ENOMEM;
  d->q = q;
  kin__hmap_init(&d->waiting);
  pthread_mutex_init(&d->mu, NULL);
  int rc = kin_cond_init(&d->cond);
  if (rc < 0) goto fail_cond;
  rc = kin_clock_subscribe(q->clock, &d->cond, &d->mu);
  if (rc < 0) goto fail_sub;
  rc = -pthread_create(&d->thread, NULL, waiting_loop, d);
  if (rc < 0) goto fail_thread;
  q->delaying = d;
  return 0;

fail_thread:
  kin_clock_unsubscribe(q->clock, &d->cond);
fail_sub:
  pthread_cond_destroy(&d->cond);
fail_cond:
  pthread_mutex_destroy(&d->mu);
  free(d);
  return rc;
}

void kin__delaying_stop(kin__delaying *d) {
  pthread_mutex_lock(&d->mu);
  d->stop = 1;
  pthread_cond_broadcast(&d->cond);
  pthread_mutex_unlock(&d->mu);
}

/* Items still waiting are dropped: after shutdown nothing may be added. */
void kin__delaying_free(kin__delaying *d) {
  kin__delaying_stop(d);
  pthread_join(d->thread, NULL);
  kin_clock_unsubscribe(d->q->clock, &d->cond);
  for (size_t i = 0; i < d->len; i++) free(d->heap[i]);
  free(d->heap);
  kin__hmap_free(&d->waiting);
  pthread_cond_destroy(&d->cond);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

int kin_workqueue_add_after(kin_workqueue *q, const char *item, uint64_t delay_ns) {
  return kin_workqueue_add_after_priority(q, item, delay_ns, KIN_PRIORITY_NORMAL);
}

int kin_workqueue_add_after_priority(kin_workqueue *q, const char *item, uint64_t delay_ns,
                                     int prio) {
  if (!q->delaying) return KIN_EINVAL;
  pthread_mutex_lock(&q->mu);
  int down = q->shutting_down;
  if (prio == KIN_PRIORITY_KEEP) {
    /* the priority the item has now (it is usually being processed) */
    void **v = kin__hmap_get(&q->items, item);
    prio = v ? ((kin__wq_node *)*v)->prio : KIN_PRIORITY_NORMAL;
  }
  if (!q->priority) prio = KIN_PRIORITY_NORMAL;
  /* client-go counts every AddAfter as a retry, so requeue-after counts
   * as well as AddRateLimited. */
  if (!down) q->retries_total++;
  pthread_mutex_unlock(&q->mu);
  if (down) return 0;
  if (delay_ns == 0) {
    kin_workqueue_add_priority(q, item, prio);
    return 0;
  }
  kin__delaying *d = q->delaying;
  uint64_t ready = sat_add(kin_clock_now(q->clock), delay_ns);
  pthread_mutex_lock(&d->mu);
  int rc = d->stop ? 0 : schedule(d, item, ready, prio);
  if (rc > 0) pthread_cond_signal(&d->cond);
  pthread_mutex_unlock(&d->mu);
  if (rc < 0)
    kin_log(KIN_LOG_ERROR, "workqueue", "%s: out of memory, dropped add_after of %s",
            kin_workqueue_name(q), item);
  return rc < 0 ? rc : 0;
}

int kin__delaying_ready_at(kin_workqueue *q, const char *item, uint64_t *ready_ns) {
  if (!q->delaying) return KIN_EINVAL;
  kin__delaying *d = q->delaying;
  pthread_mutex_lock(&d->mu);
  void **slot = kin__hmap_get(&d->waiting, item);
  if (slot) *ready_ns = ((wait_for *)*slot)->ready_ns;
  pthread_mutex_unlock(&d->mu);
  return slot ? 0 : KIN_ENOENT;
}

void kin__delaying_each(kin_workqueue *q, void (*fn)(void *ud, const char *item, uint64_t due_in_ns),
                        void *ud) {
  kin__delaying *d = q->delaying;
  if (!d) return;
  pthread_mutex_lock(&d->mu);
  uint64_t now = kin_clock_now(q->clock);
  for (size_t i = 0; i < d->len; i++) {
    const wait_for *w = d->heap[i];
    fn(ud, w->item, w->ready_ns > now ? w->ready_ns - now : 0);
  }
  pthread_mutex_unlock(&d->mu);
}
