/* test_sim_auth.c -- kinformer.sim authentication as kube-apiserver's
 * union of x509 (--client-ca-file) and token authenticators: a client
 * certificate the client CA signed authenticates (CN user, O groups); an
 * untrusted one completes the TLS handshake and gets 401; a bearer token is
 * the alternative. Fixtures: spec/c/fixtures/README.md. */
#include "kin_test.h"

#include "kin.h"
#include "sim_client.h"

/* Starts a TLS sim trusting the fixture client CA, with token if not NULL. */
static kin_sim *start_mtls(const char *token) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  cfg.tls_cert_file = kin_test_fixture_path("sim_tls.crt");
  cfg.tls_key_file = kin_test_fixture_path("sim_tls.key");
  cfg.client_ca_file = kin_test_fixture_path("sim_client_ca.crt");
  cfg.token = token;
  kin_sim *sim = NULL;
  assert_int_equal(kin_sim_start(&cfg, &sim), 0);
  return sim;
}

/* One request with an optional client certificate ("alice" or "other") and
 * bearer token; the TLS handshake must succeed. */
static sim_resp auth_do(kin_sim *sim, const char *method, const char *path, const char *who,
                        const char *token, const char *body) {
  sim_resp r;
  memset(&r, 0, sizeof(r));
  sim_sink sink = {0};
  char crt[64], key[64], hdr[256];
  CURL *c = sim_easy(sim, method, path, &sink, &r);
  /* The serving certificate is self-signed for 127.0.0.1: verify against it. */
  curl_easy_setopt(c, CURLOPT_CAINFO, kin_test_fixture_path("sim_tls.crt"));
  if (who) {
    snprintf(crt, sizeof(crt), "sim_client_%s.crt", who);
    snprintf(key, sizeof(key), "sim_client_%s.key", who);
    curl_easy_setopt(c, CURLOPT_SSLCERT, kin_test_fixture_path(crt));
    curl_easy_setopt(c, CURLOPT_SSLKEY, kin_test_fixture_path(key));
  }
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
  if (token) {
    snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", token);
    h = curl_slist_append(h, hdr);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  sim_finish(c, h, &sink, &r, method, path);
  return r;
}

static void expect_401(sim_resp *r) {
  if (r->code != 401) fail_msg("code %ld != 401: %s", r->code, r->body);
  assert_string_equal(jstr(r->json, "kind"), "Status");
  assert_string_equal(jstr(r->json, "reason"), "Unauthorized");
  assert_string_equal(jstr(r->json, "message"), "Unauthorized");
  assert_int_equal(jint(r->json, "code"), 401);
  sim_resp_free(r);
}

static const char *ssr = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
static const char *ssr_body =
    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}";

/* x509.Authenticator with CommonNameUserConversion: a verified chain makes
 * CN the user and every O a group (order kept), with the certificate's
 * SHA-256 as credential id. */
static void test_sim_AuthX509ClientCertificate(void **state) {
  kin_sim *sim = start_mtls(NULL);
  sim_resp r = auth_do(sim, "GET", "/api/v1/namespaces/default", "alice", NULL, NULL);
  assert_int_equal(r.code, 200);
  assert_string_equal(jstr(r.json, "metadata.name"), "default");
  sim_resp_free(&r);
  r = auth_do(sim, "POST", ssr, "alice", NULL, ssr_body);
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "kind"), "SelfSubjectReview");
  assert_string_equal(jstr(r.json, "status.userInfo.username"), "alice");
  json_t *groups = json_object_get(json_object_get(json_object_get(r.json, "status"), "userInfo"),
                                   "groups");
  assert_int_equal(json_array_size(groups), 3);
  assert_string_equal(json_string_value(json_array_get(groups, 0)), "system:masters");
  assert_string_equal(json_string_value(json_array_get(groups, 1)), "devs");
  assert_string_equal(json_string_value(json_array_get(groups, 2)), "system:authenticated");
  json_t *extra = json_object_get(json_object_get(json_object_get(r.json, "status"), "userInfo"),
                                  "extra");
  const char *id = json_string_value(
      json_array_get(json_object_get(extra, "authentication.kubernetes.io/credential-id"), 0));
  assert_non_null(id);
  assert_int_equal(strlen(id), strlen("X509SHA256=") + 64);
  assert_memory_equal(id, "X509SHA256=", 11);
  sim_resp_free(&r);
  /* only POST on selfsubjectreviews */
  r = auth_do(sim, "GET", ssr, "alice", NULL, NULL);
  assert_int_equal(r.code, 405);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* Without a token configured: no certificate is 401, and so is a
 * certificate from another CA -- the handshake itself succeeds, as the
 * server only requests a certificate (tls.RequestClientCert) and the x509
 * authenticator's verification error fails the request. Health checks
 * stay open. */
