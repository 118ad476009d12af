/* webhook_int.h -- internal to the webhook layer: the server's state shared
 * by webhook_server.c (the API), webhook_hooks.c (the hooks table),
 * webhook_dispatch.c (one review answered), webhook_listen.c (the
 * libmicrohttpd daemon and TLS), webhook_review.c (decoding and encoding
 * the reviews) and webhook_metrics.c (controller-runtime's metrics). */
#ifndef KIN_WEBHOOK_INT_H
#define KIN_WEBHOOK_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "metrics.h"
#include "webhook.h"

/* One registered hook. path, type, timeout_ns, fn and ud are immutable;
 * inuse and removed are guarded by the server's mu. */
typedef struct kin__wh_hook {
  char *path;
  kin_webhook_type type;
  uint64_t timeout_ns;
  kin_webhook_fn fn;
  void *ud;
  unsigned inuse; /* calls of fn (and answers) under way */
  int removed;    /* out of the table; freed by the remover once inuse is 0 */
} kin__wh_hook;

/* controller-runtime's five families in one registry (NULL members: no
 * metrics). Immutable after kin_webhook_server_new. */
typedef struct {
  kin_metric *total, *latency, *in_flight, *panics, *conversion_panics;
} kin__wh_metrics;

struct kin_webhook_server {
  char *bind_address;
  kin_tls_keypair *keys; /* borrowed */
  unsigned max_connections;
  size_t max_request_bytes;
  kin__wh_metrics metrics;

  pthread_mutex_t mu; /* guards hooks, nhooks, caphooks and every hook's inuse/removed */
  pthread_cond_t idle; /* signalled when a removed hook's last call ends */
  kin__wh_hook **hooks;
  size_t nhooks, caphooks;

  /* the daemon: set by start, cleared by stop (start and stop are
   * serialised by life_mu, taken before mu, never under it) */
  pthread_mutex_t life_mu;
  void *daemon; /* struct MHD_Daemon * */
  int port;
};

/* ---- webhook_hooks.c ---------------------------------------------------- */

/* Finds the hook at path and counts a call on it (release it after).
 * Returns the hook or NULL when there is none. */
kin__wh_hook *kin__wh_hooks_acquire(kin_webhook_server *s, const char *path);
/* Ends a call counted by acquire; wakes a remover waiting for it. */
void kin__wh_hooks_release(kin_webhook_server *s, kin__wh_hook *h);
/* 1 when a hook is registered at path. */
int kin__wh_hooks_has(kin_webhook_server *s, const char *path);
/* Frees every hook (kin_webhook_server_free: nothing serves any more). */
void kin__wh_hooks_clear(kin_webhook_server *s);

/* ---- webhook_dispatch.c ------------------------------------------------- */

/* Answers one POST of body (len bytes) to path, the one path of the HTTPS
 * endpoint and of kin_webhook_server_serve: 404 for an unknown path, 400
 * for an empty body, 413 when len passes max_request_bytes (body is then
 * not read and may be NULL), 400 when ctype is not NULL and not
 * "application/json" (admission hooks; NULL: given in memory, not
 * checked), 400 for a body that is no review of the hook's kind, else 200
 * with the review's answer after calling the hook's fn with a deadline of
 * timeout_ns from now (0: the hook's timeout). Counts the metrics. Returns
 * the HTTP status with the answer's bytes in *out (malloc'd, the caller
 * frees), or KIN_ENOMEM. */
int kin__wh_handle(kin_webhook_server *s, const char *path, const char *body, size_t len,
                   uint64_t timeout_ns, const char *ctype, char **out, size_t *outlen);

/* ---- webhook_review.c --------------------------------------------------- */

/* A decoded review: the request handed to fn and what it owns. */
typedef struct {
  kin_webhook_request req;
  char api_version[40]; /* the review's apiVersion, answered in kind */
  char **strs;          /* unescaped strings req points to */
  size_t nstrs, capstrs;
  kin_obj **objects;      /* request.objects (conversion), owned references */
} kin__wh_review;

/* Decodes body as a review for a hook of type: AdmissionReview
 * (admission.k8s.io/v1 or v1beta1) for VALIDATING and MUTATING,
 * ConversionReview (apiextensions.k8s.io/v1 or v1beta1) for CONVERSION.
 * The request's strings point into rv (or are static ""), its user_info and
 * options into body (which must outlive rv). Returns 0; KIN_EINVAL with
 * err saying what is wrong (not JSON, not an object, the wrong kind or
 * apiVersion, no request, a field of the wrong type); KIN_ENOMEM.
 * kin__wh_review_free releases rv in every case. */
int kin__wh_review_decode(kin__wh_review *rv, kin_webhook_type type, const char *body,
                          size_t len, char *err, size_t errlen);
void kin__wh_review_free(kin__wh_review *rv);

/* Appends the AdmissionReview answering rv: resp as fn filled it when
 * fn_rc is 0, else an error (allowed false, code 500, resp->message or
 * dflt_msg). Returns 0 or KIN_ENOMEM. */
int kin__wh_answer_admission(kin__buf *b, const kin__wh_review *rv,
                             const kin_webhook_response *resp, int fn_rc, const char *dflt_msg);

/* Appends the ConversionReview answering rv: Success with resp's
 * converted objects, or Failure with a message (fn_rc < 0, resp->failed,
 * or a count that is not the request's). Returns 0 or KIN_ENOMEM. */
int kin__wh_answer_conversion(kin__buf *b, const kin__wh_review *rv,
                              const kin_webhook_response *resp, int fn_rc, const char *dflt_msg);

/* Parses a Go duration ("10s", "1m30s", "500ms", "1.5s") into *ns.
 * Returns 0 or KIN_EINVAL (also for a negative or overflowing one). */
int kin__wh_parse_duration(const char *s, uint64_t *ns);

/* ---- webhook_metrics.c -------------------------------------------------- */

/* Registers (or finds) controller-runtime's families in r; m is zeroed
 * when r is NULL. Returns 0, KIN_EEXIST (a family of that name with
 * another shape), KIN_ENOMEM. */
int kin__wh_metrics_init(kin__wh_metrics *m, kin_metrics_registry *r);
/* A new hook's children: requests_total for 200 and 500 and the
 * in-flight gauge at 0, as controller-runtime's InstrumentedHook. */
void kin__wh_metrics_hook(const kin__wh_metrics *m, const char *path);
/* In-flight +1 (delta 1) or -1 (delta -1). */
void kin__wh_metrics_in_flight(const kin__wh_metrics *m, const char *path, int delta);
/* One answered request: its status code and latency. */
void kin__wh_metrics_done(const kin__wh_metrics *m, const char *path, int code, double seconds);
/* One fn failure (a "panic"): admission or conversion counter. */
void kin__wh_metrics_panic(const kin__wh_metrics *m, kin_webhook_type type);

/* ---- webhook_listen.c --------------------------------------------------- */

/* Checks a bind address ("[host]:port", ":port", "host:port"). Returns 0
 * or KIN_EINVAL with err. */
int kin__wh_check_bind(const char *bind, char *err, size_t errlen);
/* Starts s's daemon (s->daemon, s->port). Returns 0, KIN_EINVAL (no keys,
 * no TLS in libmicrohttpd; err), KIN_EBUSY (cannot listen; err), KIN_ENOMEM. */
int kin__wh_listen(kin_webhook_server *s, char *err, size_t errlen);
/* Stops s's daemon and waits for its connections (no-op when none). */
void kin__wh_unlisten(kin_webhook_server *s);

#endif
