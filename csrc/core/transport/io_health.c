/* io_health.c -- the IO engine's connection health check (client-go's
 * HTTP/2 ReadIdleTimeout + PingTimeout, see io_engine.h): a periodic timer
 * on the IO thread probes HTTP/2 connections that received nothing for
 * read_idle_ms and shuts down those whose probe got no byte within
 * ping_timeout_ms, each connection with the smallest settings of the
 * requests on it (kin__io_health_fold). The per-socket state (io_sock, io_engine_int.h) is
 * touched by the IO thread only; the health settings and counters are
 * guarded by kin_io_engine.mu. */
#include "io_engine_int.h"

#include <curl/curl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <uv.h>

#include "log.h"

#define LOG "io_engine"

static io_sock *sock_find(kin_io_engine *e, curl_socket_t fd) {
  for (io_sock *s = e->socks; s; s = s->next)
    if (s->fd == fd) return s;
  return NULL;
}

/* Fills s's addresses once its socket is connected; returns whether known. */
static int sock_addrs(io_sock *s) {
  if (s->addr_known) return 1;
  struct sockaddr_storage a;
  socklen_t n = sizeof(a);
  char port[16];
  if (getsockname(s->fd, (struct sockaddr *)&a, &n) ||
      getnameinfo((struct sockaddr *)&a, n, s->lip, sizeof(s->lip), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV))
    return 0;
  s->lport = atol(port);
  n = sizeof(a);
  if (getpeername(s->fd, (struct sockaddr *)&a, &n) ||
      getnameinfo((struct sockaddr *)&a, n, s->rip, sizeof(s->rip), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV))
    return 0;
  s->rport = atol(port);
  s->addr_known = 1;
  return 1;
}

/* The socket of the connection transfer c uses, or CURL_SOCKET_BAD.
 * CURLINFO_ACTIVESOCKET answers only once a transfer is done (curl 7.88),
 * so the connection is found by its addresses, which curl reports for the
 * connection a transfer is attached to, new or reused. */
curl_socket_t kin__io_transfer_fd(kin_io_engine *e, CURL *c) {
  long lport = 0, rport = 0;
  char *lip = NULL, *rip = NULL;
  if (curl_easy_getinfo(c, CURLINFO_LOCAL_PORT, &lport) ||
      curl_easy_getinfo(c, CURLINFO_PRIMARY_PORT, &rport) ||
      curl_easy_getinfo(c, CURLINFO_LOCAL_IP, &lip) ||
      curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &rip) || lport <= 0 || rport <= 0 || !lip || !rip)
    return CURL_SOCKET_BAD;
  for (io_sock *s = e->socks; s; s = s->next)
    if (sock_addrs(s) && s->lport == lport && s->rport == rport && !strcmp(s->lip, lip) &&
        !strcmp(s->rip, rip))
      return s->fd;
  return CURL_SOCKET_BAD;
}

/* Writes "ip:port" into buf (n bytes). */
static void peer_name(char *buf, size_t n, const char *ip, long port) {
  snprintf(buf, n, "%s:%ld", ip, port);
}

void kin__io_note_version(kin_io_engine *e, CURL *c) {
  long v = 0, port = 0;
  char *ip = NULL, name[80];
  if (!c || curl_easy_getinfo(c, CURLINFO_HTTP_VERSION, &v) != CURLE_OK ||
      v != CURL_HTTP_VERSION_2_0 || curl_easy_getinfo(c, CURLINFO_PRIMARY_IP, &ip) != CURLE_OK ||
      curl_easy_getinfo(c, CURLINFO_PRIMARY_PORT, &port) != CURLE_OK || !ip || !ip[0] || port <= 0)
    return;
  peer_name(name, sizeof(name), ip, port);
  for (int i = 0; i < KIN__IO_H2_PEERS; i++)
    if (!strcmp(e->h2_peers[i], name)) return;
  snprintf(e->h2_peers[e->h2_next], sizeof(e->h2_peers[0]), "%s", name);
  e->h2_next = (e->h2_next + 1) % KIN__IO_H2_PEERS;
}

/* Whether s's peer answered over HTTP/2 before (see h2_peers). */
static int peer_h2(kin_io_engine *e, io_sock *s) {
  char name[80];
  if (!sock_addrs(s)) return 0;
  peer_name(name, sizeof(name), s->rip, s->rport);
  for (int i = 0; i < KIN__IO_H2_PEERS; i++)
    if (!strcmp(e->h2_peers[i], name)) return 1;
  return 0;
}

static void probe_done(void *ud, kin_io_response *res) {
  kin_io_handle *h = ud;
  kin_log(KIN_LOG_DEBUG, LOG, "health probe %s: %ld %s", h->url, res->code, res->error);
}

/* Drops s's probe (the probe itself runs to its own end). */
static void probe_drop(io_sock *s) {
  kin_io_handle_release(s->probe);
  s->probe = NULL;
  s->probe_here = 0;
}

