/* io_engine.c -- the IO thread: a libuv loop driving one libcurl multi
 * handle through curl_multi_socket_action (see io_engine.h for the thread
 * model and the lock discipline): handles, the curl and libuv callbacks,
 * starting, completing and cancelling requests, and the public API. The
 * connection health check is in io_health.c; the state both share is in
 * io_engine_int.h. */
#include "io_engine_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "log.h"

_Static_assert(KIN_IO_ERROR_SIZE >= CURL_ERROR_SIZE, "error buffer too small for curl");

/* ---- handles ------------------------------------------------------------- */

static void handle_free(kin_io_handle *h) {
  free(h->method);
  free(h->url);
  free(h->body);
  curl_slist_free_all(h->headers);
  free(h->ca_file);
  free(h->cert_file);
  free(h->key_file);
  free(h->server_name);
  free(h->proxy_url);
  free(h->ca.p);
  free(h->cert.p);
  free(h->key.p);
  curl_slist_free_all(h->connect_to);
  free(h->eff_url);
  kin_io_response_free(&h->res);
  free(h);
}

void kin_io_handle_release(kin_io_handle *h) {
  if (h && atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) == 1) handle_free(h);
}

/* Copies s (NULL stays NULL) into *out; returns 0 or KIN_ENOMEM. */
static int dup_str(char **out, const char *s) {
  *out = NULL;
  if (!s) return 0;
  *out = strdup(s);
  return *out ? 0 : KIN_ENOMEM;
}

/* Copies n bytes of p (NULL: none) into b; returns 0 or KIN_ENOMEM. */
static int dup_blob(io_blob *b, const char *p, size_t n) {
  b->p = NULL;
  b->len = 0;
  if (!p) return 0;
  b->p = malloc(n ? n : 1);
  if (!b->p) return KIN_ENOMEM;
  memcpy(b->p, p, n);
  b->len = n;
  return 0;
}

/* A new handle holding copies of everything req points to, or NULL. */
kin_io_handle *kin__io_handle_new(kin_io_engine *e, const kin_io_request *req) {
  kin_io_handle *h = calloc(1, sizeof(*h));
  if (!h) return NULL;
  atomic_init(&h->refs, 1);
  h->e = e;
  int rc = 0;
  rc |= dup_str(&h->method, req->method ? req->method : "GET");
  rc |= dup_str(&h->url, req->url);
  rc |= dup_str(&h->ca_file, req->tls.ca_file);
  rc |= dup_str(&h->cert_file, req->tls.cert_file);
  rc |= dup_str(&h->key_file, req->tls.key_file);
  rc |= dup_str(&h->server_name, req->tls.server_name);
  rc |= dup_str(&h->proxy_url, req->proxy_url);
  h->accept_gzip = req->accept_gzip;
  rc |= dup_blob(&h->ca, req->tls.ca_data, req->tls.ca_data_len);
  rc |= dup_blob(&h->cert, req->tls.cert_data, req->tls.cert_data_len);
  rc |= dup_blob(&h->key, req->tls.key_data, req->tls.key_data_len);
  if (req->body || !strcmp(h->method ? h->method : "", "POST")) {
    h->has_body = 1;
    h->body = malloc(req->body_len + 1);
    if (!h->body) rc = -1;
    else {
      if (req->body_len) memcpy(h->body, req->body, req->body_len);
      h->body[req->body_len] = 0;
      h->body_len = req->body_len;
    }
  }
  /* Expect: 100-continue would stall large bodies for a second. */
  struct curl_slist *l = curl_slist_append(NULL, "Expect:");
  if (!l) rc = -1;
  for (const char *const *p = req->headers; l && p && *p; p++) {
    struct curl_slist *n = curl_slist_append(l, *p);
    if (!n) {
      rc = -1;
      break;
    }
    l = n;
  }
  h->headers = l;
  if (rc) {
    handle_free(h);
    return NULL;
  }
  h->timeout_ms = req->timeout_ms;
  h->low_speed_ms = req->low_speed_ms;
  h->read_idle_ms = req->read_idle_ms;
  h->ping_timeout_ms = req->ping_timeout_ms > 0 ? req->ping_timeout_ms : 0;
  h->insecure = req->tls.insecure;
  h->max_body = req->max_body;
  h->may_send = req->may_send;
  h->may_send_ud = req->may_send_ud;
  h->res.max_body = req->max_body;
  h->on_data = req->on_data;
  h->on_data_2xx_only = req->on_data_2xx_only;
  h->on_done = req->on_done;
  h->ud = req->data;
  return h;
}

