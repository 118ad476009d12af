/* test_io_engine.c -- the IO engine (csrc/core/transport/io_engine.c) against
 * kinformer.sim started in-process: blocking requests from many threads,
 * a streaming watch, cancellation, free with transfers running, transport
 * and TLS errors, captured headers. The sim speaks HTTP/1.1 only, so the
 * HTTP/2 multiplexing configuration is exercised against kube-apiserver
 * (make e2e), not here. */
#include "kin_test.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_engine.h"
#include "sim.h"


static void url_of(char *buf, size_t cap, kin_sim *sim, const char *path) {
  snprintf(buf, cap, "%s%s", kin_sim_url(sim), path);
}

/* TLS options the helpers below send; set by a test before it starts
 * other threads, read-only after. */
static kin_io_tls g_tls;

/* Creates ConfigMap name in default through the engine; returns the code. */
static long create_cm(kin_io_engine *e, kin_sim *sim, const char *name) {
  char url[512], body[256];
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default/configmaps");
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"}}", name);
  const char *hdrs[] = {"Content-Type: application/json", NULL};
  kin_io_request req = {.method = "POST", .url = url, .headers = hdrs, .body = body,
                        .body_len = strlen(body), .tls = g_tls};
  kin_io_response res;
  int rc = kin_io_do(e, &req, &res);
  long code = rc == 0 ? res.code : rc;
  kin_io_response_free(&res);
  return code;
}

static void test_io_engine_GetBlocking(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  char url[512];
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default");
  kin_io_request req = {.url = url};
  kin_io_response res;
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 200);
  assert_non_null(res.body);
  assert_int_equal(strlen(res.body), res.body_len);
  assert_non_null(strstr(res.body, "\"name\":\"default\""));
  assert_non_null(res.content_type);
  assert_non_null(strstr(res.content_type, "application/json"));
  assert_null(res.retry_after);
  assert_string_equal(res.error, "");
  kin_io_response_free(&res);
  /* A missing object is still a completed exchange: err 0, the server's code. */
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default/configmaps/nope");
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 404);
  assert_non_null(strstr(res.body, "NotFound"));
  kin_io_response_free(&res);
  kin_io_engine_free(e);
  kin_sim_free(sim);
}

typedef struct {
  kin_io_engine *e;
  kin_sim *sim;
  int id;
  int ok; /* written by the worker, read after join */
} worker_arg;

static void *worker(void *p) {
  worker_arg *a = p;
  char url[512], name[64];
  url_of(url, sizeof(url), a->sim, "/api/v1/namespaces/default");
  for (int i = 0; i < 50; i++) {
    if (i % 10 == 0) {
      snprintf(name, sizeof(name), "w%d-%d", a->id, i);
      if (create_cm(a->e, a->sim, name) == 201) a->ok++;
      continue;
    }
    kin_io_request req = {.url = url};
    kin_io_response res;
    if (kin_io_do(a->e, &req, &res) == 0 && res.code == 200 && res.body &&
        strstr(res.body, "\"name\":\"default\""))
      a->ok++;
    kin_io_response_free(&res);
  }
  return NULL;
}

