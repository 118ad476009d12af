/* test_leader_election.c -- client-go's leader election on Leases
 * (leader_election.h) against kinformer.sim in-process, with short
 * durations (lease 1 s, renew deadline 0.6 s, retry period 0.2 s): one of
 * three candidates leads; a stop with release hands over; a crashed
 * leader is replaced once its lease expired, never before; a write by
 * someone else (409 for the leader) costs the leadership, counted as a
 * transition when it is won back. The leadership fence (call_ctx.h)
 * follows the term: opened before on_started_leading, held without a gap
 * across renewals, closed at once on a Lease read naming another holder,
 * by its time bound when renewals hang, after a pause (a fake clock's
 * jump) without a request, and on stop. Also the sim's Leases:
 * resourceVersion conflicts and MicroTime kept as written. */
#include "kin_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "call_ctx.h"
#include "kin.h"
#include "leader_election.h"
#include "sim_client.h"

#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/default/leases/le-test"

typedef struct {
  atomic_int started, stopped, lost, new_leader;
  pthread_mutex_t mu;
  char last_leader[256];
  kin_fence *fence;          /* NULL: the elector has none */
  atomic_int fence_at_start; /* the fence held when on_started_leading ran */
  atomic_int fence_at_stop;  /* its epoch was open when on_stopped_leading ran */
} rec;

static void on_started(void *ud) {
  rec *r = ud;
  if (r->fence) atomic_store(&r->fence_at_start, kin_fence_holds(r->fence, kin_fence_epoch(r->fence)));
  atomic_fetch_add(&r->started, 1);
}
static void on_stopped(void *ud, int lost) {
  rec *r = ud;
  if (r->fence) atomic_store(&r->fence_at_stop, kin_fence_epoch(r->fence) != 0);
  atomic_fetch_add(&r->stopped, 1);
  if (lost) atomic_fetch_add(&r->lost, 1);
}
static void on_new_leader(void *ud, const char *id) {
  rec *r = ud;
  pthread_mutex_lock(&r->mu);
  snprintf(r->last_leader, sizeof(r->last_leader), "%s", id);
  pthread_mutex_unlock(&r->mu);
  atomic_fetch_add(&r->new_leader, 1);
}

#define N 3
typedef struct {
  kin_sim *sim;
  kin_client *client;
  kin_leader_elector *le[N];
  rec r[N];
  char id[N][32];
} fx;

static void fx_start(fx *x) {
  memset(x, 0, sizeof(*x));
  x->sim = kin_test_sim_start(0);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(x->sim)};
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, NULL, &x->client, err, sizeof(err)), 0);
  for (int i = 0; i < N; i++) pthread_mutex_init(&x->r[i].mu, NULL);
}

/* Makes and starts candidate i ("cand-i") with durations in ms, on clock
 * (NULL: real), with a fence of its own when fenced (x->r[i].fence). */
static void fx_elector_ex(fx *x, int i, int release, int rejoin, unsigned lease_ms,
                          unsigned renew_ms, unsigned retry_ms, kin_clock *clock, int fenced) {
  snprintf(x->id[i], sizeof(x->id[i]), "cand-%d", i);
  if (fenced) assert_non_null(x->r[i].fence = kin_fence_new());
  kin_leader_election_opts o = {.name = "le-test",
                                .namespace = "default",
                                .identity = x->id[i],
                                .lease_duration_ns = lease_ms * 1000000ull,
                                .renew_deadline_ns = renew_ms * 1000000ull,
                                .retry_period_ns = retry_ms * 1000000ull,
                                .release_on_cancel = release,
                                .rejoin_after_loss = rejoin,
                                .clock = clock,
                                .fence = x->r[i].fence,
                                .on_started_leading = on_started,
                                .on_stopped_leading = on_stopped,
                                .on_new_leader = on_new_leader,
                                .ud = &x->r[i]};
  char err[256] = "";
  assert_int_equal(kin_leader_elector_new(x->client, &o, &x->le[i], err, sizeof(err)), 0);
  assert_int_equal(kin_leader_elector_start(x->le[i]), 0);
}