/* ---- IO thread: completion ----------------------------------------------- */

/* Ends h: detaches its easy handle, runs on_done, drops the engine's
 * reference. IO thread only, never from inside a curl callback. */
static void finish(kin_io_engine *e, kin_io_handle *h, int err) {
  if (h->probe && h->easy) h->probe_fd = kin__io_transfer_fd(e, h->easy);
  if (h->easy) {
    kin__io_note_version(e, h->easy);
    curl_multi_remove_handle(e->multi, h->easy);
    curl_easy_cleanup(h->easy);
    h->easy = NULL;
    if (h->rprev) h->rprev->rnext = h->rnext;
    else e->running = h->rnext;
    if (h->rnext) h->rnext->rprev = h->rprev;
    h->rprev = h->rnext = NULL;
  }
  h->res.err = err;
  if (err == KIN_ECANCELED && !h->res.error[0])
    snprintf(h->res.error, sizeof(h->res.error), "request cancelled");
  if (h->on_done) h->on_done(h->ud, &h->res);
  kin_io_response_free(&h->res);
  pthread_mutex_lock(&e->mu);
  h->state = H_DONE;
  pthread_mutex_unlock(&e->mu);
  kin_io_handle_release(h);
}

void kin__io_check_multi_info(kin_io_engine *e) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(e->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL *c = m->easy_handle;
    CURLcode rc = m->data.result; /* m dies with curl_multi_remove_handle */
    kin_io_handle *h = NULL;
    curl_easy_getinfo(c, CURLINFO_PRIVATE, (char **)&h);
    if (!h) continue;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->res.code);
    h->res.curl_code = (int)rc;
    int err = 0;
    if (h->nomem) err = KIN_ENOMEM;
    else if (h->toobig) err = KIN_ETOOBIG;
    else if (h->refused) err = KIN_EFENCED;
    else if (h->aborted) err = KIN_ECANCELED;
    else if (rc == CURLE_OPERATION_TIMEDOUT) err = KIN_ETIMEDOUT;
    else if (rc != CURLE_OK) err = KIN_EIO;
    if (rc != CURLE_OK && !h->res.error[0])
      snprintf(h->res.error, sizeof(h->res.error), "%s", curl_easy_strerror(rc));
    if (rc == CURLE_OK) h->res.error[0] = 0;
    if (h->refused)
      snprintf(h->res.error, sizeof(h->res.error), "write refused before sending: leadership ended");
    if (h->toobig) /* curl's "Failure writing output" says less */
      snprintf(h->res.error, sizeof(h->res.error),
               "response body larger than its cap of %llu bytes (%llu bytes received)",
               (unsigned long long)h->max_body, (unsigned long long)h->res.received);
    finish(e, h, err);
  }
}

/* ---- IO thread: curl callbacks ------------------------------------------- */

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud) {
  kin_io_handle *h = ud;
  size_t n = size * nmemb;
  long code = 0;
  if (h->max_body && h->res.received + n > h->max_body) {
    /* Past the cap: stop here, before keeping or handing on a byte of it. */
    h->res.received += n;
    h->toobig = 1;
    return n ? 0 : 1;
  }
  if (h->on_data && h->on_data_2xx_only)
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &code);
  if (h->on_data && (!h->on_data_2xx_only || (code >= 200 && code < 300))) {
    int rc = h->on_data(h->ud, p, n);
    if (rc == KIN_IO_PAUSE) return CURL_WRITEFUNC_PAUSE; /* curl keeps the chunk */
    if (rc) {
      h->aborted = 1;
      return n ? 0 : 1; /* any other count aborts the transfer */
    }
    h->res.received += n;
    return n;
  }
  if (h->res.body_len + n + 1 > h->body_cap) {
    size_t cap = h->body_cap ? h->body_cap * 2 : 4096;
    while (cap < h->res.body_len + n + 1) cap *= 2;
    char *nb = realloc(h->res.body, cap);
    if (!nb) {
      h->nomem = 1;
      return n ? 0 : 1;
    }
    h->res.body = nb;
    h->body_cap = cap;
  }
  memcpy(h->res.body + h->res.body_len, p, n);
  h->res.body_len += n;
  h->res.received += n;
  h->res.body[h->res.body_len] = 0;
  return n;
}

