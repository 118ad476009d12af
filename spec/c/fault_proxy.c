/* fault_proxy.c -- the fault-injecting TCP proxy (see fault_proxy.h). */
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kin.h"

#define FP_BUF (64 * 1024)

/* One proxied connection. Direction 0 is client -> upstream, 1 the
 * reverse. Everything is guarded by the proxy's mu. */
typedef struct fp_conn {
  unsigned id;
  int fd[2];        /* fd[0]: client side, fd[1]: upstream side */
  int paused;
  int cut;          /* close requested by a command */
  long slow;        /* bytes/s each way; 0: unlimited */
  double tokens[2]; /* slow: bytes each direction may still move */
  uint64_t refill_ns;
  char buf[2][FP_BUF];
  size_t len[2], off[2];
  int eof[2];       /* the source of direction d reached end of file */
  int shut[2];      /* the destination of direction d was shut for writing */
  uint64_t bytes[2];
  int pidx;         /* first of its two pollfd entries, -1 when not polled */
  struct fp_conn *next;
} fp_conn;

struct kin_fault_proxy {
  pthread_t thread;
  int lfd;
  int wake[2]; /* a byte on wake[1] interrupts poll */
  uint16_t port;
  struct sockaddr_storage up;
  socklen_t up_len;

  pthread_mutex_t mu; /* guards everything below */
  int stop;
  int partitioned; /* "partition on": every connection, new ones too, is paused */
  fp_conn *conns;
  unsigned next_id, accepted, open;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

static void wake(kin_fault_proxy *p) {
  char c = 1;
  ssize_t n = write(p->wake[1], &c, 1);
  (void)n;
}

/* Unlinks and closes c. Caller holds mu. */
static void conn_close(kin_fault_proxy *p, fp_conn *c) {
  for (fp_conn **pp = &p->conns; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  close(c->fd[0]);
  close(c->fd[1]);
  p->open--;
  free(c);
}

/* Accepts one client and connects it upstream. Caller holds mu. */
static void do_accept(kin_fault_proxy *p) {
  int cfd = accept(p->lfd, NULL, NULL);
  if (cfd < 0) return;
  int ufd = socket(p->up.ss_family, SOCK_STREAM, 0);
  if (ufd < 0 || connect(ufd, (struct sockaddr *)&p->up, p->up_len) < 0) {
    if (ufd >= 0) close(ufd);
    close(cfd);
    return;
  }
  fp_conn *c = calloc(1, sizeof(*c));
  if (!c) {
    close(ufd);
    close(cfd);
    return;
  }
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  set_nonblock(cfd);
  set_nonblock(ufd);
  c->fd[0] = cfd;
  c->fd[1] = ufd;
  c->id = ++p->next_id;
  c->pidx = -1;
  c->paused = p->partitioned; /* accepted, then nothing moves: a blackhole */
  c->refill_ns = now_ns();
  c->next = p->conns;
  p->conns = c;
  p->accepted++;
  p->open++;
}

/* How many bytes direction d of c may read now. */
static size_t allowance(fp_conn *c, int d) {
  size_t space = FP_BUF - c->len[d];
  if (!c->slow) return space;
  size_t t = c->tokens[d] < 1 ? 0 : (size_t)c->tokens[d];
  return t < space ? t : space;
}

static void refill(fp_conn *c, uint64_t now) {
  if (!c->slow) return;
  double add = (double)(now - c->refill_ns) / 1e9 * (double)c->slow;
  c->refill_ns = now;
  for (int d = 0; d < 2; d++) {
    c->tokens[d] += add;
    double cap = c->slow < 1 ? 1 : (double)c->slow;
    if (c->tokens[d] > cap) c->tokens[d] = cap;
  }
}

/* Moves what it can on c after poll said revents (r[0]: client side, r[1]:
 * upstream side). Returns non-zero when c must be closed. Caller holds mu. */
static int pump(fp_conn *c, const short r[2]) {
  for (int d = 0; d < 2; d++) {
    int src = c->fd[d], dst = c->fd[1 - d];
    if ((r[d] & POLLERR) || (r[1 - d] & POLLERR)) return 1;
    size_t room = allowance(c, d);
    if (!c->eof[d] && room && (r[d] & (POLLIN | POLLHUP))) {
      ssize_t n = read(src, c->buf[d] + c->len[d], room);
      if (n > 0) {
        c->len[d] += (size_t)n;
        c->bytes[d] += (uint64_t)n;
        if (c->slow) c->tokens[d] -= (double)n;
      } else if (n == 0) {
        c->eof[d] = 1;
      } else if (errno != EAGAIN && errno != EINTR) {
        return 1;
      }
    }
    if (c->len[d] > c->off[d]) {
      ssize_t w = send(dst, c->buf[d] + c->off[d], c->len[d] - c->off[d], MSG_NOSIGNAL);
      if (w > 0) {
        c->off[d] += (size_t)w;
        if (c->off[d] == c->len[d]) c->off[d] = c->len[d] = 0;
      } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
        return 1;
      }
    }
    if (c->eof[d] && c->len[d] == 0 && !c->shut[d]) {
      shutdown(dst, SHUT_WR);
      c->shut[d] = 1;
    }
  }
  return c->shut[0] && c->shut[1];
}

static void *proxy_thread(void *arg) {
  kin_fault_proxy *p = arg;
  struct pollfd *pf = NULL;
  size_t cap = 0;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    if (p->stop) {
      pthread_mutex_unlock(&p->mu);
      break;
    }
    size_t need = 2 + 2 * (size_t)p->open;
    if (need > cap) {
      struct pollfd *np = realloc(pf, need * sizeof(*pf));
      if (!np) {
        pthread_mutex_unlock(&p->mu);
        usleep(10000);
        continue;
      }
      pf = np;
      cap = need;
    }
    size_t n = 0;
    pf[n++] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
    pf[n++] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
    int throttled = 0;
    uint64_t now = now_ns();
    for (fp_conn *c = p->conns; c; c = c->next) {
      c->pidx = -1;
      if (c->paused || c->cut) continue;
      refill(c, now);
      c->pidx = (int)n;
      for (int side = 0; side < 2; side++) {
        short ev = 0;
        if (!c->eof[side] && allowance(c, side)) ev |= POLLIN; /* side reads direction side */
        else if (!c->eof[side] && c->slow) throttled = 1;
        if (c->len[1 - side] > c->off[1 - side]) ev |= POLLOUT; /* side writes the other */
        pf[n++] = (struct pollfd){.fd = c->fd[side], .events = ev};
      }
    }
    pthread_mutex_unlock(&p->mu);

    poll(pf, n, throttled ? 10 : 1000);

    pthread_mutex_lock(&p->mu);
    if (pf[0].revents & POLLIN) {
      char drain[64];
      while (read(p->wake[0], drain, sizeof(drain)) > 0) {
      }
    }
    if (pf[1].revents & POLLIN) do_accept(p);
    fp_conn *c = p->conns;
    while (c) {
      fp_conn *next = c->next;
      if (c->cut) {
        conn_close(p, c);
      } else if (c->pidx >= 0 && !c->paused) {
        short r[2] = {pf[c->pidx].revents, pf[c->pidx + 1].revents};
        int hup = ((r[0] & POLLHUP) && c->eof[0]) || ((r[1] & POLLHUP) && c->eof[1]);
        if (pump(c, r) || hup) conn_close(p, c);
      }
      c = next;
    }
    pthread_mutex_unlock(&p->mu);
  }
  free(pf);
  return NULL;
}

