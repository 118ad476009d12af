/* test_list_stream.c -- a list body split into its items as it arrives
 * (list_stream.c): every way of cutting the body into pieces gives the same
 * items, the same envelope and the same list kind; bodies that are no list
 * fail and name the item that is no object. */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "list_stream.h"

#define MAX_ITEMS 16

typedef struct {
  char *items[MAX_ITEMS];
  size_t n;
  int fail_at; /* 1 + the item whose callback fails; 0: none */
} got;

static int on_item(void *ud, const char *p, size_t len, size_t index) {
  got *g = ud;
  assert_int_equal(index, g->n);
  assert_true(g->n < MAX_ITEMS);
  if (g->fail_at && (size_t)g->fail_at == index + 1) return KIN_ENOMEM;
  g->items[g->n] = strndup(p, len);
  g->n++;
  return 0;
}

static void got_free(got *g) {
  for (size_t i = 0; i < g->n; i++) free(g->items[i]);
  memset(g, 0, sizeof(*g));
}

/* Feeds body in pieces of `piece` bytes (0: whole). Returns feed's or
 * finish's result; ls is left for the caller to read and free. */
static int split(kin__list_stream *ls, got *g, const char *body, size_t piece) {
  kin__list_stream_init(ls, on_item, g);
  size_t n = strlen(body);
  if (!piece) piece = n ? n : 1;
  for (size_t i = 0; i < n; i += piece) {
    size_t k = n - i < piece ? n - i : piece;
    /* each piece in a buffer of its own, so a pointer kept past its feed
     * would read freed memory under ASan */
    char *b = malloc(k);
    memcpy(b, body + i, k);
    int rc = kin__list_stream_feed(ls, b, k);
    free(b);
    if (rc) return rc;
  }
  return kin__list_stream_finish(ls);
}

#define LIST_HEAD "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\"},"

static const char *const ITEMS[] = {
    "{\"metadata\":{\"name\":\"a\",\"namespace\":\"d\"},\"data\":{\"x\":\"}]\\\"{[\"}}",
    "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\",\"labels\":{\"items\":\"[1]\"}},"
    "\"data\":{\"k\":\"\\\\\",\"l\":[[{}],{\"a\":[]}]}}",
    "{}",
    "{\"metadata\":{\"name\":\"\\u00e9\\n\"}}",
};

/* Every piece size from 1 byte to the whole body gives the same result. */
static void test_list_stream_every_piece_size(void **state) {
  (void)state;
  char body[2048];
  snprintf(body, sizeof(body), LIST_HEAD "\"items\": [ %s ,\n%s,%s\t,%s ] ,\"extra\":[1,{\"items\":[2]}]}",
           ITEMS[0], ITEMS[1], ITEMS[2], ITEMS[3]);
  const char *env = LIST_HEAD "\"items\": [] ,\"extra\":[1,{\"items\":[2]}]}";
  for (size_t piece = 0; piece <= strlen(body); piece++) {
    kin__list_stream ls;
    got g = {0};
    int rc = split(&ls, &g, body, piece);
    if (rc) fail_msg("piece %zu: rc %d", piece, rc);
    assert_int_equal(g.n, 4);
    for (size_t i = 0; i < 4; i++) assert_string_equal(g.items[i], ITEMS[i]);
    assert_string_equal(ls.env, env);
    assert_int_equal(ls.env_len, strlen(env));
    assert_int_equal(ls.kind_len, 9);
    assert_memory_equal(ls.kind, "ConfigMap", 9);
    assert_int_equal(ls.av_len, 2);
    assert_memory_equal(ls.api_version, "v1", 2);
    kin__list_stream_free(&ls);
    got_free(&g);
  }
}

/* An empty list, and a list whose kind comes after the items (it cannot be
 * given to them: kind_len stays 0) or is escaped. */
static void test_list_stream_empty_and_late_kind(void **state) {
  (void)state;
  kin__list_stream ls;
  got g = {0};
  assert_int_equal(split(&ls, &g, "{\"items\":[],\"kind\":\"PodList\",\"apiVersion\":\"v1\"}", 3), 0);
  assert_int_equal(g.n, 0);
  assert_int_equal(ls.kind_len, 0);
  kin__list_stream_free(&ls);

  assert_int_equal(split(&ls, &g, "{\"apiVersion\":\"v1\",\"items\":[{\"a\":1}],\"kind\":\"PodList\"}", 0), 0);
  assert_int_equal(g.n, 1);
  assert_int_equal(ls.kind_len, 0);
  kin__list_stream_free(&ls);
  got_free(&g);

  assert_int_equal(split(&ls, &g, "{\"kind\":\"Pod\\u004cist\",\"apiVersion\":\"v1\",\"items\":[]}", 1), 0);
  assert_int_equal(ls.kind_len, 0); /* escaped: not used */
  kin__list_stream_free(&ls);

  assert_int_equal(split(&ls, &g, "{\"kind\":\"Pod\tList\",\"apiVersion\":\"v1\",\"items\":[]}", 1), 0);
  assert_int_equal(ls.kind_len, 0); /* a control character (the envelope check refuses it) */
  kin__list_stream_free(&ls);

  /* the first kind counts */
  assert_int_equal(split(&ls, &g, "{\"kind\":\"Status\",\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[]}", 2), 0);
  assert_int_equal(ls.kind_len, 0);
  kin__list_stream_free(&ls);
}

