/* test_controller_deadline.c -- the reconcile slot and watchdog of
 * core/controller (worker_slot.h) for a C reconciler, and the call context
 * it hands over: a REST call still waiting at reconcile_timeout is
 * cancelled, the busy-worker warning is logged, a shutdown's timeout
 * interrupts a call without deadline, no reconcile starts while the
 * leadership fence does not hold, and one whose epoch ends under it is
 * interrupted. The server is a listening socket that never
 * answers. */
#include "kin_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "call_ctx.h"
#include "controller.h"
#include "kin.h"
#include "rest_test.h"

#define MS KIN_NSEC_PER_MSEC

static const kin_resource CM = {.group = "", .version = "v1", .resource = "configmaps",
                                 .kind = "ConfigMap", .namespaced = 1};

/* A TCP socket on 127.0.0.1 that listens and never accepts: connections
 * complete in the backlog and no byte ever comes back. */
static int silent_server(char *host, size_t n) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 16), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  snprintf(host, n, "http://127.0.0.1:%d", ntohs(a.sin_port));
  return fd;
}

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* What the first reconcile saw. */
typedef struct {
  kin_client *client;
  int write;            /* create instead of get */
  atomic_int calls;
  atomic_int first_rc;  /* the first call's verb result */
  atomic_ullong first_ns; /* how long that verb took */
  uint64_t first_epoch;
  int first_has_cancel, first_has_deadline;
} rec;

static int reconcile(void *ud, int worker, const kin_request *req, const kin_call_ctx *ctx,
                     kin_result_action *out) {
  rec *r = ud;
  int n = atomic_fetch_add(&r->calls, 1);
  kin_result res;
  uint64_t t0 = mono();
  int rc = r->write ? kin_client_create(r->client, ctx, &CM, req->ns, RT_CM("x", "", "{}"),
                                        strlen(RT_CM("x", "", "{}")), NULL, &res)
                    : kin_client_get(r->client, ctx, &CM, req->ns, req->name, &res);
  if (n == 0) {
    r->first_epoch = ctx->epoch;
    r->first_has_cancel = ctx->cancel != NULL;
    r->first_has_deadline = ctx->deadline_ns != 0;
    atomic_store(&r->first_ns, mono() - t0);
    atomic_store(&r->first_rc, rc == 0 ? 1 : rc); /* 0 stays "not yet" */
  }
  if (rc != 0) {
    out->kind = KIN_RESULT_ERROR;
    snprintf(out->message, sizeof out->message, "%s", res.message ? res.message : "failed");
  }
  kin_result_free(&res);
  return 0;
}

/* Waits up to 5 s for the first call's result. */
static int first_rc(rec *r) {
  for (int i = 0; i < 500 && !atomic_load(&r->first_rc); i++) usleep(10000);
  return atomic_load(&r->first_rc);
}

static kin_controller *start(rec *r, const kin_controller_config *base) {
  kin_controller_config cfg = *base;
  cfg.name = "deadline";
  cfg.workers = 1;
  cfg.reconcile = reconcile;
  cfg.ud = r;
  kin_controller *c;
  assert_int_equal(kin_controller_new(&cfg, &c), 0);
  assert_int_equal(kin_controller_enqueue(c, "default", "x"), 0);
  assert_int_equal(kin_controller_start(c), 0);
  return c;
}

/* reconcile_timeout 0.3 s: the GET the server never answers is cancelled
 * at the deadline, the reconcile is logged and counted as timed out, and
 * the busy warning (0.1 s) names the key once. */
static void test_controller_deadline_RestCallCancelledAtDeadline(void **state) {
  char host[64];
  int fd = silent_server(host, sizeof host);
  rec r = {.client = rt_client(host, NULL)};
  kin_test_log_start();
  kin_controller *c = start(&r, &(kin_controller_config){.reconcile_timeout_ns = 300 * MS,
                                                         .busy_warning_after_ns = 100 * MS});
  int rc = first_rc(&r);
  kin_controller_stop(c);
  kin_test_log_stop();
  /* Cut at the deadline either way: the watchdog's cancel (its 50 ms tick)
   * or the request's own timeout, which the ctx capped to the time left,
   * whichever comes first. */
  assert_true(rc == KIN_ECANCELED || rc == KIN_ETIMEDOUT);
  uint64_t took = atomic_load(&r.first_ns);
  assert_true(took >= 250 * MS && took < 1500 * MS);
  assert_true(r.first_has_cancel && r.first_has_deadline);
  /* once per episode: the first reconcile's, and perhaps its retry's when
   * it started (5 ms later) and ran 0.1 s before the stop */
  int warned = kin_test_log_count("controller \"deadline\": all 1 workers busy for more than "
                                  "0.1s, nothing else is reconciled: \"default/x\"");
  assert_true(warned >= 1 && warned <= 2);
  assert_true(kin_test_log_count("controller \"deadline\": reconcile of \"default/x\" exceeded "
                                 "reconcile_timeout 0.3s") >= 1);
  assert_true(kin_test_log_count("interrupted (in a REST call)") >= 1);
  kin_controller_stats st;
  kin_controller_get_stats(c, &st);
  assert_true(st.reconcile_timeouts >= 1);
  assert_int_equal(st.reconcile_interrupts, 0);
  assert_int_equal(st.reconcile_panics, 0);
  kin_controller_free(c);
  kin_client_free(r.client);
  close(fd);
}

