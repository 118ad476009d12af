/* test_metrics.c -- the Prometheus registry and exposition (metrics.h),
 * the controller collector (metrics_collectors.h) and the HTTP endpoints
 * (metrics_server.h) over real HTTP (libcurl). */
#include "kin_test.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "kin.h"
#include "metrics.h"
#include "metrics_collectors.h"
#include "metrics_int.h"
#include "metrics_server.h"

static char *render(kin_metrics_registry *r) {
  char *t = NULL;
  size_t n = 0;
  assert_int_equal(kin_metrics_render(r, &t, &n), 0);
  assert_int_equal(strlen(t), n);
  return t;
}

static kin_metric *reg(kin_metrics_registry *r, const char *name, kin_metric_type type,
                       const char *const *labels, int nlabels, const double *b, int nb) {
  kin_metric_opts o = {.name = name, .help = "Help of " "x", .type = type, .labels = labels,
                       .nlabels = nlabels, .buckets = b, .nbuckets = nb};
  kin_metric *m = NULL;
  char msg[200];
  assert_int_equal(kin_metrics_register(r, &o, &m, msg, sizeof msg), 0);
  return m;
}

static void test_metrics_FormatDouble(void **state) {
  char b[32];
  assert_string_equal(kin__metrics_fmt_double(b, 0), "0");
  assert_string_equal(kin__metrics_fmt_double(b, 1), "1");
  assert_string_equal(kin__metrics_fmt_double(b, 10), "10");
  assert_string_equal(kin__metrics_fmt_double(b, 0.005), "0.005");
  assert_string_equal(kin__metrics_fmt_double(b, 1e-8), "1e-08");
  assert_string_equal(kin__metrics_fmt_double(b, 100000), "100000");
  assert_string_equal(kin__metrics_fmt_double(b, 1e6), "1e+06");
  assert_string_equal(kin__metrics_fmt_double(b, 1234567), "1.234567e+06");
  assert_string_equal(kin__metrics_fmt_double(b, -2.5), "-2.5");
  assert_string_equal(kin__metrics_fmt_double(b, 0.1 + 0.2), "0.30000000000000004");
  assert_string_equal(kin__metrics_fmt_double(b, 1.0 / 0.0), "+Inf");
  assert_string_equal(kin__metrics_fmt_double(b, -1.0 / 0.0), "-Inf");
}

/* The exact text for a known set of metrics: sorted families, sorted
 * children, escaping of label values and help, histogram lines. */
static void test_metrics_ExactExposition(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  static const char *const kl[] = {"kind", "path"};
  kin_metric *c = reg(r, "b_total", KIN_METRIC_COUNTER, kl, 2, NULL, 0);
  kin_metric *g = reg(r, "a_gauge", KIN_METRIC_GAUGE, NULL, 0, NULL, 0);
  static const double bk[] = {0.1, 1, 10};
  static const char *const hl[] = {"op"};
  kin_metric *h = reg(r, "c_seconds", KIN_METRIC_HISTOGRAM, hl, 1, bk, 3);
  const char *v1[] = {"x", "C:\\dir \"q\"\nend"};
  const char *v2[] = {"a", "/"};
  assert_int_equal(kin_metric_add(c, v1, 2), 0);
  assert_int_equal(kin_metric_add(c, v2, 1), 0);
  assert_int_equal(kin_metric_add(c, v2, 0.5), 0);
  assert_int_equal(kin_metric_set(g, NULL, -3), 0);
  const char *op[] = {"get"};
  assert_int_equal(kin_metric_observe(h, op, 0.1), 0);
  assert_int_equal(kin_metric_observe(h, op, 5), 0);
  assert_int_equal(kin_metric_observe(h, op, 50), 0);
  char *t = render(r);
  const char *want =
      "# HELP a_gauge Help of x\n"
      "# TYPE a_gauge gauge\n"
      "a_gauge -3\n"
      "# HELP b_total Help of x\n"
      "# TYPE b_total counter\n"
      "b_total{kind=\"a\",path=\"/\"} 1.5\n"
      "b_total{kind=\"x\",path=\"C:\\\\dir \\\"q\\\"\\nend\"} 2\n"
      "# HELP c_seconds Help of x\n"
      "# TYPE c_seconds histogram\n"
      "c_seconds_bucket{op=\"get\",le=\"0.1\"} 1\n"
      "c_seconds_bucket{op=\"get\",le=\"1\"} 1\n"
      "c_seconds_bucket{op=\"get\",le=\"10\"} 2\n"
      "c_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"
      "c_seconds_sum{op=\"get\"} 55.1\n"
      "c_seconds_count{op=\"get\"} 3\n";
  assert_string_equal(t, want);
  free(t);
  double v = 0;
  assert_int_equal(kin_metric_get(c, v2, &v), 0);
  assert_true(v == 1.5);
  const char *none[] = {"no", "such"};
  assert_int_equal(kin_metric_get(c, none, &v), KIN_ENOENT);
  kin_metrics_registry_free(r);
}

