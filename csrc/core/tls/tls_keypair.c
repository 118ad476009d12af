/* tls_keypair.c -- kin_tls_keypair (tls_cert.h): the serving credentials
 * of a TLS endpoint, from files it follows (stat at most once a second),
 * from a pair given in memory (a webhook's serving certificate signed by
 * the CA the process made), or from a self-signed certificate made at
 * open. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kin.h"
#include "log.h"
#include "tls_cert.h"

#define MAX_PEM (1u << 20)
#define MAX_CHAIN 8

/* One loaded pair: a chain and its key. */
typedef struct pair {
  gnutls_pcert_st pcert[MAX_CHAIN];
  unsigned npcert;
  gnutls_privkey_t key;
  struct pair *retired_next;
} pair;

/* What identifies a file's version. */
typedef struct {
  struct timespec mtime;
  off_t size;
  ino_t ino;
} stamp;

struct kin_tls_keypair {
  pthread_mutex_t mu; /* guards every field below */
  char *cert_path, *key_path; /* NULL: self-signed, never reloaded */
  char what[64];
  pair *cur;
  pair *retired; /* rotated out; freed with the keypair */
  stamp cert_st, key_st;
  struct timespec checked; /* CLOCK_MONOTONIC of the last stat */
  uint64_t generation;
  int failing; /* the last reload failed (logged once until it loads) */
};

/* Frees p's chain, key and p (NULL: nothing). */
static void pair_free(pair *p) {
  if (!p) return;
  for (unsigned i = 0; i < p->npcert; i++) gnutls_pcert_deinit(&p->pcert[i]);
  if (p->key) gnutls_privkey_deinit(p->key);
  free(p);
}

/* Makes a pair from PEM text. Returns 0, or KIN_EINVAL with err set. */
static int pair_from_pem(const char *cert, size_t clen, const char *key, size_t klen, pair **out,
                         char *err, size_t errlen) {
  gnutls_datum_t c = {(unsigned char *)cert, (unsigned)clen};
  gnutls_datum_t k = {(unsigned char *)key, (unsigned)klen};
  /* the check GnuTLS makes when it serves: the key belongs to the leaf */
  gnutls_certificate_credentials_t probe;
  if (gnutls_certificate_allocate_credentials(&probe) < 0) return KIN_ENOMEM;
  int rc = gnutls_certificate_set_x509_key_mem(probe, &c, &k, GNUTLS_X509_FMT_PEM);
  gnutls_certificate_free_credentials(probe);
  if (rc < 0) {
    snprintf(err, errlen, "%s", gnutls_strerror(rc));
    return KIN_EINVAL;
  }
  pair *p = calloc(1, sizeof *p);
  if (!p) return KIN_ENOMEM;
  p->npcert = MAX_CHAIN;
  rc = gnutls_pcert_list_import_x509_raw(p->pcert, &p->npcert, &c, GNUTLS_X509_FMT_PEM, 0);
  if (rc < 0) p->npcert = 0;
  if (rc >= 0) rc = gnutls_privkey_init(&p->key);
  if (rc >= 0) rc = gnutls_privkey_import_x509_raw(p->key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
  if (rc < 0) {
    snprintf(err, errlen, "%s", gnutls_strerror(rc));
    pair_free(p);
    return KIN_EINVAL;
  }
  *out = p;
  return 0;
}

/* Reads path (at most MAX_PEM bytes) into *out (malloc'd, NUL-terminated)
 * and its stamp. Returns 0, KIN_ENOENT, KIN_EINVAL (too big), KIN_EIO. */
static int read_file(const char *path, char **out, size_t *len, stamp *st) {
  FILE *f = fopen(path, "rb");
  if (!f) return errno == ENOENT ? KIN_ENOENT : KIN_EIO;
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || sb.st_size > (off_t)MAX_PEM) {
    fclose(f);
    return KIN_EINVAL;
  }
  char *b = malloc((size_t)sb.st_size + 1);
  size_t n = b ? fread(b, 1, (size_t)sb.st_size, f) : 0;
  fclose(f);
  if (!b) return KIN_ENOMEM;
  b[n] = 0;
  *out = b;
  *len = n;
  st->mtime = sb.st_mtim;
  st->size = sb.st_size;
  st->ino = sb.st_ino;
  return 0;
}

/* Loads the files into a new pair. Returns 0 or an error with err set. */
static int load_files(kin_tls_keypair *kp, pair **out, stamp *cst, stamp *kst, char *err,
                      size_t errlen) {
  char *c = NULL, *k = NULL;
  size_t cl = 0, kl = 0;
  char why[200] = "";
  int rc = read_file(kp->cert_path, &c, &cl, cst);
  if (rc) {
    snprintf(err, errlen, "certificate %s: %s", kp->cert_path,
             rc == KIN_ENOENT ? "no such file" : rc == KIN_EINVAL ? "larger than 1 MiB" : "cannot read it");
    return rc;
  }
  rc = read_file(kp->key_path, &k, &kl, kst);
  if (rc) {
    snprintf(err, errlen, "key %s: %s", kp->key_path,
             rc == KIN_ENOENT ? "no such file" : rc == KIN_EINVAL ? "larger than 1 MiB" : "cannot read it");
    free(c);
    return rc;
  }
  rc = pair_from_pem(c, cl, k, kl, out, why, sizeof why);
  if (rc) snprintf(err, errlen, "%s and %s: %s", kp->cert_path, kp->key_path, why);
  free(c);
  if (k) memset(k, 0, kl);
  free(k);
  return rc;
}

