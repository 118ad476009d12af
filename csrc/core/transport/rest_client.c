/* rest_client.c -- client-go's rest.Config transport and rest.Request
 * retry loop: TLS and proxy from the kubeconfig, bearer token (static,
 * rotating file, or exec plugin), client certificates, the flowcontrol
 * rate limiter, retries of 429/5xx and the Status of failed answers. See
 * rest_client.h for the contract. */
#include "rest_client_int.h"
#include "rest_ctx.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "json_tok.h"
#include "kin.h"
#include "log.h"
#include "pb_json.h"
#include "util.h"

#define DEFAULT_QPS 50.0
#define DEFAULT_BURST 100
#define DEFAULT_RETRIES 5
#define DEFAULT_TIMEOUT_MS 60000L
/* Backoff of a retry without Retry-After: 250 ms doubling to 8 s, plus up
 * to 20% jitter so clients that failed together do not return together. */
#define BACKOFF_BASE_NS (250 * KIN_NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (8 * KIN_NSEC_PER_SEC)
#define BACKOFF_JITTER 0.2

/* ---- construction -------------------------------------------------------- */

/* A NUL-terminated copy of n bytes of p (NULL stays NULL) in *out; returns
 * 0 or KIN_ENOMEM. */
static int dup_blob(char **out, const void *p, size_t n) {
  *out = NULL;
  if (!p) return 0;
  if (!(*out = malloc(n + 1))) return KIN_ENOMEM;
  memcpy(*out, p, n);
  (*out)[n] = 0;
  return 0;
}

/* Frees a secret of n bytes after zeroing it. */
static void wipe_blob(char *p, size_t n) {
  if (!p) return;
  volatile char *v = p;
  for (size_t i = 0; i < n; i++) v[i] = 0;
  free(p);
}

/* 0 when path (what the config calls it: "certificate-authority", ...)
 * can be read; else err names origin, field and file with the system's
 * reason, and the negated errno is returned, so a missing file is found
 * when the client is created rather than at its first request. */
static int check_file(const char *origin, const char *what, const char *path, char *err,
                      size_t errlen) {
  if (!path || !*path) return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int e = fd < 0 ? errno : 0;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) e = EISDIR;
  if (fd >= 0) close(fd);
  if (!e) return 0;
  kin__errf(err, errlen, "%s: %s %s: %s", origin ? origin : "rest config", what, path,
            strerror(e));
  return -e;
}

