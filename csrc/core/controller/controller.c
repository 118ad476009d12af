/* controller.c -- controller-runtime's Controller: watches, start/stop, the
 * worker threads and reconcileHandler (see controller.h); each reconcile
 * runs in its worker's slot under the watchdog (worker_slot.c) with a
 * kin_call_ctx built here. */
#include "controller.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "log.h"
#include "rest_client.h"
#include "shard_gate.h"
#include "worker_slot.h"

typedef struct {
  kin_informer *inf;
  kin_listener *listener;
  kin_enqueue_handler *handler;
} watch_entry;

typedef struct {
  kin_controller *c;
  int index;
  /* The reconcile in flight (worker_slot.h); slot.mu also guards st: the
   * worker's own lock, so that workers never contend with each other for
   * their bookkeeping (c->mu is not taken per reconcile);
   * kin_controller_inflight and kin_controller_get_stats take each
   * worker's in turn. */
  kin__wslot *slot; /* &c->slots[index] */
  /* this worker's counters (active_workers and max_concurrent_reconciles
   * unused: get_stats derives them); buckets per bucket, not cumulated */
  kin_controller_stats st;
} worker_arg;

/* The writes of the reconcile running on this thread (a write observer's
 * ud, on the worker's stack). */
#define MAX_WRITES 8
#define MAX_WRITE_ENTRIES (MAX_WRITES * (1 + KIN_HIST_DENIAL_MAX)) /* a write and its denial */
typedef struct {
  kin_hist_entry w[MAX_WRITE_ENTRIES];
  int n, kept, total; /* entries in w, writes among them, writes made */
  uint32_t seq;
} writes_log;

enum { ST_NEW, ST_STARTING, ST_RUNNING, ST_STOPPED };
/* The start handshake: workers wait for the verdict before reconciling,
 * so nothing is reconciled when another worker's on_start failed. */
enum { GO_PENDING, GO_RUN, GO_ABORT };

struct kin_controller {
  /* Immutable after kin_controller_new. */
  char *name;
  int workers;
  kin_reconcile_fn reconcile;
  int (*on_worker_start)(void *ud, int worker_index);
  void (*on_worker_stop)(void *ud, int worker_index);
  void *ud;
  kin_clock *clock;
  uint64_t cache_sync_timeout_ns;
  uint64_t timeout_ns;     /* reconcile_timeout; 0: none */
  const kin_fence *fence;  /* NULL: writes not fenced; set before start */
  kin_workqueue *queue; /* thread-safe itself */
  kin__watchdog wd;     /* its own lock; started and stopped by the owner thread */
  kin__wslot *slots;    /* one per worker (worker_arg.slot), made by new */
  int nslots;           /* slots initialised */

  pthread_mutex_t mu;  /* guards everything below but stopping */
  pthread_cond_t cond; /* the start handshake */
  int state;
  watch_entry *watches;
  size_t nwatches, capwatches;
  pthread_t *threads; /* the owner thread's: written by start, read by stop */
  worker_arg *args;   /* one per worker, made by new; their in-flight fields under mu */
  int nthreads;
  int reported;       /* workers whose on_start returned */
  int start_rc;       /* the first failing on_start's result */
  int go;             /* GO_* */
  int max_concurrent; /* the workers started (the stats' gauge) */

  atomic_int stopping;
  atomic_uint seq;      /* reconciles started, for their numbers in the history */
  kin_history *history; /* thread-safe itself; NULL when disabled */
  /* Sharding (kin_controller_set_shard_gate before start; then read
   * only): the gate is thread-safe itself, store is the For cache. */
  kin_shard_gate *gate;
  kin_indexer *gate_store;
};

/* ---- reconcileHandler --------------------------------------------------- */

const double kin_controller_reconcile_time_bounds[KIN_CONTROLLER_RECONCILE_TIME_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
    0.7,   0.8,  0.9,   1.0,  1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,  4.0, 4.5, 5,
    6,     7,    8,     9,    10,  15,  20,  25,   30,  40,  50,  60};

/* Counts a finished reconcile and marks its worker idle: one lock, the
 * worker's own. */
