/* lcontroller_watchdog.c -- the reconcile deadline of a Lua controller
 * (issue 12; lcontroller_int.h): the count hook a worker arms around each
 * reconcile, and the watchdog thread per started controller.
 *
 * spec.reconcile_timeout (s, 0: none) and spec.busy_warning_after (s,
 * default 60, 0: never). Around each reconcile the worker installs a count
 * hook (every HOOK_COUNT instructions) that raises "reconcile interrupted:
 * ..." past the deadline or once a shutdown armed by ctl:stop(t) /
 * ctl:shutdown(t) gave up waiting, and sets the thread's REST limits
 * (kin_client_set_thread_limits: the time left caps each request's
 * timeout; the worker slot's canceler ends it). The watchdog ticks every
 * 50 ms: it fires the canceler of a worker past its deadline or, after the
 * shutdown's abort time, of every busy worker, and logs one warning per
 * episode when every worker has been on its key longer than
 * busy_warning_after. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "laux.h"
#include "lcontroller_int.h"
#include "log.h"

/* The watchdog's tick. */
#define WATCH_TICK_NS (50 * 1000000ull)

uint64_t lctl_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- interrupting a reconcile -------------------------------------------- */

/* The count hook of a worker state while it reconciles: past the deadline
 * or once the shutdown gave up waiting, raises "reconcile interrupted: ..."
 * (again at every later check, and after ten raises at every instruction,
 * so user code catching it with pcall cannot keep running). */
void lctl_interrupt_hook(lua_State *L, lua_Debug *ar) {
  wslot *s = lkin_ws_user(L);
  if (!s) return;
  int why = 0;
  if (atomic_load_explicit(&s->abort, memory_order_relaxed)) why = 2;
  else if (s->deadline_ns && lctl_mono_ns() >= s->deadline_ns) why = 1;
  if (!why) return;
  if (!s->interrupted) {
    s->interrupted = why;
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0)
      snprintf(s->where, sizeof(s->where), " at %s:%d", ar->short_src, ar->currentline);
  }
  if (++s->nraises == 10) lua_sethook(L, lctl_interrupt_hook, LUA_MASKCOUNT, 1);
  lua_pushstring(L, why == 2 ? "reconcile interrupted: the controller is shutting down"
                             : "reconcile interrupted: reconcile_timeout exceeded");
  lua_error(L);
}

/* Fires the canceler of slot s when it is busy and not fired yet; s->mu
 * held. */
static void fire_locked(wslot *s) {
  if (!s->busy || s->fired) return;
  s->fired = 1;
  kin_io_canceler_fire(&s->cx);
}

/* The watchdog: cuts REST calls at their deadline, interrupts everything
 * once abort_at passed, and warns when every worker has been busy longer
 * than busy_warning_after. */
static void *watchdog_main(void *arg) {
  lctl *p = arg;
  char *msg = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&p->wd_mu);
  while (!p->wd_quit) {
    uint64_t now = lctl_mono_ns();
    int aborting = p->abort_at && now >= p->abort_at;
    int over = 0;
    for (int i = 0; i < p->workers; i++) {
      wslot *s = &p->slots[i];
      if (aborting) atomic_store(&s->abort, 1);
      pthread_mutex_lock(&s->mu);
      if (aborting || (s->deadline_ns && now >= s->deadline_ns)) fire_locked(s);
      /* now was read before this lock: a reconcile that started since has
       * a later start (no unsigned wrap to "busy for ages") */
      if (s->busy && p->busy_warn_ns && now > s->start_ns && now - s->start_ns >= p->busy_warn_ns)
        over++;
      pthread_mutex_unlock(&s->mu);
    }
    if (over < p->workers || !p->busy_warn_ns) {
      p->warned = 0;
    } else if (!p->warned) {
      p->warned = 1;
      size_t need = 200 + (size_t)p->workers * 300;
      if (need > cap) {
        char *m = realloc(msg, need);
        if (m) msg = m, cap = need;
      }
      if (msg) {
        size_t n = 0;
        for (int i = 0; i < p->workers; i++) {
          wslot *s = &p->slots[i];
          pthread_mutex_lock(&s->mu);
          if (s->busy)
            n += (size_t)snprintf(msg + n, cap - n, "%s\"%s\" (%.1fs)", n ? ", " : "", s->key,
                                  (double)(now - s->start_ns) / 1e9);
          pthread_mutex_unlock(&s->mu);
          if (n >= cap) n = cap - 1;
        }
        kin_log(KIN_LOG_WARN, "controller",
                "controller \"%s\": all %d workers busy for more than %gs, nothing else is "
                "reconciled: %s",
                p->name, p->workers, (double)p->busy_warn_ns / 1e9, msg);
      }
    }
    struct timespec ts;
    uint64_t until = lctl_mono_ns() + WATCH_TICK_NS;
    ts.tv_sec = (time_t)(until / 1000000000u);
    ts.tv_nsec = (long)(until % 1000000000u);
    pthread_cond_timedwait(&p->wd_cond, &p->wd_mu, &ts);
  }
  pthread_mutex_unlock(&p->wd_mu);
  free(msg);
  return NULL;
}

/* Starts the watchdog (owner thread). Returns 0 or a KIN_E* error. */
int lctl_watchdog_start(lctl *p) {
  if (p->wd_running) return 0;
  pthread_mutex_lock(&p->wd_mu);
  p->wd_quit = 0;
  pthread_mutex_unlock(&p->wd_mu);
  sigset_t old_mask;
  lkin_signals_block_all(&old_mask);
  int err = pthread_create(&p->wd, NULL, watchdog_main, p);
  lkin_signals_restore(&old_mask);
  if (err) return -err;
  p->wd_running = 1;
  return 0;
}

void lctl_watchdog_stop(lctl *p) {
  if (!p->wd_running) return;
  pthread_mutex_lock(&p->wd_mu);
  p->wd_quit = 1;
  pthread_cond_signal(&p->wd_cond);
  pthread_mutex_unlock(&p->wd_mu);
  pthread_join(p->wd, NULL);
  p->wd_running = 0;
}

/* Interrupt what still runs `after_s` seconds from now (keeps an earlier
 * time). */
void lctl_arm_abort(lctl *p, double after_s) {
  uint64_t at = lctl_mono_ns() + (after_s > 0 ? (uint64_t)(after_s * 1e9) : 0);
  if (at == 0) at = 1;
  pthread_mutex_lock(&p->wd_mu);
  if (!p->abort_at || at < p->abort_at) p->abort_at = at;
  pthread_cond_signal(&p->wd_cond);
  pthread_mutex_unlock(&p->wd_mu);
}
