/* informer_bench.c -- kinformer's side of `make bench-informer`: one shared
 * informer for a resource, a counting handler, and one JSON line with the
 * fields bench/reference/client-go/main.go prints, so the two programs run
 * side by side against the same server (bench/informer_bench.sh).
 *
 *   bench-informer -kubeconfig K -resource v1/configmaps [-namespace NS]
 *                  [-min-events N] [-watch D] [-timeout D] [-ready-file F]
 *                  [-keep-managed-fields] [-watch-list] [-client X]
 *                  [-content-type auto|json|protobuf] [-max-response-bytes N]
 *
 * Flags are Go's: -flag value, -flag=value or --flag; durations as Go's
 * ("60s", "1m30s", "250ms"). -client is accepted and ignored (kinformer
 * has one, dynamic, informer). -content-type sets kin_informer_opts'
 * (default auto: protobuf for built-in types). The fields:
 *   synced_ms          factory start -> the handler has had every object of
 *                      the initial list (kin_listener_has_synced)
 *   process_synced_ms  start of main -> the same moment
 *   rss_kib, hwm_kib   VmRSS / VmHWM right after sync
 *   watch_events, watch_ms
 *                      events after sync up to -min-events, and the handler
 *                      time from the first of them to the one reaching
 *                      -min-events (both 0 without such events)
 *   watch_end_unix_ms  wall clock of the one reaching -min-events, so the
 *                      driver can time from the moment it asked for them
 *   events, adds, updates, deletes, objects, rss_end_kib  at exit
 *   protocol           "list" or "watchlist" (-watch-list): how the initial
 *                      state was fetched
 *   cpu_sync_s         user+system CPU seconds of the process at sync
 *   cpu_sync_user_s, cpu_sync_sys_s, minflt_sync
 *                      its user and system parts, and the minor page faults
 *                      (first touches of fresh memory, which the kernel
 *                      clears page by page) at sync
 *   base_rss_kib       VmRSS before the factory starts (the cache's share of
 *                      rss_kib is the difference)
 *   rss_gc_kib         VmRSS after malloc_trim(0), the C counterpart of Go's
 *                      debug.FreeOSMemory (Go's program reports its RSS after
 *                      runtime.GC and debug.FreeOSMemory here); the library
 *                      itself never trims (delta_fifo.c says why)
 *   heap_live_kib      bytes in use in malloc at sync (mallinfo2: arena
 *                      uordblks + mmapped blocks), Go's HeapAlloc beside it
 *   relist_*           with -relist-ready-file F: after the watch phase the
 *                      program creates F and waits until the handler has had
 *                      every cached object once more (a relist, forced by
 *                      the driver, replays them as updates); relist_hwm_kib
 *                      is VmHWM then (the driver resets it through
 *                      /proc/PID/clear_refs before forcing the relist),
 *                      relist_rss_kib VmRSS and relist_ms the time taken
 * Exits 1 with an "error" field when not synced (or -min-events not
 * reached) within -timeout, which counts from the factory start. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "informer_factory.h"
#include "kin.h"
#include "kubeconfig.h"
#include "rest_client.h"
#include "shared_informer.h"

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* The handler's counters. The atomics are written by the listener thread
 * and read by main; mu/cond only wake main when -min-events is reached. */
typedef struct {
  atomic_llong adds, updates, deletes, total;
  atomic_llong sync_count; /* -1 until synced */
  atomic_ullong first_at, last_at; /* mono ns of the first event after sync / of min_events */
  atomic_ullong last_real_us;      /* wall clock (µs since the epoch) of min_events */
  atomic_llong min_events;         /* raised by main for the relist phase */
  pthread_mutex_t mu;
  pthread_cond_t cond;
} counter;

/* Counts one call; once synced, stamps the first event after sync and the
 * one that reaches min_events, so the watch time has no polling in it. */
