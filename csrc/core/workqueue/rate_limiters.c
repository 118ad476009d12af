/* rate_limiters.c -- client-go's default_rate_limiters.go: per-item
 * exponential and fast/slow limiters, the overall token bucket
 * (golang.org/x/time/rate's Reserve), and the max-of and max-wait
 * combinators. Per-item failure counts live in a map as intptr_t values. */
#include "rate_limiter.h"

#include "hmap.h"
#include "kin.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

void kin_rate_limiter_free(kin_rate_limiter *rl) {
  if (rl) rl->vt->free(rl);
}

/* ---- per-item failure counts, shared by exponential and fast/slow ---- */

typedef struct {
  pthread_mutex_t mu; /* guards failures */
  kin__hmap failures; /* item -> count (intptr_t) */
} failures;

static void failures_init(failures *f) {
  pthread_mutex_init(&f->mu, NULL);
  kin__hmap_init(&f->failures);
}

static void failures_destroy(failures *f) {
  kin__hmap_free(&f->failures);
  pthread_mutex_destroy(&f->mu);
}

/* Returns the count before this failure and records one more. Caller holds
 * f->mu. When the map cannot grow the failure goes unrecorded, which only
 * makes the next delay shorter. */
static intptr_t failures_bump(failures *f, const char *item) {
  void **slot = kin__hmap_get(&f->failures, item);
  intptr_t n = slot ? (intptr_t)*slot : 0;
  if (slot)
    *slot = (void *)(n + 1);
  else
    kin__hmap_put(&f->failures, item, (void *)(intptr_t)1, NULL);
  return n;
}

static void failures_forget(failures *f, const char *item) {
  pthread_mutex_lock(&f->mu);
  kin__hmap_del(&f->failures, item, NULL);
  pthread_mutex_unlock(&f->mu);
}

static int failures_count(failures *f, const char *item) {
  pthread_mutex_lock(&f->mu);
  void **slot = kin__hmap_get(&f->failures, item);
  int n = slot ? (int)(intptr_t)*slot : 0;
  pthread_mutex_unlock(&f->mu);
  return n;
}

/* ---- ItemExponentialFailureRateLimiter ---- */

typedef struct {
  kin_rate_limiter base;
  uint64_t base_ns, max_ns; /* immutable */
  failures f;
} exponential;

static uint64_t exponential_when(kin_rate_limiter *rl, const char *item) {
  exponential *e = (exponential *)rl;
  pthread_mutex_lock(&e->f.mu);
  intptr_t exp = failures_bump(&e->f, item);
  pthread_mutex_unlock(&e->f.mu);
  /* Computed in floating point, as client-go does, so that a huge
   * exponent saturates instead of wrapping. */
  double backoff = ldexp((double)e->base_ns, exp > 100000 ? 100000 : (int)exp);
  if (backoff > (double)INT64_MAX) return e->max_ns;
  uint64_t d = (uint64_t)backoff;
  return d > e->max_ns ? e->max_ns : d;
}

static void exponential_forget(kin_rate_limiter *rl, const char *item) {
  failures_forget(&((exponential *)rl)->f, item);
}

static int exponential_num_requeues(kin_rate_limiter *rl, const char *item) {
  return failures_count(&((exponential *)rl)->f, item);
}

static void exponential_free(kin_rate_limiter *rl) {
  failures_destroy(&((exponential *)rl)->f);
  free(rl);
}

static const kin_rate_limiter_vt exponential_vt = {exponential_when, exponential_forget,
                                                   exponential_num_requeues, exponential_free};

kin_rate_limiter *kin_exponential_rate_limiter_new(uint64_t base_ns, uint64_t max_ns) {
  exponential *e = calloc(1, sizeof(*e));
  if (!e) return NULL;
  e->base.vt = &exponential_vt;
  e->base_ns = base_ns;
  e->max_ns = max_ns;
  failures_init(&e->f);
  return &e->base;
}

/* ---- ItemFastSlowRateLimiter ---- */

typedef struct {
  kin_rate_limiter base;
  uint64_t fast_ns, slow_ns; /* immutable */
  int max_fast;              /* immutable */
  failures f;
} fast_slow;

static uint64_t fast_slow_when(kin_rate_limiter *rl, const char *item) {
  fast_slow *s = (fast_slow *)rl;
  pthread_mutex_lock(&s->f.mu);
  intptr_t attempt = failures_bump(&s->f, item) + 1;
  pthread_mutex_unlock(&s->f.mu);
  return attempt <= s->max_fast ? s->fast_ns : s->slow_ns;
}

