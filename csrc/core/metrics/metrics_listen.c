/* metrics_listen.c -- the listeners of the metrics server (see
 * metrics_server.h): bind addresses, one libmicrohttpd daemon and thread
 * per endpoint with its connection limits and idle timeout, HTTPS from a
 * kin_tls_keypair through the certificate callback (so a rotated pair
 * serves the next handshake), and libmicrohttpd's own messages turned into
 * log lines (running out of file descriptors named as such). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "clock.h"
#include "kin.h"
#include "log.h"
#include "metrics_server_int.h"

#define LOG_EVERY_NS (10ull * 1000000000ull)

/* The context of a daemon's log callback and certificate callback. */
typedef struct {
  kin_metrics_server *s;
  kin__ms_endpoint *ep;
} ctx;

/* See metrics_server.h: 0 with the soft limits before and after, or
 * KIN_EIO when getrlimit/setrlimit fail. */
int kin_metrics_raise_nofile(unsigned long *before, unsigned long *after) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return KIN_EIO;
  *before = (unsigned long)r.rlim_cur;
  if (r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) return KIN_EIO;
  }
  *after = (unsigned long)r.rlim_cur;
  return 0;
}

/* libmicrohttpd's messages: out of fds an error (at most every 10 s per
 * endpoint), the connection limits at debug, the rest at debug. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  kin__ms_endpoint *ep = cls;
  char line[400];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
  int fds = strstr(line, "resource limit") || strstr(line, "Too many open files") ||
            strstr(line, "EMFILE") || strstr(line, "ENFILE");
  int limit = strstr(line, "connection limit") || strstr(line, "rejected");
  if (!fds && !limit) {
    kin_log(KIN_LOG_DEBUG, ep->name, "libmicrohttpd: %s", line);
    return;
  }
  uint64_t now = kin_clock_now(kin_clock_real());
  uint64_t last = __atomic_load_n(&ep->log_ns, __ATOMIC_RELAXED);
  if (last && now - last < LOG_EVERY_NS) return;
  __atomic_store_n(&ep->log_ns, now, __ATOMIC_RELAXED);
  if (fds) {
    struct rlimit r = {0};
    getrlimit(RLIMIT_NOFILE, &r);
    kin_log(KIN_LOG_ERROR, ep->name,
            "out of file descriptors (EMFILE, RLIMIT_NOFILE %lu): the %s endpoint on port %d cannot "
            "accept connections (%s)",
            (unsigned long)r.rlim_cur, ep->name, ep->port, line);
  } else {
    kin_log(KIN_LOG_DEBUG, ep->name,
            "connection refused at the limit (%u in total per endpoint, per client address less): %s",
            ep->max_conns, line);
  }
}

/* The key pairs of the HTTPS endpoints by local port: the certificate
 * callback gets a GnuTLS session whose transport is the socket, so it
 * finds its endpoint's pair by the socket's port. keys_mu guards the
 * table and is held while a pair is read (taken before the pair's mu). */
#define MAX_TLS_PORTS 64
static pthread_mutex_t keys_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int port;
  kin_tls_keypair *kp;
} keys_by_port[MAX_TLS_PORTS];

/* Registers kp for port; returns 0 or KIN_ENOMEM (table full). */
static int keys_register(int port, kin_tls_keypair *kp) {
  int rc = KIN_ENOMEM;
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < MAX_TLS_PORTS; i++) {
    if (keys_by_port[i].kp) continue;
    keys_by_port[i].port = port;
    keys_by_port[i].kp = kp;
    rc = 0;
    break;
  }
  pthread_mutex_unlock(&keys_mu);
  return rc;
}

void kin__ms_keys_unregister(kin_tls_keypair *kp) {
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < MAX_TLS_PORTS; i++)
    if (keys_by_port[i].kp == kp) keys_by_port[i].kp = NULL;
  pthread_mutex_unlock(&keys_mu);
}

/* gnutls_certificate_retrieve_function2 for MHD_OPTION_HTTPS_CERT_CALLBACK:
 * the current credentials of the pair serving the session's local port.
 * Returns 0, or -1 (the handshake fails). */
static int on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                   const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                   gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey) {
  int fd = gnutls_transport_get_int(session);
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
  int port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
  int rc = -1;
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < MAX_TLS_PORTS; i++) {
    if (!keys_by_port[i].kp || keys_by_port[i].port != port) continue;
    rc = kin_tls_keypair_current(keys_by_port[i].kp, pcert, pcert_length, pkey) == 0 ? 0 : -1;
    break;
  }
  pthread_mutex_unlock(&keys_mu);
  return rc;
}

/* See metrics_server_int.h: 1 for a loopback Host naming port (or none). */
int kin__ms_host_ok(const char *host, int port) {
  if (!host) return 0;
  static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(names[i]);
    if (strncasecmp(host, names[i], n) != 0) continue;
    if (host[n] == 0) return 1;
    if (host[n] != ':') continue;
    char *end = NULL;
    long p = strtol(host + n + 1, &end, 10);
    return end && *end == 0 && end != host + n + 1 && p == port;
  }
  return 0;
}

