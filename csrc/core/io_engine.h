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
 *   kin_io_handle_release, kin_io_response_free: thread-safe.
 *   on_data / on_done callbacks: always on the IO thread; they must not
 *     block, may call kin_io_submit / kin_io_cancel.
 * Locks: kin_io_engine.mu guards the submit queue, the cancel list, the
 * closing flag and each handle's state and cancel flag. Everything curl
 * and libuv (multi, easy handles, polls, timer, running list, response
 * buffers) is touched only by the IO thread and needs no lock. */
#ifndef KIN_IO_ENGINE_H
#define KIN_IO_ENGINE_H

#include <pthread.h>
#include <stddef.h>

#include "kin.h"

typedef struct kin_io_engine kin_io_engine;
typedef struct kin_io_handle kin_io_handle;

#define KIN_IO_ERROR_SIZE 256 /* == CURL_ERROR_SIZE */

/* The outcome of one request. err: 0 when an HTTP response was received
 * (whatever its status code), KIN_ECANCELED when cancelled (kin_io_cancel,
 * engine free, or on_data returning non-zero), KIN_ETIMEDOUT when
 * timeout_ms ran out, KIN_EIO for any other transport failure (connection
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
} kin_io_response;

/* Called on the IO thread with each chunk of the body as it arrives (chunk
 * boundaries are arbitrary). Return 0 to continue, non-zero to abort the
 * transfer (completed with KIN_ECANCELED). */
typedef int (*kin_io_data_cb)(void *ud, const char *p, size_t n);

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
  kin_io_tls tls;
  kin_io_data_cb on_data;       /* NULL: the body is collected into res->body */
  kin_io_done_cb on_done;       /* may be NULL */
  void *data;                   /* passed to both callbacks */
} kin_io_request;

/* Starts the IO thread. Returns 0 and the engine in *out (the caller frees
 * it with kin_io_engine_free), KIN_ENOMEM, or KIN_EINVAL when curl or libuv
 * cannot be initialised; nothing is leaked on failure. */
int kin_io_engine_new(kin_io_engine **out);

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
typedef struct {
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

/* Frees the owned fields of res (not res itself) and zeroes it. */
void kin_io_response_free(kin_io_response *res);

#endif
