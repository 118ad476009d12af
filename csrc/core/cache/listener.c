/* listener.c -- processorListener: one thread per handler set, fed by an
 * unbounded ring so that the informer thread's add never waits.
 *
 * client-go uses two goroutines and two channels (pop pumps addCh into the
 * ring, run drains nextCh into the handler); a mutex and a condition
 * variable around the ring give the same ordering with one thread. As in
 * client-go, stopping drops whatever is still queued: a stopped listener's
 * handler is not called again. */
#include "listener.h"
#include "clock.h"
#include "kin.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local kin_listener *current_listener;

kin_listener *kin__listener_current(void) { return current_listener; }

/* now + period, saturating: KIN_FOREVER as a period means "never". */
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

int kin__listener_group_init(kin__listener_group *g) {
  g->running = 0;
  int rc = kin_cond_init(&g->cond);
  if (rc < 0) return rc;
  pthread_mutex_init(&g->mu, NULL);
  return 0;
}

void kin__listener_group_destroy(kin__listener_group *g) {
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->mu);
}

static void group_enter(kin__listener_group *g) {
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  g->running++;
  pthread_mutex_unlock(&g->mu);
}

/* After this the thread touches nothing but its own listener: whoever
 * waited for the group may free everything else. */
static void group_leave(kin__listener_group *g) {
  if (!g) return;
  pthread_mutex_lock(&g->mu);
  g->running--;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->mu);
}

