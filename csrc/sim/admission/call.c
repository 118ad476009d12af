/* call.c -- one call of a webhook: an in-process registration's function
 * (its calls counted, so unregistering waits for them), or a POST over
 * HTTPS with libcurl to clientConfig.url with its caBundle as the only
 * trust and ?timeout=<timeoutSeconds>s, as kube-apiserver's webhook
 * client (k8s.io/apiserver pkg/util/webhook) sends it. A
 * clientConfig.service cannot be resolved by the sim: it is answered as
 * an unreachable webhook. Errors are worded as the Go client's. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "call.h"
#include "kin.h"

/* The reason of a non-200 answer, as client-go words it. */
static void status_error(int code, const char *body, size_t len, char *err, size_t errcap) {
  json_error_t jerr;
  json_t *st = json_loadb(body ? body : "", len, 0, &jerr);
  const char *msg = kin__sim_jstr(st, "message", NULL);
  if (msg && *msg)
    snprintf(err, errcap, "failed to call webhook: %s", msg);
  else if (len)
    snprintf(err, errcap,
             "failed to call webhook: an error on the server (\"%.*s\") has prevented the "
             "request from succeeding",
             (int)(len > 200 ? 200 : len), body);
  else
    snprintf(err, errcap,
             "failed to call webhook: the server responded with the status code %d but did not "
             "return more information",
             code);
  json_decref(st);
}

/* The in-process call: returns 0 with the answer, -1 with err. */
static int call_fn(kin_sim *sim, const kin__sim_hook *h, const char *body, char **out,
                   size_t *outlen, char *err, size_t errcap) {
  if (kin__sim_reg_call_begin(sim, h->reg)) {
    snprintf(err, errcap, "failed to call webhook: Post \"%s?timeout=%us\": webhook unregistered",
             h->path, h->timeout_s);
    return -1;
  }
  *out = NULL;
  *outlen = 0;
  int code = h->reg->fn(h->reg->ud, h->path, body, strlen(body), h->timeout_s * 1000u, out,
                        outlen);
  kin__sim_reg_call_end(sim, h->reg);
  if (code == 200 && *out) return 0;
  if (code < 0)
    snprintf(err, errcap, "failed to call webhook: Post \"%s?timeout=%us\": %s", h->path,
             h->timeout_s, kin_strerror(code));
  else
    status_error(code, *out, *outlen, err, errcap);
  free(*out);
  *out = NULL;
  return -1;
}

static size_t sink(char *p, size_t size, size_t n, void *ud) {
  return kin__buf_add(ud, p, size * n) ? 0 : size * n;
}

/* The HTTPS call: returns 0 with the answer, -1 with err. */
static int call_url(const kin__sim_hook *h, const char *body, char **out, size_t *outlen,
                    char *err, size_t errcap) {
  char url[2048];
  snprintf(url, sizeof(url), "%s%s" "timeout=%us", h->url, strchr(h->url, '?') ? "&" : "?",
           h->timeout_s);
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(err, errcap, "failed to call webhook: out of memory");
    return -1;
  }
  kin__buf b = {0};
  struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
  hd = curl_slist_append(hd, "Accept: application/json, */*");
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)h->timeout_s * 1000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  if (h->ca) {
    struct curl_blob blob = {h->ca, strlen(h->ca), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  }
  CURLcode rc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(hd);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK) {
    /* Go's net/http words for the usual failures */
    char why[512];
    const char *hp = strstr(h->url, "://");
    hp = hp ? hp + 3 : h->url;
    size_t hl = strcspn(hp, "/?");
    if (rc == CURLE_COULDNT_CONNECT)
      snprintf(why, sizeof(why), "dial tcp %.*s: connect: connection refused", (int)hl, hp);
    else if (rc == CURLE_OPERATION_TIMEDOUT)
      snprintf(why, sizeof(why), "context deadline exceeded");
    else if (rc == CURLE_PEER_FAILED_VERIFICATION)
      snprintf(why, sizeof(why),
               "tls: failed to verify certificate: x509: certificate signed by unknown authority");
    else
      snprintf(why, sizeof(why), "%s", curl_easy_strerror(rc));
    snprintf(err, errcap, "failed to call webhook: Post \"%s\": %s", url, why);
    kin__buf_free(&b);
    return -1;
  }
  if (code != 200) {
    status_error((int)code, b.p, b.len, err, errcap);
    kin__buf_free(&b);
    return -1;
  }
  *out = b.p ? b.p : strdup("");
  *outlen = b.len;
  return 0;
}

int kin__sim_hook_call(kin_sim *sim, const kin__sim_hook *h, const char *body, char **out,
                       size_t *outlen, char *err, size_t errcap) {
  *out = NULL;
  *outlen = 0;
  if (h->reg) return call_fn(sim, h, body, out, outlen, err, errcap);
  if (!h->url) {
    snprintf(err, errcap,
             "failed to call webhook: clientConfig.service cannot be reached from kinformer.sim "
             "(use clientConfig.url)");
    return -1;
  }
  return call_url(h, body, out, outlen, err, errcap);
}
