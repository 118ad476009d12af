/* fault_proxy_main.c -- build/<mode>/kin-fault-proxy: the fault proxy of
 * fault_proxy.h as a program.
 *
 *   kin-fault-proxy [--listen PORT] [--control PORT] UPSTREAM_HOST:PORT
 *
 * Listens on 127.0.0.1:PORT (0 or absent: any free port) and forwards to
 * the loopback upstream; prints "listening PORT" (and "control PORT") on
 * stdout, then reads commands (fault_proxy.h: pause, resume, cut, slow,
 * partition, conns, stats) one per line from stdin and, with --control, from any
 * client of 127.0.0.1:PORT, answering each with one or more lines ending
 * with an empty line. Ends on EOF of stdin or "quit". */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fault_proxy.h"
#include "kin.h"

static kin_fault_proxy *g_proxy;

/* Answers the commands of one control client until it closes. */
static void *control_client(void *arg) {
  int fd = (int)(intptr_t)arg;
  int wfd = dup(fd);
  FILE *in = fdopen(fd, "r"), *out = wfd >= 0 ? fdopen(wfd, "w") : NULL;
  if (!in || !out) {
    if (in) fclose(in);
    else close(fd);
    if (out) fclose(out);
    else if (wfd >= 0) close(wfd);
    return NULL;
  }
  char line[512], reply[8192];
  while (fgets(line, sizeof(line), in)) {
    if (!strncmp(line, "quit", 4)) break;
    kin_fault_proxy_command(g_proxy, line, reply, sizeof(reply));
    fprintf(out, "%s%s\n", reply, reply[0] && reply[strlen(reply) - 1] == '\n' ? "" : "\n");
    fflush(out);
  }
  fclose(out);
  fclose(in);
  return NULL;
}

static void *control_accept(void *arg) {
  int lfd = (int)(intptr_t)arg;
  for (;;) {
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0) continue;
    pthread_t t;
    if (pthread_create(&t, NULL, control_client, (void *)(intptr_t)fd)) close(fd);
    else pthread_detach(t);
  }
  return NULL;
}

static int usage(void) {
  fprintf(stderr, "usage: kin-fault-proxy [--listen PORT] [--control PORT] UPSTREAM_HOST:PORT\n");
  return 2;
}

int main(int argc, char **argv) {
  long listen_port = 0, control_port = -1;
  const char *upstream = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--listen") && i + 1 < argc) listen_port = atol(argv[++i]);
    else if (!strcmp(argv[i], "--control") && i + 1 < argc) control_port = atol(argv[++i]);
    else if (argv[i][0] != '-' && !upstream) upstream = argv[i];
    else return usage();
  }
  if (!upstream || listen_port < 0 || listen_port > 65535 || control_port > 65535) return usage();
  char host[256];
  const char *colon = strrchr(upstream, ':');
  if (!colon || colon == upstream || (size_t)(colon - upstream) >= sizeof(host)) return usage();
  memcpy(host, upstream, (size_t)(colon - upstream));
  host[colon - upstream] = 0;
  if (host[0] == '[' && host[strlen(host) - 1] == ']') {
    memmove(host, host + 1, strlen(host));
    host[strlen(host) - 1] = 0;
  }
  long up_port = atol(colon + 1);
  if (up_port <= 0 || up_port > 65535) return usage();
  int rc = kin_fault_proxy_start(host, (uint16_t)up_port, (uint16_t)listen_port, &g_proxy);
  if (rc == KIN_EINVAL) {
    fprintf(stderr, "kin-fault-proxy: upstream %s is not a loopback address\n", host);
    return 1;
  }
  if (rc) {
    fprintf(stderr, "kin-fault-proxy: cannot listen: %s\n", kin_strerror(rc));
    return 1;
  }
  printf("listening %u\n", (unsigned)kin_fault_proxy_port(g_proxy));
  if (control_port >= 0) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)control_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof(a);
    pthread_t t;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 8) ||
        getsockname(lfd, (struct sockaddr *)&a, &al) ||
        pthread_create(&t, NULL, control_accept, (void *)(intptr_t)lfd)) {
      fprintf(stderr, "kin-fault-proxy: cannot listen on the control port\n");
      kin_fault_proxy_free(g_proxy);
      return 1;
    }
    pthread_detach(t);
    printf("control %u\n", (unsigned)ntohs(a.sin_port));
  }
  fflush(stdout);
  char line[512], reply[8192];
  while (fgets(line, sizeof(line), stdin)) {
    if (!strncmp(line, "quit", 4)) break;
    kin_fault_proxy_command(g_proxy, line, reply, sizeof(reply));
    printf("%s%s\n", reply, reply[0] && reply[strlen(reply) - 1] == '\n' ? "" : "\n");
    fflush(stdout);
  }
  kin_fault_proxy_free(g_proxy);
  return 0;
}
