--- kinformer.sim: an embedded Kubernetes-compatible API server (C, in
-- process) for unit tests of operators and for trying things without a
-- cluster.
--
--   local sim = require("kinformer.sim").start{ seed = "objects.json" }
--   print(sim.url, sim.kubeconfig)   -- e.g. http://127.0.0.1:41234  /tmp/kinformer-sim-XXXXXX
--   sim:stop()                        -- also on <close> and garbage collection
--
-- Its C part is the module kinformer.simcore (csrc/lua/lsim.c), apart from
-- kinformer.core so that operators in production load no HTTP server,
-- GnuTLS or Jansson.
local simcore = require "kinformer.simcore"
local options = require "kinformer.util.options"

local M = {}

local Sim = {}
Sim.__index = function(self, k)
  local m = Sim[k]
  if m then return m end
  local h = rawget(self, "_h")
  if h[k] then return function(_, ...) return h[k](h, ...) end end
  return nil
end
Sim.__close = function(self) self:stop() end
Sim.__tostring = function(self) return tostring(rawget(self, "_h")) end

function Sim:stop() rawget(self, "_h"):stop() end

--- sim:fault{kind =, ms =, code =, count =} (see M.start): an unknown key
-- raises with the closest valid one (lsim.c keeps the list of keys and
-- checks them as every option table read in C is checked).
function Sim:fault(f)
  local h = rawget(self, "_h")
  return options.call(h.fault, h, f)
end

--- sim:put(obj [, {deleted = true}]) stores obj (a table or its JSON text)
-- as restored state, as the seed does and unlike an API write: its uid,
-- creationTimestamp, generation, managedFields, deletionTimestamp and
-- status are kept, and its resourceVersion becomes the object's when it is
-- above the sim's (the counter jumps there; an older one gives the next,
-- so watches stay ordered). It creates or replaces the object (watchers
-- see ADDED or MODIFIED), making its namespace when missing; deleted =
-- true removes it (nothing when absent), or marks it deleted as a delete
-- request would (deletionTimestamp) while it has finalizers and no
-- deletionTimestamp yet; a deletionTimestamp without finalizers removes
-- it too. Returns the resourceVersion written (0: nothing changed),
-- or nil, message, code (an unserved kind, a bad name). What
-- kinformer.replay feeds a recorded trace through.
function Sim:put(obj, opts)
  options.check(opts, { "deleted" }, "sim:put")
  if type(obj) == "table" then obj = require("kinformer.core").json_encode(obj) end
  if type(obj) ~= "string" then error("sim:put: an object (table or JSON text) expected", 2) end
  return rawget(self, "_h"):put(obj, opts and opts.deleted or false)
end

--- sim:get(api_version, kind, namespace, name): the stored object (a
-- table) or nil, read from the store directly (no request: no fault, no
-- log entry). namespace is nil for a cluster-scoped kind.
function Sim:get(api_version, kind, namespace, name)
  local s = rawget(self, "_h"):get(api_version, kind, namespace, name)
  return s and require("kinformer.core").json_decode(s) or nil
end

