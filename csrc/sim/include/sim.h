/* sim.h -- kinformer.sim: an embedded, Kubernetes-compatible API server
 * (JSON only) for tests and prototyping. libmicrohttpd serves HTTP(S) with
 * one thread per connection; jansson holds the objects.
 *
 * Locks: every kin_sim function is thread-safe. One mutex per server (the
 * storage lock, kin__sim_store.mu) guards the resource registry, every
 * object, the resourceVersion counter and the watch history; watchers wait
 * on its condition variable and copy pre-serialized events out under it, so
 * no object is ever touched without that lock. kin_sim_url and
 * kin_sim_write_kubeconfig read fields that are immutable after start. The
 * request log and the named users' tokens have a lock each of their own
 * (leaves, never held with the storage lock). */
#ifndef KIN_SIM_H
#define KIN_SIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct kin_sim kin_sim;

typedef struct {
  const char *bind_address;  /* IPv4 address; default "127.0.0.1" */
  uint16_t port;             /* 0: the kernel picks a free port */
  const char *tls_cert_file; /* PEM serving certificate; with tls_key_file enables HTTPS */
  const char *tls_key_file;
  const char *token;         /* bearer token accepted on every request; with a
                                token or a client CA, requests other than /healthz,
                                /readyz, /livez, /version must authenticate (401
                                otherwise); both NULL: no auth */
  const char *client_ca_file; /* PEM CA bundle: client certificates it signed
                                authenticate (subject CN: user, O: groups), as
                                kube-apiserver --client-ca-file; needs TLS */
  size_t watch_history;      /* events kept for watch resumption; 0: 10000 */
  uint32_t bookmark_interval_ms; /* period of BOOKMARK events; 0: 60000 */
  const char *seed_file;     /* objects created at start: a JSON array, a List
                                ({"items": [...]}) or one JSON object per line */
  const char *feature_gates; /* kube-apiserver's --feature-gates
                                ("Name=true,Other=false"); known:
                                ShardedListAndWatch (v1.36 alpha, default
                                off: ?shardSelector= on lists and watches,
                                KEP-5866). An unknown name fails the start. */
  int watch_cache_lists;     /* serve resourceVersion=0 lists whole, ignoring
                                limit, as kube-apiserver's watch cache does;
                                0 (default): limit pages them as any list */
  int pre_encode;            /* encode each committed built-in object to
                                protobuf once and serve those bytes in
                                lists and watches (kube-apiserver encodes per
                                request, caching only per watch event): the
                                sim out of the way of a client's benchmark */
  int legacy_events_only;    /* serve Events in core v1 only, without
                                events.k8s.io/v1 (as servers before 1.19) */
  size_t request_log_limit;  /* entries the request log keeps between two
                                takes (kin_sim_request_log_take); 0: 1000000 */
  const char *controllers;   /* the control-plane controllers that run, in
                                kube-controller-manager's --controllers
                                syntax ("*": the default ones, "name",
                                "-name", comma-separated; "none": a bare API
                                server); NULL: "*". See kin_sim_controllers_check. */
  int fake_clock;            /* the controllers' clock only moves by
                                kin_sim_clock_advance (0: real time) */
  const char *authorization_mode; /* "AlwaysAllow" (NULL: the default) or
                                "RBAC": every request is authorized as
                                kube-apiserver --authorization-mode=RBAC does
                                (system:masters, then the roles and bindings
                                of the store); the config token's user
                                "kinformer-sim" and the anonymous user of a
                                sim without token or client CA are in
                                system:masters. See docs/sim.md. */
  /* The simulated workloads (the "kubelet" and "scheduler" controllers,
   * docs/sim.md "Workloads"): */
  int nodes;                 /* Nodes the kubelet creates at start, named
                                kinformer-sim-node-0..; default 1 */
  uint32_t pod_ready_delay_ms; /* from a pod's binding to Running and
                                Ready; default 1000 */
  uint32_t job_run_ms;       /* how long the containers of a pod with
                                restartPolicy Never or OnFailure run
                                before they exit 0; default 1000 */
} kin_sim_config;

/* Checks a kin_sim_config.controllers value. Returns 0, or KIN_EINVAL
 * with the first word that names no controller copied into bad (cap
 * bytes, NUL-terminated; bad may be NULL when cap is 0). The names:
 * kin_sim_controller_name. Thread-safe. */
int kin_sim_controllers_check(const char *spec, char *bad, size_t cap);

/* The name of the i-th controller the sim has (from 0), or NULL past the
 * last; *on_by_default (may be NULL) tells whether "*" runs it. */
