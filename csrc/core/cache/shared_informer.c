/* shared_informer.c -- sharedIndexInformer: a DeltaFIFO whose knownObjects
 * is the indexer, an informer thread that pops it (HandleDeltas /
 * processDeltas), a resync thread, and the processor of listeners.
 *
 * Lock order: started_lock > (FIFO lock >) block_deltas > processor lock >
 * listener lock; the indexer's lock is taken under any of them and takes
 * nothing itself. The FIFO holds its lock while our process function runs,
 * which is what makes has_synced and the per-listener initial-list counts
 * agree: the FIFO cannot report synced before the notifications of its
 * initial list were queued to every listener. */
#include "shared_informer.h"
#include "kin.h"
#include "listener.h"
#include "log.h"
#include "processor.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { STOP_NONE = 0, STOP_RUNNING, STOP_DONE };

struct kin_informer {
  kin_clock *clock;       /* immutable */
  char *name;             /* immutable */
  kin_indexer *indexer;   /* immutable pointer; thread-safe itself */
  kin_delta_fifo *fifo;   /* immutable pointer; thread-safe itself */
  kin__processor processor;

  pthread_mutex_t started_lock; /* guards started, stopped, stop_state,
                                   resync_check_ns, default_resync_ns and
                                   the thread handles */
  pthread_cond_t stop_cond;     /* with started_lock: stop_state is DONE */
  int started, stopped, stop_state;
  uint64_t resync_check_ns, default_resync_ns;
  int informer_thread_started, resync_thread_started;
  pthread_t informer_thread, resync_thread;
  atomic_int started_flag;      /* mirror of started for lock-free reads */
  atomic_int closed;            /* mirror of stopped */

  /* Held while deltas are applied and distributed, and while a late
   * handler joins or a handler leaves, so neither sees half an update. */
  pthread_mutex_t block_deltas;

  pthread_mutex_t resync_mu;    /* guards resync_stop */
  pthread_cond_t resync_cond;   /* subscribed to the clock */
  int resync_stop;

  /* The notifications of the batch being popped (kin_delta_fifo_pop_batch):
   * handle_deltas appends, batch_end hands them to the processor at once.
   * Touched only by the informer thread inside a pop, under the FIFO lock
   * and block_deltas (held from the batch's first key to its end). */
  kin__batch_note *batch;
  size_t nbatch, capbatch;
  int in_batch;                 /* block_deltas is held for the batch */

  pthread_mutex_t sync_mu;      /* pairs with sync_cond (no state of its own) */
  pthread_cond_t sync_cond;     /* broadcast on progress, stop, clock steps */
  atomic_int synced_seen;       /* informer thread saw has_synced once */
  int reserved;                 /* informer thread's: the initial list's size was hinted */
};

/* The upstream of every listener's HasSynced is the informer itself. */
static int upstream_synced(void *ud) { return kin_informer_has_synced(ud); }

int kin_informer_new(const kin_informer_config *cfg, kin_informer **out) {
  kin_informer_config def = {0};
  if (!cfg) cfg = &def;
  kin_informer *inf = calloc(1, sizeof(*inf));
  if (!inf) return KIN_ENOMEM;
  inf->clock = cfg->clock ? cfg->clock : kin_clock_real();
  inf->name = strdup(cfg->name ? cfg->name : "informer");
  inf->default_resync_ns = cfg->default_resync_ns;
  inf->resync_check_ns = cfg->default_resync_ns;
  atomic_init(&inf->started_flag, 0);
  atomic_init(&inf->closed, 0);
  atomic_init(&inf->synced_seen, 0);
  int rc = inf->name ? 0 : KIN_ENOMEM;
  if (rc == 0) rc = kin_indexer_new(&inf->indexer);
  if (rc == 0) {
    kin_delta_fifo_config fc = {0};
    fc.known_objects = kin_indexer_key_lister(inf->indexer);
    fc.transform = cfg->transform;
    fc.transform_ud = cfg->transform_ud;
    rc = kin_delta_fifo_new(&fc, &inf->fifo);
  }
  if (rc < 0) {
    if (inf->indexer) kin_indexer_free(inf->indexer);
    free(inf->name);
    free(inf);
    return rc;
  }
  if ((rc = kin__processor_init(&inf->processor, inf->clock)) < 0 ||
      (rc = kin_cond_init(&inf->resync_cond)) < 0) {
    kin_delta_fifo_free(inf->fifo);
    kin_indexer_free(inf->indexer);
    free(inf->name);
    free(inf);
    return rc;
  }
  kin_cond_init(&inf->stop_cond);
  kin_cond_init(&inf->sync_cond);
  pthread_mutex_init(&inf->started_lock, NULL);
  pthread_mutex_init(&inf->block_deltas, NULL);
  pthread_mutex_init(&inf->resync_mu, NULL);
  pthread_mutex_init(&inf->sync_mu, NULL);
  if ((rc = kin_clock_subscribe(inf->clock, &inf->resync_cond, &inf->resync_mu)) < 0 ||
      (rc = kin_clock_subscribe(inf->clock, &inf->sync_cond, &inf->sync_mu)) < 0) {
    kin_informer_free(inf);
    return rc;
  }
  *out = inf;
  return 0;
}

