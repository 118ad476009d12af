/* clock.h -- injectable time source. Everything in the core that reads the
 * time or sleeps until a deadline does it through a kin_clock, so tests run
 * the delaying queue, rate limiters and resync timers on a fake clock
 * without sleeping.
 *
 * Times are nanoseconds on a monotonic scale. All functions are thread-safe. */
#ifndef KIN_CLOCK_H
#define KIN_CLOCK_H

#include <pthread.h>
#include <stdint.h>

#define KIN_FOREVER UINT64_MAX

typedef struct kin_clock kin_clock;

/* Returns the process-wide real monotonic clock (never freed). */
kin_clock *kin_clock_real(void);

/* Returns a new fake clock set to start_ns, or NULL on allocation failure.
 * Free with kin_fake_clock_free once nothing uses it. */
kin_clock *kin_fake_clock_new(uint64_t start_ns);
void kin_fake_clock_free(kin_clock *c);
/* Advances (step) or sets a fake clock and wakes every subscribed waiter. */
void kin_fake_clock_step(kin_clock *c, uint64_t d_ns);
void kin_fake_clock_set(kin_clock *c, uint64_t t_ns);
/* Returns how many threads are blocked in kin_clock_wait on this fake clock
 * with a finite deadline (tests wait for this before stepping). */
int kin_fake_clock_waiters(kin_clock *c);

uint64_t kin_clock_now(kin_clock *c);

/* Initialises a condition variable for use with kin_clock_wait (it must
 * time out on the monotonic clock). Returns 0 or a negative errno. */
int kin_cond_init(pthread_cond_t *cond);

/* Initialises a mutex for a short, hot critical section that two running
 * threads take in turns (a workqueue, a controller's history): it spins a
 * little before sleeping in the kernel (glibc's adaptive mutex), so a
 * handoff between two busy threads costs no futex wait and wake. Returns 0
 * or a negative errno. Thread-safe (it touches only m). */
int kin_mutex_init_hot(pthread_mutex_t *m);

/* Registers cond/mutex so that a fake clock broadcasts cond (with mutex
 * held) whenever its time moves; a no-op on the real clock. Every object
 * that calls kin_clock_wait with a deadline subscribes once, when it is
 * created, and unsubscribes before destroying cond. Returns 0 or
 * KIN_ENOMEM. */
int kin_clock_subscribe(kin_clock *c, pthread_cond_t *cond, pthread_mutex_t *m);
void kin_clock_unsubscribe(kin_clock *c, pthread_cond_t *cond);

/* Waits on cond (m held by the caller) until it is signalled or the clock
 * reaches deadline_ns (KIN_FOREVER: no deadline). Spurious wake-ups are
 * possible, so callers loop on their condition. Returns 0 when woken,
 * KIN_ETIMEDOUT when the deadline has passed. */
int kin_clock_wait(kin_clock *c, pthread_cond_t *cond, pthread_mutex_t *m,
                   uint64_t deadline_ns);

#endif
