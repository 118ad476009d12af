/* queue.c -- client-go's workqueue.Type: a FIFO of items with a dirty set
 * (items that need processing) and a processing set (items handed out and
 * not yet done). An item is queued only when it becomes dirty while not
 * processing, so a key is never worked on by two consumers at once and
 * repeated adds collapse into one.
 *
 * Both sets live in one map of nodes (kin__wq_node: a dirty and a
 * processing flag), so an add, a get and a done each look the item up once
 * and allocate nothing once the free list is warm. A getter that finds an
 * item ready takes it without waiting; add and done signal the condition
 * only when a getter is actually blocked on it (q->waiters), so a busy
 * consumer costs its producer no futex wake. */
#include "workqueue_int.h"

#include "kin.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

/* Released nodes kept for reuse: enough for a worker pool's churn, small
 * enough not to matter when a burst has gone. */
#define FREE_MAX 4096

/* A node for item (n bytes, hash h), from the free list when one is big
 * enough. Caller holds q->mu. NULL when out of memory. */
static kin__wq_node *node_get(kin_workqueue *q, const char *item, size_t n, uint64_t h) {
  kin__wq_node *nd = NULL;
  if (q->free_nodes && q->free_nodes->cap > n) {
    nd = q->free_nodes;
    q->free_nodes = nd->next_free;
    q->nfree--;
  } else {
    /* room rounded up to 32 bytes, so that nodes are interchangeable for
     * keys of similar length */
    size_t cap = (n + 1 + 31) & ~(size_t)31;
    if (n >= UINT32_MAX - 32 || !(nd = malloc(sizeof(*nd) + cap))) return NULL;
    nd->cap = (uint32_t)cap;
  }
  nd->next_free = NULL;
  nd->hash = h;
  nd->len = (uint32_t)n;
  nd->dirty = nd->processing = 0;
  memcpy(nd->item, item, n + 1);
  return nd;
}

/* Caller holds q->mu; nd is in neither set. */
static void node_put(kin_workqueue *q, kin__wq_node *nd) {
  if (q->nfree >= FREE_MAX) {
    free(nd);
    return;
  }
  nd->next_free = q->free_nodes;
  q->free_nodes = nd;
  q->nfree++;
}

/* The band of priority prio, made (in order, highest first) when there is
 * none; past KIN_WQ_PRIO_MAX bands, the band of the nearest priority below
 * (the lowest band when prio is below all). Caller holds q->mu. */
static kin__wq_band *band_for(kin_workqueue *q, int prio) {
  int i = 0;
  while (i < q->nbands && q->bands[i].prio > prio) i++;
  if (i < q->nbands && q->bands[i].prio == prio) return &q->bands[i];
  if (q->nbands == KIN_WQ_PRIO_MAX) return &q->bands[i < q->nbands ? i : q->nbands - 1];
  memmove(&q->bands[i + 1], &q->bands[i], (size_t)(q->nbands - i) * sizeof(q->bands[0]));
  memset(&q->bands[i], 0, sizeof(q->bands[0]));
  q->bands[i].prio = prio;
  q->nbands++;
  return &q->bands[i];
}

static kin__wq_node *band_at(const kin__wq_band *b, size_t i) {
  return b->ring[(b->head + i) & (b->cap - 1)];
}

/* Appends nd to the band of its priority. Caller holds q->mu. 0 or
 * KIN_ENOMEM. */
static int ready_push(kin_workqueue *q, kin__wq_node *nd) {
  kin__wq_band *b = band_for(q, q->priority ? nd->prio : KIN_PRIORITY_NORMAL);
  if (b->len == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 64;
    kin__wq_node **v = malloc(cap * sizeof(*v));
    if (!v) return KIN_ENOMEM;
    for (size_t i = 0; i < b->len; i++) v[i] = band_at(b, i);
    free(b->ring);
    b->ring = v;
    b->cap = cap;
    b->head = 0;
  }
  b->ring[(b->head + b->len++) & (b->cap - 1)] = nd;
  q->ready_len++;
  return 0;
}

/* Takes the front of the highest band that has items; q->ready_len > 0. */
static kin__wq_node *ready_pop(kin_workqueue *q) {
  kin__wq_band *b = q->bands;
  while (!b->len) b++;
  kin__wq_node *nd = b->ring[b->head];
  b->head = (b->head + 1) & (b->cap - 1);
  b->len--;
  q->ready_len--;
  return nd;
}

