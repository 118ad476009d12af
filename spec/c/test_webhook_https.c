/* test_webhook_https.c -- webhook.h's HTTPS endpoint driven with libcurl:
 * a CA and a serving certificate it signs (kin_tls_make_cert twice, the
 * pair served from memory) verified by curl against the CA, reviews
 * answered over TLS with ?timeout=, the content type, size and path
 * checks, and the connection cap. */
#include "kin_test.h"

#include <curl/curl.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kin.h"
#include "metrics.h"
#include "tls_cert.h"
#include "webhook.h"
#include "webhook_test_util.h"

/* A CA, a serving pair it signed, the CA's PEM in a file for curl. */
typedef struct {
  char *ca_crt, *ca_key, *crt, *key;
  char ca_path[64];
  kin_tls_keypair *kp;
} pki;

static void pki_make(pki *p) {
  char err[200];
  kin_tls_cert_req ca = {.common_name = "kinformer-webhook-ca", .is_ca = 1};
  assert_int_equal(kin_tls_make_cert(&ca, &p->ca_crt, &p->ca_key, err, sizeof err), 0);
  const char *hosts[] = {"localhost", "127.0.0.1", "::1", "hooks.system.svc"};
  kin_tls_cert_req srv = {.common_name = "hooks.system.svc", .hosts = hosts, .nhosts = 4,
                          .signer_cert_pem = p->ca_crt, .signer_key_pem = p->ca_key};
  assert_int_equal(kin_tls_make_cert(&srv, &p->crt, &p->key, err, sizeof err), 0);
  kin_tls_keypair_opts o = {.cert_pem = p->crt, .key_pem = p->key, .what = "webhook"};
  assert_int_equal(kin_tls_keypair_open(&o, &p->kp, err, sizeof err), 0);
  snprintf(p->ca_path, sizeof p->ca_path, "/tmp/kin-wh-ca-XXXXXX");
  int fd = mkstemp(p->ca_path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, p->ca_crt, strlen(p->ca_crt)), (ssize_t)strlen(p->ca_crt));
  close(fd);
}

static void pki_free(pki *p) {
  kin_tls_keypair_free(p->kp);
  unlink(p->ca_path);
  free(p->ca_crt);
  free(p->ca_key);
  free(p->crt);
  free(p->key);
}

static size_t on_body(char *d, size_t sz, size_t n, void *ud) {
  char **b = ud;
  size_t old = *b ? strlen(*b) : 0;
  char *p = realloc(*b, old + sz * n + 1);
  if (!p) return 0;
  memcpy(p + old, d, sz * n);
  p[old + sz * n] = 0;
  *b = p;
  return sz * n;
}

/* POSTs body to url over TLS trusting ca (NULL: the system's). Returns
 * curl's code with the status in *status and the body in *out. */
static CURLcode post_h(const char *url, const char *ca, const char *ctype, const char *extra,
                       const char *body, long *status, char **out) {
  CURL *h = curl_easy_init();
  struct curl_slist *hd = NULL;
  char ct[100];
  snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
  hd = curl_slist_append(hd, ct);
  if (extra) hd = curl_slist_append(hd, extra);
  *out = NULL;
  *status = 0;
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  if (ca) curl_easy_setopt(h, CURLOPT_CAINFO, ca);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  CURLcode rc = curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  curl_slist_free_all(hd);
  curl_easy_cleanup(h);
  return rc;
}

static CURLcode post(const char *url, const char *ca, const char *ctype, const char *body,
                     long *status, char **out) {
  return post_h(url, ca, ctype, NULL, body, status, out);
}

static uint64_t deadline_left_ms;

/* Allows everything; notes how long it had. */
static int allow(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  deadline_left_ms = r->deadline_ns > now ? (r->deadline_ns - now) / 1000000 : 0;
  resp->allowed = 1;
  return 0;
}

