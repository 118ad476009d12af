---@meta kinformer.core
-- kinformer.core (csrc/lua): the C module under the Lua API. An operator
-- may use the JSON functions, the clock and the log; the rest serves
-- kinformer's own Lua modules (marked "internal"), described so that
-- editors and the type check follow that code too.

---A Lua function or module run in a worker state of its own (core.worker; internal).
---@class kinformer.core.Worker
local Worker = {}

---Calls the function (or the module's function named) in the worker state.
---@param ... any
---@return any ...
function Worker:call(...) end

---Calls a handler function of the worker's table with a key and objects.
---@param handler string
---@param key string
---@param ... any
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Worker:dispatch(handler, key, ...) end

---@return { calls: integer, errors: integer, rebuilds: integer, memory: integer }
function Worker:stats() end

---Stops and joins the thread. Idempotent.
function Worker:close() end

---The C controller under a kinformer.Controller (env:controller; internal).
---@class kinformer.core.Controller
local CController = {}

---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function CController:start() end

---@param timeout? number
function CController:stop(timeout) end

---@param timeout? number
function CController:shutdown(timeout) end

---@return kinformer.ControllerStats
function CController:stats() end

---@return kinformer.BusyWorker[]
function CController:busy() end

---@param ns string?
---@param name string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function CController:enqueue(ns, name) end

---Adds (ns, name) for every name of names in one call (a C loop).
---@param ns string?
---@param names string[]
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function CController:enqueue_many(ns, names) end

---@param key string
---@return kinformer.WhyEntry[]? history
---@return string? msg
---@return kinformer.ErrorCode? code
function CController:why(key) end

---@return string
function CController:name() end

---@return integer
function CController:queue_len() end

---@param max? integer
---@return kinformer.QueueItem[] items
---@return number? next_due
function CController:queue(max) end

---@param key string
---@return integer
function CController:num_requeues(key) end

---@param code? string|function
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function CController:reload(code) end

function CController:close() end

---A label selector (core.label_selector); tostring gives its canonical form.
---@class kinformer.core.LabelSelector
local LabelSelector = {}

---Whether labels (a table of name -> value; nil: none) match.
---@param labels? table<string, string>
---@return boolean
function LabelSelector:matches(labels) end

function LabelSelector:close() end

---The elector under kinformer.LeaderElection (core.leader_elector; internal).
---@class kinformer.core.LeaderElector
local LeaderElector = {}

---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function LeaderElector:start() end

function LeaderElector:stop() end

---@return kinformer.LeaderElectionState
function LeaderElector:state() end

---@return boolean
function LeaderElector:is_leader() end

function LeaderElector:close() end

---The metrics, health and admin endpoints (core.metrics_server; internal).
---@class kinformer.core.MetricsServer
local MetricsServer = {}

---The bound port, nil when that endpoint is disabled.
---@param which? "metrics"|"health"|"admin"
---@return integer?
function MetricsServer:port(which) end

---Key pairs the HTTPS endpoints loaded (1 at start, +1 per rotation; 0 without HTTPS).
---@return integer
function MetricsServer:cert_generation() end

---@param probe "healthz"|"readyz"
---@param name string
---@param ok boolean
---@param msg? string
---@param ttl? number
function MetricsServer:set_check(probe, name, ok, msg, ttl) end

---@param probe "healthz"|"readyz"
---@param name string
function MetricsServer:remove_check(probe, name) end

function MetricsServer:close() end

---A manager's webhook server (core.webhook_server; internal: kinformer.webhook drives it).
---@class kinformer.core.WebhookServer
local WebhookServer = {}

---Adds a hook whose handler runs in a pool of `workers` worker states.
---@param hook { name: string, path: string, type: "validating"|"mutating"|"conversion", handler: function, workers?: integer, memory_limit?: integer, timeout?: number }
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function WebhookServer:add(hook) end

---Removes the hook at path (waits for its calls); false when there is none.
---@param path string
---@return boolean
function WebhookServer:remove(path) end

---Starts listening: the port, or nil, message, code.
---@return integer? port
---@return string? msg
---@return kinformer.ErrorCode? code
function WebhookServer:start() end

---@return integer? port nil before start or without HTTPS
function WebhookServer:port() end

---The self-made CA's PEM (the caBundle), or nil.
---@return string?
function WebhookServer:ca() end

---Answers a review given in memory: the HTTP status and the answer.
---@param path string
---@param body string
---@param timeout_ms? integer
---@return integer? status
---@return string? answer_or_msg
---@return kinformer.ErrorCode? code
function WebhookServer:serve(path, body, timeout_ms) end

---kin_webhook_server_serve and the server as light userdata (a sim's in-process calls).
---@return lightuserdata fn
---@return lightuserdata server
function WebhookServer:inprocess() end

function WebhookServer:close() end

---A directory watcher (core.fs_watch; internal).
---@class kinformer.core.FsWatch
local FsWatch = {}

function FsWatch:close() end

---The module: require "kinformer.core".
---@class kinformer.core
---@field version string
---@field null lightuserdata JSON null (in decoded values; encodes as null)
---@field array_mt table the metatable that makes a table encode as a JSON array
local M = {}

---Decodes JSON text (integers as Lua integers; arrays encode back as []).
---@param s string
---@return any value
---@return string? msg
---@return kinformer.ErrorCode? code
function M.json_decode(s) end

---Encodes a value as JSON, or nil, message, code.
---@param v any
---@return string? json
---@return string? msg
---@return kinformer.ErrorCode? code
function M.json_encode(v) end

---A new empty table that encodes as [].
---@return table
function M.empty_array() end

---Seconds on a monotonic clock.
---@return number
function M.monotime() end

---One line through kinformer's log.
---@param level kinformer.LogLevel|integer
---@param component string
---@param msg string
function M.log(level, component, msg) end

---Whether core.log at level prints.
---@param level kinformer.LogLevel|integer
---@return boolean
function M.log_enabled(level) end

---Sets the process-wide log level.
---@param level kinformer.LogLevel|integer
function M.set_log_level(level) end

---Blocks SIGINT and SIGTERM in the calling thread (env:wait_signal takes them).
function M.block_signals() end

---Flushes stdout and stderr and ends the process at once with code.
---@param code integer
function M.exit_now(code) end

---Options of core.limited_call.
---@class kinformer.LimitedCallOptions
---@field what? string what the call is, for the message ("health check")
---@field name? string its name, for the message
---@field option? string the option that sets the time limit, for the message
---@field memory_option? string the option that sets the memory limit, for the message
---@field timeout? number seconds (0 or absent: none)
---@field memory_limit? integer bytes the call may add to the main state (0 or absent: none)
---@field signals? boolean a pending SIGINT/SIGTERM interrupts the call

---Calls fn(...) in the calling state under a time limit and a memory limit
---(a count hook; the main state's accounting allocator): true and fn's
---results, or false, message, code ("ETIMEDOUT", "ECANCELED", "ENOMEM",
---"ELUA").
---@param opts kinformer.LimitedCallOptions
---@param fn function
---@param ... any
---@return boolean ok
---@return any ...
function M.limited_call(opts, fn, ...) end

---Whether SIGINT or SIGTERM is pending (blocked, waiting for mgr:run's loop).
---@return boolean
function M.term_signal_pending() end

---The code a worker state's os.exit(code) asked for (a graceful stop of the
---manager), or nil; clear = true forgets the request.
---@param clear? boolean
---@return integer? code
function M.stop_requested(clear) end

---kinformer.object.
---@param json string
---@return kinformer.Object? obj
---@return string? msg
---@return kinformer.ErrorCode? code
function M.object(json) end

---kinformer.tombstone.
---@param key string
---@param last? kinformer.Object
---@return kinformer.Object
function M.tombstone(key, last) end

---kinformer.plain.
---@generic T
---@param v T
---@return T
function M.materialize(v) end

---kinformer.is_view.
---@param v any
---@return boolean
function M.is_view(v) end

---kinformer.is_terminal.
---@param v any
---@return boolean
function M.is_terminal(v) end

---The outcome of ok, a, b = pcall(reconcile, ...) as the workers see it:
---"done", "requeue", "requeue_after" (detail: seconds), "error" or
---"terminal" (detail: the error's text). Internal.
---@param ok boolean
---@param a any
---@param b any
---@return "done"|"requeue"|"requeue_after"|"error"|"terminal" kind
---@return any detail
function M.reconcile_result(ok, a, b) end

---A manager's C state (kinformer.manager makes it; internal).
---@param opts? table kinformer.ManagerOptions' connection part, and user_agent
---@return kinformer.Env? env
---@return string? msg
---@return kinformer.ErrorCode? code
function M.env(opts) end

---env:controller(spec) (internal).
---@param env kinformer.Env
---@param spec table
---@return kinformer.core.Controller
function M.controller(env, spec) end

---A worker thread with its own Lua state running code (a module name, a
---self-contained function or a table of them). Internal.
---@param code string|function|table
---@param opts? { memory_limit?: integer, name?: string, timeout?: number }
---@return kinformer.core.Worker? worker
---@return string? msg
---@return kinformer.ErrorCode? code
function M.worker(code, opts) end

---A fresh default leader-election identity, "<hostname>_<uuid>" (internal).
---@return string
function M.leader_identity() end

---The env's leadership fence, made (closed) on first use (internal): its
---open epoch (0 while closed) and whether writes may be sent under it now.
---@param env kinformer.Env
---@return integer epoch
---@return boolean holds
function M.leader_fence(env) end

---Sets the ranges this replica's controllers take (kinformer.sharding;
---internal): a shard selector, "*" (everything) or nil (nothing).
---@param env kinformer.Env
---@param selector? string
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function M.shard_gate(env, selector) end

---The env's shard gate counters, nil without one (internal).
---@param env kinformer.Env
---@return { generation: integer, open: boolean, dropped_enqueues: integer, skipped_reconciles: integer, requeued: integer, changed_at: number }?
function M.shard_gate_stats(env) end

---FNV-1a 64 of s, the API server's shard hash (an integer read unsigned).
---@param s string
---@return integer
function M.shard_hash(s) end

---A shard selector parsed with the API server's rules, or nil, message, "EINVAL".
---@param selector string
---@return { ranges: integer[][], key: "uid"|"namespace", string: string }? sel
---@return string? msg
---@return kinformer.ErrorCode? code
function M.shard_selector(selector) end

---Blocks the calling thread for seconds (0..60): a stand-in for a slow call.
---@param seconds number
function M.sleep(seconds) end

---The JSON the admin endpoint serves at /shards (internal; nil: none).
---@param json? string
function M.admin_set_shards(json) end

---A label selector parsed with the API server's rules, or nil, message, "EINVAL".
---@param selector? string "" and nil select everything
---@return kinformer.core.LabelSelector? sel
---@return string? msg
---@return kinformer.ErrorCode? code
function M.label_selector(selector) end

---The elector under kinformer.leader_election (internal).
---@param env kinformer.Env
---@param opts table
---@return kinformer.core.LeaderElector
function M.leader_elector(env, opts) end

---Watches directories; fn(paths) runs in the main state (env:step). Internal.
---@param env kinformer.Env
---@param dirs string[]
---@param fn fun(paths: string[])
---@param debounce? number seconds (default 0.1)
---@return kinformer.core.FsWatch? watcher
---@return string? msg
---@return kinformer.ErrorCode? code
function M.fs_watch(env, dirs, fn, debounce) end

---Registers (or finds) a metric: kinformer.metrics' constructors (internal).
---@param opts kinformer.MetricOptions|{ type: "counter"|"gauge"|"histogram" }
---@return kinformer.Metric
function M.metric(opts) end

---kinformer.metrics.render.
---@return string? text
---@return string? msg
---@return kinformer.ErrorCode? code
function M.metrics_render() end

---Starts the metrics, health and admin endpoints (internal).
---@param opts { metrics_bind?: string, health_bind?: string, admin_bind?: string, metrics_secure?: boolean, metrics_cert_path?: string, metrics_cert_name?: string, metrics_cert_key?: string, env?: kinformer.Env, max_conns?: integer, max_conns_per_ip?: integer, idle_timeout?: integer }
---@return kinformer.core.MetricsServer? server
---@return string? msg
---@return kinformer.ErrorCode? code
function M.metrics_server(opts) end

---Makes a manager's webhook server, not listening yet (internal).
---@param opts { env: kinformer.Env, bind_address?: string, tls?: boolean, cert_path?: string, cert_name?: string, cert_key?: string, hosts?: string[], max_connections?: integer, max_request_bytes?: integer }
---@return kinformer.core.WebhookServer? server
---@return string? msg
---@return kinformer.ErrorCode? code
function M.webhook_server(opts) end

---One GET: the body and the HTTP status, or nil, message, code. opts: a
---bearer token (over https only), no TLS verification, or a CA file.
---Internal (`kinformer inspect`).
---@param url string
---@param timeout? number seconds (default 10)
---@param opts? { token?: string, insecure?: boolean, ca?: string }
---@return string? body
---@return integer|string|nil status_or_msg
---@return kinformer.ErrorCode? code
function M.http_get(url, timeout, opts) end

---Raises RLIMIT_NOFILE's soft limit to the hard one (internal: the
---manager does at start): the soft limit before and after.
---@return integer? before
---@return integer|string|nil after_or_msg
---@return kinformer.ErrorCode? code
function M.raise_nofile() end

---Holds kinformer's log lines (true) instead of writing them to stderr;
---returns whether they were held before. Internal (the REPL).
---@param on boolean
---@return boolean
function M.log_hold(on) end

---The log lines held since the last take, and how many were dropped.
---@return string[] lines
---@return integer dropped
function M.log_take() end

return M