static void mark(counter *c) {
  long long n = atomic_fetch_add(&c->total, 1) + 1;
  long long s = atomic_load(&c->sync_count);
  if (s >= 0 && n > s && !atomic_load(&c->first_at)) {
    unsigned long long zero = 0;
    atomic_compare_exchange_strong(&c->first_at, &zero, mono_ns());
  }
  if (n == atomic_load(&c->min_events) && !atomic_load(&c->last_at)) {
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    atomic_store(&c->last_real_us, (unsigned long long)rt.tv_sec * 1000000ull +
                                       (unsigned long long)rt.tv_nsec / 1000);
    atomic_store(&c->last_at, mono_ns());
    pthread_mutex_lock(&c->mu);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
  }
}

static int on_add(void *ud, kin_obj *obj, int initial) {
  counter *c = ud;
  atomic_fetch_add(&c->adds, 1);
  mark(c);
  return 0;
}

static int on_update(void *ud, kin_obj *old_obj, kin_obj *new_obj) {
  counter *c = ud;
  atomic_fetch_add(&c->updates, 1);
  mark(c);
  return 0;
}

static int on_delete(void *ud, kin_obj *obj) {
  counter *c = ud;
  atomic_fetch_add(&c->deletes, 1);
  mark(c);
  return 0;
}

/* A "kB" field of /proc/self/status in KiB, or 0. */
static long long proc_status(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t n = strlen(field);
  long long v = 0;
  while (fgets(line, sizeof(line), f)) {
    if (!strncmp(line, field, n) && line[n] == ':') {
      v = atoll(line + n + 1);
      break;
    }
  }
  fclose(f);
  return v;
}

/* User+system CPU seconds of this process so far; the user and system
 * parts and the minor page faults (first touches of fresh memory) go to
 * *user, *sys and *minflt when not NULL. */
static double cpu_seconds_split(double *user, double *sys, long long *minflt) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru)) return 0;
  double u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
  double k = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  if (user) *user = u;
  if (sys) *sys = k;
  if (minflt) *minflt = ru.ru_minflt;
  return u + k;
}


/* KiB in use in malloc: the arenas' allocated bytes and the mmapped blocks. */
static long long heap_live_kib(void) {
  struct mallinfo2 mi = mallinfo2();
  return (long long)((mi.uordblks + mi.hblkhd) / 1024);
}

/* Creates an empty file; 0 or -1. */
static int touch(const char *path) {
  FILE *f = fopen(path, "w");
  return f && !fclose(f) ? 0 : -1;
}

/* Parses a Go duration ("1m30s", "250ms", "60s", "0") into ns; -1 when
 * malformed. */
static long long parse_duration(const char *s) {
  if (!strcmp(s, "0")) return 0;
  long double total = 0;
  const char *p = s;
  if (!*p) return -1;
  while (*p) {
    char *end;
    errno = 0;
    long double v = strtold(p, &end);
    if (end == p || errno) return -1;
    p = end;
    static const struct {
      const char *unit;
      long double ns;
    } units[] = {{"ns", 1},       {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"ms", 1e6},
                 {"s", 1e9},      {"m", 60e9}, {"h", 3600e9}};
    size_t i, best = 0, bestlen = 0;
    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
      size_t l = strlen(units[i].unit);
      if (!strncmp(p, units[i].unit, l) && l > bestlen) best = i, bestlen = l;
    }
    if (!bestlen) return -1;
    total += v * units[best].ns;
    p += bestlen;
  }
  return (long long)total;
}

/* Writes s as a JSON string. */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

typedef struct {
  const char *resource, *namespace;
  int drop_managed;
  double synced_ms, process_synced_ms, watch_ms, watch_end_unix_ms;
  long long events_at_sync, events, adds, updates, deletes, objects, watch_events;
  long long rss_kib, hwm_kib, rss_end_kib;
  const char *protocol;
  const char *encoding; /* what the server sent: "protobuf" or "json" */
  double cpu_sync_s, cpu_sync_user_s, cpu_sync_sys_s, relist_ms;
  long long minflt_sync;
  long long base_rss_kib, rss_gc_kib, heap_live_kib, relist_hwm_kib, relist_rss_kib, relist_events;
  char error[512];
} result;

