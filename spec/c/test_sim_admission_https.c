/* test_sim_admission_https.c -- kinformer.sim calling the webhooks of a
 * stored ValidatingWebhookConfiguration over HTTPS (clientConfig.url,
 * caBundle as the only trust, ?timeout=Ns), as kube-apiserver does: a
 * tiny TLS webhook server (libmicrohttpd, a certificate made by
 * kin_tls_make_cert) denies; then an unreachable URL, a wrong CA and a
 * clientConfig.service under failurePolicy Fail and Ignore. */
#include "kin_test.h"

#include <microhttpd.h>

#include "base64.h"
#include "buf.h"
#include "kin.h"
#include "sim_client.h"
#include "tls_cert.h"

/* The webhook server's state: what it received (guarded by mu). */
typedef struct {
  pthread_mutex_t mu;
  char url[256];   /* the last request's path and query */
  int calls;
} srv_t;

typedef struct {
  kin__buf body;
} conn_t;

static enum MHD_Result on_req(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **con_cls) {
  srv_t *s = cls;
  conn_t *k = *con_cls;
  if (!k) {
    *con_cls = calloc(1, sizeof(conn_t));
    return MHD_YES;
  }
  if (*size) {
    kin__buf_add(&k->body, data, *size);
    *size = 0;
    return MHD_YES;
  }
  json_error_t e;
  json_t *review = json_loadb(k->body.p ? k->body.p : "", k->body.len, 0, &e);
  const char *uid = jstr(review, "request.uid");
  pthread_mutex_lock(&s->mu);
  const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeout");
  snprintf(s->url, sizeof(s->url), "%s %s?timeout=%s", method, url, t ? t : "");
  s->calls++;
  pthread_mutex_unlock(&s->mu);
  json_t *ans = json_pack("{s:s, s:s, s:{s:s, s:b, s:{s:s, s:i, s:s}, s:[s]}}", "apiVersion",
                          "admission.k8s.io/v1", "kind", "AdmissionReview", "response", "uid",
                          uid ? uid : "", "allowed", 0, "status", "message",
                          "replicas must be >= 0", "code", 403, "reason", "Forbidden",
                          "warnings", "from https");
  char *txt = json_dumps(ans, JSON_COMPACT);
  json_decref(ans);
  json_decref(review);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(txt), txt, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
  conn_t *k = *con_cls;
  if (k) kin__buf_free(&k->body);
  free(k);
  *con_cls = NULL;
}

/* Stores (or replaces) the ValidatingWebhookConfiguration "https-test"
 * with one webhook whose clientConfig is cc (JSON text). */
static void put_config(kin_sim *sim, const char *cc, const char *policy) {
  char body[8192];
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
           "\"ValidatingWebhookConfiguration\",\"metadata\":{\"name\":\"https-test\"},"
           "\"webhooks\":[{\"name\":\"validate.website.example.com\",\"clientConfig\":%s,"
           "\"rules\":[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":"
           "[\"configmaps\"],\"operations\":[\"CREATE\"]}],\"failurePolicy\":\"%s\","
           "\"sideEffects\":\"None\",\"timeoutSeconds\":5,\"admissionReviewVersions\":[\"v1\"]}]}",
           cc, policy);
  sim_resp d = sim_req(sim, "DELETE",
                       "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                       "https-test",
                       NULL);
  sim_resp_free(&d);
  sim_resp r = sim_req(sim, "POST",
                       "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                       body);
  if (r.code != 201) fail_msg("config: %ld %s", r.code, r.body);
  sim_resp_free(&r);
}

