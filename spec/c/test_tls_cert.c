/* test_tls_cert.c -- tls_cert.h: a CA and a serving certificate it signs
 * (what webhooks will need), and a key pair that follows its files'
 * rotation and keeps the last good pair when a new one does not load. */
#include "kin_test.h"

#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kin.h"
#include "tls_cert.h"

static gnutls_x509_crt_t crt_of(const char *pem) {
  gnutls_x509_crt_t c;
  assert_int_equal(gnutls_x509_crt_init(&c), 0);
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
  assert_int_equal(gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_PEM), 0);
  return c;
}

static void test_tls_cert_CaSignsServing(void **state) {
  (void)state;
  char *ca_crt, *ca_key, *crt, *key, err[200];
  kin_tls_cert_req ca = {.common_name = "webhook-ca", .is_ca = 1, .days = 3650};
  assert_int_equal(kin_tls_make_cert(&ca, &ca_crt, &ca_key, err, sizeof err), 0);
  const char *hosts[] = {"hook.system.svc", "10.0.0.7"};
  kin_tls_cert_req srv = {.common_name = "hook.system.svc", .hosts = hosts, .nhosts = 2,
                          .signer_cert_pem = ca_crt, .signer_key_pem = ca_key};
  assert_int_equal(kin_tls_make_cert(&srv, &crt, &key, err, sizeof err), 0);
  assert_non_null(strstr(key, "PRIVATE KEY"));

  gnutls_x509_crt_t c = crt_of(crt), a = crt_of(ca_crt);
  unsigned status = 0;
  assert_int_equal(gnutls_x509_crt_verify(c, &a, 1, 0, &status), 0);
  assert_int_equal(status, 0);
  assert_true(gnutls_x509_crt_check_hostname(c, "hook.system.svc"));
  assert_true(gnutls_x509_crt_check_ip(c, (const unsigned char[]){10, 0, 0, 7}, 4, 0));
  assert_false(gnutls_x509_crt_check_hostname(c, "evil.example"));
  unsigned ca_flag = 0;
  assert_int_equal(gnutls_x509_crt_get_basic_constraints(a, NULL, &ca_flag, NULL), 1);
  assert_int_equal(ca_flag, 1);
  assert_int_equal(gnutls_x509_crt_get_basic_constraints(c, NULL, &ca_flag, NULL), 0);
  assert_int_equal(ca_flag, 0);
  gnutls_x509_crt_deinit(c);
  gnutls_x509_crt_deinit(a);

  /* half a signer is misuse; a signer that does not parse is named */
  kin_tls_cert_req half = {.signer_cert_pem = ca_crt};
  char *x, *y;
  assert_int_equal(kin_tls_make_cert(&half, &x, &y, err, sizeof err), KIN_EINVAL);
  kin_tls_cert_req bad = {.signer_cert_pem = "x", .signer_key_pem = "y"};
  assert_int_equal(kin_tls_make_cert(&bad, &x, &y, err, sizeof err), KIN_EINVAL);
  assert_string_equal(err, "the signing CA's certificate or key does not parse");
  free(crt);
  free(key);
  free(ca_crt);
  free(ca_key);
}

static void write_file(const char *dir, const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s.tmp", dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  char q[512];
  snprintf(q, sizeof q, "%s/%s", dir, name);
  assert_int_equal(rename(p, q), 0); /* a Secret volume swaps, never half-writes */
}

static void write_pair(const char *dir, const char *cn) {
  char *crt, *key, err[200];
  kin_tls_cert_req r = {.common_name = cn};
  assert_int_equal(kin_tls_make_cert(&r, &crt, &key, err, sizeof err), 0);
  write_file(dir, "tls.key", key);
  write_file(dir, "tls.crt", crt);
  free(crt);
  free(key);
}

/* The CN of the leaf kp serves now. */
static void served_cn(kin_tls_keypair *kp, char *cn, size_t n) {
  gnutls_pcert_st *pc;
  unsigned npc;
  gnutls_privkey_t k;
  assert_int_equal(kin_tls_keypair_current(kp, &pc, &npc, &k), 0);
  assert_int_equal(npc, 1);
  gnutls_x509_crt_t c;
  assert_int_equal(gnutls_x509_crt_init(&c), 0);
  assert_int_equal(gnutls_x509_crt_import(c, &pc[0].cert, GNUTLS_X509_FMT_DER), 0);
  assert_int_equal(gnutls_x509_crt_get_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &n), 0);
  gnutls_x509_crt_deinit(c);
}