void kin__listener_group_wait(kin__listener_group *g) {
  kin_listener *self = current_listener;
  int own = self && self->group == g;
  pthread_mutex_lock(&g->mu);
  while (g->running > own) pthread_cond_wait(&g->cond, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

uint64_t kin__determine_resync_period(uint64_t desired, uint64_t check) {
  if (desired == 0) return 0;
  if (check == 0) {
    kin_log(KIN_LOG_WARN, "listener",
            "resync period %llu ms ignored: this informer does not resync",
            (unsigned long long)(desired / KIN_NSEC_PER_MSEC));
    return 0;
  }
  if (desired < check) {
    kin_log(KIN_LOG_WARN, "listener",
            "resync period %llu ms raised to the resync check period %llu ms",
            (unsigned long long)(desired / KIN_NSEC_PER_MSEC),
            (unsigned long long)(check / KIN_NSEC_PER_MSEC));
    return check;
  }
  return desired;
}

int kin__listener_new(const kin_event_handler *h, uint64_t requested_resync_ns,
                      uint64_t resync_ns, uint64_t now_ns, kin__upstream_synced_fn upstream,
                      void *upstream_ud, void *owner, const char *name, kin_listener **out) {
  kin_listener *l = calloc(1, sizeof(*l));
  if (!l) return KIN_ENOMEM;
  if (kin__ring_init(&l->ring, KIN_LISTENER_INITIAL_BUFFER) < 0) {
    free(l);
    return KIN_ENOMEM;
  }
  if (kin_cond_init(&l->cond) < 0) {
    kin__ring_free(&l->ring);
    free(l);
    return KIN_ENOMEM;
  }
  pthread_mutex_init(&l->mu, NULL);
  if (h) l->h = *h;
  l->name = name ? name : "";
  l->owner = owner;
  l->upstream = upstream;
  l->upstream_ud = upstream_ud;
  l->requested_resync_ns = requested_resync_ns;
  l->resync_ns = resync_ns;
  l->next_resync_ns = sat_add(now_ns, resync_ns);
  l->syncing = 1; /* client-go puts every new listener in the syncing set */
  atomic_init(&l->initial_pending, 0);
  atomic_init(&l->refs, 1);
  atomic_init(&l->stop_seen, 0);
  *out = l;
  return 0;
}

kin_listener *kin__listener_ref(kin_listener *l) {
  atomic_fetch_add(&l->refs, 1);
  return l;
}

void kin__listener_unref(kin_listener *l) {
  if (!l || atomic_fetch_sub(&l->refs, 1) != 1) return;
  /* The thread holds a reference while it runs, so a thread nobody joined
   * has returned (or is returning from its last line): reap it, or detach
   * when this is that thread. */
  if (l->thread_state == KIN__LT_RUNNING) {
    if (current_listener == l)
      pthread_detach(l->thread);
    else
      pthread_join(l->thread, NULL);
  }
  kin__ring_free(&l->ring);
  pthread_cond_destroy(&l->cond);
  pthread_mutex_destroy(&l->mu);
  free(l);
}

static const char *note_name(kin__note_type t) {
  switch (t) {
  case KIN__NOTE_ADD: return "add";
  case KIN__NOTE_UPDATE: return "update";
  case KIN__NOTE_DELETE: return "delete";
  }
  return "?";
}

/* Calls the handler for one note; returns its result. */
static int deliver(kin_listener *l, const kin__note *n) {
  const kin_event_handler *h = &l->h;
  switch (n->type) {
  case KIN__NOTE_ADD:
    return h->on_add ? h->on_add(h->ud, n->new_obj, n->is_in_initial_list) : 0;
  case KIN__NOTE_UPDATE:
    return h->on_update ? h->on_update(h->ud, n->old_obj, n->new_obj) : 0;
  case KIN__NOTE_DELETE:
    return h->on_delete ? h->on_delete(h->ud, n->old_obj) : 0;
  }
  return KIN_EINVAL;
}

static void *listener_main(void *arg) {
  kin_listener *l = arg;
  current_listener = l;
  if (l->h.on_start) {
    int rc = l->h.on_start(l->h.ud);
    if (rc != 0) {
      kin_log(KIN_LOG_ERROR, "listener", "%s: handler on_start failed (%d): listener aborted",
              l->name, rc);
      kin__note n;
      pthread_mutex_lock(&l->mu);
      l->aborted = 1;
      /* Dropped initial notes count as handled (skipped), like those
       * add drops from now on without counting them: otherwise HasSynced
       * would depend on whether they arrived before on_start failed. */
      while (kin__ring_read(&l->ring, &n)) {
        if (n.type == KIN__NOTE_ADD && n.is_in_initial_list)
          atomic_fetch_sub(&l->initial_pending, 1);
        kin__note_release(&n);
      }
      l->exited = 1;
      pthread_cond_broadcast(&l->cond);
      pthread_mutex_unlock(&l->mu);
      current_listener = NULL;
      group_leave(l->group);
      kin__listener_unref(l);
      return NULL;
    }
  }
  /* Notes are taken BATCH at a time: one lock per batch rather than two
   * per note, and the adder signals only while the thread waits. A stop
   * is still honoured between two notes (stop_seen), as before. */
  enum { BATCH = 32 };
  kin__note batch[BATCH];
  pthread_mutex_lock(&l->mu);
  for (;;) {
    while (!l->stopping && kin__ring_len(&l->ring) == 0) {
      l->waiting = 1;
      pthread_cond_wait(&l->cond, &l->mu);
      l->waiting = 0;
    }
    if (l->stopping) break;
    int nb = 0;
    while (nb < BATCH && kin__ring_read(&l->ring, &batch[nb])) nb++;
    l->inflight = nb;
    pthread_mutex_unlock(&l->mu);

    int done = 0, failed = 0;
    for (; done < nb; done++) {
      if (done > 0 && atomic_load_explicit(&l->stop_seen, memory_order_relaxed)) break;
      kin__note *n = &batch[done];
      int rc = deliver(l, n);
      if (rc != 0) {
        /* client-go recovers a panicking handler and skips the item; an
         * error return is our panic. */
        kin_obj *o = n->type == KIN__NOTE_DELETE ? n->old_obj : n->new_obj;
        kin_log(KIN_LOG_ERROR, "listener", "%s: %s handler failed for %s: %s (%d); skipped",
                l->name, note_name(n->type), o ? kin_obj_key(o) : "?", kin_strerror(rc), rc);
        failed++;
      }
      /* A failed initial add still counts as handled: the item is skipped,
       * and the handler would otherwise never report synced. */
      if (n->type == KIN__NOTE_ADD && n->is_in_initial_list)
        atomic_fetch_sub(&l->initial_pending, 1);
      kin__note_release(n);
    }
    /* stopped within the batch: the rest is dropped, as the ring's is */
    for (int i = done; i < nb; i++) kin__note_release(&batch[i]);

    uint64_t now = done ? kin_clock_now(kin_clock_real()) : 0; /* once a batch, off the lock */
    pthread_mutex_lock(&l->mu);
    l->inflight = 0;
    l->delivered += (uint64_t)done;
    if (done) l->last_delivered_ns = now;
    l->errors += (uint64_t)failed;
  }
  pthread_mutex_unlock(&l->mu);
  if (l->h.on_stop) l->h.on_stop(l->h.ud);
  pthread_mutex_lock(&l->mu);
  l->exited = 1;
  pthread_cond_broadcast(&l->cond);
  pthread_mutex_unlock(&l->mu);
  current_listener = NULL;
  group_leave(l->group);
  kin__listener_unref(l);
  return NULL;
}

int kin__listener_start(kin_listener *l) {
  pthread_mutex_lock(&l->mu);
  if (l->stopping) {
    pthread_mutex_unlock(&l->mu);
    return KIN_ECLOSED;
  }
  if (l->thread_state != KIN__LT_NONE) {
    pthread_mutex_unlock(&l->mu);
    return 0;
  }
  kin__listener_ref(l); /* the thread's */
  group_enter(l->group);
  int rc = pthread_create(&l->thread, NULL, listener_main, l);
  if (rc != 0) {
    group_leave(l->group);
    atomic_fetch_sub(&l->refs, 1);
    pthread_mutex_unlock(&l->mu);
    kin_log(KIN_LOG_ERROR, "listener", "%s: cannot start listener thread: %s", l->name,
            strerror(rc));
    return -rc;
  }
  l->thread_state = KIN__LT_RUNNING;
  pthread_mutex_unlock(&l->mu);
  return 0;
}

void kin__listener_add(kin_listener *l, const kin__note *n) {
  kin__note c = *n;
  kin_obj_ref(c.old_obj);
  kin_obj_ref(c.new_obj);
  int initial = c.type == KIN__NOTE_ADD && c.is_in_initial_list;
  pthread_mutex_lock(&l->mu);
  if (l->stopping || l->aborted) {
    pthread_mutex_unlock(&l->mu);
    kin__note_release(&c);
    return;
  }
  /* Counted before the note is visible to the thread, so the counter
   * never reads 0 while an initial note is still on its way. */
  if (initial) atomic_fetch_add(&l->initial_pending, 1);
  if (kin__ring_write(&l->ring, &c) < 0) {
    if (initial) atomic_fetch_sub(&l->initial_pending, 1);
    pthread_mutex_unlock(&l->mu);
    kin_log(KIN_LOG_ERROR, "listener", "%s: out of memory, %s notification for %s dropped",
            l->name, note_name(c.type),
            kin_obj_key(c.new_obj ? c.new_obj : c.old_obj));
    kin__note_release(&c);
    return;
  }
  /* a thread busy with earlier notes finds this one without a wake-up */
  if (l->waiting) pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->mu);
}

void kin__listener_add_n(kin_listener *l, const kin__batch_note *v, size_t n, int syncing) {
  pthread_mutex_lock(&l->mu);
  if (l->stopping || l->aborted) {
    pthread_mutex_unlock(&l->mu);
    return;
  }
  size_t added = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i].is_sync && !syncing) continue;
    kin__note c = v[i].n;
    int initial = c.type == KIN__NOTE_ADD && c.is_in_initial_list;
    kin_obj_ref(c.old_obj);
    kin_obj_ref(c.new_obj);
    /* counted before the note is visible, as in kin__listener_add */
    if (initial) atomic_fetch_add(&l->initial_pending, 1);
    if (kin__ring_write(&l->ring, &c) < 0) {
      if (initial) atomic_fetch_sub(&l->initial_pending, 1);
      kin_log(KIN_LOG_ERROR, "listener", "%s: out of memory, %s notification for %s dropped",
              l->name, note_name(c.type), kin_obj_key(c.new_obj ? c.new_obj : c.old_obj));
      kin__note_release(&c); /* no lock of ours is taken by an unref */
      continue;
    }
    added++;
  }
  /* one wake-up for the batch, and none when the thread is busy anyway */
  if (added && l->waiting) pthread_cond_signal(&l->cond);
  pthread_mutex_unlock(&l->mu);
}

