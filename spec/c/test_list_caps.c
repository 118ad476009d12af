/* test_list_caps.c -- a LIST bounded in items and pages, and the informer
 * side of every cap: a page may hold at most the limit asked for (except
 * the first page at resourceVersion "0", which kube-apiserver's watch
 * cache serves whole: cacher.go's computeListLimit), a continue token the
 * server repeats or more pages than max_pages end the LIST with
 * KIN_ETOOBIG, each failure is one log line, and the reflector backs off,
 * lists again and syncs once the server behaves. Against bad_server.h. */
#include "kin_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bad_server.h"
#include "delta_fifo.h"
#include "kin.h"
#include "reflector.h"
#include "rest_client.h"

#define LIST_PATH "/api/v1/namespaces/default/configmaps"

enum { M_CONTINUE_FLOOD, M_SAME_TOKEN, M_NEW_TOKENS, M_RV0_WHOLE, M_BAD_THEN_GOOD, M_WHOLE_TOO_BIG };

typedef struct {
  atomic_int mode;
  atomic_int lists;     /* LIST requests served (pages) */
  atomic_int rounds;    /* of them, first pages (no continue token) */
  int bad_lists;        /* M_BAD_THEN_GOOD: this many LIST rounds fail first */
  atomic_int paged;     /* M_WHOLE_TOO_BIG: pages served at resourceVersion "" */
} srv_state;

/* The client's max_response_bytes in fx_start (0: the default). */
static int64_t g_cap;

/* Items from..to-1 named cm<i>, as a JSON fragment (malloc'd). */
static char *items_json(int from, int to) {
  char *items = malloc(65536);
  items[0] = 0;
  for (int i = from; i < to; i++) {
    char it[96];
    snprintf(it, sizeof it, "%s{\"metadata\":{\"name\":\"cm%d\",\"resourceVersion\":\"3\"}}",
             i > from ? "," : "", i);
    strcat(items, it);
  }
  return items;
}

#define ITEM(n) "{\"metadata\":{\"name\":\"" n "\",\"resourceVersion\":\"3\"}}"

/* A page: items (a JSON fragment), the list RV and a continue token. */
static void page(int fd, const char *items, const char *cont) {
  char body[65536];
  snprintf(body, sizeof body,
           "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":"
           "\"7\"%s%s%s},\"items\":[%s]}",
           cont ? ",\"continue\":\"" : "", cont ? cont : "", cont ? "\"" : "", items);
  bs_json(fd, body);
}

static void serve(bad_server *s, int fd, const char *method, const char *target,
                  const char *headers) {
  srv_state *st = s->ud;
  if (strstr(target, "watch=")) { /* a quiet watch until the end */
    if (bs_head_200(fd)) return;
    while (!s->stop) kin_test_sleep_ms(10);
    return;
  }
  int n = atomic_fetch_add(&st->lists, 1) + 1;
  int round = strstr(target, "continue=") ? atomic_load(&st->rounds)
                                          : atomic_fetch_add(&st->rounds, 1) + 1;
  switch (atomic_load(&st->mode)) {
  case M_CONTINUE_FLOOD:
    if (!strstr(target, "continue=")) {
      page(fd, ITEM("first"), "c1");
    } else { /* the continue page: 10,000,000 tiny items after limit=500 */
      static const char item[] = "{\"metadata\":{\"name\":\"t\"}},";
      char *block = malloc(1 << 16);
      size_t len = 0, il = sizeof item - 1;
      while (len + il <= (1 << 16)) memcpy(block + len, item, il), len += il;
      if (bs_head_200(fd) == 0 &&
          bs_puts(fd, "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
                      "{\"resourceVersion\":\"7\"},\"items\":[") == 0)
        for (long long sent = 0; sent < 10000000LL && !s->stop; sent += (long long)(len / il))
          if (bs_write(fd, block, len)) break;
      free(block);
    }
    break;
  case M_SAME_TOKEN:
    page(fd, ITEM("a"), "again");
    break;
  case M_NEW_TOKENS: {
    char tok[32];
    snprintf(tok, sizeof tok, "c%d", n);
    page(fd, ITEM("a"), tok);
    break;
  }
  case M_RV0_WHOLE: { /* 600 items on the first page at RV 0, no continue */
    char *items = items_json(0, 600);
    page(fd, items, NULL);
    free(items);
    break;
  }
  case M_WHOLE_TOO_BIG: { /* 700 items whole at RV 0 (as the watch cache); at "" pages of the limit */
    int consistent = !strstr(target, "resourceVersion=");
    char *items = !consistent                   ? items_json(0, 700)
                  : strstr(target, "continue=") ? items_json(500, 700)
                                                : items_json(0, 500);
    if (consistent) atomic_fetch_add(&st->paged, 1);
    page(fd, items, consistent && !strstr(target, "continue=") ? "p2" : NULL);
    free(items);
    break;
  }
  case M_BAD_THEN_GOOD:
    if (round <= st->bad_lists) page(fd, ITEM("a"), "loop");
    else page(fd, ITEM("a") "," ITEM("b") "," ITEM("c"), NULL);
    break;
  }
}

