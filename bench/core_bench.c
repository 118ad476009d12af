/* core_bench.c -- throughput of the in-memory core (make bench-core).
 *
 * Prints one table row per benchmark, then one `target:` line per row of
 * issue 16's table it measures (the in-memory stream). Each benchmark repeats its operation
 * for at least the target time (0.5 s, or 0.05 s with --quick) so the rate
 * is not dominated by timer resolution. Run from the repository root (it
 * reads spec/c/fixtures). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller.h"
#include "delta_fifo.h"
#include "indexer.h"
#include "kin.h"
#include "kobj.h"
#include "reconcile.h"
#include "watch_decoder.h"
#include "workqueue.h"

static double target_s = 0.5;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void row(const char *name, double ops, double secs, double bytes) {
  char mbs[32] = "-";
  if (bytes > 0) snprintf(mbs, sizeof(mbs), "%.1f", bytes / secs / 1e6);
  printf("| %-48s | %12.0f | %9.3f | %14.0f | %10.3f | %8s |\n", name, ops, secs, ops / secs,
         secs / ops * 1e6, mbs);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "bench: cannot open %s (run from the repository root)\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) exit(1);
  b[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void bench_parse(const char *label, const char *path) {
  size_t n;
  char *js = read_file(path, &n);
  double t0 = now_s(), t;
  long iters = 0;
  do {
    for (int i = 0; i < 1000; i++) {
      kin_obj *o;
      if (kin_obj_parse(js, n, &o) < 0) {
        fprintf(stderr, "bench: %s does not parse\n", path);
        exit(1);
      }
      kin_obj_unref(o);
    }
    iters += 1000;
    t = now_s() - t0;
  } while (t < target_s);
  char name[96];
  snprintf(name, sizeof(name), "object parse %s (%zu B)", label, n);
  row(name, (double)iters, t, (double)iters * (double)n);
  free(js);
}

#define NKEYS 10000
static char keys[NKEYS][32];

static void bench_queue_1thread(void) {
  kin_workqueue *q;
  kin_workqueue_config cfg = {.name = "bench"};
  if (kin_workqueue_new(&cfg, &q) < 0) exit(1);
  double t0 = now_s(), t;
  long ops = 0;
  do {
    for (int i = 0; i < NKEYS; i++) kin_workqueue_add(q, keys[i]);
    for (int i = 0; i < NKEYS; i++) {
      const char *it;
      kin_workqueue_get(q, &it);
      kin_workqueue_done(q, it);
    }
    ops += NKEYS;
    t = now_s() - t0;
  } while (t < target_s);
  row("workqueue add+get+done, 1 thread", (double)ops, t, 0);
  kin_workqueue_free(q);
}

typedef struct {
  kin_workqueue *q;
  long n;
} prod_arg;

static void *producer(void *p) {
  prod_arg *a = p;
  for (long i = 0; i < a->n; i++) kin_workqueue_add(a->q, keys[i % NKEYS]);
  kin_workqueue_shutdown_with_drain(a->q);
  return NULL;
}

static long collapsed;

static void bench_queue_2threads(void) {
  long n = (long)(2000000 * target_s);
  kin_workqueue *q;
  kin_workqueue_config cfg = {.name = "bench2"};
  if (kin_workqueue_new(&cfg, &q) < 0) exit(1);
  prod_arg a = {q, n};
  pthread_t th;
  double t0 = now_s();
  pthread_create(&th, NULL, producer, &a);
  long got = 0;
  const char *it;
  while (kin_workqueue_get(q, &it) == 0) {
    kin_workqueue_done(q, it);
    got++;
  }
  pthread_join(th, NULL);
  double t = now_s() - t0;
  /* adds of keys already dirty collapse, so count the adds offered */
  row("workqueue add / get+done, 2 threads", (double)n, t, 0);
  collapsed = n - got;
  kin_workqueue_free(q);
}

static kin_obj **make_objects(int n, int namespaces) {
  kin_obj **v = malloc(sizeof(*v) * (size_t)n);
  char buf[512];
  for (int i = 0; i < n; i++) {
    int len = snprintf(buf, sizeof(buf),
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm-%d\","
                       "\"namespace\":\"ns-%d\",\"uid\":\"uid-%d\",\"resourceVersion\":\"%d\","
                       "\"labels\":{\"app\":\"app-%d\"}},\"data\":{\"k\":\"v\"}}",
                       i, i % namespaces, i, i + 1, i % 1000);
    if (kin_obj_parse(buf, (size_t)len, &v[i]) < 0) exit(1);
  }
  return v;
}

static int noop_process(void *ud, const char *key, const kin_deltas *d, int init) {
  (void)key; (void)init;
  *(long *)ud += (long)d->len;
  return 0;
}

static void noop_batch_end(void *ud) { (void)ud; }