int kin_client_new(const kin_rest_config *cfg, kin_io_engine *io, const kin_client_opts *opts,
                   kin_client **out, char *err, size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  if (!cfg || !cfg->host || !*cfg->host) {
    kin__errf(err, errlen, "rest config: host is not set");
    return KIN_EINVAL;
  }
  if (strncmp(cfg->host, "http://", 7) && strncmp(cfg->host, "https://", 8)) {
    kin__errf(err, errlen, "rest config: host %s: scheme must be http or https", cfg->host);
    return KIN_EINVAL;
  }
  if (!(cfg->cert_file || cfg->cert_data) != !(cfg->key_file || cfg->key_data)) {
    kin__errf(err, errlen,
              "rest config: client-certificate and client-key must be given together (%s is "
              "missing)",
              cfg->cert_file || cfg->cert_data ? "client-key" : "client-certificate");
    return KIN_EINVAL;
  }
  if (cfg->exec && (!cfg->exec->command || !*cfg->exec->command)) {
    kin__errf(err, errlen, "rest config: exec: command is not set");
    return KIN_EINVAL;
  }
  int frc;
  if ((frc = check_file(cfg->cluster_origin, "certificate-authority", cfg->ca_data ? NULL : cfg->ca_file,
                        err, errlen)) ||
      (frc = check_file(cfg->user_origin, "client-certificate",
                        cfg->cert_data ? NULL : cfg->cert_file, err, errlen)) ||
      (frc = check_file(cfg->user_origin, "client-key", cfg->key_data ? NULL : cfg->key_file,
                        err, errlen)) ||
      (frc = check_file(cfg->user_origin, "token file", cfg->bearer_token_file, err, errlen)))
    return frc;
  kin_client_opts o = opts ? *opts : (kin_client_opts){0};
  kin_client *c = calloc(1, sizeof *c);
  if (!c) return KIN_ENOMEM;
  pthread_mutex_init(&c->mu, NULL);
  pthread_mutex_init(&c->wait_mu, NULL);
  kin__rest_metrics_init(c);
  kin__hmap_init(&c->gvs);
  kin__hmap_init(&c->strs);
  c->clock = o.clock ? o.clock : kin_clock_real();
  c->max_retries = o.max_retries == 0 ? DEFAULT_RETRIES : o.max_retries < 0 ? 0 : o.max_retries;
  c->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : DEFAULT_TIMEOUT_MS;
  c->max_body = o.max_response_bytes == 0  ? (uint64_t)KIN_MAX_RESPONSE_BYTES
                : o.max_response_bytes < 0 ? 0
                                           : (uint64_t)o.max_response_bytes;
  c->gzip = !o.disable_compression && !cfg->disable_compression;
  c->plain_http = !strncmp(cfg->host, "http://", 7);
  c->creds_over_http = cfg->credentials_over_http != 0;
  atomic_init(&c->http_noted, 0);
  int rc = KIN_ENOMEM;
  int cond_ok = kin_cond_init(&c->wait_cond) == 0;
  if (!cond_ok || kin_clock_subscribe(c->clock, &c->wait_cond, &c->wait_mu) != 0) {
    if (cond_ok) pthread_cond_destroy(&c->wait_cond);
    pthread_mutex_destroy(&c->wait_mu);
    pthread_mutex_destroy(&c->mu);
    kin__rest_metrics_destroy(c);
    free(c);
    return KIN_ENOMEM;
  }

  size_t hl = strlen(cfg->host);
  while (hl > 0 && cfg->host[hl - 1] == '/') hl--;
  if (dup_blob(&c->host, cfg->host, hl)) goto fail;
  if (!(c->ns = strdup(cfg->namespace && *cfg->namespace ? cfg->namespace : "default"))) goto fail;
  const char *ua = o.user_agent ? o.user_agent : "kinformer/" KIN_VERSION;
  size_t ual = strlen(ua) + sizeof "User-Agent: ";
  if (!(c->user_agent = malloc(ual))) goto fail;
  snprintf(c->user_agent, ual, "User-Agent: %s", ua);
  if ((cfg->proxy_url && !(c->proxy_url = strdup(cfg->proxy_url))) ||
      (cfg->ca_file && !(c->ca_file = strdup(cfg->ca_file))) ||
      (cfg->cert_file && !(c->cert_file = strdup(cfg->cert_file))) ||
      (cfg->key_file && !(c->key_file = strdup(cfg->key_file))) ||
      (cfg->tls_server_name && !(c->server_name = strdup(cfg->tls_server_name))) ||
      (cfg->bearer_token && !(c->bearer_token = strdup(cfg->bearer_token))) ||
      dup_blob(&c->ca_data, cfg->ca_data, cfg->ca_data_len) ||
      dup_blob(&c->cert_data, cfg->cert_data, cfg->cert_data_len) ||
      dup_blob(&c->key_data, cfg->key_data, cfg->key_data_len))
    goto fail;
  c->ca_from_kubeconfig = cfg->ca_data && cfg->cluster_origin &&
                          !strncmp(cfg->cluster_origin, "kubeconfig ", 11);
  c->tls = (kin_io_tls){.ca_file = c->ca_file,
                        .ca_data = c->ca_data,
                        .ca_data_len = c->ca_data ? cfg->ca_data_len : 0,
                        .cert_file = c->cert_file,
                        .cert_data = c->cert_data,
                        .cert_data_len = c->cert_data ? cfg->cert_data_len : 0,
                        .key_file = c->key_file,
                        .key_data = c->key_data,
                        .key_data_len = c->key_data ? cfg->key_data_len : 0,
                        .insecure = cfg->insecure,
                        .server_name = c->server_name};
  if (cfg->bearer_token_file && *cfg->bearer_token_file &&
      !(c->token_file = kin_token_file_new(cfg->bearer_token_file)))
    goto fail;
  if (cfg->exec && (rc = kin_exec_provider_new(cfg->exec, cfg, c->clock, &c->exec)) != 0) {
    kin__errf(err, errlen, "rest config: exec plugin %s: %s", cfg->exec->command,
              kin_strerror(rc));
    goto fail;
  }
  rc = KIN_ENOMEM;
  double qps = o.qps == 0 ? DEFAULT_QPS : o.qps;
  int burst = o.qps == 0 && o.burst == 0 ? DEFAULT_BURST : o.burst;
  if (qps > 0) {
    if (kin__token_bucket_init(&c->rl, qps, burst, c->clock)) goto fail;
    c->limited = 1;
  }
  if (io) {
    c->io = io;
  } else {
    if ((rc = kin_io_engine_new(&c->io)) != 0) {
      kin__errf(err, errlen, "rest client: cannot start the IO engine: %s", kin_strerror(rc));
      goto fail;
    }
    c->own_io = 1;
  }
  *out = c;
  return 0;
fail:
  if (rc == KIN_ENOMEM && err && errlen && !err[0]) kin__errf(err, errlen, "rest client: out of memory");
  kin_client_free(c);
  return rc;
}

