---@meta kinformer.sim
-- kinformer.sim (lua/kinformer/sim.lua, csrc/lua/lsim.c): an in-process
-- Kubernetes API server for tests and experiments (docs/sim.md).

---kinformer.sim.start's options, all optional.
---@class kinformer.SimOptions
---@field feature_gates? table<string, boolean>|string kube-apiserver's --feature-gates ({ShardedListAndWatch = true}: ?shardSelector= on lists and watches)
---@field port? integer 0: a free one
---@field bind? string default "127.0.0.1"
---@field token? string a bearer token every request must carry
---@field tls_cert? string PEM file: serve HTTPS (with tls_key)
---@field tls_key? string PEM file
---@field client_ca? string PEM file: client certificates it signed authenticate (CN user, O groups); needs TLS
---@field seed? string objects to create first: a JSON array, a List, or one object per line
---@field watch_history? integer events kept for watch resumption
---@field bookmark_interval_ms? integer period of BOOKMARK events
---@field legacy_events? boolean no events.k8s.io/v1: Events in core v1 only
---@field pre_encode? boolean keep each built-in object's protobuf bytes from its commit and serve them in lists and watches (benchmarks)
---@field users? table<string, string> named users' bearer tokens: { operator = "token-1" }
---@field request_log_limit? integer entries the request log keeps between two takes (default 1,000,000)
---@field controllers? string|string[] the controllers that run, in kube-controller-manager's --controllers syntax: "*" (default), "none", {"garbagecollector", "-kubelet"}
---@field clock? "real"|"fake" the controllers' clock; "fake" moves only by sim:clock_advance
---@field authorization? "rbac"|"always-allow" "rbac": authorize every request as kube-apiserver's RBAC (docs/sim.md, Authorization); default "always-allow"
---@field nodes? integer Nodes the "kubelet" controller registers at start (kinformer-sim-node-0..), default 1
---@field pod_ready_delay_ms? integer from a pod's binding to Running and Ready, default 1000
---@field job_run_ms? integer how long a pod with restartPolicy Never or OnFailure runs before it succeeds, default 1000

---sim:fault's argument.
---@class kinformer.SimFault
---@field kind "drop"|"cut"|"malformed"|"stall"|"fail"|"latency"|"compact"|"restart"
---@field ms? integer stall, latency: required; restart: the pause (default 0)
---@field code? 429|500|503 fail: the status
---@field count? integer fail: how many requests (default 1)

---One request of sim:request_log_take(), as a kube-apiserver audit event names it.
---@class kinformer.SimRequest
---@field verb string "get", "list", "watch", "create", "update", "patch", "delete", ...
---@field apiGroup string "" for the core group
---@field apiVersion string
---@field resource string
---@field subresource? string
---@field namespace? string
---@field name? string
---@field nonResourceURL? string for a path that names no resource ("/version", "/openapi/v3")
---@field user? string the authenticated user
---@field userAgent string
---@field code integer the HTTP status answered
---@field dryRun? boolean

---A running server. Stops on :stop(), at the end of a <close> scope and
---when collected.
---@class kinformer.Sim
---@field url string "http://127.0.0.1:PORT"
---@field port integer
---@field kubeconfig string a kubeconfig file for it (removed on stop)
local Sim = {}

---Stops the server and removes its kubeconfig. Idempotent.
function Sim:stop() end

---@return boolean
function Sim:running() end

---Injects a fault (misuse raises).
---@param f kinformer.SimFault
function Sim:fault(f) end

---Drops the watch history (older watches and continue tokens get 410).
function Sim:compact() end

---The store's current resourceVersion.
---@return integer
function Sim:resource_version() end

---Stores obj (a table or its JSON text) as restored state: its uid,
---creationTimestamp, generation, managedFields, deletionTimestamp and status
---kept, its resourceVersion the object's when above the sim's (the counter
---jumps there; else the next). Creates or replaces it, making its namespace;
---opts.deleted removes it (or marks it deleted while finalizers hold it).
---Returns the resourceVersion written (0: nothing changed), or nil, message,
---code.
---@param obj table|string
---@param opts? { deleted?: boolean }
---@return integer? rv
---@return string? err
---@return string? code
function Sim:put(obj, opts) end

---The stored object of api_version and kind named namespace/name (nil
---namespace for a cluster-scoped kind), read without a request; nil when none.
---@param api_version string
---@param kind string
---@param namespace string?
---@param name string
---@return table?
function Sim:get(api_version, kind, namespace, name) end

---From now on, every API write is logged (sim:write_log_take).
function Sim:write_log_start() end

---The writes since the last take, as JSON array text of {method, uri,
---userAgent, body}; nil, message, "EINVAL" when the log was not started.
---@return string? json
---@return string? msg
---@return kinformer.ErrorCode? code
function Sim:write_log_take() end

---From now on, every request is logged (sim:request_log_take).
function Sim:request_log_start() end

---The requests since the last take (or since request_log_start), oldest
---first (past the limit, a last {truncated = true, dropped = n}); nil,
---message, "EINVAL" when the log was not started.
---@return kinformer.SimRequest[]? requests
---@return string? msg
---@return kinformer.ErrorCode? code
function Sim:request_log_take() end

---The bearer token of user name (the users option's, else one made on the
---first call): a request bearing it authenticates as that user.
---@param name string
---@return string
function Sim:token(name) end

---Waits until the controllers have seen every change so far and have
---nothing due now; nil, message, "ETIMEDOUT" after timeout (default 10 s).
---@param timeout? number seconds
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function Sim:settle(timeout) end

---The controllers' clock: seconds since start.
---@return number
function Sim:clock_now() end

---Moves a fake clock (start{clock = "fake"}) forward; raises on the real
---clock. Returns the new clock_now.
---@param seconds number
---@return number
function Sim:clock_advance(seconds) end

---The module: require "kinformer.sim".
---@class kinformer.sim
local M = {}

---Starts a server. Returns it, or nil, message, code; an unknown option
---raises with the closest valid one.
---@param opts? kinformer.SimOptions
---@return kinformer.Sim? sim
---@return string? msg
---@return kinformer.ErrorCode? code
---@return_overload kinformer.Sim
---@return_overload nil, string, kinformer.ErrorCode
function M.start(opts) end

return M