/* Takes nd out of its band (a raise): the items behind it move up. */
static void ready_remove(kin_workqueue *q, kin__wq_node *nd) {
  for (int k = 0; k < q->nbands; k++) {
    kin__wq_band *b = &q->bands[k];
    for (size_t i = 0; i < b->len; i++) {
      if (band_at(b, i) != nd) continue;
      for (size_t j = i; j + 1 < b->len; j++)
        b->ring[(b->head + j) & (b->cap - 1)] = band_at(b, j + 1);
      b->len--;
      q->ready_len--;
      return;
    }
  }
}

kin__wq_node *kin__wq_ready_at(const kin_workqueue *q, size_t i) {
  for (int k = 0; k < q->nbands; k++) {
    if (i < q->bands[k].len) return band_at(&q->bands[k], i);
    i -= q->bands[k].len;
  }
  return NULL;
}

/* An item became ready: wakes one blocked getter, if any. A drainer waits
 * on the same condition and could swallow a signal meant for a getter, so
 * while one waits everyone is woken. Caller holds q->mu. */
static void wake_getter(kin_workqueue *q) {
  if (q->drain) pthread_cond_broadcast(&q->cond);
  else if (q->waiters > 0) pthread_cond_signal(&q->cond);
}

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
  q->priority = cfg->priority;
  kin__hmap_init_borrowed(&q->items);
  int rc = kin_mutex_init_hot(&q->mu);
  if (rc < 0) {
    kin_rate_limiter_free(q->rate_limiter);
    free(q);
    return rc;
  }
  rc = kin_cond_init(&q->cond);
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
  while ((e = kin__hmap_next(&q->items, &pos))) free(e->val);
  kin__hmap_free(&q->items);
  for (kin__wq_node *nd = q->free_nodes, *nx; nd; nd = nx) {
    nx = nd->next_free;
    free(nd);
  }
  for (int k = 0; k < q->nbands; k++) free(q->bands[k].ring);
  pthread_cond_destroy(&q->cond);
  pthread_mutex_destroy(&q->mu);
  kin_rate_limiter_free(q->rate_limiter);
  free(q->name);
  free(q);
}

/* Marks item dirty at priority and, unless it is being processed, queues
 * it; raises an item queued lower. The hash is computed before the lock. On
 * allocation failure the add is dropped (and logged): the caller has no
 * way to retry sooner than its next event would. Thread-safe. */
void kin_workqueue_add_priority(kin_workqueue *q, const char *item, int prio) {
  size_t n = strlen(item);
  uint64_t h = kin__hash(item, n);
  if (!q->priority) prio = KIN_PRIORITY_NORMAL;
  pthread_mutex_lock(&q->mu);
  if (q->shutting_down) goto out;
  void **v = kin__hmap_get_h(&q->items, item, n, h);
  kin__wq_node *nd = v ? *v : NULL;
  if (prio == KIN_PRIORITY_KEEP) prio = nd ? nd->prio : KIN_PRIORITY_NORMAL;
  if (nd && nd->dirty) {
    if (prio > nd->prio) {
      int was = nd->prio;
      if (!nd->processing) ready_remove(q, nd);
      nd->prio = prio;
      if (!nd->processing && ready_push(q, nd) < 0) {
        /* cannot fail: the node's old slot was freed in a band of its own
         * or the new band has room; keep it at its old priority if not */
        nd->prio = was;
        ready_push(q, nd);
      }
    }
    goto out;
  }
  if (!nd) {
    if (!(nd = node_get(q, item, n, h))) goto oom;
    nd->prio = prio;
    if (kin__hmap_put_h(&q->items, nd->item, n, h, nd, NULL) < 0) {
      node_put(q, nd);
      goto oom;
    }
    if (ready_push(q, nd) < 0) {
      kin__hmap_del_h(&q->items, nd->item, n, h, NULL);
      node_put(q, nd);
      goto oom;
    }
    wake_getter(q);
  } else {
    /* being processed: its done queues it again, at this priority */
    nd->prio = prio;
  }
  nd->dirty = 1;
  nd->added_ns = kin_clock_now(q->clock);
  q->ndirty++;
  q->adds_total++;
  goto out;
oom:
  kin_log(KIN_LOG_ERROR, "workqueue", "%s: out of memory, dropped add of %s",
          q->name ? q->name : "", item);
out:
  pthread_mutex_unlock(&q->mu);
}

void kin_workqueue_add(kin_workqueue *q, const char *item) {
  kin_workqueue_add_priority(q, item, KIN_PRIORITY_NORMAL);
}

int kin_workqueue_len(kin_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  int n = (int)q->ready_len;
  pthread_mutex_unlock(&q->mu);
  return n;
}

