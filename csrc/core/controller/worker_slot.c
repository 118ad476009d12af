/* worker_slot.c -- a controller's reconcile slots and its watchdog thread
 * (worker_slot.h): the deadline of every reconcile, C or Lua, is enforced
 * here, so a REST call still waiting at the deadline is cancelled and a
 * shutdown that gave up waiting interrupts every busy worker. */
#include "worker_slot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "kin.h"
#include "log.h"
#include "reconcile.h"

/* The watchdog's tick. */
#define WATCH_TICK_NS (50 * 1000000ull)

uint64_t kin__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- slots ----------------------------------------------------------------- */

int kin__wslot_init(kin__wslot *s) {
  memset(s, 0, sizeof(*s));
  int rc = kin_io_canceler_init(&s->cx);
  if (rc < 0) return rc;
  rc = kin_mutex_init_hot(&s->mu);
  if (rc < 0) {
    kin_io_canceler_destroy(&s->cx);
    return rc;
  }
  atomic_init(&s->abort, 0);
  return 0;
}

void kin__wslot_destroy(kin__wslot *s) {
  kin_io_canceler_destroy(&s->cx);
  pthread_mutex_destroy(&s->mu);
}

void kin__wslot_begin(kin__wslot *s, const char *key, uint64_t timeout_ns, kin_call_ctx *ctx) {
  uint64_t t0 = kin__mono_ns(), w0 = wall_ns();
  size_t klen = strlen(key);
  if (klen >= sizeof(s->key)) klen = sizeof(s->key) - 1;
  pthread_mutex_lock(&s->mu);
  s->busy = 1;
  memcpy(s->key, key, klen);
  s->key[klen] = 0;
  s->start_ns = t0;
  s->start_wall_ns = w0;
  s->deadline_ns = timeout_ns ? t0 + timeout_ns : 0;
  s->fired = 0;
  /* a fresh canceler, unless aborting (io_engine.h: cx.mu guards fired) */
  pthread_mutex_lock(&s->cx.mu);
  s->cx.fired = atomic_load(&s->abort);
  pthread_mutex_unlock(&s->cx.mu);
  ctx->deadline_ns = s->deadline_ns;
  s->epoch = ctx->epoch;
  atomic_store(&s->deposed, 0);
  pthread_mutex_unlock(&s->mu);
  ctx->cancel = &s->cx;
}

int kin__wslot_end(kin__wslot *s) {
  pthread_mutex_lock(&s->mu);
  s->busy = 0;
  int fired = s->fired;
  pthread_mutex_unlock(&s->mu);
  return fired;
}

/* ---- the watchdog ---------------------------------------------------------- */

/* Fires the canceler of slot s when it is busy and not fired yet; s->mu
 * held. Returns 1 when it fired it. */
static int fire_locked(kin__wslot *s) {
  if (!s->busy || s->fired) return 0;
  s->fired = 1;
  kin_io_canceler_fire(&s->cx);
  return 1;
}

/* Logs the busy warning naming every busy worker's key; msg/cap is a
 * buffer kept between ticks. */
static void warn_busy(kin__watchdog *w, uint64_t now, char **msg, size_t *cap) {
  size_t need = 200 + (size_t)w->workers * 300;
  if (need > *cap) {
    char *m = realloc(*msg, need);
    if (m) *msg = m, *cap = need;
  }
  if (!*msg) return;
  size_t n = 0;
  for (int i = 0; i < w->workers; i++) {
    kin__wslot *s = &w->slots[i];
    pthread_mutex_lock(&s->mu);
    if (s->busy)
      n += (size_t)snprintf(*msg + n, *cap - n, "%s\"%s\" (%.1fs)", n ? ", " : "", s->key,
                            (double)(now - s->start_ns) / 1e9);
    pthread_mutex_unlock(&s->mu);
    if (n >= *cap) n = *cap - 1;
  }
  kin_log(KIN_LOG_WARN, "controller",
          "controller \"%s\": all %d workers busy for more than %gs, nothing else is "
          "reconciled: %s",
          w->name, w->workers, (double)w->busy_warn_ns / 1e9, *msg);
}

