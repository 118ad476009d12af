/* metrics_server.c -- /metrics, /healthz and /readyz over libmicrohttpd
 * (see metrics_server.h): the checks and the answers; the listeners are
 * metrics_listen.c's. Each enabled endpoint is one MHD daemon with its
 * own polling thread; requests are answered from the registry's render and
 * from the checks' stored results, so nothing here runs user code (the
 * reviews of a secure endpoint block its thread, never the IO thread). */
#include "metrics_server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "buf.h"
#include "clock.h"
#include "kin.h"
#include "metrics_server_int.h"
#include "tls_serve.h"

typedef kin__ms_check check;

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

/* The endpoint of the daemon conn came in on. */
static kin__ms_endpoint *endpoint_of(kin_metrics_server *s, struct MHD_Connection *conn) {
  struct MHD_Daemon *d = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON)->daemon;
  return d == s->metrics.d ? &s->metrics : d == s->health.d ? &s->health : &s->admin;
}

/* The guards every endpoint applies before answering: method, body, Host
 * on a loopback admin bind, authn/authz. Returns 0 to go on, or the
 * status of an answer queued (*ret). */
static int guard(kin_metrics_server *s, kin__ms_endpoint *ep, struct MHD_Connection *conn,
                 const char *url, const char *method, enum MHD_Result *ret) {
  kin__buf b = {0};
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    kin__buf_puts(&b, "method not allowed\n");
    *ret = reply_text(conn, 405, &b);
    return 405;
  }
  const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
  if ((cl && strcmp(cl, "0") != 0) ||
      MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding")) {
    kin__buf_puts(&b, "request body not accepted\n");
    *ret = reply_text(conn, 413, &b);
    return 413;
  }
  if (ep == &s->admin && ep->loopback &&
      !kin__ms_host_ok(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host"), ep->port)) {
    kin__buf_puts(&b, "forbidden: the admin endpoint answers only a Host of localhost, "
                      "127.0.0.1 or [::1] (DNS rebinding)\n");
    *ret = reply_text(conn, 403, &b);
    return 403;
  }
  if (ep->auth) {
    char msg[300];
    int status = kin__authfilter_check(
        s->auth, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"), method,
        url, msg, sizeof msg);
    if (status != 200) {
      kin__buf_puts(&b, msg);
      *ret = reply_text(conn, (unsigned)status, &b);
      return status;
    }
  }
  return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
  kin_metrics_server *s = cls;
  kin__ms_endpoint *ep = endpoint_of(s, conn);
  enum MHD_Result ret;
  if (*upload_data_size) return MHD_NO; /* a body: refused below, never read */
  if (guard(s, ep, conn, url, method, &ret) != 0) return ret;
  kin__buf b = {0};
  if (ep == &s->metrics && strcmp(url, "/metrics") == 0) {
    char *text = NULL;
    size_t len = 0;
    if (kin_metrics_render(s->reg, &text, &len) != 0) return MHD_NO;
    return reply(conn, 200, KIN_METRICS_CONTENT_TYPE, text, len);
  }
  if (ep == &s->admin) {
    const char *key = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "key");
    const char *ctl = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "controller");
    char *body = NULL;
    size_t len = 0;
    int status = kin_admin_render(url, key, ctl, &body, &len);
    if (!body) return MHD_NO;
    return reply(conn, (unsigned)status, "application/json", body, len);
  }
  if (ep == &s->health) {
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
  s->metrics.name = "metrics";
  s->health.name = "health";
  s->admin.name = "admin";
  if (!rc && cfg && cfg->client && !(s->auth = kin__authfilter_new(cfg->client, "metrics")))
    rc = KIN_ENOMEM;
  if (!rc && cfg && !disabled(cfg->health_bind))
    rc = kin__ms_listen(s, &s->health, cfg->health_bind, cfg, on_request, e, sizeof e);
  if (!rc && cfg && !disabled(cfg->metrics_bind))
    rc = kin__ms_listen(s, &s->metrics, cfg->metrics_bind, cfg, on_request, e, sizeof e);
  if (!rc && cfg && !disabled(cfg->admin_bind))
    rc = kin__ms_listen(s, &s->admin, cfg->admin_bind, cfg, on_request, e, sizeof e);
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
  if (s->metrics.d) MHD_stop_daemon(s->metrics.d);
  if (s->health.d) MHD_stop_daemon(s->health.d);
  if (s->admin.d) MHD_stop_daemon(s->admin.d);
  if (s->keys) {
    kin_tls_ports_del(s->keys, 0);
    kin_tls_keypair_free(s->keys);
  }
  kin__authfilter_free(s->auth);
  for (size_t i = 0; i < s->nchecks; i++) {
    free(s->checks[i].name);
    free(s->checks[i].msg);
  }
  free(s->checks);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

int kin_metrics_server_port(const kin_metrics_server *s, int which) {
  return which == KIN_SERVER_ADMIN ? s->admin.port : which ? s->health.port : s->metrics.port;
}

uint64_t kin_metrics_server_cert_generation(kin_metrics_server *s) {
  return s->keys ? kin_tls_keypair_generation(s->keys) : 0;
}