/* Returns each object as it came. */
static int same(void *ud, const kin_webhook_request *r, kin_webhook_response *resp) {
  (void)ud;
  resp->converted = calloc(r->nobjects + 1, sizeof(char *));
  for (size_t i = 0; i < r->nobjects; i++) resp->converted[i] = strdup(kin_obj_json(r->objects[i], NULL));
  resp->nconverted = r->nobjects;
  return 0;
}

static const char *review = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                            "\"request\":{\"uid\":\"u-1\",\"operation\":\"CREATE\",\"object\":"
                            "{\"metadata\":{\"name\":\"a\"}}}}";

static void test_webhook_https_ServesVerifiedTls(void **state) {
  (void)state;
  pki p;
  pki_make(&p);
  /* the serving certificate is what Go's crypto/tls wants of a leaf */
  gnutls_x509_crt_t c;
  gnutls_x509_crt_init(&c);
  gnutls_datum_t d = {(unsigned char *)p.crt, (unsigned)strlen(p.crt)};
  assert_int_equal(gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_PEM), 0);
  char oid[128];
  size_t oidlen = sizeof oid;
  assert_int_equal(gnutls_x509_crt_get_key_purpose_oid(c, 0, oid, &oidlen, NULL), 0);
  assert_string_equal(oid, GNUTLS_KP_TLS_WWW_SERVER);
  unsigned ku = 0, ca = 1;
  assert_true(gnutls_x509_crt_get_key_usage(c, &ku, NULL) >= 0);
  assert_true(ku & GNUTLS_KEY_DIGITAL_SIGNATURE);
  assert_int_equal(gnutls_x509_crt_get_basic_constraints(c, NULL, &ca, NULL), 0);
  assert_int_equal(ca, 0);
  gnutls_x509_crt_deinit(c);

  kin_metrics_registry *reg;
  assert_int_equal(kin_metrics_registry_new(&reg), 0);
  kin_webhook_server_config cfg = {.bind_address = "127.0.0.1:0", .keys = p.kp, .metrics = reg,
                                   .max_request_bytes = 4096};
  kin_webhook_server *s;
  char err[300];
  assert_int_equal(kin_webhook_server_new(&cfg, &s, err, sizeof err), 0);
  kin_webhook_hook h = {.path = "/validate-v1-pod", .type = KIN_WEBHOOK_VALIDATING, .fn = allow};
  assert_int_equal(kin_webhook_server_add(s, &h), 0);
  kin_webhook_hook ch = {.path = "/convert", .type = KIN_WEBHOOK_CONVERSION, .fn = same};
  assert_int_equal(kin_webhook_server_add(s, &ch), 0);
  assert_int_equal(kin_webhook_server_port(s), 0);
  assert_int_equal(kin_webhook_server_start(s, err, sizeof err), 0);
  int port = kin_webhook_server_port(s);
  assert_true(port > 0);
  char url[128], *out;
  long st;

  /* verified against the CA by name and by address, with kube-apiserver's ?timeout= */
  const char *hosts[] = {"localhost", "127.0.0.1"};
  for (int i = 0; i < 2; i++) {
    snprintf(url, sizeof url, "https://%s:%d/validate-v1-pod?timeout=3s", hosts[i], port);
    assert_int_equal(post(url, p.ca_path, "application/json", review, &st, &out), CURLE_OK);
    assert_int_equal(st, 200);
    assert_string_equal(out, "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\","
                             "\"response\":{\"uid\":\"u-1\",\"allowed\":true,\"status\":{"
                             "\"metadata\":{},\"code\":200}}}\n");
    free(out);
    assert_in_range(deadline_left_ms, 2300, 2700);
  }
  snprintf(url, sizeof url, "https://localhost:%d/convert?timeout=30s", port);
  assert_int_equal(post(url, p.ca_path, "application/json",
                        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\","
                        "\"request\":{\"uid\":\"c\",\"desiredAPIVersion\":\"g/v1\",\"objects\":"
                        "[{\"apiVersion\":\"g/v1\",\"kind\":\"K\",\"metadata\":{\"name\":\"a\"}}]}}",
                        &st, &out),
                   CURLE_OK);
  assert_int_equal(st, 200);
  assert_string_equal(out, "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
                           "\"response\":{\"uid\":\"c\",\"convertedObjects\":[{\"apiVersion\":"
                           "\"g/v1\",\"kind\":\"K\",\"metadata\":{\"name\":\"a\"}}],\"result\":{"
                           "\"metadata\":{},\"status\":\"Success\"}}}\n");
  free(out);
  /* another CA does not trust it */
  pki other;
  pki_make(&other);
  snprintf(url, sizeof url, "https://127.0.0.1:%d/validate-v1-pod", port);
  assert_int_equal(post(url, other.ca_path, "application/json", review, &st, &out),
                   CURLE_PEER_FAILED_VERIFICATION);
  free(out);
  pki_free(&other);
  /* controller-runtime's checks: the content type, the size, the path */
  assert_int_equal(post(url, p.ca_path, "text/plain", review, &st, &out), CURLE_OK);
  assert_int_equal(st, 400);
  assert_string_equal(out, "contentType=text/plain, expected application/json\n");
  free(out);
  char big[6000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  assert_int_equal(post(url, p.ca_path, "application/json", big, &st, &out), CURLE_OK);
  assert_int_equal(st, 413);
  assert_string_equal(out, "request entity is too large; limit is 4096 bytes\n");
  free(out);
  /* a chunked body has no Content-Length: the cap holds as it arrives */
  assert_int_equal(post_h(url, p.ca_path, "application/json", "Transfer-Encoding: chunked", big,
                          &st, &out),
                   CURLE_OK);
  assert_int_equal(st, 413);
  free(out);
  snprintf(url, sizeof url, "https://127.0.0.1:%d/other", port);
  assert_int_equal(post(url, p.ca_path, "application/json", review, &st, &out), CURLE_OK);
  assert_int_equal(st, 404);
  free(out);

  assert_int_equal(kin_metrics_render(reg, &out, &(size_t){0}), 0);
  assert_non_null(strstr(out, "controller_runtime_webhook_requests_total{webhook=\"/validate-v1-pod\","
                              "code=\"200\"} 2\n"));
  assert_non_null(strstr(out, "controller_runtime_webhook_requests_total{webhook=\"/validate-v1-pod\","
                              "code=\"413\"} 2\n"));
  free(out);
  kin_webhook_server_stop(s);
  assert_int_equal(kin_webhook_server_port(s), 0);
  kin_webhook_server_free(s);
  kin_metrics_registry_free(reg);
  pki_free(&p);
}