--- Starts a server. opts (all optional): port (0: a free one), bind
-- ("127.0.0.1"), token (bearer token required), tls_cert / tls_key (PEM
-- files: HTTPS), client_ca (PEM file: client certificates it signed
-- authenticate, CN as user and O as groups; needs TLS), seed (file of
-- objects to create: a JSON array, a List, or one object per line),
-- watch_history (events kept for watch resumption), bookmark_interval_ms
-- (period of BOOKMARK events), legacy_events (true: no events.k8s.io/v1,
-- Events in core v1 only), pre_encode (true: each built-in object's
-- protobuf bytes are made once at its commit and served as they are in
-- lists and watches, so a benchmark's client is not waiting on the sim's
-- encoder), users ({ [name] = token }: more bearer tokens,
-- each authenticating as its user; see sim:token), request_log_limit
-- (entries the request log keeps between two takes, default 1000000),
-- controllers (the control-plane controllers that run in the sim, as
-- kube-controller-manager's --controllers: "*" (the default) runs the
-- default ones, a list {"garbagecollector", "namespace"} or a string
-- "*,-kubelet" picks, "none" or {} is a bare API server; names:
-- require("kinformer.simcore").controllers()), clock ("real", the default,
-- or "fake": the controllers' delays only pass by sim:clock_advance),
-- authorization ("rbac": every request is authorized as kube-apiserver
-- --authorization-mode=RBAC does, against the built-in cluster roles and
-- the roles and bindings created; "always-allow", the default, lets every
-- authenticated request through; see docs/sim.md "Authorization"),
-- nodes (Nodes the "kubelet" controller registers, default 1),
-- pod_ready_delay_ms (from a pod's binding to Running and Ready, default
-- 1000), job_run_ms (how long a pod with restartPolicy Never or OnFailure
-- runs before it succeeds, default 1000); see docs/sim.md "Workloads".
-- Returns the server (fields url, kubeconfig; methods stop, compact,
-- resource_version, running, fault, put, get, write_log_start,
-- write_log_take, request_log_start, request_log_take, token, settle,
-- clock_now, clock_advance), or nil, message, code. A seed object keeps
-- its uid, creationTimestamp, resourceVersion, generation and status (as
-- sim:put).
--
-- Webhooks (docs/sim.md "Admission webhooks"): the sim runs the admission
-- chain of the MutatingWebhookConfigurations and
-- ValidatingWebhookConfigurations stored in it (over HTTPS) and of those
-- registered in process. sim:_webhook_register(config_json, fn, ud) -> id
-- and sim:_webhook_unregister(id) -> boolean are the manager's (mgr:webhook
-- with sim =): fn is a kin_sim_review_fn and ud its argument, both light
-- userdata; not for scripts.
--
-- Controllers: sim:settle([timeout_s]) waits until they have seen every
-- change so far and have nothing due now (true, or nil, msg, code on
-- timeout); sim:clock_now() is their clock in seconds since start;
-- sim:clock_advance(s) moves a fake clock and returns the new time.
--
-- Users: the kubeconfig's user is "kinformer-sim" (with the token option's
-- token, or anonymous without one). sim:token(name) returns a bearer token
-- that authenticates as name: the one given in users, else one made now
-- (the same on every later call). A sim started without token or
-- client_ca still serves everyone, and a request bearing a user's token is
-- that user; so two clients, e.g. kinformer.manager{ url = sim.url,
-- token = sim:token("operator") } and another with sim:token("driver"),
-- are told apart in the request log. With authorization = "rbac",
-- "kinformer-sim" and the anonymous user of a sim without token and
-- client_ca are in system:masters (allowed everything); every other user
-- gets what the RBAC objects grant it: sim:token(
-- "system:serviceaccount:<ns>:<name>") is that ServiceAccount (groups
-- system:serviceaccounts and system:serviceaccounts:<ns>).
--
-- Fault injection: sim:fault{kind = ...} with kind "drop" (close every open
-- watch abruptly), "cut" (cut each watch inside its next event), "malformed"
-- (send each watch a non-JSON line), "stall" (ms = N: watches go silent),
-- "fail" (code = 429|500|503, count = N (1): the next N requests fail),
-- "latency" (ms = N: every later request waits), "compact" (history
-- dropped: older watches and continue tokens get 410) or "restart" (ms = N,
-- default 0: every connection closed, nothing served for N ms, then the
-- same store served again on the same port). Misuse raises.
--
-- Write log (kinformer.replay): sim:write_log_start() keeps every later API
-- write (POST, PUT, PATCH, DELETE past authentication and injected
-- failures); sim:write_log_take() returns those since the last take as a
-- JSON array text of {method, uri, userAgent, body}.
--
-- Request log (deriving RBAC rules from what an operator did):
-- sim:request_log_start() keeps every later request (all but the sim's
-- own /kinformer-sim/ endpoints, refused ones included) as the attributes
-- kube-apiserver's authorizer sees; sim:request_log_take() returns those
-- since the last take as an array of tables {verb, apiGroup, apiVersion,
-- resource, subresource, namespace, name (each absent when empty),
-- nonResourceURL (non-resource requests: /version, /api...), user (absent
-- when anonymous), userAgent, dryRun (true for ?dryRun=All), code (the
-- HTTP status)}, e.g. { verb = "list", apiGroup = "", apiVersion = "v1",
-- resource = "configmaps", namespace = "default", user = "operator",
-- userAgent = "...", code = 200 }; verb is the RBAC verb (get, list,
-- watch, create, update, patch, delete, deletecollection) or, for a
-- non-resource request, the lower-case HTTP method. Past request_log_limit
-- entries between two takes the last element is { truncated = true,
-- dropped = N }. nil, message, code when the log was not started.
-- An unknown key in opts raises with the closest valid one (lsim.c keeps
-- the list of keys and checks them).
function M.start(opts)
  options.check(opts, nil, "kinformer.sim.start")
  local h, msg, code = options.call(simcore.start, opts)
  if not h then return nil, msg, code end
  return setmetatable({ _h = h, url = h:url(), port = h:port(), kubeconfig = h:kubeconfig() }, Sim)
end

return M
