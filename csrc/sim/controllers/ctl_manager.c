/* ctl_manager.c -- the sim's controller manager: the thread that feeds
 * committed changes to the enabled controllers and runs them on the sim's
 * clock (kube-controller-manager's role, with the store's commit hook in
 * place of informers: no change is missed and none is seen twice). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "kin.h"

/* A committed change waiting for the controllers; holds a reference on
 * obj and prev (dropped under the store lock). */
typedef struct {
  int type;
  const kin__sim_storage *st;
  kin__sim_obj *obj, *prev;
} change;

/* The queue is a list of blocks of BLOCK changes: a burst (a seed of a
 * million objects) never needs one large allocation, whose free would
 * raise malloc's mmap threshold and leave the heap fragmented. */
enum { BLOCK = 127 };
typedef struct block {
  struct block *next;
  size_t head, tail; /* changes[head..tail) are queued */
  change changes[BLOCK];
} block;

typedef struct {
  const kin__simctl_def *def;
  void *self;
  uint64_t due; /* when run wants to be called next */
} running;

/* mu guards every field from first on; the store lock may be held when it
 * is taken (the commit hook), never the other way round. The controllers'
 * states are the thread's own. */
struct kin__simctl {
  kin_sim *sim;
  pthread_t thread;
  running *ctls;
  size_t nctl;
  int fake_clock;
  uint64_t start_ns;      /* CLOCK_MONOTONIC at start */
  time_t start_wall;      /* time(NULL) at start */
  pthread_mutex_t mu;
  pthread_cond_t cond;    /* a change, an advance, stop, or idle */
  block *first, *last;    /* the queue, oldest first */
  size_t qlen;
  uint64_t fake_ms;       /* the fake clock */
  uint64_t next_due;      /* earliest due of any controller (thread writes) */
  int busy;               /* the thread is between taking changes and running */
  int stop;
  int started;            /* thread runs (written before it starts) */
};

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Caller holds m->mu (for the fake clock's value). */
static uint64_t now_locked(kin__simctl *m) {
  return m->fake_clock ? m->fake_ms : (mono_ns() - m->start_ns) / 1000000ull;
}

uint64_t kin__simctl_now_ms(kin__simctl *m) {
  pthread_mutex_lock(&m->mu);
  uint64_t t = now_locked(m);
  pthread_mutex_unlock(&m->mu);
  return t;
}

kin_sim *kin__simctl_sim(kin__simctl *m) { return m->sim; }

void kin__simctl_wall_rfc3339(kin__simctl *m, char out[32]) {
  time_t t;
  if (m->fake_clock) {
    t = m->start_wall + (time_t)(kin__simctl_now_ms(m) / 1000);
  } else {
    t = time(NULL);
  }
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- which controllers run ---- */

/* 1 when word (len bytes) names a controller of defs. */
static int known(const kin__simctl_def *const *defs, const char *w, size_t len) {
  for (size_t i = 0; defs[i]; i++)
    if (strlen(defs[i]->name) == len && !strncmp(defs[i]->name, w, len)) return 1;
  return 0;
}

/* Whether spec enables def; spec already parsed. kube-controller-manager's
 * rule: an explicit "name" or "-name" wins; else "*" enables the default
 * ones. */
static int spec_enables(const char *spec, const kin__simctl_def *def) {
  if (!spec) spec = "*";
  int star = 0, yes = 0, no = 0;
  size_t nl = strlen(def->name);
  for (const char *p = spec; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 1 && *p == '*') star = 1;
    if (len == nl && !strncmp(p, def->name, nl)) yes = 1;
    if (len == nl + 1 && *p == '-' && !strncmp(p + 1, def->name, nl)) no = 1;
    p += len + (e ? 1 : 0);
  }
  if (no) return 0;
  if (yes) return 1;
  return star && !def->off_by_default;
}

int kin__simctl_parse(const kin__simctl_def *const *defs, const char *spec, char *bad,
                      size_t cap) {
  if (!spec || !strcmp(spec, "none")) return 0;
  for (const char *p = spec;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    const char *w = p;
    size_t wl = len;
    if (wl && *w == '-') w++, wl--;
    if (!(len == 1 && *p == '*') && !known(defs, w, wl)) {
      if (cap) {
        size_t n = len < cap - 1 ? len : cap - 1;
        memcpy(bad, p, n);
        bad[n] = 0;
      }
      return KIN_EINVAL;
    }
    if (!e) break;
    p = e + 1;
  }
  return 0;
}

int kin__simctl_enabled(const kin__simctl *m, const char *name) {
  for (size_t i = 0; m && i < m->nctl; i++)
    if (!strcmp(m->ctls[i].def->name, name)) return 1;
  return 0;
}

/* ---- the commit hook: runs under the store lock ---- */

static void on_commit(void *ud, int type, kin__sim_storage *st, kin__sim_obj *obj,
                      kin__sim_obj *prev) {
  kin__simctl *m = ud;
  pthread_mutex_lock(&m->mu);
  if (!m->last || m->last->tail == BLOCK) {
    block *bl = malloc(sizeof(*bl));
    if (!bl) { /* the change is lost to the controllers; the store has it */
      pthread_mutex_unlock(&m->mu);
      return;
    }
    bl->next = NULL;
    bl->head = bl->tail = 0;
    if (m->last)
      m->last->next = bl;
    else
      m->first = bl;
    m->last = bl;
  }
  obj->refs++;
  if (prev) prev->refs++;
  m->last->changes[m->last->tail++] = (change){type, st, obj, prev};
  m->qlen++;
  pthread_cond_broadcast(&m->cond);
  pthread_mutex_unlock(&m->mu);
}

/* ---- the thread ---- */

/* Takes up to cap queued changes into out; returns how many. Caller holds
 * m->mu. */
static size_t take(kin__simctl *m, change *out, size_t cap) {
  size_t n = 0;
  while (m->qlen && n < cap) {
    block *bl = m->first;
    out[n++] = bl->changes[bl->head++];
    m->qlen--;
    if (bl->head == bl->tail) {
      m->first = bl->next;
      if (!m->first) m->last = NULL;
      free(bl);
    }
  }
  return n;
}

/* Drops the references of n changes under the store lock. */
static void release(kin__simctl *m, change *c, size_t n) {
  if (!n) return;
  pthread_mutex_lock(&m->sim->store.mu);
  for (size_t i = 0; i < n; i++) {
    kin__sim_obj_unref(c[i].obj);
    kin__sim_obj_unref(c[i].prev);
  }
  pthread_mutex_unlock(&m->sim->store.mu);
}

static void run_due(kin__simctl *m) {
  uint64_t next = KIN__SIMCTL_NEVER;
  for (size_t i = 0; i < m->nctl; i++) {
    running *c = &m->ctls[i];
    uint64_t now = kin__simctl_now_ms(m);
    if (c->due <= now) c->due = c->def->run(c->self, m, now);
    if (c->due < next) next = c->due;
  }
  pthread_mutex_lock(&m->mu);
  m->next_due = next;
  pthread_mutex_unlock(&m->mu);
}

static void *thread_main(void *arg) {
  kin__simctl *m = arg;
  enum { BATCH = 256 };
  change batch[BATCH];
  for (;;) {
    pthread_mutex_lock(&m->mu);
    for (;;) {
      if (m->stop) break;
      if (m->qlen) break;
      uint64_t now = now_locked(m);
      if (m->next_due <= now) break;
      m->busy = 0;
      pthread_cond_broadcast(&m->cond); /* wait_idle */
      if (m->fake_clock || m->next_due == KIN__SIMCTL_NEVER) {
        pthread_cond_wait(&m->cond, &m->mu);
      } else {
        uint64_t at = m->start_ns + m->next_due * 1000000ull;
        struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
        pthread_cond_timedwait(&m->cond, &m->mu, &ts);
      }
    }
    if (m->stop) {
      pthread_mutex_unlock(&m->mu);
      return NULL;
    }
    m->busy = 1;
    size_t n = take(m, batch, BATCH);
    pthread_mutex_unlock(&m->mu);
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < m->nctl; j++)
        m->ctls[j].def->observe(m->ctls[j].self, m, batch[i].type, batch[i].st, batch[i].obj,
                                batch[i].prev);
    release(m, batch, n);
    /* Every controller runs after each batch: observe may have queued
     * work for now. */
    for (size_t j = 0; j < m->nctl; j++) m->ctls[j].due = 0;
    run_due(m);
  }
}