static void test_tls_cert_KeypairFollowsRotation(void **state) {
  (void)state;
  char dir[] = "/tmp/kin-tls-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char err[400];
  kin_tls_keypair *kp = NULL;
  kin_tls_keypair_opts o = {.dir = dir, .what = "test"};
  assert_int_equal(kin_tls_keypair_open(&o, &kp, err, sizeof err), KIN_ENOENT);
  assert_non_null(strstr(err, "/tls.crt: no such file"));

  write_pair(dir, "first");
  assert_int_equal(kin_tls_keypair_open(&o, &kp, err, sizeof err), 0);
  char cn[64];
  served_cn(kp, cn, sizeof cn);
  assert_string_equal(cn, "first");
  assert_int_equal(kin_tls_keypair_generation(kp), 1);

  write_pair(dir, "second");
  usleep(1100 * 1000); /* files are looked at once a second at most */
  served_cn(kp, cn, sizeof cn);
  assert_string_equal(cn, "second");
  assert_int_equal(kin_tls_keypair_generation(kp), 2);

  /* a key that does not belong to the certificate: the last good pair stays */
  char *crt, *key;
  kin_tls_cert_req r = {.common_name = "third"};
  assert_int_equal(kin_tls_make_cert(&r, &crt, &key, err, sizeof err), 0);
  write_file(dir, "tls.crt", crt);
  usleep(1100 * 1000);
  kin_test_log_start();
  served_cn(kp, cn, sizeof cn);
  assert_string_equal(cn, "second");
  assert_int_equal(kin_tls_keypair_generation(kp), 2);
  kin_test_log_expect_only("serving certificate not reloaded, the previous one stays");
  assert_int_equal(kin_test_log_count("do not match"), 1);
  kin_test_log_stop();
  write_file(dir, "tls.key", key); /* the matching key arrives */
  usleep(1100 * 1000);
  served_cn(kp, cn, sizeof cn);
  assert_string_equal(cn, "third");
  assert_int_equal(kin_tls_keypair_generation(kp), 3);
  free(crt);
  free(key);
  kin_tls_keypair_free(kp);

  /* without a folder: self-signed, never reloaded */
  kin_tls_keypair_opts self = {.what = "test"};
  assert_int_equal(kin_tls_keypair_open(&self, &kp, err, sizeof err), 0);
  served_cn(kp, cn, sizeof cn);
  assert_string_equal(cn, "kinformer");
  kin_tls_keypair_free(kp);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A pair given in memory (a webhook's serving certificate signed by the
 * CA the process made) is served as given; half a pair or a key that does
 * not belong is refused with a reason. */
static void test_tls_cert_KeypairFromMemory(void **state) {
  (void)state;
  char *ca_crt, *ca_key, *crt, *key, *crt2, *key2, err[400];
  kin_tls_cert_req ca = {.common_name = "webhook-ca", .is_ca = 1};
  assert_int_equal(kin_tls_make_cert(&ca, &ca_crt, &ca_key, err, sizeof err), 0);
  kin_tls_cert_req srv = {.common_name = "served-from-memory", .signer_cert_pem = ca_crt,
                          .signer_key_pem = ca_key};
  assert_int_equal(kin_tls_make_cert(&srv, &crt, &key, err, sizeof err), 0);
  assert_int_equal(kin_tls_make_cert(&srv, &crt2, &key2, err, sizeof err), 0);
  kin_tls_keypair *kp = NULL;
  /* dir is ignored when the pair is given */
  kin_tls_keypair_opts o = {.cert_pem = crt, .key_pem = key, .dir = "/nonexistent", .what = "webhook"};
  assert_int_equal(kin_tls_keypair_open(&o, &kp, err, sizeof err), 0);
  char cn[64];
  served_cn(kp, cn, sizeof cn);
  assert_string_equal(cn, "served-from-memory");
  assert_int_equal(kin_tls_keypair_generation(kp), 1);
  kin_tls_keypair_free(kp);

  kin_tls_keypair_opts half = {.cert_pem = crt, .what = "webhook"};
  assert_int_equal(kin_tls_keypair_open(&half, &kp, err, sizeof err), KIN_EINVAL);
  assert_string_equal(err, "the webhook certificate given in memory needs both cert_pem and key_pem");
  assert_null(kp);
  kin_tls_keypair_opts wrong = {.cert_pem = crt, .key_pem = key2, .what = "webhook"};
  assert_int_equal(kin_tls_keypair_open(&wrong, &kp, err, sizeof err), KIN_EINVAL);
  assert_non_null(strstr(err, "the webhook certificate and key given in memory: "));
  assert_null(kp);
  free(crt);
  free(key);
  free(crt2);
  free(key2);
  free(ca_crt);
  free(ca_key);
}

KIN_SUITE(tls_cert, cmocka_unit_test(test_tls_cert_CaSignsServing),
          cmocka_unit_test(test_tls_cert_KeypairFollowsRotation),
          cmocka_unit_test(test_tls_cert_KeypairFromMemory))
