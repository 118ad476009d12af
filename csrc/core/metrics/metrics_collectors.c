/* metrics_collectors.c -- controller-runtime's controller and workqueue metrics and
 * client-go's REST client metrics, read from kin_controller_get_stats,
 * kin_workqueue_get_metrics and kin_client_get_metrics at scrape time.
 * Names, help texts, labels and buckets are controller-runtime's
 * (pkg/internal/controller/metrics, pkg/metrics/workqueue.go) and
 * component-base's (client-go tools/metrics adapters). */
#include "metrics_collectors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "indexer.h"
#include "kin.h"
#include "reflector.h"
#include "shared_informer.h"

static const double wq_bounds[KIN_WQ_HIST_BUCKETS] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                                      1e-2, 1e-1, 1e0,  1e1,  1e2,  1e3};

static void collect_controller(void *ud, kin_metrics_sink *s) {
  kin_controller *c = ud;
  const char *name = kin_controller_name(c);
  kin_controller_stats st;
  kin_controller_get_stats(c, &st);
  static const char *const cl[] = {"controller"};
  static const char *const crl[] = {"controller", "result"};
  const char *cv[] = {name};
  static const char *const results[] = {"error", "requeue", "requeue_after", "success"};
  const uint64_t counts[] = {st.reconcile_errors, st.reconcile_requeue, st.reconcile_requeue_after,
                             st.reconcile_success};
  for (int i = 0; i < 4; i++) {
    const char *v[] = {name, results[i]};
    kin_metrics_emit(s, "controller_runtime_reconcile_total",
                     "Total number of reconciliations per controller", KIN_METRIC_COUNTER, crl, v,
                     2, (double)counts[i]);
  }
  kin_metrics_emit(s, "controller_runtime_reconcile_errors_total",
                   "Total number of reconciliation errors per controller", KIN_METRIC_COUNTER, cl,
                   cv, 1, (double)st.reconcile_errors);
  kin_metrics_emit(s, "controller_runtime_terminal_reconcile_errors_total",
                   "Total number of terminal reconciliation errors per controller",
                   KIN_METRIC_COUNTER, cl, cv, 1, (double)st.terminal_reconcile_errors);
  kin_metrics_emit(s, "controller_runtime_reconcile_panics_total",
                   "Total number of reconciliation panics per controller", KIN_METRIC_COUNTER, cl,
                   cv, 1, (double)st.reconcile_panics);
  kin_metrics_emit_histogram(s, "controller_runtime_reconcile_time_seconds",
                             "Length of time per reconciliation per controller", cl, cv, 1,
                             kin_controller_reconcile_time_bounds, st.reconcile_time_buckets,
                             KIN_CONTROLLER_RECONCILE_TIME_BUCKETS, st.reconcile_time_count,
                             st.reconcile_time_sum_seconds);
  kin_metrics_emit(s, "controller_runtime_max_concurrent_reconciles",
                   "Maximum number of concurrent reconciles per controller", KIN_METRIC_GAUGE, cl,
                   cv, 1, st.max_concurrent_reconciles);
  kin_metrics_emit(s, "controller_runtime_active_workers",
                   "Number of currently used workers per controller", KIN_METRIC_GAUGE, cl, cv, 1,
                   st.active_workers);

  kin_workqueue *q = kin_controller_queue(c);
  if (!q) return;
  kin_workqueue_metrics m;
  kin_workqueue_get_metrics(q, &m);
  const char *qname = kin_workqueue_name(q);
  static const char *const wl[] = {"controller", "name"};
  const char *wv[] = {name, qname ? qname : name};
  kin_metrics_emit(s, "workqueue_depth", "Current depth of workqueue", KIN_METRIC_GAUGE, wl, wv, 2,
                   (double)m.depth);
  /* controller-runtime's priority queue labels its depth by priority; the
   * series above stay as they are, so the split is a family of its own */
  static const char *const pl[] = {"controller", "name", "priority"};
  for (int i = 0; i < m.nprio; i++) {
    char pr[16];
    snprintf(pr, sizeof pr, "%d", m.prio[i].priority);
    const char *pv[] = {name, qname ? qname : name, pr};
    kin_metrics_emit(s, "workqueue_depth_by_priority",
                     "Items of workqueue waiting to be handed out, by priority", KIN_METRIC_GAUGE,
                     pl, pv, 3, (double)m.prio[i].depth);
  }
  kin_metrics_emit(s, "workqueue_adds_total", "Total number of adds handled by workqueue",
                   KIN_METRIC_COUNTER, wl, wv, 2, (double)m.adds_total);
  kin_metrics_emit(s, "workqueue_retries_total", "Total number of retries handled by workqueue",
                   KIN_METRIC_COUNTER, wl, wv, 2, (double)m.retries_total);
  kin_metrics_emit_histogram(s, "workqueue_queue_duration_seconds",
                             "How long in seconds an item stays in workqueue before being "
                             "requested",
                             wl, wv, 2, wq_bounds, m.queue_duration.buckets, KIN_WQ_HIST_BUCKETS,
                             m.queue_duration.count, m.queue_duration.sum_seconds);
  kin_metrics_emit_histogram(s, "workqueue_work_duration_seconds",
                             "How long in seconds processing an item from workqueue takes.", wl,
                             wv, 2, wq_bounds, m.work_duration.buckets, KIN_WQ_HIST_BUCKETS,
                             m.work_duration.count, m.work_duration.sum_seconds);
  kin_metrics_emit(s, "workqueue_unfinished_work_seconds",
                   "How many seconds of work has been done that is in progress and hasn't been "
                   "observed by work_duration. Large values indicate stuck threads. One can "
                   "deduce the number of stuck threads by observing the rate at which this "
                   "increases.",
                   KIN_METRIC_GAUGE, wl, wv, 2, m.unfinished_work_seconds);
  kin_metrics_emit(s, "workqueue_longest_running_processor_seconds",
                   "How many seconds has the longest running processor for workqueue been "
                   "running.",
                   KIN_METRIC_GAUGE, wl, wv, 2, m.longest_running_processor_seconds);
}