void kin_client_free(kin_client *c) {
  if (!c) return;
  if (c->own_io) kin_io_engine_free(c->io);
  if (c->limited) kin__token_bucket_destroy(&c->rl);
  kin_exec_provider_free(c->exec);
  kin_token_file_free(c->token_file);
  kin__discovery_free(c);
  kin_clock_unsubscribe(c->clock, &c->wait_cond);
  pthread_cond_destroy(&c->wait_cond);
  pthread_mutex_destroy(&c->wait_mu);
  pthread_mutex_destroy(&c->mu);
  kin__rest_metrics_destroy(c);
  free(c->host);
  free(c->ns);
  free(c->user_agent);
  free(c->proxy_url);
  free(c->ca_file);
  free(c->ca_data);
  free(c->cert_file);
  free(c->cert_data);
  free(c->key_file);
  wipe_blob(c->key_data, c->tls.key_data_len);
  free(c->server_name);
  kin__wipe_free(c->bearer_token);
  free(c);
}

kin_io_engine *kin_client_io(kin_client *c) { return c->io; }
uint64_t kin_client_max_response_bytes(kin_client *c) { return c->max_body; }
const char *kin_client_host(kin_client *c) { return c->host; }
const char *kin_client_namespace(kin_client *c) { return c->ns; }

void kin_result_free(kin_result *r) {
  if (!r) return;
  free(r->body);
  free(r->reason);
  free(r->message);
  free(r->content_type);
  memset(r, 0, sizeof *r);
}

/* ---- errors ------------------------------------------------------------------ */

/* client-go's errors.NewGenericServerResponse: the reason a status code
 * stands for when the body is not a Status. */
const char *kin_status_reason_for_code(long code) {
  switch (code) {
  case 400: return "BadRequest";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "NotFound";
  case 405: return "MethodNotAllowed";
  case 406: return "NotAcceptable";
  case 409: return "Conflict";
  case 410: return "Expired";
  case 413: return "RequestEntityTooLarge";
  case 415: return "UnsupportedMediaType";
  case 422: return "Invalid";
  case 429: return "TooManyRequests";
  case 500: return "InternalError";
  case 503: return "ServiceUnavailable";
  case 504: return "Timeout";
  default: return code > 500 && code < 600 ? "InternalError" : "Unknown";
  }
}

const char *kin_http_status_text(long code) {
  switch (code) {
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 406: return "Not Acceptable";
  case 407: return "Proxy Authentication Required";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 410: return "Gone";
  case 413: return "Request Entity Too Large";
  case 415: return "Unsupported Media Type";
  case 422: return "Unprocessable Entity";
  case 429: return "Too Many Requests";
  case 500: return "Internal Server Error";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  case 503: return "Service Unavailable";
  case 504: return "Gateway Timeout";
  default: return "";
  }
}

/* Finds needle in the first len bytes of p, ignoring ASCII case. */
static const char *find_ci(const char *p, size_t len, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= len; i++)
    if (!strncasecmp(p + i, needle, k)) return p + i;
  return NULL;
}

#define EXCERPT_MAX 80

/* Appends to out (room n, used *o) the printable text of p[0..len) with
 * whitespace runs collapsed to one space, quotes and backslashes escaped,
 * at most EXCERPT_MAX characters ("..." when cut; a UTF-8 sequence is
 * never split). */