/* Writes "host:port" of url into buf (n bytes); "?" when it cannot be read. */
static void url_host(const char *url, char *buf, size_t n) {
  char *host = NULL, *port = NULL;
  CURLU *u = curl_url();
  snprintf(buf, n, "?");
  if (u && !curl_url_set(u, CURLUPART_URL, url, 0) && !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
      !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
    snprintf(buf, n, "%s:%s", host, port);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(u);
}

/* A new copy of url with path /version and no query (the caller frees it
 * with curl_free), or NULL. */
static char *probe_url(const char *url) {
  char *out = NULL;
  CURLU *u = curl_url();
  if (!u) return NULL;
  if (curl_url_set(u, CURLUPART_URL, url, 0) || curl_url_set(u, CURLUPART_PATH, "/version", 0) ||
      curl_url_set(u, CURLUPART_QUERY, NULL, 0) || curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) ||
      curl_url_get(u, CURLUPART_URL, &out, 0))
    out = NULL;
  curl_url_cleanup(u);
  return out;
}

/* Sends a health probe for s modelled on m, a request on s: the same
 * origin, TLS settings, proxy and headers (so curl may multiplex it onto
 * s's connection). s holds a reference to the probe. Returns 0 or
 * KIN_ENOMEM (nothing sent). */
static int probe_start(kin_io_engine *e, io_sock *s, kin_io_handle *m, long timeout_ms) {
  char *url = probe_url(m->url);
  if (!url) return KIN_ENOMEM;
  kin_io_request req = {
      .url = url,
      .timeout_ms = timeout_ms,
      .proxy_url = m->proxy_url,
      .tls = {.ca_file = m->ca_file, .ca_data = m->ca.p, .ca_data_len = m->ca.len,
              .cert_file = m->cert_file, .cert_data = m->cert.p, .cert_data_len = m->cert.len,
              .key_file = m->key_file, .key_data = m->key.p, .key_data_len = m->key.len,
              .insecure = m->insecure, .server_name = m->server_name},
      .max_body = 1 << 20, /* a /version answer is tiny */
      .on_done = probe_done};
  kin_io_handle *p = kin__io_handle_new(e, &req);
  curl_free(url);
  if (!p) return KIN_ENOMEM;
  /* m's header list already starts with "Expect:". */
  curl_slist_free_all(p->headers);
  p->headers = NULL;
  for (struct curl_slist *l = m->headers; l; l = l->next) {
    struct curl_slist *n = curl_slist_append(p->headers, l->data);
    if (!n) {
      kin_io_handle_release(p);
      return KIN_ENOMEM;
    }
    p->headers = n;
  }
  p->ud = p;
  p->probe = 1;
  p->probe_fd = CURL_SOCKET_BAD;
  atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed); /* s's */
  s->probe = p;
  s->probe_at_ms = uv_now(&e->loop);
  s->probe_here = 0;
  url_host(m->url, s->host, sizeof(s->host));
  pthread_mutex_lock(&e->mu);
  e->hst.probes++;
  pthread_mutex_unlock(&e->mu);
  kin__io_start(e, p); /* on failure p is finished at once: inconclusive later */
  return 0;
}

/* Declares the connection on fd dead: shuts the socket down and lets curl
 * see it at once, so every stream on it fails now and no request submitted
 * later can be given this connection. */
static void conn_kill(kin_io_engine *e, curl_socket_t fd, long ping_ms) {
  io_sock *s = sock_find(e, fd);
  if (!s) return;
  uint64_t idle = uv_now(&e->loop) - s->last_rx_ms;
  int streams = s->streams;
  kin_log(KIN_LOG_WARN, LOG,
          "connection to %s received nothing for %llu ms and no answer to a health probe "
          "within %ld ms: closing it, %d request%s fail over to a new connection",
          s->host, (unsigned long long)idle, ping_ms, streams, streams == 1 ? "" : "s");
  pthread_mutex_lock(&e->mu);
  e->hst.dead_connections++;
  e->hst.failed_over += (uint64_t)streams;
  pthread_mutex_unlock(&e->mu);
  probe_drop(s);
  shutdown(fd, SHUT_RDWR);
  int running;
  curl_multi_socket_action(e->multi, fd, CURL_CSELECT_IN | CURL_CSELECT_ERR, &running);
  kin__io_check_multi_info(e);
}

void kin__io_health_fold(const kin_io_handle *h, long eng_idle_ms, long eng_ping_ms,
                         long *idle_ms, long *ping_ms) {
  long idle = h->read_idle_ms > 0 ? h->read_idle_ms : h->read_idle_ms < 0 ? -1 : eng_idle_ms;
  long ping = h->ping_timeout_ms > 0 ? h->ping_timeout_ms : eng_ping_ms;
  if (idle > 0 && (*idle_ms <= 0 || idle < *idle_ms)) *idle_ms = idle;
  if (ping > 0 && (*ping_ms <= 0 || ping < *ping_ms)) *ping_ms = ping;
}