const char *kin_sim_controller_name(size_t i, int *on_by_default);

/* The controllers' clock in milliseconds since start (0 when no
 * controller runs). Thread-safe. */
uint64_t kin_sim_clock_now_ms(kin_sim *sim);

/* Moves a fake clock (kin_sim_config.fake_clock) forward by ms; what falls
 * due runs on the controllers' thread. Returns 0, or KIN_EINVAL on the
 * real clock or when no controller runs. Thread-safe. */
int kin_sim_clock_advance(kin_sim *sim, uint64_t ms);

/* Waits until the controllers have seen every change made so far and have
 * no work due now (work due later, such as a Pod that becomes Ready after
 * a delay, does not count). Returns 0 (at once when no controller runs)
 * or KIN_ETIMEDOUT after timeout_ms. Thread-safe. */
int kin_sim_settle(kin_sim *sim, uint32_t timeout_ms);

/* Fills cfg with the defaults above. */
void kin_sim_config_init(kin_sim_config *cfg);

/* Checks a feature_gates value (kin_sim_config.feature_gates): 0, or
 * KIN_EINVAL with why in err. */
int kin_sim_feature_gates_check(const char *gates, char *err, size_t errlen);

/* Starts a server (cfg may be NULL for the defaults; its strings are copied).
 * Returns 0 and the server in *out (release with kin_sim_free), KIN_EINVAL
 * when the seed file or TLS files cannot be read or parsed (or a client CA
 * is given without a serving certificate, or the authorization mode is
 * neither "AlwaysAllow" nor "RBAC"), KIN_EBUSY when
 * the address cannot be bound, or KIN_ENOMEM. */
int kin_sim_start(const kin_sim_config *cfg, kin_sim **out);

/* Base URL, e.g. "http://127.0.0.1:41234"; owned by the server. */
const char *kin_sim_url(const kin_sim *sim);

/* Port actually bound. */
uint16_t kin_sim_port(const kin_sim *sim);

/* Writes a kubeconfig (cluster, user with the token if any, context
 * "kinformer-sim") to path. Returns 0 or KIN_EINVAL when path cannot be
 * written. With TLS the cluster uses insecure-skip-tls-verify. */
int kin_sim_write_kubeconfig(const kin_sim *sim, const char *path);

/* Closes every watch and stops serving; idempotent. Blocks until every
 * connection thread has returned. */
void kin_sim_stop(kin_sim *sim);

/* A restart: closes every connection and stops serving as kin_sim_stop,
 * waits down_ms, then serves again on the same port with the same store
 * (objects, resourceVersions and watch history kept, as kube-apiserver
 * restarted over the same etcd). Returns 0, KIN_EINVAL when stopped, or
 * KIN_EBUSY when the port could not be bound again within 5 s (the server
 * then stays stopped). */
int kin_sim_restart(kin_sim *sim, uint32_t down_ms);

/* Stops the server if needed and frees everything. NULL is a no-op. */
void kin_sim_free(kin_sim *sim);

/* Current resourceVersion of the store (the last one issued). */
uint64_t kin_sim_resource_version(kin_sim *sim);

/* Drops the watch history older than the current resourceVersion, as an
 * etcd compaction: a later watch or continue from an older version gets
 * 410 (which also expires every continue token handed out). */
void kin_sim_compact(kin_sim *sim);

/* Fault injection, for testing clients (also reachable over HTTP: POST
 * /kinformer-sim/faults, see docs/sim.md). Each applies to the watches open
 * at the time of the call. */

/* Closes every open watch abruptly (no final chunk), as a dying server. */
void kin_sim_drop_watches(kin_sim *sim);
/* Cuts each open watch in the middle of its next event, then closes it. */
void kin_sim_cut_watches(kin_sim *sim);
/* Sends each open watch one line that is not JSON. */
void kin_sim_send_malformed_line(kin_sim *sim);
/* Watches keep their connection but send nothing for ms milliseconds. */
void kin_sim_stall_watches(kin_sim *sim, uint32_t ms);
/* Answers the next count API requests with code (429 with Retry-After: 1,
 * 500 or 503) as Status objects. Returns 0 or KIN_EINVAL for another code. */
int kin_sim_fail_next(kin_sim *sim, int code, unsigned count);
/* Delays every later request by ms milliseconds (0: none). */
void kin_sim_set_latency(kin_sim *sim, uint32_t ms);

