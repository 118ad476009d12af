/* request_log.c -- the sim's request log, for deriving RBAC rules from what
 * a client did (as audit2rbac reads kube-apiserver's audit log): while on,
 * every request that reaches the API server, refused or not, is kept as
 * the attributes kube-apiserver's authorizer is given
 * (authorizer.AttributesRecord: the user and the RequestInfo of
 * k8s.io/apiserver pkg/endpoints/request/requestinfo.go) and the status
 * answered. No bodies: an entry is one compact JSON object of about 150 to
 * 250 bytes, appended to one buffer (kin__sim_request_log in store_int.h,
 * guarded by its own mutex, a leaf), up to the limit of entries between
 * two takes; beyond it requests are only counted. The sim's own endpoints
 * (/kinformer-sim/) are not kept. Off until kin_sim_request_log_start. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "http_int.h"
#include "kin.h"

void kin_sim_request_log_start(kin_sim *sim) {
  pthread_mutex_lock(&sim->request_log.mu);
  sim->request_log.on = 1;
  pthread_mutex_unlock(&sim->request_log.mu);
}

char *kin_sim_request_log_take(kin_sim *sim) {
  kin__sim_request_log *log = &sim->request_log;
  pthread_mutex_lock(&log->mu);
  if (!log->on) {
    pthread_mutex_unlock(&log->mu);
    return NULL;
  }
  kin__buf b = log->buf;
  uint64_t dropped = log->dropped;
  memset(&log->buf, 0, sizeof(log->buf));
  log->n = 0;
  log->dropped = 0;
  pthread_mutex_unlock(&log->mu);
  if (!b.len) kin__buf_add(&b, "[", 1);
  if (dropped)
    kin__buf_printf(&b, "%s{\"truncated\":true,\"dropped\":%" PRIu64 "}", b.len > 1 ? "," : "",
                    dropped);
  kin__buf_add(&b, "]", 1);
  if (b.oom) {
    kin__buf_free(&b);
    return NULL;
  }
  return b.p;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when the bytes
 * there are not one (RFC 3629: no overlongs, surrogates or code points
 * past U+10FFFF). */
static size_t utf8_len(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return (s[1] & 0xc0) == 0x80 ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
  }
  return 0;
}

/* Appends ,"key":"value" (no comma when first) with value as Go's
 * encoding/json writes a string: '"', '\\' and control bytes escaped, a
 * byte that is not valid UTF-8 (a client's header or path may hold any)
 * as U+FFFD, so the log is always JSON. */
static void put_str(kin__buf *b, const char *key, const char *value, int first) {
  kin__buf_printf(b, "%s\"%s\":\"", first ? "" : ",", key);
  const unsigned char *s = (const unsigned char *)value;
  while (*s) {
    size_t n = utf8_len(s);
    if (!n) {
      kin__buf_add(b, "\xef\xbf\xbd", 3);
      s++;
    } else if (*s == '"' || *s == '\\') {
      char e[2] = {'\\', (char)*s};
      kin__buf_add(b, e, 2);
      s++;
    } else if (*s < 0x20) {
      kin__buf_printf(b, "\\u%04x", *s);
      s++;
    } else {
      kin__buf_add(b, (const char *)s, n);
      s += n;
    }
  }
  kin__buf_add(b, "\"", 1);
}

/* The same, left out when value is empty. */
static void put_opt(kin__buf *b, const char *key, const char *value) {
  if (value && *value) put_str(b, key, value, 0);
}

/* Appends req's entry, one JSON object, to e. A path the sim's
 * RequestInfo does not read (an /api/ path with more segments than
 * resource, name and subresource) is logged as a non-resource one, as
 * the sim answers it (404). */
static void build_entry(kin__sim_req *req, const char *url, kin__buf *e) {
  kin__sim_request_attrs a;
  kin__sim_request_attrs_of(req, url, &a);
  kin__buf_add(e, "{", 1);
  put_str(e, "verb", a.verb, 1);
  if (a.resource_path) {
    put_str(e, "apiGroup", a.ri.group, 0);
    put_str(e, "apiVersion", a.ri.version, 0);
    put_str(e, "resource", a.ri.resource, 0);
    put_opt(e, "subresource", a.ri.subresource);
    put_opt(e, "namespace", a.ns);
    put_opt(e, "name", a.name);
  } else {
    put_str(e, "nonResourceURL", url, 0);
  }
  if (strcmp(req->user, "system:anonymous")) put_opt(e, "user", req->user);
  const char *ua = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, "User-Agent");
  put_str(e, "userAgent", ua ? ua : "", 0);
  const char *dry = kin__sim_query(req, "dryRun");
  if (dry && !strcmp(dry, "All")) kin__buf_puts(e, ",\"dryRun\":true");
  kin__buf_printf(e, ",\"code\":%d}", req->code);
}

void kin__sim_request_log_add(kin__sim_req *req, const char *url) {
  if (!strncmp(url, "/kinformer-sim/", 15)) return;
  kin__sim_request_log *log = &req->sim->request_log;
  pthread_mutex_lock(&log->mu);
  int on = log->on, full = log->n >= log->limit;
  if (on && full) log->dropped++;
  pthread_mutex_unlock(&log->mu);
  if (!on || full) return;
  /* ",{...}": the comma is skipped for the first entry, so that one
   * kin__buf_add appends the whole entry or nothing. */
  kin__buf e = {0};
  kin__buf_add(&e, ",", 1);
  build_entry(req, url, &e);
  pthread_mutex_lock(&log->mu);
  if (!log->buf.len && kin__buf_add(&log->buf, "[", 1)) log->buf.oom = 0;
  if (e.oom || !log->buf.len || log->n >= log->limit ||
      kin__buf_add(&log->buf, log->n ? e.p : e.p + 1, log->n ? e.len : e.len - 1)) {
    log->dropped++;
    log->buf.oom = 0; /* what it holds is whole: the next entry may fit */
  } else {
    log->n++;
  }
  pthread_mutex_unlock(&log->mu);
  kin__buf_free(&e);
}