static void count_result(worker_arg *wa, kin_result_kind kind, int panicked, uint64_t took_ns) {
  kin_controller_stats *s = &wa->st;
  double took = (double)took_ns / 1e9;
  /* the bucket before the lock (one increment; kin_controller_get_stats
   * cumulates) */
  int b = 0;
  while (b < KIN_CONTROLLER_RECONCILE_TIME_BUCKETS && took > kin_controller_reconcile_time_bounds[b]) b++;
  pthread_mutex_lock(&wa->slot->mu);
  switch (kind) {
  case KIN_RESULT_ERROR:
  case KIN_RESULT_TERMINAL_ERROR:
    s->reconcile_errors++;
    if (kind == KIN_RESULT_TERMINAL_ERROR) s->terminal_reconcile_errors++;
    break;
  case KIN_RESULT_REQUEUE_AFTER: s->reconcile_requeue_after++; break;
  case KIN_RESULT_REQUEUE: s->reconcile_requeue++; break;
  default: s->reconcile_success++; break;
  }
  if (panicked) s->reconcile_panics++;
  s->reconcile_time_count++;
  s->reconcile_time_sum_seconds += took;
  if (b < KIN_CONTROLLER_RECONCILE_TIME_BUCKETS) s->reconcile_time_buckets[b]++;
  pthread_mutex_unlock(&wa->slot->mu);
}

int kin_controller_inflight(kin_controller *c, kin_inflight *out, int cap) {
  int n = 0;
  for (int i = 0; i < c->workers && n < cap; i++) {
    worker_arg *wa = &c->args[i];
    pthread_mutex_lock(&wa->slot->mu);
    if (wa->slot->busy) {
      out[n].worker = i;
      out[n].start_wall_ns = wa->slot->start_wall_ns;
      out[n].start_mono_ns = wa->slot->start_ns;
      memcpy(out[n].key, wa->slot->key, sizeof(out[n].key));
      n++;
    }
    pthread_mutex_unlock(&wa->slot->mu);
  }
  return n;
}

/* Splits key into req; the namespace goes to buf, or to *heap (the caller
 * frees it) when it does not fit. Returns 0 or KIN_ENOMEM. */
static int request_of(const char *key, kin_request *req, char *buf, size_t cap, char **heap) {
  const char *slash = strchr(key, '/');
  req->key = key;
  req->ns = "";
  req->name = slash ? slash + 1 : key;
  *heap = NULL;
  if (!slash) return 0;
  size_t n = (size_t)(slash - key);
  char *ns = buf;
  if (n >= cap && !(ns = *heap = malloc(n + 1))) return KIN_ENOMEM;
  memcpy(ns, key, n);
  ns[n] = 0;
  req->ns = ns;
  return 0;
}

/* kin_client_write_fn: keeps the first MAX_WRITES writes of the reconcile
 * (with an admission webhook's denial of one: kin_hist_denial), counts all
 * of them. */
static void note_write(void *ud, const char *method, const char *path, long code,
                       const char *message) {
  writes_log *wl = ud;
  if (wl->kept < MAX_WRITES) {
    wl->kept++;
    kin_hist_entry *e = &wl->w[wl->n++];
    memset(e, 0, sizeof(*e));
    e->type = KIN_HIST_WRITE;
    e->seq = wl->seq;
    e->code = code > 0 && code < 65536 ? (uint16_t)code : 0;
    size_t plen = strcspn(path, "?");
    int dry = path[plen] && strstr(path + plen, "dryRun=") != NULL;
    int n = snprintf(e->text, sizeof(e->text), "%s %.*s%s", method, (int)plen, path,
                     dry ? " (dry run)" : "");
    e->truncated = n < 0 || (size_t)n >= sizeof(e->text);
    if (message && code >= 400)
      wl->n += (int)kin_hist_denial(message, wl->seq, &wl->w[wl->n], KIN_HIST_DENIAL_MAX);
  }
  wl->total++;
}