/* Candidate i with the short durations (lease 1 s, renew deadline 0.6 s,
 * retry 0.2 s) on the real clock, without a fence. */
static void fx_elector(fx *x, int i, int release, int rejoin) {
  fx_elector_ex(x, i, release, rejoin, 1000, 600, 200, NULL, 0);
}

static void fx_stop(fx *x) {
  for (int i = 0; i < N; i++) kin_leader_elector_free(x->le[i]);
  for (int i = 0; i < N; i++) kin_fence_free(x->r[i].fence);
  kin_client_free(x->client);
  kin_sim_free(x->sim);
  for (int i = 0; i < N; i++) pthread_mutex_destroy(&x->r[i].mu);
}

/* How many candidates lead now; *who the last one found. */
static int leaders(fx *x, int *who) {
  int n = 0;
  for (int i = 0; i < N; i++)
    if (x->le[i] && kin_leader_elector_is_leader(x->le[i])) n++, *who = i;
  return n;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int is_micro_time(const char *s) {
  return s && strlen(s) == 27 && s[4] == '-' && s[10] == 'T' && s[19] == '.' && s[26] == 'Z';
}

static void test_le_OneOfThreeLeads(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  for (int i = 0; i < N; i++) fx_elector(&x, i, 1, 0);
  int who = -1;
  KIN_EVENTUALLY(leaders(&x, &who) == 1, 20000);
  /* every candidate sees the same holder, and it stays the one leader
   * over several retry periods */
  for (int i = 0; i < N; i++) {
    KIN_EVENTUALLY(atomic_load(&x.r[i].new_leader) >= 1, 20000);
    pthread_mutex_lock(&x.r[i].mu);
    assert_string_equal(x.r[i].last_leader, x.id[who]);
    pthread_mutex_unlock(&x.r[i].mu);
    assert_int_equal(atomic_load(&x.r[i].new_leader), 1);
  }
  for (int k = 0; k < 10; k++) {
    int w = -1;
    assert_int_equal(leaders(&x, &w), 1);
    assert_int_equal(w, who);
    kin_test_sleep_ms(100);
  }
  KIN_EVENTUALLY(atomic_load(&x.r[who].started) == 1, 5000);
  /* the Lease as the server has it */
  sim_resp r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), x.id[who]);
  assert_int_equal(jint(r.json, "spec.leaseDurationSeconds"), 1);
  assert_int_equal(jint(r.json, "spec.leaseTransitions"), 0);
  assert_true(is_micro_time(jstr(r.json, "spec.acquireTime")));
  assert_true(is_micro_time(jstr(r.json, "spec.renewTime")));
  sim_resp_free(&r);
  kin_leader_election_state st;
  assert_int_equal(kin_leader_elector_get_state(x.le[(who + 1) % N], &st), 0);
  assert_string_equal(st.leader, x.id[who]);
  assert_int_equal(st.is_leader, 0);
  assert_int_equal(st.running, 1);
  kin_leader_election_state_free(&st);
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("error "), 0);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

static void test_le_ReleaseHandsOver(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  fx_elector(&x, 0, 1, 0);
  KIN_EVENTUALLY(kin_leader_elector_is_leader(x.le[0]), 20000);
  fx_elector(&x, 1, 1, 0);
  KIN_EVENTUALLY(atomic_load(&x.r[1].new_leader) >= 1, 20000);
  assert_false(kin_leader_elector_is_leader(x.le[1]));
  uint64_t t0 = now_ms();
  kin_leader_elector_stop(x.le[0]);
  assert_int_equal(atomic_load(&x.r[0].stopped), 1);
  assert_int_equal(atomic_load(&x.r[0].lost), 0);
  KIN_EVENTUALLY(kin_leader_elector_is_leader(x.le[1]), 20000);
  uint64_t took = now_ms() - t0;
  sim_resp r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), x.id[1]);
  assert_int_equal(jint(r.json, "spec.leaseTransitions"), 1);
  sim_resp_free(&r);
  /* a released lease: no holder, 1 s */
  kin_leader_elector_stop(x.le[1]);
  r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), "");
  assert_int_equal(jint(r.json, "spec.leaseDurationSeconds"), 1);
  assert_int_equal(jint(r.json, "spec.leaseTransitions"), 1);
  sim_resp_free(&r);
  print_message("  takeover after release: %llu ms (retry period 200 ms)\n",
                (unsigned long long)took);
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("error "), 0);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

