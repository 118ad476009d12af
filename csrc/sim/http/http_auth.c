/* http_auth.c -- authentication as kube-apiserver's union of the x509
 * (--client-ca-file) and token authenticators, without anonymous access:
 * a client certificate the client CA verifies (for client auth) makes its
 * subject CN the user and its O entries the groups; a bearer token equal to
 * the configured one (user kinformer-sim) or to a named user's
 * (kin_sim_add_token, as a --token-auth-file line) is the other way in;
 * neither is 401. A server with neither a token nor a client CA serves
 * everyone, anonymous unless a named user's token says who. An untrusted
 * certificate does not fail the TLS handshake (the server only requests
 * one, as Go's tls.RequestClientCert): the request gets 401, or passes on
 * its token. (SelfSubjectReview, `kubectl auth whoami`, is answered by
 * csrc/sim/http/http_reviews.c.) */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

int kin__sim_client_ca_check(const char *pem) {
  gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
  gnutls_x509_crt_t *certs = NULL;
  unsigned n = 0;
  if (gnutls_x509_crt_list_import2(&certs, &n, &d, GNUTLS_X509_FMT_PEM, 0) < 0) return KIN_EINVAL;
  for (unsigned i = 0; i < n; i++) gnutls_x509_crt_deinit(certs[i]);
  gnutls_free(certs);
  return n ? 0 : KIN_EINVAL;
}

/* Fills req->user/groups from the subject of a verified peer certificate
 * (x509.CommonNameUserConversion); 1 when it authenticates the request. */
static int cert_user(kin__sim_req *req) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session) return 0;
  gnutls_session_t session = ci->tls_session;
  /* Chain to the client CA and, when the leaf has an extended key usage,
   * client auth among it: x509.DefaultVerifyOptions. */
  gnutls_typed_vdata_st purpose = {GNUTLS_DT_KEY_PURPOSE_OID,
                                   (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT, 0};
  unsigned status = 0;
  if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) < 0 || status) return 0;
  unsigned n = 0;
  const gnutls_datum_t *chain = gnutls_certificate_get_peers(session, &n);
  if (!chain || !n) return 0;
  gnutls_x509_crt_t crt;
  if (gnutls_x509_crt_init(&crt) < 0) return 0;
  int ok = 0;
  size_t len = sizeof(req->user);
  if (gnutls_x509_crt_import(crt, &chain[0], GNUTLS_X509_FMT_DER) >= 0 &&
      gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, req->user, &len) >= 0 &&
      req->user[0]) {
    ok = 1;
    unsigned char fp[32];
    size_t fl = sizeof(fp);
    if (gnutls_fingerprint(GNUTLS_DIG_SHA256, &chain[0], fp, &fl) >= 0 && fl == sizeof(fp)) {
      char *p = req->credential_id + sprintf(req->credential_id, "X509SHA256=");
      for (size_t i = 0; i < fl; i++) p += sprintf(p, "%02x", fp[i]);
    }
    for (unsigned i = 0; req->ngroups < KIN__SIM_MAX_GROUPS; i++) {
      size_t ol = sizeof(req->groups[0]);
      int grc = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, i, 0,
                                              req->groups[req->ngroups], &ol);
      if (grc == GNUTLS_E_SHORT_MEMORY_BUFFER) continue; /* longer than any group we keep */
      if (grc < 0) break;
      req->ngroups++;
    }
  } else {
    req->user[0] = 0; /* no CN: not authenticated, as the real converter */
  }
  gnutls_x509_crt_deinit(crt);
  return ok;
}

int kin__sim_token_user(kin_sim *sim, const char *token, char *user, size_t cap) {
  if (sim->token && !strcmp(token, sim->token)) {
    snprintf(user, cap, "kinformer-sim");
    return 1;
  }
  int found = 0;
  pthread_mutex_lock(&sim->tokens_mu);
  for (size_t i = 0; i < sim->ntokens && !found; i++) {
    if (strcmp(sim->tokens[i].token, token)) continue;
    snprintf(user, cap, "%s", sim->tokens[i].user);
    found = 1;
  }
  pthread_mutex_unlock(&sim->tokens_mu);
  return found;
}

/* Fills req->user from the request's bearer token (the configured one or
 * a named user's); 1 when it authenticates the request. */
static int token_user(kin__sim_req *req) {
  const char *h = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "Authorization");
  if (!h || strncmp(h, "Bearer ", 7)) return 0;
  return kin__sim_token_user(req->sim, h + 7, req->user, sizeof(req->user));
}

int kin__sim_authenticate(kin__sim_req *req, const char *url) {
  kin_sim *sim = req->sim;
  if (!sim->token && !sim->client_ca) {
    if (!token_user(req)) snprintf(req->user, sizeof(req->user), "system:anonymous");
    return 1;
  }
  if (sim->client_ca && cert_user(req)) return 1;
  if (token_user(req)) return 1;
  /* The health and version endpoints stay open, as the real server's
   * system:public-info-viewer role leaves them to anyone. */
  return !strcmp(url, "/healthz") || !strcmp(url, "/readyz") || !strcmp(url, "/livez") ||
         !strcmp(url, "/version");
}

int kin_sim_add_token(kin_sim *sim, const char *user, const char *token) {
  if (!user || !*user || !token || !*token) return KIN_EINVAL;
  if (sim->token && !strcmp(token, sim->token))
    return strcmp(user, "kinformer-sim") ? KIN_EINVAL : 0;
  int rc = 0;
  pthread_mutex_lock(&sim->tokens_mu);
  for (size_t i = 0; i < sim->ntokens; i++) {
    if (strcmp(sim->tokens[i].token, token)) continue;
    rc = strcmp(sim->tokens[i].user, user) ? KIN_EINVAL : 1;
    break;
  }
  if (!rc && sim->ntokens == sim->captokens) {
    size_t cap = sim->captokens ? sim->captokens * 2 : 4;
    kin__sim_token *t = realloc(sim->tokens, cap * sizeof(*t));
    if (t) {
      sim->tokens = t;
      sim->captokens = cap;
    } else {
      rc = KIN_ENOMEM;
    }
  }
  if (!rc) {
    kin__sim_token *t = &sim->tokens[sim->ntokens];
    t->user = strdup(user);
    t->token = strdup(token);
    if (t->user && t->token) {
      sim->ntokens++;
    } else {
      free(t->user);
      free(t->token);
      rc = KIN_ENOMEM;
    }
  }
  pthread_mutex_unlock(&sim->tokens_mu);
  return rc == 1 ? 0 : rc;
}

char *kin_sim_token(kin_sim *sim, const char *user) {
  if (!user || !*user) return NULL;
  if (sim->token && !strcmp(user, "kinformer-sim")) return strdup(sim->token);
  pthread_mutex_lock(&sim->tokens_mu);
  char *tok = NULL;
  for (size_t i = 0; i < sim->ntokens && !tok; i++)
    if (!strcmp(sim->tokens[i].user, user)) tok = strdup(sim->tokens[i].token);
  pthread_mutex_unlock(&sim->tokens_mu);
  if (tok) return tok;
  /* A new one: 128 random bits, as a uuid's hex digits. Two callers
   * making one for the same user at once both get theirs registered. */
  char uuid[37], fresh[64];
  kin__sim_uuid(uuid);
  char *p = fresh + snprintf(fresh, sizeof(fresh), "kinformer-sim-");
  for (const char *u = uuid; *u; u++)
    if (*u != '-') *p++ = *u;
  *p = 0;
  return kin_sim_add_token(sim, user, fresh) ? NULL : strdup(fresh);
}
