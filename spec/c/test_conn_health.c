/* test_conn_health.c -- "never blind" (issue 12) against kinformer.sim:
 * the fault proxy (spec/c/fault_proxy.h) itself, and an informer whose
 * connection stalls behind it. The sim speaks HTTP/1.1 only, so what is
 * exercised here is the watch idle timeout (the guard over HTTP/1.1) and
 * that the engine never probes a connection it cannot multiplex on; the
 * HTTP/2 health probe is exercised against kube-apiserver in
 * test_e2e_stall.c. */
#include "kin_test.h"

#include <curl/curl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fault_proxy.h"
#include "handler_rec.h"
#include "informer_factory.h"
#include "io_engine.h"
#include "io_engine_int.h"
#include "kin.h"
#include "log.h"
#include "rest_client.h"
#include "sim.h"
#include "sim_client.h"

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}


static size_t body_sink(char *p, size_t size, size_t nmemb, void *ud) {
  size_t *n = ud;
  *n += size * nmemb;
  return size * nmemb;
}

/* GET url on the easy handle c (reused, so its connection is kept);
 * returns the CURLcode and the body length in *len. */
static CURLcode get_on(CURL *c, const char *url, long timeout_ms, size_t *len) {
  *len = 0;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, len);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  return curl_easy_perform(c);
}

static void cmd(kin_fault_proxy *p, const char *line) {
  char reply[1024];
  int rc = kin_fault_proxy_command(p, line, reply, sizeof(reply));
  if (rc) fail_msg("proxy command '%s': %s", line, reply);
}

/* The proxy: loopback only; pause holds an open connection without
 * closing it, resume/new connections flow, slow limits, cut closes,
 * partition holds new connections too, and the line protocol reports
 * misuse. */
static void test_conn_health_proxy_faults(void **state) {
  (void)state;
  kin_fault_proxy *p = NULL;
  assert_int_equal(kin_fault_proxy_start("10.1.2.3", 80, 0, &p), KIN_EINVAL);
  assert_int_equal(kin_fault_proxy_start("example.com", 80, 0, &p), KIN_EINVAL);
  assert_null(p);
  kin_sim *sim = kin_test_sim_start(0);
  assert_int_equal(kin_fault_proxy_start("127.0.0.1", kin_sim_port(sim), 0, &p), 0);
  char url[256], big[256];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/version", (unsigned)kin_fault_proxy_port(p));
  char val[8001];
  memset(val, 'x', 8000);
  val[8000] = 0;
  char *body = malloc(9000);
  snprintf(body, 9000,
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"big\"},"
           "\"data\":{\"v\":\"%s\"}}",
           val);
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", body);
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  free(body);
  snprintf(big, sizeof(big), "http://127.0.0.1:%u/api/v1/namespaces/default/configmaps/big",
           (unsigned)kin_fault_proxy_port(p));

  CURL *c = curl_easy_init();
  size_t len;
  assert_int_equal(get_on(c, url, 5000, &len), CURLE_OK);
  assert_true(len > 0);
  unsigned acc, open;
  kin_fault_proxy_counts(p, &acc, &open);
  assert_int_equal(acc, 1);
  assert_int_equal(open, 1);

  /* Paused: the kept connection carries nothing, yet stays open. */
  cmd(p, "pause");
  assert_int_equal(get_on(c, url, 500, &len), CURLE_OPERATION_TIMEDOUT);
  /* A new connection is not paused. */
  CURL *c2 = curl_easy_init();
  assert_int_equal(get_on(c2, url, 5000, &len), CURLE_OK);
  cmd(p, "resume");

  /* slow: 8000 bytes/s on the kept connection of c2, an 8 kB object. */
  cmd(p, "slow 8000");
  double t0 = mono();
  assert_int_equal(get_on(c2, big, 10000, &len), CURLE_OK);
  double took = mono() - t0;
  assert_true(len > 8000);
  if (took < 0.7) fail_msg("slow 8000 moved %zu bytes in %.3f s", len, took);

  char reply[1024];
  assert_int_equal(kin_fault_proxy_command(p, "conns", reply, sizeof(reply)), 0);
  assert_non_null(strstr(reply, "slow=8000"));
  assert_int_equal(kin_fault_proxy_command(p, "pause 999", reply, sizeof(reply)), KIN_EINVAL);
  assert_non_null(strstr(reply, "no connection 999"));
  assert_int_equal(kin_fault_proxy_command(p, "slow fast", reply, sizeof(reply)), KIN_EINVAL);
  assert_int_equal(kin_fault_proxy_command(p, "jump", reply, sizeof(reply)), KIN_EINVAL);
  assert_non_null(strstr(reply, "unknown command"));

  /* cut closes every connection. */
  cmd(p, "cut all");
  KIN_EVENTUALLY((kin_fault_proxy_counts(p, NULL, &open), open == 0), 2000);
  assert_int_equal(get_on(c2, url, 5000, &len), CURLE_OK); /* reconnects */

  /* partition: the kept connection and a new one both carry nothing
   * (connects succeed), until it is lifted. */
  cmd(p, "partition on");
  assert_int_equal(get_on(c2, url, 300, &len), CURLE_OPERATION_TIMEDOUT);
  CURL *c3 = curl_easy_init();
  assert_int_equal(get_on(c3, url, 300, &len), CURLE_OPERATION_TIMEDOUT);
  assert_int_equal(kin_fault_proxy_command(p, "stats", reply, sizeof(reply)), 0);
  assert_non_null(strstr(reply, "partitioned=1"));
  assert_int_equal(kin_fault_proxy_command(p, "partition maybe", reply, sizeof(reply)),
                   KIN_EINVAL);
  cmd(p, "partition off");
  assert_int_equal(get_on(c3, url, 5000, &len), CURLE_OK);
  curl_easy_cleanup(c3);
  curl_easy_cleanup(c);
  curl_easy_cleanup(c2);
  kin_fault_proxy_free(p);
  kin_sim_free(sim);
}