/* Records a finished reconcile, its writes and the requeue it causes. */
static void note_reconcile(kin_controller *c, const char *item, int index, uint64_t start,
                           uint64_t took, kin_result_kind kind, const kin_result_action *act,
                           writes_log *wl) {
  kin_hist_entry e[MAX_WRITE_ENTRIES + 2];
  size_t n = 0;
  memset(&e[0], 0, sizeof(e[0]));
  e[0].type = KIN_HIST_RECONCILE;
  e[0].wall_ns = start;
  e[0].dur_ns = took;
  e[0].seq = wl->seq;
  e[0].worker = (int16_t)index;
  e[0].code = (uint16_t)wl->total;
  e[0].cause = (uint8_t)kind;
  size_t tl = strlen(act->message);
  e[0].truncated = tl >= sizeof(e[0].text);
  if (e[0].truncated) tl = sizeof(e[0].text) - 1;
  memcpy(e[0].text, act->message, tl);
  e[0].text[tl] = 0;
  n = 1;
  for (int i = 0; i < wl->n; i++) e[n++] = wl->w[i];
  if (kind != KIN_RESULT_DONE && kind != KIN_RESULT_TERMINAL_ERROR) {
    kin_hist_entry *q = &e[n++];
    memset(q, 0, sizeof(*q));
    q->type = KIN_HIST_EVENT;
    q->seq = wl->seq;
    q->cause = kind == KIN_RESULT_REQUEUE         ? KIN_CAUSE_REQUEUE
               : kind == KIN_RESULT_REQUEUE_AFTER ? KIN_CAUSE_REQUEUE_AFTER
                                                  : KIN_CAUSE_RETRY;
    if (kind == KIN_RESULT_REQUEUE_AFTER) q->dur_ns = act->requeue_after_ns;
    if (kind == KIN_RESULT_ERROR) {
      int m = snprintf(q->text, sizeof(q->text), "%s", act->message[0] ? act->message : "error");
      q->truncated = m < 0 || (size_t)m >= sizeof(q->text);
    }
  }
  kin_history_record_n(c->history, item, e, n);
}

/* A reconcile cut at its deadline or by a shutdown (why) becomes a logged,
 * counted, rate-limited retry: *act says so, and the return is 0 (not a
 * panic). fired: the watchdog fired the slot's canceler; took_ns: real
 * time the reconcile ran. Returns rc unchanged when it was not cut. */
static int interruption(kin_controller *c, worker_arg *wa, const char *item, int rc, int fired,
                        uint64_t took_ns, kin_result_action *act) {
  int why = act->interrupted;
  /* a REST call cut at the deadline surfaces as an error the reconciler
   * returned; a terminal error stays terminal */
  int failed = rc != 0 || act->kind == KIN_RESULT_ERROR;
  if (!why && failed && fired && atomic_load(&wa->slot->abort)) why = KIN_INTERRUPT_SHUTDOWN;
  if (!why && failed && fired && atomic_load(&wa->slot->deposed)) why = KIN_INTERRUPT_LEADERSHIP;
  if (!why && failed && c->timeout_ns && took_ns >= c->timeout_ns) why = KIN_INTERRUPT_DEADLINE;
  if (!why) return rc;
  double took = (double)took_ns / 1e9;
  const char *where = act->interrupted ? act->where : " (in a REST call)";
  pthread_mutex_lock(&wa->slot->mu);
  if (why == KIN_INTERRUPT_DEADLINE) wa->st.reconcile_timeouts++;
  else wa->st.reconcile_interrupts++;
  pthread_mutex_unlock(&wa->slot->mu);
  if (why == KIN_INTERRUPT_LEADERSHIP) {
    kin_log(KIN_LOG_WARN, "controller",
            "controller \"%s\": reconcile of \"%s\" interrupted: leadership lost (ran %.3fs)%s",
            c->name, item, took, where);
    snprintf(act->message, sizeof(act->message), "reconcile interrupted: leadership lost");
  } else if (why == KIN_INTERRUPT_SHUTDOWN) {
    kin_log(KIN_LOG_WARN, "controller",
            "controller \"%s\": reconcile of \"%s\" still running when shutdown_timeout passed "
            "(ran %.3fs); interrupted%s",
            c->name, item, took, where);
    snprintf(act->message, sizeof(act->message), "reconcile interrupted: shutting down");
  } else {
    kin_log(KIN_LOG_ERROR, "controller",
            "controller \"%s\": reconcile of \"%s\" exceeded reconcile_timeout %gs (ran "
            "%.3fs); interrupted%s",
            c->name, item, (double)c->timeout_ns / 1e9, took, where);
    snprintf(act->message, sizeof(act->message), "reconcile interrupted: reconcile_timeout %gs",
             (double)c->timeout_ns / 1e9);
  }
  act->kind = KIN_RESULT_ERROR;
  act->logged = 1;
  return 0;
}

/* Notes in key's history that its shard moved (text says which way). */
static void note_handover(kin_controller *c, const char *key, const char *text) {
  if (!c->history) return;
  kin_hist_entry e;
  memset(&e, 0, sizeof(e));
  e.type = KIN_HIST_EVENT;
  e.cause = KIN_CAUSE_HANDOVER;
  snprintf(e.text, sizeof(e.text), "%s", text);
  kin_history_record(c->history, key, &e);
}

/* 1 when item's range moved to another replica since it was enqueued:
 * the request is forgotten here (and noted in the history) instead of
 * reconciled. A key whose object the For cache no longer holds was
 * admitted by its uid when it was enqueued and is reconciled. */
