/* test_response_caps.c -- bounded memory against any server: the cap on
 * every body that is not a watch (kin_client_opts.max_response_bytes,
 * default 256 MiB). A misbehaving server (bad_server.h) sends an endless
 * GET body, an endless LIST, a 10-million-item page of tiny items and an
 * endless string inside a list item; each fails with KIN_ETOOBIG and a
 * message naming the URL, the cap and what came, the moment the cap is
 * passed, while the process's peak RSS (VmHWM) stays under the cap plus
 * 64 MiB. A small cap (32 MiB) keeps the specs fast. */
#include "kin_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bad_server.h"
#include "delta_fifo.h"
#include "kin.h"
#include "log.h"
#include "reflector.h"
#include "rest_client.h"

#define CAP ((int64_t)32 << 20)
#define SLACK ((long long)64 << 20)

/* Under a sanitizer RSS measures its shadow memory and quarantine, not the
 * client: the caps' errors are still checked there, their RSS bound only
 * in the release build (make test). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_BOUND(x) ((void)(x))
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSS_BOUND(x) ((void)(x))
#endif
#endif
#ifndef RSS_BOUND
#define RSS_BOUND(x) assert_true(x)
#endif
#define LIST_PATH "/api/v1/namespaces/default/configmaps"

enum { M_ENDLESS_OBJECT, M_ENDLESS_LIST, M_MANY_ITEMS, M_ENDLESS_STRING };

typedef struct {
  atomic_int mode;
} srv_state;

/* Writes block again and again until the client hangs up (or, for
 * total > 0, until that many blocks went); 0 when all were written. */
static int repeat(bad_server *s, int fd, const char *block, size_t n, long long total) {
  for (long long i = 0; !s->stop && (total <= 0 || i < total); i++)
    if (bs_write(fd, block, n)) return -1;
  return 0;
}

static void serve(bad_server *s, int fd, const char *method, const char *target,
                  const char *headers) {
  srv_state *st = s->ud;
  static const char list_head[] =
      "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\"},"
      "\"items\":[";
  if (bs_head_200(fd)) return;
  char *block = malloc(1 << 16);
  size_t n = 0;
  switch (atomic_load(&st->mode)) {
  case M_ENDLESS_OBJECT: /* a ConfigMap whose data never ends */
    bs_puts(fd, "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"x\"},"
                "\"data\":{\"k\":\"");
    memset(block, 'A', 1 << 16);
    repeat(s, fd, block, 1 << 16, 0);
    break;
  case M_ENDLESS_LIST: { /* items of 1 KiB without end */
    bs_puts(fd, list_head);
    char item[1100];
    int k = snprintf(item, sizeof item, "{\"metadata\":{\"name\":\"i\"},\"data\":{\"k\":\"");
    memset(item + k, 'b', 1000);
    memcpy(item + k + 1000, "\"}},", 4);
    size_t il = (size_t)k + 1004;
    while (n + il <= (1 << 16)) memcpy(block + n, item, il), n += il;
    repeat(s, fd, block, n, 0);
    break;
  }
  case M_MANY_ITEMS: { /* 10,000,000 tiny items, then the list's end */
    static const char item[] = "{\"metadata\":{\"name\":\"t\"}},";
    const size_t il = sizeof item - 1, per = (1 << 16) / il;
    for (size_t i = 0; i < per; i++) memcpy(block + n, item, il), n += il;
    bs_puts(fd, list_head);
    long long blocks = 10000000LL / (long long)per;
    if (repeat(s, fd, block, n, blocks) == 0) {
      char tail[4096] = "";
      for (long long i = blocks * (long long)per; i < 10000000LL - 1; i++) strcat(tail, item);
      bs_puts(fd, tail);
      bs_puts(fd, "{\"metadata\":{\"name\":\"last\"}}]}");
    }
    break;
  }
  case M_ENDLESS_STRING: /* one list item whose string never ends */
    bs_puts(fd, list_head);
    bs_puts(fd, "{\"metadata\":{\"name\":\"s\"},\"data\":{\"k\":\"");
    memset(block, 'C', 1 << 16);
    repeat(s, fd, block, 1 << 16, 0);
    break;
  }
  free(block);
}

/* KIN_CAPS_VERBOSE=1 prints each measured figure (for the note). */
static void report(const char *what, long long grew) {
  if (getenv("KIN_CAPS_VERBOSE"))
    fprintf(stderr, "%s: peak RSS growth %.1f MiB (cap %lld MiB + 64 MiB allowed)\n", what,
            (double)grew / (1 << 20), (long long)(CAP >> 20));
}