/* batch: pop with kin_delta_fifo_pop_batch, one lock per batch of keys, as
 * the informer thread does; else one kin_delta_fifo_pop per key. */
static void bench_fifo(int batch) {
  int n = 100000;
  kin_obj **objs = make_objects(n, 100);
  kin_delta_fifo_config cfg = {0};
  double t0 = now_s(), t;
  long ops = 0, seen = 0;
  do {
    kin_delta_fifo *f;
    if (kin_delta_fifo_new(&cfg, &f) < 0) exit(1);
    for (int i = 0; i < n; i++) kin_delta_fifo_add(f, objs[i]);
    if (batch)
      while (kin_delta_fifo_len(f) > 0)
        kin_delta_fifo_pop_batch(f, 0, noop_process, noop_batch_end, &seen);
    else
      for (int i = 0; i < n; i++) kin_delta_fifo_pop(f, noop_process, &seen);
    kin_delta_fifo_free(f);
    ops += n;
    t = now_s() - t0;
  } while (t < target_s);
  if (seen != ops) {
    fprintf(stderr, "bench: fifo popped %ld deltas, expected %ld\n", seen, ops);
    exit(1);
  }
  row(batch ? "delta_fifo add+pop_batch (100k distinct keys)" : "delta_fifo add+pop (100k distinct keys)",
      (double)ops, t, 0);
  for (int i = 0; i < n; i++) kin_obj_unref(objs[i]);
  free(objs);
}

/* A controller whose reconcile does nothing, fed by kin_controller_enqueue
 * from a C thread (what an enqueue handler does for each event: the
 * history's record, then the queue's add), timed from the first enqueue
 * until the workers have reconciled every key: the C side of make
 * bench-lua's reconcile rows, the same loop as client-go's reference
 * (bench/reference/client-go/reconcile.go) but without Lua on either end. */
static int trivial_reconcile(void *ud, int worker, const kin_request *req,
                             const kin_call_ctx *ctx, kin_result_action *out) {
  (void)ctx;
  (void)ud; (void)worker; (void)req;
  out->kind = KIN_RESULT_DONE;
  return 0;
}

static double reconcile_rate[3]; /* by workers, of the last bench_reconcile */
static long reconcile_keys;       /* --reconcile-keys N (make bench-lua); 0: by time */

static void bench_reconcile(int workers) {
  long n = reconcile_keys > 0 ? reconcile_keys : (long)(400000 * target_s);
  kin_controller_config cfg = {.name = "bench", .workers = workers, .reconcile = trivial_reconcile};
  kin_controller *c;
  if (kin_controller_new(&cfg, &c) < 0 || kin_controller_start(c) < 0) exit(1);
  char name[32];
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "obj-%ld", i);
    if (kin_controller_enqueue(c, "bench", name) < 0) exit(1);
  }
  kin_controller_stats st;
  do {
    kin_controller_get_stats(c, &st);
    if (st.reconcile_success < (uint64_t)n) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  } while (st.reconcile_success < (uint64_t)n);
  double t = now_s() - t0;
  kin_controller_free(c);
  char label[96];
  snprintf(label, sizeof(label), "controller C enqueue+trivial reconcile, %d worker%s",
           workers, workers > 1 ? "s" : "");
  row(label, (double)n, t, 0);
  reconcile_rate[workers] = (double)n / t;
}

/* The latency of a fresh event behind a restart's backlog: 100k requests
 * of the initial list queued at KIN_PRIORITY_LOW (as the controller's
 * handlers queue them), one worker whose reconcile works ~5 us, then one
 * request at NORMAL: the time from its add until its reconcile starts.
 * With the priority queue it waits for the reconcile in progress; with
 * client-go's FIFO (fifo = 1) for the whole backlog. */
static _Atomic double fresh_started; /* when the fresh request's reconcile began */

static int busy_reconcile(void *ud, int worker, const kin_request *req, const kin_call_ctx *ctx,
                          kin_result_action *out) {
  (void)ud; (void)worker; (void)ctx;
  if (!strcmp(req->name, "fresh")) fresh_started = now_s();
  double until = now_s() + 5e-6;
  while (now_s() < until)
    ;
  out->kind = KIN_RESULT_DONE;
  return 0;
}

static double fresh_latency_ms[2]; /* [fifo] */

