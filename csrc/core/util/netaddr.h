/* netaddr.h -- (layer: util) a listener's bind address ("host:port",
 * ":port", "[v6]:port", "localhost:port") parsed into a socket address,
 * for the metrics endpoints and the webhook server. */
#ifndef KIN_NETADDR_H
#define KIN_NETADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* kin__netaddr_parse's flags. */
#define KIN__NETADDR_ADMIN 1   /* ":port" means 127.0.0.1 (else every address) */
#define KIN__NETADDR_SAY_ZERO 2 /* the error message names "0" as a valid form */

/* A parsed bind address. */
typedef struct {
  struct sockaddr_storage ss; /* AF_INET or AF_INET6, with the port */
  uint16_t port;              /* host order; 0: any free port */
  int v6;                     /* an IPv6 literal ("[::1]:port") */
  int any;                    /* no host (":port") */
  int loopback;               /* the address is 127.0.0.0/8 or ::1 */
} kin__netaddr;

/* Parses bind into *out; what prefixes the error messages ("bind
 * address"). Returns 0, or KIN_EINVAL with err (a malformed address, a
 * port outside 0..65535, a host that is not an IP address or
 * "localhost"). */
int kin__netaddr_parse(const char *bind, int flags, const char *what, kin__netaddr *out,
                       char *err, size_t errlen);

#endif