static void test_metrics_HelpEscapingAndPlainZero(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  kin_metric_opts o = {.name = "z", .help = "line\\one\nline \"two\"", .type = KIN_METRIC_COUNTER};
  kin_metric *m;
  assert_int_equal(kin_metrics_register(r, &o, &m, NULL, 0), 0);
  char *t = render(r);
  assert_string_equal(t, "# HELP z line\\\\one\\nline \"two\"\n# TYPE z counter\nz 0\n");
  free(t);
  kin_metrics_registry_free(r);
}

static void test_metrics_RegisterShapes(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  static const char *const l1[] = {"a"};
  static const char *const l2[] = {"b"};
  kin_metric *m1 = reg(r, "x_total", KIN_METRIC_COUNTER, l1, 1, NULL, 0);
  kin_metric *m2 = reg(r, "x_total", KIN_METRIC_COUNTER, l1, 1, NULL, 0);
  assert_ptr_equal(m1, m2);
  assert_ptr_equal(kin_metrics_find(r, "x_total"), m1);
  char msg[200];
  kin_metric *m3 = NULL;
  kin_metric_opts o = {.name = "x_total", .help = "Help of x", .type = KIN_METRIC_COUNTER,
                       .labels = l2, .nlabels = 1};
  assert_int_equal(kin_metrics_register(r, &o, &m3, msg, sizeof msg), KIN_EEXIST);
  assert_non_null(strstr(msg, "x_total"));
  o.type = KIN_METRIC_GAUGE;
  o.labels = l1;
  assert_int_equal(kin_metrics_register(r, &o, &m3, msg, sizeof msg), KIN_EEXIST);
  o.name = "bad-name";
  assert_int_equal(kin_metrics_register(r, &o, &m3, msg, sizeof msg), KIN_EINVAL);
  assert_non_null(strstr(msg, "bad-name"));
  static const char *const le[] = {"le"};
  kin_metric_opts h = {.name = "h", .type = KIN_METRIC_HISTOGRAM, .labels = le, .nlabels = 1};
  assert_int_equal(kin_metrics_register(r, &h, &m3, msg, sizeof msg), KIN_EINVAL);
  static const double down[] = {2, 1};
  kin_metric_opts h2 = {.name = "h", .type = KIN_METRIC_HISTOGRAM, .buckets = down, .nbuckets = 2};
  assert_int_equal(kin_metrics_register(r, &h2, &m3, msg, sizeof msg), KIN_EINVAL);
  /* wrong operations */
  const char *v[] = {"1"};
  assert_int_equal(kin_metric_add(m1, v, -1), KIN_EINVAL);
  assert_int_equal(kin_metric_set(m1, v, 1), KIN_EINVAL);
  assert_int_equal(kin_metric_observe(m1, v, 1), KIN_EINVAL);
  kin_metrics_registry_free(r);
}

/* Default buckets: 11 bounds, observations land in the first bound >= v. */
static void test_metrics_DefaultBuckets(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  kin_metric *h = reg(r, "d", KIN_METRIC_HISTOGRAM, NULL, 0, NULL, 0);
  assert_int_equal(kin_metric_observe(h, NULL, 0.25), 0);
  assert_int_equal(kin_metric_observe(h, NULL, 11), 0);
  char *t = render(r);
  assert_non_null(strstr(t, "d_bucket{le=\"0.1\"} 0\nd_bucket{le=\"0.25\"} 1\n"));
  assert_non_null(strstr(t, "d_bucket{le=\"10\"} 1\nd_bucket{le=\"+Inf\"} 2\nd_sum 11.25\nd_count 2\n"));
  free(t);
  kin_metrics_registry_free(r);
}

