/* metrics_listen.c -- the listeners of the metrics server (see
 * metrics_server.h): bind addresses, one libmicrohttpd daemon and thread
 * per endpoint with its connection limits and idle timeout, HTTPS from a
 * kin_tls_keypair through the certificate callback (so a rotated pair
 * serves the next handshake), and libmicrohttpd's own messages turned into
 * log lines (running out of file descriptors named as such). */
#include <errno.h>
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
#include "netaddr.h"
#include "tls_serve.h"

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
  kin__netaddr a;
  int admin = ep == &s->admin;
  int rc = kin__netaddr_parse(bind, KIN__NETADDR_SAY_ZERO | (admin ? KIN__NETADDR_ADMIN : 0),
                              "bind address", &a, err, errlen);
  if (rc) return rc;
  int loop = a.loopback;
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
  if (a.v6) flags |= MHD_USE_IPv6;
  if (ep->tls) flags |= MHD_USE_TLS;
  errno = 0;
  uint16_t port = a.port;
  if (ep->tls)
    ep->d = MHD_start_daemon(
        flags, port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, ep,
        MHD_OPTION_SOCK_ADDR, &a.ss, MHD_OPTION_CONNECTION_TIMEOUT, idle,
        MHD_OPTION_CONNECTION_LIMIT, ep->max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_HTTPS_PRIORITIES,
        "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1:-VERS-SSL3.0", MHD_OPTION_HTTPS_CERT_CALLBACK,
        kin_tls_ports_on_cert, MHD_OPTION_END);
  else
    ep->d = MHD_start_daemon(flags, port, NULL, NULL, handler, s, MHD_OPTION_EXTERNAL_LOGGER,
                             on_mhd_log, ep, MHD_OPTION_SOCK_ADDR, &a.ss,
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
  if (ep->tls && kin_tls_ports_add(ep->port, s->keys) != 0) {
    MHD_stop_daemon(ep->d);
    ep->d = NULL;
    snprintf(err, errlen, "listen on %s: more than %d HTTPS endpoints in one process", bind,
             KIN_TLS_MAX_PORTS);
    return KIN_ENOMEM;
  }
  return 0;
}