/* ---- start, stop ---- */

/* Hands every stored object to the controllers as added, at once (no
 * queue: a seed of a million objects costs no memory here). Runs before
 * the hook is set and the thread starts, under the store lock, so no
 * change falls between and the controllers' states are not shared yet. */
static void observe_existing(kin__simctl *m) {
  kin__sim_store *s = &m->sim->store;
  for (size_t i = 0; i < s->nst; i++) {
    kin__sim_storage *st = s->storages[i];
    if (!st->served) continue;
    size_t pos = 0;
    kin__hmap_entry *e;
    while ((e = kin__hmap_next(&st->objects, &pos)))
      for (size_t j = 0; j < m->nctl; j++)
        m->ctls[j].def->observe(m->ctls[j].self, m, KIN__SIM_ADDED, st, e->val, NULL);
  }
}

int kin__simctl_start(kin_sim *sim, const kin__simctl_def *const *defs, const char *spec,
                      int fake_clock, kin__simctl **out) {
  *out = NULL;
  if (kin__simctl_parse(defs, spec, NULL, 0)) return KIN_EINVAL;
  if (spec && !strcmp(spec, "none")) return 0;
  kin__simctl *m = calloc(1, sizeof(*m));
  if (!m) return KIN_ENOMEM;
  m->sim = sim;
  m->fake_clock = fake_clock;
  m->start_ns = mono_ns();
  m->start_wall = time(NULL);
  m->next_due = 0;
  pthread_mutex_init(&m->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&m->cond, &ca);
  pthread_condattr_destroy(&ca);
  size_t total = 0;
  while (defs[total]) total++;
  m->ctls = calloc(total ? total : 1, sizeof(*m->ctls));
  if (!m->ctls) {
    kin__simctl_free(m);
    return KIN_ENOMEM;
  }
  for (size_t i = 0; i < total; i++) {
    const kin__simctl_def *d = defs[i];
    if (!spec_enables(spec, d)) continue;
    void *self = d->create(m);
    if (!self) {
      kin__simctl_free(m);
      return KIN_ENOMEM;
    }
    m->ctls[m->nctl++] = (running){d, self, 0};
  }
  if (!m->nctl) {
    kin__simctl_free(m);
    return 0;
  }
  kin__sim_store *s = &sim->store;
  pthread_mutex_lock(&s->mu);
  observe_existing(m);
  s->commit_hook = on_commit;
  s->commit_hook_ud = m;
  pthread_mutex_unlock(&s->mu);
  m->busy = 1;
  if (pthread_create(&m->thread, NULL, thread_main, m)) {
    pthread_mutex_lock(&s->mu);
    s->commit_hook = NULL;
    pthread_mutex_unlock(&s->mu);
    kin__simctl_free(m);
    return KIN_ENOMEM;
  }
  m->started = 1;
  *out = m;
  return 0;
}

