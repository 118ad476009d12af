/* test_io_may_send.c -- kin_io_request.may_send, the IO thread's last
 * check before a request's bytes go out (curl's PREREQFUNCTION): a write
 * whose leadership fence ended while it waited in the queue or for its
 * connection is refused there with KIN_EFENCED and the server receives no
 * request; an allowed one goes out as usual. The server is a bad_server.h
 * listener counting the requests that reached it with a method. */
#include "kin_test.h"

#include <stdatomic.h>
#include <string.h>

#include "bad_server.h"
#include "call_ctx.h"
#include "io_engine.h"
#include "kin.h"

static atomic_int requests;

static void serve(bad_server *s, int fd, const char *method, const char *target,
                  const char *headers) {
  if (method[0]) atomic_fetch_add(&requests, 1);
  bs_json(fd, "{}");
}

static int fence_refuses(void *ud) { return kin_call_ctx_may_write(ud) != 0; }

static void test_io_may_send_FencedWriteNeverLeaves(void **state) {
  atomic_store(&requests, 0);
  bad_server *s = bs_start(serve, NULL);
  assert_non_null(s);
  char url[64], full[128];
  snprintf(full, sizeof full, "%s/api/v1/namespaces/default/configmaps", bs_url(s, url, sizeof url));
  kin_io_engine *e;
  assert_int_equal(kin_io_engine_new(&e), 0);
  kin_fence *f = kin_fence_new();
  uint64_t epoch = kin_fence_open(f, 0);
  kin_call_ctx ctx = {.fence = f, .epoch = epoch};
  kin_io_request req = {.method = "POST", .url = full, .body = "{}", .body_len = 2,
                        .timeout_ms = 5000, .may_send = fence_refuses, .may_send_ud = &ctx};
  kin_io_response res;
  /* open: it goes out */
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 200);
  kin_io_response_free(&res);
  KIN_EVENTUALLY(atomic_load(&requests) == 1, 5000);
  /* ended: refused on the IO thread, nothing reaches the server */
  kin_fence_close(f);
  assert_int_equal(kin_io_do(e, &req, &res), KIN_EFENCED);
  assert_non_null(strstr(res.error, "leadership ended"));
  kin_io_response_free(&res);
  kin_test_sleep_ms(200);
  assert_int_equal(atomic_load(&requests), 1);
  kin_io_engine_free(e);
  kin_fence_free(f);
  bs_stop(s);
}

KIN_SUITE(io_may_send, cmocka_unit_test(test_io_may_send_FencedWriteNeverLeaves))