static kin_client *client_to(bad_server *s, int64_t cap) {
  char url[64];
  kin_rest_config cfg = {.host = (char *)bs_url(s, url, sizeof url)};
  kin_client_opts o = {.max_response_bytes = cap, .max_retries = -1};
  kin_client *c = NULL;
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, &o, &c, err, sizeof err), 0);
  return c;
}

/* The default cap is 256 MiB; 0 asks for it, a negative cap for none. */
static void test_caps_DefaultIs256MiB(void **state) {
  assert_int_equal(KIN_MAX_RESPONSE_BYTES, 268435456);
  srv_state st = {0};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, 0);
  assert_int_equal(kin_client_max_response_bytes(c), 256u << 20);
  kin_client_free(c);
  c = client_to(s, -1);
  assert_int_equal(kin_client_max_response_bytes(c), 0);
  kin_client_free(c);
  c = client_to(s, 1000);
  assert_int_equal(kin_client_max_response_bytes(c), 1000);
  kin_client_free(c);
  bs_stop(s);
}

/* An endless GET body: KIN_ETOOBIG naming URL, cap and bytes; RSS bounded. */
static void test_caps_EndlessGetBody(void **state) {
  srv_state st = {M_ENDLESS_OBJECT};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, CAP);
  long long base = bs_proc_kb("VmRSS") * 1024;
  bs_reset_peak();
  kin_client_request req = {.path = LIST_PATH "/x"};
  kin_result r;
  assert_int_equal(kin_client_do(c, &req, &r), KIN_ETOOBIG);
  long long peak = bs_proc_kb("VmHWM") * 1024;
  char want[256];
  snprintf(want, sizeof want,
           "GET http://127.0.0.1:%u" LIST_PATH "/x: response body larger than its cap of 33554432 "
           "bytes (", s->port);
  assert_non_null(r.message);
  if (strncmp(r.message, want, strlen(want))) fail_msg("message: %s", r.message);
  assert_non_null(strstr(r.message, "bytes received)"));
  /* aborted at the cap: what came is within one read of it */
  unsigned long long got = strtoull(strrchr(r.message, '(') + 1, NULL, 10);
  assert_true(got > (unsigned long long)CAP && got < (unsigned long long)CAP + (1 << 20));
  report("endless GET body", peak - base);
  RSS_BOUND(peak - base < CAP + SLACK);
  kin_result_free(&r);
  kin_client_free(c);
  bs_stop(s);
}

/* Runs a reflector over LIST_PATH until its first LIST failed (logged),
 * then stops it. Returns the peak RSS growth in bytes. */
static long long list_once(bad_server *s, kin_client *c) {
  kin_delta_fifo *f = NULL;
  assert_int_equal(kin_delta_fifo_new(&(kin_delta_fifo_config){0}, &f), 0);
  kin_reflector_config rc = {.client = c,
                             .resource = {.group = "", .version = "v1", .resource = "configmaps",
                                          .kind = "ConfigMap", .namespaced = 1},
                             .namespace = "default",
                             .fifo = f,
                             .backoff_initial_ns = 10 * KIN_NSEC_PER_SEC,
                             .name = "v1/configmaps"};
  kin_reflector *r = NULL;
  assert_int_equal(kin_reflector_new(&rc, &r), 0);
  long long base = bs_proc_kb("VmRSS") * 1024;
  bs_reset_peak();
  /* info too: the line that says a page served whole is listed again in pages */
  int was_info = kin_log_enabled(KIN_LOG_INFO);
  kin_log_set_level(KIN_LOG_INFO);
  kin_test_log_start();
  assert_int_equal(kin_reflector_run(r), 0);
  KIN_EVENTUALLY(kin_test_log_count("failed to list") >= 1, 30000);
  long long peak = bs_proc_kb("VmHWM") * 1024;
  kin_reflector_free(r);
  kin_test_log_stop();
  if (!was_info) kin_log_set_level(KIN_LOG_WARN);
  kin_delta_fifo_free(f);
  return peak - base;
}

/* An endless LIST body fails the LIST with the named error, one log line,
 * RSS under the cap plus 64 MiB. */
