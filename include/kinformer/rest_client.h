/* rest_client.h -- talking to one API server: client-go's rest.Config
 * transport (TLS, bearer token, rotating token file, exec plugin, client
 * certificate, proxy), its client-side rate limiter (flowcontrol token
 * bucket), the dynamic client's verbs, and a discovery-backed RESTMapper.
 *
 * Every request goes through one kin_io_engine (the process's IO thread);
 * the calls below block the calling thread until the response arrived, so
 * they are for informer/reflector threads and controller workers, never for
 * the IO thread (they return KIN_EBUSY there).
 *
 * Errors: 0 on a 2xx answer; KIN_ESTATUS when the server answered with an
 * error (kin_result.code, .reason and .message hold its Status; for a body
 * that is not a Status, the reason its code stands for and a message with
 * code, content type and excerpt: kin_http_describe_body);
 * KIN_ETOOBIG when a body passed the client's cap (max_response_bytes);
 * KIN_EIO / KIN_ETIMEDOUT for transport failures (kin_result.message is
 * "<METHOD> <url>: <cause>", the cause for TLS naming the verification
 * reason and the CA: kin_client_describe_transport); KIN_EINVAL for misuse.
 * No token, key or credential ever appears in a message or a log line.
 *
 * Thread-safe: every function may be called from any thread except the IO
 * thread. Locks: kin_client.mu guards the discovery cache; the exec
 * plugin's credential and the token file's token are guarded by their own
 * providers' mutexes (kubeconfig.h), the rate limiter by its own; none is
 * held while another is taken or while a request runs. */
#ifndef KIN_REST_CLIENT_H
#define KIN_REST_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "call_ctx.h"
#include "clock.h"
#include "io_engine.h"
#include "kubeconfig.h"

typedef struct kin_client kin_client;

typedef struct {
  /* Client-side rate limit of requests (token bucket, as client-go's
   * flowcontrol). 0: defaults of 50 qps, burst 100; negative qps: no
   * limit. Watches count once, when they start. */
  double qps;
  int burst;
  /* Retries of 429 and 5xx (honouring Retry-After, else backoff from
   * 250 ms doubling to 8 s, jittered) for idempotent verbs (GET, LIST, PUT
   * with resourceVersion, DELETE). 0: default of 5; negative: none. */
  int max_retries;
  /* Per-request timeout for non-streaming calls in ms; 0: 60 s. */
  long timeout_ms;
  const char *user_agent; /* NULL: "kinformer/<version>" */
  kin_clock *clock;       /* for the rate limiter and retry waits; NULL: real */
  /* Cap on the body of every answer that is not a watch (GET, LIST, the
   * streamed LIST, discovery, errors), in bytes: the transfer is aborted
   * the moment the body passes it and the call fails with KIN_ETOOBIG, its
   * message naming the URL, the cap and the bytes received. 0:
   * KIN_MAX_RESPONSE_BYTES; negative: no cap. */
  int64_t max_response_bytes;
  /* Nonzero: do not ask for gzip. By default every request carries
   * Accept-Encoding: gzip, as client-go's transport sends it, and
   * kube-apiserver compresses a large answer that is not a watch (a LIST
   * page over 128 KiB); curl decodes it, so callbacks and
   * max_response_bytes see the decoded bytes. kin_rest_config's
   * disable_compression (the kubeconfig's) turns it off as well. */
  int disable_compression;
} kin_client_opts;

#define KIN_MAX_RESPONSE_BYTES ((int64_t)256 << 20) /* 256 MiB */

/* The client's cap on a non-watch body in bytes (0: none). The reflector
 * charges a LIST's parsed items against it too (reflector.h). */
uint64_t kin_client_max_response_bytes(kin_client *c);

/* Creates a client for cfg (deep-copied; the caller keeps cfg) that sends
 * through io (borrowed: it must outlive the client; NULL: the client starts
 * and owns its own engine). opts may be NULL. Returns 0, KIN_ENOMEM,
 * KIN_EINVAL when cfg has no host or an unusable field, or the negated
 * errno (KIN_ENOENT, -EACCES, -EISDIR) when the CA, client certificate,
 * client key or token file cannot be read; err says which, naming the
 * kubeconfig entry (cfg->cluster_origin / user_origin) and the file, e.g.
 * `kubeconfig /p/config: user "u": token file /x/token: No such file or
 * directory`, if errlen > 0. */
int kin_client_new(const kin_rest_config *cfg, kin_io_engine *io, const kin_client_opts *opts,
                   kin_client **out, char *err, size_t errlen);

