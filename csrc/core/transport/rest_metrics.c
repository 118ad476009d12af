/* rest_metrics.c -- client-go's rest_client_requests_total and
 * rest_client_request_duration_seconds for one client: a small table of
 * (method, code) counts and one duration histogram per verb, guarded by
 * c->metrics_mu. Recording allocates nothing. */
#include <stdio.h>
#include <string.h>

#include "rest_client_int.h"

const double kin_rest_duration_bounds[KIN_REST_DURATION_BUCKETS] = {
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};

void kin__rest_metrics_init(kin_client *c) { pthread_mutex_init(&c->metrics_mu, NULL); }

void kin__rest_metrics_destroy(kin_client *c) { pthread_mutex_destroy(&c->metrics_mu); }

void kin__rest_metrics_record(kin_client *c, const char *method, long code, uint64_t took_ns) {
  kin_rest_metrics *m = &c->metrics;
  double took = (double)took_ns / 1e9;
  pthread_mutex_lock(&c->metrics_mu);
  int i = 0;
  while (i < m->ncounts && (m->counts[i].code != (int)code || strcmp(m->counts[i].method, method)))
    i++;
  if (i == m->ncounts && i < KIN_REST_METRICS_MAX) {
    snprintf(m->counts[i].method, sizeof m->counts[i].method, "%s", method);
    m->counts[i].code = (int)code;
    m->ncounts++;
  }
  if (i < m->ncounts) m->counts[i].count++;
  int v = 0;
  while (v < m->ndurations && strcmp(m->durations[v].verb, method)) v++;
  if (v == m->ndurations && v < KIN_REST_VERBS_MAX) {
    snprintf(m->durations[v].verb, sizeof m->durations[v].verb, "%s", method);
    m->ndurations++;
  }
  if (v < m->ndurations) {
    kin_rest_duration *d = &m->durations[v];
    d->count++;
    d->sum_seconds += took;
    int b = 0;
    while (b < KIN_REST_DURATION_BUCKETS && took > kin_rest_duration_bounds[b]) b++;
    if (b < KIN_REST_DURATION_BUCKETS) d->buckets[b]++;
  }
  pthread_mutex_unlock(&c->metrics_mu);
}

void kin_client_get_metrics(kin_client *c, kin_rest_metrics *m) {
  pthread_mutex_lock(&c->metrics_mu);
  *m = c->metrics;
  pthread_mutex_unlock(&c->metrics_mu);
  for (int v = 0; v < m->ndurations; v++)
    for (int b = 1; b < KIN_REST_DURATION_BUCKETS; b++)
      m->durations[v].buckets[b] += m->durations[v].buckets[b - 1];
  /* client-go's label is the URL's host: "https://h:6443/x" -> "h:6443" */
  const char *h = strstr(c->host, "://");
  h = h ? h + 3 : c->host;
  size_t n = strcspn(h, "/");
  snprintf(m->host, sizeof m->host, "%.*s", (int)n, h);
}