static void put_excerpt(char *out, size_t n, size_t *o, const char *p, size_t len) {
  size_t chars = 0, i = 0;
  int space = 0;
  while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
  for (; i < len; i++) {
    unsigned char ch = (unsigned char)p[i];
    if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
      space = 1;
      continue;
    }
    if (ch < 0x20 || ch == 0x7f) continue;
    if ((ch & 0xC0) == 0x80) { /* continuation byte of a character already counted */
      if (*o + 1 < n) out[(*o)++] = (char)ch;
      continue;
    }
    if (chars + space >= EXCERPT_MAX) {
      if (*o + 4 < n) memcpy(out + *o, "...", 3), *o += 3;
      break;
    }
    size_t need = (ch >= 0x80 ? (ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : 2) : 1) + space +
                  (ch == '"' || ch == '\\');
    if (*o + need + 5 >= n) break; /* room for "..." and the closing quote */
    if (space) out[(*o)++] = ' ', chars++;
    space = 0;
    if (ch == '"' || ch == '\\') out[(*o)++] = '\\';
    out[(*o)++] = (char)ch;
    chars++;
  }
  out[*o] = 0;
}

void kin_http_describe_body(long code, const char *content_type, const char *body, size_t len,
                            char *buf, size_t n) {
  if (!n) return;
  buf[0] = 0;
  if (!body) len = 0;
  size_t skip = 0;
  while (skip < len && isspace((unsigned char)body[skip])) skip++;
  if (skip == len) {
    snprintf(buf, n,
             "the server responded with the status code %ld but did not return more information",
             code);
    return;
  }
  /* The media type without parameters ("text/html; charset=utf-8"). */
  char ct[64] = "";
  if (content_type) {
    size_t k = strcspn(content_type, ";");
    while (k > 0 && content_type[k - 1] == ' ') k--;
    if (k >= sizeof ct) k = sizeof ct - 1;
    memcpy(ct, content_type, k);
    ct[k] = 0;
  }
  const char *text = kin_http_status_text(code);
  int w = snprintf(buf, n, "%ld%s%s (%s: \"", code, *text ? " " : "", text, ct[0] ? ct : "body");
  if (w < 0 || (size_t)w >= n) return;
  size_t o = (size_t)w;
  const char *from = body, *title = find_ci(body, len, "<title");
  const char *gt = title ? memchr(title, '>', len - (size_t)(title - body)) : NULL;
  size_t flen = len;
  if (gt) {
    const char *end = find_ci(gt + 1, len - (size_t)(gt + 1 - body), "</title");
    from = gt + 1;
    flen = end ? (size_t)(end - from) : len - (size_t)(from - body);
  }
  put_excerpt(buf, n, &o, from, flen);
  if (o + 3 <= n) memcpy(buf + o, "\")", 3);
}

/* Sets out->reason and out->message from the Status in the body, or from
 * the code, content type and body when the body is not one. Returns 0 or
 * KIN_ENOMEM. */
static int parse_status(kin_result *out, const char *content_type) {
  kin__json j;
  if (out->body && kin__json_parse(&j, out->body, out->body_len) == 0) {
    if (kin__json_eq(&j, kin__json_get(&j, 0, "kind"), "Status")) {
      out->reason = kin__json_strdup(&j, kin__json_get(&j, 0, "reason"));
      out->message = kin__json_strdup(&j, kin__json_get(&j, 0, "message"));
    }
    kin__json_free(&j);
  }
  if (out->reason && !*out->reason) {
    free(out->reason);
    out->reason = NULL;
  }
  if (out->message && !*out->message) {
    free(out->message);
    out->message = NULL;
  }
  if (!out->reason && !(out->reason = strdup(kin_status_reason_for_code(out->code)))) return KIN_ENOMEM;
  if (!out->message) {
    char m[256];
    kin_http_describe_body(out->code, content_type, out->body, out->body_len, m, sizeof m);
    if (!(out->message = strdup(m))) return KIN_ENOMEM;
  }
  return 0;
}

/* Go's x509 wording for the OpenSSL verification failure curl reports
 * ("SSL certificate problem: <X509_verify_cert_error_string>"), or NULL. */
static const char *x509_reason(const char *curl_text) {
  static const struct {
    const char *openssl, *go;
  } map[] = {
      {"unable to get local issuer certificate", "certificate signed by unknown authority"},
      {"unable to get issuer certificate", "certificate signed by unknown authority"},
      {"self-signed certificate", "certificate signed by unknown authority"},
      {"self signed certificate", "certificate signed by unknown authority"},
      {"unable to verify the first certificate", "certificate signed by unknown authority"},
      {"certificate has expired", "certificate has expired or is not yet valid"},
      {"certificate is not yet valid", "certificate has expired or is not yet valid"},
      {"certificate signature failure", "certificate signature is invalid"},
      {"certificate revoked", "certificate has been revoked"},
      {"invalid CA certificate", "certificate signed by an invalid CA"},
      {"unsupported certificate purpose", "certificate specifies an incompatible key usage"},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strstr(curl_text, map[i].openssl)) return map[i].go;
  return NULL;
}

