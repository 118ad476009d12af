/* webhook.h -- (layer: webhook) controller-runtime's webhook server
 * (sigs.k8s.io/controller-runtime/pkg/webhook): one HTTPS endpoint
 * (libmicrohttpd, a kin_tls_keypair from tls_cert.h) serving every
 * registered hook at its path, AdmissionReview v1 (validating, mutating)
 * and ConversionReview v1 (conversion) decoded into a kin_webhook_request
 * and answered from a kin_webhook_response, with request size limits, a
 * connection cap and controller-runtime's metrics:
 *
 *   controller_runtime_webhook_requests_total{code, webhook}
 *   controller_runtime_webhook_latency_seconds{webhook}   (histogram)
 *   controller_runtime_webhook_requests_in_flight{webhook}
 *   controller_runtime_webhook_panics_total
 *   controller_runtime_conversion_webhook_panics_total
 *
 * where webhook is the hook's path, as controller-runtime labels it.
 *
 * The same decoding and answering serves a review given in memory
 * (kin_webhook_server_serve): kinformer.sim's in-process admission chain
 * calls a manager's hooks that way, without TLS or a socket.
 *
 * Threads: the server's hooks table is guarded by its own mutex (add and
 * remove from any thread, also while serving); a hook's fn is called on a
 * libmicrohttpd connection thread (one per connection, at most
 * max_connections) or on the caller's thread of kin_webhook_server_serve,
 * never on the IO engine's thread. Every function is thread-safe but
 * kin_webhook_server_free. */
#ifndef KIN_WEBHOOK_H
#define KIN_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "kobj.h"
#include "metrics.h"
#include "tls_cert.h"

typedef enum {
  KIN_WEBHOOK_VALIDATING = 1, /* AdmissionReview; allowed or denied */
  KIN_WEBHOOK_MUTATING = 2,   /* AdmissionReview; allowed with a JSONPatch */
  KIN_WEBHOOK_CONVERSION = 3  /* ConversionReview */
} kin_webhook_type;

/* One review, decoded. Every pointer is borrowed for the duration of the
 * fn call (take a reference to keep an object). Strings are never NULL:
 * "" when the review leaves them out. */
typedef struct {
  kin_webhook_type type;
  const char *path; /* the hook's path */
  const char *uid;  /* request.uid (AdmissionReview) or request.uid (ConversionReview) */
  /* The time (CLOCK_MONOTONIC ns) by which fn must have returned for the
   * answer to reach the API server in time: the request's ?timeout= (what
   * kube-apiserver sends; a longer one is cut to 30 s, its largest) or the
   * hook's timeout_ns, less a margin of a
   * tenth (at most 1 s) for the answer's trip. */
  uint64_t deadline_ns;

  /* AdmissionReview v1 (types VALIDATING, MUTATING) */
  const char *operation;        /* CREATE, UPDATE, DELETE, CONNECT */
  const char *kind_group, *kind_version, *kind;             /* request.kind */
  const char *resource_group, *resource_version, *resource; /* request.resource */
  const char *sub_resource;
  const char *name, *namespace_;
  int dry_run;
  kin_obj *object;     /* request.object; NULL when absent or null (DELETE) */
  kin_obj *old_object; /* request.oldObject; NULL when absent or null (CREATE) */
  const char *user_info; /* request.userInfo as JSON text ("{}" when absent) */
  size_t user_info_len;
  const char *options;   /* request.options as JSON text ("null" when absent) */
  size_t options_len;

  /* ConversionReview v1 (type CONVERSION) */
  const char *desired_api_version;
  kin_obj *const *objects; /* request.objects, each parsed (name may be absent) */
  size_t nobjects;
} kin_webhook_request;

/* What fn fills in. The server zeroes it before the call and frees every
 * member after answering (free() on each pointer, each string of the
 * arrays and the arrays). */
typedef struct {
  /* admission */
  int allowed;       /* 1 allowed, 0 denied */
  int32_t code;      /* status.code of a denial; 0: 403 */
  char *reason;      /* status.reason of a denial (NULL: none) */
  char *message;     /* status.message (denial, or why fn failed) */
  char **warnings;   /* response.warnings, nwarnings strings */
  size_t nwarnings;
  char *patch;       /* mutating: a JSONPatch (RFC 6902) as JSON text, NULL or
                        "[]": none; the server base64-encodes it and sets
                        patchType JSONPatch */
  size_t patch_len;
  /* conversion: nconverted must equal the request's nobjects when fn
   * returns 0 and failed is 0 */
  char **converted;      /* each converted object as JSON text */
  size_t *converted_len;
  size_t nconverted;
  int failed;            /* conversion: result.status Failure with message */
} kin_webhook_response;

