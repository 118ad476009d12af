/* tls_serve.c -- the process's serving key pairs by local port and the
 * GnuTLS certificate callback that serves them (see tls_serve.h). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "kin.h"
#include "tls_serve.h"

/* The pairs by port; keys_mu guards the table and is held while a pair is
 * read (taken before the pair's mu). */
static pthread_mutex_t keys_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int port;
  kin_tls_keypair *kp;
} keys_by_port[KIN_TLS_MAX_PORTS];

/* Takes keys_mu. */
void kin_tls_ports_lock(void) {
  pthread_mutex_lock(&keys_mu);
}

/* Releases keys_mu. */
void kin_tls_ports_unlock(void) {
  pthread_mutex_unlock(&keys_mu);
}

/* Under keys_mu: records kp for port in a free slot. Returns 0 or
 * KIN_ENOMEM (table full). */
int kin_tls_ports_add_locked(int port, kin_tls_keypair *kp) {
  for (int i = 0; i < KIN_TLS_MAX_PORTS; i++) {
    if (keys_by_port[i].kp) continue;
    keys_by_port[i].port = port;
    keys_by_port[i].kp = kp;
    return 0;
  }
  return KIN_ENOMEM;
}

/* Takes keys_mu around kin_tls_ports_add_locked; returns what it does. */
int kin_tls_ports_add(int port, kin_tls_keypair *kp) {
  pthread_mutex_lock(&keys_mu);
  int rc = kin_tls_ports_add_locked(port, kp);
  pthread_mutex_unlock(&keys_mu);
  return rc;
}

/* Takes keys_mu; clears kp's entries (that of port alone when port > 0). */
void kin_tls_ports_del(kin_tls_keypair *kp, int port) {
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < KIN_TLS_MAX_PORTS; i++)
    if (keys_by_port[i].kp == kp && (port <= 0 || keys_by_port[i].port == port))
      keys_by_port[i].kp = NULL;
  pthread_mutex_unlock(&keys_mu);
}

/* See tls_serve.h: 0 with the credentials of the pair on the session's
 * local port (they stay the pair's), or -1. */
int kin_tls_ports_on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                          const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                          gnutls_pcert_st **pcert, unsigned int *pcert_length,
                          gnutls_privkey_t *pkey) {
  (void)req_ca_dn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
  int fd = gnutls_transport_get_int(session);
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
  int port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
  int rc = -1;
  pthread_mutex_lock(&keys_mu);
  for (int i = 0; i < KIN_TLS_MAX_PORTS; i++) {
    if (!keys_by_port[i].kp || keys_by_port[i].port != port) continue;
    rc = kin_tls_keypair_current(keys_by_port[i].kp, pcert, pcert_length, pkey) == 0 ? 0 : -1;
    break;
  }
  pthread_mutex_unlock(&keys_mu);
  return rc;
}
