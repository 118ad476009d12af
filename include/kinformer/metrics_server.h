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
 *                 read from C state. Off by default; meant for a local
 *                 address (127.0.0.1:PORT): it has no authentication.
 *
 * A probe answers 200 when every check passes, else 500 (as controller-
 * runtime and kube-apiserver). /healthz always has the check
 * "ping". Checks are results set by their owner (the Lua manager runs the
 * user's check functions in its main state and stores the results here):
 * the HTTP threads only read them, never run user code. A result older
 * than its ttl counts as failed ("no result for Ns").
 *
 * Bind addresses: "host:port", ":port" (every interface), "[v6]:port";
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

typedef struct kin_metrics_server kin_metrics_server;

typedef enum { KIN_PROBE_HEALTHZ = 0, KIN_PROBE_READYZ = 1 } kin_probe;

typedef struct {
  const char *metrics_bind;
  const char *health_bind;
  const char *admin_bind;
  kin_metrics_registry *registry; /* NULL: kin_metrics_default() */
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

/* Sets the result of check name of probe (made on first use): ok, and msg
 * (NULL: none) explaining a failure; the result counts as failed once
 * older than ttl_ns (0: never). Returns 0, KIN_EINVAL (bad name: empty or
 * containing '/'), KIN_ENOMEM. */
int kin_metrics_server_set_check(kin_metrics_server *s, kin_probe probe, const char *name, int ok,
                                 const char *msg, uint64_t ttl_ns);

/* Removes check name of probe (unknown: nothing). */
void kin_metrics_server_remove_check(kin_metrics_server *s, kin_probe probe, const char *name);

#endif