static void test_le_CrashedLeaderReplacedAfterExpiry(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  fx_elector(&x, 0, 1, 0);
  KIN_EVENTUALLY(kin_leader_elector_is_leader(x.le[0]), 20000);
  fx_elector(&x, 1, 1, 0);
  fx_elector(&x, 2, 1, 0);
  KIN_EVENTUALLY(atomic_load(&x.r[1].new_leader) >= 1 && atomic_load(&x.r[2].new_leader) >= 1,
                 20000);
  uint64_t t0 = now_ms();
  kin_leader_elector_abandon(x.le[0]); /* no release: the lease stays held */
  int who = -1;
  KIN_EVENTUALLY(leaders(&x, &who) == 1, 20000);
  uint64_t took = now_ms() - t0;
  assert_true(who == 1 || who == 2);
  /* not before the lease (1 s) expired on the follower's clock, counted
   * from a renewal at most a jittered retry period (0.44 s) before */
  assert_true(took >= 1000 - 440);
  sim_resp r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), x.id[who]);
  assert_int_equal(jint(r.json, "spec.leaseTransitions"), 1);
  sim_resp_free(&r);
  print_message("  takeover after a crash: %llu ms (lease 1000 ms)\n", (unsigned long long)took);
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("error "), 0);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

/* The Lease with holder "intruder" for dur_s seconds, written without a
 * resourceVersion (unconditional), as someone else would. */
static void put_intruder(kin_sim *sim, int dur_s) {
  char body[1024];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
           "{\"name\":\"le-test\",\"namespace\":\"default\"},\"spec\":{\"holderIdentity\":"
           "\"intruder\",\"leaseDurationSeconds\":%d,\"leaseTransitions\":7,"
           "\"acquireTime\":\"2020-01-01T00:00:00.000001Z\",\"renewTime\":"
           "\"2020-01-01T00:00:00.000001Z\"}}", dur_s);
  sim_resp r = sim_req(sim, "PUT", LEASE_PATH, body);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
}

/* Someone else writes the Lease: the leader's next update gets 409, its
 * read shows a valid foreign holder, so it loses the lease at once (its
 * fence closed before on_stopped_leading); it becomes a candidate again
 * and wins once that record expired (a second transition), in a new
 * epoch of its fence. */
static void test_le_ConflictLosesThenRejoins(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  fx_elector_ex(&x, 0, 1, 1, 1000, 600, 200, NULL, 1);
  KIN_EVENTUALLY(kin_leader_elector_is_leader(x.le[0]), 20000);
  /* leading is visible before on_started_leading ran */
  KIN_EVENTUALLY(atomic_load(&x.r[0].started) == 1, 5000);
  kin_fence *f = x.r[0].fence;
  uint64_t e1 = kin_fence_epoch(f);
  assert_true(e1 != 0);
  assert_int_equal(atomic_load(&x.r[0].fence_at_start), 1);
  put_intruder(x.sim, 2);
  KIN_EVENTUALLY(atomic_load(&x.r[0].lost) == 1, 20000);
  assert_false(kin_leader_elector_is_leader(x.le[0]));
  assert_int_equal(atomic_load(&x.r[0].fence_at_stop), 0);
  assert_false(kin_fence_holds(f, e1));
  pthread_mutex_lock(&x.r[0].mu);
  /* the intruder was reported, or already the candidate itself again */
  int saw = !strcmp(x.r[0].last_leader, "intruder") || !strcmp(x.r[0].last_leader, x.id[0]);
  pthread_mutex_unlock(&x.r[0].mu);
  assert_true(saw);
  KIN_EVENTUALLY(atomic_load(&x.r[0].started) == 2 && kin_leader_elector_is_leader(x.le[0]),
                 20000);
  uint64_t e2 = kin_fence_epoch(f);
  assert_true(e2 > e1);
  assert_true(kin_fence_holds(f, e2));
  assert_false(kin_fence_holds(f, e1)); /* the old term's writes stay refused */
  sim_resp r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), x.id[0]);
  assert_int_equal(jint(r.json, "spec.leaseTransitions"), 8);
  sim_resp_free(&r);
  kin_leader_election_state st;
  assert_int_equal(kin_leader_elector_get_state(x.le[0], &st), 0);
  assert_int_equal((int)st.acquisitions, 2);
  assert_int_equal((int)st.losses, 1);
  assert_int_equal((int)st.transitions, 8);
  kin_leader_election_state_free(&st);
  fx_stop(&x);
  kin_test_log_stop();
  /* the one error line says what happened; nothing warned */
  assert_int_equal(kin_test_log_count("error leaderelection"), 1);
  assert_int_equal(kin_test_log_count("leadership lost"), 1);
  assert_int_equal(kin_test_log_count("now held by intruder: cand-0 stops at once"), 1);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define MS 1000000ull

