/* webhook_listen.c -- the webhook server's HTTPS endpoint on
 * libmicrohttpd: the bind address, one daemon with a thread per
 * connection (at most max_connections, an idle timeout), TLS from the
 * server's kin_tls_keypair through the certificate callback (a rotated
 * pair serves the next handshake), the body gathered up to
 * max_request_bytes (a larger Content-Length is refused with 413 before
 * its body is read; a chunked body past the cap is dropped, not kept), and
 * each POST handed to kin__wh_handle. */
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kin.h"
#include "log.h"
#include "netaddr.h"
#include "tls_serve.h"
#include "webhook_int.h"

#define IDLE_TIMEOUT_S 60
#define TLS_PRIORITIES "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1:-VERS-SSL3.0"

/* A connection's request under way: its body so far. */
typedef struct {
  kin__buf body;
  int too_big; /* the body passed the cap: the rest is dropped */
  int answered; /* a response was queued at the headers */
} conn_req;

/* libmicrohttpd's messages, at debug (connection limit, TLS handshakes
 * that failed, clients that went away). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[400];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
  kin_log(KIN_LOG_DEBUG, "webhook", "libmicrohttpd: %s", line);
}

/* 0 when bind parses as an address to listen on, else KIN_EINVAL with
 * err. */
int kin__wh_check_bind(const char *bind, char *err, size_t errlen) {
  kin__netaddr a;
  return kin__netaddr_parse(bind, 0, "webhook bind address", &a, err, errlen);
}

/* Queues status with body (malloc'd, taken). Returns MHD's result. */
static enum MHD_Result answer(struct MHD_Connection *c, int status, char *body, size_t len) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                          status == 200 ? "application/json" : "text/plain; charset=utf-8");
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
  MHD_destroy_response(r);
  return ok;
}

/* kin__wh_handle's answer queued, or MHD_NO (the connection is closed)
 * when it could not be made. */
static enum MHD_Result handle(kin_webhook_server *s, struct MHD_Connection *c, const char *url,
                              const char *body, size_t len, uint64_t timeout_ns,
                              const char *ctype) {
  char *out = NULL;
  size_t outlen = 0;
  int status = kin__wh_handle(s, url, body, len, timeout_ns, ctype, &out, &outlen);
  if (status < 0) return MHD_NO;
  return answer(c, status, out, outlen);
}

/* The access handler: the headers (404 and 413 at once), the body's
 * pieces, then the answer. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload, size_t *upload_size, void **con_cls) {
  (void)method, (void)version;
  kin_webhook_server *s = cls;
  conn_req *q = *con_cls;
  if (!q) {
    if (!(q = calloc(1, sizeof *q))) return MHD_NO;
    *con_cls = q;
    if (!kin__wh_hooks_has(s, url)) {
      q->answered = 1;
      return handle(s, c, url, "", 0, 0, NULL);
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n = cl ? strtoull(cl, NULL, 10) : 0;
    if (n > s->max_request_bytes) {
      q->answered = 1;
      return handle(s, c, url, NULL, (size_t)n, 0, NULL);
    }
    return MHD_YES;
  }
  if (q->answered) {
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size) {
    if (!q->too_big && q->body.len + *upload_size > s->max_request_bytes) {
      q->too_big = 1;
      kin__buf_free(&q->body);
    }
    if (!q->too_big && kin__buf_add(&q->body, upload, *upload_size) != 0) return MHD_NO;
    *upload_size = 0;
    return MHD_YES;
  }
  uint64_t timeout_ns = 0;
  const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeout");
  if (t && kin__wh_parse_duration(t, &timeout_ns) != 0) timeout_ns = 0;
  const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
  size_t len = q->too_big ? s->max_request_bytes + 1 : q->body.len;
  return handle(s, c, url, q->body.p ? q->body.p : "", len, timeout_ns, ctype ? ctype : "");
}

/* MHD_OPTION_NOTIFY_COMPLETED: frees the request's state. */
static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe) {
  (void)cls, (void)c, (void)toe;
  conn_req *q = *con_cls;
  if (!q) return;
  kin__buf_free(&q->body);
  free(q);
  *con_cls = NULL;
}