void kin_informer_free(kin_informer *inf) {
  if (!inf) return;
  kin_informer_stop(inf);
  kin__processor_destroy(&inf->processor);
  kin_clock_unsubscribe(inf->clock, &inf->resync_cond);
  kin_clock_unsubscribe(inf->clock, &inf->sync_cond);
  kin_delta_fifo_free(inf->fifo);
  kin_indexer_free(inf->indexer);
  pthread_cond_destroy(&inf->resync_cond);
  pthread_cond_destroy(&inf->sync_cond);
  pthread_cond_destroy(&inf->stop_cond);
  pthread_mutex_destroy(&inf->started_lock);
  pthread_mutex_destroy(&inf->block_deltas);
  pthread_mutex_destroy(&inf->resync_mu);
  pthread_mutex_destroy(&inf->sync_mu);
  free(inf->batch);
  free(inf->name);
  free(inf);
}

kin_delta_fifo *kin_informer_fifo(kin_informer *inf) { return inf->fifo; }
kin_indexer *kin_informer_indexer(kin_informer *inf) { return inf->indexer; }

static void wake_sync_waiters(kin_informer *inf) {
  pthread_mutex_lock(&inf->sync_mu);
  pthread_cond_broadcast(&inf->sync_cond);
  pthread_mutex_unlock(&inf->sync_mu);
}

/* Hands n (borrowed) to the listeners: appended to the batch, or at once
 * when the batch cannot grow. Under block_deltas. */
static void notify(kin_informer *inf, const kin__note *n, int is_sync) {
  if (inf->nbatch == inf->capbatch) {
    size_t cap = inf->capbatch ? inf->capbatch * 2 : 64;
    kin__batch_note *v = realloc(inf->batch, cap * sizeof(*v));
    if (!v) {
      /* out of memory: what is batched first, then this one, in order */
      kin__processor_distribute_n(&inf->processor, inf->batch, inf->nbatch);
      for (size_t i = 0; i < inf->nbatch; i++) kin__note_release(&inf->batch[i].n);
      inf->nbatch = 0;
      kin__processor_distribute(&inf->processor, n, is_sync);
      return;
    }
    inf->batch = v;
    inf->capbatch = cap;
  }
  kin__batch_note *b = &inf->batch[inf->nbatch++];
  b->n = *n;
  b->is_sync = is_sync;
  kin_obj_ref(b->n.old_obj);
  kin_obj_ref(b->n.new_obj);
}

/* kin_delta_fifo_pop_batch's batch_end: the batch's notifications go to
 * every listener with one lock and one wake-up each; then deltas may flow
 * to a late handler again. */
static void batch_end(void *ud) {
  kin_informer *inf = ud;
  kin__processor_distribute_n(&inf->processor, inf->batch, inf->nbatch);
  for (size_t i = 0; i < inf->nbatch; i++) kin__note_release(&inf->batch[i].n);
  inf->nbatch = 0;
  if (inf->in_batch) {
    inf->in_batch = 0;
    pthread_mutex_unlock(&inf->block_deltas);
  }
}

/* processDeltas, called by Pop with the FIFO locked: apply each delta to
 * the indexer, oldest first, and queue the matching notification for the
 * batch's end. block_deltas is taken at the batch's first key and held to
 * its end, so a handler joining late sees the cache and the notifications
 * of a whole batch or of none of it. */