typedef struct {
  kin_metric *c, *h;
  int id;
} worker_arg;

static void *hammer(void *p) {
  worker_arg *a = p;
  char lv[8];
  snprintf(lv, sizeof lv, "w%d", a->id % 4);
  const char *v[] = {lv};
  for (int i = 0; i < 20000; i++) {
    kin_metric_add(a->c, v, 1);
    kin_metric_observe(a->h, v, (double)(i % 3));
  }
  return NULL;
}

/* Eight threads update two families over four label sets (children made
 * concurrently too) while another thread renders: nothing is lost. */
static void test_metrics_ConcurrentUpdates(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  static const char *const l[] = {"w"};
  static const double b[] = {0.5, 1.5};
  kin_metric *c = reg(r, "n_total", KIN_METRIC_COUNTER, l, 1, NULL, 0);
  kin_metric *h = reg(r, "v", KIN_METRIC_HISTOGRAM, l, 1, b, 2);
  pthread_t th[8];
  worker_arg args[8];
  for (int i = 0; i < 8; i++) {
    args[i] = (worker_arg){c, h, i};
    assert_int_equal(pthread_create(&th[i], NULL, hammer, &args[i]), 0);
  }
  for (int i = 0; i < 5; i++) free(render(r));
  for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
  for (int k = 0; k < 4; k++) {
    char lv[8];
    snprintf(lv, sizeof lv, "w%d", k);
    const char *v[] = {lv};
    double n = 0;
    assert_int_equal(kin_metric_get(c, v, &n), 0);
    assert_true(n == 40000);
    assert_int_equal(kin_metric_get(h, v, &n), 0);
    assert_true(n == 40000);
  }
  char *t = render(r);
  /* per label set: 2 threads x 20000, i%3 -> 0,1,2: le 0.5 gets a third */
  assert_non_null(strstr(t, "v_bucket{w=\"w0\",le=\"0.5\"} 13334\n"));
  assert_non_null(strstr(t, "v_bucket{w=\"w0\",le=\"1.5\"} 26668\n"));
  assert_non_null(strstr(t, "v_sum{w=\"w0\"} 39998\n"));
  free(t);
  kin_metrics_registry_free(r);
}

/* ---- the controller collector -------------------------------------------- */

static int rec(void *ud, int worker, const kin_request *req, const kin_call_ctx *ctx,
               kin_result_action *act) {
  (void)ctx;
  if (strcmp(req->name, "bad") == 0) act->kind = KIN_RESULT_ERROR;
  return 0;
}

static void test_metrics_ControllerCollector(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  kin_controller_config cfg = {.name = "web", .workers = 3, .reconcile = rec};
  kin_controller *c;
  assert_int_equal(kin_controller_new(&cfg, &c), 0);
  int id = kin_metrics_add_controller(r, c);
  assert_true(id > 0);
  assert_int_equal(kin_controller_start(c), 0);
  kin_controller_enqueue(c, "ns", "a");
  kin_controller_enqueue(c, "ns", "b");
  KIN_EVENTUALLY(({
                   kin_controller_stats st;
                   kin_controller_get_stats(c, &st);
                   st.reconcile_time_count == 2;
                 }),
                 5000);
  /* the worker marks the item done (work_duration) after it counts the
   * reconcile: a slow machine renders in between without this wait */
  KIN_EVENTUALLY(({
                   kin_workqueue_metrics m;
                   kin_workqueue_get_metrics(kin_controller_queue(c), &m);
                   m.work_duration.count == 2;
                 }),
                 5000);
  char *t = render(r);
  assert_non_null(strstr(t, "# TYPE controller_runtime_reconcile_total counter\n"));
  assert_non_null(strstr(t, "controller_runtime_reconcile_total{controller=\"web\",result=\"success\"} 2\n"));
  assert_non_null(strstr(t, "controller_runtime_reconcile_total{controller=\"web\",result=\"error\"} 0\n"));
  assert_non_null(strstr(t, "controller_runtime_max_concurrent_reconciles{controller=\"web\"} 3\n"));
  assert_non_null(strstr(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"web\",le=\"60\"} 2\n"));
  assert_non_null(strstr(t, "controller_runtime_reconcile_time_seconds_count{controller=\"web\"} 2\n"));
  assert_non_null(strstr(t, "workqueue_adds_total{controller=\"web\",name=\"web\"} 2\n"));
  assert_non_null(strstr(t, "workqueue_depth{controller=\"web\",name=\"web\"} 0\n"));
  assert_non_null(strstr(t, "workqueue_work_duration_seconds_count{controller=\"web\",name=\"web\"} 2\n"));
  assert_non_null(strstr(t, "workqueue_queue_duration_seconds_bucket{controller=\"web\",name=\"web\",le=\"1e-08\"}"));
  free(t);
  kin_metrics_remove_collector(r, id);
  t = render(r);
  assert_null(strstr(t, "controller_runtime"));
  free(t);
  kin_controller_free(c);
  kin_metrics_registry_free(r);
}

