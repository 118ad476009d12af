/* leader_election.c -- client-go's LeaderElector over a LeaseLock
 * (leader_election.h): acquire, renew, release, the observed record and
 * its expiry on the local monotonic clock. */
#include "leader_election.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "call_ctx.h"
#include "kin.h"
#include "kobj.h"
#include "le_record.h"
#include "log.h"
#include "util.h"

#define NS_PER_S 1000000000ull

struct kin_leader_elector {
  /* Immutable after new. */
  kin_client *client;
  kin_clock *clock;
  char *name, *ns, *identity, *path, *collection;
  uint64_t lease_ns, renew_ns, retry_ns;
  int release_on_cancel, rejoin;
  void (*on_started)(void *);
  void (*on_stopped)(void *, int);
  void (*on_new_leader)(void *, const char *);
  void *ud;
  kin_fence *fence;      /* borrowed; NULL: none (thread-safe itself) */
  /* Elector thread only. */
  uint64_t epoch;        /* the fence's epoch this term opened; 0: none */
  uint64_t held_ns;      /* kin_clock time the last successful acquire or
                            renewal attempt started (before its request) */
  kin_obj *lease;        /* the Lease as last read or written (update base) */
  char *reported_leader; /* the holder last given to on_new_leader */
  unsigned rand_state;
  /* Guarded by mu. */
  pthread_mutex_t mu;
  pthread_cond_t cond;   /* signalled on stop */
  kin__le_record observed;    /* the record last observed */
  uint64_t observed_ns;  /* kin_clock time it was last seen to change */
  int stop, abandon, started, joined;
  uint64_t acquisitions, losses;
  /* Atomic: read by the metrics gauge without the lock. */
  atomic_int leading;
  atomic_int running;
  kin_io_canceler cancel; /* fired on stop: ends the request in flight */
  pthread_t thread;
};

/* ---- identity ------------------------------------------------------------- */

