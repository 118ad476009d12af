---@meta kinformer.manager
-- kinformer.manager (lua/kinformer/manager.lua): kinformer.manager{...}.

---An RBAC rule the operator needs (manager and controller option `rbac`;
---`kinformer manifests` adds it to the ClusterRole or Role).
---@class kinformer.RbacRule
---@field resources string[] Resources: kinformer resource names ("v1/configmaps", "apps/v1/deployments", "example.com/v1/widgets/status"), or plain resource names ("configmaps") with api_groups.
---@field verbs string[] Verbs: "get", "list", "watch", "create", "update", "patch", "delete", ...
---@field api_groups? string[] The API groups of plain resource names ("" the core group).
---@field resource_names? string[] Only these objects.
---@field non_resource_urls? string[] Non-resource URLs (a ClusterRole only).

---The manager's event recorder (option `events`).
---@class kinformer.EventsOptions
---@field instance? string reportingInstance (default the host name)
---@field queue_size? integer events queued before new ones are dropped (default 1000)
---@field api? "events.k8s.io/v1"|"v1" default: what discovery lists (events.k8s.io/v1 when served)

---kinformer.manager{sharding = ...}: {replicas = "auto"} on Leases, or
---{shard = i, of = n} fixed (README "Running sharded").
---@class kinformer.ShardingOptions
---@field replicas? "auto" members and buckets on Leases, keys handed over with no overlap
---@field shard? integer static: this replica's shard, 0..of-1
---@field of? integer static: how many shards
---@field key? "uid"|"namespace" what the hash reads (default "uid": metadata.uid of the For object)
---@field namespace? string the Leases' namespace (default the manager's)
---@field identity? string this replica's identity (default "<operator>/<hostname>_<uuid>")
---@field lease_duration? number seconds (default 15)
---@field renew_deadline? number seconds (default 10)
---@field retry_period? number seconds (default 2)
---@field forget_members_after? number seconds a dead member's Lease stays before a live member deletes it (default 10 lease durations)

---mgr:shards().
---@class kinformer.ShardingState
---@field mode "auto"|"static"
---@field key "uid"|"namespace"
---@field member? string this replica's member Lease (auto)
---@field members? string[] the live members it sees (auto)
---@field buckets? integer buckets of of_buckets it owns (auto)
---@field of_buckets integer
---@field releasing integer buckets being handed over
---@field handovers integer buckets given away
---@field taken integer buckets taken
---@field forgotten integer dead members' Leases this replica deleted
---@field shard? integer static
---@field of? integer static
---@field selector? string the ranges its controllers take
---@field gate? table the shard gate's counters
---@field informers table[] per sharded informer: name, objects and its kinformer.ShardStatus