/* Frees the client (and its engine when it owns one). Requests still
 * running must have completed. NULL is a no-op. */
void kin_client_free(kin_client *c);

/* The engine the client sends through (borrowed). */
kin_io_engine *kin_client_io(kin_client *c);
/* The server URL without a trailing slash (borrowed). */
const char *kin_client_host(kin_client *c);
/* The kubeconfig context's namespace ("default" when unset). */
const char *kin_client_namespace(kin_client *c);

/* ---- results -------------------------------------------------------------- */

/* The outcome of one call; every pointer is owned by the result and freed by
 * kin_result_free. */
typedef struct {
  long code;       /* HTTP status; 0 when no response arrived */
  char *body;      /* response body (NUL-terminated), or NULL */
  size_t body_len;
  char *reason;    /* Status.reason on error ("NotFound", "Conflict", ...) */
  char *message;   /* Status.message on error, the code/content type/excerpt
                      of a body that is not a Status, or the transport
                      error ("GET https://...: TLS: ...") */
  int retries;     /* how many times the request was retried */
  char *content_type; /* the answer's Content-Type, or NULL */
} kin_result;

void kin_result_free(kin_result *r);
/* The Status reason apimachinery gives an HTTP code ("NotFound" for 404,
 * "InternalError" for other 5xx as client-go's NewGenericServerResponse,
 * "Unknown" for codes without one), for answers that carry no Status. */
const char *kin_status_reason_for_code(long code);
/* The HTTP reason phrase of code ("Bad Gateway"), or "" when unknown. */
const char *kin_http_status_text(long code);

/* One line describing an error answer whose body is not a Status, written
 * into buf (always NUL-terminated): the status code and phrase, the
 * content type and a short excerpt (an HTML page's <title>, else its first
 * ~80 printable characters), e.g.
 *   502 Bad Gateway (text/html: "502 Bad Gateway")
 * or client-go's "the server responded with the status code 502 but did
 * not return more information" for an empty body. content_type and body
 * may be NULL. */
void kin_http_describe_body(long code, const char *content_type, const char *body, size_t len,
                            char *buf, size_t n);

/* One line describing a transport failure of a request c sent (res from
 * its engine), without method and URL: for TLS, the verification reason
 * in client-go's words, curl's text and the CA in use, e.g.
 *   TLS: certificate signed by unknown authority (SSL certificate problem:
 *   unable to get local issuer certificate; CA: /path/ca.crt)
 * else curl's text (or the error code's). Written into buf. */
void kin_client_describe_transport(kin_client *c, const kin_io_response *res, char *buf,
                                   size_t n);

/* ---- raw requests (used by the reflector and by the verbs) ---------------- */

typedef struct {
  const char *method;       /* NULL: GET */
  const char *path;         /* absolute path with query, e.g. "/api/v1/pods?limit=500" */
  const char *accept;       /* NULL: application/json */
  const char *content_type; /* for body; NULL: application/json */
  const char *body;
  size_t body_len;
  long timeout_ms;          /* 0: the client's default; negative: none */
  int idempotent;           /* may be retried on 429/5xx */
  kin_io_canceler *cancel;  /* NULL, or lets another thread end the call
                               (KIN_ECANCELED), retries included */
  int unlimited;            /* skips the client-side rate limiter: for the
                               leader elector's few requests, which client-go
                               sends through a client of their own so that
                               busy controllers never delay a renewal */
  /* NULL, or a 2xx body goes to on_body(body_ud, piece, len) on the calling
   * thread as it arrives instead of into the result (kin_io_do_streamed);
   * an error body is still collected and parsed. on_body returns 0, or an
   * error that ends the request. Retries happen only on a status, before
   * any 2xx byte, so on_body never sees two attempts. */
  kin_io_data_cb on_body;
  void *body_ud;
  /* NULL, or the call's context (call_ctx.h), read during the call: its
   * deadline caps timeout_ms (past it: KIN_ETIMEDOUT, nothing sent), its
   * canceler is used when cancel is NULL, a write (any method but GET)
   * is refused with KIN_EFENCED when its fence no longer holds its epoch,
   * and its write observer hears of every write. */
  const kin_call_ctx *ctx;
} kin_client_request;

/* Sends req and waits for the answer, with auth, rate limiting, retries and
 * one re-authentication on 401 when the credential can be refreshed (exec
 * plugin, rotated token file). Fills *out (the caller frees it with
 * kin_result_free) and returns 0, KIN_ESTATUS, KIN_EIO, KIN_ETIMEDOUT, or
 * KIN_ETOOBIG (the body passed max_response_bytes; out->message says
 * "<METHOD> <url>: response body larger than its cap of N bytes (M bytes
 * received)"; not retried). */
