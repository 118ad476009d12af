/* event_recorder.c -- the recorder of event_recorder.h: a bounded queue
 * filled by kin_event_record (any thread) and one writer thread that
 * correlates (event_correlator.c) and writes (event_sink.c) each event.
 *
 * Locks: mu guards head/tail/n, stop, flush_deadline, busy, st and the
 * drop-log fields; cond wakes the writer (new event, stop), idle wakes
 * kin_event_recorder_flush. The writer owns corr and api (st.api mirrors
 * api under mu); no lock is held during a REST call. Stopping: free lets
 * the writer write what is queued until the flush deadline, then fires
 * cancel, which ends the request in flight (KIN_ECANCELED) and makes the
 * writer drop the rest. */
#include "event_recorder.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "event_correlator.h"
#include "event_sink.h"
#include "kin.h"
#include "log.h"

#define DROP_LOG_PERIOD_NS (10 * KIN_NSEC_PER_SEC)

struct kin_event_recorder {
  kin_client *c;               /* borrowed */
  kin_event_recorder_opts o;   /* defaults filled; o.instance points at host */
  char host[256];
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cond, idle;   /* both on CLOCK_MONOTONIC (kin_cond_init) */
  kin__event_item *head, *tail; /* mu */
  size_t n;                    /* mu */
  int stop;                    /* mu */
  uint64_t flush_deadline;     /* mu; monotonic ns, set with stop */
  int busy;                    /* mu; the writer holds an item */
  int done;                    /* mu; the writer thread has finished */
  kin_io_canceler cancel;      /* fired by free when the flush time is up */
  kin_event_recorder_stats st; /* mu */
  uint64_t drop_logged_ns;     /* mu; monotonic ns of the last drop line */
  uint64_t drops_unlogged;     /* mu */
  kin__event_correlator *corr; /* writer thread */
  int api;                     /* writer thread */
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Waits on cond (mu held) until the monotonic time deadline_ns. */
static void wait_until(pthread_cond_t *cond, pthread_mutex_t *mu, uint64_t deadline_ns) {
  struct timespec ts = {.tv_sec = (time_t)(deadline_ns / KIN_NSEC_PER_SEC),
                        .tv_nsec = (long)(deadline_ns % KIN_NSEC_PER_SEC)};
  pthread_cond_timedwait(cond, mu, &ts);
}

static const char *nz(const char *s) { return s && *s ? s : ""; }

/* Logs one line about a drop unless one was logged in the last 10 s
 * (mu held). */
static void log_drop(kin_event_recorder *r, const char *why, const kin_event_ref *ref,
                     const char *reason) {
  r->drops_unlogged++;
  uint64_t now = mono_ns();
  if (r->drop_logged_ns && now - r->drop_logged_ns < DROP_LOG_PERIOD_NS) return;
  kin_log(KIN_LOG_WARN, "events",
          "event dropped (%s): %s %s%s%s reason %s (%llu dropped since the last report)", why,
          nz(ref->kind), nz(ref->namespace_), *nz(ref->namespace_) ? "/" : "", nz(ref->name),
          nz(reason), (unsigned long long)r->drops_unlogged);
  r->drop_logged_ns = now;
  r->drops_unlogged = 0;
}

/* Writes one item: correlate, then write with up to max_tries tries on
 * transport errors. Runs on the writer thread without mu. */
static void handle(kin_event_recorder *r, kin__event_item *it, int stopping, uint64_t deadline) {
  kin__event_in in = {.component = it->component, .host = it->host, .ref = &it->ref,
                      .type = it->type, .reason = it->reason, .message = it->message};
  kin__event_out out;
  if (kin__event_correlate(r->corr, &in, it->wall_ns, &out)) {
    kin_log(KIN_LOG_WARN, "events", "event %s/%s %s: out of memory", nz(it->ref.namespace_),
            it->ref.name, it->reason);
    pthread_mutex_lock(&r->mu);
    r->st.failed++;
    pthread_mutex_unlock(&r->mu);
    return;
  }
  if (out.skip) {
    pthread_mutex_lock(&r->mu);
    r->st.spam_filtered++;
    pthread_mutex_unlock(&r->mu);
    return;
  }
  int rc = 0;
  kin_result res = {0};
  for (int tries = 1;; tries++) {
    uint64_t lim = stopping ? deadline : mono_ns() + (uint64_t)r->o.request_timeout_ms * KIN_NSEC_PER_MSEC;
    kin_call_ctx ctx = {.deadline_ns = lim, .cancel = &r->cancel, .fence = r->o.fence,
                        .epoch = it->epoch};
    if (r->api == KIN_EVENTS_API_AUTO) {
      long left = (long)((lim - mono_ns()) / KIN_NSEC_PER_MSEC);
      rc = kin__event_sink_detect(r->c, &r->cancel, left > 0 ? left : 1);
      if (rc > 0) {
        r->api = rc;
        rc = 0;
        pthread_mutex_lock(&r->mu);
        r->st.api = r->api;
        pthread_mutex_unlock(&r->mu);
      }
    }
    if (rc == 0) rc = kin__event_sink_write(r->c, &ctx, r->api, it, &out, &res);
    if (rc == 0 || rc == KIN_ESTATUS || rc == KIN_ENOMEM || rc == KIN_EINVAL ||
        rc == KIN_ECANCELED || rc == KIN_EFENCED)
      break;
    pthread_mutex_lock(&r->mu);
    int give_up = r->stop || tries >= r->o.max_tries;
    if (!give_up) wait_until(&r->cond, &r->mu, mono_ns() + (uint64_t)r->o.retry_ms * KIN_NSEC_PER_MSEC);
    give_up = give_up || r->stop;
    pthread_mutex_unlock(&r->mu);
    if (give_up) break;
    kin_result_free(&res);
  }
  pthread_mutex_lock(&r->mu);
  if (rc == 0) {
    if (out.repeat && res.code != 201) r->st.patched++;
    else r->st.created++;
  } else if (rc == KIN_ESTATUS && res.code == 409) {
    r->st.created++; /* AlreadyExists: written before (client-go: not an error) */
  } else if (rc == KIN_ECANCELED) {
    r->st.dropped++; /* the recorder stopped: no line per event */
  } else {
    r->st.failed++;
  }
  pthread_mutex_unlock(&r->mu);
  if (rc != 0 && rc != KIN_ECANCELED && !(rc == KIN_ESTATUS && res.code == 409))
    kin_log(KIN_LOG_WARN, "events", "event %s %s%s%s reason %s not written: %s", it->ref.kind,
            nz(it->ref.namespace_), *nz(it->ref.namespace_) ? "/" : "", it->ref.name,
            it->reason, res.message ? res.message : kin_strerror(rc));
  kin_result_free(&res);
  kin__event_out_free(&out);
}

static void *writer(void *arg) {
  kin_event_recorder *r = arg;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    while (!r->head && !r->stop) pthread_cond_wait(&r->cond, &r->mu);
    if (!r->head) break;
    kin__event_item *it = r->head;
    r->head = it->next;
    if (!r->head) r->tail = NULL;
    r->n--;
    r->busy = 1;
    int stopping = r->stop;
    uint64_t deadline = r->flush_deadline;
    pthread_mutex_unlock(&r->mu);
    if (stopping && (mono_ns() >= deadline || kin_io_canceler_fired(&r->cancel))) {
      pthread_mutex_lock(&r->mu);
      r->st.dropped++;
      pthread_mutex_unlock(&r->mu);
    } else {
      handle(r, it, stopping, deadline);
    }
    kin__event_item_free(it);
    pthread_mutex_lock(&r->mu);
    r->busy = 0;
    pthread_cond_broadcast(&r->idle);
  }
  r->done = 1;
  pthread_cond_broadcast(&r->idle);
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

int kin_event_recorder_new(kin_client *c, const kin_event_recorder_opts *opts,
                           kin_event_recorder **out) {
  *out = NULL;
  kin_event_recorder *r = calloc(1, sizeof(*r));
  if (!r) return KIN_ENOMEM;
  r->c = c;
  if (opts) r->o = *opts;
  if (!r->o.queue_size) r->o.queue_size = 1000;
  if (r->o.request_timeout_ms <= 0) r->o.request_timeout_ms = 10000;
  if (r->o.max_tries <= 0) r->o.max_tries = 12;
  if (r->o.retry_ms <= 0) r->o.retry_ms = 10000;
  if (r->o.instance && *r->o.instance)
    snprintf(r->host, sizeof(r->host), "%s", r->o.instance);
  else if (gethostname(r->host, sizeof(r->host) - 1) || !r->host[0])
    snprintf(r->host, sizeof(r->host), "localhost");
  r->o.instance = r->host;
  r->api = r->o.api;
  r->st.api = r->api;
  r->corr = kin__event_correlator_new(NULL);
  if (!r->corr) {
    free(r);
    return KIN_ENOMEM;
  }
  if (kin_io_canceler_init(&r->cancel)) {
    kin__event_correlator_free(r->corr);
    free(r);
    return KIN_ENOMEM;
  }
  pthread_mutex_init(&r->mu, NULL);
  kin_cond_init(&r->cond);
  kin_cond_init(&r->idle);
  int rc = pthread_create(&r->thread, NULL, writer, r);
  if (rc) {
    kin__event_correlator_free(r->corr);
    kin_io_canceler_destroy(&r->cancel);
    pthread_cond_destroy(&r->cond);
    pthread_cond_destroy(&r->idle);
    pthread_mutex_destroy(&r->mu);
    free(r);
    return -rc;
  }
  *out = r;
  return 0;
}

void kin_event_recorder_free(kin_event_recorder *r, long flush_ms) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  r->stop = 1;
  r->flush_deadline = mono_ns() + (uint64_t)(flush_ms > 0 ? flush_ms : 0) * KIN_NSEC_PER_MSEC;
  pthread_cond_broadcast(&r->cond);
  while (!r->done && mono_ns() < r->flush_deadline) wait_until(&r->idle, &r->mu, r->flush_deadline);
  int done = r->done;
  pthread_mutex_unlock(&r->mu);
  if (!done) kin_io_canceler_fire(&r->cancel);
  pthread_join(r->thread, NULL);
  while (r->head) {
    kin__event_item *it = r->head;
    r->head = it->next;
    kin__event_item_free(it);
  }
  kin__event_correlator_free(r->corr);
  kin_io_canceler_destroy(&r->cancel);
  pthread_cond_destroy(&r->cond);
  pthread_cond_destroy(&r->idle);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* strdup of v, NULL for NULL or ""; sets *oom on failure. */
static char *dup_opt(const char *v, int *oom) {
  if (!v || !*v) return NULL;
  char *d = strdup(v);
  if (!d) *oom = 1;
  return d;
}

int kin_event_record(kin_event_recorder *r, const char *component, const kin_event_ref *obj,
                     const char *type, const char *reason, const char *action,
                     const char *message) {
  if (!r || !obj || !component || !*component || !reason || !*reason || !type ||
      (strcmp(type, "Normal") && strcmp(type, "Warning")) || !obj->kind || !*obj->kind ||
      !obj->name || !*obj->name)
    return KIN_EINVAL;
  kin__event_item *it = calloc(1, sizeof(*it));
  if (!it) return KIN_ENOMEM;
  int oom = 0;
  it->ref.api_version = dup_opt(obj->api_version, &oom);
  it->ref.kind = dup_opt(obj->kind, &oom);
  it->ref.namespace_ = dup_opt(obj->namespace_, &oom);
  it->ref.name = dup_opt(obj->name, &oom);
  it->ref.uid = dup_opt(obj->uid, &oom);
  it->ref.resource_version = dup_opt(obj->resource_version, &oom);
  it->ref.field_path = dup_opt(obj->field_path, &oom);
  it->component = dup_opt(component, &oom);
  it->host = dup_opt(r->host, &oom);
  it->type = dup_opt(type, &oom);
  it->reason = dup_opt(reason, &oom);
  it->action = dup_opt(action, &oom);
  it->message = strdup(message ? message : "");
  if (oom || !it->message) {
    kin__event_item_free(it);
    return KIN_ENOMEM;
  }
  it->wall_ns = wall_ns();
  it->epoch = r->o.fence ? kin_fence_epoch(r->o.fence) : 0;
  pthread_mutex_lock(&r->mu);
  if (r->stop || r->n >= r->o.queue_size) {
    r->st.dropped++;
    log_drop(r, r->stop ? "recorder stopped" : "event queue full", obj, reason);
    pthread_mutex_unlock(&r->mu);
    kin__event_item_free(it);
    return KIN_EBUSY;
  }
  if (r->tail) r->tail->next = it; else r->head = it;
  r->tail = it;
  r->n++;
  r->st.queued++;
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->mu);
  return 0;
}

int kin_event_recorder_flush(kin_event_recorder *r, long timeout_ms) {
  uint64_t deadline = mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * KIN_NSEC_PER_MSEC;
  int rc = 0;
  pthread_mutex_lock(&r->mu);
  while (r->head || r->busy) {
    if (mono_ns() >= deadline) {
      rc = KIN_ETIMEDOUT;
      break;
    }
    wait_until(&r->idle, &r->mu, deadline);
  }
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void kin_event_recorder_get_stats(kin_event_recorder *r, kin_event_recorder_stats *out) {
  pthread_mutex_lock(&r->mu);
  *out = r->st;
  pthread_mutex_unlock(&r->mu);
}