/* The leader election gauge: C and Lua (metrics.lua, same help) share it. */
static void test_metrics_LeaderElectionStatus(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  assert_int_equal(kin_metrics_leader_election_status(r, "my-lease", 1), 0);
  assert_int_equal(kin_metrics_leader_election_status(r, "other", 0), 0);
  char *t = render(r);
  assert_non_null(strstr(t, "# TYPE leader_election_master_status gauge\n"
                            "leader_election_master_status{name=\"my-lease\"} 1\n"
                            "leader_election_master_status{name=\"other\"} 0\n"));
  free(t);
  assert_int_equal(kin_metrics_leader_election_status(r, "my-lease", 0), 0);
  double v = -1;
  const char *n[] = {"my-lease"};
  assert_int_equal(kin_metric_get(kin_metrics_find(r, "leader_election_master_status"), n, &v), 0);
  assert_true(v == 0);
  kin_metrics_registry_free(r);
}

/* ---- HTTP --------------------------------------------------------------------- */

typedef struct {
  char *p;
  size_t n;
} body;

static size_t on_body(char *d, size_t sz, size_t n, void *ud) {
  body *b = ud;
  b->p = realloc(b->p, b->n + sz * n + 1);
  memcpy(b->p + b->n, d, sz * n);
  b->n += sz * n;
  b->p[b->n] = 0;
  return sz * n;
}

/* GETs http://127.0.0.1:port/path; returns the status, the body in *out. */
static long get(int port, const char *path, char **out, char *ctype, size_t ctn) {
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  CURL *h = curl_easy_init();
  body b = {0};
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  assert_int_equal(curl_easy_perform(h), CURLE_OK);
  long code = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  char *ct = NULL;
  curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
  if (ctype) snprintf(ctype, ctn, "%s", ct ? ct : "");
  curl_easy_cleanup(h);
  *out = b.p ? b.p : strdup("");
  return code;
}