void kin__listener_request_stop(kin_listener *l) {
  pthread_mutex_lock(&l->mu);
  l->stopping = 1;
  atomic_store(&l->stop_seen, 1);
  pthread_cond_broadcast(&l->cond);
  pthread_mutex_unlock(&l->mu);
}

void kin__listener_stop(kin_listener *l) {
  pthread_mutex_lock(&l->mu);
  l->stopping = 1;
  atomic_store(&l->stop_seen, 1);
  pthread_cond_broadcast(&l->cond);
  if (l->thread_state == KIN__LT_NONE) {
    l->thread_state = KIN__LT_DONE;
    l->exited = 1;
  } else if (current_listener == l) {
    /* A handler stopping its own listener: the thread exits when the
     * handler returns and releases itself. */
    if (l->thread_state == KIN__LT_RUNNING) {
      pthread_detach(l->thread);
      l->thread_state = KIN__LT_DONE;
    }
  } else {
    while (l->thread_state == KIN__LT_JOINING) pthread_cond_wait(&l->cond, &l->mu);
    if (l->thread_state == KIN__LT_RUNNING) {
      l->thread_state = KIN__LT_JOINING;
      pthread_mutex_unlock(&l->mu);
      pthread_join(l->thread, NULL);
      pthread_mutex_lock(&l->mu);
      l->thread_state = KIN__LT_DONE;
      pthread_cond_broadcast(&l->cond);
    }
    /* Detached by its own handler: wait until it is done with the
     * handler all the same, as the caller may free the handler's data. */
    while (!l->exited) pthread_cond_wait(&l->cond, &l->mu);
  }
  pthread_mutex_unlock(&l->mu);
}