/* Keeps the value of header name (len nl) from line p (n bytes) in *slot. */
static void capture_header(char **slot, const char *name, size_t nl, const char *p, size_t n) {
  if (n <= nl || strncasecmp(p, name, nl)) return;
  const char *v = p + nl;
  size_t vl = n - nl;
  while (vl && (*v == ' ' || *v == '\t')) v++, vl--;
  while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' ')) vl--;
  char *s = strndup(v, vl);
  if (!s) return; /* a missing header is not worth failing the request */
  free(*slot);
  *slot = s;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud) {
  kin_io_handle *h = ud;
  size_t n = size * nmemb;
  if (n >= 5 && !strncmp(p, "HTTP/", 5)) {
    /* A new response (after a 100 or a redirect): forget the previous one's. */
    free(h->res.retry_after);
    free(h->res.content_type);
    h->res.retry_after = h->res.content_type = NULL;
    return n;
  }
  capture_header(&h->res.retry_after, "Retry-After:", 12, p, n);
  capture_header(&h->res.content_type, "Content-Type:", 13, p, n);
  return n;
}

static void on_poll(uv_poll_t *p, int status, int events) {
  io_sock *s = p->data;
  kin_io_engine *e = s->e;
  int flags = 0;
  if (status < 0) flags = CURL_CSELECT_ERR;
  else {
    if (events & UV_READABLE) {
      flags |= CURL_CSELECT_IN;
      s->last_rx_ms = uv_now(&e->loop);
    }
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  }
  int running;
  curl_multi_socket_action(e->multi, s->fd, flags, &running);
  kin__io_check_multi_info(e);
}

static void on_sock_closed(uv_handle_t *h) {
  io_sock *s = h->data;
  kin_io_handle_release(s->probe);
  free(s);
}

static void sock_unlink(kin_io_engine *e, io_sock *s) {
  if (s->prev) s->prev->next = s->next;
  else if (e->socks == s) e->socks = s->next;
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  kin_io_engine *e = userp;
  io_sock *s = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (s) {
      sock_unlink(e, s);
      uv_poll_stop(&s->poll);
      uv_close((uv_handle_t *)&s->poll, on_sock_closed);
      if (!e->multi_closing) curl_multi_assign(e->multi, fd, NULL);
    }
    return 0;
  }
  if (!s) {
    s = calloc(1, sizeof(*s));
    if (!s) return -1;
    if (uv_poll_init_socket(&e->loop, &s->poll, fd)) {
      free(s);
      return -1;
    }
    s->poll.data = s;
    s->fd = fd;
    s->e = e;
    s->last_rx_ms = uv_now(&e->loop);
    s->next = e->socks;
    if (e->socks) e->socks->prev = s;
    e->socks = s;
    curl_multi_assign(e->multi, fd, s);
  }
  int ev = 0;
  if (what & CURL_POLL_IN) ev |= UV_READABLE;
  if (what & CURL_POLL_OUT) ev |= UV_WRITABLE;
  uv_poll_start(&s->poll, ev, on_poll);
  return 0;
}

static void on_timeout(uv_timer_t *t) {
  kin_io_engine *e = t->data;
  int running;
  curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  kin__io_check_multi_info(e);
}

/* curl's timer: -1 stops it; 0 means "as soon as possible", which must
 * still go through the loop since curl may not be re-entered from here. */
static int on_timer(CURLM *m, long timeout_ms, void *userp) {
  kin_io_engine *e = userp;
  if (timeout_ms < 0) uv_timer_stop(&e->timer);
  else uv_timer_start(&e->timer, on_timeout, (uint64_t)timeout_ms, 0);
  return 0;
}

/* ---- IO thread: starting and cancelling ---------------------------------- */

/* Points h at tls.server_name for verification while still connecting to
 * the URL's host (kubeconfig tls-server-name). Returns 0 or KIN_EINVAL. */
