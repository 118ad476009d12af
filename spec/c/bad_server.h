/* bad_server.h -- a misbehaving HTTP/1.1 server for the transport specs
 * (test_response_caps.c, test_list_caps.c, test_http_credentials.c): a
 * thread accepts on 127.0.0.1 (a free port), reads one request per
 * connection, records its request line and headers, and lets the test's
 * serve function write whatever answer it likes to the socket (an endless
 * body, millions of items, a continue-token loop); the connection is
 * closed after it. Header-only, like sim_client.h. */
#ifndef KIN_BAD_SERVER_H
#define KIN_BAD_SERVER_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct bad_server bad_server;

/* Writes the answer to the request (method, target with query, the raw
 * header block) on fd. Runs on the server's thread. */
typedef void (*bad_serve_fn)(bad_server *s, int fd, const char *method, const char *target,
                             const char *headers);

struct bad_server {
  int lfd;
  unsigned port;
  pthread_t th;
  atomic_int stop;    /* set by bs_stop, read by the server's thread */
  bad_serve_fn serve;
  void *ud;
  pthread_mutex_t mu; /* guards what is below */
  int nreq;
  char last_headers[4096];
  char last_target[1024];
  int auth_seen;      /* requests that carried an Authorization header */
};

/* Writes all of p; 0, or -1 once the peer is gone. */
static inline int bs_write(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static inline int bs_puts(int fd, const char *s) { return bs_write(fd, s, strlen(s)); }

/* A 200 with a JSON body of unknown length (ends when the connection does). */
static inline int bs_head_200(int fd) {
  return bs_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
}

/* A 200 with body. */
static inline void bs_json(int fd, const char *body) {
  char h[256];
  snprintf(h, sizeof h,
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
           "Connection: close\r\n\r\n", strlen(body));
  if (bs_puts(fd, h) == 0) bs_puts(fd, body);
}

static inline void *bs_main(void *arg) {
  bad_server *s = arg;
  while (!s->stop) {
    struct pollfd pf = {s->lfd, POLLIN, 0};
    if (poll(&pf, 1, 50) <= 0) continue;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0) continue;
    char req[8192];
    size_t len = 0;
    while (len < sizeof req - 1) {
      ssize_t r = recv(fd, req + len, sizeof req - 1 - len, 0);
      if (r <= 0) break;
      len += (size_t)r;
      req[len] = 0;
      if (strstr(req, "\r\n\r\n")) break;
    }
    req[len] = 0;
    char method[16] = "", target[1024] = "";
    sscanf(req, "%15s %1023s", method, target);
    const char *hdr = strstr(req, "\r\n");
    hdr = hdr ? hdr + 2 : "";
    pthread_mutex_lock(&s->mu);
    s->nreq++;
    snprintf(s->last_headers, sizeof s->last_headers, "%s", hdr);
    snprintf(s->last_target, sizeof s->last_target, "%s", target);
    if (strcasestr(hdr, "\nAuthorization:") || !strncasecmp(hdr, "Authorization:", 14))
      s->auth_seen++;
    pthread_mutex_unlock(&s->mu);
    s->serve(s, fd, method, target, hdr);
    shutdown(fd, SHUT_RDWR);
    close(fd);
  }
  return NULL;
}

/* Starts a server whose answers serve writes; ud is for the test. */
static inline bad_server *bs_start(bad_serve_fn serve, void *ud) {
  bad_server *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->serve = serve;
  s->ud = ud;
  pthread_mutex_init(&s->mu, NULL);
  s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (bind(s->lfd, (struct sockaddr *)&a, sizeof a) || listen(s->lfd, 64) ||
      getsockname(s->lfd, (struct sockaddr *)&a, &al)) {
    close(s->lfd);
    free(s);
    return NULL;
  }
  s->port = ntohs(a.sin_port);
  pthread_create(&s->th, NULL, bs_main, s);
  return s;
}

static inline void bs_stop(bad_server *s) {
  if (!s) return;
  s->stop = 1;
  pthread_join(s->th, NULL);
  close(s->lfd);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* The requests served so far (under mu: the server's thread counts). */
static inline int bs_nreq(bad_server *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->nreq;
  pthread_mutex_unlock(&s->mu);
  return n;
}

/* Copies the last request's header block into buf (under mu). */
static inline const char *bs_last_headers(bad_server *s, char *buf, size_t n) {
  pthread_mutex_lock(&s->mu);
  snprintf(buf, n, "%s", s->last_headers);
  pthread_mutex_unlock(&s->mu);
  return buf;
}

/* "http://127.0.0.1:<port>" into buf. */
static inline const char *bs_url(const bad_server *s, char *buf, size_t n) {
  snprintf(buf, n, "http://127.0.0.1:%u", s->port);
  return buf;
}

/* The process's VmHWM / VmRSS in bytes (from /proc/self/status). */
static inline long long bs_proc_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long long kb = -1;
  size_t fl = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, fl) && line[fl] == ':') kb = atoll(line + fl + 1);
  if (f) fclose(f);
  return kb;
}

/* Resets VmHWM to the current RSS (Linux: clear_refs 5). */
static inline void bs_reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f) {
    fputs("5", f);
    fclose(f);
  }
}

#endif