void kin__simctl_free(kin__simctl *m) {
  if (!m) return;
  kin__sim_store *s = &m->sim->store;
  pthread_mutex_lock(&s->mu);
  if (s->commit_hook_ud == m) {
    s->commit_hook = NULL;
    s->commit_hook_ud = NULL;
  }
  pthread_mutex_unlock(&s->mu);
  if (m->started) {
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->cond);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
  }
  change c;
  while (take(m, &c, 1)) release(m, &c, 1);
  for (size_t i = 0; i < m->nctl; i++) m->ctls[i].def->destroy(m->ctls[i].self);
  free(m->ctls);
  pthread_mutex_destroy(&m->mu);
  pthread_cond_destroy(&m->cond);
  free(m);
}

int kin__simctl_advance(kin__simctl *m, uint64_t ms) {
  if (!m->fake_clock) return KIN_EINVAL;
  pthread_mutex_lock(&m->mu);
  m->fake_ms += ms;
  pthread_cond_broadcast(&m->cond);
  pthread_mutex_unlock(&m->mu);
  return 0;
}

int kin__simctl_wait_idle(kin__simctl *m, uint32_t timeout_ms) {
  uint64_t until = mono_ns() + (uint64_t)timeout_ms * 1000000ull;
  struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
  pthread_mutex_lock(&m->mu);
  int rc = 0;
  while (m->busy || m->qlen || m->next_due <= now_locked(m)) {
    if (pthread_cond_timedwait(&m->cond, &m->mu, &ts) == ETIMEDOUT) {
      rc = KIN_ETIMEDOUT;
      break;
    }
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}