static int moved_away(kin_controller *c, const char *item) {
  if (!c->gate || kin_shard_gate_admits_key(c->gate, c->gate_store, item) != 0) return 0;
  kin_shard_gate_count(c->gate, 1);
  kin_shard_gate_moved(c->gate, item, 0); /* its request is done with */
  kin_workqueue_forget(c->queue, item);
  note_handover(c, item, "not reconciled: its shard moved to another replica");
  return 1;
}

static void reconcile_handler(kin_controller *c, int index, const char *item) {
  if (moved_away(c, item)) return;
  char nsbuf[256], *heap;
  kin_request req;
  kin_result_action act = {.kind = KIN_RESULT_DONE};
  writes_log wl;
  wl.n = wl.kept = wl.total = 0;
  wl.seq = atomic_fetch_add(&c->seq, 1) + 1;
  worker_arg *wa = &c->args[index];
  /* the epoch open now: a reconcile started while the fence is closed
   * writes nothing, one that outlives its epoch writes nothing more */
  kin_call_ctx ctx = {.fence = c->fence, .epoch = c->fence ? kin_fence_epoch(c->fence) : 0};
  if (c->history) {
    ctx.on_write = note_write;
    ctx.on_write_ud = &wl;
  }
  kin__wslot_begin(wa->slot, item, c->timeout_ns, &ctx);
  uint64_t start = wa->slot->start_wall_ns, m0 = wa->slot->start_ns; /* the worker's own */
  uint64_t t0 = kin_clock_now(c->clock);
  int rc = request_of(item, &req, nsbuf, sizeof(nsbuf), &heap);
  int panicked = 0;
  if (rc == 0) {
    rc = c->reconcile(c->ud, index, &req, &ctx, &act);
    act.where[sizeof(act.where) - 1] = 0;
    rc = interruption(c, wa, item, rc, kin__wslot_end(wa->slot), kin__mono_ns() - m0, &act);
    panicked = rc != 0;
  } else {
    kin__wslot_end(wa->slot);
  }
  uint64_t took = kin_clock_now(c->clock) - t0;
  free(heap);
  act.message[sizeof(act.message) - 1] = 0;

  kin_result_kind kind = act.kind;
  if (rc != 0 || kind > KIN_RESULT_TERMINAL_ERROR) kind = KIN_RESULT_ERROR;
  if (kind == KIN_RESULT_REQUEUE_AFTER && act.requeue_after_ns == 0) kind = KIN_RESULT_DONE;
  int prio = act.has_priority ? act.priority : KIN_PRIORITY_KEEP;
  switch (kind) {
  case KIN_RESULT_ERROR:
    kin_workqueue_add_rate_limited_priority(c->queue, item, prio);
    if (act.logged)
      ;
    else if (rc != 0 && !act.message[0])
      kin_log(KIN_LOG_ERROR, "controller", "%s: Reconciler error for %s: reconciler failed (%d)",
              c->name, item, rc);
    else
      kin_log(KIN_LOG_ERROR, "controller", "%s: Reconciler error for %s: %s", c->name, item,
              act.message[0] ? act.message : "error");
    break;
  case KIN_RESULT_TERMINAL_ERROR:
    /* controller-runtime neither requeues nor forgets: a later failure of
     * the key continues its backoff. */
    kin_log(KIN_LOG_ERROR, "controller", "%s: Reconciler error for %s (terminal): %s", c->name,
            item, act.message[0] ? act.message : "terminal error");
    break;
  case KIN_RESULT_REQUEUE_AFTER:
    kin_workqueue_forget(c->queue, item);
    kin_workqueue_add_after_priority(c->queue, item, act.requeue_after_ns, prio);
    break;
  case KIN_RESULT_REQUEUE:
    kin_workqueue_add_rate_limited_priority(c->queue, item, prio);
    break;
  default:
    kin_workqueue_forget(c->queue, item);
    break;
  }
  if (c->history) {
    if (rc != 0 && !act.message[0])
      snprintf(act.message, sizeof(act.message), "reconciler failed (%d)", rc);
    note_reconcile(c, item, index, start, took, kind, &act, &wl);
  }
  count_result(wa, kind, panicked, took);
}

/* ---- workers ------------------------------------------------------------ */

