/* test_sim_write_log.c -- kinformer.sim's write log (kin_sim_write_log_start,
 * kin_sim_write_log_take), which kinformer.replay reads an operator's writes
 * from. Not a port: client-go has no counterpart (kube-apiserver's audit
 * log is the nearest). */
#include "kin_test.h"

#include "kin.h"
#include "sim_client.h"

/* The log taken now, parsed (an array; the test fails otherwise). */
static json_t *take(kin_sim *sim) {
  char *s = kin_sim_write_log_take(sim);
  assert_non_null(s);
  json_error_t e;
  json_t *log = json_loads(s, 0, &e);
  free(s);
  assert_true(json_is_array(log));
  return log;
}

static void test_sim_WriteLogKeepsApiWritesAfterStart(void **state) {
  kin_sim *sim = sim_start(0, 60000);
  assert_null(kin_sim_write_log_take(sim)); /* never started */
  sim_put_cm(sim, "default", "before", NULL, "0");
  kin_sim_write_log_start(sim);
  sim_resp r = sim_do(sim, "POST", "/api/v1/namespaces/default/configmaps", NULL,
                      "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\"},"
                      "\"data\":{\"k\":\"v\"}}",
                      "User-Agent: write-log-test/1");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  r = sim_req(sim, "GET", "/api/v1/namespaces/default/configmaps/a", NULL); /* a read: not kept */
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_do(sim, "PATCH", "/api/v1/namespaces/default/configmaps/a?dryRun=All",
             "application/merge-patch+json", "{\"data\":{\"k\":\"w\"}}", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/kinformer-sim/faults", "{\"dropWatches\":true}"); /* admin: not kept */
  sim_resp_free(&r);
  r = sim_req(sim, "DELETE", "/api/v1/namespaces/default/configmaps/a", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);

  json_t *log = take(sim);
  assert_int_equal(json_array_size(log), 3);
  json_t *e = json_array_get(log, 0);
  assert_string_equal(jstr(e, "method"), "POST");
  assert_string_equal(jstr(e, "uri"), "/api/v1/namespaces/default/configmaps");
  assert_string_equal(jstr(e, "userAgent"), "write-log-test/1");
  assert_non_null(strstr(jstr(e, "body"), "\"k\":\"v\""));
  e = json_array_get(log, 1);
  assert_string_equal(jstr(e, "method"), "PATCH");
  assert_string_equal(jstr(e, "uri"), "/api/v1/namespaces/default/configmaps/a?dryRun=All");
  assert_string_equal(jstr(e, "body"), "{\"data\":{\"k\":\"w\"}}");
  e = json_array_get(log, 2);
  assert_string_equal(jstr(e, "method"), "DELETE");
  assert_string_equal(jstr(e, "body"), "");
  json_decref(log);
  /* A take empties the log and keeps logging. */
  log = take(sim);
  assert_int_equal(json_array_size(log), 0);
  json_decref(log);
  sim_put_cm(sim, "default", "after", NULL, "1");
  log = take(sim);
  assert_int_equal(json_array_size(log), 1);
  json_decref(log);
  kin_sim_free(sim);
}

static void test_sim_WriteLogSkipsInjectedFailures(void **state) {
  kin_sim *sim = sim_start(0, 60000);
  kin_sim_write_log_start(sim);
  assert_int_equal(kin_sim_fail_next(sim, 503, 1), 0);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"f\"}}");
  assert_int_equal(r.code, 503);
  sim_resp_free(&r);
  json_t *log = take(sim);
  assert_int_equal(json_array_size(log), 0);
  json_decref(log);
  kin_sim_free(sim);
}

KIN_SUITE(sim_write_log, cmocka_unit_test(test_sim_WriteLogKeepsApiWritesAfterStart),
          cmocka_unit_test(test_sim_WriteLogSkipsInjectedFailures))