/* The fence over a whole term: opened before on_started_leading with a
 * bound of the acquiring attempt's start + the renew deadline, held
 * without a gap across ten renewals (its bound never further than a renew
 * deadline ahead), closed by stop before on_stopped_leading, the Lease
 * released. */
static void test_le_FenceFollowsTheTerm(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  uint64_t before = now_ns();
  fx_elector_ex(&x, 0, 1, 0, 1000, 600, 200, NULL, 1);
  kin_fence *f = x.r[0].fence;
  KIN_EVENTUALLY(atomic_load(&x.r[0].started) == 1, 20000);
  assert_int_equal(atomic_load(&x.r[0].fence_at_start), 1);
  uint64_t e = kin_fence_epoch(f);
  assert_true(e != 0);
  uint64_t until = kin_fence_until(f, e);
  assert_true(until >= before + 600 * MS);
  assert_true(until <= now_ns() + 600 * MS);
  int gaps = 0, ahead = 0;
  for (uint64_t end = now_ns() + 2000 * MS; now_ns() < end;) {
    if (!kin_fence_holds(f, e)) gaps++;
    if (kin_fence_until(f, e) > now_ns() + 600 * MS) ahead++;
    kin_test_sleep_ms(2);
  }
  assert_int_equal(gaps, 0);
  assert_int_equal(ahead, 0);
  assert_int_equal(kin_fence_epoch(f), e); /* one epoch per term */
  kin_leader_elector_stop(x.le[0]);
  assert_int_equal(kin_fence_epoch(f), 0);
  assert_false(kin_fence_holds(f, e));
  assert_int_equal(atomic_load(&x.r[0].fence_at_stop), 0);
  assert_int_equal(atomic_load(&x.r[0].stopped), 1);
  assert_int_equal(atomic_load(&x.r[0].lost), 0);
  sim_resp r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), ""); /* released */
  sim_resp_free(&r);
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("error "), 0);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

/* A Lease read naming another valid holder ends the term at once: with a
 * renew deadline of 3 s and retries every 0.3 s the fence closes well
 * before the deadline (client-go keeps acting until it). */
static void test_le_FenceClosesAtOnceOnAnotherHolder(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  fx_elector_ex(&x, 0, 1, 0, 4000, 3000, 300, NULL, 1);
  kin_fence *f = x.r[0].fence;
  KIN_EVENTUALLY(atomic_load(&x.r[0].started) == 1, 20000);
  uint64_t e = kin_fence_epoch(f);
  assert_true(kin_fence_holds(f, e));
  uint64_t t0 = now_ms();
  put_intruder(x.sim, 30);
  KIN_EVENTUALLY(kin_fence_epoch(f) == 0, 20000);
  uint64_t took = now_ms() - t0;
  KIN_EVENTUALLY(atomic_load(&x.r[0].lost) == 1, 20000);
  assert_int_equal(atomic_load(&x.r[0].fence_at_stop), 0);
  assert_true(took < 1500);
  print_message("  fence closed %llu ms after another holder's write (retry 300 ms, renew "
                "deadline 3000 ms)\n", (unsigned long long)took);
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("now held by intruder: cand-0 stops at once: "
                                      "leadership lost"), 1);
  assert_int_equal(kin_test_log_count("error "), 1);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

