/* webhook_dispatch.c -- one review answered, the same way for the HTTPS
 * endpoint and for kin_webhook_server_serve: the hook found by path, the
 * checks controller-runtime makes before decoding (empty body, size,
 * content type), the review decoded, the deadline, the hook's fn, the
 * answer, and the metrics around it all. A refused review is logged at
 * debug (controller-runtime logs it as an error; here the API server's
 * side sees the status and the text). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kin.h"
#include "log.h"
#include "webhook_int.h"

/* CLOCK_MONOTONIC now, in ns. */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Copies text (a short plain answer) into *out. Returns status, or
 * KIN_ENOMEM. */
static int text(int status, const char *msg, char **out, size_t *outlen) {
  size_t n = strlen(msg);
  char *p = malloc(n + 2);
  if (!p) return KIN_ENOMEM;
  memcpy(p, msg, n);
  p[n] = '\n';
  p[n + 1] = 0;
  *out = p;
  *outlen = n + 1;
  return status;
}

/* Frees what fn left in resp (webhook.h: every member is malloc'd). */
static void resp_free(kin_webhook_response *r) {
  free(r->reason);
  free(r->message);
  for (size_t i = 0; r->warnings && i < r->nwarnings; i++) free(r->warnings[i]);
  free(r->warnings);
  free(r->patch);
  for (size_t i = 0; r->converted && i < r->nconverted; i++) free(r->converted[i]);
  free(r->converted);
  free(r->converted_len);
  memset(r, 0, sizeof *r);
}

/* kube-apiserver's largest timeoutSeconds: a caller's longer ?timeout= is
 * cut to it, so no review can hold a hook's state longer. */
#define MAX_TIMEOUT_NS (30ull * 1000000000ull)

/* The deadline for a review given timeout t ns (at most 30 s) from start:
 * less a tenth of it, at most 1 s, for the answer's trip back. */
static uint64_t deadline(uint64_t start, uint64_t t) {
  if (t > MAX_TIMEOUT_NS) t = MAX_TIMEOUT_NS;
  uint64_t margin = t / 10;
  if (margin > 1000000000ull) margin = 1000000000ull;
  return start + t - margin;
}

/* Decodes body, calls h's fn, encodes the answer. Returns the status
 * (200, or 400 for a body that is no review) with *out, or KIN_ENOMEM. */
static int review(kin_webhook_server *s, kin__wh_hook *h, const char *body, size_t len,
                  uint64_t start, uint64_t timeout_ns, char **out, size_t *outlen) {
  kin__wh_review rv;
  char err[300];
  int rc = kin__wh_review_decode(&rv, h->type, body, len, err, sizeof err);
  if (rc) {
    kin__wh_review_free(&rv);
    return rc == KIN_ENOMEM ? rc : text(400, err, out, outlen);
  }
  rv.req.path = h->path;
  rv.req.deadline_ns = deadline(start, timeout_ns ? timeout_ns : h->timeout_ns);
  kin_webhook_response resp;
  memset(&resp, 0, sizeof resp);
  int frc = h->fn(h->ud, &rv.req, &resp);
  char dflt[200];
  snprintf(dflt, sizeof dflt, "webhook %s failed: %s", h->path, kin_strerror(frc < 0 ? frc : 0));
  if (frc < 0) kin__wh_metrics_panic(&s->metrics, h->type);
  kin__buf b = {0};
  rc = h->type == KIN_WEBHOOK_CONVERSION ? kin__wh_answer_conversion(&b, &rv, &resp, frc, dflt)
                                         : kin__wh_answer_admission(&b, &rv, &resp, frc, dflt);
  resp_free(&resp);
  kin__wh_review_free(&rv);
  if (rc) {
    kin__buf_free(&b);
    return KIN_ENOMEM;
  }
  *out = b.p;
  *outlen = b.len;
  return 200;
}

/* See webhook_int.h: the HTTP status with a malloc'd answer in *out, or
 * KIN_ENOMEM (nothing in *out). */
int kin__wh_handle(kin_webhook_server *s, const char *path, const char *body, size_t len,
                   uint64_t timeout_ns, const char *ctype, char **out, size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  kin__wh_hook *h = kin__wh_hooks_acquire(s, path);
  if (!h) return text(404, "404 page not found", out, outlen);
  uint64_t start = now_ns();
  kin__wh_metrics_in_flight(&s->metrics, h->path, 1);
  int status;
  char msg[200];
  if (len == 0) {
    status = text(400, "request body is empty", out, outlen);
  } else if (len > s->max_request_bytes) {
    snprintf(msg, sizeof msg, "request entity is too large; limit is %zu bytes",
             s->max_request_bytes);
    status = text(413, msg, out, outlen);
  } else if (ctype && h->type != KIN_WEBHOOK_CONVERSION && strcmp(ctype, "application/json") != 0) {
    snprintf(msg, sizeof msg, "contentType=%.100s, expected application/json", ctype);
    status = text(400, msg, out, outlen);
  } else {
    status = review(s, h, body, len, start, timeout_ns, out, outlen);
  }
  if (status > 0 && status != 200 && *outlen)
    kin_log(KIN_LOG_DEBUG, "webhook", "%s answered %d: %.*s", h->path, status, (int)*outlen - 1,
            *out);
  kin__wh_metrics_in_flight(&s->metrics, h->path, -1);
  kin__wh_metrics_done(&s->metrics, h->path, status < 0 ? 500 : status,
                       (double)(now_ns() - start) / 1e9);
  kin__wh_hooks_release(s, h);
  return status;
}
