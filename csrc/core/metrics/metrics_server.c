/* metrics_server.c -- /metrics, /healthz and /readyz over libmicrohttpd
 * (see metrics_server.h). Each enabled endpoint is one MHD daemon with its
 * own polling thread; requests are answered from the registry's render and
 * from the checks' stored results, so nothing here runs user code. */
#include "metrics_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "buf.h"
#include "clock.h"
#include "kin.h"

typedef struct {
  kin_probe probe;
  char *name;
  int ok;
  char *msg;
  uint64_t set_ns, ttl_ns;
} check;

struct kin_metrics_server {
  kin_metrics_registry *reg;
  struct MHD_Daemon *metrics, *health, *admin;
  int metrics_port, health_port, admin_port;
  pthread_mutex_t mu; /* guards checks */
  check *checks;
  size_t nchecks, capchecks;
};

/* ---- checks --------------------------------------------------------------- */

static check *find_check(kin_metrics_server *s, kin_probe p, const char *name) {
  for (size_t i = 0; i < s->nchecks; i++)
    if (s->checks[i].probe == p && strcmp(s->checks[i].name, name) == 0) return &s->checks[i];
  return NULL;
}

int kin_metrics_server_set_check(kin_metrics_server *s, kin_probe probe, const char *name, int ok,
                                 const char *msg, uint64_t ttl_ns) {
  if (!s || !name || !*name || strchr(name, '/') || strcmp(name, "ping") == 0) return KIN_EINVAL;
  char *m = msg ? strdup(msg) : NULL;
  if (msg && !m) return KIN_ENOMEM;
  int rc = 0;
  pthread_mutex_lock(&s->mu);
  check *c = find_check(s, probe, name);
  if (!c) {
    if (s->nchecks == s->capchecks) {
      size_t cap = s->capchecks ? s->capchecks * 2 : 8;
      check *n = realloc(s->checks, cap * sizeof *n);
      if (n) {
        s->checks = n;
        s->capchecks = cap;
      }
    }
    if (s->nchecks < s->capchecks && (name = strdup(name))) {
      c = &s->checks[s->nchecks++];
      memset(c, 0, sizeof *c);
      c->probe = probe;
      c->name = (char *)name;
    } else {
      rc = KIN_ENOMEM;
    }
  }
  if (c) {
    free(c->msg);
    c->msg = m;
    m = NULL;
    c->ok = ok;
    c->ttl_ns = ttl_ns;
    c->set_ns = kin_clock_now(kin_clock_real());
  }
  pthread_mutex_unlock(&s->mu);
  free(m);
  return rc;
}

void kin_metrics_server_remove_check(kin_metrics_server *s, kin_probe probe, const char *name) {
  if (!s || !name) return;
  pthread_mutex_lock(&s->mu);
  check *c = find_check(s, probe, name);
  if (c) {
    free(c->name);
    free(c->msg);
    size_t i = (size_t)(c - s->checks);
    memmove(c, c + 1, (s->nchecks - i - 1) * sizeof *c);
    s->nchecks--;
  }
  pthread_mutex_unlock(&s->mu);
}

/* ---- HTTP ------------------------------------------------------------------ */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
                             char *body, size_t len) {
  struct MHD_Response *r =
      body ? MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)
           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  enum MHD_Result ret = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned status, kin__buf *b) {
  if (b->oom) {
    kin__buf_free(b);
    return MHD_NO;
  }
  size_t len = b->len;
  return reply(conn, status, "text/plain; charset=utf-8", b->p ? b->p : strdup(""), len);
}

typedef struct {
  const char *names[16];
  int n;
  int verbose; /* ?verbose, with or without a value */
} excludes;

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                              const char *value) {
  excludes *x = cls;
  if (strcmp(key, "exclude") == 0 && value && x->n < 16) x->names[x->n++] = value;
  if (strcmp(key, "verbose") == 0) x->verbose = 1;
  return MHD_YES;
}