/* Starts a daemon on port with flags, bound to ss (NULL: every address
 * of the flags' family). Returns it, or NULL with errno. */
static struct MHD_Daemon *start(kin_webhook_server *s, unsigned flags, uint16_t port,
                                const struct sockaddr_storage *ss) {
  errno = 0;
  if (!ss)
    return MHD_start_daemon(
        flags, port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
        s->max_connections, MHD_OPTION_NOTIFY_COMPLETED, on_done, s, MHD_OPTION_HTTPS_PRIORITIES,
        TLS_PRIORITIES, MHD_OPTION_HTTPS_CERT_CALLBACK, kin_tls_ports_on_cert, MHD_OPTION_END);
  return MHD_start_daemon(
      flags, port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
      MHD_OPTION_SOCK_ADDR, ss, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
      MHD_OPTION_CONNECTION_LIMIT, s->max_connections, MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
      MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_HTTPS_CERT_CALLBACK,
      kin_tls_ports_on_cert, MHD_OPTION_END);
}

/* See webhook_int.h: 0 with s->daemon and s->port set, or KIN_EINVAL,
 * KIN_EBUSY, KIN_ENOMEM with err (nothing left listening). ":port" listens
 * on IPv6 and IPv4 (dual stack, as Go's net.Listen), or on IPv4 alone when
 * the machine has no IPv6. */
int kin__wh_listen(kin_webhook_server *s, char *err, size_t errlen) {
  if (!s->keys) {
    snprintf(err, errlen, "the webhook server needs a serving key pair to listen");
    return KIN_EINVAL;
  }
  if (!MHD_is_feature_supported(MHD_FEATURE_TLS) ||
      !MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK)) {
    snprintf(err, errlen, "the webhook server needs libmicrohttpd built with GnuTLS and its "
                          "certificate callback");
    return KIN_EINVAL;
  }
  kin__netaddr a;
  int rc = kin__netaddr_parse(s->bind_address, 0, "webhook bind address", &a, err, errlen);
  if (rc) return rc;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_TLS;
  uint16_t port = a.port;
  /* the ports table's mutex is held until the pair is in the table: a handshake on a
   * connection accepted at once waits for it instead of failing */
  kin_tls_ports_lock();
  struct MHD_Daemon *d = NULL;
  int busy = 0;
  if (a.any && MHD_is_feature_supported(MHD_FEATURE_IPv6)) {
    d = start(s, flags | MHD_USE_DUAL_STACK, port, NULL);
    busy = !d && errno == EADDRINUSE;
  }
  if (!d && !busy) d = start(s, flags | (a.v6 ? MHD_USE_IPv6 : 0), port, &a.ss);
  if (!d) {
    int e = errno;
    kin_tls_ports_unlock();
    snprintf(err, errlen, "webhook server: listen on %s: %s", s->bind_address,
             e ? strerror(e) : "cannot start the HTTPS server");
    return KIN_EBUSY;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  int p = di ? di->port : (int)port;
  rc = kin_tls_ports_add_locked(p, s->keys);
  kin_tls_ports_unlock();
  if (rc != 0) {
    MHD_stop_daemon(d);
    snprintf(err, errlen, "webhook server: more than %d HTTPS servers in one process",
             KIN_TLS_MAX_PORTS);
    return KIN_ENOMEM;
  }
  s->daemon = d;
  __atomic_store_n(&s->port, p, __ATOMIC_RELEASE);
  return 0;
}

/* Stops the daemon (its connection threads joined) and forgets its key
 * pair's port. */
void kin__wh_unlisten(kin_webhook_server *s) {
  if (!s->daemon) return;
  MHD_stop_daemon(s->daemon);
  s->daemon = NULL;
  kin_tls_ports_del(s->keys, s->port);
  __atomic_store_n(&s->port, 0, __ATOMIC_RELEASE);
}