static void test_conn_health_engine_opts(void **state) {
  (void)state;
  kin_io_engine *e = NULL;
  kin_io_engine_opts o = {.read_idle_ms = 1000, .ping_timeout_ms = -1};
  assert_int_equal(kin_io_engine_new_opts(&o, &e), KIN_EINVAL);
  assert_null(e);
  o.ping_timeout_ms = 500;
  assert_int_equal(kin_io_engine_new_opts(&o, &e), 0);
  assert_int_equal(kin_io_engine_set_health(e, 2000, -5), KIN_EINVAL);
  assert_int_equal(kin_io_engine_set_health(e, -1, 0), 0);
  kin_io_health_stats st;
  kin_io_engine_health_stats(e, &st);
  assert_int_equal(st.probes, 0);
  kin_io_engine_free(e);
}

/* A handle of e with these per-request health settings (not submitted). */
static kin_io_handle *health_req(kin_io_engine *e, long read_idle_ms, long ping_ms) {
  kin_io_request r = {.url = "http://127.0.0.1:1/", .read_idle_ms = read_idle_ms,
                      .ping_timeout_ms = ping_ms};
  kin_io_handle *h = kin__io_handle_new(e, &r);
  assert_non_null(h);
  return h;
}

/* What the health check picks for a connection from the requests on it:
 * the smallest read-idle and the smallest ping timeout, a request's unset
 * value counting as the engine's; the period is an eighth of the smallest,
 * 20 ms .. 250 ms. */
static void test_conn_health_per_request_pick(void **state) {
  (void)state;
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  kin_io_handle *a = health_req(e, 2000, 5000), *b = health_req(e, 7000, 1000),
                *dflt = health_req(e, 0, 0), *noprobe = health_req(e, -1, 0);
  const long EI = KIN_IO_READ_IDLE_MS, EP = KIN_IO_PING_TIMEOUT_MS;
  long idle = -1, ping = 0;
  kin__io_health_fold(dflt, EI, EP, &idle, &ping); /* sets nothing: the engine's */
  assert_int_equal(idle, 30000);
  assert_int_equal(ping, 15000);
  assert_int_equal(kin__io_health_interval(idle, ping), 250);
  kin__io_health_fold(a, EI, EP, &idle, &ping);
  kin__io_health_fold(b, EI, EP, &idle, &ping);
  assert_int_equal(idle, 2000); /* a's */
  assert_int_equal(ping, 1000); /* b's */
  assert_int_equal(kin__io_health_interval(idle, ping), 125);
  /* Order does not matter. */
  long idle2 = -1, ping2 = 0;
  kin__io_health_fold(b, EI, EP, &idle2, &ping2);
  kin__io_health_fold(a, EI, EP, &idle2, &ping2);
  assert_int_equal(idle2, 2000);
  assert_int_equal(ping2, 1000);
  /* A request that wants no probe does not lift another's. */
  kin__io_health_fold(noprobe, EI, EP, &idle2, &ping2);
  assert_int_equal(idle2, 2000);
  idle2 = -1, ping2 = 0;
  kin__io_health_fold(noprobe, EI, EP, &idle2, &ping2);
  assert_int_equal(idle2, -1);
  assert_int_equal(ping2, 15000);
  /* Probing off on the engine: only a request that asks gets a probe. */
  idle2 = -1, ping2 = 0;
  kin__io_health_fold(dflt, -1, EP, &idle2, &ping2);
  assert_int_equal(idle2, -1);
  kin__io_health_fold(a, -1, EP, &idle2, &ping2);
  assert_int_equal(idle2, 2000);
  assert_int_equal(ping2, 5000);
  /* The period's clamps. */
  assert_int_equal(kin__io_health_interval(100, 100), 20);
  assert_int_equal(kin__io_health_interval(1600, 5000), 200);
  assert_int_equal(kin__io_health_interval(-1, 1200), 150);
  assert_int_equal(kin__io_health_interval(-1, LONG_MAX / 2), 250);
  kin_io_handle_release(a);
  kin_io_handle_release(b);
  kin_io_handle_release(dflt);
  kin_io_handle_release(noprobe);
  kin_io_engine_free(e);
}