int kin_client_do(kin_client *c, const kin_client_request *req, kin_result *out);

/* Options of kin_client_stream; a zeroed struct (or NULL) means the
 * defaults. */
typedef struct {
  const char *accept;    /* Accept header; NULL: the client's (JSON) */
  long timeout_ms;       /* bounds the whole stream; 0: none */
  long low_speed_ms;     /* aborts the stream (KIN_ETIMEDOUT) when no byte
                            arrived for this long; 0: never */
  /* The connection health check while the stream runs (kin_io_request's
   * read_idle_ms and ping_timeout_ms, see io_engine.h): its connection is
   * checked with the smallest settings among the requests on it. 0: the
   * engine's; read_idle_ms negative: this stream asks for no probe. */
  long read_idle_ms;
  long ping_timeout_ms;
} kin_client_stream_opts;

/* Starts a streaming request (a watch) with the client's TLS and auth,
 * after waiting for the rate limiter: body bytes go to on_data and the end
 * to on_done, both on the IO thread (see io_engine.h). o (NULL: defaults)
 * is read during the call only. No retry: the caller (the reflector)
 * decides. On a 401 the caller should call kin_client_auth_failed and
 * start again. Returns 0 and a handle the caller releases with
 * kin_io_handle_release, or a negative error (on_done is then not
 * called). Thread-safe. */
int kin_client_stream(kin_client *c, const char *path, const kin_client_stream_opts *o,
                      kin_io_data_cb on_data, kin_io_done_cb on_done, void *ud,
                      kin_io_handle **h);

/* client-go's rest_client metrics (tools/metrics, as component-base
 * registers them): rest_client_requests_total{code,method,host} counts every
 * attempt kin_client_do makes (retries included; code "<error>" for a
 * transport failure); rest_client_request_duration_seconds{verb,host}
 * observes each attempt's time. Watches (kin_client_stream) are not
 * counted. The client's metrics mutex guards the counts; a snapshot copies
 * them. */
#define KIN_REST_DURATION_BUCKETS 12 /* 0.005 .. 60 s, component-base's */
extern const double kin_rest_duration_bounds[KIN_REST_DURATION_BUCKETS];
#define KIN_REST_METRICS_MAX 64     /* (method, code) pairs kept; more are dropped */
#define KIN_REST_VERBS_MAX 8        /* verbs with a duration histogram */

typedef struct {
  char method[12];
  int code; /* HTTP status, 0 for a transport failure ("<error>") */
  uint64_t count;
} kin_rest_request_count;

typedef struct {
  char verb[12];
  uint64_t count;
  double sum_seconds;
  uint64_t buckets[KIN_REST_DURATION_BUCKETS]; /* cumulative */
} kin_rest_duration;

typedef struct {
  char host[256]; /* host[:port] of the server, the label client-go uses */
  int ncounts;
  kin_rest_request_count counts[KIN_REST_METRICS_MAX];
  int ndurations;
  kin_rest_duration durations[KIN_REST_VERBS_MAX];
} kin_rest_metrics;

/* Copies c's request metrics into *m. Thread-safe. */
void kin_client_get_metrics(kin_client *c, kin_rest_metrics *m);

/* Tells the client its credential was refused (401): the exec plugin runs
 * again and the token file is re-read on the next request. */
void kin_client_auth_failed(kin_client *c);

/* ---- resources and discovery ---------------------------------------------- */

/* A resource as the RESTMapper knows it. Strings are owned by the client's
 * discovery cache and live as long as the client. */
typedef struct {
  const char *group;    /* "" for the core group */
  const char *version;
  const char *resource; /* plural, lower case: "deployments" */
  const char *kind;     /* "Deployment" */
  int namespaced;
} kin_resource;

/* Resolves "[group/]version/resource" ("v1/pods", "apps/v1/deployments")
 * or "[group/]version/Kind" through discovery (cached; refreshed once on a
 * miss, as a deferred RESTMapper). Returns 0, KIN_ENOENT when the server
 * has no such resource, or a request error. */
int kin_client_resource(kin_client *c, const char *name, kin_resource *out);

/* Resolves apiVersion + kind (from an object) the same way. */
int kin_client_resource_for_kind(kin_client *c, const char *api_version, const char *kind,
                                 kin_resource *out);