static void fast_slow_forget(kin_rate_limiter *rl, const char *item) {
  failures_forget(&((fast_slow *)rl)->f, item);
}

static int fast_slow_num_requeues(kin_rate_limiter *rl, const char *item) {
  return failures_count(&((fast_slow *)rl)->f, item);
}

static void fast_slow_free(kin_rate_limiter *rl) {
  failures_destroy(&((fast_slow *)rl)->f);
  free(rl);
}

static const kin_rate_limiter_vt fast_slow_vt = {fast_slow_when, fast_slow_forget,
                                                 fast_slow_num_requeues, fast_slow_free};

kin_rate_limiter *kin_fast_slow_rate_limiter_new(uint64_t fast_ns, uint64_t slow_ns,
                                                 int max_fast_attempts) {
  fast_slow *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  s->base.vt = &fast_slow_vt;
  s->fast_ns = fast_ns;
  s->slow_ns = slow_ns;
  s->max_fast = max_fast_attempts;
  failures_init(&s->f);
  return &s->base;
}

/* ---- BucketRateLimiter (golang.org/x/time/rate.Limiter.Reserve) ---- */

typedef struct {
  kin_rate_limiter base;
  kin_clock *clock; /* immutable */
  double limit;     /* tokens per second; immutable */
  int burst;        /* immutable */
  pthread_mutex_t mu; /* guards tokens and last */
  double tokens;
  uint64_t last_ns;
} bucket;

/* x/time/rate's InfDuration: a reservation that can never be honoured. */
#define INF_DURATION ((uint64_t)INT64_MAX)

static uint64_t duration_from_tokens(double limit, double tokens) {
  if (limit <= 0) return INF_DURATION;
  double ns = tokens / limit * 1e9;
  return ns >= (double)INT64_MAX ? INF_DURATION : (uint64_t)ns;
}

static uint64_t bucket_when(kin_rate_limiter *rl, const char *item) {
  bucket *b = (bucket *)rl;
  uint64_t wait = 0;
  pthread_mutex_lock(&b->mu);
  uint64_t now = kin_clock_now(b->clock);
  if (isinf(b->limit) && b->limit > 0) goto out;
  /* advance: refill for the time since the last reservation, up to burst */
  uint64_t last = b->last_ns < now ? b->last_ns : now;
  double tokens = b->tokens + (b->limit > 0 ? (double)(now - last) / 1e9 * b->limit : 0);
  if (tokens > b->burst) tokens = b->burst;
  tokens -= 1;
  if (tokens < 0) wait = duration_from_tokens(b->limit, -tokens);
  /* A token more than burst, or one that never comes, is refused without
   * touching the state; its delay is InfDuration. */
  if (b->burst < 1 || wait == INF_DURATION) {
    wait = INF_DURATION;
    goto out;
  }
  b->last_ns = now;
  b->tokens = tokens;
out:
  pthread_mutex_unlock(&b->mu);
  return wait;
}

static void bucket_forget(kin_rate_limiter *rl, const char *item) {}

static int bucket_num_requeues(kin_rate_limiter *rl, const char *item) { return 0; }

static void bucket_free(kin_rate_limiter *rl) {
  pthread_mutex_destroy(&((bucket *)rl)->mu);
  free(rl);
}

static const kin_rate_limiter_vt bucket_vt = {bucket_when, bucket_forget, bucket_num_requeues,
                                              bucket_free};

kin_rate_limiter *kin_bucket_rate_limiter_new(double qps, int burst, kin_clock *clock) {
  bucket *b = calloc(1, sizeof(*b));
  if (!b) return NULL;
  b->base.vt = &bucket_vt;
  b->clock = clock ? clock : kin_clock_real();
  b->limit = qps;
  b->burst = burst;
  b->tokens = burst;
  b->last_ns = kin_clock_now(b->clock);
  pthread_mutex_init(&b->mu, NULL);
  return &b->base;
}

/* ---- MaxOfRateLimiter ---- */

typedef struct {
  kin_rate_limiter base;
  int n;                   /* immutable, as are the limiters themselves */
  kin_rate_limiter *rl[];  /* owned; each has its own lock */
} max_of;