static int sink_data(void *ud, const char *p, size_t n) {
  (void)ud, (void)p, (void)n;
  return 0;
}

static int stats_are(kin_io_engine *e, long idle, long ping, long every) {
  kin_io_health_stats st;
  kin_io_engine_health_stats(e, &st);
  return st.read_idle_ms == idle && st.ping_timeout_ms == ping && st.interval_ms == every;
}

/* The same on a running engine: two watches with their own settings (on
 * the sim's HTTP/1.1 connections, so nothing is probed) set what the
 * check applies, and it goes back to the engine's as they end. */
static void test_conn_health_per_request_running(void **state) {
  (void)state;
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  KIN_EVENTUALLY(stats_are(e, 30000, 15000, 250), 2000);
  char url[160];
  snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/namespaces/default/configmaps?watch=1",
           (unsigned)kin_sim_port(sim));
  kin_io_request ra = {.url = url, .read_idle_ms = 2000, .ping_timeout_ms = 5000,
                       .on_data = sink_data};
  kin_io_request rb = {.url = url, .read_idle_ms = 7000, .ping_timeout_ms = 1000,
                       .on_data = sink_data};
  kin_io_handle *a = NULL, *b = NULL;
  assert_int_equal(kin_io_submit(e, &ra, &a), 0);
  assert_int_equal(kin_io_submit(e, &rb, &b), 0);
  KIN_EVENTUALLY(stats_are(e, 2000, 1000, 125), 3000);
  kin_io_cancel(b);
  KIN_EVENTUALLY(stats_are(e, 2000, 5000, 250), 3000);
  kin_io_cancel(a);
  KIN_EVENTUALLY(stats_are(e, 30000, 15000, 250), 3000);
  kin_io_handle_release(a);
  kin_io_handle_release(b);
  kin_io_health_stats st;
  kin_io_engine_health_stats(e, &st);
  assert_int_equal(st.probes, 0);
  kin_io_engine_free(e);
  kin_sim_free(sim);
}

typedef struct {
  kin_sim *sim;
  kin_fault_proxy *proxy;
  kin_client *client;
  kin_informer_factory *f;
  kin_informer *inf;
} hfx;

/* An informer of configmaps in default through the proxy in front of a
 * TLS sim, its reflector's watch idle timeout set per informer. */
static void hfx_start(hfx *fx, uint64_t watch_idle_ns, long read_idle_ms, long ping_ms) {
  memset(fx, 0, sizeof(*fx));
  fx->sim = kin_test_sim_start(1);
  assert_int_equal(kin_fault_proxy_start("127.0.0.1", kin_sim_port(fx->sim), 0, &fx->proxy), 0);
  char url[128];
  snprintf(url, sizeof(url), "https://127.0.0.1:%u", (unsigned)kin_fault_proxy_port(fx->proxy));
  kin_rest_config rc;
  memset(&rc, 0, sizeof(rc));
  rc.host = url;
  rc.insecure = 1;
  kin_client_opts o = {.qps = -1, .max_retries = -1};
  char err[256];
  assert_int_equal(kin_client_new(&rc, NULL, &o, &fx->client, err, sizeof(err)), 0);
  assert_int_equal(kin_io_engine_set_health(kin_client_io(fx->client), read_idle_ms, ping_ms), 0);
  kin_informer_factory_config fc = {.client = fx->client,
                                    .backoff_initial_ns = 50 * KIN_NSEC_PER_MSEC,
                                    .backoff_max_ns = 200 * KIN_NSEC_PER_MSEC};
  assert_int_equal(kin_informer_factory_new(&fc, &fx->f), 0);
  kin_informer_opts io = {.resource = "v1/configmaps", .namespace = "default",
                          .idle_timeout_ns = watch_idle_ns};
  assert_int_equal(kin_informer_factory_informer(fx->f, &io, &fx->inf, err, sizeof(err)), 0);
  assert_int_equal(kin_informer_factory_start(fx->f), 0);
  char unsynced[256];
  assert_int_equal(kin_informer_factory_wait_for_cache_sync(fx->f, 10 * KIN_NSEC_PER_SEC,
                                                            unsynced, sizeof(unsynced)),
                   0);
}