/* One check's state as a line: returns 1 when it passes. Under s->mu. */
static int check_passes(const check *c, uint64_t now, char *why, size_t n) {
  if (c->ttl_ns && now - c->set_ns > c->ttl_ns) {
    snprintf(why, n, "no result for %.0fs", (double)(now - c->set_ns) / 1e9);
    return 0;
  }
  snprintf(why, n, "%s", c->msg && *c->msg ? c->msg : "check failed");
  return c->ok;
}

static enum MHD_Result serve_probe(kin_metrics_server *s, struct MHD_Connection *conn,
                                   kin_probe p, const char *sub) {
  const char *pname = p == KIN_PROBE_HEALTHZ ? "healthz" : "readyz";
  kin__buf b = {0};
  char why[512];
  uint64_t now = kin_clock_now(kin_clock_real());
  if (sub) { /* /healthz/<name> */
    if (p == KIN_PROBE_HEALTHZ && strcmp(sub, "ping") == 0) {
      kin__buf_puts(&b, "ok");
      return reply_text(conn, 200, &b);
    }
    pthread_mutex_lock(&s->mu);
    check *c = find_check(s, p, sub);
    int ok = c && check_passes(c, now, why, sizeof why);
    pthread_mutex_unlock(&s->mu);
    if (!c) {
      kin__buf_printf(&b, "404 page not found: no %s check \"%s\"\n", pname, sub);
      return reply_text(conn, 404, &b);
    }
    if (ok) kin__buf_puts(&b, "ok");
    else kin__buf_printf(&b, "internal server error: %s\n", why);
    return reply_text(conn, ok ? 200 : 500, &b);
  }
  excludes x = {.n = 0};
  MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, on_arg, &x);
  int verbose = x.verbose;
  int failed = 0;
  kin__buf lines = {0};
  int ping_excluded = 0;
  for (int i = 0; i < x.n; i++) ping_excluded |= strcmp(x.names[i], "ping") == 0;
  if (p == KIN_PROBE_HEALTHZ && !ping_excluded) kin__buf_puts(&lines, "[+]ping ok\n");
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nchecks; i++) {
    const check *c = &s->checks[i];
    if (c->probe != p) continue;
    int skip = 0;
    for (int k = 0; k < x.n; k++) skip |= strcmp(x.names[k], c->name) == 0;
    if (skip) {
      kin__buf_printf(&lines, "[+]%s excluded: ok\n", c->name);
      continue;
    }
    if (check_passes(c, now, why, sizeof why)) {
      kin__buf_printf(&lines, "[+]%s ok\n", c->name);
    } else {
      failed = 1;
      kin__buf_printf(&lines, "[-]%s failed: %s\n", c->name, why);
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (!failed && !verbose) {
    kin__buf_free(&lines);
    kin__buf_puts(&b, "ok");
    return reply_text(conn, 200, &b);
  }
  kin__buf_printf(&lines, "%s check %s\n", pname, failed ? "failed" : "passed");
  return reply_text(conn, failed ? 500 : 200, &lines);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
  kin_metrics_server *s = cls;
  kin__buf b = {0};
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    kin__buf_puts(&b, "method not allowed\n");
    return reply_text(conn, 405, &b);
  }
  struct MHD_Daemon *d =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON)->daemon;
  if (d == s->metrics && strcmp(url, "/metrics") == 0) {
    char *text = NULL;
    size_t len = 0;
    if (kin_metrics_render(s->reg, &text, &len) != 0) return MHD_NO;
    return reply(conn, 200, KIN_METRICS_CONTENT_TYPE, text, len);
  }
  if (d == s->admin) {
    const char *key = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "key");
    const char *ctl = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "controller");
    char *body = NULL;
    size_t len = 0;
    int status = kin_admin_render(url, key, ctl, &body, &len);
    if (!body) return MHD_NO;
    return reply(conn, (unsigned)status, "application/json", body, len);
  }
  if (d == s->health) {
    for (int p = 0; p < 2; p++) {
      const char *base = p == KIN_PROBE_HEALTHZ ? "/healthz" : "/readyz";
      size_t n = strlen(base);
      if (strncmp(url, base, n) != 0) continue;
      if (url[n] == 0 || (url[n] == '/' && url[n + 1] == 0))
        return serve_probe(s, conn, (kin_probe)p, NULL);
      if (url[n] == '/') return serve_probe(s, conn, (kin_probe)p, url + n + 1);
    }
  }
  kin__buf_puts(&b, "404 page not found\n");
  return reply_text(conn, 404, &b);
}

