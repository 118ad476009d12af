/* tls_cert.h -- (layer: tls) serving certificates with GnuTLS, for the
 * manager's HTTPS endpoints (metrics_server.h) and for anything else that
 * serves TLS (webhooks): making a certificate (self-signed, or signed by a
 * CA this process made: kin_tls_make_cert), and a key pair that serves
 * from files and follows their rotation, or from a certificate made in
 * memory at start (kin_tls_keypair_open).
 *
 * The files are those of a kubernetes.io/tls Secret mounted as a volume
 * (kubebuilder's scaffold: --metrics-cert-path DIR, --metrics-cert-name
 * tls.crt, --metrics-cert-key tls.key). They are re-read when their
 * modification time, size or inode changes (a Secret volume swaps a
 * symlink), checked at most once a second when a handshake asks for the
 * credentials; a pair that fails to load (half written, mismatched) is
 * logged once and the previous one keeps serving.
 *
 * Threads: kin_tls_keypair's mu guards the current credentials and the
 * retired ones; every function is thread-safe but free. */
#ifndef KIN_TLS_CERT_H
#define KIN_TLS_CERT_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <stddef.h>
#include <stdint.h>

/* What kin_tls_make_cert makes. */
typedef struct {
  const char *common_name;   /* NULL: "kinformer" */
  const char *const *hosts;  /* DNS names and IP addresses for the SAN; may be NULL */
  int nhosts;
  int is_ca;                 /* a CA (keyCertSign) rather than a serving certificate */
  unsigned days;             /* validity; 0: 365 */
  const char *signer_cert_pem; /* NULL: self-signed; else the CA that signs */
  const char *signer_key_pem;
} kin_tls_cert_req;

/* Makes an ECDSA P-256 key and a certificate for it as req says, both in
 * PEM. Returns 0 with *cert_pem and *key_pem (malloc'd, NUL-terminated,
 * the caller frees them); KIN_EINVAL for a signer that does not parse,
 * KIN_EIO when GnuTLS refuses (err says why), KIN_ENOMEM. */
int kin_tls_make_cert(const kin_tls_cert_req *req, char **cert_pem, char **key_pem, char *err,
                      size_t errlen);

typedef struct kin_tls_keypair kin_tls_keypair;

typedef struct {
  const char *dir;        /* NULL or "": a self-signed certificate made now */
  const char *cert_name;  /* NULL: "tls.crt" */
  const char *key_name;   /* NULL: "tls.key" */
  const char *const *hosts; /* SANs of the self-signed one (localhost and
                               127.0.0.1 are always added) */
  int nhosts;
  const char *what;       /* names the user in log lines ("metrics") */
  const char *cert_pem;   /* with key_pem: serve this pair, made in memory (a
                             serving certificate signed by a CA the process
                             made, for webhooks); dir is then ignored */
  const char *key_pem;
} kin_tls_keypair_opts;

/* Opens a key pair: loads dir/cert_name and dir/key_name, or makes a
 * self-signed certificate. Returns 0 and *out; KIN_ENOENT / KIN_EINVAL
 * when the files are missing or do not load (err names the file and the
 * reason), KIN_EIO, KIN_ENOMEM. */
int kin_tls_keypair_open(const kin_tls_keypair_opts *o, kin_tls_keypair **out, char *err,
                         size_t errlen);

/* The credentials to serve with now, re-read first when the files
 * changed. *pcert (a chain of *npcert) and *key stay valid until
 * kin_tls_keypair_free (a rotated pair is retired, not freed, so a
 * handshake under way keeps its pointers). Returns 0, or KIN_EIO when no
 * pair was ever loaded. */
int kin_tls_keypair_current(kin_tls_keypair *kp, gnutls_pcert_st **pcert, unsigned *npcert,
                            gnutls_privkey_t *key);

/* How many pairs kp loaded so far (1 after open; +1 per rotation). */
uint64_t kin_tls_keypair_generation(kin_tls_keypair *kp);

/* Frees kp and every pair it served (no handshake may be under way). */
void kin_tls_keypair_free(kin_tls_keypair *kp);

#endif
