/* clock.c -- the real monotonic clock and a fake clock for tests.
 *
 * The fake clock's time is an atomic so that a waiter can read it while
 * holding its own mutex; a step stores the new time first and then takes
 * each subscriber's mutex to broadcast, so a waiter that read the old time
 * is either still holding its mutex (the step waits for it to block) or
 * already blocked (the broadcast wakes it): no wake-up is lost. */
#include "clock.h"
#include "kin.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct sub {
  pthread_cond_t *cond;
  pthread_mutex_t *m;
  struct sub *next;
} sub;

struct kin_clock {
  int fake;
  _Atomic uint64_t now;       /* fake only */
  atomic_int waiters;         /* fake only */
  pthread_mutex_t subs_lock;  /* guards subs */
  sub *subs;
};

static kin_clock real_clock = {0};

kin_clock *kin_clock_real(void) { return &real_clock; }

kin_clock *kin_fake_clock_new(uint64_t start_ns) {
  kin_clock *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->fake = 1;
  atomic_store(&c->now, start_ns);
  pthread_mutex_init(&c->subs_lock, NULL);
  return c;
}

void kin_fake_clock_free(kin_clock *c) {
  if (!c || !c->fake) return;
  sub *s = c->subs;
  while (s) {
    sub *n = s->next;
    free(s);
    s = n;
  }
  pthread_mutex_destroy(&c->subs_lock);
  free(c);
}

static void wake_all(kin_clock *c) {
  pthread_mutex_lock(&c->subs_lock);
  for (sub *s = c->subs; s; s = s->next) {
    pthread_mutex_lock(s->m);
    pthread_cond_broadcast(s->cond);
    pthread_mutex_unlock(s->m);
  }
  pthread_mutex_unlock(&c->subs_lock);
}

void kin_fake_clock_step(kin_clock *c, uint64_t d_ns) {
  atomic_fetch_add(&c->now, d_ns);
  wake_all(c);
}

void kin_fake_clock_set(kin_clock *c, uint64_t t_ns) {
  atomic_store(&c->now, t_ns);
  wake_all(c);
}

int kin_fake_clock_waiters(kin_clock *c) { return atomic_load(&c->waiters); }

uint64_t kin_clock_now(kin_clock *c) {
  if (c->fake) return atomic_load(&c->now);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int kin_cond_init(pthread_cond_t *cond) {
  pthread_condattr_t a;
  int rc = pthread_condattr_init(&a);
  if (rc) return -rc;
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  rc = pthread_cond_init(cond, &a);
  pthread_condattr_destroy(&a);
  return -rc;
}

int kin_mutex_init_hot(pthread_mutex_t *m) {
  pthread_mutexattr_t a;
  int rc = pthread_mutexattr_init(&a);
  if (rc) return -rc;
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  rc = pthread_mutex_init(m, &a);
  pthread_mutexattr_destroy(&a);
  return -rc;
}

int kin_clock_subscribe(kin_clock *c, pthread_cond_t *cond, pthread_mutex_t *m) {
  if (!c->fake) return 0;
  sub *s = malloc(sizeof(*s));
  if (!s) return KIN_ENOMEM;
  s->cond = cond;
  s->m = m;
  pthread_mutex_lock(&c->subs_lock);
  s->next = c->subs;
  c->subs = s;
  pthread_mutex_unlock(&c->subs_lock);
  return 0;
}

void kin_clock_unsubscribe(kin_clock *c, pthread_cond_t *cond) {
  if (!c->fake) return;
  pthread_mutex_lock(&c->subs_lock);
  for (sub **p = &c->subs; *p; p = &(*p)->next) {
    if ((*p)->cond == cond) {
      sub *s = *p;
      *p = s->next;
      free(s);
      break;
    }
  }
  pthread_mutex_unlock(&c->subs_lock);
}

int kin_clock_wait(kin_clock *c, pthread_cond_t *cond, pthread_mutex_t *m,
                   uint64_t deadline_ns) {
  if (deadline_ns != KIN_FOREVER && kin_clock_now(c) >= deadline_ns)
    return KIN_ETIMEDOUT;
  if (deadline_ns == KIN_FOREVER) {
    pthread_cond_wait(cond, m);
    return 0;
  }
  if (c->fake) {
    atomic_fetch_add(&c->waiters, 1);
    pthread_cond_wait(cond, m);
    atomic_fetch_sub(&c->waiters, 1);
  } else {
    struct timespec ts = {(time_t)(deadline_ns / KIN_NSEC_PER_SEC),
                          (long)(deadline_ns % KIN_NSEC_PER_SEC)};
    pthread_cond_timedwait(cond, m, &ts);
  }
  return kin_clock_now(c) >= deadline_ns ? KIN_ETIMEDOUT : 0;
}
