/* test_event_correlator.c -- client-go's EventCorrelator semantics
 * (tools/record/events_cache_test.go: TestEventCorrelator,
 * TestEventAggregatorByReasonFunc, TestSpamFilter...) on the pure unit
 * csrc/core/events/event_correlator.c, with times passed in: identical
 * events counted into one, similar ones combined after 10 within 10
 * minutes, a spam filter per source and object (burst 25, one token per
 * 5 minutes). */
#include "kin_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_correlator.h"
#include "kin.h"

#define SEC KIN_NSEC_PER_SEC
#define T0 (1700000000ULL * SEC)

static const kin_event_ref POD = {.api_version = "v1", .kind = "Pod", .namespace_ = "ns",
                                  .name = "web-0", .uid = "u-1", .resource_version = "7"};
static const kin_event_ref POD2 = {.api_version = "v1", .kind = "Pod", .namespace_ = "ns",
                                   .name = "web-1", .uid = "u-2", .resource_version = "8"};

static kin__event_in ev(const kin_event_ref *ref, const char *reason, const char *msg) {
  kin__event_in e = {.component = "ctl", .host = "h1", .ref = ref, .type = "Normal",
                     .reason = reason, .message = msg};
  return e;
}

/* Correlates e at t; the caller frees *out. */
static void correlate(kin__event_correlator *c, kin__event_in e, uint64_t t, kin__event_out *out) {
  assert_int_equal(kin__event_correlate(c, &e, t, out), 0);
}

static void test_event_correlator_IdenticalEventsCountIntoOne(void **state) {
  (void)state;
  kin__event_correlator *c = kin__event_correlator_new(NULL);
  kin__event_out o1, o2, o3, other;
  correlate(c, ev(&POD, "Created", "made it"), T0, &o1);
  assert_false(o1.skip);
  assert_false(o1.repeat);
  assert_int_equal(o1.count, 1);
  char want[64];
  snprintf(want, sizeof(want), "web-0.%llx", (unsigned long long)T0);
  assert_string_equal(o1.name, want);
  assert_string_equal(o1.message, "made it");
  correlate(c, ev(&POD, "Created", "made it"), T0 + 5 * SEC, &o2);
  assert_true(o2.repeat);
  assert_int_equal(o2.count, 2);
  assert_string_equal(o2.name, o1.name);
  assert_true(o2.first_ns == T0);
  assert_true(o2.last_ns == T0 + 5 * SEC);
  correlate(c, ev(&POD, "Created", "made it"), T0 + 6 * SEC, &o3);
  assert_int_equal(o3.count, 3);
  /* another message, reason or object: another Event */
  correlate(c, ev(&POD, "Created", "made it again"), T0 + 7 * SEC, &other);
  assert_false(other.repeat);
  assert_int_equal(other.count, 1);
  kin__event_out_free(&other);
  correlate(c, ev(&POD, "Deleted", "made it"), T0 + 8 * SEC, &other);
  assert_false(other.repeat);
  kin__event_out_free(&other);
  correlate(c, ev(&POD2, "Created", "made it"), T0 + 9 * SEC, &other);
  assert_false(other.repeat);
  kin__event_out_free(&other);
  kin__event_out_free(&o1);
  kin__event_out_free(&o2);
  kin__event_out_free(&o3);
  kin__event_correlator_free(c);
}

static void test_event_correlator_SimilarEventsCombinedAfterTen(void **state) {
  (void)state;
  kin__event_correlator *c = kin__event_correlator_new(NULL);
  char msg[64];
  kin__event_out o;
  /* nine distinct messages stay themselves */
  for (int i = 1; i <= 9; i++) {
    snprintf(msg, sizeof(msg), "attempt %d failed", i);
    correlate(c, ev(&POD, "Failed", msg), T0 + (uint64_t)i * SEC, &o);
    assert_false(o.repeat);
    assert_string_equal(o.message, msg);
    kin__event_out_free(&o);
  }
  /* the tenth is combined into a new Event */
  correlate(c, ev(&POD, "Failed", "attempt 10 failed"), T0 + 10 * SEC, &o);
  assert_false(o.repeat);
  assert_int_equal(o.count, 1);
  assert_string_equal(o.message, "(combined from similar events): attempt 10 failed");
  char *agg_name = strdup(o.name);
  kin__event_out_free(&o);
  /* later distinct ones count into the combined Event */
  correlate(c, ev(&POD, "Failed", "attempt 11 failed"), T0 + 11 * SEC, &o);
  assert_true(o.repeat);
  assert_int_equal(o.count, 2);
  assert_string_equal(o.name, agg_name);
  assert_string_equal(o.message, "(combined from similar events): attempt 11 failed");
  kin__event_out_free(&o);
  /* another reason is not similar */
  correlate(c, ev(&POD, "Retried", "attempt 12"), T0 + 12 * SEC, &o);
  assert_false(o.repeat);
  assert_string_equal(o.message, "attempt 12");
  kin__event_out_free(&o);
  /* more than 10 minutes after the last similar one: counting starts over */
  correlate(c, ev(&POD, "Failed", "attempt 13 failed"), T0 + 11 * SEC + 601 * SEC, &o);
  assert_string_equal(o.message, "attempt 13 failed");
  kin__event_out_free(&o);
  free(agg_name);
  kin__event_correlator_free(c);
}