/* Renewals that hang (every request delayed 4 s): the fence stops holding
 * by its own time bound, the last successful renewal's start + the renew
 * deadline (1.2 s), and the elector closes it at that deadline. */
static void test_le_FenceExpiresWhenRenewalsHang(void **state) {
  fx x;
  fx_start(&x);
  kin_test_log_start();
  fx_elector_ex(&x, 0, 0, 0, 2000, 1200, 300, NULL, 1);
  kin_fence *f = x.r[0].fence;
  KIN_EVENTUALLY(atomic_load(&x.r[0].started) == 1, 20000);
  uint64_t e = kin_fence_epoch(f);
  kin_test_sleep_ms(400); /* past the renewal right after acquiring */
  uint64_t t0 = now_ms();
  kin_sim_set_latency(x.sim, 4000);
  KIN_EVENTUALLY(!kin_fence_holds(f, e), 20000);
  uint64_t expired = now_ms() - t0;
  KIN_EVENTUALLY(kin_fence_epoch(f) == 0, 20000);
  uint64_t closed = now_ms() - t0;
  KIN_EVENTUALLY(atomic_load(&x.r[0].lost) == 1, 20000);
  kin_sim_set_latency(x.sim, 0);
  print_message("  fence expired %llu ms, closed %llu ms after renewals began to hang (renew "
                "deadline 1200 ms, retry 300 ms)\n", (unsigned long long)expired,
                (unsigned long long)closed);
  /* the last success started at most a retry period and a request before */
  assert_true(expired >= 1200 - 300 - 150);
  assert_true(expired <= 1200 + 20);
  assert_true(closed <= expired + 250);
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("failed to renew it within the renew deadline: "
                                      "leadership lost"), 1);
  assert_int_equal(kin_test_log_count("error "), 1);
}

static atomic_int lease_requests;
static void count_lease_requests(void *ud, const char *method, const char *uri) {
  (void)ud;
  (void)method;
  if (!strncmp(uri, LEASE_PATH, strlen(LEASE_PATH))) atomic_fetch_add(&lease_requests, 1);
}

/* A pause (the elector's fake clock jumps 10 s while it sleeps between
 * renewals, as a process stopped and continued would see): the elector
 * finds its renew deadline passed and ends the term without a request. */
static void test_le_FenceClosesAfterAPause(void **state) {
  fx x;
  fx_start(&x);
  kin_clock *clk = kin_fake_clock_new(1000ull * 1000 * MS);
  assert_non_null(clk);
  kin_test_log_start();
  fx_elector_ex(&x, 0, 1, 0, 1000, 600, 200, clk, 1);
  kin_fence *f = x.r[0].fence;
  KIN_EVENTUALLY(atomic_load(&x.r[0].started) == 1, 20000);
  assert_true(kin_fence_epoch(f) != 0);
  KIN_EVENTUALLY(kin_fake_clock_waiters(clk) >= 1, 20000); /* asleep between renewals */
  atomic_store(&lease_requests, 0);
  kin_sim_set_request_hook(x.sim, count_lease_requests, NULL);
  kin_fake_clock_step(clk, 10000 * MS);
  KIN_EVENTUALLY(atomic_load(&x.r[0].lost) == 1, 20000);
  assert_int_equal(kin_fence_epoch(f), 0);
  assert_int_equal(atomic_load(&x.r[0].fence_at_stop), 0);
  assert_int_equal(atomic_load(&lease_requests), 0);
  kin_sim_set_request_hook(x.sim, NULL, NULL);
  fx_stop(&x);
  kin_fake_clock_free(clk);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("did not run for 10."), 1);
  assert_int_equal(kin_test_log_count("the process was paused? leadership lost"), 1);
  assert_int_equal(kin_test_log_count("error "), 1);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

/* The elector's requests skip the client's rate limiter (client-go gives
 * the election a client of its own): a limiter that allows one request
 * per 20 s, its burst spent, does not hold back acquiring and renewing. */
