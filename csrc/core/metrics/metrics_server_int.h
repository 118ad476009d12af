/* metrics_server_int.h -- internal to the metrics server: the server's
 * state shared by metrics_server.c (checks, answers) and metrics_listen.c
 * (addresses, daemons, TLS, limits, libmicrohttpd's log). */
#ifndef KIN_METRICS_SERVER_INT_H
#define KIN_METRICS_SERVER_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>

#include "authfilter.h"
#include "metrics_server.h"
#include "tls_cert.h"

typedef struct {
  kin_probe probe;
  char *name;
  int ok;
  char *msg;
  uint64_t set_ns, ttl_ns;
} kin__ms_check;

/* One endpoint: immutable while the server runs, except the log rate
 * limit (log_ns, an atomic). */
typedef struct {
  struct MHD_Daemon *d;
  int port;
  int loopback;  /* bound to 127.0.0.0/8 or ::1: Host is checked */
  int tls;       /* served over HTTPS */
  int auth;      /* TokenReview + SubjectAccessReview */
  const char *name; /* "metrics", "health", "admin" */
  unsigned max_conns;
  uint64_t log_ns; /* last limit log line (atomic) */
} kin__ms_endpoint;

struct kin_metrics_server {
  kin_metrics_registry *reg;
  kin__ms_endpoint metrics, health, admin;
  kin_tls_keypair *keys;   /* NULL without HTTPS */
  kin__authfilter *auth;   /* NULL without a client */
  pthread_mutex_t mu; /* guards checks */
  kin__ms_check *checks;
  size_t nchecks, capchecks;
};

/* Starts ep's daemon on bind (admin: ":PORT" means 127.0.0.1) answering
 * with handler(s). Returns 0, KIN_EINVAL (address; err says why),
 * KIN_EBUSY (cannot listen), KIN_ENOMEM. */
int kin__ms_listen(kin_metrics_server *s, kin__ms_endpoint *ep, const char *bind,
                   const kin_metrics_server_config *cfg, MHD_AccessHandlerCallback handler,
                   char *err, size_t errlen);


/* 1 when host (a Host header) names a loopback host (localhost,
 * 127.0.0.1, [::1]) with port or no port. */
int kin__ms_host_ok(const char *host, int port);

#endif