/* A hook's handler. Returns 0 when the handler ran, whatever it decided
 * (resp says allowed or denied, or failed for a conversion); or a negative
 * KIN_E* code when it could not decide (raised an error, ran past its
 * deadline, ran out of memory): resp->message then says why, naming the
 * hook and the cause, and the server answers as controller-runtime does
 * for a panic: AdmissionReview allowed: false with code 500 and that
 * message, ConversionReview result Failure with that message; it counts
 * controller_runtime_webhook_panics_total (admission) or
 * controller_runtime_conversion_webhook_panics_total (conversion). */
typedef int (*kin_webhook_fn)(void *ud, const kin_webhook_request *req,
                              kin_webhook_response *resp);

typedef struct {
  const char *path;      /* "/validate-example-com-v1-website"; unique in the server */
  kin_webhook_type type;
  uint64_t timeout_ns;   /* the deadline when the request carries no ?timeout=;
                            0: 10 s (kube-apiserver's default timeoutSeconds) */
  kin_webhook_fn fn;
  void *ud;
} kin_webhook_hook;

typedef struct {
  const char *bind_address;   /* "[host]:port"; ":9443" (NULL) listens on every
                                 address, port 0 lets the kernel choose */
  kin_tls_keypair *keys;      /* the serving key pair; borrowed, must outlive the
                                 server; NULL only for a server that is never
                                 started (kin_webhook_server_serve alone) */
  unsigned max_connections;   /* 0: 256 */
  size_t max_request_bytes;   /* a body past it gets 413; 0: 7 MiB (3 MiB
                                 objects, old and new, and the envelope) */
  kin_metrics_registry *metrics; /* NULL: no metrics */
} kin_webhook_server_config;

typedef struct kin_webhook_server kin_webhook_server;

/* Makes a server (not listening yet). cfg's strings are copied. Returns 0
 * and *out; KIN_EINVAL for a bad bind address (err says why), KIN_ENOMEM. */
int kin_webhook_server_new(const kin_webhook_server_config *cfg, kin_webhook_server **out,
                           char *err, size_t errlen);

/* Adds a hook (its path copied). Returns 0; KIN_EEXIST when the path is
 * taken; KIN_EINVAL for a path not starting with '/' or a NULL fn;
 * KIN_ENOMEM. Any time, also while serving. */
int kin_webhook_server_add(kin_webhook_server *s, const kin_webhook_hook *h);

/* Removes the hook at path and waits until no call of its fn is under way
 * (so its ud may be freed after). Returns 0 or KIN_ENOENT. */
int kin_webhook_server_remove(kin_webhook_server *s, const char *path);

/* Starts listening. Returns 0; KIN_EBUSY when the address cannot be
 * bound, KIN_EINVAL without keys (err says why), KIN_ENOMEM. */
int kin_webhook_server_start(kin_webhook_server *s, char *err, size_t errlen);

/* The port listened on (after start), or 0. */
int kin_webhook_server_port(const kin_webhook_server *s);

/* Answers a review given in memory as the HTTPS endpoint would answer a
 * POST of body to path (with ?timeout=timeout_ms when not 0): the same
 * decoding, deadline, metrics and answer. Returns the HTTP status (200,
 * 400 for a body that is no review, 404 for an unknown path, 413 past
 * max_request_bytes) with the answer's bytes in *out (malloc'd, the
 * caller frees; an AdmissionReview/ConversionReview for 200, a short text
 * otherwise), or KIN_ENOMEM. Runs fn on the calling thread. */
int kin_webhook_server_serve(kin_webhook_server *s, const char *path, const char *body,
                             size_t len, uint32_t timeout_ms, char **out, size_t *outlen);

/* Stops listening and waits for every connection to end (a call under way
 * runs to its deadline). Idempotent. */
void kin_webhook_server_stop(kin_webhook_server *s);

/* Stops and frees s; NULL is a no-op. */
void kin_webhook_server_free(kin_webhook_server *s);

#endif
