/* io_engine_int.h -- internal: the IO engine's state, shared by
 * io_engine.c (handles, curl and libuv callbacks, starting, completing and
 * cancelling requests, the public API) and io_health.c (the connection
 * health timer and its probes). Locks as in io_engine.h: kin_io_engine.mu
 * guards what is marked so; the rest is touched by the IO thread only. */
#ifndef KIN_IO_ENGINE_INT_H
#define KIN_IO_ENGINE_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "io_engine.h"

enum { H_QUEUED, H_DONE };

typedef struct {
  char *p;
  size_t len;
} io_blob;

struct kin_io_handle {
  atomic_int refs; /* one for the engine until completion, one per caller handle,
                      one while on the cancel list */
  kin_io_engine *e;

  /* Immutable after kin_io_submit (owned copies of the request). */
  char *method, *url, *body;
  size_t body_len;
  int has_body;
  struct curl_slist *headers;
  long timeout_ms, low_speed_ms;
  long read_idle_ms, ping_timeout_ms; /* as in kin_io_request */
  char *proxy_url;
  int accept_gzip; /* kin_io_request.accept_gzip */
  char *ca_file, *cert_file, *key_file, *server_name;
  io_blob ca, cert, key;
  int insecure;
  kin_io_data_cb on_data;
  int on_data_2xx_only;
  kin_io_done_cb on_done;
  void *ud;

  /* Guarded by e->mu. */
  int state;
  int cancel_requested;
  int resume_requested;
  kin_io_handle *qnext; /* submit queue */
  kin_io_handle *cnext; /* cancel list */
  kin_io_handle *pnext; /* resume list */

  /* IO thread only. */
  CURL *easy;
  struct curl_slist *connect_to;
  char *eff_url;
  kin_io_handle *rprev, *rnext; /* running list */
  int aborted;                  /* on_data asked to stop */
  int probe;                    /* a connection health probe (internal) */
  curl_socket_t probe_fd;       /* probe: the socket it ended on, or CURL_SOCKET_BAD */
  int nomem;                    /* the body buffer could not grow */
  int toobig;                   /* the body passed max_body */
  uint64_t max_body;            /* as in kin_io_request (immutable) */
  int (*may_send)(void *ud);    /* as in kin_io_request (immutable) */
  void *may_send_ud;
  int refused;                  /* may_send refused it: nothing was sent */
  size_t body_cap;
  kin_io_response res;
};

struct kin_io_engine {
  pthread_t thread;
  uv_loop_t loop;
  uv_async_t async;
  uv_timer_t timer;

  pthread_mutex_t mu;
  /* Guarded by mu. */
  kin_io_handle *qhead, *qtail;
  kin_io_handle *chead;
  kin_io_handle *phead;         /* resume list (kin_io_resume) */
  int closing;

  /* Guarded by mu: health settings (ms; read_idle < 0: off) and counters. */
  long read_idle_ms, ping_timeout_ms;
  kin_io_health_stats hst;

  /* IO thread only (and the creating thread before the IO thread starts). */
  CURLM *multi;
  int multi_closing;
  kin_io_handle *running;
  uv_timer_t health;            /* periodic connection health check */
  struct io_sock *socks;        /* every socket curl asked us to watch */
  /* Peers ("ip:port") that answered a request over HTTP/2: the connection
   * health check probes connections to these. Known per peer, not per
   * request, because a request learns its version only from its response
   * headers: a watch sent on a connection that stalled before they came
   * would otherwise never be probed. A ring of the last KIN__IO_H2_PEERS. */
#define KIN__IO_H2_PEERS 16
  char h2_peers[KIN__IO_H2_PEERS][80];
  int h2_next;
};

/* One per socket curl asks us to watch; freed by the uv_close callback.
 * IO thread only. */
typedef struct io_sock {
  uv_poll_t poll;
  curl_socket_t fd;
  kin_io_engine *e;
  struct io_sock *prev, *next;  /* e->socks, while curl watches the socket */
  uint64_t last_rx_ms;          /* loop time the socket was last readable */
  kin_io_handle *probe;         /* health probe in flight (a reference) or NULL */
  uint64_t probe_at_ms;         /* when it was sent */
  int probe_here;               /* curl put it on this socket */
  int streams, h2;              /* at the last check: requests on it; its peer speaks HTTP/2 */
  struct kin_io_handle *model;  /* at the last check: a request on it */
  long idle_ms, ping_ms;        /* at the last check: the settings that apply
                                   (kin__io_health_fold over its requests) */
  char host[256];               /* "host:port" of the probe, for the log */
  int addr_known;               /* the four below are set */
  char lip[64], rip[64];        /* local and peer address (numeric) */
  long lport, rport;
} io_sock;

/* ---- shared by io_engine.c and io_health.c ------------------------------- */

/* io_engine.c: a new handle holding copies of everything req points to
 * (one reference), or NULL. Any thread. */
kin_io_handle *kin__io_handle_new(kin_io_engine *e, const kin_io_request *req);
/* io_engine.c, IO thread only: creates h's easy handle and adds it to the multi; on
 * failure h is finished with the error. */
void kin__io_start(kin_io_engine *e, kin_io_handle *h);
/* io_engine.c, IO thread only: finishes every transfer curl reports
 * done. Never from inside a curl callback. */
void kin__io_check_multi_info(kin_io_engine *e);

/* io_health.c, IO thread only: the socket of the connection transfer c
 * uses, or CURL_SOCKET_BAD. */
curl_socket_t kin__io_transfer_fd(kin_io_engine *e, CURL *c);
/* io_health.c, IO thread only: if transfer c got an HTTP/2 response,
 * remembers its peer as one that speaks HTTP/2 (see h2_peers). */
void kin__io_note_version(kin_io_engine *e, CURL *c);
/* io_health.c: folds request h's health settings into *idle_ms and
 * *ping_ms, which start at -1 and 0 ("nothing yet"): afterwards they hold
 * the smallest read-idle (-1: no request wants a probe) and the smallest
 * ping timeout of the requests folded so far, a request's unset (0) value
 * counting as the engine's eng_idle_ms / eng_ping_ms. Pure: reads h's
 * immutable settings only, so any thread may call it on any handle. */
void kin__io_health_fold(const kin_io_handle *h, long eng_idle_ms, long eng_ping_ms,
                         long *idle_ms, long *ping_ms);
/* io_health.c: the period of the health check (ms) for these smallest
 * settings (idle_ms <= 0: none): an eighth of the smaller, clamped to
 * 20 .. 250 ms. Pure. */
uint64_t kin__io_health_interval(long idle_ms, long ping_ms);
/* io_health.c: the health timer's callback (e->health); re-arms itself. */
void kin__io_on_health(uv_timer_t *t);

#endif