static int apply_server_name(kin_io_handle *h) {
  int rc = KIN_EINVAL;
  char *host = NULL, *port = NULL, *url = NULL;
  CURLU *u = curl_url();
  if (!u) return KIN_ENOMEM;
  if (curl_url_set(u, CURLUPART_URL, h->url, 0) ||
      curl_url_get(u, CURLUPART_HOST, &host, 0) ||
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ||
      curl_url_set(u, CURLUPART_HOST, h->server_name, 0) || curl_url_get(u, CURLUPART_URL, &url, 0))
    goto out;
  size_t n = strlen(h->server_name) + strlen(host) + 2 * strlen(port) + 4;
  char *line = malloc(n);
  if (!line) goto out;
  snprintf(line, n, "%s:%s:%s:%s", h->server_name, port, host, port);
  h->connect_to = curl_slist_append(NULL, line);
  free(line);
  h->eff_url = strdup(url);
  rc = h->connect_to && h->eff_url ? 0 : KIN_ENOMEM;
out:
  curl_free(host);
  curl_free(port);
  curl_free(url);
  curl_url_cleanup(u);
  return rc;
}

static void set_blob(CURL *c, CURLoption opt, io_blob *b) {
  struct curl_blob cb = {.data = b->p, .len = b->len, .flags = CURL_BLOB_COPY};
  curl_easy_setopt(c, opt, &cb);
}

/* curl's PREREQFUNCTION: the last moment before the request goes out. */
static int on_prereq(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port) {
  kin_io_handle *h = ud;
  if (h->may_send && h->may_send(h->may_send_ud)) {
    h->refused = 1;
    return CURL_PREREQFUNC_ABORT;
  }
  return CURL_PREREQFUNC_OK;
}

/* Creates h's easy handle and adds it to the multi; on failure h is
 * finished with the error. */
void kin__io_start(kin_io_engine *e, kin_io_handle *h) {
  int rc = 0;
  if (h->server_name && (rc = apply_server_name(h))) goto fail;
  CURL *c = curl_easy_init();
  if (!c) {
    rc = KIN_ENOMEM;
    goto fail;
  }
  curl_easy_setopt(c, CURLOPT_URL, h->eff_url ? h->eff_url : h->url);
  curl_easy_setopt(c, CURLOPT_PRIVATE, (char *)h);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->res.error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
  if (h->may_send) {
    curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(c, CURLOPT_PREREQDATA, h);
  }
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  /* Over TLS, wait for a connection that may multiplex rather than open
   * another: ALPN settles h2 vs http/1.1 at the handshake. Never over
   * cleartext, where the protocol is known only from the first response
   * and a watch whose headers come late would hold every other request. */
  if (!strncasecmp(h->eff_url ? h->eff_url : h->url, "https:", 6))
    curl_easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
  if (h->timeout_ms > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
  if (h->low_speed_ms > 0) {
    /* curl counts in whole seconds: fewer than 1 byte/s for that long. */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (h->low_speed_ms + 999) / 1000);
  }
  if (h->proxy_url) curl_easy_setopt(c, CURLOPT_PROXY, h->proxy_url);
  /* client-go's transport asks for gzip on every request; kube-apiserver
   * compresses a large non-watch answer, and curl decodes it before
   * on_write (so max_body caps the decoded bytes: no gzip bomb gets past) */
  if (h->accept_gzip) curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");
  if (!strcmp(h->method, "HEAD")) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  else if (strcmp(h->method, "GET") || h->has_body)
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, h->method);
  if (h->has_body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->body_len);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, h->body);
  }
  if (h->connect_to) curl_easy_setopt(c, CURLOPT_CONNECT_TO, h->connect_to);
  /* A given CA replaces the system roots, as in kubeconfig. */
  if (h->ca.p) {
    set_blob(c, CURLOPT_CAINFO_BLOB, &h->ca);
    curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
  } else if (h->ca_file) {
    curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
  }
  if (h->cert.p) set_blob(c, CURLOPT_SSLCERT_BLOB, &h->cert);
  else if (h->cert_file) curl_easy_setopt(c, CURLOPT_SSLCERT, h->cert_file);
  if (h->key.p) set_blob(c, CURLOPT_SSLKEY_BLOB, &h->key);
  else if (h->key_file) curl_easy_setopt(c, CURLOPT_SSLKEY, h->key_file);
  if (h->insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (curl_multi_add_handle(e->multi, c) != CURLM_OK) {
    curl_easy_cleanup(c);
    rc = KIN_ENOMEM;
    goto fail;
  }
  h->easy = c;
  h->rnext = e->running;
  if (e->running) e->running->rprev = h;
  e->running = h;
  return;
fail:
  snprintf(h->res.error, sizeof(h->res.error), "cannot start request: %s", kin_strerror(rc));
  finish(e, h, rc);
}