static void collect_rest_client(void *ud, kin_metrics_sink *s) {
  kin_rest_metrics *m = malloc(sizeof *m); /* 3 KB: not on the scraping thread's stack */
  if (!m) return;
  kin_client_get_metrics(ud, m);
  static const char *const rl[] = {"code", "host", "method"};
  for (int i = 0; i < m->ncounts; i++) {
    char code[16];
    if (m->counts[i].code) snprintf(code, sizeof code, "%d", m->counts[i].code);
    else snprintf(code, sizeof code, "<error>");
    const char *v[] = {code, m->host, m->counts[i].method};
    kin_metrics_emit(s, "rest_client_requests_total",
                     "Number of HTTP requests, partitioned by status code, method, and host.",
                     KIN_METRIC_COUNTER, rl, v, 3, (double)m->counts[i].count);
  }
  static const char *const dl[] = {"host", "verb"};
  for (int i = 0; i < m->ndurations; i++) {
    const kin_rest_duration *d = &m->durations[i];
    const char *v[] = {m->host, d->verb};
    kin_metrics_emit_histogram(s, "rest_client_request_duration_seconds",
                               "Request latency in seconds. Broken down by verb, and host.", dl,
                               v, 2, kin_rest_duration_bounds, d->buckets,
                               KIN_REST_DURATION_BUCKETS, d->count, d->sum_seconds);
  }
  free(m);
}

int kin_metrics_add_controller(kin_metrics_registry *r, kin_controller *c) {
  if (!r || !c) return KIN_EINVAL;
  return kin_metrics_add_collector(r, collect_controller, c, NULL);
}

int kin_metrics_add_rest_client(kin_metrics_registry *r, kin_client *c) {
  if (!r || !c) return KIN_EINVAL;
  return kin_metrics_add_collector(r, collect_rest_client, c, NULL);
}

typedef struct {
  kin_informer_factory *f;
  kin_informer *inf;
  char name[];
} informer_ud;