/* Moves the front item from ready to processing at now. Caller holds
 * q->mu and has checked that one is ready. */
static void take_front(kin_workqueue *q, uint64_t now, const char **item) {
  kin__wq_node *nd = ready_pop(q);
  nd->dirty = 0;
  q->ndirty--;
  nd->processing = 1;
  q->nprocessing++;
  nd->start_ns = now;
  kin__histogram_observe(&q->queue_duration, kin__wq_seconds(nd->added_ns, now));
  *item = nd->item;
}

/* Get's body. *now is a clock reading taken under the lock (0: none yet),
 * reused when nothing had to wait. Caller holds q->mu. */
static int get_locked(kin_workqueue *q, uint64_t deadline_ns, uint64_t *now, const char **item) {
  *item = NULL;
  /* an item already ready is taken at once: no wait, no wake-up */
  while (q->ready_len == 0 && !q->shutting_down) {
    q->waiters++;
    int w = kin_clock_wait(q->clock, &q->cond, &q->mu, deadline_ns);
    q->waiters--;
    *now = 0;
    if (w == KIN_ETIMEDOUT && q->ready_len == 0 && !q->shutting_down) return KIN_ETIMEDOUT;
  }
  /* Shutting down still hands out what is queued. */
  if (q->ready_len == 0) return KIN_ECLOSED;
  if (!*now) *now = kin_clock_now(q->clock);
  take_front(q, *now, item);
  return 0;
}

int kin_workqueue_get_until(kin_workqueue *q, uint64_t deadline_ns, const char **item) {
  uint64_t now = 0;
  pthread_mutex_lock(&q->mu);
  int rc = get_locked(q, deadline_ns, &now, item);
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int kin_workqueue_get(kin_workqueue *q, const char **item) {
  return kin_workqueue_get_until(q, KIN_FOREVER, item);
}

/* Done's body for item (n bytes, hash h); *now as in get_locked. item may
 * be the node's own string: it is not read after the node is released.
 * Caller holds q->mu. */
static void done_locked(kin_workqueue *q, const char *item, size_t n, uint64_t h, uint64_t *now) {
  void **v = kin__hmap_get_h(&q->items, item, n, h);
  kin__wq_node *nd = v ? *v : NULL;
  if (!nd || !nd->processing) return;
  if (!*now) *now = kin_clock_now(q->clock);
  kin__histogram_observe(&q->work_duration, kin__wq_seconds(nd->start_ns, *now));
  nd->processing = 0;
  q->nprocessing--;
  if (nd->dirty && ready_push(q, nd) < 0) {
    kin_log(KIN_LOG_ERROR, "workqueue", "%s: out of memory, dropped re-add of %s",
            q->name ? q->name : "", nd->item);
    nd->dirty = 0;
    q->ndirty--;
  } else if (nd->dirty) {
    wake_getter(q);
  }
  if (!nd->dirty) {
    kin__hmap_del_h(&q->items, nd->item, n, h, NULL);
    node_put(q, nd);
  }
  /* The drainer waits on the same cond as the getters; a signal could
   * wake a getter instead, so the last done wakes everyone. */
  if (q->nprocessing == 0 && q->drain) pthread_cond_broadcast(&q->cond);
}

/* The length and hash are taken before the lock. */
void kin_workqueue_done(kin_workqueue *q, const char *item) {
  size_t n = strlen(item);
  uint64_t h = kin__hash(item, n), now = 0;
  pthread_mutex_lock(&q->mu);
  done_locked(q, item, n, h, &now);
  pthread_mutex_unlock(&q->mu);
}

int kin_workqueue_done_get(kin_workqueue *q, const char *done, const char **item) {
  size_t n = done ? strlen(done) : 0;
  uint64_t h = done ? kin__hash(done, n) : 0, now = 0;
  pthread_mutex_lock(&q->mu);
  if (done) done_locked(q, done, n, h, &now);
  int rc = get_locked(q, KIN_FOREVER, &now, item);
  pthread_mutex_unlock(&q->mu);
  return rc;
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
  while (q->drain && q->nprocessing > 0) pthread_cond_wait(&q->cond, &q->mu);
  pthread_mutex_unlock(&q->mu);
}

int kin_workqueue_shutting_down(kin_workqueue *q) {
  pthread_mutex_lock(&q->mu);
  int s = q->shutting_down;
  pthread_mutex_unlock(&q->mu);
  return s;
}

const char *kin_workqueue_name(const kin_workqueue *q) { return q->name ? q->name : ""; }
