/* sim_bench.c -- `make bench-sim`: how fast kinformer.sim serves.
 *   LIST of N ConfigMaps (one request, all items)
 *   watch replay: N events from the history to 1 and to 10 watchers
 *   live watch: events/s to 1 and 10 watchers while a writer thread commits
 *     (bounded by the writer: each commit deep-copies and serializes)
 * Usage: bench_sim [N]   (default 100000) */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_int.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

typedef struct {
  const char *url;
  size_t target, lines, bytes;
  double secs;
} reader;

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
  reader *r = ud;
  n *= size;
  for (size_t i = 0; i < n; i++) r->lines += p[i] == '\n';
  r->bytes += n;
  return r->target && r->lines >= r->target ? 0 : n;
}

static void *run_reader(void *ud) {
  reader *r = ud;
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, r->url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
  double t0 = now();
  curl_easy_perform(c);
  r->secs = now() - t0;
  curl_easy_cleanup(c);
  return NULL;
}

static void create_cms(kin_sim *sim, int from, int n, const char *prefix) {
  kin__sim_resource *r = kin__sim_registry_find(&sim->store, "", "v1", "configmaps");
  for (int i = from; i < from + n; i++) {
    char b[256];
    snprintf(b, sizeof(b),
             "{\"metadata\":{\"name\":\"%s-%d\",\"labels\":{\"app\":\"bench\"}},"
             "\"data\":{\"key\":\"value-%d\"}}", prefix, i, i);
    json_t *o = json_loads(b, 0, NULL);
    kin__sim_result res = {0, NULL};
    kin__sim_store_create(&sim->store, r, "default", o, 0, &res);
    json_decref(o);
    json_decref(res.body);
  }
}

typedef struct {
  kin_sim *sim;
  int n;
} writer_arg;

static void *run_writer(void *ud) {
  writer_arg *w = ud;
  static int round;
  char prefix[16];
  snprintf(prefix, sizeof(prefix), "live%d", round++);
  create_cms(w->sim, 0, w->n, prefix);
  return NULL;
}

/* nw watchers from rv (0: live, started before the writer) reading
 * `events` events each; prints one table row. */
static void fanout(kin_sim *sim, const char *label, int nw, unsigned long long rv, int events,
                   int live) {
  char url[256];
  snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=%llu",
           kin_sim_url(sim), rv);
  reader rd[10];
  pthread_t t[10];
  double t0 = now();
  for (int i = 0; i < nw; i++) {
    rd[i] = (reader){url, (size_t)events, 0, 0, 0};
    pthread_create(&t[i], NULL, run_reader, &rd[i]);
  }
  pthread_t wt;
  writer_arg wa = {sim, events};
  if (live) pthread_create(&wt, NULL, run_writer, &wa);
  size_t total = 0;
  for (int i = 0; i < nw; i++) {
    pthread_join(t[i], NULL);
    total += rd[i].lines;
  }
  if (live) pthread_join(wt, NULL);
  double secs = now() - t0;
  printf("| %-34s | %8d | %9zu | %8.3f | %12.0f |\n", label, nw, total, secs,
         (double)total / secs / nw);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100000;
  curl_global_init(CURL_GLOBAL_ALL);
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.watch_history = (size_t)n * 3 + 100;
  cfg.controllers = "none"; /* the API server alone is measured */
  kin_sim *sim = NULL;
  if (kin_sim_start(&cfg, &sim)) {
    fprintf(stderr, "cannot start the sim\n");
    return 1;
  }
  unsigned long long rv0 = kin_sim_resource_version(sim);
  double t0 = now();
  create_cms(sim, 0, n, "cm");
  double create_s = now() - t0;
  printf("kinformer.sim benchmark, N = %d ConfigMaps, loopback HTTP/1.1\n\n", n);
  printf("| %-34s | %8s | %9s | %8s | %12s |\n", "measure", "clients", "items", "seconds",
         "per client/s");
  printf("|%s|%s|%s|%s|%s|\n", "------------------------------------", "----------",
         "-----------", "----------", "--------------");
  printf("| %-34s | %8d | %9d | %8.3f | %12.0f |\n", "create (in-process store)", 1, n, create_s,
         n / create_s);
  char url[256];
  snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/configmaps", kin_sim_url(sim));
  reader lr = {url, 0, 0, 0, 0};
  run_reader(&lr);
  printf("| %-34s | %8d | %9d | %8.3f | %12.0f |  %.1f MB\n", "LIST all (one page)", 1, n,
         lr.secs, n / lr.secs, (double)lr.bytes / 1e6);
  fanout(sim, "watch replay from history", 1, rv0, n, 0);
  fanout(sim, "watch replay from history", 10, rv0, n, 0);
  unsigned long long rv1 = kin_sim_resource_version(sim);
  fanout(sim, "live watch (writer-bound)", 1, rv1, n / 2, 1);
  unsigned long long rv2 = kin_sim_resource_version(sim);
  fanout(sim, "live watch (writer-bound)", 10, rv2, n / 2, 1);
  printf("\nlive rows are bounded by the single writer's commit rate; replay rows show\n"
         "the delivery rate of the watch path itself.\n");
  kin_sim_free(sim);
  curl_global_cleanup();
  return 0;
}