static int handle_deltas(void *ud, const char *key, const kin_deltas *d,
                         int is_in_initial_list) {
  kin_informer *inf = ud;
  int rc = 0;
  if (!inf->in_batch) {
    pthread_mutex_lock(&inf->block_deltas);
    inf->in_batch = 1;
  }
  for (size_t i = 0; i < d->len && rc == 0; i++) {
    kin_delta_type type = d->v[i].type;
    kin_obj *obj = d->v[i].obj;
    kin__note n = {0};
    switch (type) {
    case KIN_DELTA_SYNC:
    case KIN_DELTA_REPLACED:
    case KIN_DELTA_ADDED:
    case KIN_DELTA_UPDATED: {
      kin_obj *old = kin_indexer_get(inf->indexer, kin_obj_key(obj));
      if (old) {
        rc = kin_indexer_update(inf->indexer, obj);
        if (rc == 0) {
          /* As client-go's OnUpdate: an update that did not change the
           * resourceVersion (a Sync, or a relist that found the object
           * unchanged) is a resync, so only listeners due one get it. */
          int is_sync = strcmp(kin_obj_resource_version(old),
                               kin_obj_resource_version(obj)) == 0;
          n.type = KIN__NOTE_UPDATE;
          n.old_obj = old;
          n.new_obj = obj;
          notify(inf, &n, is_sync);
        }
        kin_obj_unref(old);
      } else {
        rc = kin_indexer_add(inf->indexer, obj);
        if (rc == 0) {
          n.type = KIN__NOTE_ADD;
          n.new_obj = obj;
          n.is_in_initial_list = is_in_initial_list;
          notify(inf, &n, 0);
        }
      }
      break;
    }
    case KIN_DELTA_DELETED:
      rc = kin_indexer_delete(inf->indexer, obj);
      if (rc == 0) {
        n.type = KIN__NOTE_DELETE;
        n.old_obj = obj;
        notify(inf, &n, 0);
      }
      break;
    }
  }
  if (rc < 0)
    kin_log(KIN_LOG_ERROR, "informer", "%s: cannot apply deltas of %s to the cache: %s",
            inf->name, key, kin_strerror(rc));
  /* Keep ECLOSED for the FIFO's own meaning. */
  return rc == KIN_ECLOSED ? KIN_EINVAL : rc;
}

