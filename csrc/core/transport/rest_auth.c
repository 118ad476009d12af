/* rest_auth.c -- the credential of each request: the exec plugin's, the
 * rotating token file's or the static bearer token, and the rule of when
 * none is sent. kubectl (client-go's clientcmd: "only try to read the auth
 * information if we are secure") sends no credential at all to an http://
 * server; so does this client, unless the configuration says so
 * explicitly (kin_rest_config.credentials_over_http, from the kubeconfig
 * cluster extension kinformer.io/credentials-over-http), and then it logs
 * a warning once per client (a note at info level when the server is a
 * loopback address, as the sim on 127.0.0.1 of the tests). Client
 * certificates are TLS-only anyway. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "log.h"
#include "rest_client_int.h"
#include "util.h"

/* 1 when c's http:// host is a loopback address (127.x.y.z, localhost,
 * [::1]): credentials sent there cross no network. */
static int loopback(const kin_client *c) {
  const char *h = c->host + 7; /* after "http://" */
  size_t n = h[0] == '[' ? strcspn(h, "]") + 1 : strcspn(h, ":/?#");
  if ((n == 9 && !strncmp(h, "localhost", 9)) || (n == 5 && !strncmp(h, "[::1]", 5))) return 1;
  if (n < 7 || strncmp(h, "127.", 4)) return 0;
  for (size_t i = 4; i < n; i++)
    if (!((h[i] >= '0' && h[i] <= '9') || h[i] == '.')) return 0;
  return 1;
}

/* 1 when a credential may go with c's requests, 0 when c's server is
 * plain http:// and the config did not allow it. Logs once per client:
 * a warning when credentials go in clear, else a note that the
 * configured ones are left out. */
static int http_gate(kin_client *c) {
  if (!c->plain_http) return 1;
  int has = c->exec || c->token_file || (c->bearer_token && *c->bearer_token);
  if (has && !atomic_exchange(&c->http_noted, 1)) {
    if (c->creds_over_http) /* a warning, but a note only for a loopback server */
      kin_log(loopback(c) ? KIN_LOG_INFO : KIN_LOG_WARN, "rest_client",
              "%s is plain HTTP and the configuration allows credentials over it "
              "(credentials_over_http): the bearer token goes in clear", c->host);
    else
      kin_log(KIN_LOG_INFO, "rest_client",
              "%s is plain HTTP: the configured credentials are not sent (as kubectl; see "
              "docs/client-security.md to allow them)", c->host);
  }
  return c->creds_over_http;
}

void kin__auth_release(kin__auth_state *a) {
  kin__wipe_free(a->header);
  kin__wipe_free(a->token);
  kin_exec_credential_clear(&a->cred);
  memset(a, 0, sizeof *a);
}

/* The token the token file holds now (the caller frees it), falling back
 * to the static token when the file cannot be read, as client-go's
 * cachingTokenSource; NULL when there is none or on OOM. */
static char *file_token(kin_client *c, char *err, size_t errlen) {
  char *t = NULL;
  if (kin_token_file_get(c->token_file, &t, err, errlen) == 0) return t;
  if (c->bearer_token) {
    kin_log(KIN_LOG_WARN, "rest_client", "%s; using the static bearer token", err);
    return strdup(c->bearer_token);
  }
  return NULL;
}

/* Fills a and the TLS/header parts of req for one attempt: the exec
 * plugin's credential, else the token file's token, else the static
 * token. Returns 0, or the provider's error with msg set (never with the
 * credential in it). */
int kin__auth_prepare(kin_client *c, kin__auth_state *a, kin_io_tls *tls, char *msg, size_t msglen) {
  memset(a, 0, sizeof *a);
  *tls = c->tls;
  msg[0] = 0;
  if (!http_gate(c)) return 0; /* as kubectl: no credential to an http:// server */
  const char *tok = NULL;
  if (c->exec) {
    int rc = kin_exec_provider_get(c->exec, &a->cred, msg, msglen);
    if (rc) return rc;
    if (a->cred.client_cert_data && a->cred.client_key_data) {
      tls->cert_file = tls->key_file = NULL;
      tls->cert_data = a->cred.client_cert_data;
      tls->cert_data_len = strlen(a->cred.client_cert_data);
      tls->key_data = a->cred.client_key_data;
      tls->key_data_len = strlen(a->cred.client_key_data);
    }
    tok = a->cred.token;
  }
  if (!tok && c->token_file) {
    if (!(a->token = file_token(c, msg, msglen))) return msg[0] ? KIN_EINVAL : KIN_ENOMEM;
    tok = a->token;
  }
  if (!tok) tok = c->bearer_token;
  if (tok && *tok) {
    size_t n = strlen(tok) + sizeof "Authorization: Bearer ";
    if (!(a->header = malloc(n))) return KIN_ENOMEM;
    snprintf(a->header, n, "Authorization: Bearer %s", tok);
  }
  return 0;
}

/* After a 401: 1 when a retry may succeed because the credential can be
 * refreshed (the exec plugin runs again, or the token file now holds
 * another token than the one sent). */
int kin__auth_refresh(kin_client *c, const kin__auth_state *used) {
  if (c->exec) {
    kin_exec_provider_invalidate(c->exec);
    return 1;
  }
  if (c->token_file) {
    char e[256];
    char *now = file_token(c, e, sizeof e);
    int changed = now && (!used->token || strcmp(now, used->token) != 0);
    kin__wipe_free(now);
    return changed;
  }
  return 0;
}

void kin_client_auth_failed(kin_client *c) {
  /* The token file is compared by mtime and size on every read, so a
   * rotated token is picked up without being told. */
  if (c->exec) kin_exec_provider_invalidate(c->exec);
}