static void close_walk(uv_handle_t *h, void *arg) {
  if (uv_is_closing(h)) return;
  uv_close(h, h->type == UV_POLL ? on_sock_closed : NULL);
}

/* Runs on the IO thread whenever another thread submitted, cancelled or
 * started closing. */
static void on_async(uv_async_t *a) {
  kin_io_engine *e = a->data;
  pthread_mutex_lock(&e->mu);
  kin_io_handle *q = e->qhead, *c = e->chead, *pr = e->phead;
  e->qhead = e->qtail = NULL;
  e->chead = NULL;
  e->phead = NULL;
  for (kin_io_handle *x = pr; x; x = x->pnext) x->resume_requested = 0;
  int closing = e->closing;
  pthread_mutex_unlock(&e->mu);

  while (pr) {
    kin_io_handle *next = pr->pnext;
    pr->pnext = NULL;
    /* May deliver the kept chunk (on_data) right here. */
    if (pr->easy && !closing) curl_easy_pause(pr->easy, CURLPAUSE_CONT);
    kin_io_handle_release(pr);
    pr = next;
  }

  while (q) {
    kin_io_handle *next = q->qnext;
    q->qnext = NULL;
    if (closing) finish(e, q, KIN_ECANCELED);
    else kin__io_start(e, q);
    q = next;
  }
  while (c) {
    kin_io_handle *next = c->cnext;
    c->cnext = NULL;
    if (c->easy) finish(e, c, KIN_ECANCELED); /* else it already completed */
    kin_io_handle_release(c);
    c = next;
  }
  if (!closing) return;
  while (e->running) finish(e, e->running, KIN_ECANCELED);
  e->multi_closing = 1;
  curl_multi_cleanup(e->multi); /* closes the pooled connections (and their polls) */
  e->multi = NULL;
  uv_walk(&e->loop, close_walk, NULL);
}

static void *io_thread(void *arg) {
  kin_io_engine *e = arg;
  uv_run(&e->loop, UV_RUN_DEFAULT);
  return NULL;
}

/* ---- public API ---------------------------------------------------------- */

int kin_io_engine_new(kin_io_engine **out) { return kin_io_engine_new_opts(NULL, out); }