/* Which CA verified (or failed to verify) the server's certificate. */
static void ca_in_use(const kin_client *c, char *buf, size_t n) {
  if (c->tls.ca_data)
    snprintf(buf, n, "CA: %s", c->ca_from_kubeconfig ? "kubeconfig certificate-authority-data"
                                                     : "certificate-authority-data");
  else if (c->tls.ca_file)
    snprintf(buf, n, "CA: %s", c->tls.ca_file);
  else
    snprintf(buf, n, "CA: system CAs");
}

void kin_client_describe_transport(kin_client *c, const kin_io_response *res, char *buf,
                                   size_t n) {
  if (!n) return;
  const char *text = res->error[0] ? res->error : kin_strerror(res->err ? res->err : KIN_EIO);
  char ca[300];
  ca_in_use(c, ca, sizeof ca);
  switch (res->curl_code) {
  case CURLE_PEER_FAILED_VERIFICATION: {
    const char *why = x509_reason(text);
    const char *q = strchr(text, '\'');
    if (!why && (strstr(text, "subject name") || strstr(text, "host name"))) {
      /* "SSL: no alternative certificate subject name matches target host
       * name 'x'": the name checked is the one in quotes. */
      const char *e = q ? strchr(q + 1, '\'') : NULL;
      int hl = q && e ? (int)(e - q - 1) : 0;
      snprintf(buf, n, "TLS: certificate is not valid for %.*s%s(%s; %s)", hl, hl ? q + 1 : "",
               hl ? " " : "", text, ca);
      return;
    }
    snprintf(buf, n, "TLS: %s (%s; %s)", why ? why : "certificate verification failed", text, ca);
    return;
  }
  case CURLE_SSL_CACERT_BADFILE:
    snprintf(buf, n, "TLS: cannot load the CA (%s; %s)", text, ca);
    return;
  case CURLE_SSL_CERTPROBLEM:
    snprintf(buf, n, "TLS: cannot use the client certificate (%s)", text);
    return;
  case CURLE_SSL_CONNECT_ERROR:
    snprintf(buf, n, "TLS handshake failed (%s; %s)", text, ca);
    return;
  default:
    snprintf(buf, n, "%s", text);
  }
}

/* ---- the retry loop ------------------------------------------------------------ */