/* kin_client_resource / _for_kind that also report why a lookup failed:
 * when why is non-NULL it receives (the caller frees it with
 * kin_result_free) the failed discovery request's code, reason and message
 * (a transport error: code 0 and the message), or for KIN_ENOENT a
 * message naming what the server lacks. */
int kin_client_resource_why(kin_client *c, const char *name, kin_resource *out,
                            kin_result *why);
int kin_client_resource_for_kind_why(kin_client *c, const char *api_version, const char *kind,
                                     kin_resource *out, kin_result *why);

/* Drops the discovery cache (the next lookup fetches it again). */
void kin_client_discovery_reset(kin_client *c);

/* Writes the collection path of r in namespace ns (NULL or "" for all
 * namespaces / cluster-scoped) into buf: "/apis/apps/v1/namespaces/x/deployments".
 * Returns the length, or KIN_EINVAL when it does not fit. */
int kin_resource_path(const kin_resource *r, const char *ns, char *buf, size_t n);

/* ---- verbs (the dynamic client) -------------------------------------------- */

typedef struct {
  const char *label_selector;
  const char *field_selector;
  const char *resource_version;
  const char *resource_version_match; /* "NotOlderThan", "Exact" */
  long limit;                         /* 0: none */
  const char *continue_token;
  long timeout_seconds;               /* 0: none */
} kin_list_opts;

typedef enum {
  KIN_PATCH_MERGE = 0,    /* application/merge-patch+json */
  KIN_PATCH_JSON,         /* application/json-patch+json */
  KIN_PATCH_STRATEGIC,    /* application/strategic-merge-patch+json */
  KIN_PATCH_APPLY         /* application/apply-patch+yaml (server-side apply) */
} kin_patch_type;

typedef struct {
  const char *field_manager; /* required for KIN_PATCH_APPLY */
  int force;                 /* server-side apply: take conflicting fields */
  const char *dry_run;       /* "All" or NULL */
  const char *subresource;   /* e.g. "status"; NULL: the object */
  /* The object's metadata.name and resourceVersion when the caller has
   * them already (the Lua client read them while encoding): create and
   * update then do not parse the body again. NULL name: they parse it. */
  const char *name;
  const char *resource_version;
} kin_write_opts;

typedef struct {
  const char *propagation_policy;   /* "Foreground", "Background", "Orphan" or NULL */
  int has_grace_period;             /* send grace_period_seconds (a zeroed
                                       struct must not force-delete) */
  long grace_period_seconds;        /* 0: delete immediately */
  const char *precondition_uid;     /* NULL: none */
  const char *precondition_rv;      /* NULL: none */
  const char *dry_run;
} kin_delete_opts;

/* Each verb fills *out (the object or list JSON on success, the Status on
 * failure; the caller frees it) and returns as kin_client_do. ctx (NULL:
 * none) is the call's context (call_ctx.h), read during the call only: its
 * deadline caps the request's timeout to the time left (a verb called
 * after it fails at once with KIN_ETIMEDOUT), its canceler lets another
 * thread end the request (KIN_ECANCELED), a write (create, update, patch,
 * apply, delete) is refused locally with KIN_EFENCED ("write refused:
 * leadership ended (epoch N)", code 0, nothing sent) when its fence no
 * longer holds its epoch, and its write observer runs after each write
 * (sent or refused) on the calling thread. ns is ignored for
 * cluster-scoped resources; opts may be NULL. */
int kin_client_get(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r, const char *ns,
                   const char *name, kin_result *out);
int kin_client_list(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r, const char *ns,
                    const kin_list_opts *opts, kin_result *out);
int kin_client_create(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                      const char *ns, const char *json, size_t len, const kin_write_opts *opts,
                      kin_result *out);
/* PUT of the whole object; name is read from it. With opts->subresource
 * "status" this is UpdateStatus. */
int kin_client_update(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                      const char *ns, const char *json, size_t len, const kin_write_opts *opts,
                      kin_result *out);
int kin_client_update_status(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                             const char *ns, const char *json, size_t len, kin_result *out);
/* KIN_PATCH_APPLY is server-side apply (the Lua client's apply). */
int kin_client_patch(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                     const char *ns, const char *name, kin_patch_type type, const char *patch,
                     size_t len, const kin_write_opts *opts, kin_result *out);
int kin_client_delete(kin_client *c, const kin_call_ctx *ctx, const kin_resource *r,
                      const char *ns, const char *name, const kin_delete_opts *opts,
                      kin_result *out);

#endif
