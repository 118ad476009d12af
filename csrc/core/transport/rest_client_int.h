/* rest_client_int.h -- internal: the client's state, shared by rest_client.c
 * (transport, auth, retries), discovery.c (RESTMapper) and rest_verbs.c
 * (internal). */
#ifndef KIN_REST_CLIENT_INT_H
#define KIN_REST_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "buf.h"
#include "hmap.h"
#include "rest_client.h"
#include "token_bucket.h"

struct kin_client {
  /* Immutable after kin_client_new. */
  kin_io_engine *io;
  int own_io;
  char *host; /* no trailing slash */
  char *ns;
  char *user_agent;  /* "User-Agent: ..." header line */
  char *proxy_url;
  kin_io_tls tls;    /* its strings point to the owned copies below */
  char *ca_file, *ca_data, *cert_file, *cert_data, *key_file, *key_data, *server_name;
  int ca_from_kubeconfig;      /* ca_data came from certificate-authority-data (messages) */
  char *bearer_token;          /* secret: never logged */
  kin_token_file *token_file;  /* own lock */
  kin_exec_provider *exec;     /* own lock */
  int plain_http;              /* host is http:// */
  int creds_over_http;         /* kin_rest_config.credentials_over_http */
  atomic_int http_noted;       /* the plain-HTTP credential line was logged */
  uint64_t max_body;           /* cap of a non-watch body; 0: none */
  int gzip;                    /* ask for gzip (kin_client_opts.disable_compression unset) */
  kin_clock *clock;
  int max_retries;
  long timeout_ms;
  int limited;                 /* rl is in use */
  kin__token_bucket rl;        /* own lock */

  /* Retry waits: wait_mu pairs with wait_cond for kin_clock_wait only. */
  pthread_mutex_t wait_mu;
  pthread_cond_t wait_cond;

  /* mu guards the discovery cache: gvs ("group/version" -> kin__gv_doc *)
   * and strs (interned strings that kin_resource points to: they live as
   * long as the client, so a refresh never invalidates a resolved
   * resource). */
  pthread_mutex_t mu;
  kin__hmap gvs;
  kin__hmap strs;

  /* metrics_mu guards metrics (rest_metrics.c); its host is immutable. */
  pthread_mutex_t metrics_mu;
  kin_rest_metrics metrics; /* buckets per bucket, not cumulative */
};

/* rest_metrics.c: sets up / tears down c's metrics (the host label is
 * derived from c->host when read);
 * records one attempt of method that ended with code (0: transport error)
 * after took_ns. */
void kin__rest_metrics_init(kin_client *c);
void kin__rest_metrics_destroy(kin_client *c);
void kin__rest_metrics_record(kin_client *c, const char *method, long code, uint64_t took_ns);

/* The credential of one attempt. Every field is owned and wiped by
 * kin__auth_release. */
typedef struct {
  char *header;             /* "Authorization: Bearer ..." or NULL (secret) */
  char *token;              /* the token in it, to notice a rotation */
  kin_exec_credential cred; /* exec plugin's answer */
} kin__auth_state;

/* rest_auth.c: wipes and frees a's fields. */
void kin__auth_release(kin__auth_state *a);
/* rest_auth.c: fills a and the TLS of one attempt (*tls from c's, with the
 * exec plugin's client certificate when it gave one): the exec plugin's
 * token, else the token file's, else the static token; nothing for a
 * plain http:// server unless c->creds_over_http. Returns 0, or the
 * provider's error with msg set (never holding the credential). */
int kin__auth_prepare(kin_client *c, kin__auth_state *a, kin_io_tls *tls, char *msg,
                      size_t msglen);
/* rest_auth.c: after a 401, 1 when a retry may succeed with a refreshed
 * credential (exec plugin re-run, token file rotated), else 0. */
int kin__auth_refresh(kin_client *c, const kin__auth_state *used);

/* Drops every discovery document (under c->mu); the interned strings stay. */
void kin__discovery_clear(kin_client *c);
/* Frees the discovery cache and the interned strings (client teardown). */
void kin__discovery_free(kin_client *c);

#endif
