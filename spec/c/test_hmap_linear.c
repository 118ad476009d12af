/* test_hmap_linear.c -- the hash map stays linear when one map's entries
 * are replayed in slot order into another, as a WatchList's initial events
 * are (reflector_watch.c: temp -> the DeltaFIFO's items -> the indexer).
 * Counts the slots inserts stepped over (kin__hmap_probes); times nothing. When two
 * maps placed keys by the same bits, a replay at 0.5-0.75 of a power of two
 * built probe runs of thousands (2.2 s of CPU at 150k against 0.9 s at
 * 120k). */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"

/* Keys shaped like the objects of a namespace. */
static char **make_keys(size_t n) {
  char **k = malloc(n * sizeof(*k));
  assert_non_null(k);
  for (size_t i = 0; i < n; i++) {
    char b[64];
    snprintf(b, sizeof b, "bench-%zu/cm-%07zu", i % 16, i);
    k[i] = strdup(b);
    assert_non_null(k[i]);
  }
  return k;
}

/* Copies src into a fresh dst in src's slot order. */
static void replay(const kin__hmap *src, kin__hmap *dst) {
  kin__hmap_init_borrowed(dst);
  size_t pos = 0;
  kin__hmap_entry *e;
  while ((e = kin__hmap_next(src, &pos))) assert_int_equal(kin__hmap_put(dst, e->key, e->val, NULL), 1);
  assert_int_equal(kin__hmap_len(dst), kin__hmap_len(src));
}

/* Slots stepped over per key by the inserts into the worse of two maps
 * chained by replay from a first one filled in key order (*first: the
 * first's). */
static double chain_displacement(size_t n, double *first) {
  char **k = make_keys(n);
  kin__hmap a, b, c;
  kin__hmap_init_borrowed(&a);
  for (size_t i = 0; i < n; i++) assert_int_equal(kin__hmap_put(&a, k[i], k[i], NULL), 1);
  replay(&a, &b);
  replay(&b, &c);
  *first = (double)kin__hmap_probes(&a) / (double)n;
  double worst = (double)kin__hmap_probes(&b) / (double)n;
  double d = (double)kin__hmap_probes(&c) / (double)n;
  if (d < worst) d = worst;
  kin__hmap_free(&a);
  kin__hmap_free(&b);
  kin__hmap_free(&c);
  for (size_t i = 0; i < n; i++) free(k[i]);
  free(k);
  return d;
}

/* Linear probing at the map's largest load (3/4) steps over about 8 slots
 * for an insert, a few on average over a map's growth; a replay must stay
 * in the range of inserts in key order at every size, including 0.5-0.75
 * of a power of two (150k, 300k of 262144, 524288). */
static void test_hmap_linear_ReplayInSlotOrderStaysShort(void **state) {
  (void)state;
  int verbose = getenv("KIN_TEST_VERBOSE") != NULL;
  static const size_t sizes[] = {100000, 120000, 150000, 200000, 300000};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    double first, d = chain_displacement(sizes[i], &first);
    if (verbose) printf("# %zu keys: %.2f per key in key order, %.2f replayed\n", sizes[i], first, d);
    if (!(d <= 2 * first + 1.0))
      fail_msg("%zu keys: %.2f slots stepped over per key by a replay (%.2f in key order)",
               sizes[i], d, first);
  }
}

/* Two maps of the same size place the same keys differently. */
static void test_hmap_linear_SeedsDiffer(void **state) {
  (void)state;
  kin__hmap a, b;
  kin__hmap_init(&a);
  kin__hmap_init(&b);
  assert_int_equal(kin__hmap_put(&a, "k", NULL, NULL), 1);
  assert_int_equal(kin__hmap_put(&b, "k", NULL, NULL), 1);
  assert_int_not_equal(a.seed, b.seed);
  kin__hmap_free(&a);
  kin__hmap_free(&b);
}

KIN_SUITE(hmap_linear, cmocka_unit_test(test_hmap_linear_ReplayInSlotOrderStaysShort),
          cmocka_unit_test(test_hmap_linear_SeedsDiffer))