uint64_t kin__io_health_interval(long idle_ms, long ping_ms) {
  long m = idle_ms > 0 && (ping_ms <= 0 || idle_ms < ping_ms) ? idle_ms : ping_ms;
  m /= 8;
  return (uint64_t)(m < 20 ? 20 : m > 250 ? 250 : m);
}

void kin__io_on_health(uv_timer_t *t) {
  kin_io_engine *e = t->data;
  if (!e->multi || e->multi_closing) return;
  pthread_mutex_lock(&e->mu);
  long eng_idle = e->read_idle_ms, eng_ping = e->ping_timeout_ms;
  pthread_mutex_unlock(&e->mu);
  uint64_t now = uv_now(&e->loop);

  /* Which requests are on which socket, the settings each socket gets from
   * them, and which sockets speak h2. The smallest settings anywhere (the
   * engine's included: they are those of the next request) set the
   * period. */
  long min_idle = eng_idle, min_ping = eng_ping;
  for (io_sock *s = e->socks; s; s = s->next) {
    s->streams = 0;
    s->model = NULL;
    s->idle_ms = -1;
    s->ping_ms = 0;
  }
  for (kin_io_handle *h = e->running; h; h = h->rnext) {
    if (h->probe) continue;
    kin__io_health_fold(h, eng_idle, eng_ping, &min_idle, &min_ping);
    kin__io_note_version(e, h->easy);
    io_sock *s = sock_find(e, kin__io_transfer_fd(e, h->easy));
    if (!s) continue;
    s->streams++;
    kin__io_health_fold(h, eng_idle, eng_ping, &s->idle_ms, &s->ping_ms);
    if (!s->model) s->model = h;
  }
  for (io_sock *s = e->socks; s; s = s->next) {
    s->h2 = s->streams && peer_h2(e, s);
    if (!s->streams) s->idle_ms = eng_idle, s->ping_ms = eng_ping;
  }

  curl_socket_t dead[16];
  long dead_ping[16];
  int ndead = 0;
  uint64_t inconclusive = 0;
  for (io_sock *s = e->socks; s; s = s->next) {
    if (s->probe) {
      kin_io_handle *p = s->probe;
      if (s->last_rx_ms >= s->probe_at_ms) { /* a byte came: alive */
        probe_drop(s);
        continue;
      }
      curl_socket_t pf = p->easy ? kin__io_transfer_fd(e, p->easy) : p->probe_fd;
      if (pf == s->fd) s->probe_here = 1;
      else if (pf != CURL_SOCKET_BAD) { /* on another connection: proves nothing */
        inconclusive++;
        probe_drop(s);
        continue;
      }
      if (now - s->probe_at_ms >= (uint64_t)s->ping_ms) {
        if (s->probe_here && ndead < (int)(sizeof(dead) / sizeof(dead[0]))) {
          dead_ping[ndead] = s->ping_ms;
          dead[ndead++] = s->fd;
        } else if (!s->probe_here) {
          inconclusive++;
          probe_drop(s);
        }
      }
      continue;
    }
    if (s->idle_ms < 0 || !s->streams || !s->h2 || !s->model) continue;
    if (now - s->last_rx_ms < (uint64_t)s->idle_ms) continue;
    kin_log(KIN_LOG_DEBUG, LOG, "no byte on a connection for %llu ms: sending a health probe",
            (unsigned long long)(now - s->last_rx_ms));
    /* Curl's timeout only ends a probe that our own check did not judge. */
    probe_start(e, s, s->model, s->ping_ms + 1000);
  }
  uint64_t every = kin__io_health_interval(min_idle, min_ping);
  pthread_mutex_lock(&e->mu);
  e->hst.probes_inconclusive += inconclusive;
  e->hst.read_idle_ms = min_idle > 0 ? min_idle : -1;
  e->hst.ping_timeout_ms = min_ping;
  e->hst.interval_ms = (long)every;
  pthread_mutex_unlock(&e->mu);
  for (int i = 0; i < ndead && e->multi; i++) conn_kill(e, dead[i], dead_ping[i]);
  if (!uv_is_closing((uv_handle_t *)t)) uv_timer_start(t, kin__io_on_health, every, 0);
}

/* ---- public API ---------------------------------------------------------- */

int kin_io_engine_set_health(kin_io_engine *e, long read_idle_ms, long ping_timeout_ms) {
  if (!e || ping_timeout_ms < 0) return KIN_EINVAL;
  pthread_mutex_lock(&e->mu);
  e->read_idle_ms = read_idle_ms ? read_idle_ms : KIN_IO_READ_IDLE_MS;
  e->ping_timeout_ms = ping_timeout_ms ? ping_timeout_ms : KIN_IO_PING_TIMEOUT_MS;
  pthread_mutex_unlock(&e->mu);
  return 0;
}

void kin_io_engine_health_stats(kin_io_engine *e, kin_io_health_stats *st) {
  pthread_mutex_lock(&e->mu);
  *st = e->hst;
  pthread_mutex_unlock(&e->mu);
}
