/* io_engine.h -- all HTTP of the process: one IO thread runs a libuv loop
 * that drives one libcurl multi handle (curl_multi_socket_action, one
 * uv_poll per socket, one uv_timer). Requests come from any thread; their
 * callbacks run on the IO thread. One multi handle means one connection
 * pool: keep-alive reuse, and HTTP/2 multiplexing (every watch on one
 * connection) when the server negotiates h2 over TLS, HTTP/1.1 otherwise.
 *
 * Thread model (libuv style):
 *   kin_io_engine_new, kin_io_engine_free: any thread, not concurrently with
 *     other calls on the same engine; free must not run on the IO thread.
 *   kin_io_submit, kin_io_cancel, kin_io_do: thread-safe, any thread;
 *     kin_io_do refuses (KIN_EBUSY) on the IO thread, where it would deadlock.
 *   kin_io_handle_release, kin_io_response_free, kin_io_resume: thread-safe.
 *   on_data / on_done callbacks: always on the IO thread; they must not
 *     block, may call kin_io_submit / kin_io_cancel.
 * Locks: kin_io_engine.mu guards the submit queue, the cancel and resume
 * lists, the closing flag, each handle's state and cancel and resume
 * flags, the health settings
 * (read_idle_ms, ping_timeout_ms) and the health counters. Everything curl
 * and libuv (multi, easy handles, polls, timers, running list, response
 * buffers, the per-socket health state) is touched only by the IO thread
 * and needs no lock.
 *
 * Connection health (client-go's HTTP/2 ReadIdleTimeout + PingTimeout):
 * libcurl 7.88 cannot send an HTTP/2 PING on a multi handle's connection,
 * so the engine does the equivalent round trip. It notes, per socket, when
 * a byte last arrived. When an HTTP/2 connection that carries at least one
 * request in flight (a watch, typically) has received nothing for
 * read_idle_ms, the engine sends a small probe (GET /version with the
 * same TLS settings and headers as a request on it, CURLOPT_PIPEWAIT, so
 * it is multiplexed onto that connection). A byte within ping_timeout_ms
 * proves the connection alive. Otherwise the connection is dead: the
 * engine shuts its socket down, curl fails every stream on it at once
 * (their on_done run with KIN_EIO), discards the connection, and later
 * requests open a new one. A probe that curl put on another connection
 * proves nothing and is dropped. Over HTTP/1.1 no probe is sent (it could
 * not share the connection): the per-request low_speed_ms and the
 * reflector's watch idle timeout apply there.
 *
 * Both timeouts may also be set per request (kin_io_request.read_idle_ms,
 * .ping_timeout_ms): each connection is checked with the smallest of each
 * among the requests on it (a request that sets none counts with the
 * engine's), so a watch that asks for a tighter check gets it and every
 * other stream on its connection benefits. The check runs every eighth of
 * the smallest setting in effect, clamped to 20 ms .. 250 ms: a dead
 * connection is closed within read-idle + ping timeout + two periods. */
#ifndef KIN_IO_ENGINE_H
#define KIN_IO_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "kin.h"

typedef struct kin_io_engine kin_io_engine;
typedef struct kin_io_handle kin_io_handle;

#define KIN_IO_ERROR_SIZE 256 /* == CURL_ERROR_SIZE */

/* The outcome of one request. err: 0 when an HTTP response was received
 * (whatever its status code), KIN_ECANCELED when cancelled (kin_io_cancel,
 * engine free, or on_data returning non-zero), KIN_ETIMEDOUT when
 * timeout_ms ran out, KIN_ETOOBIG when the body passed max_body, KIN_EIO for any other transport failure (connection
 * refused, TLS verification, ...; error says which). */
typedef struct {
  int err;
  long code;              /* HTTP status; 0 when no response */
  int curl_code;          /* CURLcode, 0 on success */
  char error[KIN_IO_ERROR_SIZE]; /* curl's text for a failure, "" otherwise */
  char *retry_after;      /* Retry-After header value or NULL */
  char *content_type;     /* Content-Type header value or NULL */
  char *body;             /* NUL-terminated body when the request had no
                             on_data callback; NULL otherwise */
  size_t body_len;
  uint64_t received;      /* body bytes received (all of them, also those
                             handed to on_data) */
  uint64_t max_body;      /* the request's max_body, for messages */
} kin_io_response;

/* 1 when res failed because the server refused the connection (nothing
 * listens there: a reflector backs off quietly), else 0. */
int kin_io_response_refused(const kin_io_response *res);

/* Called on the IO thread with each chunk of the body as it arrives (chunk
 * boundaries are arbitrary). Return 0 to continue, KIN_IO_PAUSE to refuse
 * this chunk for now (the transfer pauses; after kin_io_resume the same
 * bytes are offered again), any other non-zero value to abort the transfer
 * (completed with KIN_ECANCELED). */