static void test_io_engine_ConcurrentBlocking(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  pthread_t t[8];
  worker_arg a[8];
  for (int i = 0; i < 8; i++) {
    a[i] = (worker_arg){.e = e, .sim = sim, .id = i};
    assert_int_equal(pthread_create(&t[i], NULL, worker, &a[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].ok, 50);
  }
  kin_io_engine_free(e);
  kin_sim_free(sim);
}

/* A streaming request as a watch uses it. */
typedef struct {
  pthread_mutex_t mu;
  char buf[65536]; /* guarded by mu */
  size_t len;      /* guarded by mu */
  int done;        /* guarded by mu */
  int err;         /* guarded by mu */
  int done_calls;  /* guarded by mu */
  int abort_after; /* bytes after which on_data aborts (0: never); immutable */
} stream;

static void stream_init(stream *s) {
  memset(s, 0, sizeof(*s));
  pthread_mutex_init(&s->mu, NULL);
}

static int stream_data(void *ud, const char *p, size_t n) {
  stream *s = ud;
  pthread_mutex_lock(&s->mu);
  size_t k = n < sizeof(s->buf) - 1 - s->len ? n : sizeof(s->buf) - 1 - s->len;
  memcpy(s->buf + s->len, p, k);
  s->len += k;
  s->buf[s->len] = 0;
  int stop = s->abort_after && s->len >= (size_t)s->abort_after;
  pthread_mutex_unlock(&s->mu);
  return stop;
}

static void stream_done(void *ud, kin_io_response *res) {
  stream *s = ud;
  pthread_mutex_lock(&s->mu);
  s->done = 1;
  s->done_calls++;
  s->err = res->err;
  pthread_mutex_unlock(&s->mu);
}

static int stream_count(stream *s, const char *needle) {
  pthread_mutex_lock(&s->mu);
  int n = 0;
  for (const char *p = s->buf; (p = strstr(p, needle)); p++) n++;
  pthread_mutex_unlock(&s->mu);
  return n;
}

static int stream_get(stream *s, int *field) {
  pthread_mutex_lock(&s->mu);
  int v = *field;
  pthread_mutex_unlock(&s->mu);
  return v;
}

static kin_io_handle *watch(kin_io_engine *e, kin_sim *sim, stream *s) {
  char url[512];
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default/configmaps?watch=true");
  kin_io_request req = {.url = url, .on_data = stream_data, .on_done = stream_done, .data = s,
                        .tls = g_tls};
  kin_io_handle *h = NULL;
  assert_int_equal(kin_io_submit(e, &req, &h), 0);
  assert_non_null(h);
  return h;
}

typedef struct {
  kin_io_engine *e;
  kin_sim *sim;
  int created; /* read after join */
} creator_arg;

static void *creator(void *p) {
  creator_arg *a = p;
  const char *names[] = {"cm-a", "cm-b", "cm-c"};
  for (int i = 0; i < 3; i++)
    if (create_cm(a->e, a->sim, names[i]) == 201) a->created++;
  return NULL;
}

/* Events reach on_data while the watch is still open; cancel ends it. */
static void watch_streams_and_cancel(int tls) {
  char cafile[512];
  snprintf(cafile, sizeof(cafile), "%s", kin_test_fixture_path("sim_tls.crt"));
  g_tls = (kin_io_tls){.ca_file = tls ? cafile : NULL};
  kin_sim *sim = kin_test_sim_start(tls);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  stream s;
  stream_init(&s);
  kin_io_handle *h = watch(e, sim, &s);
  creator_arg ca = {.e = e, .sim = sim};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, creator, &ca), 0);
  pthread_join(t, NULL);
  assert_int_equal(ca.created, 3);
  KIN_EVENTUALLY(stream_count(&s, "\"ADDED\"") >= 3, 5000);
  assert_int_equal(stream_count(&s, "\"name\":\"cm-a\""), 1);
  assert_int_equal(stream_count(&s, "\"name\":\"cm-c\""), 1);
  assert_int_equal(stream_get(&s, &s.done), 0); /* still streaming */
  kin_io_cancel(h);
  KIN_EVENTUALLY(stream_get(&s, &s.done), 2000);
  assert_int_equal(stream_get(&s, &s.err), KIN_ECANCELED);
  kin_io_cancel(h); /* after completion: a no-op */
  kin_io_handle_release(h);
  kin_io_engine_free(e);
  assert_int_equal(s.done_calls, 1);
  pthread_mutex_destroy(&s.mu);
  kin_sim_free(sim);
  g_tls = (kin_io_tls){0};
}

static void test_io_engine_WatchStreamsAndCancel(void **state) { watch_streams_and_cancel(0); }

/* Over TLS requests wait for a connection that may multiplex (PIPEWAIT);
 * an HTTP/1.1 server must still get the creates on other connections
 * while the watch holds one. */
static void test_io_engine_WatchStreamsOverTLS(void **state) { watch_streams_and_cancel(1); }

/* on_data returning non-zero aborts the transfer as a cancellation. */
static void test_io_engine_DataCallbackAborts(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  assert_int_equal(create_cm(e, sim, "x"), 201);
  stream s;
  stream_init(&s);
  s.abort_after = 1;
  kin_io_handle *h = watch(e, sim, &s);
  KIN_EVENTUALLY(stream_get(&s, &s.done), 5000);
  assert_int_equal(stream_get(&s, &s.err), KIN_ECANCELED);
  kin_io_handle_release(h);
  kin_io_engine_free(e);
  pthread_mutex_destroy(&s.mu);
  kin_sim_free(sim);
}

/* Freeing the engine with watches open cancels each exactly once. */
static void test_io_engine_FreeCancelsRunning(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  assert_int_equal(create_cm(e, sim, "seen"), 201);
  stream s[3];
  kin_io_handle *h[3];
  for (int i = 0; i < 3; i++) {
    stream_init(&s[i]);
    h[i] = watch(e, sim, &s[i]);
  }
  /* Each watch has its initial event, so each is running. */
  for (int i = 0; i < 3; i++) KIN_EVENTUALLY(stream_count(&s[i], "\"seen\"") == 1, 5000);
  kin_io_engine_free(e);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(s[i].done_calls, 1);
    assert_int_equal(s[i].err, KIN_ECANCELED);
    kin_io_handle_release(h[i]); /* handles outlive the engine */
    pthread_mutex_destroy(&s[i].mu);
  }
  kin_sim_free(sim);
}

static void test_io_engine_ConnectionRefused(void **state) {
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  kin_io_request req = {.url = "http://127.0.0.1:1/api"};
  kin_io_response res;
  assert_int_equal(kin_io_do(e, &req, &res), KIN_EIO);
  assert_int_equal(res.err, KIN_EIO);
  assert_int_equal(res.code, 0);
  assert_int_equal(res.curl_code, CURLE_COULDNT_CONNECT);
  assert_true(strlen(res.error) > 0);
  assert_true(strstr(res.error, "onnect") != NULL);
  kin_io_response_free(&res);
  kin_io_engine_free(e);
}