static uint64_t jitter_rand(void) {
  static _Thread_local uint64_t s;
  if (!s) s = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&s ^ 0x9E3779B97F4A7C15ULL;
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

/* The wait before retry number n (0-based): Retry-After seconds when the
 * server sent them, else the jittered backoff. */
static uint64_t retry_delay(const char *retry_after, int n) {
  if (retry_after) {
    char *end;
    long s = strtol(retry_after, &end, 10);
    if (end != retry_after && s >= 0) return (uint64_t)s * KIN_NSEC_PER_SEC;
  }
  uint64_t d = BACKOFF_BASE_NS;
  for (int i = 0; i < n && d < BACKOFF_MAX_NS; i++) d *= 2;
  if (d > BACKOFF_MAX_NS) d = BACKOFF_MAX_NS;
  /* Whole milliseconds, so the logged delay is the delay. */
  uint64_t ms = d / KIN_NSEC_PER_MSEC;
  ms += jitter_rand() % ((uint64_t)((double)ms * BACKOFF_JITTER) + 1);
  return ms * KIN_NSEC_PER_MSEC;
}

static int retryable_code(long code) {
  return code == 429 || code == 500 || code == 502 || code == 503 || code == 504;
}

/* The URL of path (which must start with '/') in a new string the caller
 * frees, or NULL on OOM. */
static char *url_of(kin_client *c, const char *path) {
  size_t n = strlen(c->host) + strlen(path) + 1;
  char *u = malloc(n);
  if (u) snprintf(u, n, "%s%s", c->host, path);
  return u;
}

/* Fills hdr (room for 6) with the header lines of one attempt. */
static void headers_for(kin_client *c, const kin__auth_state *a, const char *accept, char *acc,
                        size_t accn, const char *ctype, char *ct, size_t ctn, const char **hdr) {
  int k = 0;
  hdr[k++] = c->user_agent;
  snprintf(acc, accn, "Accept: %s", accept ? accept : "application/json");
  hdr[k++] = acc;
  if (ctype) {
    snprintf(ct, ctn, "Content-Type: %s", ctype);
    hdr[k++] = ct;
  }
  if (a->header) hdr[k++] = a->header;
  hdr[k] = NULL;
}

/* Sets out->message to "<METHOD> <url>: <cause>" (client-go's
 * url.Error: `Get "https://...": ...`). */
static int transport_error(kin_client *c, kin_result *out, const kin_io_response *res, int err,
                           const char *method, const char *url) {
  kin_io_response r = *res;
  r.err = err;
  char cause[768];
  kin_client_describe_transport(c, &r, cause, sizeof cause);
  size_t n = strlen(method) + strlen(url) + strlen(cause) + 4;
  if ((out->message = malloc(n))) snprintf(out->message, n, "%s %s: %s", method, url, cause);
  return out->message ? err : KIN_ENOMEM;
}

/* kin_io_request.may_send of a fenced write: nonzero once its epoch ended
 * (atomic reads only: it runs on the IO thread). */
static int fence_refuses(void *ud) { return kin_call_ctx_may_write(ud) != 0; }

int kin_client_do(kin_client *c, const kin_client_request *req, kin_result *out) {
  memset(out, 0, sizeof *out);
  if (!c || !req || !req->path || req->path[0] != '/') return KIN_EINVAL;
  const char *method = req->method ? req->method : "GET";
  const kin_call_ctx *ctx = req->ctx;
  kin_client_request creq;
  if (ctx) { /* rest_ctx.h: the call's fence, deadline and canceler */
    creq = *req;
    int crc = kin__ctx_prepare(ctx, method, c->timeout_ms, &creq.timeout_ms, &creq.cancel,
                               &out->message);
    if (crc) {
      kin__ctx_observe(ctx, method, req->path, 0, out->message);
      return crc;
    }
    req = &creq;
  }
  /* a write under a leadership fence: checked at each attempt and on the
   * IO thread right before its bytes go out */
  int fenced = ctx && ctx->fence && strcmp(method, "GET") != 0;
  char *url = url_of(c, req->path);
  if (!url) return KIN_ENOMEM;
  char acc[256], ct[256];
  const char *hdr[6];
  int reauthed = 0, rc = 0;
  for (;;) {
    if (req->cancel && kin_io_canceler_fired(req->cancel)) {
      out->message = strdup("request cancelled");
      rc = KIN_ECANCELED;
      break;
    }
    if (c->limited && !req->unlimited) kin__token_bucket_accept(&c->rl);
    if (fenced && kin_call_ctx_may_write(ctx) != 0) {
      /* Again at each attempt, after the rate limiter's wait: a worker
       * that passed the first check and was then paused (SIGSTOP past its
       * Lease) must not send the write when it runs again. */
      rc = kin__ctx_refuse(ctx, method, req->path, &out->message);
      break;
    }
    kin__auth_state a;
    kin_io_tls tls;
    char amsg[768];
    if ((rc = kin__auth_prepare(c, &a, &tls, amsg, sizeof amsg)) != 0) {
      kin__auth_release(&a);
      out->message = strdup(amsg[0] ? amsg : kin_strerror(rc));
      break;
    }
    headers_for(c, &a, req->accept, acc, sizeof acc,
                req->body ? (req->content_type ? req->content_type : "application/json") : NULL,
                ct, sizeof ct, hdr);
    kin_io_request ioreq = {.method = method,
                            .url = url,
                            .headers = hdr,
                            .body = req->body,
                            .body_len = req->body_len,
                            .timeout_ms = req->timeout_ms < 0   ? 0
                                          : req->timeout_ms > 0 ? req->timeout_ms
                                                                : c->timeout_ms,
                            .proxy_url = c->proxy_url,
                            .accept_gzip = c->gzip,
                            .tls = tls,
                            .max_body = c->max_body};
    if (fenced) { /* and once more on the IO thread, right before sending */
      ioreq.may_send = fence_refuses;
      ioreq.may_send_ud = (void *)ctx;
    }
    kin_io_response res;
    uint64_t t0 = kin_clock_now(c->clock);
    int err = req->on_body ? kin_io_do_streamed(c->io, &ioreq, &res, req->cancel, req->on_body,
                                                req->body_ud)
                           : kin_io_do_cancelable(c->io, &ioreq, &res, req->cancel);
    kin__rest_metrics_record(c, method, err ? 0 : res.code, kin_clock_now(c->clock) - t0);
    if (err == KIN_EFENCED) {
      kin__auth_release(&a);
      kin_io_response_free(&res);
      rc = kin__ctx_refuse(ctx, method, req->path, &out->message);
      break;
    }
    if (err) {
      kin__auth_release(&a);
      rc = transport_error(c, out, &res, err, method, url);
      kin_io_response_free(&res);
      break;
    }
    if (res.code == 401 && !reauthed && kin__auth_refresh(c, &a)) {
      /* One more try with the refreshed credential, as client-go's exec
       * and token-file round trippers. */
      reauthed = 1;
      kin__auth_release(&a);
      kin_io_response_free(&res);
      out->retries++;
      kin_log(KIN_LOG_INFO, "rest_client", "%s %s: 401, retrying with a refreshed credential",
              method, req->path);
      continue;
    }
    kin__auth_release(&a);
    if (req->idempotent && retryable_code(res.code) && out->retries < c->max_retries) {
      uint64_t d = retry_delay(res.retry_after, out->retries);
      kin_log(KIN_LOG_INFO, "rest_client", "%s %s: %ld, retry %d of %d after %llu ms", method,
              req->path, res.code, out->retries + 1, c->max_retries,
              (unsigned long long)(d / KIN_NSEC_PER_MSEC));
      kin_io_response_free(&res);
      out->retries++;
      kin__clock_sleep_until(c->clock, &c->wait_mu, &c->wait_cond, kin_clock_now(c->clock) + d);
      continue;
    }
    out->code = res.code;
    out->body = res.body;
    out->body_len = res.body_len;
    res.body = NULL;
    if (out->code >= 200 && out->code < 300) {
      rc = 0;
    } else {
      /* A Status in protobuf (asked for with an Accept that prefers it):
       * its JSON, which every reader of errors understands. */
      kin__pb_body_to_json(&out->body, &out->body_len, &res.content_type);
      rc = parse_status(out, res.content_type) ? KIN_ENOMEM : KIN_ESTATUS;
    }
    out->content_type = res.content_type;
    res.content_type = NULL;
    kin_io_response_free(&res);
    break;
  }
  free(url);
  kin__ctx_observe(ctx, method, req->path, out->code, rc ? out->message : NULL);
  return rc;
}

int kin_client_stream(kin_client *c, const char *path, const kin_client_stream_opts *o,
                      kin_io_data_cb on_data, kin_io_done_cb on_done, void *ud,
                      kin_io_handle **h) {
  static const kin_client_stream_opts defaults;
  if (!o) o = &defaults;
  if (h) *h = NULL;
  if (!c || !path || path[0] != '/' || !on_data) return KIN_EINVAL;
  char *url = url_of(c, path);
  if (!url) return KIN_ENOMEM;
  if (c->limited) kin__token_bucket_accept(&c->rl);
  kin__auth_state a;
  kin_io_tls tls;
  char amsg[768];
  int rc = kin__auth_prepare(c, &a, &tls, amsg, sizeof amsg);
  if (rc == 0) {
    char acc[256];
    const char *hdr[6];
    headers_for(c, &a, o->accept, acc, sizeof acc, NULL, NULL, 0, hdr);
    kin_io_request ioreq = {.url = url,
                            .headers = hdr,
                            .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0,
                            .low_speed_ms = o->low_speed_ms > 0 ? o->low_speed_ms : 0,
                            .proxy_url = c->proxy_url,
                            .accept_gzip = c->gzip,
                            .tls = tls,
                            .read_idle_ms = o->read_idle_ms,
                            .ping_timeout_ms = o->ping_timeout_ms,
                            .on_data = on_data,
                            .on_done = on_done,
                            .data = ud};
    rc = kin_io_submit(c->io, &ioreq, h);
  } else {
    kin_log(KIN_LOG_WARN, "rest_client", "watch %s: %s", path, amsg);
  }
  kin__auth_release(&a);
  free(url);
  return rc;
}
