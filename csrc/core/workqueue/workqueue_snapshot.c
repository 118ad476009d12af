/* workqueue_snapshot.c -- a copy of what a workqueue holds, for the admin
 * endpoint (kin_workqueue_snapshot in workqueue.h): its ready items, the
 * ones being processed and the delaying part's waiting ones with their
 * due times, each with its rate limiter's requeue count. */
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "workqueue_int.h"

typedef struct {
  kin_wq_item *v;
  size_t n, cap, max;
  int oom;
} acc;

/* Grows as items come (max may be SIZE_MAX: everything). */
static void push(acc *a, const char *key, kin_wq_state st, uint64_t due, uint64_t since) {
  if (a->oom || a->n >= a->max) return;
  if (a->n == a->cap) {
    size_t cap = a->cap * 2;
    kin_wq_item *v = realloc(a->v, cap * sizeof(*v));
    if (!v) {
      a->oom = 1;
      return;
    }
    a->v = v;
    a->cap = cap;
  }
  char *k = strdup(key);
  if (!k) {
    a->oom = 1;
    return;
  }
  a->v[a->n++] = (kin_wq_item){k, st, due, since, 0};
}

/* kin__delaying_each's callback */
static void on_waiting(void *ud, const char *item, uint64_t due_in_ns) {
  push(ud, item, KIN_WQ_WAITING, due_in_ns, 0);
}

int kin_workqueue_snapshot(kin_workqueue *q, size_t max, kin_wq_item **out, size_t *n) {
  *out = NULL;
  *n = 0;
  acc a = {malloc(16 * sizeof(kin_wq_item)), 0, 16, max, 0};
  if (!a.v) return KIN_ENOMEM;
  pthread_mutex_lock(&q->mu);
  uint64_t now = kin_clock_now(q->clock);
  for (size_t i = 0; i < q->ready_len; i++)
    push(&a, kin__wq_ready_at(q, i)->item, KIN_WQ_READY, 0, 0);
  size_t pos = 0;
  for (kin__hmap_entry *e; (e = kin__hmap_next(&q->items, &pos));) {
    const kin__wq_node *p = e->val;
    if (p->processing)
      push(&a, p->item, KIN_WQ_PROCESSING, 0, now > p->start_ns ? now - p->start_ns : 0);
  }
  pthread_mutex_unlock(&q->mu);
  if (q->delaying) kin__delaying_each(q, on_waiting, &a);
  if (a.oom) {
    kin_workqueue_snapshot_free(a.v, a.n);
    return KIN_ENOMEM;
  }
  for (size_t i = 0; i < a.n; i++) a.v[i].requeues = kin_workqueue_num_requeues(q, a.v[i].key);
  *out = a.v;
  *n = a.n;
  return 0;
}

void kin_workqueue_snapshot_free(kin_wq_item *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i].key);
  free(v);
}