/* Parses bind into ss; returns 0 or KIN_EINVAL with err. */
static int parse_bind(const char *bind, int admin, struct sockaddr_storage *ss, int *v6, int *loop,
                      char *err, size_t errlen) {
  char host[256];
  const char *colon = strrchr(bind, ':');
  char *end = NULL;
  long p = colon ? strtol(colon + 1, &end, 10) : -1;
  size_t hl = colon ? (size_t)(colon - bind) : 0;
  if (!colon || !end || *end || end == colon + 1 || p < 0 || p > 65535 || hl >= sizeof host) {
    snprintf(err, errlen, "bind address \"%s\": want host:port, :port or 0", bind);
    return KIN_EINVAL;
  }
  memcpy(host, bind, hl);
  host[hl] = 0;
  memset(ss, 0, sizeof *ss);
  int ok = 1;
  *v6 = 0;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    host[hl - 1] = 0;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)p);
    ok = inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1;
    *v6 = 1;
    *loop = ok && IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)p);
    if (hl == 0) a4->sin_addr.s_addr = htonl(admin ? INADDR_LOOPBACK : INADDR_ANY);
    else if (strcmp(host, "localhost") == 0) a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else ok = inet_pton(AF_INET, host, &a4->sin_addr) == 1;
    *loop = ok && (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
  }
  if (!ok) {
    snprintf(err, errlen, "bind address \"%s\": \"%s\" is not an IP address", bind, host);
    return KIN_EINVAL;
  }
  return 0;
}

/* Opens s->keys once (the pair every HTTPS endpoint serves). */
static int open_keys(kin_metrics_server *s, const kin_metrics_server_config *cfg, char *err,
                     size_t errlen) {
  if (s->keys) return 0;
  if (!MHD_is_feature_supported(MHD_FEATURE_TLS) ||
      !MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK)) {
    snprintf(err, errlen, "HTTPS endpoints need libmicrohttpd built with GnuTLS and its "
                          "certificate callback; this one has %s",
             MHD_is_feature_supported(MHD_FEATURE_TLS) ? "no certificate callback" : "no TLS");
    return KIN_EINVAL;
  }
  kin_tls_keypair_opts o = {.dir = cfg->cert_dir, .cert_name = cfg->cert_name,
                            .key_name = cfg->cert_key, .what = "metrics"};
  return kin_tls_keypair_open(&o, &s->keys, err, errlen);
}

int kin__ms_listen(kin_metrics_server *s, kin__ms_endpoint *ep, const char *bind,
                   const kin_metrics_server_config *cfg, MHD_AccessHandlerCallback handler,
                   char *err, size_t errlen) {
  struct sockaddr_storage ss;
  int v6 = 0, loop = 0;
  int admin = ep == &s->admin;
  int rc = parse_bind(bind, admin, &ss, &v6, &loop, err, errlen);
  if (rc) return rc;
  ep->loopback = loop;
  if (ep == &s->metrics && cfg->metrics_secure) ep->tls = ep->auth = 1;
  if (admin && !loop) ep->tls = ep->auth = 1;
  if (ep->auth && !s->auth) {
    snprintf(err, errlen, "the %s endpoint on %s authenticates its clients with TokenReview and "
                          "SubjectAccessReview: it needs the manager's REST client", ep->name, bind);
    return KIN_EINVAL;
  }
  if (ep->tls && (rc = open_keys(s, cfg, err, errlen)) != 0) return rc;
  ep->max_conns = cfg->max_conns ? cfg->max_conns : 256;
  unsigned per_ip = cfg->max_conns_per_ip ? cfg->max_conns_per_ip : 32;
  unsigned idle = cfg->idle_timeout_s ? cfg->idle_timeout_s : 30;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  if (ep->tls) flags |= MHD_USE_TLS;
  errno = 0;
  uint16_t port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                           : ((struct sockaddr_in *)&ss)->sin_port);
  if (ep->tls)
    ep->d = MHD_start_daemon(
        flags, port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, ep,
        MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_CONNECTION_TIMEOUT, idle,
        MHD_OPTION_CONNECTION_LIMIT, ep->max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_HTTPS_PRIORITIES,
        "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1:-VERS-SSL3.0", MHD_OPTION_HTTPS_CERT_CALLBACK, on_cert,
        MHD_OPTION_END);
  else
    ep->d = MHD_start_daemon(flags, port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER,
                             on_mhd_log, ep, MHD_OPTION_SOCK_ADDR, &ss,
                             MHD_OPTION_CONNECTION_TIMEOUT, idle, MHD_OPTION_CONNECTION_LIMIT,
                             ep->max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_END);
  if (!ep->d) {
    snprintf(err, errlen, "listen on %s: %s", bind,
             errno ? strerror(errno) : "cannot start the HTTP server");
    return KIN_EBUSY;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(ep->d, MHD_DAEMON_INFO_BIND_PORT);
  ep->port = di ? di->port : (int)port;
  if (ep->tls && keys_register(ep->port, s->keys) != 0) {
    MHD_stop_daemon(ep->d);
    ep->d = NULL;
    snprintf(err, errlen, "listen on %s: more than %d HTTPS endpoints in one process", bind,
             MAX_TLS_PORTS);
    return KIN_ENOMEM;
  }
  return 0;
}