static void test_event_correlator_SimilarWithinIntervalOnly(void **state) {
  (void)state;
  kin__event_correlator *c = kin__event_correlator_new(NULL);
  char msg[64];
  kin__event_out o;
  /* ten distinct messages, each 9 minutes after the previous: the record
   * never ages out (its time moves with each), so the tenth is combined */
  for (int i = 1; i <= 10; i++) {
    snprintf(msg, sizeof(msg), "m%d", i);
    correlate(c, ev(&POD, "Slow", msg), T0 + (uint64_t)i * 540 * SEC, &o);
    if (i < 10) assert_string_equal(o.message, msg);
    else assert_string_equal(o.message, "(combined from similar events): m10");
    kin__event_out_free(&o);
  }
  /* a 601 s gap resets it: the next nine are themselves again */
  for (int i = 11; i <= 19; i++) {
    snprintf(msg, sizeof(msg), "m%d", i);
    correlate(c, ev(&POD, "Slow", msg), T0 + 5400 * SEC + 601 * SEC + (uint64_t)i * SEC, &o);
    assert_string_equal(o.message, msg);
    kin__event_out_free(&o);
  }
  kin__event_correlator_free(c);
}

static void test_event_correlator_SpamFilterBurst25Refill5Min(void **state) {
  (void)state;
  kin__event_correlator *c = kin__event_correlator_new(NULL);
  kin__event_out o;
  /* 25 events of one source and object pass at the same instant (distinct
   * reasons so that none is aggregated), the 26th is skipped */
  char reason[32];
  for (int i = 0; i < 25; i++) {
    snprintf(reason, sizeof(reason), "Reason%d", i);
    correlate(c, ev(&POD, reason, "x"), T0, &o);
    assert_false(o.skip);
    kin__event_out_free(&o);
  }
  correlate(c, ev(&POD, "Reason25", "x"), T0, &o);
  assert_true(o.skip);
  assert_null(o.name);
  kin__event_out_free(&o);
  /* another object of the same source has its own bucket */
  correlate(c, ev(&POD2, "Reason0", "x"), T0, &o);
  assert_false(o.skip);
  kin__event_out_free(&o);
  /* another source too */
  kin__event_in other = ev(&POD, "Reason0", "x");
  other.component = "other-ctl";
  correlate(c, other, T0, &o);
  assert_false(o.skip);
  kin__event_out_free(&o);
  /* 299 s later still no token; at 300 s exactly one */
  correlate(c, ev(&POD, "Reason26", "x"), T0 + 299 * SEC, &o);
  assert_true(o.skip);
  kin__event_out_free(&o);
  correlate(c, ev(&POD, "Reason27", "x"), T0 + 300 * SEC, &o);
  assert_false(o.skip);
  kin__event_out_free(&o);
  correlate(c, ev(&POD, "Reason28", "x"), T0 + 300 * SEC, &o);
  assert_true(o.skip);
  kin__event_out_free(&o);
  /* a repeat that was filtered still counted: the next one shows it */
  correlate(c, ev(&POD, "Reason0", "x"), T0 + 600 * SEC, &o);
  assert_false(o.skip);
  assert_true(o.repeat);
  assert_int_equal(o.count, 2);
  kin__event_out_free(&o);
  /* 25 x 5 min after the last token was taken the bucket is full again (25,
   * not more) */
  int passed = 0;
  for (int i = 0; i < 40; i++) {
    snprintf(reason, sizeof(reason), "Later%d", i);
    correlate(c, ev(&POD, reason, "x"), T0 + 10000 * SEC, &o);
    passed += !o.skip;
    kin__event_out_free(&o);
  }
  assert_int_equal(passed, 25);
  kin__event_correlator_free(c);
}

static void test_event_correlator_LruEvictsOldestKey(void **state) {
  (void)state;
  kin__event_correlator_opts opts = {.max_entries = 2};
  kin__event_correlator *c = kin__event_correlator_new(&opts);
  kin__event_out o;
  correlate(c, ev(&POD, "A", "x"), T0, &o);
  kin__event_out_free(&o);
  correlate(c, ev(&POD, "B", "x"), T0 + 1, &o);
  kin__event_out_free(&o);
  correlate(c, ev(&POD, "C", "x"), T0 + 2, &o); /* evicts A's entries */
  kin__event_out_free(&o);
  correlate(c, ev(&POD, "A", "x"), T0 + 3, &o);
  assert_false(o.repeat);
  kin__event_out_free(&o);
  correlate(c, ev(&POD, "C", "x"), T0 + 4, &o);
  assert_true(o.repeat);
  kin__event_out_free(&o);
  kin__event_correlator_free(c);
}

KIN_SUITE(event_correlator, cmocka_unit_test(test_event_correlator_IdenticalEventsCountIntoOne),
          cmocka_unit_test(test_event_correlator_SimilarEventsCombinedAfterTen),
          cmocka_unit_test(test_event_correlator_SimilarWithinIntervalOnly),
          cmocka_unit_test(test_event_correlator_SpamFilterBurst25Refill5Min),
          cmocka_unit_test(test_event_correlator_LruEvictsOldestKey))