static void emit(const result *r) {
  printf("{\"client\":\"kinformer\",\"client_go_version\":\"\",\"mode\":\"dynamic\",\"resource\":");
  json_str(stdout, r->resource);
  printf(",\"namespace\":");
  json_str(stdout, r->namespace);
  printf(",\"drop_managed_fields\":%s,\"synced_ms\":%.3f,\"process_synced_ms\":%.3f,"
         "\"events_at_sync\":%lld,\"events\":%lld,\"adds\":%lld,\"updates\":%lld,"
         "\"deletes\":%lld,\"objects\":%lld,\"rss_kib\":%lld,\"hwm_kib\":%lld,"
         "\"rss_end_kib\":%lld,\"watch_events\":%lld,\"watch_ms\":%.3f",
         r->drop_managed ? "true" : "false", r->synced_ms, r->process_synced_ms,
         r->events_at_sync, r->events, r->adds, r->updates, r->deletes, r->objects, r->rss_kib,
         r->hwm_kib, r->rss_end_kib, r->watch_events, r->watch_ms);
  printf(",\"protocol\":\"%s\",\"cpu_sync_s\":%.3f,\"base_rss_kib\":%lld,\"rss_gc_kib\":%lld,"
         "\"heap_live_kib\":%lld,\"relist_hwm_kib\":%lld,\"relist_rss_kib\":%lld,"
         "\"relist_events\":%lld,\"relist_ms\":%.3f,\"watch_end_unix_ms\":%.3f",
         r->protocol, r->cpu_sync_s, r->base_rss_kib, r->rss_gc_kib, r->heap_live_kib,
         r->relist_hwm_kib, r->relist_rss_kib, r->relist_events, r->relist_ms, r->watch_end_unix_ms);
  printf(",\"cpu_sync_user_s\":%.3f,\"cpu_sync_sys_s\":%.3f,\"minflt_sync\":%lld",
         r->cpu_sync_user_s, r->cpu_sync_sys_s, r->minflt_sync);
  printf(",\"encoding\":\"%s\"", r->encoding ? r->encoding : "");
  if (r->error[0]) {
    printf(",\"error\":");
    json_str(stdout, r->error);
  }
  printf("}\n");
  fflush(stdout);
}

static void usage(FILE *f) {
  fprintf(f, "usage: bench-informer -kubeconfig K -resource [group/]version/resource\n"
             "       [-namespace NS] [-min-events N] [-watch D] [-timeout D]\n"
             "       [-ready-file F] [-keep-managed-fields] [-watch-list]\n"
             "       [-relist-ready-file F] [-content-type auto|json|protobuf]\n"
             "       [-max-response-bytes N (negative: no cap)]\n");
}

typedef struct {
  const char *kubeconfig, *resource, *namespace, *ready_file, *relist_ready_file;
  long long max_response_bytes; /* kin_client_opts' (0: the default cap) */
  long long min_events;
  long long watch_ns, timeout_ns;
  int keep_managed, watch_list;
  int content_type; /* kin_content_type */
} flags;

/* Go's flag syntax: -name value, -name=value, --name; booleans take no
 * value (or =true/=false). Returns 0, 1 for -h, or -1 after a message. */