/* Bodies that are no list fail, at any piece size; an item that is no
 * object is named. */
static void test_list_stream_errors(void **state) {
  (void)state;
  static const struct {
    const char *body;
    size_t bad_item; /* 1 + the item named, 0: none */
  } cases[] = {
      {"{\"items\":[{\"a\":1},\"not an object\"]}", 2},
      {"{\"items\":[5]}", 1},
      {"{\"items\":[{},]}", 0},       /* a trailing comma */
      {"{\"items\":[{} {}]}", 0},     /* a missing comma */
      {"{\"items\":[,{}]}", 0},
      {"{\"items\":[{\"a\":\"x}]}", 0}, /* unterminated */
      {"{\"items\":[{}]", 0},          /* the list never closes */
      {"{\"items\":[{}]}}", 0},        /* one close too many */
      {"", 0},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    for (size_t piece = 0; piece <= 4; piece++) {
      kin__list_stream ls;
      got g = {0};
      int rc = split(&ls, &g, cases[c].body, piece);
      if (rc != KIN_EINVAL) fail_msg("case %zu piece %zu: rc %d", c, piece, rc);
      assert_int_equal(ls.bad_item, cases[c].bad_item);
      /* it keeps failing */
      assert_int_equal(kin__list_stream_feed(&ls, "{}", 2), KIN_EINVAL);
      kin__list_stream_free(&ls);
      got_free(&g);
    }
  }
}

/* A callback's error stops the splitter and is returned from then on. */
static void test_list_stream_callback_error(void **state) {
  (void)state;
  kin__list_stream ls;
  got g = {.fail_at = 2};
  assert_int_equal(split(&ls, &g, "{\"items\":[{},{},{}]}", 1), KIN_ENOMEM);
  assert_int_equal(g.n, 1);
  assert_int_equal(kin__list_stream_finish(&ls), KIN_ENOMEM);
  kin__list_stream_free(&ls);
  got_free(&g);
}

/* Random bodies of random items cut at random places split as cut whole. */
static void test_list_stream_random_cuts(void **state) {
  (void)state;
  srand(7);
  for (int round = 0; round < 200; round++) {
    char body[8192];
    size_t n = (size_t)snprintf(body, sizeof(body), LIST_HEAD "\"items\":[");
    int nitems = rand() % 6;
    for (int i = 0; i < nitems; i++)
      n += (size_t)snprintf(body + n, sizeof(body) - n, "%s%s", i ? "," : "",
                            ITEMS[rand() % 4]);
    snprintf(body + n, sizeof(body) - n, "]}");
    kin__list_stream whole, cut;
    got gw = {0}, gc = {0};
    assert_int_equal(split(&whole, &gw, body, 0), 0);
    kin__list_stream_init(&cut, on_item, &gc);
    size_t len = strlen(body);
    for (size_t i = 0; i < len;) {
      size_t k = 1 + (size_t)rand() % 40;
      if (k > len - i) k = len - i;
      assert_int_equal(kin__list_stream_feed(&cut, body + i, k), 0);
      i += k;
    }
    assert_int_equal(kin__list_stream_finish(&cut), 0);
    assert_int_equal(gw.n, (size_t)nitems);
    assert_int_equal(gc.n, gw.n);
    for (size_t i = 0; i < gw.n; i++) assert_string_equal(gc.items[i], gw.items[i]);
    assert_string_equal(cut.env, whole.env);
    kin__list_stream_free(&whole);
    kin__list_stream_free(&cut);
    got_free(&gw);
    got_free(&gc);
  }
}

KIN_SUITE(list_stream,
          cmocka_unit_test(test_list_stream_every_piece_size),
          cmocka_unit_test(test_list_stream_empty_and_late_kind),
          cmocka_unit_test(test_list_stream_errors),
          cmocka_unit_test(test_list_stream_callback_error),
          cmocka_unit_test(test_list_stream_random_cuts))
