/* backoff.c -- wait.Backoff and the exponential BackoffManager (see
 * backoff.h). */
#include "backoff.h"

#include <stdatomic.h>
#include <time.h>

static uint64_t seed(void) {
  /* Distinct per call even within one clock tick, so two reflectors
   * started together do not back off in lockstep. */
  static atomic_uint_fast64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t s = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^
               (atomic_fetch_add(&counter, 1) + 1) * 0x9E3779B97F4A7C15ULL;
  return s ? s : 0x2545F4914F6CDD1DULL;
}

double kin_rand_float(uint64_t *rng) {
  if (!*rng) *rng = seed();
  uint64_t x = *rng; /* xorshift64* */
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *rng = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0; /* / 2^53 */
}

uint64_t kin_jitter(uint64_t d, double max_factor, uint64_t *rng) {
  if (max_factor <= 0.0) max_factor = 1.0;
  return d + (uint64_t)(kin_rand_float(rng) * max_factor * (double)d);
}

uint64_t kin_backoff_step(kin_backoff *b) {
  if (!b) return 0;
  if (b->steps < 1) {
    if (b->jitter > 0) return kin_jitter(b->duration_ns, b->jitter, &b->rng);
    return b->duration_ns;
  }
  b->steps--;
  uint64_t d = b->duration_ns;
  if (b->factor != 0) {
    double next = (double)d * b->factor;
    if (b->cap_ns > 0 && next > (double)b->cap_ns) {
      b->duration_ns = b->cap_ns;
      b->steps = 0;
    } else {
      b->duration_ns = next >= 1.8e19 ? UINT64_MAX : (uint64_t)next;
    }
  }
  if (b->jitter > 0) d = kin_jitter(d, b->jitter, &b->rng);
  return d;
}

void kin_backoff_manager_init(kin_backoff_manager *m, uint64_t initial_ns, uint64_t max_ns,
                              uint64_t reset_ns, double factor, double jitter, kin_clock *clock) {
  m->clock = clock ? clock : kin_clock_real();
  m->initial_ns = initial_ns;
  m->reset_ns = reset_ns;
  /* As client-go: "never" run out of steps, so the cap is what stops it. */
  m->backoff = (kin_backoff){.duration_ns = initial_ns, .factor = factor, .jitter = jitter,
                             .steps = INT32_MAX, .cap_ns = max_ns, .rng = 0};
  m->last_start_ns = kin_clock_now(m->clock);
}

uint64_t kin_backoff_manager_next(kin_backoff_manager *m) {
  uint64_t now = kin_clock_now(m->clock);
  if (now - m->last_start_ns > m->reset_ns) {
    m->backoff.steps = INT32_MAX;
    m->backoff.duration_ns = m->initial_ns;
  }
  m->last_start_ns = now;
  return kin_backoff_step(&m->backoff);
}