/* Observes every request, for tests: fn(ud, method, uri) runs on the
 * request's connection thread before authentication and any fault, with
 * uri the path and its decoded query ("/api/v1/pods?limit=500&..."). It
 * runs without any sim lock, so it may call the kin_sim functions (compact
 * between two pages of a list, say) or send requests of its own. NULL
 * removes it; a request already inside fn still finishes its call. */
typedef void (*kin_sim_request_hook)(void *ud, const char *method, const char *uri);
void kin_sim_set_request_hook(kin_sim *sim, kin_sim_request_hook fn, void *ud);

/* Write log, for replay tests: after kin_sim_write_log_start every POST,
 * PUT, PATCH and DELETE on an API path that reaches the resource handlers
 * (past authentication and injected failures; dry runs included) is kept.
 * kin_sim_write_log_take returns the entries since the last take as a JSON
 * array text of {"method", "uri" (path and decoded query), "userAgent",
 * "body"} (malloc'd, the caller frees) and keeps logging; NULL when the log
 * was never started or on ENOMEM. Both are thread-safe. */
void kin_sim_write_log_start(kin_sim *sim);
char *kin_sim_write_log_take(kin_sim *sim);

/* Restored state, for replaying a recorded cluster (kinformer.replay) and
 * for seeds: kin_sim_put stores json (len bytes, an object of a served
 * apiVersion and kind) as the state of that object, as if read back from
 * storage, without any client-facing checks but the name's: unlike an API
 * create or update, it keeps metadata.uid, creationTimestamp, generation,
 * deletionTimestamp, managedFields and status as given (what it lacks of
 * uid, creationTimestamp and generation comes from the object it replaces,
 * else is assigned as on a create). It creates the object (ADDED) or
 * replaces it (MODIFIED); its namespace is made when missing (a namespaced
 * object without one goes to "default"). deleted != 0 removes it instead (DELETED;
 * nothing when absent), except that an object with finalizers and no
 * deletionTimestamp is marked as a delete request marks it
 * (deletionTimestamp now, MODIFIED), so that what put those finalizers
 * there still runs; an object given with a deletionTimestamp and no
 * finalizers is removed too. The resourceVersion stays monotonic: a
 * metadata.resourceVersion above the store's becomes the object's (the
 * counter jumps to it, later writes get higher ones); an older or absent
 * one gives the next, as a write would. Watchers see the change as any
 * other. A put CRD is registered on its create only. Returns 0 with the
 * resourceVersion written in *rv (0 when nothing changed; rv may be NULL),
 * KIN_EINVAL (not JSON, not a served kind, a name the resource refuses;
 * the reason in msg, msgcap bytes, when msg is not NULL) or KIN_ENOMEM.
 * kin_sim_get returns the stored JSON of the object of api_version and
 * kind named ns/name (ns NULL or "" for cluster-scoped) as malloc'd text
 * the caller frees, NULL when absent, not served or on ENOMEM. Both are
 * thread-safe. */
int kin_sim_put(kin_sim *sim, const char *json, size_t len, int deleted, uint64_t *rv,
                char *msg, size_t msgcap);
char *kin_sim_get(kin_sim *sim, const char *api_version, const char *kind, const char *ns,
                  const char *name);

/* Request log, for deriving RBAC rules from what a client did (as
 * audit2rbac reads kube-apiserver's audit log): after
 * kin_sim_request_log_start every request that reaches the API server is
 * kept, the refused ones too (401, 404, 409, 422, injected failures...),
 * every path but the sim's own /kinformer-sim/ endpoints, as the
 * attributes kube-apiserver's authorizer sees (RequestInfo and the user)
 * with the status answered. An entry is a JSON object of
 *   "verb"       RBAC verb (get, list, watch, create, update, patch, delete,
 *                deletecollection; "" for another method on a resource
 *                path); the lower-case HTTP method for a non-resource path
 *   "apiGroup", "apiVersion", "resource" (resource requests only; the
 *                group "" for core), "subresource", "namespace", "name"
 *                (each left out when empty)
 *   "nonResourceURL"  the path, for non-resource requests only
 *   "user"       the authenticated user (left out when anonymous or none)
 *   "userAgent"  the User-Agent header ("" when none)
 *   "dryRun"     true for ?dryRun=All (left out otherwise)
 *   "code"       the HTTP status answered (0: the connection was closed
 *                without an answer)
 * kin_sim_request_log_take returns the entries since the last take as a
 * compact JSON array text (malloc'd, the caller frees) and keeps logging;
 * NULL when the log was never started or on ENOMEM. Past
 * kin_sim_config.request_log_limit entries between two takes, later
 * requests are only counted, and the array ends with one more element,
 * {"truncated":true,"dropped":N}. Starting a started log changes nothing.
 * Both are thread-safe. */