static void test_io_engine_TLSVerifies(void **state) {
  kin_sim *sim = kin_test_sim_start(1);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  char url[512], ca[512], wrong[512];
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default");
  snprintf(ca, sizeof(ca), "%s", kin_test_fixture_path("sim_tls.crt"));
  snprintf(wrong, sizeof(wrong), "%s", kin_test_fixture_path("sim_client_ca.crt"));
  kin_io_response res;

  kin_io_request req = {.url = url, .tls = {.ca_file = ca}};
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 200);
  kin_io_response_free(&res);

  size_t n;
  char *blob = kin_test_fixture("sim_tls.crt", &n);
  req = (kin_io_request){.url = url, .tls = {.ca_data = blob, .ca_data_len = n}};
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 200);
  kin_io_response_free(&res);

  req = (kin_io_request){.url = url, .tls = {.ca_file = wrong}};
  assert_int_equal(kin_io_do(e, &req, &res), KIN_EIO);
  assert_int_equal(res.code, 0);
  assert_int_equal(res.curl_code, CURLE_PEER_FAILED_VERIFICATION);
  assert_non_null(strstr(res.error, "certificate"));
  kin_io_response_free(&res);

  /* The certificate names 127.0.0.1 only: reached as localhost it fails,
   * unless the server name to verify is overridden. */
  char lurl[512];
  snprintf(lurl, sizeof(lurl), "https://localhost:%u/api/v1/namespaces/default",
           (unsigned)kin_sim_port(sim));
  req = (kin_io_request){.url = lurl, .tls = {.ca_data = blob, .ca_data_len = n}};
  assert_int_equal(kin_io_do(e, &req, &res), KIN_EIO);
  kin_io_response_free(&res);
  req.tls.server_name = "127.0.0.1";
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 200);
  kin_io_response_free(&res);

  req = (kin_io_request){.url = url, .tls = {.insecure = 1}};
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 200);
  kin_io_response_free(&res);
  free(blob);
  kin_io_engine_free(e);
  kin_sim_free(sim);
}

static void test_io_engine_RetryAfterCaptured(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  char url[512];
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default/configmaps");
  assert_int_equal(kin_sim_fail_next(sim, 429, 1), 0);
  kin_io_request req = {.url = url};
  kin_io_response res;
  assert_int_equal(kin_io_do(e, &req, &res), 0);
  assert_int_equal(res.code, 429);
  assert_non_null(res.retry_after);
  assert_string_equal(res.retry_after, "1");
  assert_non_null(strstr(res.body, "TooManyRequests"));
  kin_io_response_free(&res);
  assert_int_equal(kin_io_do(e, &req, &res), 0); /* the fault is spent */
  assert_int_equal(res.code, 200);
  assert_null(res.retry_after);
  kin_io_response_free(&res);
  kin_io_engine_free(e);
  kin_sim_free(sim);
}

static void test_io_engine_Timeout(void **state) {
  kin_sim *sim = kin_test_sim_start(0);
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  char url[512];
  url_of(url, sizeof(url), sim, "/api/v1/namespaces/default");
  kin_sim_set_latency(sim, 1000);
  kin_io_request req = {.url = url, .timeout_ms = 100};
  kin_io_response res;
  assert_int_equal(kin_io_do(e, &req, &res), KIN_ETIMEDOUT);
  assert_int_equal(res.curl_code, CURLE_OPERATION_TIMEDOUT);
  kin_io_response_free(&res);
  kin_sim_set_latency(sim, 0);
  kin_io_engine_free(e);
  kin_sim_free(sim);
}

static void test_io_engine_SubmitInvalid(void **state) {
  kin_io_engine *e = NULL;
  assert_int_equal(kin_io_engine_new(&e), 0);
  kin_io_request req = {0};
  kin_io_handle *h = (kin_io_handle *)1;
  assert_int_equal(kin_io_submit(e, &req, &h), KIN_EINVAL);
  assert_null(h);
  kin_io_engine_free(e);
  kin_io_engine_free(NULL);
}

KIN_SUITE(io_engine, cmocka_unit_test(test_io_engine_GetBlocking),
          cmocka_unit_test(test_io_engine_ConcurrentBlocking),
          cmocka_unit_test(test_io_engine_WatchStreamsAndCancel),
          cmocka_unit_test(test_io_engine_WatchStreamsOverTLS),
          cmocka_unit_test(test_io_engine_DataCallbackAborts),
          cmocka_unit_test(test_io_engine_FreeCancelsRunning),
          cmocka_unit_test(test_io_engine_ConnectionRefused), cmocka_unit_test(test_io_engine_TLSVerifies),
          cmocka_unit_test(test_io_engine_RetryAfterCaptured), cmocka_unit_test(test_io_engine_Timeout),
          cmocka_unit_test(test_io_engine_SubmitInvalid))