typedef int (*kin_io_data_cb)(void *ud, const char *p, size_t n);

#define KIN_IO_PAUSE 0x7061 /* on_data: pause (backpressure), see kin_io_resume */

/* Called once on the IO thread when the request ends. res is the engine's:
 * the callback may steal its pointers (set them to NULL); whatever is left
 * is freed after the call returns. */
typedef void (*kin_io_done_cb)(void *ud, kin_io_response *res);

typedef struct {
  const char *ca_file;     /* PEM CA bundle file */
  const char *ca_data;     /* or PEM CA bundle in memory */
  size_t ca_data_len;
  const char *cert_file;   /* client certificate (PEM) */
  const char *cert_data;
  size_t cert_data_len;
  const char *key_file;    /* client key (PEM) */
  const char *key_data;
  size_t key_data_len;
  int insecure;            /* skip peer and host verification */
  const char *server_name; /* name to verify the server certificate against
                              (kubeconfig tls-server-name) instead of the
                              URL's host */
} kin_io_tls;

typedef struct {
  const char *method;           /* NULL: "GET" */
  const char *url;
  const char *const *headers;   /* NULL-terminated "Name: value" lines or NULL */
  const char *body;             /* request body or NULL */
  size_t body_len;
  long timeout_ms;              /* whole-transfer limit; 0: none */
  long low_speed_ms;            /* abort when no byte arrives for this long
                                   (a dead watch); 0: never */
  const char *proxy_url;        /* kubeconfig proxy-url (http, https, socks5);
                                   NULL: curl's environment (HTTPS_PROXY, ...) */
  int accept_gzip;              /* send Accept-Encoding: gzip; a gzip body is
                                   decoded before on_data, res->body and
                                   max_body see it */
  kin_io_tls tls;
  /* Connection health while this request runs (see the header comment):
   * the connection it is on is checked with the smallest read_idle_ms and
   * the smallest ping_timeout_ms among the requests on it. read_idle_ms
   * 0: the engine's; negative: this request asks for no probe (others on
   * the connection may). ping_timeout_ms <= 0: the engine's. */
  long read_idle_ms;
  long ping_timeout_ms;
  /* The most body bytes this request may receive (collected or handed to
   * on_data alike); 0: no cap. The transfer is aborted the moment the body
   * passes it (nothing more is read or buffered) and completes with
   * KIN_ETOOBIG; res->body_len then holds what was kept and res->received
   * how many bytes came. Watches leave it 0 (the reflector caps each
   * event). */
  uint64_t max_body;
  /* NULL, or asked on the IO thread right before the request's bytes go
   * out (its connection is ready: curl's PREREQFUNCTION, so after any wait
   * in the queue or for a connection): nonzero refuses it, and the request
   * completes with KIN_EFENCED and nothing sent. It must be quick and must
   * not block (an atomic read: a write's leadership fence). */
  int (*may_send)(void *ud);
  void *may_send_ud;
  kin_io_data_cb on_data;       /* NULL: the body is collected into res->body */
  int on_data_2xx_only;         /* on_data gets a 2xx body only; any other
                                   (an error Status) is collected */
  kin_io_done_cb on_done;       /* may be NULL */
  void *data;                   /* passed to both callbacks */
} kin_io_request;

#define KIN_IO_READ_IDLE_MS 30000L    /* client-go's http2 ReadIdleTimeout */
#define KIN_IO_PING_TIMEOUT_MS 15000L  /* client-go's http2 PingTimeout */

typedef struct {
  /* An HTTP/2 connection with requests in flight that received nothing for
   * this long is probed. 0: KIN_IO_READ_IDLE_MS; negative: never probe. */
  long read_idle_ms;
  /* How long a probe may wait for any byte before the connection is
   * declared dead. 0: KIN_IO_PING_TIMEOUT_MS. */
  long ping_timeout_ms;
} kin_io_engine_opts;

/* Starts the IO thread. Returns 0 and the engine in *out (the caller frees
 * it with kin_io_engine_free), KIN_ENOMEM, or KIN_EINVAL when curl or libuv
 * cannot be initialised; nothing is leaked on failure. */
int kin_io_engine_new(kin_io_engine **out);

/* kin_io_engine_new with options (NULL: the defaults). Returns as
 * kin_io_engine_new, or KIN_EINVAL for a negative ping_timeout_ms. */
int kin_io_engine_new_opts(const kin_io_engine_opts *opts, kin_io_engine **out);

/* Changes the health settings of a running engine (same meaning as in
 * kin_io_engine_opts); the IO thread applies them at its next check.
 * Thread-safe (under mu). Returns 0 or KIN_EINVAL (negative ping timeout). */
int kin_io_engine_set_health(kin_io_engine *e, long read_idle_ms, long ping_timeout_ms);