static void *worker_main(void *arg) {
  worker_arg *a = arg;
  kin_controller *c = a->c;
  int rc = c->on_worker_start ? c->on_worker_start(c->ud, a->index) : 0;
  pthread_mutex_lock(&c->mu);
  c->reported++;
  if (rc != 0 && c->start_rc == 0) c->start_rc = rc;
  pthread_cond_broadcast(&c->cond);
  while (c->go == GO_PENDING) pthread_cond_wait(&c->cond, &c->mu);
  int go = c->go;
  pthread_mutex_unlock(&c->mu);
  if (rc != 0) {
    /* on_worker_start logged the cause; this names the outcome, not an errno */
    kin_log(KIN_LOG_ERROR, "controller", "%s: worker %d failed to start: %s (%s)", c->name, a->index,
            kin_strerror(rc), kin_errname(rc));
    return NULL;
  }
  /* Done of one item and get of the next take the queue's lock once. */
  const char *prev = NULL;
  while (go == GO_RUN) {
    const char *item;
    int g = kin_workqueue_done_get(c->queue, prev, &item);
    prev = NULL; /* done: no longer ours */
    if (g == KIN_ECLOSED) break;
    if (g < 0) continue;
    /* Requests still queued when stop began are dropped, not reconciled;
     * while the fence does not hold (not leading) none is started: the
     * request waits 200 ms and is taken again (dropped by a stop). */
    if (atomic_load(&c->stopping))
      ;
    else if (c->fence && !kin_fence_holds(c->fence, kin_fence_epoch(c->fence)))
      kin_workqueue_add_after_priority(c->queue, item, 200 * 1000000ull, KIN_PRIORITY_KEEP);
    else
      reconcile_handler(c, a->index, item);
    prev = item;
  }
  if (prev) kin_workqueue_done(c->queue, prev);
  if (c->on_worker_stop) c->on_worker_stop(c->ud, a->index);
  return NULL;
}

/* Spawns the workers and waits for every on_start. Returns 0, the first
 * failing hook's result or a negative errno; on failure the workers that
 * started have been told to stop (joined by kin_controller_stop). */
static int start_workers(kin_controller *c) {
  c->threads = calloc((size_t)c->workers, sizeof(*c->threads));
  if (!c->threads) return KIN_ENOMEM;
  int rc = 0;
  for (int i = 0; i < c->workers && rc == 0; i++) {
    int err = pthread_create(&c->threads[i], NULL, worker_main, &c->args[i]);
    if (err) rc = -err;
    else c->nthreads++;
  }
  pthread_mutex_lock(&c->mu);
  while (c->reported < c->nthreads) pthread_cond_wait(&c->cond, &c->mu);
  if (rc == 0 && c->start_rc != 0) rc = c->start_rc > 0 ? KIN_ECANCELED : c->start_rc;
  c->go = rc == 0 ? GO_RUN : GO_ABORT;
  c->max_concurrent = c->workers;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->mu);
  return rc;
}

/* ---- lifecycle ---------------------------------------------------------- */

int kin_controller_new(const kin_controller_config *cfg, kin_controller **out) {
  *out = NULL;
  if (!cfg->name || !*cfg->name || !cfg->reconcile) {
    kin_rate_limiter_free(cfg->rate_limiter);
    return KIN_EINVAL;
  }
  kin_clock *clock = cfg->clock ? cfg->clock : kin_clock_real();
  kin_rate_limiter *rl =
      cfg->rate_limiter ? cfg->rate_limiter : kin_default_controller_rate_limiter_new(clock);
  kin_controller *c = calloc(1, sizeof(*c));
  if (!c || !rl || !(c->name = strdup(cfg->name))) {
    if (c) free(c->name);
    free(c);
    kin_rate_limiter_free(rl);
    return KIN_ENOMEM;
  }
  kin_workqueue_config qc = {.name = cfg->name, .clock = clock, .rate_limiter = rl,
                             .priority = !cfg->fifo};
  int rc = kin_workqueue_new(&qc, &c->queue); /* frees rl on failure */
  if (rc == 0) {
    rc = kin_mutex_init_hot(&c->mu);
    if (rc == 0 && (rc = -pthread_cond_init(&c->cond, NULL)) != 0) pthread_mutex_destroy(&c->mu);
    if (rc != 0) kin_workqueue_free(c->queue);
  }
  if (rc != 0) {
    free(c->name);
    free(c);
    return rc;
  }
  c->workers = cfg->workers > 0 ? cfg->workers : 1;
  /* made here, so kin_controller_inflight may read them at any time */
  if (!(c->args = calloc((size_t)c->workers, sizeof(*c->args)))) {
    kin_workqueue_free(c->queue);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c->name);
    free(c);
    return KIN_ENOMEM;
  }
  if (!(c->slots = calloc((size_t)c->workers, sizeof(*c->slots)))) rc = KIN_ENOMEM;
  for (int i = 0; rc == 0 && i < c->workers; i++) {
    c->args[i] = (worker_arg){.c = c, .index = i, .slot = &c->slots[i]};
    if ((rc = kin__wslot_init(&c->slots[i])) < 0) break;
    c->nslots++;
  }
  if (rc == 0)
    rc = kin__watchdog_init(&c->wd, c->name, c->slots, c->workers, cfg->busy_warning_after_ns,
                            cfg->on_interrupt, cfg->ud);
  if (rc < 0) {
    for (int i = 0; i < c->nslots; i++) kin__wslot_destroy(&c->slots[i]);
    free(c->slots);
    free(c->args);
    kin_workqueue_free(c->queue);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->mu);
    free(c->name);
    free(c);
    return rc;
  }
  c->reconcile = cfg->reconcile;
  c->timeout_ns = cfg->reconcile_timeout_ns;
  c->fence = cfg->fence;
  c->wd.fence = cfg->fence;
  c->on_worker_start = cfg->on_worker_start;
  c->on_worker_stop = cfg->on_worker_stop;
  c->ud = cfg->ud;
  c->clock = clock;
  c->cache_sync_timeout_ns =
      cfg->cache_sync_timeout_ns ? cfg->cache_sync_timeout_ns : KIN_CONTROLLER_CACHE_SYNC_TIMEOUT;
  c->max_concurrent = c->workers;
  atomic_init(&c->stopping, 0);
  atomic_init(&c->seq, 0);
  if (cfg->history_entries >= 0 &&
      kin_history_new(cfg->history_entries, cfg->history_keys, &c->history) < 0) {
    kin_controller_free(c);
    return KIN_ENOMEM;
  }
  *out = c;
  return 0;
}

