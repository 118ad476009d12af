/* metrics_collectors.h -- collectors that expose kinformer objects'
 * statistics under controller-runtime's and client-go's metric names,
 * snapshotted at scrape time (no counter is kept twice):
 *
 *   controller: controller_runtime_reconcile_total{controller,result},
 *     controller_runtime_reconcile_errors_total{controller},
 *     controller_runtime_terminal_reconcile_errors_total{controller},
 *     controller_runtime_reconcile_panics_total{controller},
 *     controller_runtime_reconcile_time_seconds{controller} (histogram),
 *     controller_runtime_max_concurrent_reconciles{controller},
 *     controller_runtime_active_workers{controller}, and its queue's
 *     workqueue_{depth,adds_total,retries_total,queue_duration_seconds,
 *     work_duration_seconds,unfinished_work_seconds,
 *     longest_running_processor_seconds}{controller,name};
 *   REST client: rest_client_requests_total{code,host,method},
 *     rest_client_request_duration_seconds{host,verb};
 *   informer (kinformer's own, label informer = its name):
 *     kinformer_informer_objects (gauge: objects in its cache),
 *     kinformer_informer_synced (gauge, 0/1),
 *     kinformer_reflector_lists_total (LIST rounds: the first and relists),
 *     kinformer_reflector_relists_total (LIST rounds after the first),
 *     kinformer_reflector_relists_expired_total (relists after a 410),
 *     kinformer_reflector_watches_total (WATCH requests started),
 *     kinformer_reflector_watch_restarts_total (after the first),
 *     kinformer_reflector_events_total (watch events received and applied),
 *     kinformer_reflector_watch_idle_timeouts_total,
 *     kinformer_reflector_decode_errors_total.
 *
 * The object must outlive its collector: remove the collector (with
 * kin_metrics_remove_collector) before freeing it. */
#ifndef KIN_METRICS_COLLECTORS_H
#define KIN_METRICS_COLLECTORS_H

#include "controller.h"
#include "informer_factory.h"
#include "metrics.h"
#include "rest_client.h"

/* Return the collector's id (> 0), or KIN_EINVAL / KIN_ENOMEM. */
int kin_metrics_add_controller(kin_metrics_registry *r, kin_controller *c);
int kin_metrics_add_rest_client(kin_metrics_registry *r, kin_client *c);
/* client-go's leader election gauge: sets
 * leader_election_master_status{name=lease_name} to 1 (is_leader) or 0 in
 * r (registered on first use, with client-go's help; the Lua side,
 * kinformer.metrics.leader_election_status, sets the same family).
 * Returns 0, KIN_EINVAL, KIN_ENOMEM. Any thread. */
#define KIN_LEADER_ELECTION_HELP                                                              \
  "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 " \
  "indicates master. 'name' is the string used to identify the lease. Please make sure to "  \
  "group by name."
int kin_metrics_leader_election_status(kin_metrics_registry *r, const char *lease_name,
                                       int is_leader);

/* inf of factory f (its reflector is looked up at scrape time), labelled
 * name (copied). Both must outlive the collector. */
int kin_metrics_add_informer(kin_metrics_registry *r, kin_informer_factory *f, kin_informer *inf,
                             const char *name);

#endif
