/* metrics_server.h -- the manager's HTTP endpoints, as controller-runtime's
 * manager serves them, with libmicrohttpd on its own threads (never the IO
 * thread):
 *
 *   metrics_bind: GET /metrics, the registry in the text format 0.0.4;
 *   health_bind:  GET /healthz and /readyz (Kubernetes' healthz output:
 *                 "ok", or with ?verbose one "[+]name ok" / "[-]name
 *                 failed: reason" line per check and "<probe> check
 *                 passed|failed"; ?exclude=name skips a check), and
 *                 /healthz/<name>, /readyz/<name> for one check;
 *   admin_bind:   the admin endpoint of `kinformer inspect` (admin.h):
 *                 /caches, /queues, /inflight, /why?key=ns/name as JSON,
 *                 read from C state. Off by default. ":PORT" binds
 *                 127.0.0.1 (not every interface); on a loopback address
 *                 only a Host header naming localhost, 127.0.0.1 or [::1]
 *                 (with the bound port, or none) is served, any other gets
 *                 403 (DNS rebinding); an explicit non-loopback address is
 *                 served over HTTPS (the metrics key pair) behind the same
 *                 TokenReview + SubjectAccessReview as /metrics (verb get
 *                 on the request's path), and needs cfg->client.
 *
 * Secure metrics (cfg->metrics_secure, controller-runtime's SecureServing
 * with filters.WithAuthenticationAndAuthorization): /metrics over HTTPS
 * (TLS 1.2+), the key pair from cfg->cert_dir (cert_name, default tls.crt;
 * cert_key, default tls.key; reloaded when the files change: tls_cert.h)
 * or self-signed in memory; every request authenticated by a TokenReview
 * and authorized by a SubjectAccessReview of get on /metrics, with
 * cfg->client (authfilter.h: answers, cache TTLs). Health probes stay plain
 * HTTP on their own listener and thread, as in controller-runtime.
 *
 * Limits of every endpoint (one libmicrohttpd daemon and thread each, so a
 * flood on one cannot starve another): at most max_conns connections
 * (default 256) and max_conns_per_ip from one address (default 32), the
 * next ones closed at accept; idle_timeout_s (default 30) closes an idle
 * connection; 64 KiB of request memory (headers) and no request body
 * (413). Running out of file descriptors is logged as such, naming the
 * endpoint and RLIMIT_NOFILE (kin_metrics_raise_nofile raises the soft
 * limit to the hard one).
 *
 * A probe answers 200 when every check passes, else 500 (as controller-
 * runtime and kube-apiserver). /healthz always has the check
 * "ping". Checks are results set by their owner (the Lua manager runs the
 * user's check functions in its main state and stores the results here):
 * the HTTP threads only read them, never run user code. A result older
 * than its ttl counts as failed ("no result for Ns").
 *
 * Bind addresses: "host:port", ":port" (every interface; the admin
 * endpoint: 127.0.0.1), "[v6]:port";
 * port 0 picks a free port (kin_metrics_server_port says which); "0" or
 * NULL or "" disables that endpoint.
 *
 * Threads: s->mu guards the checks; the rest is immutable while the server
 * runs. Functions are thread-safe but free. */
#ifndef KIN_METRICS_SERVER_H
#define KIN_METRICS_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "rest_client.h"

typedef struct kin_metrics_server kin_metrics_server;

typedef enum { KIN_PROBE_HEALTHZ = 0, KIN_PROBE_READYZ = 1 } kin_probe;

typedef struct {
  const char *metrics_bind;
  const char *health_bind;
  const char *admin_bind;
  kin_metrics_registry *registry; /* NULL: kin_metrics_default() */
  int metrics_secure;             /* HTTPS + TokenReview/SubjectAccessReview */
  const char *cert_dir;           /* NULL/"": self-signed */
  const char *cert_name;          /* NULL: "tls.crt" */
  const char *cert_key;           /* NULL: "tls.key" */
  kin_client *client;             /* borrowed: the reviews (secure metrics,
                                     non-loopback admin); outlives the server */
  unsigned max_conns;             /* per endpoint; 0: 256 */
  unsigned max_conns_per_ip;      /* 0: 32 */
  unsigned idle_timeout_s;        /* 0: 30 */
} kin_metrics_server_config;

/* Starts the endpoints cfg enables. Returns 0 and the server in *out (also
 * when both are disabled); KIN_EINVAL for an address it cannot parse;
 * KIN_EBUSY when one cannot listen (in use...); KIN_ENOMEM. err gets a
 * message naming the address. */
int kin_metrics_server_start(const kin_metrics_server_config *cfg, kin_metrics_server **out,
                             char *err, size_t errlen);

/* Stops both endpoints (waits for requests in flight) and frees s. */
void kin_metrics_server_free(kin_metrics_server *s);

/* The port the endpoint listens on; 0 when disabled. which: 0 metrics,
 * 1 health, KIN_SERVER_ADMIN (2) the admin endpoint. */
#define KIN_SERVER_ADMIN 2
int kin_metrics_server_port(const kin_metrics_server *s, int which);

/* How many key pairs the HTTPS endpoints loaded (1 after start, +1 per
 * rotation picked up; 0 without HTTPS). Checks the files first. */
uint64_t kin_metrics_server_cert_generation(kin_metrics_server *s);

/* Raises the process's RLIMIT_NOFILE soft limit to its hard limit, as the
 * Go runtime does since 1.19. Returns 0 with the limits before and after
 * in *before and *after, or KIN_EIO. */
int kin_metrics_raise_nofile(unsigned long *before, unsigned long *after);

/* Sets the result of check name of probe (made on first use): ok, and msg
 * (NULL: none) explaining a failure; the result counts as failed once
 * older than ttl_ns (0: never). Returns 0, KIN_EINVAL (bad name: empty or
 * containing '/'), KIN_ENOMEM. */
int kin_metrics_server_set_check(kin_metrics_server *s, kin_probe probe, const char *name, int ok,
                                 const char *msg, uint64_t ttl_ns);

/* Removes check name of probe (unknown: nothing). */
void kin_metrics_server_remove_check(kin_metrics_server *s, kin_probe probe, const char *name);

#endif