static int is_loopback(const char *host, struct sockaddr_storage *ss, socklen_t *len,
                       uint16_t port) {
  if (!strcmp(host, "localhost")) host = "127.0.0.1";
  struct in_addr a4;
  struct in6_addr a6;
  memset(ss, 0, sizeof(*ss));
  if (inet_pton(AF_INET, host, &a4) == 1) {
    if ((ntohl(a4.s_addr) >> 24) != 127) return 0;
    struct sockaddr_in *s = (struct sockaddr_in *)ss;
    s->sin_family = AF_INET;
    s->sin_addr = a4;
    s->sin_port = htons(port);
    *len = sizeof(*s);
    return 1;
  }
  if (inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6)) {
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
    s->sin6_family = AF_INET6;
    s->sin6_addr = a6;
    s->sin6_port = htons(port);
    *len = sizeof(*s);
    return 1;
  }
  return 0;
}

int kin_fault_proxy_start(const char *upstream_host, uint16_t upstream_port, uint16_t listen_port,
                          kin_fault_proxy **out) {
  *out = NULL;
  kin_fault_proxy *p = calloc(1, sizeof(*p));
  if (!p) return KIN_ENOMEM;
  if (!upstream_host || !is_loopback(upstream_host, &p->up, &p->up_len, upstream_port)) {
    free(p);
    return KIN_EINVAL;
  }
  p->lfd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(listen_port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof(a);
  if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(p->lfd, 64) ||
      getsockname(p->lfd, (struct sockaddr *)&a, &al)) {
    if (p->lfd >= 0) close(p->lfd);
    free(p);
    return KIN_EBUSY;
  }
  set_nonblock(p->lfd);
  p->port = ntohs(a.sin_port);
  if (pipe(p->wake)) {
    close(p->lfd);
    free(p);
    return KIN_ENOMEM;
  }
  set_nonblock(p->wake[0]);
  set_nonblock(p->wake[1]);
  pthread_mutex_init(&p->mu, NULL);
  if (pthread_create(&p->thread, NULL, proxy_thread, p)) {
    pthread_mutex_destroy(&p->mu);
    close(p->wake[0]);
    close(p->wake[1]);
    close(p->lfd);
    free(p);
    return KIN_ENOMEM;
  }
  *out = p;
  return 0;
}