typedef struct {
  bad_server *s;
  kin_client *c;
  kin_delta_fifo *f;
  kin_reflector *r;
} fx;

static void fx_start(fx *x, srv_state *st, long max_pages, uint64_t backoff_ns) {
  x->s = bs_start(serve, st);
  char url[64];
  kin_rest_config cfg = {.host = (char *)bs_url(x->s, url, sizeof url)};
  kin_client_opts o = {.max_retries = -1, .max_response_bytes = g_cap};
  char err[256];
  assert_int_equal(kin_client_new(&cfg, NULL, &o, &x->c, err, sizeof err), 0);
  assert_int_equal(kin_delta_fifo_new(&(kin_delta_fifo_config){0}, &x->f), 0);
  kin_reflector_config rc = {.client = x->c,
                             .resource = {.group = "", .version = "v1", .resource = "configmaps",
                                          .kind = "ConfigMap", .namespaced = 1},
                             .namespace = "default",
                             .fifo = x->f,
                             .max_pages = max_pages,
                             .backoff_initial_ns = backoff_ns,
                             .backoff_max_ns = backoff_ns,
                             .name = "v1/configmaps"};
  assert_int_equal(kin_reflector_new(&rc, &x->r), 0);
  kin_test_log_start();
  assert_int_equal(kin_reflector_run(x->r), 0);
}

static void fx_stop(fx *x) {
  kin_reflector_free(x->r);
  kin_test_log_stop();
  kin_delta_fifo_free(x->f);
  kin_client_free(x->c);
  bs_stop(x->s);
}

static int synced(kin_reflector *r) {
  kin_reflector_stats st;
  kin_reflector_get_stats(r, &st);
  return st.synced;
}

/* 10 million items on a continue page after limit=500: the LIST fails at
 * item 501, naming URL, limit and what came. */
static void test_list_caps_ItemsPastTheLimit(void **state) {
  srv_state st = {.mode = M_CONTINUE_FLOOD};
  fx x;
  fx_start(&x, &st, 0, 10 * KIN_NSEC_PER_SEC);
  KIN_EVENTUALLY(kin_test_log_count("failed to list") >= 1, 30000);
  char want[256];
  snprintf(want, sizeof want,
           "failed to list: GET http://127.0.0.1:%u" LIST_PATH "?limit=500&continue=c1: list page "
           "has more items than the limit=500 asked for (item 501 came)", x.s->port);
  assert_int_equal(kin_test_log_count(want), 1);
  kin_test_log_expect_only("failed to list");
  fx_stop(&x);
}

/* The same continue token twice: the LIST ends after the second page. */
static void test_list_caps_RepeatedContinueToken(void **state) {
  srv_state st = {.mode = M_SAME_TOKEN};
  fx x;
  fx_start(&x, &st, 0, 10 * KIN_NSEC_PER_SEC);
  KIN_EVENTUALLY(kin_test_log_count("failed to list") >= 1, 30000);
  assert_int_equal(kin_test_log_count("the server repeated a continue token after 2 pages"), 1);
  assert_int_equal(atomic_load(&st.lists), 2);
  kin_test_log_expect_only("failed to list");
  fx_stop(&x);
}