int kin_io_engine_new_opts(const kin_io_engine_opts *opts, kin_io_engine **out) {
  *out = NULL;
  long idle_ms = opts && opts->read_idle_ms ? opts->read_idle_ms : KIN_IO_READ_IDLE_MS;
  long ping_ms = opts && opts->ping_timeout_ms ? opts->ping_timeout_ms : KIN_IO_PING_TIMEOUT_MS;
  if (ping_ms < 0) return KIN_EINVAL;
  /* Thread-safe since curl 7.84; never cleaned up since other users of
   * curl in the process may rely on it. */
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return KIN_EINVAL;
  kin_io_engine *e = calloc(1, sizeof(*e));
  if (!e) return KIN_ENOMEM;
  if (pthread_mutex_init(&e->mu, NULL)) {
    free(e);
    return KIN_ENOMEM;
  }
  if (uv_loop_init(&e->loop)) {
    pthread_mutex_destroy(&e->mu);
    free(e);
    return KIN_EINVAL;
  }
  int rc = KIN_ENOMEM;
  e->multi = curl_multi_init();
  if (!e->multi || uv_async_init(&e->loop, &e->async, on_async)) goto fail;
  e->async.data = e;
  uv_timer_init(&e->loop, &e->timer);
  e->timer.data = e;
  e->read_idle_ms = idle_ms;
  e->ping_timeout_ms = ping_ms;
  e->hst.read_idle_ms = idle_ms > 0 ? idle_ms : -1;
  e->hst.ping_timeout_ms = ping_ms;
  e->hst.interval_ms = (long)kin__io_health_interval(idle_ms, ping_ms);
  uv_timer_init(&e->loop, &e->health);
  e->health.data = e;
  uv_timer_start(&e->health, kin__io_on_health, (uint64_t)e->hst.interval_ms, 0);
  curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
  curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
  curl_multi_setopt(e->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  /* kube-apiserver allows 1000 streams per connection by default. */
  curl_multi_setopt(e->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 1000L);
  if (pthread_create(&e->thread, NULL, io_thread, e)) goto fail;
  *out = e;
  return 0;
fail:
  if (e->multi) curl_multi_cleanup(e->multi);
  uv_walk(&e->loop, close_walk, NULL);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  uv_loop_close(&e->loop);
  pthread_mutex_destroy(&e->mu);
  free(e);
  return rc;
}

void kin_io_engine_free(kin_io_engine *e) {
  if (!e) return;
  /* The send happens under mu so the IO thread cannot have closed the
   * async handle yet: it only does so after reading closing under mu. */
  pthread_mutex_lock(&e->mu);
  e->closing = 1;
  uv_async_send(&e->async);
  pthread_mutex_unlock(&e->mu);
  pthread_join(e->thread, NULL);
  uv_loop_close(&e->loop);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

int kin_io_submit(kin_io_engine *e, const kin_io_request *req, kin_io_handle **out) {
  if (out) *out = NULL;
  if (!e || !req || !req->url) return KIN_EINVAL;
  kin_io_handle *h = kin__io_handle_new(e, req);
  if (!h) return KIN_ENOMEM;
  if (out) atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
  pthread_mutex_lock(&e->mu);
  if (e->closing) {
    pthread_mutex_unlock(&e->mu);
    if (out) kin_io_handle_release(h);
    kin_io_handle_release(h);
    return KIN_ECLOSED;
  }
  h->state = H_QUEUED;
  if (e->qtail) e->qtail->qnext = h;
  else e->qhead = h;
  e->qtail = h;
  uv_async_send(&e->async);
  pthread_mutex_unlock(&e->mu);
  if (out) *out = h;
  return 0;
}

void kin_io_cancel(kin_io_handle *h) {
  if (!h) return;
  kin_io_engine *e = h->e;
  pthread_mutex_lock(&e->mu);
  /* Once closing, the IO thread cancels everything itself. */
  if (h->state != H_DONE && !h->cancel_requested && !e->closing) {
    h->cancel_requested = 1;
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
    h->cnext = e->chead;
    e->chead = h;
    uv_async_send(&e->async);
  }
  pthread_mutex_unlock(&e->mu);
}

void kin_io_resume(kin_io_handle *h) {
  if (!h) return;
  kin_io_engine *e = h->e;
  pthread_mutex_lock(&e->mu);
  if (h->state != H_DONE && !h->resume_requested && !h->cancel_requested && !e->closing) {
    h->resume_requested = 1;
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
    h->pnext = e->phead;
    e->phead = h;
    uv_async_send(&e->async);
  }
  pthread_mutex_unlock(&e->mu);
}

/* The pieces of a streamed body (kin_io_do_streamed) waiting for the
 * calling thread. */
#define STREAM_PENDING_MAX ((size_t)1 << 20)

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Guarded by mu. */
  int done;
  kin_io_response *res;
  char *pending;        /* streamed body bytes not yet taken (malloc'd) */
  size_t pending_len, pending_cap;
  int paused;           /* the IO thread refused a piece: resume after taking */
  int stop;             /* the consumer failed: refuse everything */
} io_waiter;

/* IO thread: keeps a piece of a 2xx body for the calling thread, or
 * pauses the transfer when enough is waiting. */
static int stream_data(void *ud, const char *p, size_t n) {
  io_waiter *w = ud;
  int rc = 0;
  pthread_mutex_lock(&w->mu);
  if (w->stop) {
    rc = KIN_ECANCELED;
  } else if (w->pending_len && w->pending_len + n > STREAM_PENDING_MAX) {
    w->paused = 1;
    rc = KIN_IO_PAUSE;
  } else {
    if (w->pending_len + n > w->pending_cap) {
      size_t cap = w->pending_cap ? w->pending_cap : 16384;
      while (cap < w->pending_len + n) cap *= 2;
      char *np = realloc(w->pending, cap);
      if (!np) rc = KIN_ENOMEM;
      else w->pending = np, w->pending_cap = cap;
    }
    if (rc == 0) {
      memcpy(w->pending + w->pending_len, p, n);
      if (!w->pending_len) pthread_cond_signal(&w->cv);
      w->pending_len += n;
    }
  }
  pthread_mutex_unlock(&w->mu);
  return rc;
}

static void do_done(void *ud, kin_io_response *r) {
  io_waiter *w = ud;
  pthread_mutex_lock(&w->mu);
  *w->res = *r; /* steal every field */
  memset(r, 0, sizeof(*r));
  w->done = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu); /* w may be gone after this */
}