uint16_t kin_fault_proxy_port(kin_fault_proxy *p) { return p->port; }

void kin_fault_proxy_counts(kin_fault_proxy *p, unsigned *accepted, unsigned *open) {
  pthread_mutex_lock(&p->mu);
  if (accepted) *accepted = p->accepted;
  if (open) *open = p->open;
  pthread_mutex_unlock(&p->mu);
}

/* Parses "" / "all" (0) or a connection id into *id; returns 0 or -1. */
static int parse_target(const char *s, unsigned *id) {
  *id = 0;
  if (!s || !*s || !strcmp(s, "all")) return 0;
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (*end || !v) return -1;
  *id = (unsigned)v;
  return 0;
}

int kin_fault_proxy_command(kin_fault_proxy *p, const char *line, char *reply, size_t n) {
  char buf[256], *save = NULL;
  snprintf(buf, sizeof(buf), "%s", line ? line : "");
  const char *verb = strtok_r(buf, " \t\r\n", &save);
  const char *a1 = strtok_r(NULL, " \t\r\n", &save);
  const char *a2 = strtok_r(NULL, " \t\r\n", &save);
  if (n) reply[0] = 0;
  if (!verb) {
    snprintf(reply, n, "error: empty command");
    return KIN_EINVAL;
  }
  pthread_mutex_lock(&p->mu);
  int rc = 0;
  if (!strcmp(verb, "conns")) {
    size_t used = 0;
    for (fp_conn *c = p->conns; c && used < n; c = c->next) {
      int w = snprintf(reply + used, n - used, "%u paused=%d slow=%ld up=%llu down=%llu\n", c->id,
                       c->paused, c->slow, (unsigned long long)c->bytes[0],
                       (unsigned long long)c->bytes[1]);
      if (w < 0) break;
      used += (size_t)w;
    }
  } else if (!strcmp(verb, "stats")) {
    snprintf(reply, n, "accepted=%u open=%u partitioned=%d", p->accepted, p->open, p->partitioned);
  } else if (!strcmp(verb, "partition")) {
    int on = a1 && !strcmp(a1, "on"), off = a1 && !strcmp(a1, "off");
    if (!on && !off) {
      rc = KIN_EINVAL;
      snprintf(reply, n, "error: partition needs on or off");
    } else {
      int hit = 0;
      p->partitioned = on;
      for (fp_conn *c = p->conns; c; c = c->next, hit++) c->paused = on;
      snprintf(reply, n, "ok %d", hit);
    }
  } else if (!strcmp(verb, "pause") || !strcmp(verb, "resume") || !strcmp(verb, "cut") ||
             !strcmp(verb, "slow")) {
    long bps = 0;
    const char *target = a1;
    if (!strcmp(verb, "slow")) {
      char *end;
      bps = a1 ? strtol(a1, &end, 10) : -1;
      if (!a1 || *end || bps < 0) {
        rc = KIN_EINVAL;
        snprintf(reply, n, "error: slow needs a number of bytes per second");
      }
      target = a2;
    }
    unsigned id;
    if (!rc && parse_target(target, &id)) {
      rc = KIN_EINVAL;
      snprintf(reply, n, "error: bad connection id '%s'", target);
    }
    int hit = 0;
    for (fp_conn *c = p->conns; !rc && c; c = c->next) {
      if (id && c->id != id) continue;
      hit++;
      if (verb[0] == 'p') c->paused = 1;
      else if (verb[0] == 'r') c->paused = 0, c->slow = 0;
      else if (verb[0] == 'c') c->cut = 1;
      else {
        c->slow = bps;
        c->tokens[0] = c->tokens[1] = 0;
        c->refill_ns = now_ns();
      }
    }
    if (!rc && id && !hit) {
      rc = KIN_EINVAL;
      snprintf(reply, n, "error: no connection %u", id);
    }
    if (!rc) snprintf(reply, n, "ok %d", hit);
  } else {
    rc = KIN_EINVAL;
    snprintf(reply, n, "error: unknown command '%s' (pause, resume, cut, slow, partition, conns, stats)",
             verb);
  }
  pthread_mutex_unlock(&p->mu);
  wake(p);
  return rc;
}

void kin_fault_proxy_free(kin_fault_proxy *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_mutex_unlock(&p->mu);
  wake(p);
  pthread_join(p->thread, NULL);
  while (p->conns) conn_close(p, p->conns);
  close(p->lfd);
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