static int parse_flags(int argc, char **argv, flags *fl) {
  const char *arg = "";
  for (int i = 1; i < argc; i++) {
    arg = argv[i];
    const char *a = arg;
    if (a[0] != '-') goto bad;
    a += a[1] == '-' ? 2 : 1;
    char name[64];
    const char *eq = strchr(a, '='), *val = NULL;
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    if (nl >= sizeof(name)) goto bad;
    memcpy(name, a, nl);
    name[nl] = 0;
    if (!strcmp(name, "h") || !strcmp(name, "help")) return 1;
    int *boolean = !strcmp(name, "keep-managed-fields") ? &fl->keep_managed
                   : !strcmp(name, "watch-list")        ? &fl->watch_list
                                                        : NULL;
    if (boolean) {
      *boolean = !eq || !strcmp(eq + 1, "true") || !strcmp(eq + 1, "1");
      continue;
    }
    if (eq)
      val = eq + 1;
    else if (i + 1 < argc)
      val = argv[++i];
    else
      goto bad;
    if (!strcmp(name, "kubeconfig"))
      fl->kubeconfig = val;
    else if (!strcmp(name, "resource"))
      fl->resource = val;
    else if (!strcmp(name, "namespace"))
      fl->namespace = val;
    else if (!strcmp(name, "ready-file"))
      fl->ready_file = val;
    else if (!strcmp(name, "relist-ready-file"))
      fl->relist_ready_file = val;
    else if (!strcmp(name, "client"))
      ; /* one informer kind here */
    else if (!strcmp(name, "max-response-bytes"))
      fl->max_response_bytes = strtoll(val, NULL, 10);
    else if (!strcmp(name, "content-type")) {
      if (!strcmp(val, "json")) fl->content_type = KIN_CONTENT_JSON;
      else if (!strcmp(val, "protobuf")) fl->content_type = KIN_CONTENT_PROTOBUF;
      else if (!strcmp(val, "auto")) fl->content_type = KIN_CONTENT_AUTO;
      else {
        fprintf(stderr, "bench-informer: -content-type wants auto, json or protobuf, not %s\n", val);
        return -1;
      }
    }
    else if (!strcmp(name, "min-events"))
      fl->min_events = atoll(val);
    else if (!strcmp(name, "watch") || !strcmp(name, "timeout")) {
      long long d = parse_duration(val);
      if (d < 0) {
        fprintf(stderr, "bench-informer: invalid duration %s for -%s\n", val, name);
        return -1;
      }
      *(!strcmp(name, "watch") ? &fl->watch_ns : &fl->timeout_ns) = d;
    } else {
      goto bad;
    }
  }
  return 0;
bad:
  fprintf(stderr, "bench-informer: bad flag %s\n", arg);
  usage(stderr);
  return -1;
}

/* Sleeps d ns. */
static void sleep_ns(uint64_t d) {
  struct timespec ts = {(time_t)(d / KIN_NSEC_PER_SEC), (long)(d % KIN_NSEC_PER_SEC)};
  while (nanosleep(&ts, &ts) && errno == EINTR) {
  }
}

/* Waits until the counter reaches min_events or the monotonic deadline;
 * returns 0 or KIN_ETIMEDOUT. */