static void test_le_RenewsPastASaturatedRateLimiter(void **state) {
  fx x;
  memset(&x, 0, sizeof(x));
  x.sim = kin_test_sim_start(0);
  kin_rest_config cfg = {.host = (char *)kin_sim_url(x.sim)};
  kin_client_opts co = {.qps = 0.05, .burst = 1};
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, &co, &x.client, err, sizeof(err)), 0);
  for (int i = 0; i < N; i++) pthread_mutex_init(&x.r[i].mu, NULL);
  kin_client_request req = {.path = "/api/v1/namespaces/default/configmaps"};
  kin_result res;
  assert_int_equal(kin_client_do(x.client, &req, &res), 0); /* the one token */
  kin_result_free(&res);
  kin_test_log_start();
  fx_elector(&x, 0, 1, 0);
  KIN_EVENTUALLY(kin_leader_elector_is_leader(x.le[0]), 10000);
  char seen[6][40] = {{0}};
  int n = 0;
  for (int k = 0; k < 10000 && n < 6; k++) {
    sim_resp r = sim_req(x.sim, "GET", LEASE_PATH, NULL);
    const char *rt = r.code == 200 ? jstr(r.json, "spec.renewTime") : NULL;
    if (rt && (n == 0 || strcmp(seen[n - 1], rt) != 0)) snprintf(seen[n++], sizeof(seen[0]), "%s", rt);
    sim_resp_free(&r);
    if (n < 6) kin_test_sleep_ms(5);
  }
  assert_int_equal(n, 6); /* five renewals seen, well inside one 20 s token */
  fx_stop(&x);
  kin_test_log_stop();
  assert_int_equal(kin_test_log_count("error "), 0);
  assert_int_equal(kin_test_log_count("warn "), 0);
}

/* The sim serves Leases as kube-apiserver: create, get, update with a
 * stale resourceVersion -> 409 Conflict, MicroTime kept as written. */
static void test_le_SimLeases(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  const char *t = "2026-11-25T03:04:05.123456Z";
  char body[1024];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
           "{\"name\":\"le-test\"},\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
           "\"acquireTime\":\"%s\",\"renewTime\":\"%s\",\"leaseTransitions\":0}}", t, t);
  sim_resp r = sim_req(sim, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", body);
  assert_int_equal(r.code, 201);
  char rv[64];
  snprintf(rv, sizeof(rv), "%s", jstr(r.json, "metadata.resourceVersion"));
  sim_resp_free(&r);
  r = sim_req(sim, "GET", LEASE_PATH, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "spec.acquireTime"), t);
  assert_string_equal(jstr(r.json, "spec.renewTime"), t);
  assert_string_equal(jstr(r.json, "kind"), "Lease");
  sim_resp_free(&r);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
           "{\"name\":\"le-test\",\"resourceVersion\":\"%s\"},\"spec\":{\"holderIdentity\":\"b\","
           "\"leaseDurationSeconds\":15,\"renewTime\":\"%s\",\"leaseTransitions\":1}}", rv, t);
  r = sim_req(sim, "PUT", LEASE_PATH, body);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "spec.holderIdentity"), "b");
  sim_resp_free(&r);
  r = sim_req(sim, "PUT", LEASE_PATH, body); /* the same resourceVersion again */
  assert_int_equal(r.code, 409);
  assert_string_equal(jstr(r.json, "reason"), "Conflict");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

KIN_SUITE(leader_election, cmocka_unit_test(test_le_SimLeases),
          cmocka_unit_test(test_le_OneOfThreeLeads), cmocka_unit_test(test_le_ReleaseHandsOver),
          cmocka_unit_test(test_le_CrashedLeaderReplacedAfterExpiry),
          cmocka_unit_test(test_le_ConflictLosesThenRejoins),
          cmocka_unit_test(test_le_RenewsPastASaturatedRateLimiter),
          cmocka_unit_test(test_le_FenceFollowsTheTerm),
          cmocka_unit_test(test_le_FenceClosesAtOnceOnAnotherHolder),
          cmocka_unit_test(test_le_FenceExpiresWhenRenewalsHang),
          cmocka_unit_test(test_le_FenceClosesAfterAPause))
