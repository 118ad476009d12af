/* shard_gate.c -- the controller's view of the ranges this replica owns
 * (shard_gate.h). */
#include "shard_gate.h"
#include "call_ctx.h"
#include "hmap.h"
#include "kin.h"
#include "log.h"
#include "kobj.h"
#include "shard_selector.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
  kin_shard_gate_watch_fn fn;
  void *ud;
} watcher;

struct kin_shard_gate_prev {
  const kin_shard_selector *sel; /* NULL with all == 0: nothing */
  int all;
  int valid; /* the term they were set in was still open at the set */
};

struct kin_shard_gate {
  pthread_mutex_t wmu; /* guards watchers, nwatchers; held while they run (before mu) */
  watcher *watchers;
  size_t nwatchers;
  pthread_mutex_t mu;      /* guards sel, all, gen, changed_ns, fence, epoch, moved */
  kin_shard_selector *sel; /* NULL with all == 0: closed */
  int all;                 /* "*": everything */
  uint64_t gen, changed_ns;
  const kin_fence *fence; /* NULL: not tied to a term */
  uint64_t epoch;         /* the fence's epoch at the last set */
  kin__hmap moved;        /* keys whose object left with its range (owned keys, no values) */
  atomic_ullong dropped, skipped, requeued;
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int kin_shard_gate_new(kin_shard_gate **out) {
  kin_shard_gate *g = calloc(1, sizeof *g);
  if (!g) return KIN_ENOMEM;
  pthread_mutex_init(&g->mu, NULL);
  pthread_mutex_init(&g->wmu, NULL);
  kin__hmap_init(&g->moved);
  g->changed_ns = mono_ns();
  *out = g;
  return 0;
}

void kin_shard_gate_free(kin_shard_gate *g) {
  if (!g) return;
  kin_shard_selector_free(g->sel);
  kin__hmap_free(&g->moved);
  free(g->watchers);
  pthread_mutex_destroy(&g->wmu);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

/* 1 when every hash sel selects, old selects too (the same key). */
static int covers(const kin_shard_selector *old, const kin_shard_selector *sel) {
  if (kin_shard_selector_key(old) != kin_shard_selector_key(sel)) return 0;
  for (size_t i = 0; i < kin_shard_selector_nranges(sel); i++) {
    uint64_t pos, last;
    kin_shard_selector_range(sel, i, &pos, &last);
    for (;;) { /* step from old range to old range through [pos, last] */
      size_t j, n = kin_shard_selector_nranges(old);
      uint64_t of = 0, ol = 0;
      for (j = 0; j < n; j++) {
        kin_shard_selector_range(old, j, &of, &ol);
        if (of <= pos && pos <= ol) break;
      }
      if (j == n) return 0;
      if (ol >= last) break;
      pos = ol + 1;
    }
  }
  return 1;
}

/* 1 when a set from prev to (sel, all) may admit something prev did not. */
static int may_gain(const kin_shard_gate_prev *prev, const kin_shard_selector *sel, int all) {
  if (!sel && !all) return 0;
  if (!prev->valid) return 1;
  if (prev->all) return 0;
  return all || !prev->sel || !covers(prev->sel, sel);
}

int kin_shard_gate_set(kin_shard_gate *g, const char *selector, char *err, size_t errlen) {
  kin_shard_selector *sel = NULL;
  int all = selector && selector[0] == '*' && !selector[1];
  if (selector && !all) {
    int rc = kin_shard_selector_parse(selector, &sel, err, errlen);
    if (rc < 0) return rc;
  }
  pthread_mutex_lock(&g->wmu); /* one set's watchers at a time, in order */
  pthread_mutex_lock(&g->mu);
  kin_shard_selector *old = g->sel;
  uint64_t now_epoch = g->fence ? kin_fence_epoch(g->fence) : 0;
  /* the old ranges admitted anything only while their term stayed open */
  kin_shard_gate_prev prev = {old, g->all, !g->fence || (g->epoch && g->epoch == now_epoch)};
  g->sel = sel;
  g->all = all;
  g->gen++;
  g->changed_ns = mono_ns();
  g->epoch = now_epoch;
  pthread_mutex_unlock(&g->mu);
  if (may_gain(&prev, sel, all))
    for (size_t i = 0; i < g->nwatchers; i++) g->watchers[i].fn(g->watchers[i].ud, g, &prev);
  pthread_mutex_unlock(&g->wmu);
  kin_shard_selector_free(old);
  return 0;
}

int kin_shard_gate_watch(kin_shard_gate *g, kin_shard_gate_watch_fn fn, void *ud) {
  pthread_mutex_lock(&g->wmu);
  watcher *w = realloc(g->watchers, (g->nwatchers + 1) * sizeof *w);
  if (w) {
    g->watchers = w;
    w[g->nwatchers++] = (watcher){fn, ud};
  }
  pthread_mutex_unlock(&g->wmu);
  return w ? 0 : KIN_ENOMEM;
}

void kin_shard_gate_unwatch(kin_shard_gate *g, kin_shard_gate_watch_fn fn, void *ud) {
  pthread_mutex_lock(&g->wmu);
  for (size_t i = 0; i < g->nwatchers; i++) {
    if (g->watchers[i].fn == fn && g->watchers[i].ud == ud) {
      g->watchers[i] = g->watchers[--g->nwatchers];
      break;
    }
  }
  pthread_mutex_unlock(&g->wmu);
}

int kin_shard_gate_gained(kin_shard_gate *g, const kin_shard_gate_prev *prev, const char *uid,
                          const char *namespace_) {
  if (!kin_shard_gate_admits(g, uid, namespace_)) return 0;
  if (!prev->valid) return 1;
  return !(prev->all || (prev->sel && kin_shard_selector_matches(prev->sel, uid, namespace_)));
}

uint64_t kin_shard_gate_generation(kin_shard_gate *g, uint64_t *changed_mono_ns) {
  pthread_mutex_lock(&g->mu);
  uint64_t gen = g->gen;
  if (changed_mono_ns) *changed_mono_ns = g->changed_ns;
  pthread_mutex_unlock(&g->mu);
  return gen;
}

void kin_shard_gate_bind_fence(kin_shard_gate *g, const kin_fence *fence) {
  pthread_mutex_lock(&g->mu);
  /* the same fence again keeps the epoch of the last set (which tells
   * kin_shard_gate_set whether the ranges outlived their term) */
  if (g->fence != fence) {
    g->fence = fence;
    g->epoch = fence ? kin_fence_epoch(fence) : 0;
  }
  pthread_mutex_unlock(&g->mu);
}

int kin_shard_gate_admits(kin_shard_gate *g, const char *uid, const char *namespace_) {
  pthread_mutex_lock(&g->mu);
  int ok = g->all || (g->sel && kin_shard_selector_matches(g->sel, uid, namespace_));
  /* a term ended (or a new one began) since the ranges were set */
  if (ok && g->fence && (!g->epoch || kin_fence_epoch(g->fence) != g->epoch)) ok = 0;
  pthread_mutex_unlock(&g->mu);
  return ok;
}

#define MOVED_MAX (1u << 20)

void kin_shard_gate_moved(kin_shard_gate *g, const char *key, int moved) {
  pthread_mutex_lock(&g->mu);
  if (!moved) {
    kin__hmap_del(&g->moved, key, NULL);
  } else {
    if (kin__hmap_len(&g->moved) >= MOVED_MAX) {
      kin__hmap_free(&g->moved);
      kin__hmap_init(&g->moved);
      kin_log(KIN_LOG_WARN, "sharding",
              "shard gate: over %u keys moved away: forgetting them (a request still queued for "
              "one whose object left the cache may be reconciled once more)", MOVED_MAX);
    }
    kin__hmap_put(&g->moved, key, g, NULL); /* the value is unused: present means moved */
  }
  pthread_mutex_unlock(&g->mu);
}

int kin_shard_gate_admits_key(kin_shard_gate *g, kin_indexer *store, const char *key) {
  kin_obj *o = store ? kin_indexer_get(store, key) : NULL;
  if (!o) {
    pthread_mutex_lock(&g->mu);
    int moved = kin__hmap_get(&g->moved, key) != NULL;
    pthread_mutex_unlock(&g->mu);
    return moved ? 0 : -1;
  }
  int ok = kin_shard_gate_admits(g, kin_obj_uid(o), kin_obj_namespace(o));
  kin_obj_unref(o);
  return ok;
}

void kin_shard_gate_count(kin_shard_gate *g, int at_reconcile) {
  atomic_fetch_add_explicit(at_reconcile ? &g->skipped : &g->dropped, 1, memory_order_relaxed);
}

void kin_shard_gate_count_requeued(kin_shard_gate *g, uint64_t n) {
  atomic_fetch_add_explicit(&g->requeued, n, memory_order_relaxed);
}

void kin_shard_gate_get_stats(kin_shard_gate *g, kin_shard_gate_stats *st) {
  pthread_mutex_lock(&g->mu);
  st->generation = g->gen;
  st->open = g->all || g->sel != NULL;
  pthread_mutex_unlock(&g->mu);
  st->dropped_enqueues = atomic_load(&g->dropped);
  st->skipped_reconciles = atomic_load(&g->skipped);
  st->requeued = atomic_load(&g->requeued);
}
