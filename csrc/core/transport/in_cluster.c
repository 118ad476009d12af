/* in_cluster.c -- rest.InClusterConfig and the rotating service-account
 * token. client-go re-reads the token file on a timer; re-reading when the
 * file's mtime or size changes gives the same freshness without a timer. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kin.h"
#include "kubeconfig.h"
#include "util.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"




struct kin_token_file {
  pthread_mutex_t mu; /* guards everything below */
  char *path;
  char *token; /* last token read, NULL before the first read */
  struct timespec mtime;
  off_t size;
};

kin_token_file *kin_token_file_new(const char *path) {
  kin_token_file *tf = calloc(1, sizeof *tf);
  if (!tf) return NULL;
  if (!(tf->path = strdup(path))) {
    free(tf);
    return NULL;
  }
  pthread_mutex_init(&tf->mu, NULL);
  return tf;
}

void kin_token_file_free(kin_token_file *tf) {
  if (!tf) return;
  pthread_mutex_destroy(&tf->mu);
  free(tf->path);
  kin__wipe_free(tf->token);
  free(tf);
}

int kin_token_file_get(kin_token_file *tf, char **token, char *err, size_t errlen) {
  *token = NULL;
  int rc = 0;
  pthread_mutex_lock(&tf->mu);
  struct stat st;
  if (stat(tf->path, &st) != 0) {
    rc = -errno;
    /* A token read before keeps working while the file is being replaced. */
    if (tf->token) rc = 0;
    else kin__errf(err, errlen, "token file %s: %s", tf->path, strerror(errno));
  } else if (!tf->token || st.st_mtim.tv_sec != tf->mtime.tv_sec ||
             st.st_mtim.tv_nsec != tf->mtime.tv_nsec || st.st_size != tf->size) {
    char *t = kin__read_trimmed(tf->path);
    if (!t) {
      rc = -errno;
      if (tf->token) rc = 0;
      else kin__errf(err, errlen, "token file %s: %s", tf->path, strerror(errno));
    } else if (!*t) {
      free(t);
      if (!tf->token) {
        kin__errf(err, errlen, "token file %s: empty", tf->path);
        rc = KIN_EINVAL;
      }
    } else {
      kin__wipe_free(tf->token);
      tf->token = t;
      tf->mtime = st.st_mtim;
      tf->size = st.st_size;
    }
  }
  if (!rc && !(*token = strdup(tf->token))) rc = KIN_ENOMEM;
  pthread_mutex_unlock(&tf->mu);
  return rc;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

int kin_in_cluster_config(const kin_in_cluster_opts *opts, kin_rest_config **out, char *err,
                          size_t errlen) {
  *out = NULL;
  if (err && errlen) err[0] = 0;
  const char *dir = opts && opts->sa_dir ? opts->sa_dir : SA_DIR;
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port) {
    kin__errf(err, errlen,
         "in-cluster: unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
         "KUBERNETES_SERVICE_PORT must be defined");
    return KIN_ENOENT;
  }
  kin_rest_config *c = calloc(1, sizeof *c);
  if (!c) return KIN_ENOMEM;
  int rc = KIN_ENOMEM;
  /* net.JoinHostPort: an IPv6 literal needs brackets in a URL. */
  int v6 = strchr(host, ':') != NULL;
  size_t n = strlen(host) + strlen(port) + sizeof "https://[]:";
  if (!(c->host = malloc(n))) goto fail;
  snprintf(c->host, n, v6 ? "https://[%s]:%s" : "https://%s:%s", host, port);
  if (!(c->bearer_token_file = join(dir, "token")) || !(c->ca_file = join(dir, "ca.crt")) ||
      !(c->cluster_origin = strdup("in-cluster")) || !(c->user_origin = strdup("in-cluster")))
    goto fail;
  if (!(c->bearer_token = kin__read_trimmed(c->bearer_token_file))) {
    rc = errno == ENOMEM ? KIN_ENOMEM : -errno;
    kin__errf(err, errlen, "in-cluster: token file %s: %s", c->bearer_token_file, strerror(errno));
    goto fail;
  }
  char *nsf = join(dir, "namespace");
  if (!nsf) goto fail;
  c->namespace = kin__read_trimmed(nsf);
  free(nsf);
  if (c->namespace && !*c->namespace) {
    free(c->namespace);
    c->namespace = NULL;
  }
  if (!c->namespace && !(c->namespace = strdup("default"))) goto fail;
  *out = c;
  return 0;
fail:
  if (rc == KIN_ENOMEM) kin__errf(err, errlen, "in-cluster: out of memory");
  kin_rest_config_free(c);
  return rc;
}