/* The thread: every WATCH_TICK_NS, cuts REST calls at their deadline,
 * interrupts everything once abort_at passed, and warns when every worker
 * has been busy longer than busy_warn_ns. */
static void *watchdog_main(void *arg) {
  kin__watchdog *w = arg;
  char *msg = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&w->mu);
  while (!w->quit) {
    uint64_t now = kin__mono_ns();
    int aborting = w->abort_at && now >= w->abort_at;
    int over = 0;
    for (int i = 0; i < w->workers; i++) {
      kin__wslot *s = &w->slots[i];
      if (aborting) atomic_store(&s->abort, 1);
      pthread_mutex_lock(&s->mu);
      int fired = 0, why = aborting ? KIN_INTERRUPT_SHUTDOWN : KIN_INTERRUPT_DEADLINE;
      if (s->busy && w->fence && !atomic_load(&s->deposed) && !kin_fence_holds(w->fence, s->epoch)) {
        /* leadership ended under this reconcile: no write of it goes out
         * (the fence), and it stops now rather than at its end */
        atomic_store(&s->deposed, 1);
        why = KIN_INTERRUPT_LEADERSHIP;
        fired = fire_locked(s);
      }
      if (aborting || (s->deadline_ns && now >= s->deadline_ns)) fired |= fire_locked(s);
      /* now was read before this lock: a reconcile that started since has
       * a later start (no unsigned wrap to "busy for ages") */
      if (s->busy && w->busy_warn_ns && now > s->start_ns && now - s->start_ns >= w->busy_warn_ns)
        over++;
      pthread_mutex_unlock(&s->mu);
      if (fired && w->on_interrupt) w->on_interrupt(w->ud, i, why);
    }
    if (over < w->workers || !w->busy_warn_ns) {
      w->warned = 0;
    } else if (!w->warned) {
      w->warned = 1;
      warn_busy(w, now, &msg, &cap);
    }
    struct timespec ts;
    uint64_t until = kin__mono_ns() + WATCH_TICK_NS;
    ts.tv_sec = (time_t)(until / 1000000000u);
    ts.tv_nsec = (long)(until % 1000000000u);
    pthread_cond_timedwait(&w->cond, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  free(msg);
  return NULL;
}

int kin__watchdog_init(kin__watchdog *w, const char *name, kin__wslot *slots, int workers,
                       uint64_t busy_warn_ns, void (*on_interrupt)(void *, int, int), void *ud) {
  memset(w, 0, sizeof(*w));
  w->name = name;
  w->slots = slots;
  w->workers = workers;
  w->busy_warn_ns = busy_warn_ns;
  w->on_interrupt = on_interrupt;
  w->ud = ud;
  int rc = kin_cond_init(&w->cond);
  if (rc < 0) return rc;
  pthread_mutex_init(&w->mu, NULL);
  return 0;
}

void kin__watchdog_destroy(kin__watchdog *w) {
  kin__watchdog_stop(w);
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->mu);
}

int kin__watchdog_start(kin__watchdog *w) {
  if (w->running) return 0;
  pthread_mutex_lock(&w->mu);
  w->quit = 0;
  pthread_mutex_unlock(&w->mu);
  int err = pthread_create(&w->th, NULL, watchdog_main, w);
  if (err) return -err;
  w->running = 1;
  return 0;
}

void kin__watchdog_stop(kin__watchdog *w) {
  if (!w->running) return;
  pthread_mutex_lock(&w->mu);
  w->quit = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->th, NULL);
  w->running = 0;
}

void kin__watchdog_arm_abort(kin__watchdog *w, uint64_t after_ns) {
  uint64_t at = kin__mono_ns() + after_ns;
  if (at == 0) at = 1;
  pthread_mutex_lock(&w->mu);
  if (!w->abort_at || at < w->abort_at) w->abort_at = at;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->mu);
}