int kin_io_do(kin_io_engine *e, const kin_io_request *req, kin_io_response *res) {
  return kin_io_do_cancelable(e, req, res, NULL);
}

/* Calling thread of a streamed request: hands each batch of pending bytes
 * to on_body (outside the lock) until the request is done. Returns 0 or
 * on_body's error (the request is then cancelled). */
static int stream_consume(io_waiter *w, kin_io_handle *h, kin_io_data_cb on_body, void *ud) {
  int rc = 0;
  char *spare = NULL;
  size_t spare_cap = 0;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->done && !w->pending_len) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->pending_len) break; /* done, everything taken */
    /* Swap buffers, so the IO thread fills one while this one is read. */
    char *p = w->pending;
    size_t n = w->pending_len, cap = w->pending_cap;
    w->pending = spare;
    w->pending_cap = spare_cap;
    w->pending_len = 0;
    int resume = w->paused;
    w->paused = 0;
    pthread_mutex_unlock(&w->mu);
    if (rc == 0 && (rc = on_body(ud, p, n)) != 0) {
      pthread_mutex_lock(&w->mu);
      w->stop = 1;
      pthread_mutex_unlock(&w->mu);
      kin_io_cancel(h);
    }
    if (resume && rc == 0) kin_io_resume(h);
    spare = p;
    spare_cap = cap;
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  free(spare);
  return rc;
}

static int do_request(kin_io_engine *e, const kin_io_request *req, kin_io_response *res,
                      kin_io_canceler *cx, kin_io_data_cb on_body, void *ud);

int kin_io_do_cancelable(kin_io_engine *e, const kin_io_request *req, kin_io_response *res,
                         kin_io_canceler *cx) {
  return do_request(e, req, res, cx, NULL, NULL);
}

int kin_io_do_streamed(kin_io_engine *e, const kin_io_request *req, kin_io_response *res,
                       kin_io_canceler *cx, kin_io_data_cb on_body, void *ud) {
  if (!on_body) return KIN_EINVAL;
  return do_request(e, req, res, cx, on_body, ud);
}

/* kin_io_do_cancelable, streaming a 2xx body to on_body when it is set. */
static int do_request(kin_io_engine *e, const kin_io_request *req, kin_io_response *res,
                      kin_io_canceler *cx, kin_io_data_cb on_body, void *ud) {
  memset(res, 0, sizeof(*res));
  if (e && pthread_equal(pthread_self(), e->thread)) return KIN_EBUSY;
  io_waiter w = {.res = res};
  if (pthread_mutex_init(&w.mu, NULL)) return KIN_ENOMEM;
  if (pthread_cond_init(&w.cv, NULL)) {
    pthread_mutex_destroy(&w.mu);
    return KIN_ENOMEM;
  }
  kin_io_request r = *req;
  r.on_data = on_body ? stream_data : NULL;
  r.on_data_2xx_only = on_body != NULL;
  r.on_done = do_done;
  r.data = &w;
  int rc;
  kin_io_handle *h = NULL;
  if (cx) {
    /* Submitting under cx->mu makes fire either see the handle or come
     * before the submit (and then we do not submit at all). */
    pthread_mutex_lock(&cx->mu);
    if (cx->fired) rc = KIN_ECANCELED;
    else if ((rc = kin_io_submit(e, &r, &h)) == 0) cx->h = h;
    pthread_mutex_unlock(&cx->mu);
    if (rc == KIN_ECANCELED) snprintf(res->error, sizeof(res->error), "request cancelled");
  } else {
    rc = kin_io_submit(e, &r, on_body ? &h : NULL);
  }
  if (rc == 0) {
    int brc = on_body ? stream_consume(&w, h, on_body, ud) : 0;
    pthread_mutex_lock(&w.mu);
    while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    rc = brc ? brc : res->err;
    if (brc) res->err = brc;
  }
  free(w.pending);
  if (h) {
    if (cx) {
      pthread_mutex_lock(&cx->mu);
      cx->h = NULL;
      pthread_mutex_unlock(&cx->mu);
    }
    kin_io_handle_release(h);
  }
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.mu);
  return rc;
}