static void test_sim_AuthX509UntrustedOrMissing(void **state) {
  kin_sim *sim = start_mtls(NULL);
  sim_resp r = auth_do(sim, "GET", "/api/v1/namespaces", NULL, NULL, NULL);
  expect_401(&r);
  r = auth_do(sim, "GET", "/api/v1/namespaces", "other", NULL, NULL);
  expect_401(&r);
  r = auth_do(sim, "POST", ssr, "other", NULL, ssr_body);
  expect_401(&r);
  r = auth_do(sim, "GET", "/healthz", NULL, NULL, NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = auth_do(sim, "GET", "/version", "other", NULL, NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* union.New(x509, token): either one authenticates; an untrusted
 * certificate does not stop a valid token; a wrong token is 401. */
static void test_sim_AuthUnionTokenOrCertificate(void **state) {
  kin_sim *sim = start_mtls("s3cret");
  sim_resp r = auth_do(sim, "GET", "/api/v1/namespaces", NULL, "s3cret", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = auth_do(sim, "GET", "/api/v1/namespaces", "other", "s3cret", NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = auth_do(sim, "GET", "/api/v1/namespaces", "alice", NULL, NULL);
  assert_int_equal(r.code, 200);
  sim_resp_free(&r);
  r = auth_do(sim, "GET", "/api/v1/namespaces", NULL, "wrong", NULL);
  expect_401(&r);
  r = auth_do(sim, "GET", "/api/v1/namespaces", "other", "wrong", NULL);
  expect_401(&r);
  r = auth_do(sim, "GET", "/api/v1/namespaces", NULL, NULL, NULL);
  expect_401(&r);
  /* a certificate wins over the token for the identity (x509 runs first) */
  r = auth_do(sim, "POST", ssr, "alice", "s3cret", ssr_body);
  assert_string_equal(jstr(r.json, "status.userInfo.username"), "alice");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* Without any authentication configured every caller is anonymous. */
static void test_sim_AuthAnonymousWithoutConfig(void **state) {
  kin_sim *sim = sim_start(0, 0);
  sim_resp r = sim_req(sim, "POST", ssr, ssr_body);
  assert_int_equal(r.code, 201);
  assert_string_equal(jstr(r.json, "status.userInfo.username"), "system:anonymous");
  json_t *groups = json_object_get(json_object_get(json_object_get(r.json, "status"), "userInfo"),
                                   "groups");
  assert_int_equal(json_array_size(groups), 1);
  assert_string_equal(json_string_value(json_array_get(groups, 0)), "system:unauthenticated");
  sim_resp_free(&r);
  kin_sim_free(sim);
}

/* A client CA needs TLS and a readable bundle of certificates. */
static void test_sim_AuthClientCAConfigErrors(void **state) {
  kin_sim_config cfg;
  kin_sim_config_init(&cfg);
  kin_sim *sim = NULL;
  cfg.client_ca_file = kin_test_fixture_path("sim_client_ca.crt");
  assert_int_equal(kin_sim_start(&cfg, &sim), KIN_EINVAL); /* no serving certificate */
  assert_null(sim);
  cfg.tls_cert_file = kin_test_fixture_path("sim_tls.crt");
  cfg.tls_key_file = kin_test_fixture_path("sim_tls.key");
  cfg.client_ca_file = "/nonexistent/ca.crt";
  assert_int_equal(kin_sim_start(&cfg, &sim), KIN_EINVAL);
  cfg.client_ca_file = kin_test_fixture_path("configmap.json"); /* not PEM */
  assert_int_equal(kin_sim_start(&cfg, &sim), KIN_EINVAL);
  assert_null(sim);
}

KIN_SUITE(sim_auth, cmocka_unit_test(test_sim_AuthX509ClientCertificate),
          cmocka_unit_test(test_sim_AuthX509UntrustedOrMissing),
          cmocka_unit_test(test_sim_AuthUnionTokenOrCertificate),
          cmocka_unit_test(test_sim_AuthAnonymousWithoutConfig),
          cmocka_unit_test(test_sim_AuthClientCAConfigErrors))