static wh_test_gate gate = WH_TEST_GATE_INIT;

typedef struct {
  const char *url, *ca;
  long status;
  CURLcode rc;
} call;

static void *post_thread(void *arg) {
  call *c = arg;
  char *out = NULL;
  c->rc = post(c->url, c->ca, "application/json", review, &c->status, &out);
  free(out);
  return NULL;
}

static void test_webhook_https_ConnectionCap(void **state) {
  (void)state;
  pki p;
  pki_make(&p);
  kin_webhook_server_config cfg = {.bind_address = "127.0.0.1:0", .keys = p.kp,
                                   .max_connections = 1};
  kin_webhook_server *s;
  char err[300];
  assert_int_equal(kin_webhook_server_new(&cfg, &s, err, sizeof err), 0);
  kin_webhook_hook h = {.path = "/slow", .type = KIN_WEBHOOK_VALIDATING, .fn = wh_test_gate_fn,
                        .ud = &gate};
  assert_int_equal(kin_webhook_server_add(s, &h), 0);
  assert_int_equal(kin_webhook_server_start(s, err, sizeof err), 0);
  char url[128];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/slow", kin_webhook_server_port(s));
  call first = {.url = url, .ca = p.ca_path};
  pthread_t t;
  pthread_create(&t, NULL, post_thread, &first);
  wh_test_gate_wait_entered(&gate);
  /* the one connection is taken: the next is refused */
  call second = {.url = url, .ca = p.ca_path};
  post_thread(&second);
  assert_int_not_equal(second.rc, CURLE_OK);
  wh_test_gate_release(&gate);
  pthread_join(t, NULL);
  assert_int_equal(first.rc, CURLE_OK);
  assert_int_equal(first.status, 200);
  /* a busy address is named */
  kin_webhook_server *s2;
  char bind[64];
  snprintf(bind, sizeof bind, "127.0.0.1:%d", kin_webhook_server_port(s));
  kin_webhook_server_config cfg2 = {.bind_address = bind, .keys = p.kp};
  assert_int_equal(kin_webhook_server_new(&cfg2, &s2, err, sizeof err), 0);
  assert_int_equal(kin_webhook_server_start(s2, err, sizeof err), KIN_EBUSY);
  assert_non_null(strstr(err, "listen on 127.0.0.1:"));
  kin_webhook_server_free(s2);
  kin_webhook_server_config nokeys = {.bind_address = "127.0.0.1:0"};
  assert_int_equal(kin_webhook_server_new(&nokeys, &s2, err, sizeof err), 0);
  assert_int_equal(kin_webhook_server_start(s2, err, sizeof err), KIN_EINVAL);
  assert_string_equal(err, "the webhook server needs a serving key pair to listen");
  kin_webhook_server_free(s2);
  kin_webhook_server_free(s);
  pki_free(&p);
}

