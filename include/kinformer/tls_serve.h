/* tls_serve.h -- (layer: tls) the serving key pairs of a process's HTTPS
 * listeners by local port, and the GnuTLS certificate callback that serves
 * them: a gnutls_certificate_retrieve_function2 has no closure, only the
 * session whose transport is the socket, so it finds its pair by the
 * socket's local port. Used by the metrics endpoints and the webhook
 * server (both through libmicrohttpd's MHD_OPTION_HTTPS_CERT_CALLBACK).
 *
 * Threads: one process-wide table of at most KIN_TLS_MAX_PORTS entries,
 * guarded by its own mutex (kin_tls_ports_lock), held while a pair is read
 * (taken before the pair's mu). */
#ifndef KIN_TLS_SERVE_H
#define KIN_TLS_SERVE_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include "tls_cert.h"

#define KIN_TLS_MAX_PORTS 64

/* Takes / releases the table's mutex: a listener holds it from before its
 * daemon accepts until its pair is added (kin_tls_ports_add_locked), so a
 * handshake on a connection accepted at once waits instead of failing. */
void kin_tls_ports_lock(void);
void kin_tls_ports_unlock(void);

/* Records kp (borrowed: it must outlive its entry) for port; the caller
 * holds the table's mutex (_locked) or not. Returns 0, or KIN_ENOMEM when
 * the table is full. */
int kin_tls_ports_add_locked(int port, kin_tls_keypair *kp);
int kin_tls_ports_add(int port, kin_tls_keypair *kp);

/* Forgets the entries of kp, only that of port when port > 0. */
void kin_tls_ports_del(kin_tls_keypair *kp, int port);

/* gnutls_certificate_retrieve_function2: the current credentials
 * (kin_tls_keypair_current) of the pair recorded for the session's local
 * port. Returns 0, or -1 (the handshake fails: no socket, no pair, no
 * credentials). */
int kin_tls_ports_on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
                          const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                          gnutls_pcert_st **pcert, unsigned int *pcert_length,
                          gnutls_privkey_t *pkey);

#endif