int kin_leader_election_default_identity(char *buf, size_t n) {
  char host[256] = "";
  if (gethostname(host, sizeof(host) - 1) != 0 || !host[0]) snprintf(host, sizeof(host), "kinformer");
  unsigned char u[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t got = fd >= 0 ? read(fd, u, sizeof(u)) : -1;
  if (fd >= 0) close(fd);
  if (got != (ssize_t)sizeof(u)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned s = (unsigned)ts.tv_nsec ^ (unsigned)getpid() ^ (unsigned)ts.tv_sec;
    for (size_t i = 0; i < sizeof(u); i++) u[i] = (unsigned char)(rand_r(&s) >> 7);
  }
  u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
  u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  int w = snprintf(buf, n,
                   "%s_%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", host,
                   u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                   u[13], u[14], u[15]);
  return w < 0 || (size_t)w >= n ? KIN_EINVAL : 0;
}

/* ---- requests ------------------------------------------------------------- */

/* The time left to deadline_ns on the elector's clock as a request timeout
 * in ms (at least 1); deadline 0: the client's default. */
static long timeout_to(kin_leader_elector *le, uint64_t deadline_ns) {
  if (!deadline_ns) return 0;
  uint64_t now = kin_clock_now(le->clock);
  if (now >= deadline_ns) return 1;
  long ms = (long)((deadline_ns - now) / 1000000u);
  return ms > 0 ? ms : 1;
}

/* Sends one request; on success replaces le->lease with the answer.
 * Returns 0, KIN_ESTATUS (res->code says which: 404, 409...), a transport
 * error or KIN_ECANCELED. res is the caller's to free. */
static int lease_request(kin_leader_elector *le, const char *method, const char *path,
                         const char *body, size_t len, uint64_t deadline_ns,
                         kin_io_canceler *cx, kin_result *res) {
  kin_client_request req = {.method = method,
                            .path = path,
                            .body = body,
                            .body_len = len,
                            .timeout_ms = timeout_to(le, deadline_ns),
                            .idempotent = strcmp(method, "POST") != 0,
                            .cancel = cx,
                            .unlimited = 1};
  int rc = kin_client_do(le->client, &req, res);
  if (rc < 0) return rc;
  kin_obj *o = NULL;
  if (!res->body || kin_obj_parse(res->body, res->body_len, &o) < 0) return KIN_EINVAL;
  kin_obj_unref(le->lease);
  le->lease = o;
  return 0;
}

/* Writes r: an update of le->lease with its resourceVersion, or a create
 * when there is none (create). Returns as lease_request. */
static int lease_write(kin_leader_elector *le, const kin__le_record *r, int create,
                       uint64_t deadline_ns, kin_io_canceler *cx, kin_result *res) {
  kin__buf b = {0};
  if (create) {
    kin__buf_puts(&b, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{"
                      "\"name\":");
    kin__le_add_json_string(&b, le->name);
    kin__buf_puts(&b, ",\"namespace\":");
    kin__le_add_json_string(&b, le->ns);
    kin__buf_puts(&b, "},\"spec\":");
    kin__le_add_spec(&b, r);
    kin__buf_puts(&b, "}");
  } else {
    /* the Lease as read, its spec replaced: metadata (resourceVersion,
     * labels, annotations) goes back unchanged */
    size_t len;
    const char *js = kin_obj_json(le->lease, &len);
    kin_span sp = kin_obj_spec_span(le->lease);
    if (sp.len) {
      kin__buf_add(&b, js, sp.off);
      kin__le_add_spec(&b, r);
      kin__buf_add(&b, js + sp.off + sp.len, len - sp.off - sp.len);
    } else {
      const char *brace = memchr(js, '{', len);
      if (!brace) {
        memset(res, 0, sizeof(*res));
        return KIN_EINVAL;
      }
      size_t at = (size_t)(brace - js) + 1;
      kin__buf_add(&b, js, at);
      kin__buf_puts(&b, "\"spec\":");
      kin__le_add_spec(&b, r);
      kin__buf_puts(&b, ",");
      kin__buf_add(&b, js + at, len - at);
    }
  }
  if (b.oom) {
    kin__buf_free(&b);
    memset(res, 0, sizeof(*res));
    return KIN_ENOMEM;
  }
  int rc = lease_request(le, create ? "POST" : "PUT", create ? le->collection : le->path, b.p,
                         b.len, deadline_ns, cx, res);
  kin__buf_free(&b);
  return rc;
}

/* Logs a failed request at level, naming what was tried. */
static void log_failure(kin_leader_elector *le, kin_log_level level, const char *what, int rc,
                        const kin_result *res) {
  if (rc == KIN_ECANCELED) return;
  kin_log(level, "leaderelection", "lease %s/%s: %s: %s%s%s", le->ns, le->name, what,
          res->code ? kin_status_reason_for_code(res->code) : kin_strerror(rc),
          res->message ? ": " : "", res->message ? res->message : "");
}

/* Records r as observed now (client-go's setObservedRecord). */
static void set_observed(kin_leader_elector *le, const kin__le_record *r) {
  pthread_mutex_lock(&le->mu);
  if (kin__le_record_copy(&le->observed, r) == 0) le->observed_ns = kin_clock_now(le->clock);
  pthread_mutex_unlock(&le->mu);
}

/* 1 when the observed record names this candidate (client-go's IsLeader). */
static int holds_lease(kin_leader_elector *le) {
  pthread_mutex_lock(&le->mu);
  int yes = le->observed.holder && !strcmp(le->observed.holder, le->identity);
  pthread_mutex_unlock(&le->mu);
  return yes;
}

/* 1 while the observed record has not expired: less than its
 * leaseDurationSeconds passed since it was last seen to change. */
static int lease_valid(kin_leader_elector *le, uint64_t now) {
  pthread_mutex_lock(&le->mu);
  uint64_t until = le->observed_ns + (uint64_t)(le->observed.duration > 0 ? le->observed.duration : 0) * NS_PER_S;
  int valid = le->observed_ns && until > now;
  pthread_mutex_unlock(&le->mu);
  return valid;
}

/* What try_acquire_or_renew found. */
enum { LE_NOT_HELD = 0, LE_HELD = 1, LE_OTHER = 2 };

/* client-go's tryAcquireOrRenew: returns LE_HELD when this candidate holds
 * the Lease afterwards, LE_OTHER when the Lease read names another holder
 * whose record has not expired, LE_NOT_HELD when the attempt failed
 * otherwise (a request failed, a race lost). Requests are bounded by
 * deadline_ns (0: none). */
static int try_acquire_or_renew(kin_leader_elector *le, uint64_t deadline_ns) {
  char now_s[40];
  kin__le_micro_time_now(now_s, sizeof(now_s));
  long long dur = (long long)(le->lease_ns / NS_PER_S);
  kin__le_record want = {le->identity, dur < 1 ? 1 : dur, now_s, now_s, 0};
  kin_result res;
  uint64_t now = kin_clock_now(le->clock);
  /* 1. the leader's fast path: update the Lease last written */
  if (holds_lease(le) && lease_valid(le, now) && le->lease) {
    pthread_mutex_lock(&le->mu);
    char *acq = strdup(le->observed.acquire ? le->observed.acquire : "");
    want.transitions = le->observed.transitions;
    pthread_mutex_unlock(&le->mu);
    if (acq) {
      want.acquire = acq;
      int rc = lease_write(le, &want, 0, deadline_ns, &le->cancel, &res);
      if (rc == 0) set_observed(le, &want);
      else log_failure(le, res.code == 409 ? KIN_LOG_DEBUG : KIN_LOG_WARN,
                       "optimistic renewal failed, falling back to a read", rc, &res);
      kin_result_free(&res);
      want.acquire = now_s;
      free(acq);
      if (rc == 0) return LE_HELD;
    }
    /* its deadline passed meanwhile: nothing more can be done in time */
    if (deadline_ns && kin_clock_now(le->clock) >= deadline_ns) return LE_NOT_HELD;
  }
  /* 2. read the record, or create the Lease */
  int rc = lease_request(le, "GET", le->path, NULL, 0, deadline_ns, &le->cancel, &res);
  if (rc < 0) {
    if (res.code != 404) {
      log_failure(le, KIN_LOG_WARN, "reading the lease failed", rc, &res);
      kin_result_free(&res);
      return LE_NOT_HELD;
    }
    kin_result_free(&res);
    rc = lease_write(le, &want, 1, deadline_ns, &le->cancel, &res);
    if (rc < 0) log_failure(le, res.code == 409 ? KIN_LOG_DEBUG : KIN_LOG_WARN,
                            "creating the lease failed", rc, &res);
    kin_result_free(&res);
    if (rc < 0) return LE_NOT_HELD;
    set_observed(le, &want);
    return LE_HELD;
  }
  kin_result_free(&res);
  kin__le_record old;
  if (kin__le_lease_record(le->lease, &old) < 0) {
    kin_log(KIN_LOG_WARN, "leaderelection", "lease %s/%s: cannot read its spec", le->ns, le->name);
    return LE_NOT_HELD;
  }
  /* 3. a changed record restarts its expiry on our clock */
  pthread_mutex_lock(&le->mu);
  int changed = !le->observed_ns || !kin__le_record_equal(&le->observed, &old);
  pthread_mutex_unlock(&le->mu);
  if (changed) set_observed(le, &old);
  now = kin_clock_now(le->clock);
  int mine = !strcmp(old.holder, le->identity);
  if (old.holder[0] && lease_valid(le, now) && !mine) {
    kin__le_record_free(&old);
    return LE_OTHER;
  }
  /* 4. take it over (or renew it through the slow path) */
  char *acq = NULL;
  if (mine) {
    acq = old.acquire;
    old.acquire = NULL;
    want.acquire = acq;
    want.transitions = old.transitions;
  } else {
    want.transitions = old.transitions + 1;
  }
  kin__le_record_free(&old);
  rc = lease_write(le, &want, 0, deadline_ns, &le->cancel, &res);
  if (rc < 0) log_failure(le, res.code == 409 ? KIN_LOG_DEBUG : KIN_LOG_WARN,
                          "updating the lease failed", rc, &res);
  kin_result_free(&res);
  if (rc == 0) set_observed(le, &want);
  free(acq);
  return rc == 0 ? LE_HELD : LE_NOT_HELD;
}

/* client-go's release (tryRelease): reads the Lease, then writes the
 * record with no holder and a lease of 1 s, keeping leaseTransitions;
 * a 409 (a renewal cut short by the stop may have been applied
 * meanwhile) reads and tries again, all bounded by the renew deadline and
 * never cancelled by the stop. Unlike client-go it also leaves alone a
 * Lease whose fresh read names another holder. */
static void release(kin_leader_elector *le) {
  if (!holds_lease(le)) return;
  uint64_t deadline = kin_clock_now(le->clock) + le->renew_ns;
  for (;;) {
    kin_result res;
    int rc = lease_request(le, "GET", le->path, NULL, 0, deadline, NULL, &res);
    kin__le_record cur = {0};
    if (rc == 0) rc = kin__le_lease_record(le->lease, &cur);
    if (rc < 0) {
      if (res.code != 404) /* gone: nothing to release */
        log_failure(le, KIN_LOG_ERROR, "releasing the lease failed: reading it", rc, &res);
      kin_result_free(&res);
      return;
    }
    kin_result_free(&res);
    int mine = !strcmp(cur.holder, le->identity);
    long long tr = cur.transitions;
    kin__le_record_free(&cur);
    if (!mine) return; /* someone else holds it now: nothing to release */
    char now_s[40];
    kin__le_micro_time_now(now_s, sizeof(now_s));
    kin__le_record r = {"", 1, now_s, now_s, tr};
    rc = lease_write(le, &r, 0, deadline, NULL, &res);
    if (rc == 0) {
      set_observed(le, &r);
      kin_log(KIN_LOG_INFO, "leaderelection", "lease %s/%s: released by %s", le->ns, le->name,
              le->identity);
    } else if (res.code == 409 && kin_clock_now(le->clock) < deadline) {
      kin_result_free(&res);
      continue;
    } else {
      log_failure(le, KIN_LOG_ERROR, "releasing the lease failed", rc, &res);
    }
    kin_result_free(&res);
    return;
  }
}

/* client-go's maybeReportTransition. */
static void report_transition(kin_leader_elector *le) {
  pthread_mutex_lock(&le->mu);
  char *holder = strdup(le->observed.holder ? le->observed.holder : "");
  pthread_mutex_unlock(&le->mu);
  if (!holder) return;
  /* the first report is of a holder: "" is where client-go starts */
  if (!strcmp(le->reported_leader ? le->reported_leader : "", holder)) {
    free(holder);
    return;
  }
  free(le->reported_leader);
  le->reported_leader = holder;
  if (holder[0])
    kin_log(KIN_LOG_INFO, "leaderelection", "lease %s/%s: new leader %s", le->ns, le->name, holder);
  if (le->on_new_leader) le->on_new_leader(le->ud, holder);
}

/* Sleeps until d_ns passed on the elector's clock or stop. Returns 1 when
 * stopped. */
static int sleep_for(kin_leader_elector *le, uint64_t d_ns) {
  uint64_t until = kin_clock_now(le->clock) + d_ns;
  pthread_mutex_lock(&le->mu);
  while (!le->stop && kin_clock_now(le->clock) < until)
    kin_clock_wait(le->clock, &le->cond, &le->mu, until);
  int stop = le->stop;
  pthread_mutex_unlock(&le->mu);
  return stop;
}

static int stopping(kin_leader_elector *le) {
  pthread_mutex_lock(&le->mu);
  int s = le->stop;
  pthread_mutex_unlock(&le->mu);
  return s;
}

/* How long a candidate that does not hold the Lease waits before its next
 * try. client-go waits a jittered retry period (wait.Jitter(retry, 1.2):
 * 1 to 2.2 times retry), so it notices a renewal up to 2.2 x retry late
 * (and expiry is measured from that observation) and tries again up to
 * 2.2 x retry after expiry. Here: 0.5 to 0.9 x retry, still at random so
 * candidates do not ask in step, and never past the observed record's
 * expiry (+1 ms): a takeover after a crash comes within lease duration +
 * retry period of the last renewal. */
static uint64_t follower_wait(kin_leader_elector *le) {
  double f = (double)rand_r(&le->rand_state) / ((double)RAND_MAX + 1.0);
  uint64_t d = le->retry_ns / 2 + (uint64_t)(f * 0.4 * (double)le->retry_ns);
  pthread_mutex_lock(&le->mu);
  uint64_t dur = (uint64_t)(le->observed.duration > 0 ? le->observed.duration : 0) * NS_PER_S;
  uint64_t until = le->observed_ns ? le->observed_ns + dur : 0;
  pthread_mutex_unlock(&le->mu);
  uint64_t now = kin_clock_now(le->clock), ms = NS_PER_S / 1000;
  if (until > now && until - now + ms < d) d = until - now + ms;
  return d;
}

/* CLOCK_MONOTONIC now, in ns: the fence's time base, whatever le->clock is. */
static uint64_t mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* After a successful acquire or renewal whose attempt started at start
 * (le->clock) and mono (CLOCK_MONOTONIC), both read before its first
 * request: opens the fence's epoch (acquire) or moves its bound (renewal)
 * to mono + the renew deadline. Another candidate counts the lease from a
 * record it saw change, which is no earlier than that start, so it cannot
 * take over before start + lease duration: the lease duration minus the
 * renew deadline is the margin left for clock rates and for a write that
 * passed the fence just before the bound and is still on its way. */
static void fence_hold(kin_leader_elector *le, uint64_t start, uint64_t mono) {
  le->held_ns = start;
  if (!le->fence) return;
  if (!le->epoch) le->epoch = kin_fence_open(le->fence, mono + le->renew_ns);
  else kin_fence_renew(le->fence, le->epoch, mono + le->renew_ns); /* closed: stays so */
}

/* Ends the term's epoch: from now on every write made in it is refused. */
static void fence_drop(kin_leader_elector *le) {
  if (le->fence && le->epoch) kin_fence_close(le->fence);
  le->epoch = 0;
}

/* Why a leader's renew loop ended. */
enum { TERM_STOPPED, TERM_DEADLINE, TERM_OTHER, TERM_PAUSED };

/* client-go's renew loop: every retry period, try to renew until the renew
 * deadline, which here runs from the start of the last successful attempt
 * (held_ns; client-go starts it afresh after each retry period's sleep),
 * so the elector gives up exactly when the fence's time bound passes.
 * Unlike client-go, a read that shows another valid holder ends the term
 * at once, and so does finding the deadline passed before trying at all
 * (the thread did not run: the process was paused). Returns a TERM_*. */
static int renew_loop(kin_leader_elector *le) {
  for (;;) {
    uint64_t deadline = le->held_ns + le->renew_ns;
    int r = LE_NOT_HELD, tries = 0;
    while (!stopping(le)) {
      uint64_t start = kin_clock_now(le->clock), mono = mono_now();
      if (start >= deadline) break;
      tries++;
      r = try_acquire_or_renew(le, deadline);
      if (r == LE_HELD) fence_hold(le, start, mono);
      if (r != LE_NOT_HELD) break;
      uint64_t now = kin_clock_now(le->clock);
      if (now >= deadline) break;
      if (sleep_for(le, deadline - now < le->retry_ns ? deadline - now : le->retry_ns)) break;
    }
    report_transition(le);
    if (stopping(le)) return TERM_STOPPED;
    if (r == LE_OTHER) return TERM_OTHER;
    if (r != LE_HELD) return tries ? TERM_DEADLINE : TERM_PAUSED;
    if (sleep_for(le, le->retry_ns)) return TERM_STOPPED;
  }
}

/* Logs why the term ended (an error: the controllers stop). */
static void log_loss(kin_leader_elector *le, int why) {
  if (why == TERM_OTHER) {
    pthread_mutex_lock(&le->mu);
    char *holder = strdup(le->observed.holder ? le->observed.holder : "");
    pthread_mutex_unlock(&le->mu);
    kin_log(KIN_LOG_ERROR, "leaderelection",
            "lease %s/%s: now held by %s: %s stops at once: leadership lost", le->ns, le->name,
            holder ? holder : "another candidate", le->identity);
    free(holder);
  } else if (why == TERM_PAUSED) {
    kin_log(KIN_LOG_ERROR, "leaderelection",
            "lease %s/%s: %s did not run for %.1f s, past its renew deadline (%.1f s): the "
            "process was paused? leadership lost", le->ns, le->name, le->identity,
            (double)(kin_clock_now(le->clock) - le->held_ns) / 1e9, (double)le->renew_ns / 1e9);
  } else {
    kin_log(KIN_LOG_ERROR, "leaderelection",
            "lease %s/%s: %s failed to renew it within the renew deadline: leadership lost",
            le->ns, le->name, le->identity);
  }
}

static void *elector_main(void *arg) {
  kin_leader_elector *le = arg;
  while (!stopping(le)) {
    /* acquire: try every 0.5-0.9 retry period, and at the observed expiry;
     * an attempt is bounded by the renew deadline (a later success would
     * leave nothing of the term) */
    int got = 0;
    uint64_t start = 0, mono = 0;
    while (!stopping(le)) {
      start = kin_clock_now(le->clock);
      mono = mono_now();
      got = try_acquire_or_renew(le, start + le->renew_ns) == LE_HELD;
      report_transition(le);
      if (got) break;
      if (sleep_for(le, follower_wait(le))) break;
    }
    if (!got) break;
    fence_hold(le, start, mono); /* the epoch opens before anyone is told */
    pthread_mutex_lock(&le->mu);
    le->acquisitions++;
    pthread_mutex_unlock(&le->mu);
    atomic_store(&le->leading, 1);
    kin_log(KIN_LOG_INFO, "leaderelection", "lease %s/%s: acquired by %s", le->ns, le->name,
            le->identity);
    if (le->on_started) le->on_started(le->ud);
    int why = renew_loop(le);
    fence_drop(le); /* before the release, the log and the callbacks */
    if (why == TERM_STOPPED) {
      pthread_mutex_lock(&le->mu);
      int abandon = le->abandon;
      pthread_mutex_unlock(&le->mu);
      if (le->release_on_cancel && !abandon) release(le);
      atomic_store(&le->leading, 0);
      if (le->on_stopped) le->on_stopped(le->ud, 0);
      break;
    }
    pthread_mutex_lock(&le->mu);
    le->losses++;
    pthread_mutex_unlock(&le->mu);
    atomic_store(&le->leading, 0);
    log_loss(le, why);
    if (le->on_stopped) le->on_stopped(le->ud, 1);
    if (!le->rejoin) break;
  }
  fence_drop(le);
  atomic_store(&le->running, 0);
  return NULL;
}

/* ---- lifecycle -------------------------------------------------------------- */

int kin_leader_elector_new(kin_client *c, const kin_leader_election_opts *o,
                           kin_leader_elector **out, char *err, size_t errlen) {
  *out = NULL;
  if (!c || !o || !o->name || !*o->name) {
    kin__errf(err, errlen, "leader election: a lease name is required");
    return KIN_EINVAL;
  }
  uint64_t lease = o->lease_duration_ns ? o->lease_duration_ns : KIN_LE_DEFAULT_LEASE_DURATION_NS;
  uint64_t renew = o->renew_deadline_ns ? o->renew_deadline_ns : KIN_LE_DEFAULT_RENEW_DEADLINE_NS;
  uint64_t retry = o->retry_period_ns ? o->retry_period_ns : KIN_LE_DEFAULT_RETRY_PERIOD_NS;
  if (lease <= renew) {
    kin__errf(err, errlen, "leader election: lease_duration must be greater than renew_deadline");
    return KIN_EINVAL;
  }
  if ((double)renew <= KIN_LE_JITTER_FACTOR * (double)retry) {
    kin__errf(err, errlen,
              "leader election: renew_deadline must be greater than retry_period*%.1f",
              KIN_LE_JITTER_FACTOR);
    return KIN_EINVAL;
  }
  if (lease < NS_PER_S) {
    kin__errf(err, errlen, "leader election: lease_duration must be at least 1 second "
                           "(the Lease holds whole seconds)");
    return KIN_EINVAL;
  }
  kin_leader_elector *le = calloc(1, sizeof(*le));
  if (!le) return KIN_ENOMEM;
  char idbuf[512];
  const char *id = o->identity;
  if (!id || !*id) {
    kin_leader_election_default_identity(idbuf, sizeof(idbuf));
    id = idbuf;
  }
  const char *ns = o->namespace && *o->namespace ? o->namespace : kin_client_namespace(c);
  le->client = c;
  le->clock = o->clock ? o->clock : kin_clock_real();
  le->name = strdup(o->name);
  le->ns = strdup(ns);
  le->identity = strdup(id);
  kin__buf p = {0};
  kin__buf_printf(&p, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
  le->collection = p.oom ? NULL : strdup(p.p);
  kin__buf_printf(&p, "/%s", o->name);
  le->path = p.oom ? NULL : strdup(p.p);
  kin__buf_free(&p);
  le->lease_ns = lease;
  le->renew_ns = renew;
  le->retry_ns = retry;
  le->release_on_cancel = o->release_on_cancel;
  le->rejoin = o->rejoin_after_loss;
  le->on_started = o->on_started_leading;
  le->on_stopped = o->on_stopped_leading;
  le->on_new_leader = o->on_new_leader;
  le->ud = o->ud;
  le->fence = o->fence;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  le->rand_state = (unsigned)ts.tv_nsec ^ (unsigned)(uintptr_t)le;
  pthread_mutex_init(&le->mu, NULL);
  int rc = kin_cond_init(&le->cond);
  if (rc == 0) rc = kin_io_canceler_init(&le->cancel);
  if (rc == 0) rc = kin_clock_subscribe(le->clock, &le->cond, &le->mu);
  if (rc < 0 || !le->name || !le->ns || !le->identity || !le->path || !le->collection) {
    free(le->name);
    free(le->ns);
    free(le->identity);
    free(le->path);
    free(le->collection);
    free(le);
    return rc < 0 ? rc : KIN_ENOMEM;
  }
  *out = le;
  return 0;
}

int kin_leader_elector_start(kin_leader_elector *le) {
  pthread_mutex_lock(&le->mu);
  if (le->started) {
    pthread_mutex_unlock(&le->mu);
    return KIN_EBUSY;
  }
  le->started = 1;
  atomic_store(&le->running, 1);
  int rc = pthread_create(&le->thread, NULL, elector_main, le);
  if (rc != 0) {
    le->started = 0;
    atomic_store(&le->running, 0);
  }
  pthread_mutex_unlock(&le->mu);
  return rc ? -rc : 0;
}

/* Ends the thread (abandon: without release) and joins it. */
static void stop_thread(kin_leader_elector *le, int abandon) {
  pthread_mutex_lock(&le->mu);
  int join = le->started && !le->joined;
  le->joined = le->joined || le->started;
  le->stop = 1;
  if (abandon) le->abandon = 1;
  pthread_cond_broadcast(&le->cond);
  pthread_mutex_unlock(&le->mu);
  /* a stopping leader acts no more, from now (the thread closes the fence
   * again once its term ended, before any release) */
  if (le->fence) kin_fence_close(le->fence);
  kin_io_canceler_fire(&le->cancel);
  if (join) pthread_join(le->thread, NULL);
}

void kin_leader_elector_stop(kin_leader_elector *le) {
  if (le) stop_thread(le, 0);
}

void kin_leader_elector_abandon(kin_leader_elector *le) {
  if (le) stop_thread(le, 1);
}

void kin_leader_elector_free(kin_leader_elector *le) {
  if (!le) return;
  stop_thread(le, 0);
  kin_clock_unsubscribe(le->clock, &le->cond);
  kin_io_canceler_destroy(&le->cancel);
  pthread_cond_destroy(&le->cond);
  pthread_mutex_destroy(&le->mu);
  kin__le_record_free(&le->observed);
  kin_obj_unref(le->lease);
  free(le->reported_leader);
  free(le->name);
  free(le->ns);
  free(le->identity);
  free(le->path);
  free(le->collection);
  free(le);
}

/* ---- state ------------------------------------------------------------------ */

int kin_leader_elector_is_leader(kin_leader_elector *le) {
  return le ? atomic_load(&le->leading) : 0;
}

const char *kin_leader_elector_name(kin_leader_elector *le) { return le->name; }

void kin_leader_election_state_free(kin_leader_election_state *st) {
  free(st->identity);
  free(st->name);
  free(st->namespace);
  free(st->leader);
  free(st->acquire_time);
  free(st->renew_time);
  memset(st, 0, sizeof(*st));
}

int kin_leader_elector_get_state(kin_leader_elector *le, kin_leader_election_state *st) {
  memset(st, 0, sizeof(*st));
  pthread_mutex_lock(&le->mu);
  st->identity = strdup(le->identity);
  st->name = strdup(le->name);
  st->namespace = strdup(le->ns);
  st->leader = strdup(le->observed.holder ? le->observed.holder : "");
  st->acquire_time = strdup(le->observed.acquire ? le->observed.acquire : "");
  st->renew_time = strdup(le->observed.renew ? le->observed.renew : "");
  st->transitions = le->observed.transitions;
  st->lease_duration_seconds = le->observed.duration;
  st->observed_ns = le->observed_ns;
  st->acquisitions = le->acquisitions;
  st->losses = le->losses;
  pthread_mutex_unlock(&le->mu);
  st->is_leader = atomic_load(&le->leading);
  st->running = atomic_load(&le->running);
  if (!st->identity || !st->name || !st->namespace || !st->leader || !st->acquire_time ||
      !st->renew_time) {
    kin_leader_election_state_free(st);
    return KIN_ENOMEM;
  }
  return 0;
}