static void hfx_free(hfx *fx) {
  kin_informer_factory_free(fx->f);
  kin_client_free(fx->client);
  kin_fault_proxy_free(fx->proxy);
  kin_sim_free(fx->sim);
}

static int cached(hfx *fx, const char *key) {
  kin_obj *o = kin_indexer_get(kin_informer_indexer(fx->inf), key);
  kin_obj_unref(o);
  return o != NULL;
}

/* Seconds until key is in the cache, or -1 after limit_s. */
static double time_to_see(hfx *fx, const char *key, double limit_s) {
  double t0 = mono();
  while (mono() - t0 < limit_s) {
    if (cached(fx, key)) return mono() - t0;
    kin_test_sleep_ms(10);
  }
  return -1;
}

/* The watch's connection stalls (HTTP/1.1): the watch idle timeout (1 s,
 * set on the informer) re-establishes it on a new connection, from the
 * last resourceVersion, and the object created meanwhile arrives. No probe
 * is sent: HTTP/1.1 cannot carry it on the stalled connection. */
static void test_conn_health_h1_stall(void **state) {
  (void)state;
  hfx fx;
  hfx_start(&fx, KIN_NSEC_PER_SEC, 200, 200);
  sim_put_cm(fx.sim, "default", "before", NULL, "1");
  KIN_EVENTUALLY(cached(&fx, "default/before"), 5000);
  log_capture(1);
  cmd(fx.proxy, "pause");
  sim_put_cm(fx.sim, "default", "during", NULL, "1");
  double t = time_to_see(&fx, "default/during", 10);
  if (t < 0) fail_msg("the informer did not see an object created during the stall within 10 s");
  if (!log_contains("no byte on the watch for 1000 ms")) fail_msg("log:\n%s", log_text);
  log_capture(0);
  kin_log(KIN_LOG_INFO, "test", "h1 stall: recovered in %.2f s (watch idle 1 s)", t);
  printf("    conn_health_h1_stall: recovered in %.2f s (watch idle timeout 1 s)\n", t);
  kin_io_health_stats st;
  kin_io_engine_health_stats(kin_client_io(fx.client), &st);
  assert_int_equal(st.probes, 0);
  assert_int_equal(st.dead_connections, 0);
  kin_reflector_stats rs;
  kin_reflector_get_stats(kin_informer_factory_reflector(fx.f, fx.inf), &rs);
  assert_true(rs.idle_timeouts >= 1);
  assert_int_equal(rs.lists, 1); /* resumed from the last RV, no relist */
  hfx_free(&fx);
}

/* The control: with the default 300 s watch idle timeout the same stall
 * blinds the informer (what issue 12 reports). */
static void test_conn_health_h1_blind_by_default(void **state) {
  (void)state;
  hfx fx;
  hfx_start(&fx, 0, 0, 0);
  /* the watch is up (as in h1_stall): the pause holds its connection */
  sim_put_cm(fx.sim, "default", "before", NULL, "1");
  KIN_EVENTUALLY(cached(&fx, "default/before"), 5000);
  cmd(fx.proxy, "pause");
  sim_put_cm(fx.sim, "default", "during", NULL, "1");
  assert_true(time_to_see(&fx, "default/during", 2) < 0);
  cmd(fx.proxy, "resume");
  KIN_EVENTUALLY(cached(&fx, "default/during"), 5000);
  hfx_free(&fx);
}

KIN_SUITE(conn_health, cmocka_unit_test(test_conn_health_proxy_faults),
          cmocka_unit_test(test_conn_health_engine_opts),
          cmocka_unit_test(test_conn_health_per_request_pick),
          cmocka_unit_test(test_conn_health_per_request_running),
          cmocka_unit_test(test_conn_health_h1_stall),
          cmocka_unit_test(test_conn_health_h1_blind_by_default))