static void bench_fresh_latency(int fifo) {
  const long n = 100000;
  kin_controller_config cfg = {.name = "bench-fresh", .workers = 1, .reconcile = busy_reconcile,
                               .fifo = fifo};
  kin_controller *c;
  if (kin_controller_new(&cfg, &c) < 0) exit(1);
  kin_workqueue *q = kin_controller_queue(c);
  char name[32];
  for (long i = 0; i < n; i++) {
    snprintf(name, sizeof(name), "initial-%ld", i);
    if (kin_request_add_priority(q, "bench", name, KIN_PRIORITY_LOW) < 0) exit(1);
  }
  fresh_started = 0;
  if (kin_controller_start(c) < 0) exit(1);
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL); /* the worker is into the backlog */
  double t0 = now_s();
  if (kin_request_add_priority(q, "bench", "fresh", KIN_PRIORITY_NORMAL) < 0) exit(1);
  while (fresh_started == 0) {
    struct timespec w = {0, 20000};
    nanosleep(&w, NULL);
  }
  double ms = (fresh_started - t0) * 1e3;
  kin_controller_free(c);
  fresh_latency_ms[fifo] = ms;
  char label[96];
  snprintf(label, sizeof(label), "fresh event behind 100k initial (%s), ms",
           fifo ? "FIFO" : "priority queue");
  printf("| %-48s | %12d | %9.4f | %14s | %10.1f | %8s |\n", label, 1, ms / 1e3, "-", ms * 1e3,
         "-");
}

static void bench_indexer(void) {
  int n = 100000;
  kin_obj **objs = make_objects(n, 100);
  kin_indexer *s;
  if (kin_indexer_new(&s) < 0) exit(1);
  kin_indexer_add_index(s, "app", kin_index_by_label, "app", NULL);
  double t0 = now_s();
  for (int i = 0; i < n; i++) kin_indexer_add(s, objs[i]);
  double tadd = now_s() - t0;
  row("indexer add (100k objects, 2 indexes)", n, tadd, 0);

  char ns[32];
  long ops = 0, found = 0;
  double t;
  t0 = now_s();
  do {
    for (int i = 0; i < 100; i++) {
      snprintf(ns, sizeof(ns), "ns-%d", i);
      kin_obj **out;
      size_t cnt;
      kin_indexer_by_index(s, KIN_INDEX_NAMESPACE, ns, &out, &cnt);
      found += (long)cnt;
      kin_obj_list_free(out, cnt);
    }
    ops += 100;
    t = now_s() - t0;
  } while (t < target_s);
  if (found != ops * 1000) {
    fprintf(stderr, "bench: by_index found %ld, expected %ld\n", found, ops * 1000);
    exit(1);
  }
  row("indexer by_index namespace (1000 of 100k)", (double)ops, t, 0);

  ops = found = 0;
  t0 = now_s();
  do {
    for (int i = 0; i < 1000; i++) {
      snprintf(ns, sizeof(ns), "app-%d", i);
      kin_obj **out;
      size_t cnt;
      kin_indexer_by_index(s, "app", ns, &out, &cnt);
      found += (long)cnt;
      kin_obj_list_free(out, cnt);
    }
    ops += 1000;
    t = now_s() - t0;
  } while (t < target_s);
  if (found != ops * 100) {
    fprintf(stderr, "bench: by_index(app) found %ld, expected %ld\n", found, ops * 100);
    exit(1);
  }
  row("indexer by_index label (100 of 100k)", (double)ops, t, 0);

  ops = 0;
  t0 = now_s();
  do {
    for (int i = 0; i < 10000; i++) {
      kin_obj *o = kin_indexer_get(s, kin_obj_key(objs[(ops + i) % n]));
      kin_obj_unref(o);
    }
    ops += 10000;
    t = now_s() - t0;
  } while (t < target_s);
  row("indexer get by key (100k objects)", (double)ops, t, 0);

  kin_indexer_free(s);
  for (int i = 0; i < n; i++) kin_obj_unref(objs[i]);
  free(objs);
}

/* The in-memory stream: a watch body of 200-byte MODIFIED events over 10k
 * ConfigMaps, fed to the decoder in 64 KiB chunks; each event goes into a
 * DeltaFIFO and, after each chunk, every queued key is popped into an
 * indexer, all on one thread: the path of a watch event into the cache
 * without the network, the threads and the handlers. */
typedef struct {
  kin_delta_fifo *fifo;
  kin_indexer *idx;
  long events;
} stream_ctx;

static int stream_event(void *ud, const kin_watch_event *ev) {
  stream_ctx *c = ud;
  c->events++;
  return kin_delta_fifo_update(c->fifo, ev->obj) < 0 ? 1 : 0;
}

static int stream_store(void *ud, const char *key, const kin_deltas *d, int init) {
  (void)key; (void)init;
  return kin_indexer_update(ud, d->v[d->len - 1].obj);
}

static double stream_rate; /* events/s of the last bench_stream */