/* ---- start / stop ------------------------------------------------------------ */

static int disabled(const char *bind) { return !bind || !*bind || strcmp(bind, "0") == 0; }

/* Starts a daemon on bind; returns 0 with *d and *port, or an error (err). */
static int listen_on(kin_metrics_server *s, const char *bind, struct MHD_Daemon **d, int *port,
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
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  int ok = 1;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    host[hl - 1] = 0;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)p);
    ok = inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1;
    flags |= MHD_USE_IPv6;
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)p);
    if (hl == 0) a4->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (strcmp(host, "localhost") == 0) a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else ok = inet_pton(AF_INET, host, &a4->sin_addr) == 1;
  }
  if (!ok) {
    snprintf(err, errlen, "bind address \"%s\": \"%s\" is not an IP address", bind, host);
    return KIN_EINVAL;
  }
  errno = 0;
  *d = MHD_start_daemon(flags, (uint16_t)p, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, &ss,
                        MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!*d) {
    snprintf(err, errlen, "listen on %s: %s", bind,
             errno ? strerror(errno) : "cannot start the HTTP server");
    return KIN_EBUSY;
  }
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(*d, MHD_DAEMON_INFO_BIND_PORT);
  *port = di ? di->port : (int)p;
  return 0;
}

int kin_metrics_server_start(const kin_metrics_server_config *cfg, kin_metrics_server **out,
                             char *err, size_t errlen) {
  char e[300] = "";
  *out = NULL;
  if (err && errlen) err[0] = 0;
  kin_metrics_server *s = calloc(1, sizeof *s);
  if (!s) return KIN_ENOMEM;
  pthread_mutex_init(&s->mu, NULL);
  s->reg = cfg && cfg->registry ? cfg->registry : kin_metrics_default();
  int rc = s->reg ? 0 : KIN_ENOMEM;
  if (!rc && cfg && !disabled(cfg->metrics_bind))
    rc = listen_on(s, cfg->metrics_bind, &s->metrics, &s->metrics_port, e, sizeof e);
  if (!rc && cfg && !disabled(cfg->health_bind))
    rc = listen_on(s, cfg->health_bind, &s->health, &s->health_port, e, sizeof e);
  if (!rc && cfg && !disabled(cfg->admin_bind))
    rc = listen_on(s, cfg->admin_bind, &s->admin, &s->admin_port, e, sizeof e);
  if (rc) {
    if (err && errlen) snprintf(err, errlen, "%s", e[0] ? e : kin_strerror(rc));
    kin_metrics_server_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void kin_metrics_server_free(kin_metrics_server *s) {
  if (!s) return;
  if (s->metrics) MHD_stop_daemon(s->metrics);
  if (s->health) MHD_stop_daemon(s->health);
  if (s->admin) MHD_stop_daemon(s->admin);
  for (size_t i = 0; i < s->nchecks; i++) {
    free(s->checks[i].name);
    free(s->checks[i].msg);
  }
  free(s->checks);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int kin_metrics_server_port(const kin_metrics_server *s, int health) {
  return health == KIN_SERVER_ADMIN ? s->admin_port : health ? s->health_port : s->metrics_port;
}
