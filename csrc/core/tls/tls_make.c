/* tls_make.c -- kin_tls_make_cert (tls_cert.h): an ECDSA P-256 key and an
 * X.509 v3 certificate with GnuTLS's x509 API, self-signed or signed by a
 * given CA, written as PEM. */
#include <arpa/inet.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "tls_cert.h"

/* Exports a PEM of the object fn writes; returns a malloc'd string or NULL. */
static char *export_pem(int (*fn)(void *, gnutls_x509_crt_fmt_t, gnutls_datum_t *), void *obj) {
  gnutls_datum_t d = {0};
  if (fn(obj, GNUTLS_X509_FMT_PEM, &d) < 0) return NULL;
  char *s = malloc(d.size + 1);
  if (s) {
    memcpy(s, d.data, d.size);
    s[d.size] = 0;
  }
  gnutls_free(d.data);
  return s;
}

/* export_pem's adapters for a certificate and a key: GnuTLS's codes. */
static int crt_export(void *c, gnutls_x509_crt_fmt_t f, gnutls_datum_t *d) {
  return gnutls_x509_crt_export2((gnutls_x509_crt_t)c, f, d);
}
static int key_export(void *k, gnutls_x509_crt_fmt_t f, gnutls_datum_t *d) {
  return gnutls_x509_privkey_export2((gnutls_x509_privkey_t)k, f, d);
}

/* Adds one SAN: an IP address when host parses as one, else a DNS name.
 * Returns GnuTLS's code. */
static int add_san(gnutls_x509_crt_t crt, const char *host) {
  unsigned char ip[16];
  if (inet_pton(AF_INET, host, ip) == 1)
    return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4, GNUTLS_FSAN_APPEND);
  if (inet_pton(AF_INET6, host, ip) == 1)
    return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16, GNUTLS_FSAN_APPEND);
  return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host,
                                              (unsigned)strlen(host), GNUTLS_FSAN_APPEND);
}

/* Fills the fields of crt (key set by the caller) from req. Returns
 * GnuTLS's code. */
static int fill(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const kin_tls_cert_req *req) {
  int rc;
  unsigned char serial[16];
  if ((rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial)) < 0) return rc;
  serial[0] &= 0x7f; /* a positive INTEGER */
  time_t now = time(NULL);
  unsigned days = req->days ? req->days : 365;
  const char *cn = req->common_name && *req->common_name ? req->common_name : "kinformer";
  if ((rc = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
      (rc = gnutls_x509_crt_set_serial(crt, serial, sizeof serial)) < 0 ||
      (rc = gnutls_x509_crt_set_activation_time(crt, now - 60)) < 0 ||
      (rc = gnutls_x509_crt_set_expiration_time(crt, now + (time_t)days * 86400)) < 0 ||
      (rc = gnutls_x509_crt_set_key(crt, key)) < 0 ||
      (rc = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                          (unsigned)strlen(cn))) < 0 ||
      (rc = gnutls_x509_crt_set_basic_constraints(crt, req->is_ca ? 1 : 0, -1)) < 0)
    return rc;
  if (req->is_ca) {
    rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN |
                                                GNUTLS_KEY_DIGITAL_SIGNATURE);
  } else {
    rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
    if (rc >= 0) rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
  }
  for (int i = 0; rc >= 0 && i < req->nhosts; i++)
    if (req->hosts[i] && *req->hosts[i]) rc = add_san(crt, req->hosts[i]);
  if (rc >= 0) {
    unsigned char id[64];
    size_t idlen = sizeof id;
    rc = gnutls_x509_crt_get_key_id(crt, 0, id, &idlen);
    if (rc >= 0) rc = gnutls_x509_crt_set_subject_key_id(crt, id, idlen);
  }
  return rc;
}

/* Imports the signer's certificate and key from PEM. Returns 0 or KIN_EINVAL. */
static int load_signer(const kin_tls_cert_req *req, gnutls_x509_crt_t *crt,
                       gnutls_x509_privkey_t *key) {
  gnutls_datum_t c = {(unsigned char *)req->signer_cert_pem, (unsigned)strlen(req->signer_cert_pem)};
  gnutls_datum_t k = {(unsigned char *)req->signer_key_pem, (unsigned)strlen(req->signer_key_pem)};
  *crt = NULL;
  *key = NULL;
  if (gnutls_x509_crt_init(crt) < 0 || gnutls_x509_privkey_init(key) < 0 ||
      gnutls_x509_crt_import(*crt, &c, GNUTLS_X509_FMT_PEM) < 0 ||
      gnutls_x509_privkey_import(*key, &k, GNUTLS_X509_FMT_PEM) < 0) {
    if (*crt) gnutls_x509_crt_deinit(*crt);
    if (*key) gnutls_x509_privkey_deinit(*key);
    *crt = NULL;
    *key = NULL;
    return KIN_EINVAL;
  }
  return 0;
}

int kin_tls_make_cert(const kin_tls_cert_req *req, char **cert_pem, char **key_pem, char *err,
                      size_t errlen) {
  kin_tls_cert_req dflt = {0};
  if (!req) req = &dflt;
  *cert_pem = *key_pem = NULL;
  if (err && errlen) err[0] = 0;
  if (!req->signer_cert_pem != !req->signer_key_pem) return KIN_EINVAL;
  gnutls_x509_crt_t scrt = NULL;
  gnutls_x509_privkey_t skey = NULL;
  if (req->signer_cert_pem && load_signer(req, &scrt, &skey) != 0) {
    if (err && errlen) snprintf(err, errlen, "the signing CA's certificate or key does not parse");
    return KIN_EINVAL;
  }
  gnutls_x509_privkey_t key = NULL;
  gnutls_x509_crt_t crt = NULL;
  int rc = gnutls_x509_privkey_init(&key);
  if (rc >= 0)
    rc = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                      GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
  if (rc >= 0) rc = gnutls_x509_crt_init(&crt);
  if (rc >= 0) rc = fill(crt, key, req);
  if (rc >= 0 && scrt) {
    unsigned char id[64];
    size_t idlen = sizeof id;
    if (gnutls_x509_crt_get_subject_key_id(scrt, id, &idlen, NULL) >= 0)
      gnutls_x509_crt_set_authority_key_id(crt, id, idlen);
  }
  if (rc >= 0) rc = gnutls_x509_crt_sign2(crt, scrt ? scrt : crt, scrt ? skey : key,
                                          GNUTLS_DIG_SHA256, 0);
  int out = 0;
  if (rc < 0) {
    if (err && errlen) snprintf(err, errlen, "GnuTLS: %s", gnutls_strerror(rc));
    out = rc == GNUTLS_E_MEMORY_ERROR ? KIN_ENOMEM : KIN_EIO;
  } else {
    *cert_pem = export_pem(crt_export, crt);
    *key_pem = export_pem(key_export, key);
    if (!*cert_pem || !*key_pem) {
      free(*cert_pem);
      free(*key_pem);
      *cert_pem = *key_pem = NULL;
      out = KIN_ENOMEM;
    }
  }
  if (crt) gnutls_x509_crt_deinit(crt);
  if (key) gnutls_x509_privkey_deinit(key);
  if (scrt) gnutls_x509_crt_deinit(scrt);
  if (skey) gnutls_x509_privkey_deinit(skey);
  return out;
}