int kin__listener_should_resync(kin_listener *l, uint64_t now_ns) {
  pthread_mutex_lock(&l->mu);
  int due = l->resync_ns != 0 && now_ns >= l->next_resync_ns;
  pthread_mutex_unlock(&l->mu);
  return due;
}

void kin__listener_determine_next_resync(kin_listener *l, uint64_t now_ns) {
  pthread_mutex_lock(&l->mu);
  l->next_resync_ns = sat_add(now_ns, l->resync_ns);
  pthread_mutex_unlock(&l->mu);
}

void kin__listener_set_resync_period(kin_listener *l, uint64_t resync_ns) {
  pthread_mutex_lock(&l->mu);
  l->resync_ns = resync_ns;
  pthread_mutex_unlock(&l->mu);
}

uint64_t kin__listener_requested_resync_period(kin_listener *l) {
  pthread_mutex_lock(&l->mu);
  uint64_t p = l->requested_resync_ns;
  pthread_mutex_unlock(&l->mu);
  return p;
}

uint64_t kin_listener_resync_period(kin_listener *l) {
  pthread_mutex_lock(&l->mu);
  uint64_t p = l->resync_ns;
  pthread_mutex_unlock(&l->mu);
  return p;
}

int kin_listener_has_synced(kin_listener *l) {
  /* Upstream first: it may take a lock, and the counter must not be read
   * before it (a stale 0 would be a false positive). */
  if (l->upstream && !l->upstream(l->upstream_ud)) return 0;
  return atomic_load(&l->initial_pending) <= 0;
}

void kin_listener_get_stats(kin_listener *l, kin_listener_stats *st) {
  pthread_mutex_lock(&l->mu);
  st->delivered = l->delivered;
  st->errors = l->errors;
  st->pending = kin__ring_len(&l->ring) + (uint64_t)l->inflight;
  st->buffer_cap = kin__ring_cap(&l->ring);
  st->last_delivered_ns = l->last_delivered_ns;
  pthread_mutex_unlock(&l->mu);
}