/* dir/name, malloc'd (the caller frees it), or NULL on OOM. */
static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
  return p;
}

int kin_tls_keypair_open(const kin_tls_keypair_opts *o, kin_tls_keypair **out, char *err,
                         size_t errlen) {
  char e[400] = "";
  *out = NULL;
  kin_tls_keypair *kp = calloc(1, sizeof *kp);
  if (!kp) return KIN_ENOMEM;
  pthread_mutex_init(&kp->mu, NULL);
  snprintf(kp->what, sizeof kp->what, "%s", o && o->what ? o->what : "tls");
  int rc = 0;
  if (o && o->cert_pem && o->key_pem) {
    rc = pair_from_pem(o->cert_pem, strlen(o->cert_pem), o->key_pem, strlen(o->key_pem), &kp->cur,
                       e, sizeof e);
    if (rc == KIN_EINVAL) {
      char why[200];
      snprintf(why, sizeof why, "%.199s", e);
      snprintf(e, sizeof e, "the %s certificate and key given in memory: %s", kp->what, why);
    }
  } else if ((!o || !o->cert_pem) != (!o || !o->key_pem)) {
    snprintf(e, sizeof e, "the %s certificate given in memory needs both cert_pem and key_pem",
             kp->what);
    rc = KIN_EINVAL;
  } else if (o && o->dir && *o->dir) {
    kp->cert_path = join(o->dir, o->cert_name && *o->cert_name ? o->cert_name : "tls.crt");
    kp->key_path = join(o->dir, o->key_name && *o->key_name ? o->key_name : "tls.key");
    rc = kp->cert_path && kp->key_path ? load_files(kp, &kp->cur, &kp->cert_st, &kp->key_st, e, sizeof e)
                                       : KIN_ENOMEM;
  } else {
    const char *hosts[34] = {"localhost", "127.0.0.1", "::1"};
    int n = 3;
    for (int i = 0; o && i < o->nhosts && n < 34; i++) hosts[n++] = o->hosts[i];
    kin_tls_cert_req req = {.common_name = "kinformer", .hosts = hosts, .nhosts = n};
    char *c = NULL, *k = NULL;
    rc = kin_tls_make_cert(&req, &c, &k, e, sizeof e);
    if (!rc) rc = pair_from_pem(c, strlen(c), k, strlen(k), &kp->cur, e, sizeof e);
    if (k) memset(k, 0, strlen(k));
    free(c);
    free(k);
  }
  if (rc) {
    if (err && errlen) snprintf(err, errlen, "%s", e[0] ? e : kin_strerror(rc));
    kin_tls_keypair_free(kp);
    return rc;
  }
  clock_gettime(CLOCK_MONOTONIC, &kp->checked);
  kp->generation = 1;
  *out = kp;
  return 0;
}

/* 1 when b is the file version a recorded. */
static int same(const stamp *a, const struct stat *b) {
  return a->mtime.tv_sec == b->st_mtim.tv_sec && a->mtime.tv_nsec == b->st_mtim.tv_nsec &&
         a->size == b->st_size && a->ino == b->st_ino;
}

/* Under kp->mu: reloads when a file changed, at most once a second. */
static void maybe_reload(kin_tls_keypair *kp) {
  if (!kp->cert_path) return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t ms = (int64_t)(now.tv_sec - kp->checked.tv_sec) * 1000 +
               (now.tv_nsec - kp->checked.tv_nsec) / 1000000;
  if (ms < 1000) return;
  kp->checked = now;
  struct stat cs, ks;
  if (stat(kp->cert_path, &cs) != 0 || stat(kp->key_path, &ks) != 0) return;
  if (same(&kp->cert_st, &cs) && same(&kp->key_st, &ks)) return;
  pair *p = NULL;
  stamp c, k;
  char e[400];
  if (load_files(kp, &p, &c, &k, e, sizeof e) != 0) {
    if (!kp->failing) kin_log(KIN_LOG_ERROR, kp->what, "serving certificate not reloaded, the previous one stays: %s", e);
    kp->failing = 1;
    return;
  }
  kp->cert_st = c;
  kp->key_st = k;
  kp->cur->retired_next = kp->retired;
  kp->retired = kp->cur;
  kp->cur = p;
  kp->failing = 0;
  kp->generation++;
  kin_log(KIN_LOG_INFO, kp->what, "serving certificate reloaded from %s", kp->cert_path);
}

int kin_tls_keypair_current(kin_tls_keypair *kp, gnutls_pcert_st **pcert, unsigned *npcert,
                            gnutls_privkey_t *key) {
  pthread_mutex_lock(&kp->mu);
  maybe_reload(kp);
  pair *p = kp->cur;
  if (p) {
    *pcert = p->pcert;
    *npcert = p->npcert;
    *key = p->key;
  }
  pthread_mutex_unlock(&kp->mu);
  return p ? 0 : KIN_EIO;
}

uint64_t kin_tls_keypair_generation(kin_tls_keypair *kp) {
  pthread_mutex_lock(&kp->mu);
  maybe_reload(kp);
  uint64_t g = kp->generation;
  pthread_mutex_unlock(&kp->mu);
  return g;
}

void kin_tls_keypair_free(kin_tls_keypair *kp) {
  if (!kp) return;
  pair_free(kp->cur);
  for (pair *p = kp->retired, *n; p; p = n) {
    n = p->retired_next;
    pair_free(p);
  }
  free(kp->cert_path);
  free(kp->key_path);
  pthread_mutex_destroy(&kp->mu);
  free(kp);
}
