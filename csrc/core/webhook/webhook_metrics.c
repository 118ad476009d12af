/* webhook_metrics.c -- controller-runtime's webhook metrics
 * (pkg/webhook/internal/metrics, admission/metrics, conversion/metrics):
 * names, help texts, labels and buckets as there, in a
 * kin_metrics_registry. A family of the same shape registered before (by
 * another server on the same registry) is shared. */
#include <stdio.h>
#include <string.h>

#include "kin.h"
#include "webhook_int.h"

/* prometheus.ExponentialBuckets(10e-9, 10, 12), controller-runtime's
 * latency buckets: 1e-8 s to 1000 s. */
static const double latency_bounds[12] = {1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3,
                                          1e-2, 1e-1, 1e0,  1e1,  1e2,  1e3};

/* See webhook_int.h: 0 with m's families, KIN_EEXIST or KIN_ENOMEM (m
 * zeroed). */
int kin__wh_metrics_init(kin__wh_metrics *m, kin_metrics_registry *r) {
  memset(m, 0, sizeof *m);
  if (!r) return 0;
  static const char *const wl[] = {"webhook"};
  static const char *const wcl[] = {"webhook", "code"};
  const kin_metric_opts o[5] = {
      {.name = "controller_runtime_webhook_requests_total",
       .help = "Total number of admission requests by HTTP status code.",
       .type = KIN_METRIC_COUNTER, .labels = wcl, .nlabels = 2},
      {.name = "controller_runtime_webhook_latency_seconds",
       .help = "Histogram of the latency of processing admission requests",
       .type = KIN_METRIC_HISTOGRAM, .labels = wl, .nlabels = 1, .buckets = latency_bounds,
       .nbuckets = 12},
      {.name = "controller_runtime_webhook_requests_in_flight",
       .help = "Current number of admission requests being served.", .type = KIN_METRIC_GAUGE,
       .labels = wl, .nlabels = 1},
      {.name = "controller_runtime_webhook_panics_total", .help = "Total number of webhook panics",
       .type = KIN_METRIC_COUNTER},
      {.name = "controller_runtime_conversion_webhook_panics_total",
       .help = "Total number of conversion webhook panics", .type = KIN_METRIC_COUNTER},
  };
  kin_metric **out[5] = {&m->total, &m->latency, &m->in_flight, &m->panics,
                         &m->conversion_panics};
  for (int i = 0; i < 5; i++) {
    int rc = kin_metrics_register(r, &o[i], out[i], NULL, 0);
    if (rc) {
      memset(m, 0, sizeof *m);
      return rc;
    }
  }
  /* the unlabelled counters show 0 from the start, as client_golang's do */
  kin_metric_add(m->panics, NULL, 0);
  kin_metric_add(m->conversion_panics, NULL, 0);
  return 0;
}

/* The children controller-runtime makes for a new hook; nothing without
 * metrics. */
void kin__wh_metrics_hook(const kin__wh_metrics *m, const char *path) {
  if (!m->total) return;
  const char *v200[] = {path, "200"}, *v500[] = {path, "500"}, *w[] = {path};
  kin_metric_add(m->total, v200, 0);
  kin_metric_add(m->total, v500, 0);
  kin_metric_add(m->in_flight, w, 0);
}

/* Moves the hook's in-flight gauge by delta. */
void kin__wh_metrics_in_flight(const kin__wh_metrics *m, const char *path, int delta) {
  if (!m->in_flight) return;
  const char *w[] = {path};
  kin_metric_add(m->in_flight, w, delta);
}

/* Counts one answer by status code and observes its latency. */
void kin__wh_metrics_done(const kin__wh_metrics *m, const char *path, int code, double seconds) {
  if (!m->total) return;
  char c[16];
  snprintf(c, sizeof c, "%d", code);
  const char *v[] = {path, c}, *w[] = {path};
  kin_metric_add(m->total, v, 1);
  kin_metric_observe(m->latency, w, seconds < 0 ? 0 : seconds);
}

/* Counts one failed fn on the admission or the conversion counter. */
void kin__wh_metrics_panic(const kin__wh_metrics *m, kin_webhook_type type) {
  kin_metric *c = type == KIN_WEBHOOK_CONVERSION ? m->conversion_panics : m->panics;
  if (c) kin_metric_add(c, NULL, 1);
}