static int watches_append(kin_controller *c, const watch_entry *e) {
  if (c->nwatches == c->capwatches) {
    size_t cap = c->capwatches ? c->capwatches * 2 : 4;
    watch_entry *w = realloc(c->watches, cap * sizeof(*w));
    if (!w) return KIN_ENOMEM;
    c->watches = w;
    c->capwatches = cap;
  }
  c->watches[c->nwatches++] = *e;
  return 0;
}

int kin_controller_watch(kin_controller *c, kin_informer *inf, const kin_handler_config *cfg,
                         uint64_t resync_ns, kin_listener **out) {
  if (out) *out = NULL;
  if (kin_controller_stopping(c)) {
    kin_predicate_free(cfg->predicate);
    return KIN_ECLOSED;
  }
  kin_enqueue_handler *h;
  kin_handler_config hc = *cfg;
  hc.history = c->history;
  hc.shard_gate = c->gate;
  hc.shard_store = c->gate_store;
  int rc = kin_enqueue_handler_new(c->queue, &hc, &h);
  if (rc < 0) return rc;
  kin_event_handler eh = kin_enqueue_handler_callbacks(h);
  kin_listener *l;
  if ((rc = kin_informer_add_handler(inf, &eh, resync_ns, &l)) < 0) {
    kin_enqueue_handler_free(h);
    return rc;
  }
  pthread_mutex_lock(&c->mu);
  /* A stop that ran meanwhile did not see this watch: undo it here. */
  rc = c->state == ST_STOPPED ? KIN_ECLOSED : watches_append(c, &(watch_entry){inf, l, h});
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) {
    kin_informer_remove_handler(inf, l);
    kin_enqueue_handler_free(h);
    return rc;
  }
  if (out) *out = l;
  return 0;
}

/* Waits for each distinct watched informer to sync. */
static int wait_for_caches(kin_controller *c, kin_informer **infs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++) seen = infs[k] == infs[i];
    if (seen) continue;
    int rc = kin_informer_wait_for_cache_sync(infs[i], c->cache_sync_timeout_ns);
    if (rc < 0) {
      kin_log(KIN_LOG_ERROR, "controller", "failed to wait for %s caches to sync: %s", c->name,
              kin_strerror(rc));
      return rc;
    }
  }
  return 0;
}