/* Counters of the connection health check, for tests and logs. */
typedef struct {
  uint64_t probes;              /* probes sent */
  uint64_t probes_inconclusive; /* probes curl put on another connection */
  uint64_t dead_connections;    /* connections shut down as dead */
  uint64_t failed_over;         /* requests in flight on those connections */
  /* At the last check: the smallest read-idle (-1: none, no probing) and
   * ping timeout in effect (the engine's and those of every request in
   * flight, see kin_io_request), and the check's period that follows. */
  long read_idle_ms, ping_timeout_ms, interval_ms;
} kin_io_health_stats;

/* Copies the counters (under mu). Thread-safe. */
void kin_io_engine_health_stats(kin_io_engine *e, kin_io_health_stats *st);

/* Cancels every queued and running request (their on_done runs with
 * KIN_ECANCELED), stops the loop, joins the IO thread and frees everything.
 * Handles still held by callers stay valid for kin_io_handle_release only.
 * NULL is a no-op. */
void kin_io_engine_free(kin_io_engine *e);

/* Queues req and returns at once; every string and buffer of req is copied,
 * so the caller keeps ownership of req. When h is non-NULL it receives a
 * reference to the request that the caller must drop with
 * kin_io_handle_release. Returns 0, KIN_EINVAL (no url), KIN_ENOMEM, or
 * KIN_ECLOSED when the engine is being freed; on_done is not called on
 * failure. */
int kin_io_submit(kin_io_engine *e, const kin_io_request *req, kin_io_handle **h);

/* Asks for the request to end: it completes with KIN_ECANCELED soon after
 * (on the IO thread) unless it already completed, in which case this is a
 * no-op. Must not be called after its engine was freed. */
void kin_io_cancel(kin_io_handle *h);

/* Resumes a transfer whose on_data returned KIN_IO_PAUSE: the IO thread
 * unpauses it soon after and offers the refused chunk again. A no-op when
 * the request is not paused or already completed. Thread-safe; must not be
 * called after its engine was freed. */
void kin_io_resume(kin_io_handle *h);

/* Drops a reference returned by kin_io_submit. NULL is a no-op. */
void kin_io_handle_release(kin_io_handle *h);

/* Runs req and waits for it (req->on_data, on_done and data are ignored:
 * the body is collected into res->body). Fills *res, which the
 * caller frees with kin_io_response_free, and returns res->err (or the
 * kin_io_submit error, with *res zeroed), or KIN_EBUSY on the IO thread. */
int kin_io_do(kin_io_engine *e, const kin_io_request *req, kin_io_response *res);

/* Lets another thread abort a kin_io_do_cancelable in progress (a
 * reflector stopping during a LIST). Initialise with kin_io_canceler_init;
 * mu guards fired and h. Once fired it stays fired. */
typedef struct kin_io_canceler {
  pthread_mutex_t mu;
  int fired;
  kin_io_handle *h; /* the request in flight, or NULL */
} kin_io_canceler;

int kin_io_canceler_init(kin_io_canceler *cx);
void kin_io_canceler_destroy(kin_io_canceler *cx);
/* Cancels the request in flight, if any, and every later one. Any thread. */
void kin_io_canceler_fire(kin_io_canceler *cx);
int kin_io_canceler_fired(kin_io_canceler *cx);

/* kin_io_do that kin_io_canceler_fire can end early (KIN_ECANCELED); cx
 * may be NULL. */
int kin_io_do_cancelable(kin_io_engine *e, const kin_io_request *req, kin_io_response *res,
                         kin_io_canceler *cx);

/* kin_io_do_cancelable whose 2xx body is not collected but handed to
 * on_body in pieces, on the calling thread, as it arrives (a LIST of tens
 * of MB is parsed while it downloads instead of being held whole). The IO
 * thread keeps at most about 1 MiB waiting and pauses the transfer beyond
 * that, so a slow consumer holds the server back, not memory. A body with
 * another status is collected into res->body as usual. on_body returns 0
 * to go on, or an error that ends the request and is returned. cx may be
 * NULL. */
int kin_io_do_streamed(kin_io_engine *e, const kin_io_request *req, kin_io_response *res,
                       kin_io_canceler *cx, kin_io_data_cb on_body, void *ud);

/* One request on the calling thread, without an engine or connection
 * reuse, for tools that read one URL once: method, url, headers, body,
 * timeout_ms, max_body and the TLS file fields (ca_file, cert_file,
 * key_file, insecure) of req are used, the rest ignored. Fills *res (the
 * caller frees it with kin_io_response_free) and returns res->err: 0 when
 * an HTTP answer came, KIN_ETIMEDOUT, KIN_ETOOBIG, KIN_ENOMEM, KIN_EIO
 * (res->error says why; kin_io_response_refused tells a refused
 * connection). Thread-safe. */
int kin_io_fetch(const kin_io_request *req, kin_io_response *res);

/* Frees the owned fields of res (not res itself) and zeroes it. */
void kin_io_response_free(kin_io_response *res);

#endif
