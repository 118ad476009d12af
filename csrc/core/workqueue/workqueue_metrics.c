/* workqueue_metrics.c -- client-go's workqueue metrics (metrics.go): the
 * histograms are recorded by queue.c as things happen; the two gauges are
 * derived here, at snapshot time, from the start times of the items being
 * processed, as client-go's updateUnfinishedWork does on its ticker. */
#include "workqueue_int.h"

/* Upper bounds 1e-8 s * 10^i, written out so that each bound is the
 * closest double to its decimal value. */
static const double bounds[KIN_WQ_HIST_BUCKETS] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                                   1e-2, 1e-1, 1e0,  1e1,  1e2,  1e3};

void kin__histogram_observe(kin_histogram *h, double seconds) {
  h->count++;
  h->sum_seconds += seconds;
  for (int i = 0; i < KIN_WQ_HIST_BUCKETS; i++)
    if (seconds <= bounds[i]) h->buckets[i]++;
}

void kin_workqueue_get_metrics(kin_workqueue *q, kin_workqueue_metrics *m) {
  pthread_mutex_lock(&q->mu);
  uint64_t now = kin_clock_now(q->clock);
  /* Every dirty item was counted by one add and not yet by a get, which is
   * exactly client-go's depth gauge (inc on new dirty, dec on get). */
  m->depth = (int64_t)q->ndirty;
  m->adds_total = q->adds_total;
  m->retries_total = q->retries_total;
  m->queue_duration = q->queue_duration;
  m->work_duration = q->work_duration;
  double total = 0, oldest = 0;
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(&q->items, &pos))) {
    const kin__wq_node *p = e->val;
    if (!p->processing) continue;
    double age = kin__wq_seconds(p->start_ns, now);
    total += age;
    if (age > oldest) oldest = age;
  }
  m->unfinished_work_seconds = total;
  m->longest_running_processor_seconds = oldest;
  m->nprio = 0;
  for (int k = 0; q->priority && k < q->nbands; k++) {
    m->prio[m->nprio].priority = q->bands[k].prio;
    m->prio[m->nprio++].depth = (int64_t)q->bands[k].len;
  }
  pthread_mutex_unlock(&q->mu);
}
