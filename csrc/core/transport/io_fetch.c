/* io_fetch.c -- one request on the calling thread, without an engine
 * (kin_io_fetch, io_engine.h): for the few tools that read one URL once
 * (`kinformer inspect` reading an operator's admin endpoint), so that no
 * file outside csrc/core/transport needs libcurl. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_engine.h"

typedef struct {
  kin_io_response *res;
  size_t cap;
  uint64_t max;
  int nomem, toobig;
} fetch_sink;

/* curl's write callback: collects the body up to the cap. */
static size_t fetch_write(char *p, size_t size, size_t nmemb, void *ud) {
  fetch_sink *s = ud;
  size_t n = size * nmemb;
  kin_io_response *r = s->res;
  r->received += n;
  if (s->max && r->received > s->max) {
    s->toobig = 1;
    return n ? 0 : 1;
  }
  if (r->body_len + n + 1 > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4096;
    while (cap < r->body_len + n + 1) cap *= 2;
    char *b = realloc(r->body, cap);
    if (!b) {
      s->nomem = 1;
      return n ? 0 : 1;
    }
    r->body = b;
    s->cap = cap;
  }
  memcpy(r->body + r->body_len, p, n);
  r->body_len += n;
  r->body[r->body_len] = 0;
  return n;
}

int kin_io_fetch(const kin_io_request *req, kin_io_response *res) {
  memset(res, 0, sizeof(*res));
  if (!req || !req->url) return KIN_EINVAL;
  res->max_body = req->max_body;
  CURL *c = curl_easy_init();
  if (!c) return res->err = KIN_ENOMEM;
  struct curl_slist *hdr = NULL;
  int oom = 0;
  for (const char *const *h = req->headers; h && *h && !oom; h++) {
    struct curl_slist *n = curl_slist_append(hdr, *h);
    if (n) hdr = n;
    else oom = 1;
  }
  if (oom) {
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return res->err = KIN_ENOMEM;
  }
  fetch_sink s = {.res = res, .max = req->max_body};
  curl_easy_setopt(c, CURLOPT_URL, req->url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, res->error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fetch_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (hdr) curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
  if (req->timeout_ms > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req->timeout_ms);
  if (req->method && strcmp(req->method, "GET")) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
  if (req->body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
  }
  if (req->tls.ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, req->tls.ca_file);
  if (req->tls.cert_file) curl_easy_setopt(c, CURLOPT_SSLCERT, req->tls.cert_file);
  if (req->tls.key_file) curl_easy_setopt(c, CURLOPT_SSLKEY, req->tls.key_file);
  if (req->tls.insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->code);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(c);
  res->curl_code = (int)rc;
  if (rc == CURLE_OK) res->error[0] = 0;
  else if (!res->error[0]) snprintf(res->error, sizeof(res->error), "%s", curl_easy_strerror(rc));
  if (s.toobig)
    snprintf(res->error, sizeof(res->error),
             "response body larger than its cap of %llu bytes (%llu bytes received)",
             (unsigned long long)s.max, (unsigned long long)res->received);
  res->err = s.nomem                         ? KIN_ENOMEM
             : s.toobig                      ? KIN_ETOOBIG
             : rc == CURLE_OK                ? 0
             : rc == CURLE_OPERATION_TIMEDOUT ? KIN_ETIMEDOUT
                                             : KIN_EIO;
  return res->err;
}