/* Without a deadline, kin_controller_abort_after ends the waiting call
 * when the shutdown gives up, counted as an interrupt. */
static void test_controller_deadline_ShutdownTimeoutInterrupts(void **state) {
  char host[64];
  int fd = silent_server(host, sizeof host);
  rec r = {.client = rt_client(host, NULL)};
  kin_test_log_start();
  kin_controller *c = start(&r, &(kin_controller_config){0});
  for (int i = 0; i < 500 && atomic_load(&r.calls) == 0; i++) usleep(10000);
  uint64_t t0 = mono();
  kin_controller_abort_after(c, 200 * MS);
  kin_controller_stop(c); /* returns once the interrupted reconcile ended */
  uint64_t took = mono() - t0;
  kin_test_log_stop();
  assert_int_equal(atomic_load(&r.first_rc), KIN_ECANCELED);
  assert_false(r.first_has_deadline);
  assert_true(took >= 150 * MS && took < 1500 * MS);
  assert_int_equal(kin_test_log_count("reconcile of \"default/x\" still running when "
                                      "shutdown_timeout passed"),
                   1);
  kin_controller_stats st;
  kin_controller_get_stats(c, &st);
  assert_int_equal(st.reconcile_interrupts, 1);
  assert_int_equal(st.reconcile_timeouts, 0);
  kin_controller_free(c);
  kin_client_free(r.client);
  close(fd);
}

/* While the fence does not hold nothing is reconciled; once it opens the
 * reconcile runs in the open epoch, and when that epoch ends under it
 * (its create hanging on the silent server) the watchdog interrupts it
 * within its tick: the REST call cancelled, logged and counted as a
 * leadership interruption, and no reconcile starts again while closed. */
static void test_controller_deadline_LeadershipGatesAndInterrupts(void **state) {
  char host[64];
  int fd = silent_server(host, sizeof host);
  kin_fence *f = kin_fence_new();
  assert_non_null(f);
  rec r = {.client = rt_client(host, NULL), .write = 1};
  kin_test_log_start();
  kin_controller *c = start(&r, &(kin_controller_config){.fence = f});
  usleep(500 * 1000);
  assert_int_equal(atomic_load(&r.calls), 0); /* not leading: the request waits */
  uint64_t e = kin_fence_open(f, 0);
  for (int i = 0; i < 500 && atomic_load(&r.calls) == 0; i++) usleep(10000);
  assert_int_equal(atomic_load(&r.calls), 1);
  usleep(300 * 1000); /* its create is in flight, unanswered (time for a slow TSan run) */
  uint64_t t0 = mono();
  kin_fence_close(f);
  int rc = first_rc(&r);
  uint64_t cut = mono() - t0;
  usleep(400 * 1000);
  int calls = atomic_load(&r.calls);
  kin_controller_stop(c);
  kin_test_log_stop();
  assert_int_equal(rc, KIN_ECANCELED);
  assert_true(cut < 500 * MS);
  assert_int_equal(r.first_epoch, e);
  assert_int_equal(calls, 1); /* closed again: nothing more was reconciled */
  assert_true(kin_test_log_count("controller \"deadline\": reconcile of \"default/x\" "
                                 "interrupted: leadership lost") >= 1);
  kin_controller_stats st;
  kin_controller_get_stats(c, &st);
  assert_int_equal(st.reconcile_interrupts, 1);
  assert_int_equal(st.reconcile_timeouts, 0);
  kin_controller_free(c);
  kin_fence_free(f);
  kin_client_free(r.client);
  close(fd);
}

/* A reconcile started in an open epoch writes; the epoch it carries is
 * the one open at its start. */
static void test_controller_deadline_EpochOfTheReconcileStart(void **state) {
  kin_fence *f = kin_fence_new();
  assert_non_null(f);
  uint64_t e = kin_fence_open(f, 0);
  kin_call_ctx ok = {.fence = f, .epoch = e};
  assert_int_equal(kin_call_ctx_may_write(&ok), 0);
  char host[64];
  int fd = silent_server(host, sizeof host);
  rec r = {.client = rt_client(host, NULL), .write = 1};
  kin_test_log_start();
  kin_controller *c =
      start(&r, &(kin_controller_config){.fence = f, .reconcile_timeout_ns = 200 * MS});
  int rc = first_rc(&r);
  kin_controller_stop(c);
  kin_test_log_stop();
  /* sent (and cut at the deadline by the silent server: the watchdog's
   * cancel or the capped timeout), not refused */
  assert_true(rc == KIN_ECANCELED || rc == KIN_ETIMEDOUT);
  assert_int_equal(r.first_epoch, e);
  kin_controller_free(c);
  kin_fence_free(f);
  kin_client_free(r.client);
  close(fd);
}

KIN_SUITE(controller_deadline,
          cmocka_unit_test(test_controller_deadline_RestCallCancelledAtDeadline),
          cmocka_unit_test(test_controller_deadline_ShutdownTimeoutInterrupts),
          cmocka_unit_test(test_controller_deadline_LeadershipGatesAndInterrupts),
          cmocka_unit_test(test_controller_deadline_EpochOfTheReconcileStart))