/* 1 when this machine can bind [::1] (IPv6 on loopback). */
static int have_ipv6_loopback(void) {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

/* ":port" listens on every address, IPv6 too when the machine has it (Go's
 * net.Listen of controller-runtime's ":9443") */
static void test_webhook_https_ListensOnEveryAddress(void **state) {
  (void)state;
  pki p;
  pki_make(&p);
  kin_webhook_server_config cfg = {.bind_address = ":0", .keys = p.kp};
  kin_webhook_server *s;
  char err[300];
  assert_int_equal(kin_webhook_server_new(&cfg, &s, err, sizeof err), 0);
  kin_webhook_hook h = {.path = "/v", .type = KIN_WEBHOOK_VALIDATING, .fn = allow};
  assert_int_equal(kin_webhook_server_add(s, &h), 0);
  assert_int_equal(kin_webhook_server_start(s, err, sizeof err), 0);
  assert_int_equal(kin_webhook_server_start(s, err, sizeof err), 0); /* already listening */
  int port = kin_webhook_server_port(s);
  char url[128], *out;
  long st;
  snprintf(url, sizeof url, "https://127.0.0.1:%d/v", port);
  assert_int_equal(post(url, p.ca_path, "application/json", review, &st, &out), CURLE_OK);
  assert_int_equal(st, 200);
  free(out);
  if (have_ipv6_loopback()) {
    snprintf(url, sizeof url, "https://[::1]:%d/v", port);
    assert_int_equal(post(url, p.ca_path, "application/json", review, &st, &out), CURLE_OK);
    assert_int_equal(st, 200);
    free(out);
  }
  /* stopped, then started again */
  kin_webhook_server_stop(s);
  kin_webhook_server_stop(s);
  assert_int_equal(kin_webhook_server_start(s, err, sizeof err), 0);
  snprintf(url, sizeof url, "https://127.0.0.1:%d/v", kin_webhook_server_port(s));
  assert_int_equal(post(url, p.ca_path, "application/json", review, &st, &out), CURLE_OK);
  assert_int_equal(st, 200);
  free(out);
  kin_webhook_server_free(s);
  pki_free(&p);
}

KIN_SUITE(webhook_https, cmocka_unit_test(test_webhook_https_ListensOnEveryAddress), cmocka_unit_test(test_webhook_https_ServesVerifiedTls),
          cmocka_unit_test(test_webhook_https_ConnectionCap))