static void test_sim_AdmissionHttps(void **state) {
  char *ca = NULL, *ca_key = NULL, *cert = NULL, *key = NULL, err[256];
  kin_tls_cert_req cr = {0};
  cr.common_name = "test-ca";
  cr.is_ca = 1;
  assert_int_equal(kin_tls_make_cert(&cr, &ca, &ca_key, err, sizeof(err)), 0);
  const char *hosts[] = {"127.0.0.1", "localhost"};
  kin_tls_cert_req sr = {0};
  sr.common_name = "webhook";
  sr.hosts = hosts;
  sr.nhosts = 2;
  sr.signer_cert_pem = ca;
  sr.signer_key_pem = ca_key;
  assert_int_equal(kin_tls_make_cert(&sr, &cert, &key, err, sizeof(err)), 0);
  srv_t s;
  memset(&s, 0, sizeof(s));
  pthread_mutex_init(&s.mu, NULL);
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_TLS, 0, NULL,
      NULL, on_req, &s, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
      MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
  assert_non_null(d);
  uint16_t port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
  char *ca64 = kin__base64_encode((const unsigned char *)ca, strlen(ca));
  kin_sim *sim = sim_start(0, 0);
  char cc[8192];
  snprintf(cc, sizeof(cc), "{\"url\":\"https://127.0.0.1:%u/validate-configmaps\",\"caBundle\":\"%s\"}",
           port, ca64);
  put_config(sim, cc, "Fail");
  sim_resp r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps",
                       "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 403);
  assert_string_equal(jstr(r.json, "reason"), "Forbidden");
  assert_string_equal(jstr(r.json, "message"),
                      "admission webhook \"validate.website.example.com\" denied the request: "
                      "replicas must be >= 0");
  assert_string_equal(r.warning, "299 - \"from https\"");
  sim_resp_free(&r);
  pthread_mutex_lock(&s.mu);
  assert_int_equal(s.calls, 1);
  assert_string_equal(s.url, "POST /validate-configmaps?timeout=5s");
  pthread_mutex_unlock(&s.mu);
  /* another resource: not called */
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/secrets", "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  /* a CA that did not sign the server's certificate */
  char *other = NULL, *other_key = NULL;
  assert_int_equal(kin_tls_make_cert(&cr, &other, &other_key, err, sizeof(err)), 0);
  char *other64 = kin__base64_encode((const unsigned char *)other, strlen(other));
  snprintf(cc, sizeof(cc), "{\"url\":\"https://127.0.0.1:%u/validate-configmaps\",\"caBundle\":\"%s\"}",
           port, other64);
  put_config(sim, cc, "Fail");
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 500);
  const char *want = "Internal error occurred: failed calling webhook "
                     "\"validate.website.example.com\": failed to call webhook: Post ";
  assert_memory_equal(jstr(r.json, "message"), want, strlen(want));
  sim_resp_free(&r);
  /* the server gone: Fail refuses, Ignore lets the write through */
  MHD_stop_daemon(d);
  snprintf(cc, sizeof(cc), "{\"url\":\"https://127.0.0.1:%u/validate-configmaps\",\"caBundle\":\"%s\"}",
           port, ca64);
  put_config(sim, cc, "Fail");
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 500);
  assert_string_equal(jstr(r.json, "reason"), "InternalError");
  /* kube-apiserver v1.36.3's words for a webhook nobody listens for */
  char msg[512];
  snprintf(msg, sizeof(msg),
           "Internal error occurred: failed calling webhook \"validate.website.example.com\": "
           "failed to call webhook: Post \"https://127.0.0.1:%u/validate-configmaps?timeout=5s\": "
           "dial tcp 127.0.0.1:%u: connect: connection refused",
           port, port);
  assert_string_equal(jstr(r.json, "message"), msg);
  sim_resp_free(&r);
  put_config(sim, cc, "Ignore");
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"a\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  /* a Service: the sim cannot reach one */
  put_config(sim, "{\"service\":{\"namespace\":\"default\",\"name\":\"webhook\",\"port\":443}}",
             "Fail");
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"b\"}}");
  assert_int_equal(r.code, 500);
  assert_non_null(strstr(jstr(r.json, "message"), "clientConfig.service"));
  sim_resp_free(&r);
  /* the configuration deleted: no webhook any more */
  r = sim_req(sim, "DELETE",
              "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/https-test",
              NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = sim_req(sim, "POST", "/api/v1/namespaces/default/configmaps", "{\"metadata\":{\"name\":\"b\"}}");
  assert_int_equal(r.code, 201);
  sim_resp_free(&r);
  kin_sim_free(sim);
  pthread_mutex_destroy(&s.mu);
  free(ca64);
  free(other64);
  free(ca);
  free(ca_key);
  free(cert);
  free(key);
  free(other);
  free(other_key);
}

KIN_SUITE(sim_admission_https, cmocka_unit_test(test_sim_AdmissionHttps))