static void test_metrics_ServerEndpoints(void **state) {
  kin_metrics_registry *r;
  assert_int_equal(kin_metrics_registry_new(&r), 0);
  kin_metric *g = reg(r, "up_things", KIN_METRIC_GAUGE, NULL, 0, NULL, 0);
  kin_metric_set(g, NULL, 7);
  kin_metrics_server_config cfg = {
      .metrics_bind = "127.0.0.1:0", .health_bind = "127.0.0.1:0", .registry = r};
  kin_metrics_server *s;
  char err[300];
  assert_int_equal(kin_metrics_server_start(&cfg, &s, err, sizeof err), 0);
  int mp = kin_metrics_server_port(s, 0), hp = kin_metrics_server_port(s, 1);
  assert_true(mp > 0 && hp > 0 && mp != hp);
  char *b, ct[128];
  assert_int_equal(get(mp, "/metrics", &b, ct, sizeof ct), 200);
  assert_string_equal(ct, KIN_METRICS_CONTENT_TYPE);
  assert_non_null(strstr(b, "up_things 7\n"));
  free(b);
  assert_int_equal(get(mp, "/healthz", &b, NULL, 0), 404); /* probes on their own address */
  free(b);
  assert_int_equal(get(hp, "/metrics", &b, NULL, 0), 404);
  free(b);
  assert_int_equal(get(hp, "/healthz", &b, NULL, 0), 200);
  assert_string_equal(b, "ok");
  free(b);
  assert_int_equal(get(hp, "/healthz?verbose", &b, NULL, 0), 200);
  assert_string_equal(b, "[+]ping ok\nhealthz check passed\n");
  free(b);
  /* readyz: a check that fails until set ok */
  assert_int_equal(kin_metrics_server_set_check(s, KIN_PROBE_READYZ, "informers", 0,
                                                "caches not synced", 0), 0);
  assert_int_equal(kin_metrics_server_set_check(s, KIN_PROBE_READYZ, "db", 1, NULL, 0), 0);
  assert_int_equal(get(hp, "/readyz", &b, NULL, 0), 500);
  assert_string_equal(b, "[-]informers failed: caches not synced\n[+]db ok\nreadyz check failed\n");
  free(b);
  assert_int_equal(get(hp, "/readyz/informers", &b, NULL, 0), 500);
  assert_string_equal(b, "internal server error: caches not synced\n");
  free(b);
  assert_int_equal(get(hp, "/readyz/db", &b, NULL, 0), 200);
  assert_string_equal(b, "ok");
  free(b);
  assert_int_equal(get(hp, "/readyz/nope", &b, NULL, 0), 404);
  free(b);
  assert_int_equal(get(hp, "/readyz?exclude=informers", &b, NULL, 0), 200);
  free(b);
  assert_int_equal(kin_metrics_server_set_check(s, KIN_PROBE_READYZ, "informers", 1, NULL, 0), 0);
  assert_int_equal(get(hp, "/readyz?verbose=1", &b, NULL, 0), 200);
  assert_string_equal(b, "[+]informers ok\n[+]db ok\nreadyz check passed\n");
  free(b);
  /* a result past its ttl fails */
  assert_int_equal(kin_metrics_server_set_check(s, KIN_PROBE_HEALTHZ, "loop", 1, NULL, 1), 0);
  kin_test_sleep_ms(5);
  assert_int_equal(get(hp, "/healthz", &b, NULL, 0), 500);
  assert_non_null(strstr(b, "[-]loop failed: no result for"));
  free(b);
  kin_metrics_server_remove_check(s, KIN_PROBE_HEALTHZ, "loop");
  assert_int_equal(get(hp, "/healthz", &b, NULL, 0), 200);
  free(b);
  assert_int_equal(kin_metrics_server_set_check(s, KIN_PROBE_READYZ, "a/b", 1, NULL, 0),
                   KIN_EINVAL);
  /* the same port twice cannot listen; "0" disables */
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", mp);
  kin_metrics_server_config dup = {.metrics_bind = addr, .health_bind = "0", .registry = r};
  kin_metrics_server *s2 = NULL;
  assert_int_equal(kin_metrics_server_start(&dup, &s2, err, sizeof err), KIN_EBUSY);
  assert_non_null(strstr(err, addr));
  kin_metrics_server_config bad = {.metrics_bind = "nonsense", .registry = r};
  assert_int_equal(kin_metrics_server_start(&bad, &s2, err, sizeof err), KIN_EINVAL);
  kin_metrics_server_config off = {.metrics_bind = "0", .health_bind = NULL, .registry = r};
  assert_int_equal(kin_metrics_server_start(&off, &s2, err, sizeof err), 0);
  assert_int_equal(kin_metrics_server_port(s2, 0), 0);
  kin_metrics_server_free(s2);
  kin_metrics_server_free(s);
  kin_metrics_registry_free(r);
}

KIN_SUITE(metrics, cmocka_unit_test(test_metrics_FormatDouble),
          cmocka_unit_test(test_metrics_ExactExposition),
          cmocka_unit_test(test_metrics_HelpEscapingAndPlainZero),
          cmocka_unit_test(test_metrics_RegisterShapes),
          cmocka_unit_test(test_metrics_DefaultBuckets),
          cmocka_unit_test(test_metrics_ConcurrentUpdates),
          cmocka_unit_test(test_metrics_ControllerCollector),
          cmocka_unit_test(test_metrics_LeaderElectionStatus),
          cmocka_unit_test(test_metrics_ServerEndpoints))