---kinformer.manager{...}'s options, all optional. Durations are seconds
---(fractions allowed).
---@class kinformer.ManagerOptions
---@field kubeconfig? string the kubeconfig file (default $KUBECONFIG, then ~/.kube/config)
---@field context? string the kubeconfig context (default its current-context)
---@field url? string a server URL: no kubeconfig is read or written (with token, insecure, ca)
---@field token? string bearer token (with url)
---@field insecure? boolean skip TLS verification (with url)
---@field ca? string CA file path (with url)
---@field sim? kinformer.Sim an in-process server to talk to (see kinformer.sim)
---@field namespace? string default namespace of namespaced informers and mgr.namespace
---@field qps? number client-side rate limit
---@field burst? integer
---@field resync? number informers' default resync period (seconds)
---@field timeout? number request timeout (seconds)
---@field sync_timeout? number how long mgr:start waits for the caches (default 120)
---@field log_level? kinformer.LogLevel
---@field in_cluster? boolean the in-cluster service account instead of a kubeconfig
---@field reconcile_timeout? number the controllers' default reconcile deadline (none when absent)
---@field busy_warning_after? number warn when every worker is busy this long (default 60; 0: never)
---@field shutdown_timeout? number how long mgr:run's shutdown lets reconciles finish (default 30)
---@field read_idle_timeout? number probe an HTTP/2 connection silent this long (default 30)
---@field ping_timeout? number close a connection whose probe got no answer within it (default 15)
---@field watch_idle_timeout? number re-establish a watch silent this long (default 300)
---@field metrics_bind? string|integer address of /metrics ("host:port", ":port"; default "0": off)
---@field health_bind? string|integer address of /healthz and /readyz (default "0": off)
---@field admin_bind? string|integer address of the admin endpoint `kinformer inspect` reads (default "0": off; ":port" binds 127.0.0.1 and checks Host; another host: HTTPS behind TokenReview + SubjectAccessReview)
---@field metrics_secure? boolean serve /metrics over HTTPS behind TokenReview + SubjectAccessReview of get on /metrics (default false)
---@field metrics_cert_path? string folder of the metrics key pair, reloaded when it rotates (default: self-signed at start)
---@field metrics_cert_name? string its certificate file (default "tls.crt")
---@field metrics_cert_key? string its key file (default "tls.key")
---@field events? kinformer.EventsOptions
---@field leader_election? kinformer.LeaderElectionOptions controllers run only while this replica leads
---@field sharding? kinformer.ShardingOptions split the controllers' keys and For caches across replicas
---@field clock? "real"|"fake" "fake": the controllers' queues and rate limiters run on a clock moved by mgr:clock_advance
---@field name? string the operator's name (a DNS label): the default Lease name of leader election; default: the script's folder and controllers' names
---@field log_reconciles? boolean log one line per reconcile of every controller (`kinformer run -v`)
---@field rbac? kinformer.RbacRule[] RBAC rules the operator needs beyond what its informers and controllers imply
---@field handler_timeout? number seconds each handler call (worker or main state) and map function may run (default 10; 0: none)
---@field transform_timeout? number seconds each transform call may run (default 10; 0: none; mgr:informer's overrides)
---@field check_timeout? number seconds each health check run may take; a check cut at it fails (default 5)
---@field on_start_timeout? number seconds the on_start of a `kinformer run` script may run (default 30)
---@field content_type? "auto"|"json"|"protobuf" the encoding informers ask for: "auto" (default) protobuf for built-in types and JSON for custom resources, as client-go; "json" JSON only
---@field disable_compression? boolean do not ask for gzip (default false: every request asks for it, as client-go's transport does; kube-apiserver compresses large LIST pages); the kubeconfig's disable-compression does the same
---@field max_response_bytes? integer the largest body of an answer that is not a watch (GET, LIST pages, discovery; default 256 MiB; math.huge: no cap): a breach fails that request with ETOOBIG
---@field main_memory_limit? integer bytes one main-state call (main-state handler, health check, on_start) may add (default 512 MiB; 0: none)
---@field webhook_bind_address? string|integer address of the webhook server (default ":9443"; "0": none; with sim: none unless given)
---@field webhook_cert_path? string folder of the webhook key pair, reloaded when it rotates (default: a CA and a serving certificate made at start)
---@field webhook_cert_name? string its certificate file (default "tls.crt")
---@field webhook_cert_key? string its key file (default "tls.key")
---@field webhook_host? string the host kube-apiserver reaches the webhooks at (clientConfig.url; default 127.0.0.1, or the Service in a cluster)
---@field webhook_service? { namespace?: string, name?: string, port?: integer } the Service of clientConfig.service (default "<name>-webhook-service", port 443)
---@field webhook_configure? boolean apply the webhook configurations with the CA at start (default: true with a self-made certificate)

---mgr:webhook's spec (docs/webhooks.md).
---@class kinformer.WebhookSpec
---@field name string a DNS label, unique in the manager
---@field validate? fun(req: kinformer.WebhookRequest, ctx: kinformer.WebhookCtx): boolean?, string?, string[]?
---@field mutate? fun(req: kinformer.WebhookRequest, ctx: kinformer.WebhookCtx): (table|boolean|nil), string?
---@field convert? fun(obj: table, to_version: string, ctx: kinformer.WebhookCtx): table?, string?
---@field resources string|string[] "websites.example.com", "apps/v1/deployments", "pods", "pods/status"...
---@field operations? string|string[] CREATE, UPDATE (default), DELETE, CONNECT, "*"
---@field failure_policy? "Fail"|"Ignore"
---@field timeout? integer seconds, 1..30 (default 10)
---@field path? string default "/validate-...", "/mutate-...", "/convert-..."
---@field side_effects? "None"|"NoneOnDryRun"
---@field namespace_selector? table a LabelSelector
---@field object_selector? table a LabelSelector
---@field match_policy? "Exact"|"Equivalent"
---@field reinvocation_policy? "Never"|"IfNeeded"
---@field workers? integer worker states serving the hook at once (default 2)
---@field memory_limit? integer bytes per worker state

---What a validate or mutate handler gets.
---@class kinformer.WebhookRequest
---@field uid string
---@field operation "CREATE"|"UPDATE"|"DELETE"|"CONNECT"
---@field kind { group: string, version: string, kind: string }
---@field resource { group: string, version: string, resource: string }
---@field sub_resource string
---@field name string
---@field namespace string
---@field dry_run boolean
---@field user_info { username?: string, uid?: string, groups?: string[], extra?: table }
---@field options? table
---@field object? table a lazy view (mutate: change it, or return a new table)
---@field old_object? table

---A webhook handler's ctx.
---@class kinformer.WebhookCtx
---@field client kinformer.Client the manager's client; its requests carry the review's deadline
---@field listers table<string, kinformer.Informer> the manager's informers, read-only
---@field log kinformer.Logger lines tagged [webhook=<name> key=<ns/name>]
---@field deadline number core.monotime() seconds by which the answer is due
---@field webhook string the hook's name
---@field env kinformer.Env
local WebhookCtx = {}

---Adds a warning to the response.
---@param msg string
function WebhookCtx:warn(msg) end

---The manager's informer named name, read-only, or nil, message, code.
---@param name string
---@return kinformer.Informer? informer
---@return string? msg
---@return kinformer.ErrorCode? code
function WebhookCtx:lister(name) end

---A registered webhook (mgr:webhook).
---@class kinformer.Webhook
local Webhook = {}
---@return string
function Webhook:name() end
---@return string
function Webhook:path() end
---@return "validating"|"mutating"|"conversion"
function Webhook:type() end

---mgr:start's and mgr:run's options.
---@class kinformer.StartOptions
---@field timeout? number seconds to wait for the caches (default the manager's sync_timeout)
---@field on_progress? fun(progress: kinformer.SyncProgress[]) called with env:sync_progress() about every 0.1 s while waiting

---@class kinformer.ConnectionHealth
---@field probes integer
---@field probes_inconclusive integer
---@field dead_connections integer
---@field failed_over integer
---@field read_idle_timeout number
---@field ping_timeout number
---@field check_interval number

---@alias kinformer.HealthCheck fun(): boolean?, string?

---A manager: shares informers between handlers, controllers and listers,
---syncs their caches, runs until SIGINT/SIGTERM. Supports <close>.
---@class kinformer.Manager
---@field client kinformer.Client the REST client (made on first use)
---@field env kinformer.Env the C state under the manager
---@field namespace string the default namespace (option namespace, else the kubeconfig's)
---@field sync_timeout number
---@field reconcile_timeout? number
---@field busy_warning_after? number
---@field shutdown_timeout number
---@field check_timeout number
---@field on_start_timeout number
---@field main_memory_limit? integer
---@field exit_code? integer what a worker state's os.exit asked for (set by mgr:run when it stopped for it)
local Manager = {}

---The shared informer for resource and opts, or nil, message, code on a
---runtime failure (which also makes mgr:start fail). A misspelt resource
---or option raises.
---@param resource kinformer.Resource
---@param opts? kinformer.InformerOptions
---@return kinformer.Informer? informer
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Informer
---@return_overload nil, string, kinformer.ErrorCode
function Manager:informer(resource, opts) end

---Adds a controller (started by mgr:start, or at once when running). A bad
---config raises; a runtime failure returns nil, message, code.
---@param cfg kinformer.ControllerConfig
---@return kinformer.Controller? ctl
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Controller
---@return_overload nil, string, kinformer.ErrorCode
function Manager:controller(cfg) end

---@return "created"|"started"|"stopped"
function Manager:state() end

---Adds an admission or conversion webhook (docs/webhooks.md). Misuse
---raises; a runtime failure returns nil, message, code.
---@param spec kinformer.WebhookSpec
---@return kinformer.Webhook? webhook
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Webhook
---@return_overload nil, string, kinformer.ErrorCode
function Manager:webhook(spec) end

---The self-made CA of the webhook server (PEM: the caBundle), or nil.
---@return string?
function Manager:webhook_ca() end

---The port the webhook server listens on, or nil.
---@return integer?
function Manager:webhook_port() end

---Declares RBAC rules the operator needs beyond what `kinformer manifests`
---derives (for scripts that get their manager from the command); returns
---every rule declared so far (the rbac option's first).
---@param rules kinformer.RbacRule[]
---@return kinformer.RbacRule[]
function Manager:rbac(rules) end

---The operator's name: the name option, else derived from the script the
---command runs and the controllers registered (the default Lease).
---@return string
function Manager:name() end

---The registered controllers, in order and by name (a fresh table).
---@return table<integer|string, kinformer.Controller>
function Manager:controllers() end

---Starts the informers, waits for the caches to sync, starts the
---controllers. Returns true, or nil, message (naming the informer), code.
---@param opts? kinformer.StartOptions
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload true
---@return_overload nil, string, kinformer.ErrorCode
function Manager:start(opts) end

---Adds a liveness check (/healthz/<name>), run in the main state: it fails
---when it raises, returns false, or nil and a message.
---@param name string
---@param fn kinformer.HealthCheck
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Manager:add_healthz_check(name, fn) end

---Adds a readiness check (/readyz/<name>).
---@param name string
---@param fn kinformer.HealthCheck
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Manager:add_readyz_check(name, fn) end

---The port of /metrics (default), the probes or the admin endpoint, nil when off.
---@param which? "metrics"|"health"|"admin"
---@return integer?
function Manager:metrics_port(which) end

---@return kinformer.ConnectionHealth
function Manager:connection_health() end

---Runs the main-state handlers' queued events, waiting up to timeout
---seconds (default 0) for the first. Returns how many ran.
---@param timeout? number
---@return integer
function Manager:step(timeout) end

---The controllers' clock in seconds, and which clock it is.
---@return number seconds
---@return "fake"|"real" clock
function Manager:clock_now() end

---Moves the fake clock forward (raises on the real one); returns the new time.
---@param seconds number
---@return number
function Manager:clock_advance(seconds) end

---Starts, serves until SIGINT/SIGTERM, shuts down gracefully and stops.
---@param opts? kinformer.StartOptions
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload true
---@return_overload nil, string, kinformer.ErrorCode
function Manager:run(opts) end

---The graceful shutdown of mgr:run (sig names the signal, for the log).
---@param sig? string
function Manager:shutdown(sig) end

---Stops the controllers, then the informers. Idempotent.
function Manager:stop() end

---An event recorder reporting as component.
---@param component string
---@return kinformer.EventRecorder
function Manager:event_recorder(component) end

---Sharding's state (kinformer.sharding), nil without the sharding option:
---what `kinformer inspect shards` prints.
---@return kinformer.ShardingState?
function Manager:shards() end

---The leader election's state, nil without leader_election.
---@return kinformer.LeaderElectionState?
function Manager:leader_election() end

---A read-only informer of this manager by name ("v1/pods" or an
---informer's :name()), or nil, message, code.
---@param name string
---@return kinformer.Informer? lister
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Informer
---@return_overload nil, string, kinformer.ErrorCode
function Manager:lister(name) end

---Per informer (sorted by name), the fields projection keeping what
---handlers and reconcilers have read (inf:advise); `kinformer inspect
---advise` asks a running operator the same.
---@return kinformer.Advice[]
function Manager:advise() end

---Calls fn until it returns a true value, pumping main-state handlers, up
---to timeout seconds (default 10). Returns that value, or nil, "timed out",
---"ETIMEDOUT".
---@generic T
---@param fn fun(): T
---@param timeout? number
---@return T|nil value
---@return string? msg
---@return kinformer.ErrorCode? code
function Manager:wait_for(fn, timeout) end

---The module: require "kinformer.manager"; callable as kinformer.manager.
---@class kinformer.manager
---@overload fun(opts?: kinformer.ManagerOptions): kinformer.Manager?, string?, kinformer.ErrorCode?
---@field OPTIONS string[] kinformer.manager{...}'s option names
---@field START_OPTIONS string[] mgr:start's and mgr:run's option names
local M = {}

---Creates a manager: see kinformer.ManagerOptions. Returns it, or nil,
---message, code; misuse raises.
---@param opts? kinformer.ManagerOptions
---@return kinformer.Manager? mgr
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Manager
---@return_overload nil, string, kinformer.ErrorCode
function M.new(opts) end

---The env of mgr (raises when it has none).
---@param mgr kinformer.Manager
---@return kinformer.Env
function M.env_of(mgr) end

---Calls fn(...) with kinformer.manager{...} answered by make(opts) meanwhile
---(kinformer.bootstrap: a script that makes its own manager gets the
---command's). Returns what fn returns.
---@param make fun(opts: kinformer.ManagerOptions?, by: string?): kinformer.Manager
---@param fn function
---@param ... any
---@return any ...
function M.with_factory(make, fn, ...) end

---Raises at the caller's line unless name is nil or a DNS name of at most
---63 characters; what names the option in the message.
---@param name any
---@param what string
function M.check_name(name, what) end

---The name of a manager without a name option: the script's folder (for
---operator.lua, main.lua, init.lua; else its file name), then each
---controller name that differs, joined by "-".
---@param script? string
---@param controllers? string[]
---@return string
function M.derived_name(script, controllers) end

return M