static void *informer_main(void *arg) {
  kin_informer *inf = arg;
  while (!atomic_load(&inf->closed)) {
    /* many keys per lock; the listeners and the sync waiters are woken
     * once per batch */
    int rc = kin_delta_fifo_pop_batch(inf->fifo, 0, handle_deltas, batch_end, inf);
    if (rc == KIN_ECLOSED) break;
    /* An error was logged by handle_deltas; as with RetryOnError=false the
     * deltas are dropped. */
    if (!atomic_load(&inf->synced_seen)) {
      /* the initial list popped one batch at a time: its size is known
       * once the first batch is out, so the cache gets one table for it */
      if (!inf->reserved) {
        inf->reserved = 1;
        size_t have = kin_indexer_len(inf->indexer);
        kin_indexer_reserve(inf->indexer, have + kin_delta_fifo_len(inf->fifo)); /* a hint */
      }
      if (kin_delta_fifo_has_synced(inf->fifo)) atomic_store(&inf->synced_seen, 1);
      wake_sync_waiters(inf);
    }
  }
  return NULL;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Ticks every resync check period on the informer's clock; on a tick where
 * some listener is due, resyncs the FIFO (client-go's reflector resync
 * loop with ShouldResync = processor.shouldResync). */
static void *resync_main(void *arg) {
  kin_informer *inf = arg;
  uint64_t period = inf->resync_check_ns; /* immutable once started */
  pthread_mutex_lock(&inf->resync_mu);
  /* Saturating: a period of KIN_FOREVER never ticks (a wrapped deadline
   * would lie in the past and resync in a busy loop). */
  uint64_t next = sat_add(kin_clock_now(inf->clock), period);
  while (!inf->resync_stop) {
    kin_clock_wait(inf->clock, &inf->resync_cond, &inf->resync_mu, next);
    if (inf->resync_stop) break;
    uint64_t now = kin_clock_now(inf->clock);
    if (now < next) continue;
    pthread_mutex_unlock(&inf->resync_mu);
    if (kin__processor_should_resync(&inf->processor)) {
      int rc = kin_delta_fifo_resync(inf->fifo);
      if (rc < 0 && rc != KIN_ECLOSED)
        kin_log(KIN_LOG_ERROR, "informer", "%s: resync failed: %s", inf->name,
                kin_strerror(rc));
    }
    pthread_mutex_lock(&inf->resync_mu);
    next = sat_add(now, period);
  }
  pthread_mutex_unlock(&inf->resync_mu);
  return NULL;
}

int kin_informer_run(kin_informer *inf) {
  pthread_mutex_lock(&inf->started_lock);
  if (inf->stopped) {
    pthread_mutex_unlock(&inf->started_lock);
    return KIN_ECLOSED;
  }
  if (inf->started) {
    pthread_mutex_unlock(&inf->started_lock);
    kin_log(KIN_LOG_WARN, "informer", "%s: already started", inf->name);
    return KIN_EBUSY;
  }
  inf->started = 1;
  atomic_store(&inf->started_flag, 1);
  /* Listeners first, so nothing distributed waits for a thread. */
  int rc = kin__processor_run(&inf->processor);
  if (rc == 0) {
    rc = -pthread_create(&inf->informer_thread, NULL, informer_main, inf);
    if (rc == 0) inf->informer_thread_started = 1;
  }
  if (rc == 0 && inf->resync_check_ns > 0) {
    rc = -pthread_create(&inf->resync_thread, NULL, resync_main, inf);
    if (rc == 0) inf->resync_thread_started = 1;
  }
  pthread_mutex_unlock(&inf->started_lock);
  if (rc < 0) {
    kin_log(KIN_LOG_ERROR, "informer", "%s: cannot start: %s", inf->name, kin_strerror(rc));
    kin_informer_stop(inf);
  }
  return rc;
}

void kin_informer_stop(kin_informer *inf) {
  pthread_mutex_lock(&inf->started_lock);
  if (inf->stop_state == STOP_RUNNING) {
    /* A handler of this informer calling stop while another thread stops
     * it would wait for its own thread to be joined. */
    kin_listener *self = kin__listener_current();
    if (!(self && self->owner == inf))
      while (inf->stop_state != STOP_DONE) pthread_cond_wait(&inf->stop_cond, &inf->started_lock);
  }
  if (inf->stop_state != STOP_NONE) {
    pthread_mutex_unlock(&inf->started_lock);
    return;
  }
  inf->stop_state = STOP_RUNNING;
  inf->stopped = 1;
  atomic_store(&inf->closed, 1);
  int informer_thread = inf->informer_thread_started;
  int resync_thread = inf->resync_thread_started;
  pthread_mutex_unlock(&inf->started_lock);

  kin_delta_fifo_close(inf->fifo);
  pthread_mutex_lock(&inf->resync_mu);
  inf->resync_stop = 1;
  pthread_cond_broadcast(&inf->resync_cond);
  pthread_mutex_unlock(&inf->resync_mu);
  if (informer_thread) pthread_join(inf->informer_thread, NULL);
  if (resync_thread) pthread_join(inf->resync_thread, NULL);
  /* The processor stops strictly after the informer thread, so nothing is
   * distributed to a stopped listener. */
  kin__processor_stop(&inf->processor);
  wake_sync_waiters(inf);

  pthread_mutex_lock(&inf->started_lock);
  inf->stop_state = STOP_DONE;
  pthread_cond_broadcast(&inf->stop_cond);
  pthread_mutex_unlock(&inf->started_lock);
}

/* Queues a synthetic initial add of obj to the listener in ctx. */
static int late_join_add(void *ctx, kin_obj *obj) {
  kin__note n = {.type = KIN__NOTE_ADD, .is_in_initial_list = 1, .new_obj = obj};
  kin__listener_add(ctx, &n);
  return 0;
}

int kin_informer_add_handler(kin_informer *inf, const kin_event_handler *h,
                             uint64_t resync_ns, kin_listener **out) {
  pthread_mutex_lock(&inf->started_lock);
  if (inf->stopped) {
    pthread_mutex_unlock(&inf->started_lock);
    kin_log(KIN_LOG_WARN, "informer",
            "%s: handler was not added because the informer has stopped already", inf->name);
    return KIN_ECLOSED;
  }
  if (resync_ns > 0) {
    if (resync_ns < KIN_MIN_RESYNC_PERIOD) {
      kin_log(KIN_LOG_WARN, "informer", "%s: resync period %llu ms raised to the minimum 1 s",
              inf->name, (unsigned long long)(resync_ns / KIN_NSEC_PER_MSEC));
      resync_ns = KIN_MIN_RESYNC_PERIOD;
    }
    if (resync_ns < inf->resync_check_ns) {
      if (inf->started) {
        kin_log(KIN_LOG_WARN, "informer",
                "%s: resync period %llu ms is below the check period of the running "
                "informer; raised to %llu ms",
                inf->name, (unsigned long long)(resync_ns / KIN_NSEC_PER_MSEC),
                (unsigned long long)(inf->resync_check_ns / KIN_NSEC_PER_MSEC));
        resync_ns = inf->resync_check_ns;
      } else {
        inf->resync_check_ns = resync_ns;
        kin__processor_resync_check_period_changed(&inf->processor, resync_ns);
      }
    }
  }
  kin_listener *l;
  int rc = kin__listener_new(h, resync_ns,
                             kin__determine_resync_period(resync_ns, inf->resync_check_ns),
                             kin_clock_now(inf->clock), upstream_synced, inf, inf, inf->name, &l);
  if (rc < 0) {
    pthread_mutex_unlock(&inf->started_lock);
    return rc;
  }
  if (!inf->started) {
    rc = kin__processor_add_listener(&inf->processor, l);
  } else {
    /* Joining a running informer: with deltas blocked, register the
     * listener and queue a synthetic add for every cached object, so each
     * object reaches it exactly once, either here or from a later delta.
     * The handle is returned only after the adds were counted, so its
     * has_synced can never be true too early. */
    pthread_mutex_lock(&inf->block_deltas);
    rc = kin__processor_add_listener(&inf->processor, l);
    if (rc == 0) {
      /* A listener that missed some cached objects would report synced
       * with a partial view: take it out again and fail the add. */
      int frc = kin_indexer_foreach(inf->indexer, late_join_add, l);
      if (frc < 0) {
        kin__processor_remove_listener(&inf->processor, l);
        pthread_mutex_unlock(&inf->block_deltas);
        pthread_mutex_unlock(&inf->started_lock);
        kin__listener_stop(l);
        kin__listener_unref(l);
        return frc;
      }
    }
    pthread_mutex_unlock(&inf->block_deltas);
  }
  pthread_mutex_unlock(&inf->started_lock);
  if (rc < 0) {
    kin__listener_unref(l);
    return rc;
  }
  if (out) *out = l;
  return 0;
}

int kin_informer_remove_handler(kin_informer *inf, kin_listener *l) {
  pthread_mutex_lock(&inf->started_lock);
  pthread_mutex_lock(&inf->block_deltas);
  int rc = kin__processor_remove_listener(&inf->processor, l);
  pthread_mutex_unlock(&inf->block_deltas);
  pthread_mutex_unlock(&inf->started_lock);
  if (rc < 0) return rc;
  /* Joined outside the locks: the handler may be calling into the
   * informer right now. */
  kin__listener_stop(l);
  kin__listener_unref(l);
  return 0;
}

int kin_informer_has_synced(kin_informer *inf) {
  if (!atomic_load(&inf->started_flag)) return 0;
  return kin_delta_fifo_has_synced(inf->fifo);
}

int kin_informer_wait_for_cache_sync(kin_informer *inf, uint64_t timeout_ns) {
  uint64_t now = kin_clock_now(inf->clock);
  uint64_t deadline = timeout_ns >= KIN_FOREVER - now ? KIN_FOREVER : now + timeout_ns;
  pthread_mutex_lock(&inf->sync_mu);
  for (;;) {
    if (kin_informer_has_synced(inf)) break;
    if (atomic_load(&inf->closed)) {
      pthread_mutex_unlock(&inf->sync_mu);
      return KIN_ECLOSED;
    }
    if (deadline != KIN_FOREVER && kin_clock_now(inf->clock) >= deadline) {
      pthread_mutex_unlock(&inf->sync_mu);
      return KIN_ETIMEDOUT;
    }
    /* The FIFO can become synced without a pop (a Replace of an empty
     * list), so besides the informer thread's and the clock's wake-ups we
     * poll every 10 ms of real time, as client-go polls every 100 ms. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += 10 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&inf->sync_cond, &inf->sync_mu, &ts);
  }
  pthread_mutex_unlock(&inf->sync_mu);
  return 0;
}

uint64_t kin_informer_resync_check_period(kin_informer *inf) {
  pthread_mutex_lock(&inf->started_lock);
  uint64_t p = inf->resync_check_ns;
  pthread_mutex_unlock(&inf->started_lock);
  return p;
}