static void bench_stream(void) {
  enum { NOBJ = 10000, NEV = 100000, EV_BYTES = 200 };
  size_t cap = (size_t)NEV * (EV_BYTES + 1), len = 0;
  char *body = malloc(cap);
  for (int i = 0; i < NEV; i++) {
    char ev[EV_BYTES + 32];
    int n = snprintf(ev, sizeof(ev),
                     "{\"type\":\"MODIFIED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                     "\"metadata\":{\"name\":\"cm-%05d\",\"namespace\":\"default\","
                     "\"resourceVersion\":\"%d\"},\"data\":{\"k\":\"",
                     i % NOBJ, i + 1);
    while (n < EV_BYTES - 4) ev[n++] = 'v';
    memcpy(ev + n, "\"}}}\n", 5);
    n += 5;
    memcpy(body + len, ev, (size_t)n);
    len += (size_t)n;
  }
  double avg = (double)len / NEV;
  stream_ctx c = {0};
  kin_delta_fifo_config cfg = {0};
  if (kin_delta_fifo_new(&cfg, &c.fifo) < 0 || kin_indexer_new(&c.idx) < 0) exit(1);
  kin_watch_decoder *d;
  double t0 = now_s(), t;
  long ops = 0;
  do {
    if (kin_watch_decoder_new(stream_event, NULL, &c, &d) < 0) exit(1);
    for (size_t off = 0; off < len; off += 65536) {
      size_t n = len - off < 65536 ? len - off : 65536;
      if (kin_watch_decoder_feed(d, body + off, n) < 0) exit(1);
      /* as the informer thread pops: a batch of keys per lock */
      while (kin_delta_fifo_len(c.fifo) > 0)
        if (kin_delta_fifo_pop_batch(c.fifo, 0, stream_store, NULL, c.idx) < 0) exit(1);
    }
    kin_watch_decoder_free(d);
    ops += NEV;
    t = now_s() - t0;
  } while (t < target_s);
  if (c.events != ops || kin_indexer_len(c.idx) != NOBJ) {
    fprintf(stderr, "bench: stream decoded %ld events (expected %ld), cached %zu objects\n",
            c.events, ops, kin_indexer_len(c.idx));
    exit(1);
  }
  char name[96];
  snprintf(name, sizeof(name), "stream decode+fifo+indexer (%.0f B events)", avg);
  row(name, (double)ops, t, (double)len * ((double)ops / NEV));
  stream_rate = (double)ops / t;
  kin_indexer_free(c.idx);
  kin_delta_fifo_free(c.fifo);
  free(body);
}

int main(int argc, char **argv) {
  int stream_only = 0; /* --stream: only the in-memory stream (for a profiler) */
  int reconcile_only = 0; /* --reconcile: only the controller rows (for a profiler) */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) target_s = 0.05;
    if (strcmp(argv[i], "--stream") == 0) stream_only = 1;
    if (strcmp(argv[i], "--reconcile") == 0) reconcile_only = 1;
    if (strcmp(argv[i], "--reconcile-keys") == 0 && i + 1 < argc) {
      reconcile_only = 1;
      reconcile_keys = strtol(argv[++i], NULL, 10);
    }
  }
  for (int i = 0; i < NKEYS; i++) snprintf(keys[i], sizeof(keys[i]), "ns-%d/name-%d", i % 50, i);
  printf("kinformer %s core benchmarks (%s)\n\n", KIN_VERSION, target_s < 0.5 ? "quick" : "full");
  printf("| %-48s | %12s | %9s | %14s | %10s | %8s |\n", "benchmark", "ops", "seconds", "ops/s",
         "us/op", "MB/s");
  printf("|%s|%s|%s|%s|%s|%s|\n", "--------------------------------------------------",
         "--------------", "-----------", "----------------", "------------", "----------");
  if (stream_only) {
    target_s *= 10;
    bench_stream();
    return 0;
  }
  if (reconcile_only) {
    target_s *= 10;
    bench_reconcile(1);
    bench_reconcile(2);
    return 0;
  }
  bench_parse("pod.json", "spec/c/fixtures/pod.json");
  bench_parse("configmap.json", "spec/c/fixtures/configmap.json");
  bench_queue_1thread();
  bench_queue_2threads();
  bench_fifo(0);
  bench_fifo(1);
  bench_reconcile(1);
  bench_reconcile(2);
  bench_fresh_latency(0);
  bench_fresh_latency(1);
  bench_indexer();
  bench_stream();
  printf("\n2 threads: the producer offers adds of 10k keys in a loop; %ld adds found\n"
         "their key already queued and collapsed (client-go dedup), as intended.\n",
         collapsed);
  printf("\ntarget: stream_200b_events_per_s now=%.2fM goal=>=1M met=%s\n", stream_rate / 1e6,
         stream_rate >= 1e6 ? "yes" : "no");
  printf("target: fresh_event_latency_behind_100k_initial_ms now=%.2fms goal=<=10ms met=%s "
         "(FIFO: %.1f ms)\n",
         fresh_latency_ms[0], fresh_latency_ms[0] <= 10 ? "yes" : "no", fresh_latency_ms[1]);
  return 0;
}