static uint64_t max_of_when(kin_rate_limiter *rl, const char *item) {
  max_of *m = (max_of *)rl;
  uint64_t ret = 0;
  /* Every limiter must see the failure, so no short cut. */
  for (int i = 0; i < m->n; i++) {
    uint64_t d = kin_rate_limiter_when(m->rl[i], item);
    if (d > ret) ret = d;
  }
  return ret;
}

static void max_of_forget(kin_rate_limiter *rl, const char *item) {
  max_of *m = (max_of *)rl;
  for (int i = 0; i < m->n; i++) kin_rate_limiter_forget(m->rl[i], item);
}

static int max_of_num_requeues(kin_rate_limiter *rl, const char *item) {
  max_of *m = (max_of *)rl;
  int ret = 0;
  for (int i = 0; i < m->n; i++) {
    int n = kin_rate_limiter_num_requeues(m->rl[i], item);
    if (n > ret) ret = n;
  }
  return ret;
}

static void max_of_free(kin_rate_limiter *rl) {
  max_of *m = (max_of *)rl;
  for (int i = 0; i < m->n; i++) kin_rate_limiter_free(m->rl[i]);
  free(m);
}

static const kin_rate_limiter_vt max_of_vt = {max_of_when, max_of_forget, max_of_num_requeues,
                                              max_of_free};

/* Takes ownership of limiters[0..n); if any of them is NULL (its own
 * constructor failed) or memory runs out, all are freed and NULL returned. */
kin_rate_limiter *kin_max_of_rate_limiter_new(kin_rate_limiter **limiters, int n) {
  int ok = n >= 0;
  for (int i = 0; ok && i < n; i++) ok = limiters[i] != NULL;
  max_of *m = ok ? calloc(1, sizeof(*m) + (size_t)n * sizeof(m->rl[0])) : NULL;
  if (!m) {
    for (int i = 0; i < n; i++) kin_rate_limiter_free(limiters[i]);
    return NULL;
  }
  m->base.vt = &max_of_vt;
  m->n = n;
  for (int i = 0; i < n; i++) m->rl[i] = limiters[i];
  return &m->base;
}

/* ---- WithMaxWaitRateLimiter ---- */

typedef struct {
  kin_rate_limiter base;
  kin_rate_limiter *inner; /* owned; immutable */
  uint64_t max_wait_ns;    /* immutable */
} with_max_wait;

static uint64_t with_max_wait_when(kin_rate_limiter *rl, const char *item) {
  with_max_wait *w = (with_max_wait *)rl;
  uint64_t d = kin_rate_limiter_when(w->inner, item);
  return d > w->max_wait_ns ? w->max_wait_ns : d;
}

static void with_max_wait_forget(kin_rate_limiter *rl, const char *item) {
  kin_rate_limiter_forget(((with_max_wait *)rl)->inner, item);
}

static int with_max_wait_num_requeues(kin_rate_limiter *rl, const char *item) {
  return kin_rate_limiter_num_requeues(((with_max_wait *)rl)->inner, item);
}

static void with_max_wait_free(kin_rate_limiter *rl) {
  kin_rate_limiter_free(((with_max_wait *)rl)->inner);
  free(rl);
}

static const kin_rate_limiter_vt with_max_wait_vt = {
    with_max_wait_when, with_max_wait_forget, with_max_wait_num_requeues, with_max_wait_free};

/* Takes ownership of inner; frees it and returns NULL when inner is NULL
 * or memory runs out. */
kin_rate_limiter *kin_with_max_wait_rate_limiter_new(kin_rate_limiter *inner,
                                                     uint64_t max_wait_ns) {
  with_max_wait *w = inner ? calloc(1, sizeof(*w)) : NULL;
  if (!w) {
    kin_rate_limiter_free(inner);
    return NULL;
  }
  w->base.vt = &with_max_wait_vt;
  w->inner = inner;
  w->max_wait_ns = max_wait_ns;
  return &w->base;
}

/* ---- DefaultControllerRateLimiter ---- */

kin_rate_limiter *kin_default_controller_rate_limiter_new(kin_clock *clock) {
  kin_rate_limiter *rl[2] = {
      kin_exponential_rate_limiter_new(5 * KIN_NSEC_PER_MSEC, 1000 * KIN_NSEC_PER_SEC),
      kin_bucket_rate_limiter_new(10, 100, clock),
  };
  return kin_max_of_rate_limiter_new(rl, 2);
}
