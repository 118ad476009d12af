/* netaddr.c -- bind addresses parsed into socket addresses (see
 * netaddr.h). */
#include "netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kin.h"

/* See netaddr.h: 0 with *out filled, or KIN_EINVAL with err. */
int kin__netaddr_parse(const char *bind, int flags, const char *what, kin__netaddr *out,
                       char *err, size_t errlen) {
  char host[256];
  const char *colon = strrchr(bind, ':');
  char *end = NULL;
  long p = colon ? strtol(colon + 1, &end, 10) : -1;
  size_t hl = colon ? (size_t)(colon - bind) : 0;
  if (!colon || !end || *end || end == colon + 1 || p < 0 || p > 65535 || hl >= sizeof host) {
    snprintf(err, errlen, "%s \"%s\": want host:port%s", what, bind,
             flags & KIN__NETADDR_SAY_ZERO ? ", :port or 0" : " or :port");
    return KIN_EINVAL;
  }
  memcpy(host, bind, hl);
  host[hl] = 0;
  memset(out, 0, sizeof *out);
  out->port = (uint16_t)p;
  out->any = hl == 0;
  int ok = 1;
  if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&out->ss;
    host[hl - 1] = 0;
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)p);
    ok = inet_pton(AF_INET6, host + 1, &a6->sin6_addr) == 1;
    out->v6 = 1;
    out->loopback = ok && IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&out->ss;
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)p);
    if (hl == 0)
      a4->sin_addr.s_addr = htonl(flags & KIN__NETADDR_ADMIN ? INADDR_LOOPBACK : INADDR_ANY);
    else if (strcmp(host, "localhost") == 0) a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    else ok = inet_pton(AF_INET, host, &a4->sin_addr) == 1;
    out->loopback = ok && (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
  }
  if (!ok) {
    snprintf(err, errlen, "%s \"%s\": \"%s\" is not an IP address", what, bind, host);
    return KIN_EINVAL;
  }
  return 0;
}