/* New tokens without end: the LIST ends at max_pages. */
static void test_list_caps_TooManyPages(void **state) {
  srv_state st = {.mode = M_NEW_TOKENS};
  fx x;
  fx_start(&x, &st, 5, 10 * KIN_NSEC_PER_SEC);
  KIN_EVENTUALLY(kin_test_log_count("failed to list") >= 1, 30000);
  assert_int_equal(kin_test_log_count("more pages than the cap of 5 after 5 pages"), 1);
  assert_int_equal(atomic_load(&st.lists), 5);
  fx_stop(&x);
}

/* The first page at resourceVersion "0" may exceed the limit (the watch
 * cache ignores it there): 600 items after limit=500 sync. */
static void test_list_caps_ResourceVersion0PageServedWhole(void **state) {
  srv_state st = {.mode = M_RV0_WHOLE};
  fx x;
  fx_start(&x, &st, 0, 10 * KIN_NSEC_PER_SEC);
  KIN_EVENTUALLY(synced(x.r), 30000);
  assert_int_equal(kin_test_log_count(NULL), 0);
  fx_stop(&x);
}

/* A list served whole over max_response_bytes (700 items charged about
 * 300 kB against a 250 kB cap; kube-apiserver's watch cache serves
 * resourceVersion "0" whole, ignoring limit) is not retried forever: the
 * reflector lists at "" in pages of 500, each under the cap, and syncs. */
static void test_list_caps_WholePageOverTheCapListsInPages(void **state) {
  srv_state st = {.mode = M_WHOLE_TOO_BIG};
  fx x;
  g_cap = 250000;
  fx_start(&x, &st, 0, 10 * KIN_NSEC_PER_SEC);
  g_cap = 0;
  KIN_EVENTUALLY(synced(x.r), 30000);
  kin_reflector_stats rs;
  kin_reflector_get_stats(x.r, &rs);
  assert_int_equal(rs.lists, 1); /* one list: no failure, no backoff */
  assert_int_equal(rs.listed_items, 700);
  assert_int_equal(atomic_load(&st.paged), 2);
  assert_int_equal(atomic_load(&st.rounds), 2); /* the whole page, then the paged list */
  assert_int_equal(kin_test_log_count("failed to list"), 0);
  fx_stop(&x);
}

/* After breaches the reflector backs off (one log line per failure, no
 * flood), lists again, and syncs once the server behaves. */
static void test_list_caps_RetriesAndSyncs(void **state) {
  srv_state st = {.mode = M_BAD_THEN_GOOD, .bad_lists = 3};
  fx x;
  fx_start(&x, &st, 0, 20 * KIN_NSEC_PER_MSEC);
  KIN_EVENTUALLY(synced(x.r), 30000);
  kin_reflector_stats rs;
  kin_reflector_get_stats(x.r, &rs);
  assert_int_equal(rs.lists, 4);
  assert_true(rs.backoffs >= 3);
  char rv[16];
  kin_reflector_last_sync_rv(x.r, rv, sizeof rv);
  assert_string_equal(rv, "7");
  assert_int_equal(kin_test_log_count("failed to list"), 3);
  assert_int_equal(kin_test_log_count("the server repeated a continue token"), 3);
  kin_test_log_expect_only("failed to list");
  fx_stop(&x);
}

KIN_SUITE(list_caps, cmocka_unit_test(test_list_caps_ItemsPastTheLimit),
          cmocka_unit_test(test_list_caps_RepeatedContinueToken),
          cmocka_unit_test(test_list_caps_TooManyPages),
          cmocka_unit_test(test_list_caps_ResourceVersion0PageServedWhole),
          cmocka_unit_test(test_list_caps_WholePageOverTheCapListsInPages),
          cmocka_unit_test(test_list_caps_RetriesAndSyncs))