void kin_sim_request_log_start(kin_sim *sim);
char *kin_sim_request_log_take(kin_sim *sim);

/* Bearer tokens of named users, beside kin_sim_config.token (whose user
 * is "kinformer-sim"): a request with "Authorization: Bearer <token>"
 * authenticates as the token's user (in no group but
 * system:authenticated). A server started without token and client CA
 * stays open to all: a request bearing a named user's token is that user,
 * any other is anonymous, as before. kin_sim_add_token registers token
 * for user (both copied): returns 0 (also when it is already that user's),
 * KIN_EINVAL when either is empty or the token is another user's (the
 * config's token included), or KIN_ENOMEM. kin_sim_token returns a token
 * of user: its first registered one (the config's token for
 * "kinformer-sim"), else a new random one ("kinformer-sim-" and 32 hex
 * digits) registered for it; malloc'd, the caller frees; NULL for an
 * empty user or on ENOMEM. Both are thread-safe. */
int kin_sim_add_token(kin_sim *sim, const char *user, const char *token);
char *kin_sim_token(kin_sim *sim, const char *user);

/* Benchmark helper (also POST /kinformer-sim/burst, see docs/sim.md):
 * makes count updates of the existing objects of resource
 * ("[group/]version/resource") in ns (NULL or "": every namespace),
 * round-robin in key order, each setting the annotation
 * kinformer-sim/burst to its new resourceVersion. The whole burst is
 * committed under the store lock, so watchers then read it back to back at
 * replay speed and a watch benchmark measures its clients, not a writer.
 * Stores the first and last resourceVersion written (either pointer may
 * be NULL). Returns 0, KIN_ENOENT (unknown resource or no object),
 * KIN_EINVAL (malformed resource, count 0, or count above the watch
 * history, which would expire every watch) or KIN_ENOMEM. */
int kin_sim_burst_updates(kin_sim *sim, const char *resource, const char *ns, unsigned count,
                          uint64_t *first_rv, uint64_t *last_rv);


/* ---- admission and conversion webhooks (admission/, docs/sim.md) ----
 *
 * The sim runs kube-apiserver's admission chain on every create, update,
 * patch, apply and delete (mutating webhooks, then validating ones) and
 * calls a CRD's conversion webhook (spec.conversion.strategy Webhook) to
 * read or write it at a version other than its storage version. It calls
 * the webhooks of the ValidatingWebhookConfigurations,
 * MutatingWebhookConfigurations and CRDs stored in it over HTTPS at their
 * clientConfig.url (with their caBundle), and those registered here in
 * process, through a function instead of a socket. */

/* Answers one review as a webhook server would answer a POST of body (an
 * AdmissionReview or ConversionReview v1) to path, with timeout_ms the
 * ?timeout= kube-apiserver would send. Returns the HTTP status (200 with
 * the answering review in *out), or a negative KIN_E* code; *out is
 * malloc'd, the sim frees it. kin_webhook_server_serve (webhook.h) has
 * this shape with ud the kin_webhook_server. */
typedef int (*kin_sim_review_fn)(void *ud, const char *path, const char *body, size_t len,
                                 uint32_t timeout_ms, char **out, size_t *outlen);

/* Registers in-process webhooks described by config_json (len bytes): a
 * ValidatingWebhookConfiguration or MutatingWebhookConfiguration (every
 * webhook in it, with its rules, selectors, failurePolicy, timeoutSeconds,
 * sideEffects, matchPolicy; clientConfig.url's path is the path handed
 * to fn, its host is ignored), or a CustomResourceDefinition naming a CRD
 * (metadata.name) whose spec.conversion says strategy Webhook (the path
 * of its clientConfig.url): that CRD's conversions go to fn whatever its
 * stored spec.conversion says. Nothing is stored (kubectl lists none of
 * these). Returns 0 and an id in *id; KIN_EINVAL when the configuration
 * is not understood; KIN_ENOMEM. Thread-safe. */
int kin_sim_webhook_register(kin_sim *sim, const char *config_json, size_t len,
                             kin_sim_review_fn fn, void *ud, uint64_t *id);

/* Unregisters id and waits until no call of its fn is under way. Returns
 * 0 or KIN_ENOENT. Thread-safe; not from inside fn. */
int kin_sim_webhook_unregister(kin_sim *sim, uint64_t id);

#endif
