/* test_rest_call_ctx.c -- the call context every kin_client_* verb takes
 * (call_ctx.h), against kinformer.sim: a write whose leadership epoch ended
 * is refused locally (KIN_EFENCED, code 0, "write refused: leadership
 * ended (epoch N)", the write observer told, nothing reaches the server)
 * while reads still go out; an open epoch writes; a deadline already past
 * fails at once; a raw kin_client_do request carries a ctx the same way;
 * NULL is no context. */
#include "kin_test.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "call_ctx.h"
#include "kin.h"
#include "rest_client.h"
#include "rest_test.h"
#include "sim.h"

typedef struct {
  int n;
  char method[16], path[256], message[256];
  long code;
  int has_message;
} seen;

static void observe(void *ud, const char *method, const char *path, long code,
                    const char *message) {
  seen *s = ud;
  s->n++;
  snprintf(s->method, sizeof s->method, "%s", method);
  snprintf(s->path, sizeof s->path, "%s", path);
  s->code = code;
  s->has_message = message != NULL;
  snprintf(s->message, sizeof s->message, "%s", message ? message : "");
}

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * KIN_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void test_rest_call_ctx_FenceRefusesWritesLocally(void **state) {
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(NULL, &sim), 0);
  kin_client *c = rt_client(kin_sim_url(sim), NULL);
  kin_resource cm = rt_resource(c, "v1/configmaps");
  kin_fence *f = kin_fence_new();
  assert_non_null(f);
  uint64_t e1 = kin_fence_open(f, 0);
  seen s = {0};
  kin_call_ctx ctx = {.fence = f, .epoch = e1, .on_write = observe, .on_write_ud = &s};
  const char *a = RT_CM("a", "", "{}"), *b = RT_CM("b", "", "{}");
  kin_result r;

  /* the open epoch writes; the observer hears of it */
  assert_int_equal(kin_client_create(c, &ctx, &cm, "default", a, strlen(a), NULL, &r), 0);
  assert_int_equal(r.code, 201);
  kin_result_free(&r);
  assert_int_equal(s.n, 1);
  assert_string_equal(s.method, "POST");
  assert_string_equal(s.path, "/api/v1/namespaces/default/configmaps");
  assert_int_equal(s.code, 201);
  assert_false(s.has_message); /* a success has no message */

  /* a refused write: the observer gets the Status message (issue 25: why
   * shows an admission webhook's denial with it) */
  assert_int_equal(kin_client_create(c, &ctx, &cm, "default", a, strlen(a), NULL, &r),
                   KIN_ESTATUS);
  assert_int_equal(r.code, 409);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.code, 409);
  assert_true(s.has_message);
  assert_string_equal(s.message, r.message);
  kin_result_free(&r);
  s.n = 1;

  /* the epoch ends: writes are refused here, reads still go out */
  kin_fence_close(f);
  assert_int_equal(kin_client_create(c, &ctx, &cm, "default", b, strlen(b), NULL, &r),
                   KIN_EFENCED);
  assert_int_equal(r.code, 0);
  char want[80];
  snprintf(want, sizeof want, "write refused: leadership ended (epoch %llu)",
           (unsigned long long)e1);
  assert_string_equal(r.message, want);
  kin_result_free(&r);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.code, 0);
  assert_string_equal(s.message, want);
  assert_int_equal(kin_client_delete(c, &ctx, &cm, "default", "a", NULL, &r), KIN_EFENCED);
  kin_result_free(&r);
  assert_int_equal(kin_client_patch(c, &ctx, &cm, "default", "a", KIN_PATCH_MERGE, "{}", 2, NULL,
                                    &r),
                   KIN_EFENCED);
  kin_result_free(&r);
  kin_client_request raw = {.method = "DELETE", .path = "/api/v1/namespaces/default/configmaps/a",
                            .ctx = &ctx};
  assert_int_equal(kin_client_do(c, &raw, &r), KIN_EFENCED);
  kin_result_free(&r);
  assert_int_equal(s.n, 5);
  assert_int_equal(kin_client_get(c, &ctx, &cm, "default", "a", &r), 0); /* not deleted */
  kin_result_free(&r);
  assert_int_equal(kin_client_get(c, &ctx, &cm, "default", "b", &r), KIN_ESTATUS); /* never sent */
  assert_int_equal(r.code, 404);
  kin_result_free(&r);
  assert_int_equal(s.n, 5); /* reads are not observed */

  /* a new epoch does not revive the old one's context */
  uint64_t e2 = kin_fence_open(f, 0);
  assert_int_equal(kin_client_create(c, &ctx, &cm, "default", b, strlen(b), NULL, &r),
                   KIN_EFENCED);
  kin_result_free(&r);
  ctx.epoch = e2;
  assert_int_equal(kin_client_create(c, &ctx, &cm, "default", b, strlen(b), NULL, &r), 0);
  kin_result_free(&r);
  /* NULL: no context at all */
  assert_int_equal(kin_client_delete(c, NULL, &cm, "default", "b", NULL, &r), 0);
  kin_result_free(&r);

  kin_fence_free(f);
  kin_client_free(c);
  kin_sim_free(sim);
}

static void test_rest_call_ctx_DeadlinePassedFailsAtOnce(void **state) {
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(NULL, &sim), 0);
  kin_client *c = rt_client(kin_sim_url(sim), NULL);
  kin_resource cm = rt_resource(c, "v1/configmaps");
  seen s = {0};
  kin_call_ctx late = {.deadline_ns = mono() - 1, .on_write = observe, .on_write_ud = &s};
  kin_result r;
  assert_int_equal(kin_client_get(c, &late, &cm, "default", "x", &r), KIN_ETIMEDOUT);
  assert_string_equal(r.message, "deadline exceeded before the request was sent");
  kin_result_free(&r);
  const char *a = RT_CM("a", "", "{}");
  assert_int_equal(kin_client_create(c, &late, &cm, "default", a, strlen(a), NULL, &r),
                   KIN_ETIMEDOUT);
  kin_result_free(&r);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.code, 0);
  kin_call_ctx later = {.deadline_ns = mono() + 10 * KIN_NSEC_PER_SEC};
  kin_client_request req = {.path = "/version", .idempotent = 1, .ctx = &later};
  assert_int_equal(kin_client_do(c, &req, &r), 0);
  assert_int_equal(r.code, 200);
  kin_result_free(&r);
  kin_client_free(c);
  kin_sim_free(sim);
}

KIN_SUITE(rest_call_ctx, cmocka_unit_test(test_rest_call_ctx_FenceRefusesWritesLocally),
          cmocka_unit_test(test_rest_call_ctx_DeadlinePassedFailsAtOnce))