int kin_controller_start(kin_controller *c) {
  pthread_mutex_lock(&c->mu);
  int rc = c->state == ST_NEW ? 0 : c->state == ST_STOPPED ? KIN_ECLOSED : KIN_EBUSY;
  size_t n = c->nwatches;
  kin_informer **infs = rc == 0 && n ? malloc(n * sizeof(*infs)) : NULL;
  if (rc == 0 && n && !infs) rc = KIN_ENOMEM;
  for (size_t i = 0; infs && i < n; i++) infs[i] = c->watches[i].inf;
  if (rc == 0) c->state = ST_STARTING;
  pthread_mutex_unlock(&c->mu);
  if (rc < 0) return rc;

  rc = wait_for_caches(c, infs, n);
  free(infs);
  if (rc < 0) {
    pthread_mutex_lock(&c->mu);
    c->state = ST_NEW;
    pthread_mutex_unlock(&c->mu);
    return rc;
  }
  kin_log(KIN_LOG_INFO, "controller", "%s: starting %d workers", c->name, c->workers);
  rc = kin__watchdog_start(&c->wd);
  if (rc == 0) rc = start_workers(c);
  if (rc < 0) {
    kin_controller_stop(c);
    return rc;
  }
  pthread_mutex_lock(&c->mu);
  c->state = ST_RUNNING;
  pthread_mutex_unlock(&c->mu);
  return 0;
}

void kin_controller_stop(kin_controller *c) {
  pthread_mutex_lock(&c->mu);
  if (c->state == ST_STOPPED) {
    pthread_mutex_unlock(&c->mu);
    return;
  }
  c->state = ST_STOPPED;
  watch_entry *w = c->watches;
  size_t n = c->nwatches;
  c->watches = NULL;
  c->nwatches = c->capwatches = 0;
  pthread_mutex_unlock(&c->mu);

  atomic_store(&c->stopping, 1);
  /* No new requests first, then the queue: in-flight reconciles finish,
   * their requeues are ignored, queued requests are dropped. */
  for (size_t i = 0; i < n; i++) {
    kin_informer_remove_handler(w[i].inf, w[i].listener);
    kin_enqueue_handler_free(w[i].handler);
  }
  free(w);
  kin_workqueue_shutdown(c->queue);
  for (int i = 0; i < c->nthreads; i++) pthread_join(c->threads[i], NULL);
  c->nthreads = 0;
  kin__watchdog_stop(&c->wd);
}

void kin_controller_shutdown(kin_controller *c) {
  atomic_store(&c->stopping, 1);
  kin_workqueue_shutdown(c->queue);
}

static void on_gate_set(void *ud, kin_shard_gate *g, const kin_shard_gate_prev *prev);

void kin_controller_free(kin_controller *c) {
  if (!c) return;
  kin_controller_stop(c);
  if (c->gate) kin_shard_gate_unwatch(c->gate, on_gate_set, c); /* before the queue goes */
  kin_workqueue_free(c->queue);
  free(c->threads);
  kin__watchdog_destroy(&c->wd);
  for (int i = 0; i < c->nslots; i++) kin__wslot_destroy(&c->slots[i]);
  free(c->slots);
  free(c->args);
  pthread_cond_destroy(&c->cond);
  pthread_mutex_destroy(&c->mu);
  kin_history_free(c->history);
  free(c->name);
  free(c);
}

int kin_controller_stopping(kin_controller *c) { return atomic_load(&c->stopping); }

int kin_controller_interrupted(kin_controller *c, int worker_index) {
  kin__wslot *s = &c->slots[worker_index];
  if (atomic_load_explicit(&s->abort, memory_order_relaxed)) return KIN_INTERRUPT_SHUTDOWN;
  if (atomic_load_explicit(&s->deposed, memory_order_relaxed)) return KIN_INTERRUPT_LEADERSHIP;
  /* deadline_ns is written by this worker thread itself (kin__wslot_begin) */
  if (s->deadline_ns && kin__mono_ns() >= s->deadline_ns) return KIN_INTERRUPT_DEADLINE;
  return 0;
}

const atomic_int *kin_controller_abort_flag(kin_controller *c, int worker_index) {
  return &c->slots[worker_index].abort;
}

int kin_controller_set_fence(kin_controller *c, const kin_fence *fence) {
  pthread_mutex_lock(&c->mu);
  int rc = c->state == ST_NEW ? 0 : KIN_EBUSY;
  if (rc == 0) c->fence = c->wd.fence = fence; /* the threads start later: they see it */
  pthread_mutex_unlock(&c->mu);
  return rc;
}

typedef struct {
  kin_controller *c;
  kin_shard_gate *g;
  const kin_shard_gate_prev *prev;
  uint64_t n;
} gained_walk;

/* Enqueues one cached object whose range came to this replica. */
static int enqueue_gained(void *ud, kin_obj *o) {
  gained_walk *w = ud;
  if (!kin_shard_gate_gained(w->g, w->prev, kin_obj_uid(o), kin_obj_namespace(o))) return 0;
  const char *key = kin_obj_key(o);
  note_handover(w->c, key, "enqueued: its shard came to this replica");
  kin_workqueue_add(w->c->queue, key);
  w->n++;
  return 0;
}

