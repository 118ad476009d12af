/* webhook_server.c -- webhook.h's server object: made with its limits and
 * metrics, started and stopped (webhook_listen.c holds the daemon), and
 * the in-memory entry kinformer.sim calls (kin_webhook_server_serve). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"
#include "webhook_int.h"

/* See webhook.h: 0 with *out (the caller frees it), KIN_EINVAL (err) or
 * KIN_ENOMEM, nothing allocated on failure. */
int kin_webhook_server_new(const kin_webhook_server_config *cfg, kin_webhook_server **out,
                           char *err, size_t errlen) {
  char e[200] = "";
  *out = NULL;
  const char *bind = cfg && cfg->bind_address && *cfg->bind_address ? cfg->bind_address : ":9443";
  int rc = kin__wh_check_bind(bind, e, sizeof e);
  if (rc) {
    if (err && errlen) snprintf(err, errlen, "%s", e);
    return rc;
  }
  kin_webhook_server *s = calloc(1, sizeof *s);
  if (!s || !(s->bind_address = strdup(bind))) {
    free(s);
    return KIN_ENOMEM;
  }
  s->keys = cfg ? cfg->keys : NULL;
  s->max_connections = cfg && cfg->max_connections ? cfg->max_connections : 256;
  s->max_request_bytes =
      cfg && cfg->max_request_bytes ? cfg->max_request_bytes : (size_t)7 * 1024 * 1024;
  rc = kin__wh_metrics_init(&s->metrics, cfg ? cfg->metrics : NULL);
  if (rc) {
    if (err && errlen)
      snprintf(err, errlen, "webhook metrics: %s", rc == KIN_EEXIST
                                                        ? "a metric of the same name and another "
                                                          "shape is registered"
                                                        : kin_strerror(rc));
    free(s->bind_address);
    free(s);
    return rc;
  }
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->life_mu, NULL);
  pthread_cond_init(&s->idle, NULL);
  *out = s;
  return 0;
}

/* See webhook.h: 0 (also when already started), or the listen error
 * with err. */
int kin_webhook_server_start(kin_webhook_server *s, char *err, size_t errlen) {
  char e[300] = "";
  pthread_mutex_lock(&s->life_mu);
  int rc = s->daemon ? 0 : kin__wh_listen(s, e, sizeof e);
  pthread_mutex_unlock(&s->life_mu);
  if (rc && err && errlen) snprintf(err, errlen, "%s", e[0] ? e : kin_strerror(rc));
  return rc;
}

/* The port listened on, or 0 when not started. */
int kin_webhook_server_port(const kin_webhook_server *s) {
  return s ? __atomic_load_n(&s->port, __ATOMIC_ACQUIRE) : 0;
}

/* See webhook.h: the HTTP status with a malloc'd answer in *out the
 * caller frees, or KIN_ENOMEM; fn runs on this thread. */
int kin_webhook_server_serve(kin_webhook_server *s, const char *path, const char *body,
                             size_t len, uint32_t timeout_ms, char **out, size_t *outlen) {
  return kin__wh_handle(s, path ? path : "", body ? body : "", body ? len : 0,
                        (uint64_t)timeout_ms * 1000000ull, NULL, out, outlen);
}

/* Stops listening, waiting for the connections under way; idempotent. */
void kin_webhook_server_stop(kin_webhook_server *s) {
  if (!s) return;
  pthread_mutex_lock(&s->life_mu);
  kin__wh_unlisten(s);
  pthread_mutex_unlock(&s->life_mu);
}

/* Stops s, frees its hooks and s; NULL is a no-op. */
void kin_webhook_server_free(kin_webhook_server *s) {
  if (!s) return;
  kin_webhook_server_stop(s);
  kin__wh_hooks_clear(s);
  pthread_cond_destroy(&s->idle);
  pthread_mutex_destroy(&s->life_mu);
  pthread_mutex_destroy(&s->mu);
  free(s->bind_address);
  free(s);
}
