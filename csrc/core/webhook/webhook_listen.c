/* webhook_listen.c -- the webhook server's HTTPS endpoint on
 * libmicrohttpd: the bind address, one daemon with a thread per
 * connection (at most max_connections, an idle timeout), TLS from the
 * server's kin_tls_keypair through the certificate callback (a rotated
 * pair serves the next handshake), the body gathered up to
 * max_request_bytes (a larger Content-Length is refused with 413 before
 * its body is read; a chunked body past the cap is dropped, not kept), and
 * each POST handed to kin__wh_handle. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kin.h"
#include "log.h"
#include "webhook_int.h"

#define IDLE_TIMEOUT_S 60
#define TLS_PRIORITIES "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1:-VERS-SSL3.0"

/* A connection's request under way: its body so far. */
typedef struct {
  kin__buf body;
  int too_big; /* the body passed the cap: the rest is dropped */
  int answered; /* a response was queued at the headers */
} conn_req;

/* The key pairs of the webhook servers by local port: the certificate
 * callback has no closure, only the session whose transport is the
 * socket. keys_mu guards the table and is held while a pair is read
 * (taken before the pair's mu). */
#define MAX_PORTS 64
static pthread_mutex_t keys_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int port;
  kin_tls_keypair *kp;
} keys_by_port[MAX_PORTS];

/* Under keys_mu: records kp for port. Returns 0 or KIN_ENOMEM (table
 * full). */
static int keys_add(int port, kin_tls_keypair *kp) {
  for (int i = 0; i < MAX_PORTS; i++) {
    if (keys_by_port[i].kp) continue;
    keys_by_port[i].port = port;
    keys_by_port[i].kp = kp;
    return 0;
  }
  return KIN_ENOMEM;
}

/* Forgets port's entry. */
static void keys_del(int port) {
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < MAX_PORTS; i++)
    if (keys_by_port[i].kp && keys_by_port[i].port == port) keys_by_port[i].kp = NULL;
  pthread_mutex_unlock(&keys_mu);
}

/* gnutls_certificate_retrieve_function2: the current pair of the server
 * on the session's local port. Returns 0, or -1 (the handshake fails). */
static int on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey) {
  (void)req_ca_dn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
  int fd = gnutls_transport_get_int(session);
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
  int port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
  int rc = -1;
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < MAX_PORTS; i++) {
    if (!keys_by_port[i].kp || keys_by_port[i].port != port) continue;
    rc = kin_tls_keypair_current(keys_by_port[i].kp, pcert, pcert_length, pkey) == 0 ? 0 : -1;
    break;
  }
  pthread_mutex_unlock(&keys_mu);
  return rc;
}

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

/* Parses bind into ss. Returns 0 or KIN_EINVAL with err. */
static int parse_bind(const char *bind, struct sockaddr_storage *ss, int *v6, int *any, char *err,
                      size_t errlen) {
  char host[256];
  const char *colon = strrchr(bind, ':');
  char *end = NULL;
  long p = colon ? strtol(colon + 1, &end, 10) : -1;
  size_t hl = colon ? (size_t)(colon - bind) : 0;
  if (!colon || !end || *end || end == colon + 1 || p < 0 || p > 65535 || hl >= sizeof host) {
    snprintf(err, errlen, "webhook bind address \"%s\": want host:port or :port", bind);
    return KIN_EINVAL;
  }
  memcpy(host, bind, hl);
  host[hl] = 0;
  memset(ss, 0, sizeof *ss);
  int ok = 1;
  *v6 = 0;
  *any = hl == 0;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    host[hl - 1] = 0;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)p);
    ok = inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1;
    *v6 = 1;
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)p);
    if (hl == 0) a4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0) a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else ok = inet_pton(AF_INET, host, &a4->sin_addr) == 1;
  }
  if (!ok) {
    snprintf(err, errlen, "webhook bind address \"%s\": \"%s\" is not an IP address", bind, host);
    return KIN_EINVAL;
  }
  return 0;
}

/* 0 when bind parses as an address to listen on, else KIN_EINVAL with
 * err. */
int kin__wh_check_bind(const char *bind, char *err, size_t errlen) {
  struct sockaddr_storage ss;
  int v6, any;
  return parse_bind(bind, &ss, &v6, &any, err, errlen);
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
        TLS_PRIORITIES, MHD_OPTION_HTTPS_CERT_CALLBACK, on_cert, MHD_OPTION_END);
  return MHD_start_daemon(
      flags, port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
      MHD_OPTION_SOCK_ADDR, ss, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
      MHD_OPTION_CONNECTION_LIMIT, s->max_connections, MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
      MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES, MHD_OPTION_HTTPS_CERT_CALLBACK, on_cert,
      MHD_OPTION_END);
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
  struct sockaddr_storage ss;
  int v6 = 0, any = 0;
  int rc = parse_bind(s->bind_address, &ss, &v6, &any, err, errlen);
  if (rc) return rc;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_TLS;
  uint16_t port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                           : ((struct sockaddr_in *)&ss)->sin_port);
  /* keys_mu is held until the pair is in the table: a handshake on a
   * connection accepted at once waits for it instead of failing */
  pthread_mutex_lock(&keys_mu);
  struct MHD_Daemon *d = NULL;
  int busy = 0;
  if (any && MHD_is_feature_supported(MHD_FEATURE_IPv6)) {
    d = start(s, flags | MHD_USE_DUAL_STACK, port, NULL);
    busy = !d && errno == EADDRINUSE;
  }
  if (!d && !busy) d = start(s, flags | (v6 ? MHD_USE_IPv6 : 0), port, &ss);
  if (!d) {
    int e = errno;
    pthread_mutex_unlock(&keys_mu);
    snprintf(err, errlen, "webhook server: listen on %s: %s", s->bind_address,
             e ? strerror(e) : "cannot start the HTTPS server");
    return KIN_EBUSY;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  int p = di ? di->port : (int)port;
  rc = keys_add(p, s->keys);
  pthread_mutex_unlock(&keys_mu);
  if (rc != 0) {
    MHD_stop_daemon(d);
    snprintf(err, errlen, "webhook server: more than %d HTTPS servers in one process", MAX_PORTS);
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
  keys_del(s->port);
  __atomic_store_n(&s->port, 0, __ATOMIC_RELEASE);
}