static void test_caps_EndlessListBody(void **state) {
  srv_state st = {M_ENDLESS_LIST};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, CAP);
  long long grew = list_once(s, c);
  /* the page at resourceVersion=0 (which the watch cache serves whole)
   * passes the cap: listed again at once in pages at "", whose first page
   * (this server ignores limit) passes it too, which fails the LIST */
  assert_int_equal(kin_test_log_count("failed to list"), 1);
  assert_int_equal(kin_test_log_count("larger than its cap of 33554432 bytes"), 1);
  assert_int_equal(kin_test_log_count("listing at \"\" in pages of 500 from now on"), 1);
  char url[128];
  snprintf(url, sizeof url, "GET http://127.0.0.1:%u" LIST_PATH "?limit=500&resourceVersion=0:",
           s->port);
  assert_int_equal(kin_test_log_count(url), 1);
  snprintf(url, sizeof url, "GET http://127.0.0.1:%u" LIST_PATH "?limit=500:", s->port);
  assert_int_equal(kin_test_log_count(url), 1);
  assert_int_equal(kin_test_log_count("more items than the limit=500 asked for (item 501 came)"), 1);
  assert_int_equal(kin_test_log_count(NULL), 2);
  report("endless LIST body", grew);
  RSS_BOUND(grew < CAP + SLACK);
  kin_client_free(c);
  bs_stop(s);
}

/* A page of 10 million tiny items at resourceVersion "0" (which
 * kube-apiserver's watch cache may serve whole whatever the limit): each
 * item is charged its bytes plus a fixed cost, so the page passes the cap
 * long before its objects fill memory. */
static void test_caps_TenMillionItemPage(void **state) {
  srv_state st = {M_MANY_ITEMS};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, CAP);
  long long grew = list_once(s, c);
  assert_int_equal(kin_test_log_count("failed to list"), 1);
  /* over the cap at resourceVersion=0, listed again in pages at "" (this
   * server ignores limit: item 501 fails it) */
  assert_int_equal(kin_test_log_count("list page larger than its cap of 33554432 bytes"), 1);
  assert_int_equal(kin_test_log_count("items, charged 384 bytes each"), 1);
  assert_int_equal(kin_test_log_count("listing at \"\" in pages of 500 from now on"), 1);
  assert_int_equal(kin_test_log_count("more items than the limit=500 asked for (item 501 came)"), 1);
  report("10M-item page", grew);
  RSS_BOUND(grew < CAP + SLACK);
  kin_client_free(c);
  bs_stop(s);
}

/* The same page against the default cap of 256 MiB. */
static void test_caps_TenMillionItemPageDefaultCap(void **state) {
  srv_state st = {M_MANY_ITEMS};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, 0);
  long long grew = list_once(s, c);
  assert_int_equal(kin_test_log_count("list page larger than its cap of 268435456 bytes"), 1);
  assert_int_equal(kin_test_log_count("listing at \"\" in pages of 500 from now on"), 1);
  if (getenv("KIN_CAPS_VERBOSE"))
    fprintf(stderr, "10M-item page, default cap: peak RSS growth %.1f MiB (256 + 64 allowed)\n",
            (double)grew / (1 << 20));
  RSS_BOUND(grew < ((long long)256 << 20) + SLACK);
  kin_client_free(c);
  bs_stop(s);
}

/* A string inside a list item that never ends: the body cap ends it. */
static void test_caps_EndlessStringInItem(void **state) {
  srv_state st = {M_ENDLESS_STRING};
  bad_server *s = bs_start(serve, &st);
  kin_client *c = client_to(s, CAP);
  long long grew = list_once(s, c);
  assert_int_equal(kin_test_log_count("failed to list"), 1);
  /* at resourceVersion=0 (the info line: listed again in pages at ""),
   * then in the first page at "", which fails the LIST */
  assert_int_equal(kin_test_log_count("response body larger than its cap of 33554432 bytes"), 2);
  assert_int_equal(kin_test_log_count("listing at \"\" in pages of 500 from now on"), 1);
  report("endless string in an item", grew);
  RSS_BOUND(grew < CAP + SLACK);
  kin_client_free(c);
  bs_stop(s);
}

KIN_SUITE(response_caps, cmocka_unit_test(test_caps_DefaultIs256MiB),
          cmocka_unit_test(test_caps_EndlessGetBody), cmocka_unit_test(test_caps_EndlessListBody),
          cmocka_unit_test(test_caps_TenMillionItemPage),
          cmocka_unit_test(test_caps_TenMillionItemPageDefaultCap),
          cmocka_unit_test(test_caps_EndlessStringInItem))