static int wait_events(counter *c, uint64_t deadline) {
  int rc = 0;
  pthread_mutex_lock(&c->mu);
  while (atomic_load(&c->total) < atomic_load(&c->min_events)) {
    uint64_t now = mono_ns();
    if (now >= deadline) {
      rc = KIN_ETIMEDOUT;
      break;
    }
    /* The cond runs on CLOCK_MONOTONIC; wake at least every 100 ms. */
    uint64_t until = deadline - now > 100 * KIN_NSEC_PER_MSEC ? now + 100 * KIN_NSEC_PER_MSEC
                                                              : deadline;
    struct timespec ts = {(time_t)(until / KIN_NSEC_PER_SEC), (long)(until % KIN_NSEC_PER_SEC)};
    pthread_cond_timedwait(&c->cond, &c->mu, &ts);
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

int main(int argc, char **argv) {
  uint64_t process_start = mono_ns();
  flags fl = {.resource = "v1/configmaps", .namespace = "", .timeout_ns = 60 * KIN_NSEC_PER_SEC};
  fl.kubeconfig = getenv("KUBECONFIG");
  int prc = parse_flags(argc, argv, &fl);
  if (prc) {
    if (prc > 0) usage(stdout);
    return prc > 0 ? 0 : 2;
  }

  result res = {.resource = fl.resource, .namespace = fl.namespace,
                .drop_managed = !fl.keep_managed};
  res.protocol = fl.watch_list ? "watchlist" : "list";
  counter cnt = {0};
  atomic_init(&cnt.min_events, fl.min_events);
  atomic_init(&cnt.sync_count, -1);
  pthread_mutex_init(&cnt.mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&cnt.cond, &ca);
  pthread_condattr_destroy(&ca);

  kin_rest_config *cfg = NULL;
  kin_client *client = NULL;
  kin_informer_factory *factory = NULL;
  kin_informer *inf = NULL;
  kin_listener *listener = NULL;
  char err[256] = "";
  int rc;

  kin_kubeconfig_opts ko = {.path = fl.kubeconfig && *fl.kubeconfig ? fl.kubeconfig : NULL};
  if ((rc = kin_kubeconfig_load(&ko, &cfg, err, sizeof(err)))) {
    snprintf(res.error, sizeof(res.error), "kubeconfig: %s", err[0] ? err : kin_strerror(rc));
    goto out;
  }
  kin_client_opts copts = {.max_response_bytes = fl.max_response_bytes};
  if ((rc = kin_client_new(cfg, NULL, &copts, &client, err, sizeof(err)))) {
    snprintf(res.error, sizeof(res.error), "client: %s", err[0] ? err : kin_strerror(rc));
    goto out;
  }
  kin_informer_factory_config fc = {.client = client};
  if ((rc = kin_informer_factory_new(&fc, &factory))) {
    snprintf(res.error, sizeof(res.error), "factory: %s", kin_strerror(rc));
    goto out;
  }
  kin_informer_opts io = {.resource = fl.resource,
                          .namespace = fl.namespace,
                          .keep_managed_fields = fl.keep_managed,
                          .watch_list = fl.watch_list,
                          .content_type = fl.content_type};
  if ((rc = kin_informer_factory_informer(factory, &io, &inf, err, sizeof(err)))) {
    snprintf(res.error, sizeof(res.error), "informer %s: %s", fl.resource,
             err[0] ? err : kin_strerror(rc));
    goto out;
  }
  kin_event_handler h = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete,
                         .ud = &cnt};
  if ((rc = kin_informer_add_handler(inf, &h, 0, &listener))) {
    snprintf(res.error, sizeof(res.error), "add handler: %s", kin_strerror(rc));
    goto out;
  }

  res.base_rss_kib = proc_status("VmRSS");
  uint64_t t0 = mono_ns(), deadline = t0 + (uint64_t)fl.timeout_ns;
  if ((rc = kin_informer_factory_start(factory))) {
    snprintf(res.error, sizeof(res.error), "start: %s", kin_strerror(rc));
    goto out;
  }
  char unsynced[256] = "";
  rc = kin_informer_factory_wait_for_cache_sync(factory, (uint64_t)fl.timeout_ns, unsynced,
                                                sizeof(unsynced));
  /* The store has synced; the handler may still be working through the
   * initial list. There is no wait for a listener, so poll it finely. */
  while (!rc && !kin_listener_has_synced(listener)) {
    if (mono_ns() >= deadline) {
      rc = KIN_ETIMEDOUT;
      break;
    }
    sleep_ns(50 * KIN_NSEC_PER_USEC);
  }
  if (rc) {
    snprintf(res.error, sizeof(res.error), "not synced within %.0f s%s%s",
             (double)fl.timeout_ns / 1e9, unsynced[0] ? ": " : "", unsynced);
    goto fill;
  }
  uint64_t t1 = mono_ns();
  res.synced_ms = (double)(t1 - t0) / 1e6;
  res.process_synced_ms = (double)(t1 - process_start) / 1e6;
  res.events_at_sync = atomic_load(&cnt.total);
  atomic_store(&cnt.sync_count, res.events_at_sync);
  res.cpu_sync_s = cpu_seconds_split(&res.cpu_sync_user_s, &res.cpu_sync_sys_s, &res.minflt_sync);
  res.rss_kib = proc_status("VmRSS");
  res.hwm_kib = proc_status("VmHWM");
  res.heap_live_kib = heap_live_kib();
  {
    kin_reflector_stats rs = {0};
    kin_reflector *refl = kin_informer_factory_reflector(factory, inf);
    if (refl) kin_reflector_get_stats(refl, &rs);
    res.encoding = rs.content_type_used == KIN_CONTENT_PROTOBUF ? "protobuf"
                   : rs.content_type_used == KIN_CONTENT_JSON   ? "json"
                                                                : "";
  }
  malloc_trim(0);
  res.rss_gc_kib = proc_status("VmRSS");
  if (fl.ready_file) {
    if (touch(fl.ready_file)) {
      snprintf(res.error, sizeof(res.error), "cannot create %s", fl.ready_file);
      goto fill;
    }
  }

  if (fl.min_events > 0 && wait_events(&cnt, deadline)) {
    snprintf(res.error, sizeof(res.error), "%lld events within %.0f s, wanted %lld",
             (long long)atomic_load(&cnt.total), (double)fl.timeout_ns / 1e9, fl.min_events);
    goto fill;
  }
  unsigned long long fa = atomic_load(&cnt.first_at), la = atomic_load(&cnt.last_at);
  if (fl.min_events > res.events_at_sync && fa && la >= fa) {
    res.watch_events = fl.min_events - res.events_at_sync;
    res.watch_ms = (double)(la - fa) / 1e6;
    res.watch_end_unix_ms = (double)atomic_load(&cnt.last_real_us) / 1e3;
  }
  if (fl.relist_ready_file) {
    /* A relist replays every cached object to the handler as an update. */
    long long objects = (long long)kin_indexer_len(kin_informer_indexer(inf));
    long long from = atomic_load(&cnt.total);
    atomic_store(&cnt.min_events, from + objects);
    uint64_t r0 = mono_ns();
    if (touch(fl.relist_ready_file)) {
      snprintf(res.error, sizeof(res.error), "cannot create %s", fl.relist_ready_file);
      goto fill;
    }
    if (wait_events(&cnt, r0 + (uint64_t)fl.timeout_ns)) {
      snprintf(res.error, sizeof(res.error), "relist: %lld of %lld objects replayed within %.0f s",
               (long long)atomic_load(&cnt.total) - from, objects, (double)fl.timeout_ns / 1e9);
      goto fill;
    }
    res.relist_ms = (double)(mono_ns() - r0) / 1e6;
    res.relist_events = atomic_load(&cnt.total) - from;
    res.relist_hwm_kib = proc_status("VmHWM");
    res.relist_rss_kib = proc_status("VmRSS");
  }
  if (fl.watch_ns > 0) sleep_ns((uint64_t)fl.watch_ns);

fill:
  res.adds = atomic_load(&cnt.adds);
  res.updates = atomic_load(&cnt.updates);
  res.deletes = atomic_load(&cnt.deletes);
  res.events = atomic_load(&cnt.total);
  res.objects = (long long)kin_indexer_len(kin_informer_indexer(inf));
  res.rss_end_kib = proc_status("VmRSS");
out:
  /* The line goes out before the teardown, which is not measured. */
  emit(&res);
  kin_informer_factory_free(factory);
  kin_client_free(client);
  kin_rest_config_free(cfg);
  pthread_cond_destroy(&cnt.cond);
  pthread_mutex_destroy(&cnt.mu);
  return res.error[0] ? 1 : 0;
}