static void collect_informer(void *ud, kin_metrics_sink *s) {
  informer_ud *u = ud;
  static const char *const il[] = {"informer"};
  const char *iv[] = {u->name};
  kin_metrics_emit(s, "kinformer_informer_objects", "Objects in the informer's cache",
                   KIN_METRIC_GAUGE, il, iv, 1,
                   (double)kin_indexer_len(kin_informer_indexer(u->inf)));
  kin_metrics_emit(s, "kinformer_informer_synced",
                   "1 once the informer's cache has synced (its first list completed)",
                   KIN_METRIC_GAUGE, il, iv, 1, kin_informer_has_synced(u->inf) ? 1 : 0);
  kin_reflector *r = kin_informer_factory_reflector(u->f, u->inf);
  if (!r) return;
  kin_reflector_stats st;
  kin_reflector_get_stats(r, &st);
  struct {
    const char *name, *help;
    uint64_t v;
  } c[] = {
      {"kinformer_reflector_lists_total", "LIST rounds of the informer's reflector (the first and "
                                          "every relist)", st.lists},
      {"kinformer_reflector_relists_total", "LIST rounds after the first", st.lists ? st.lists - 1 : 0},
      {"kinformer_reflector_relists_expired_total",
       "Relists because the resourceVersion expired (410 Gone)", st.relists_expired},
      {"kinformer_reflector_watches_total", "WATCH requests started", st.watches},
      {"kinformer_reflector_watch_restarts_total", "WATCH requests started after the first",
       st.watches ? st.watches - 1 : 0},
      {"kinformer_reflector_events_total", "Watch events received and applied (bookmarks excluded)",
       st.watch_events},
      {"kinformer_reflector_watch_idle_timeouts_total",
       "Watches re-established because they delivered nothing for watch_idle_timeout",
       st.idle_timeouts},
      {"kinformer_reflector_decode_errors_total", "Malformed or truncated watch streams",
       st.decode_errors},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    kin_metrics_emit(s, c[i].name, c[i].help, KIN_METRIC_COUNTER, il, iv, 1, (double)c[i].v);
  if (st.shard_server_filtered < 0 && !st.shard_client_dropped) return; /* not sharded */
  kin_metrics_emit(s, "kinformer_shard_server_filtered",
                   "1 when the server filtered the informer's last LIST by its shardSelector "
                   "(metadata.shardInfo), 0 when it ignored it and the client filters (every "
                   "object still sent to every replica)",
                   KIN_METRIC_GAUGE, il, iv, 1, st.shard_server_filtered > 0 ? 1 : 0);
  kin_metrics_emit(s, "kinformer_shard_client_dropped_total",
                   "Objects outside the informer's shard ranges dropped by the client-side filter",
                   KIN_METRIC_COUNTER, il, iv, 1, (double)st.shard_client_dropped);
}

int kin_metrics_add_informer(kin_metrics_registry *r, kin_informer_factory *f, kin_informer *inf,
                             const char *name) {
  if (!r || !f || !inf || !name) return KIN_EINVAL;
  size_t n = strlen(name);
  informer_ud *u = malloc(sizeof *u + n + 1);
  if (!u) return KIN_ENOMEM;
  u->f = f;
  u->inf = inf;
  memcpy(u->name, name, n + 1);
  return kin_metrics_add_collector(r, collect_informer, u, free);
}

int kin_metrics_leader_election_status(kin_metrics_registry *r, const char *lease_name,
                                       int is_leader) {
  if (!r || !lease_name) return KIN_EINVAL;
  static const char *const l[] = {"name"};
  kin_metric_opts o = {.name = "leader_election_master_status",
                       .help = KIN_LEADER_ELECTION_HELP,
                       .type = KIN_METRIC_GAUGE,
                       .labels = l,
                       .nlabels = 1};
  kin_metric *m;
  int rc = kin_metrics_register(r, &o, &m, NULL, 0);
  if (rc) return rc;
  const char *v[] = {lease_name};
  return kin_metric_set(m, v, is_leader ? 1 : 0);
}