/* The gate's watcher: the For cache's objects the gate admits now and
 * turned away before are enqueued, since their events while they were not
 * ours were dropped (a bucket taken back while being handed over, a new
 * term). An event racing the walk is enqueued by its handler or here. */
static void on_gate_set(void *ud, kin_shard_gate *g, const kin_shard_gate_prev *prev) {
  gained_walk w = {ud, g, prev, 0};
  kin_indexer_foreach(w.c->gate_store, enqueue_gained, &w);
  if (w.n) kin_shard_gate_count_requeued(g, w.n);
}

int kin_controller_set_shard_gate(kin_controller *c, kin_shard_gate *gate, kin_indexer *store) {
  pthread_mutex_lock(&c->mu);
  int rc = c->state != ST_NEW || c->nwatches ? KIN_EBUSY : 0;
  if (rc == 0) {
    if (c->gate) kin_shard_gate_unwatch(c->gate, on_gate_set, c);
    c->gate = gate; /* before the watcher can run */
    c->gate_store = store;
    if (gate && store && (rc = kin_shard_gate_watch(gate, on_gate_set, c)) < 0) {
      c->gate = NULL;
      c->gate_store = NULL;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}

void kin_controller_abort_after(kin_controller *c, uint64_t after_ns) {
  kin__watchdog_arm_abort(&c->wd, after_ns);
}

/* The key is built once (on the stack when it fits) for both the history
 * and the queue. */
int kin_controller_enqueue(kin_controller *c, const char *ns, const char *name) {
  if (!name || !c->history) return kin_request_add(c->queue, ns, name);
  char buf[384], *key = buf;
  size_t nl = ns ? strlen(ns) : 0, ml = strlen(name), n = nl ? nl + 1 + ml : ml;
  if (n >= sizeof(buf) && !(key = malloc(n + 1))) return KIN_ENOMEM;
  if (nl) {
    memcpy(key, ns, nl);
    key[nl] = '/';
    memcpy(key + nl + 1, name, ml + 1);
  } else {
    memcpy(key, name, ml + 1);
  }
  /* recorded first: a worker may reconcile the key at once */
  kin_hist_entry e;
  memset(&e, 0, sizeof(e));
  e.type = KIN_HIST_EVENT;
  e.cause = KIN_CAUSE_MANUAL;
  kin_history_record(c->history, key, &e);
  kin_workqueue_add(c->queue, key);
  if (key != buf) free(key);
  return 0;
}

kin_history *kin_controller_history(kin_controller *c) { return c->history; }

kin_workqueue *kin_controller_queue(kin_controller *c) { return c->queue; }
const char *kin_controller_name(const kin_controller *c) { return c->name; }

/* The sum of the workers' counters, each read under its worker's lock. */
void kin_controller_get_stats(kin_controller *c, kin_controller_stats *st) {
  memset(st, 0, sizeof(*st));
  pthread_mutex_lock(&c->mu);
  st->max_concurrent_reconciles = c->max_concurrent;
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < c->workers; i++) {
    worker_arg *wa = &c->args[i];
    pthread_mutex_lock(&wa->slot->mu);
    const kin_controller_stats *w = &wa->st;
    st->reconcile_success += w->reconcile_success;
    st->reconcile_requeue += w->reconcile_requeue;
    st->reconcile_requeue_after += w->reconcile_requeue_after;
    st->reconcile_errors += w->reconcile_errors;
    st->terminal_reconcile_errors += w->terminal_reconcile_errors;
    st->reconcile_panics += w->reconcile_panics;
    st->reconcile_timeouts += w->reconcile_timeouts;
    st->reconcile_interrupts += w->reconcile_interrupts;
    st->reconcile_time_count += w->reconcile_time_count;
    st->reconcile_time_sum_seconds += w->reconcile_time_sum_seconds;
    for (int b = 0; b < KIN_CONTROLLER_RECONCILE_TIME_BUCKETS; b++)
      st->reconcile_time_buckets[b] += w->reconcile_time_buckets[b];
    st->active_workers += wa->slot->busy;
    pthread_mutex_unlock(&wa->slot->mu);
  }
  for (int b = 1; b < KIN_CONTROLLER_RECONCILE_TIME_BUCKETS; b++)
    st->reconcile_time_buckets[b] += st->reconcile_time_buckets[b - 1];
}
