--- kinformer.manager: shares informers between controllers and handlers,
-- waits for their caches to sync, runs until SIGINT/SIGTERM and shuts down
-- gracefully. A thin Lua layer over kinformer.core.env (csrc/lua/lenv.c).
--
--   local mgr = require("kinformer").manager{ kubeconfig = "~/.kube/config" }
--   local pods = mgr:informer("v1/pods", { namespace = "default" })
--   pods:add_handler{ on_add = function(pod) print(pod.metadata.name) end }
--   assert(mgr:start{ timeout = 60 })
--   mgr:run()                 -- until SIGINT/SIGTERM, then mgr:stop()
local core = require "kinformer.core"
local options = require "kinformer.util.options"

local M = {}

local Manager = {}
Manager.__index = function(self, k)
  local m = Manager[k]
  if m ~= nil then return m end
  if k == "client" then
    -- made on first use: the REST client userdata over the env's client
    local c = rawget(self, "env"):client()
    rawset(self, "client", c)
    return c
  end
  return nil
end
Manager.__close = function(self) self:stop() end
Manager.__tostring = function(self)
  return "kinformer.manager (" .. tostring(rawget(self, "env")) .. ")"
end

--- Creates a manager. opts (all optional): kubeconfig, context, url (a
-- server URL, e.g. a sim's; no kubeconfig is read or written) with token
-- (bearer), insecure (skip TLS verification) and ca (CA file path), sim (a
-- kinformer.sim server), namespace
-- (default namespace of namespaced informers and mgr.namespace), qps,
-- burst, resync (seconds), timeout (request timeout, seconds),
-- sync_timeout (seconds, default 120), log_level ("error"|"warn"|"info"|
-- "debug"), in_cluster; reconcile_timeout (seconds: the controllers'
-- default, none when absent), busy_warning_after (seconds, default 60),
-- shutdown_timeout (seconds, default 30: how long mgr:run's shutdown lets
-- in-flight reconciles finish before interrupting them); connection health (seconds, fractions allowed):
-- read_idle_timeout (default 30: an HTTP/2 connection with requests in
-- flight that received nothing for this long is probed), ping_timeout
-- (default 15: no answer to the probe within it closes the connection, its
-- watches resume on a new one), watch_idle_timeout (default 300: a watch
-- that delivered no byte for this long is re-established; the only guard
-- over HTTP/1.1), the first two also per informer (mgr:informer);
-- max_response_bytes (default 256 MiB, math.huge: no cap): the largest
-- body of any answer that is not a watch (GET, LIST pages, discovery); a
-- LIST page's items count with their bytes plus a small charge each; a
-- breach fails that request with ETOOBIG and informers retry with backoff;
-- disable_compression (default false: ask for gzip, as client-go does);
-- metrics_bind (address of /metrics, "host:port" or ":port", port 0 picks a free one) and health_bind (/healthz and /readyz),
-- both default "0": disabled (see Manager:metrics_port and the health
-- checks below); admin_bind (the admin endpoint `kinformer inspect`
-- reads: caches, queues, in-flight reconciles and the controllers'
-- per-key history as JSON, served from C state; default "0": disabled;
-- ":PORT" binds 127.0.0.1, where only a Host of localhost/127.0.0.1/[::1]
-- is answered; an explicit other address serves HTTPS behind TokenReview
-- and SubjectAccessReview, see docs/security.md);
-- metrics_secure, metrics_cert_path/_name/_key (/metrics over HTTPS
-- behind TokenReview + SubjectAccessReview, docs/security.md); events =
-- {instance=, queue_size= (1000), api= ("events.k8s.io/v1" or "v1")};
-- leader_election (see kinformer.leader_election: controllers run only
-- while this replica leads, every write fenced); sharding ({replicas =
-- "auto"} or {shard = i, of = n}: see kinformer.sharding); clock ("real",
-- or "fake": the controllers' queues and rate limiters on a fake clock
-- from 0 moved by mgr:clock_advance; informers, history, deadlines real).
-- log_reconciles: log one line per reconcile of every controller
-- (kinformer.reconcile_log; `kinformer run -v`).
-- name: the operator's name (a DNS label such as "namespace-guard"):
-- the default leader-election Lease ("<name>") and what a Lease held by
-- another operator is told apart by; without it the command derives one
-- from the script's folder and the controllers' names (mgr:name()).
-- rbac: RBAC rules the operator needs that `kinformer manifests` cannot
-- read from its source (a list of {resources =, verbs =, api_groups =,
-- resource_names =, non_resource_urls =}, checked as mgr:controller's
-- rbac; see Manager:rbac); a running manager only keeps them.
-- Returns the manager, or nil, message, code. Misuse (an unknown option,
-- a value of the wrong type) raises at the caller's line.
M.OPTIONS = { -- kinformer.manager{...}'s keys: add new options here
  "name", "log_reconciles", "kubeconfig", "context", "url", "token", "insecure", "ca", "sim", "namespace", "qps",
  "burst", "resync", "timeout", "sync_timeout", "log_level", "in_cluster",
  "reconcile_timeout", "busy_warning_after", "shutdown_timeout", "read_idle_timeout",
  "ping_timeout", "watch_idle_timeout", "metrics_bind", "health_bind", "events",
  "leader_election", "sharding", "admin_bind", "clock", "rbac", "max_response_bytes", "content_type", "disable_compression",
  "metrics_secure", "metrics_cert_path", "metrics_cert_name", "metrics_cert_key",
  "handler_timeout", "transform_timeout", "main_memory_limit", "check_timeout", "on_start_timeout",
  "webhook_bind_address", "webhook_cert_path", "webhook_cert_name", "webhook_cert_key", "webhook_host",
  "webhook_service", "webhook_configure", -- kinformer.webhook (mgr:webhook, docs/webhooks.md)
}
-- The time limits of user calls (issue 24; seconds, 0 or math.huge: none):
-- handler_timeout (default 10: each call of a handler, worker or main
-- state, and of a map function), transform_timeout (default 10: each call
-- of an informer's transform; mgr:informer's transform_timeout and
-- transform_on_timeout override it), check_timeout (default 5: each run of
-- a health check; a check cut at it fails), on_start_timeout (default 30:
-- the on_start function of a `kinformer run` script); main_memory_limit
-- (bytes, default 512 MiB, 0: none): what one main-state call (a
-- main-state handler, a health check, on_start) may add to the main
-- state's memory. A call past its limit is interrupted (a count hook
-- raises "<what> <name> exceeded its time limit of Xs (option <opt>)"),
-- logged, and the next one runs.
local CALL_DEFAULTS = { check_timeout = 5, on_start_timeout = 30 }
local function check_seconds(opts, k)
  local v = opts[k]
  if v ~= nil and (type(v) ~= "number" or v < 0 or v ~= v) then
    options.raise(("kinformer.manager: option '%s' must be a number of seconds >= 0"):format(k))
  end
end
-- While a factory is set (M.with_factory), kinformer.manager{...} is the
-- factory's: how kinformer.bootstrap gives a script that makes its own
-- manager the one a command chose (the planning manager of manifests).
local factory

--- Calls fn(...) with kinformer.manager{...} answered by make(opts) for
-- its duration (also when fn raises). Returns what fn returns.
function M.with_factory(make, fn, ...)
  if type(make) ~= "function" then options.raise("with_factory: a function expected") end
  local saved = factory
  factory = make
  local r = table.pack(pcall(fn, ...))
  factory = saved
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

--- The names a manager or a Lease may take: a DNS label, at most 63.
local function check_name(name, what)
  if name ~= nil and (type(name) ~= "string" or not name:match("^[a-z0-9][-a-z0-9.]*$")
      or not name:match("[a-z0-9]$") or #name > 63) then
    options.raise(("%s: name must be a lower-case DNS name of at most 63 characters (a-z, 0-9, '-', '.'), not %s")
      :format(what, type(name) == "string" and string.format("%q", name) or type(name)))
  end
end
M.check_name = check_name

function M.new(opts)
  if factory then return factory(opts) end
  opts = options.check(opts, M.OPTIONS, "kinformer.manager")
  check_name(opts.name, "kinformer.manager")
  for _, k in ipairs { "handler_timeout", "transform_timeout", "check_timeout", "on_start_timeout" } do
    check_seconds(opts, k)
  end
  require("kinformer.controller").check_rbac(opts.rbac, "kinformer.manager")
  if opts.log_level then options.call(core.set_log_level, opts.log_level) end
  local kubeconfig, url = opts.kubeconfig, nil -- sim, then url, win over kubeconfig
  if opts.sim then
    kubeconfig = opts.sim.kubeconfig
  elseif opts.url then
    kubeconfig, url = nil, opts.url -- core.env takes it directly: no kubeconfig is written
  end
  local env, msg, code = options.call(core.env, {
    kubeconfig = kubeconfig, context = opts.context, qps = opts.qps, burst = opts.burst,
    url = url, token = url and opts.token, insecure = url and opts.insecure, ca = url and opts.ca,
    resync = opts.resync, timeout = opts.timeout, in_cluster = opts.in_cluster,
    read_idle_timeout = opts.read_idle_timeout, ping_timeout = opts.ping_timeout,
    watch_idle_timeout = opts.watch_idle_timeout, events = opts.events, clock = opts.clock,
    handler_timeout = opts.handler_timeout, transform_timeout = opts.transform_timeout,
    main_memory_limit = opts.main_memory_limit,
    max_response_bytes = opts.max_response_bytes, content_type = opts.content_type,
    disable_compression = opts.disable_compression,
  })
  if not env then return nil, msg, code end
  do -- as the Go runtime since 1.19: a flood of connections must not starve reconciles of fds
    local before, after = core.raise_nofile()
    if before and after ~= before then
      core.log("debug", "manager", ("RLIMIT_NOFILE soft limit raised from %d to %d"):format(before, after))
    end
  end
  core.stop_requested(true) -- an os.exit in a worker state is for the managers made before it
  local server, mbind, hbind = nil, tostring(opts.metrics_bind or "0"), tostring(opts.health_bind or "0")
  local abind = tostring(opts.admin_bind or "0")
  if mbind ~= "0" or hbind ~= "0" or abind ~= "0" then
    server, msg, code = options.call(core.metrics_server, {
      metrics_bind = mbind, health_bind = hbind, admin_bind = abind, env = env,
      metrics_secure = opts.metrics_secure and true or false, metrics_cert_path = opts.metrics_cert_path,
      metrics_cert_name = opts.metrics_cert_name, metrics_cert_key = opts.metrics_cert_key,
    })
    if not server then
      env:shutdown()
      return nil, msg, code
    end
    -- not ready until mgr:start saw every cache synced
    if server:port("health") then server:set_check("readyz", "informers", false, "caches not synced") end
  end
  local mgr = setmetatable({
    _name = opts.name,
    log_reconciles = opts.log_reconciles and true or nil,
    _server = server,
    _checks = {}, _checks_due = 0,
    env = env,
    namespace = opts.namespace or env:namespace(),
    _namespace_set = opts.namespace ~= nil,
    sync_timeout = opts.sync_timeout or 120,
    -- controllers' defaults and the graceful shutdown (see Manager:run)
    reconcile_timeout = opts.reconcile_timeout,
    busy_warning_after = opts.busy_warning_after,
    shutdown_timeout = opts.shutdown_timeout or 30,
    -- time and memory limits of main-state user calls (CALL_DEFAULTS)
    check_timeout = opts.check_timeout or CALL_DEFAULTS.check_timeout,
    handler_timeout = opts.handler_timeout, -- also the leader election callbacks'
    on_start_timeout = opts.on_start_timeout or CALL_DEFAULTS.on_start_timeout,
    main_memory_limit = opts.main_memory_limit,
    _controllers = {},
    _rbac = {}, -- declared RBAC rules (opts.rbac, mgr:rbac): read by kinformer manifests
    _informer_failures = {}, -- what mgr:informer could not create: fails mgr:start
    _started = false, _stopped = false,
    _wh = require("kinformer.webhook").state(opts), -- mgr:webhook's server and hooks
  }, Manager)
  for _, r in ipairs(opts.rbac or {}) do mgr._rbac[#mgr._rbac + 1] = r end
  if opts.leader_election ~= nil then
    mgr._le = options.call(require("kinformer.leader_election").new, mgr, opts.leader_election)
  end
  if opts.sharding ~= nil then -- kinformer.sharding (its auto mode elects a member Lease)
    mgr._shard = options.call(require("kinformer.sharding").new, mgr, opts.sharding)
  end
  return mgr
end

--- Declares RBAC rules the operator needs beyond what `kinformer
-- manifests` reads from its source (a call whose resource it cannot
-- determine: a resource name computed at run time, an object built
-- elsewhere): rules is a list of {resources = {...}, verbs = {...},
-- api_groups = {...}?, resource_names = {...}?, non_resource_urls =
-- {...}?}; a resource is a kinformer name ("v1/configmaps",
-- "apps/v1/deployments/status": group and resource derived) or a plain
-- one ("configmaps", "*") with api_groups. For a script that gets its
-- manager from the command (local mgr = ...); kinformer.manager{rbac =
-- ...} and mgr:controller{rbac = ...} do the same. A running manager only
-- keeps them: manifests prints them, merged with what it reads. Raises
-- on a malformed rule; returns every rule declared so far (a fresh list).
function Manager:rbac(rules)
  require("kinformer.controller").check_rbac(rules, "mgr:rbac")
  if rules == nil then options.raise("bad argument #1 to mgr:rbac (a list of rules expected)") end
  local all = rawget(self, "_rbac")
  for _, r in ipairs(rules) do all[#all + 1] = r end
  local copy = {}
  for i, r in ipairs(all) do copy[i] = r end
  return copy
end

--- The kinformer.env userdata of mgr: modules that build on a manager
-- (kinformer.controller) get it here, not from its fields.
function M.env_of(mgr)
  local env = type(mgr) == "table" and rawget(mgr, "env")
  if not env then options.raise("kinformer.controller: the manager has no env") end
  return env
end

--- Returns the shared informer (the kinformer.informer userdata) for
-- resource ("v1/pods", "apps/v1/deployments") and opts (namespace, label_selector, field_selector, resync, metadata_only,
-- transform, transform_memory_limit, transform_timeout, transform_on_timeout
-- ("keep" | "drop"), keep_managed_fields, watch_list, fields (dotted paths kept),
-- watch_idle_timeout, read_idle_timeout, ping_timeout; the list is lenv.c's
-- m_informer's); or nil,
-- message, code on a runtime failure (discovery failed, the server has no
-- such resource), which also makes mgr:start fail (until a later
-- mgr:informer of that resource succeeds): a script that ignores it does
-- not run without its informer. Misuse raises at the caller's
-- line: an unknown option (with the closest valid one), a singular or
-- malformed resource name ('unknown resource "v1/configmap" (did you mean
-- "v1/configmaps"?)'). read_idle_timeout and ping_timeout (seconds;
-- default: the manager's) set the health check of the informer's watch:
-- informers share connections, and each connection is checked with the
-- smallest settings among the watches on it, so a tighter one guards its
-- neighbours too (see Manager:connection_health). Like watch_idle_timeout
-- they are not part of the informer's identity: a shared informer keeps
-- the values of the call that created it. When the manager was given a
-- namespace, namespaced resources default to it.
function Manager:informer(resource, opts)
  if type(resource) ~= "string" then
    options.raise(("bad argument #1 to mgr:informer (resource name expected, got %s)"):format(type(resource)))
  end
  if opts ~= nil and type(opts) ~= "table" then
    options.raise(("bad argument #2 to mgr:informer (options table expected, got %s)"):format(type(opts)))
  end
  opts = opts or {}
  if self._namespace_set and opts.namespace == nil then
    local r = options.call(self.env.resource, self.env, resource)
    if r and r.namespaced then
      local o = {}
      for k, v in pairs(opts) do o[k] = v end
      o.namespace = self.namespace
      opts = o
    end
  end
  local inf, msg, code = options.call(self.env.informer, self.env, resource, opts)
  local f = self._informer_failures
  if not inf then
    f[#f + 1] = { resource = resource, msg = msg, code = code }
  else -- a later success (the CRD got installed, the server came up) clears it
    for i = #f, 1, -1 do
      if f[i].resource == resource then table.remove(f, i) end
    end
  end
  return inf, msg, code
end

--- Adds a controller (see kinformer.controller). Started by mgr:start after
-- the caches sync, or at once when the manager already runs. A bad config
-- raises at the caller's line (see kinformer.controller); a runtime
-- failure (a watched resource the server does not have, discovery failed)
-- returns nil, message, code and makes mgr:start fail as mgr:informer's.
function Manager:controller(cfg)
  local controller = require "kinformer.controller"
  local claim = function(name) self:_claim_name(name, cfg.replace) end
  local ok, ctl = pcall(controller.new, self, cfg, { claim = claim })
  if not ok then
    if getmetatable(ctl) ~= controller.RUNTIME then error(ctl, 0) end -- misuse: already at the user's line
    local f = self._informer_failures
    f[#f + 1] = { what = "controller", msg = ctl.msg, code = ctl.code }
    return nil, ctl.msg, ctl.code
  end
  self._controllers[#self._controllers + 1] = ctl
  if self._started and not self._stopped and ctl.start and (not self._le or self._le:leading()) then
    local started, err, c = ctl:start()
    if started == nil and err then return nil, err, c end
  end
  return ctl
end

-- A DNS label of s: lower case, runs of other characters as "-".
local function dns_label(s)
  s = s:lower():gsub("[^a-z0-9.-]+", "-"):gsub("^[-.]+", ""):gsub("[-.]+$", "")
  return s
end

--- The name a manager gets without a name option, from the script it runs
-- (script: a path, or nil) and its controllers' names: the script's folder
-- for operator.lua, main.lua and init.lua (else the file name without .lua),
-- followed by each controller name that differs from it; "kinformer" when
-- neither says anything. Never the file name alone when the file is one of
-- those three: two operator.lua in different folders get different names.
-- At most 63 characters (a longer one keeps 54 and a hash of the rest).
function M.derived_name(script, controllers)
  local parts = {}
  if type(script) == "string" and script ~= "" then
    local dir, base = script:match("^(.-)/?([^/]*)$")
    local stem = base:gsub("%.lua$", "")
    if stem == "operator" or stem == "main" or stem == "init" then
      local d = dir:match("([^/]+)/*$")
      if not d or d == "." or d == ".." then -- ./operator.lua: the working directory's name
        d = (os.getenv("PWD") or ""):match("([^/]+)/*$")
      end
      if d and d ~= "." and d ~= ".." then stem = d end
    end
    parts[1] = dns_label(stem)
  end
  local names = {}
  for _, c in ipairs(controllers or {}) do
    local n = dns_label(c)
    if n ~= "" and n ~= parts[1] then names[#names + 1] = n end
  end
  table.sort(names)
  for _, n in ipairs(names) do
    if parts[#parts] ~= n then parts[#parts + 1] = n end
  end
  local name = table.concat(parts, "-")
  if name == "" then name = "kinformer" end
  if #name > 63 then
    local h = 0x811c9dc5
    for i = 55, #name do h = ((h ~ name:byte(i)) * 0x01000193) & 0xffffffff end
    name = name:sub(1, 54):gsub("[-.]+$", "") .. "-" .. string.format("%08x", h)
  end
  return name
end

--- The operator's name: the name option, else M.derived_name of the script
-- the command runs (mgr:_set_script) and the controllers registered so
-- far. The default Lease of leader election.
function Manager:name()
  local n = rawget(self, "_name")
  if n then return n end
  local ctls = {}
  local name_of = require("kinformer.controller").name_of
  for _, c in ipairs(self._controllers) do ctls[#ctls + 1] = name_of(c) end
  return M.derived_name(rawget(self, "_script"), ctls)
end

-- kinformer.bootstrap: the script this manager runs (for Manager:name).
function Manager:_set_script(path) self._script = path end

--- "created" (not started yet), "started" (mgr:start ran) or "stopped"
-- (mgr:stop ran).
function Manager:state()
  if rawget(self, "_stopped") then return "stopped" end
  return rawget(self, "_started") and "started" or "created"
end

--- The manager's controllers: a list in registration order, each also
-- under its name (t[1], t.web). A fresh table: changing it changes
-- nothing. Stopped controllers (ctl:stop()) are not in it.
function Manager:controllers()
  local t = {}
  local name_of = require("kinformer.controller").name_of
  for i, ctl in ipairs(self._controllers) do
    t[i] = ctl
    local name = name_of(ctl)
    if name then t[name] = ctl end
  end
  return t
end

-- mgr:controller's registry check (issue 15), called by
-- kinformer.controller.new before it makes the controller: a name
-- registered twice raises, unless replace, which stops the registered one
-- first (it leaves the registry; it is closed, as is a controller of that
-- name stopped earlier). Raises at the user's line.
function Manager:_claim_name(name, replace)
  local name_of = require("kinformer.controller").name_of
  local reg = self._controllers
  for i = #reg, 1, -1 do
    local old = reg[i]
    if type(old) == "table" and name_of(old) == name then
      if not replace then
        options.raise(('controller "%s" is already registered (ctl:stop() it, or pass replace = true)')
          :format(name))
      end
      old:stop()
    end
  end
  -- a stopped controller of that name is freed now: its metric series
  -- (labelled with the name) go, the new one's take their place
  local retired = rawget(self, "_retired")
  for i = #(retired or {}), 1, -1 do
    local old = retired[i]
    if name_of(old) == name then
      table.remove(retired, i)
      pcall(old.close, old)
    end
  end
end

-- Controller:stop's: moves ctl from the registry to _retired (closed when
-- a new controller takes its name: Manager:_claim_name).
function Manager:_unregister(ctl)
  local reg = self._controllers
  for i = #reg, 1, -1 do
    if reg[i] == ctl then
      table.remove(reg, i)
      local retired = rawget(self, "_retired") or {}
      self._retired = retired
      retired[#retired + 1] = ctl
    end
  end
end

--- Starts the informers, waits for their caches to sync (pumping main-state
-- handlers meanwhile), then starts the controllers. Non-blocking once
-- synced. opts: timeout (seconds; default the manager's sync_timeout),
-- on_progress (called with env:sync_progress() about every 0.1 s while
-- waiting). Returns true, or nil, message (naming the unsynced informer),
-- code; also at once when an earlier mgr:informer call failed (its
-- message and code). Calling it again returns true.
M.START_OPTIONS = { "timeout", "on_progress" } -- mgr:start's and mgr:run's keys
function Manager:start(opts)
  opts = options.check(opts, M.START_OPTIONS, "mgr:start")
  if self._stopped then return nil, "manager is stopped", "ECLOSED" end
  if self._started then return true end
  local failed = self._informer_failures[1]
  if failed then
    if failed.what then return nil, failed.msg, failed.code end
    return nil, ("informer %s could not be created: %s"):format(failed.resource, tostring(failed.msg)),
      failed.code
  end
  local ok, msg, code = self.env:start()
  if ok then ok, msg, code = require("kinformer.webhook").start(self) end -- before syncing, as controller-runtime
  if not ok then return nil, msg, code end
  if self._shard then self._shard:start() end
  if self._le then
    ok, msg, code = self._le:start()
    if not ok and code ~= "EBUSY" then return nil, msg, code end
  end
  local timeout = opts.timeout or self.sync_timeout
  local deadline = core.monotime() + timeout
  while true do
    local left = deadline - core.monotime()
    local slice = left < 0.1 and (left > 0 and left or 0) or 0.1
    ok, msg, code = self.env:wait_for_cache_sync(slice)
    if opts.on_progress then opts.on_progress(self.env:sync_progress()) end
    self.env:step(0)
    self:_run_checks()
    if ok then break end
    if code ~= "ETIMEDOUT" or core.monotime() >= deadline then return nil, msg, code end
  end
  self._started = true
  -- ready once synced, leader or not: a warm standby takes traffic too
  if self._server and self._server:port("health") then
    self._server:set_check("readyz", "informers", true)
  end
  if self._le then -- controllers run while this replica leads
    self._le:synced()
    return true
  end
  for _, ctl in ipairs(self._controllers) do
    if ctl.start then
      local cok, cmsg, ccode = ctl:start()
      if cok == nil and cmsg then return nil, cmsg, ccode end
    end
  end
  return true
end

-- ---- metrics and health probes ------------------------------------------------
--
-- Health checks are Lua functions run in the main state by the manager's
-- loop (mgr:run, mgr:step, mgr:wait_for, mgr:start while syncing), about
-- every CHECK_INTERVAL seconds; their results are stored in C, where the
-- probe threads read them (no Lua runs on an HTTP thread). A result older
-- than CHECK_TTL (a loop that stopped turning) fails its probe. A check
-- fails when it raises, or returns false, or nil and a message (the
-- message, or the error, is the reason shown by ?verbose); returning
-- nothing or true passes.
-- Each run is a limited call (check_timeout, main_memory_limit; a pending
-- SIGINT/SIGTERM interrupts it): a check cut at its limit fails with the
-- reason. A result lives check_timeout + CHECK_INTERVAL + 1 seconds
-- (CHECK_TTL without a check_timeout): a check stuck past its timeout (in
-- C, where the hook cannot cut it), or a loop that stopped turning, goes
-- stale and fails the probe.
local CHECK_INTERVAL, CHECK_TTL = 1, 10

local function run_check(mgr, server, probe, name, fn)
  local timeout = rawget(mgr, "check_timeout") or CALL_DEFAULTS.check_timeout
  local mem = rawget(mgr, "main_memory_limit")
  local r = table.pack(core.limited_call({ what = "health check", name = probe .. "/" .. name,
    option = "check_timeout", timeout = timeout, memory_limit = mem == nil and 512 * 1024 * 1024 or mem,
    memory_option = "main_memory_limit", signals = true }, fn))
  local ok, v, why = r[1], r[2], r[3]
  local pass = ok and v ~= false and not (v == nil and why ~= nil)
  local reason = not ok and tostring(v) or (not pass and tostring(why or "check failed")) or nil
  local ttl = CHECK_TTL
  if timeout > 0 and timeout ~= math.huge then ttl = timeout + CHECK_INTERVAL + 1 end
  server:set_check(probe, name, pass, reason, ttl)
end

--- Runs the checks when due (or at once with force). Called by the loop.
function Manager:_run_checks(force)
  local shard = rawget(self, "_shard")
  if shard then shard:tick() end -- kinformer.sharding: a look at the Leases
  local server = rawget(self, "_server")
  if not server or not next(self._checks) then return end
  local now = core.monotime()
  if not force and now < self._checks_due then return end
  self._checks_due = now + CHECK_INTERVAL
  for _, c in ipairs(self._checks) do run_check(self, server, c.probe, c.name, c.fn) end
end

--- Calls fn(...) in the main state as the on_start of a script (`kinformer
-- run`): under on_start_timeout and main_memory_limit, interrupted by a
-- pending SIGINT/SIGTERM. Returns true, results... or false, message, code
-- (core.limited_call's: "ETIMEDOUT", "ENOMEM", "ECANCELED", "ELUA").
function Manager:_call_on_start(fn, ...)
  local mem = rawget(self, "main_memory_limit")
  return core.limited_call({ what = "on_start", option = "on_start_timeout",
    timeout = rawget(self, "on_start_timeout") or CALL_DEFAULTS.on_start_timeout,
    memory_limit = mem == nil and 512 * 1024 * 1024 or mem, memory_option = "main_memory_limit",
    signals = true }, fn, ...)
end

local function add_check(self, probe, name, fn)
  if type(name) ~= "string" or name == "" or name:find("/", 1, true) or name == "ping"
      or (probe == "readyz" and name == "informers") then
    options.raise("bad argument #1 to 'add_" .. probe .. "_check' (a name without '/', not 'ping' or 'informers')")
  end
  if type(fn) ~= "function" then
    options.raise("bad argument #2 to 'add_" .. probe .. "_check' (function expected)")
  end
  local server = rawget(self, "_server")
  if not server or not server:port("health") then
    return nil, "health probes are disabled (set health_bind)", "EINVAL"
  end
  for _, c in ipairs(self._checks) do
    if c.probe == probe and c.name == name then return nil, probe .. " check " .. name .. " exists", "EEXIST" end
  end
  self._checks[#self._checks + 1] = { probe = probe, name = name, fn = fn }
  run_check(self, server, probe, name, fn)
  return true
end

--- Adds a liveness check served at /healthz and /healthz/<name>: fn() runs
-- in the main state (see above). Returns true, or nil, message, code when
-- the probes are disabled or the name is taken.
function Manager:add_healthz_check(name, fn) return add_check(self, "healthz", name, fn) end

--- Adds a readiness check served at /readyz and /readyz/<name> (besides
-- the built-in "informers": caches synced). As add_healthz_check.
function Manager:add_readyz_check(name, fn) return add_check(self, "readyz", name, fn) end

--- The port /metrics ("metrics", the default), the probes ("health") or
-- the admin endpoint ("admin") listen on, or nil when disabled.
function Manager:metrics_port(which)
  local server = rawget(self, "_server")
  return server and server:port(which or "metrics") or nil
end

--- The connection health check's counters and settings: {probes=,
-- probes_inconclusive=, dead_connections=, failed_over=,
-- read_idle_timeout=, ping_timeout=, check_interval=}; the last three
-- (seconds) as of the engine's last check: the smallest read-idle and
-- ping timeout in effect (the manager's and those of the informers whose
-- watches run; read_idle_timeout math.huge when nothing would be probed)
-- and the check's period (an eighth of the smallest, 0.02 .. 0.25).
function Manager:connection_health()
  return options.call(self.env.connection_health, self.env)
end

--- Runs the main-state handlers' queued events, waiting up to timeout
-- seconds (default 0) for the first. Returns how many ran.
function Manager:step(timeout)
  self:_run_checks()
  return options.call(self.env.step, self.env, timeout or 0)
end

--- The controllers' clock in seconds, and "fake" or "real" (the manager's
-- clock option): a fake clock starts at 0.
function Manager:clock_now() return self.env:clock_now() end

--- Moves the fake clock (kinformer.manager{clock = "fake"}) forward by
-- seconds (>= 0): what waits in the controllers' queues until then
-- (requeue_after, a retry's backoff) is handed to the workers. Returns the
-- new time. Raises on the real clock.
function Manager:clock_advance(seconds)
  return options.call(self.env.clock_advance, self.env, seconds)
end

--- Starts (if needed), then runs until SIGINT or SIGTERM while pumping
-- main-state handlers, then shuts down gracefully (shutdown below) and
-- stops. Returns true, or nil, message, code when start failed. opts: the
-- same as start's.
function Manager:run(opts)
  opts = options.check(opts, M.START_OPTIONS, "mgr:run")
  -- block the signals before any thread is made, so only this loop takes them
  self.env:wait_signal(0)
  local ok, msg, code = self:start(opts)
  if not ok then
    self:stop()
    return nil, msg, code
  end
  local sig
  local le = rawget(self, "_le")
  while true do
    self.env:step(0.1)
    self:_run_checks()
    sig = self.env:wait_signal(0)
    if sig then break end
    -- os.exit(code) in a worker state: a graceful stop (kinformer.core's
    -- lcall_proc.c logged the caller); kinformer run exits with code
    local exit_code = core.stop_requested()
    if exit_code then
      self.exit_code = exit_code
      sig = ("os.exit(%d) in a worker state"):format(exit_code)
      break
    end
    if le and le:lost() then break end
  end
  if not sig then -- the Lease was lost (exit_on_loss): see kinformer.leader_election
    self:stop()
    io.stderr:write("kinformer: leader election lost: exiting with status 1\n")
    io.stderr:flush()
    os.exit(1)
  end
  self:shutdown(sig)
  self:stop()
  return true
end

local SIGNO = { SIGINT = 2, SIGTERM = 15 }

-- "controller "web": "ns/a" (12.3s), ..." for the reconciles in flight,
-- or nil when none.
local function in_flight(self)
  local parts = {}
  for _, ctl in ipairs(self._controllers) do
    local busy = ctl.busy and ctl:busy() or {}
    if #busy > 0 then
      local keys = {}
      for _, b in ipairs(busy) do keys[#keys + 1] = string.format("%q (%.1fs)", b.key, b.seconds) end
      parts[#parts + 1] = string.format("controller %q: %s", ctl:name(), table.concat(keys, ", "))
    end
  end
  if #parts == 0 then return nil end
  return table.concat(parts, "; ")
end

--- The graceful shutdown mgr:run does on its first SIGINT/SIGTERM (sig
-- names it): every controller stops taking work at once; in-flight
-- reconciles get shutdown_timeout seconds to finish, then their Lua code
-- is interrupted and their REST calls cancelled. Meanwhile a second
-- SIGINT/SIGTERM ends the process at once (status 128 + signal number)
-- with a line on stderr naming the reconciles abandoned; so does a
-- reconcile that still runs 2 s after it was interrupted (status 1: it is
-- stuck in C code). Returns once no reconcile runs; mgr:stop() follows.
function Manager:shutdown(sig)
  local timeout = rawget(self, "shutdown_timeout") or 30
  local t0 = core.monotime()
  for _, ctl in ipairs(self._controllers) do
    if ctl.shutdown then pcall(ctl.shutdown, ctl, timeout) end
  end
  local busy = in_flight(self)
  if not busy then return end
  core.log("info", "manager", string.format(
    "%s: stopping; waiting up to %gs (shutdown_timeout) for reconciles in flight: %s; "
    .. "a second signal exits at once", sig or "shutdown", timeout, busy))
  while true do
    local s = self.env:wait_signal(0.05)
    busy = in_flight(self)
    if not busy then return end
    if s then
      io.stderr:write(string.format("kinformer: second signal (%s): exiting at once, "
        .. "abandoning reconciles in flight: %s\n", s, busy))
      core.exit_now(128 + (SIGNO[s] or 1))
    end
    if core.monotime() - t0 > timeout + 2 then
      io.stderr:write(string.format("kinformer: reconciles still running %gs after shutdown_timeout "
        .. "(stuck outside Lua?): exiting, abandoning: %s\n", 2, busy))
      core.exit_now(1)
    end
  end
end

--- Stops controllers (in-flight reconciles finish; those still running
-- after shutdown_timeout are interrupted; queued requests are dropped),
-- then the informers (watches closed, threads joined). Idempotent.
function Manager:stop()
  if rawget(self, "_stopped") then return end
  self._stopped = true
  local timeout = rawget(self, "shutdown_timeout") or 30
  for _, ctl in ipairs(self._controllers) do
    if ctl.shutdown then pcall(ctl.shutdown, ctl, timeout) end
  end
  for i = #self._controllers, 1, -1 do
    local ctl = self._controllers[i]
    local halt = ctl._halt or ctl.stop -- stay registered: mgr:controllers() after stop
    if halt then pcall(halt, ctl, timeout) end
  end
  local le = rawget(self, "_le")
  if le then le:stop() end -- releases the Lease (release_on_cancel)
  require("kinformer.webhook").stop(self) -- before the env: its handlers use the client
  local server = rawget(self, "_server")
  if server then
    server:close()
    self._server = nil
  end
  self.env:shutdown()
end

--- mgr:webhook{...}, mgr:webhook_ca() (PEM), mgr:webhook_port(): see kinformer.webhook, docs/webhooks.md.
function Manager:webhook(spec) return require("kinformer.webhook").add(self, spec) end
function Manager:webhook_ca() return require("kinformer.webhook").ca(self) end
function Manager:webhook_port() return require("kinformer.webhook").port(self) end

--- An event recorder for handlers and main-state code:
-- rec:event(obj, "Normal"|"Warning", reason, message [, action]) writes an
-- events.k8s.io/v1 Event (core v1 where the server has no events.k8s.io)
-- about obj with reportingController = component, asynchronously (the
-- manager's one recorder, shared by every Lua state; client-go's
-- correlator). Also rec:flush([timeout]), rec:stats().
function Manager:event_recorder(component)
  return options.call(self.env.event_recorder, self.env, component)
end

--- The leader election's state (nil without leader_election):
-- {identity=, name=, namespace=, leader=, is_leader=, transitions=,
-- lease_duration=, acquire_time=, renew_time=, acquisitions=, losses=,
-- running=}; leader is the holder last observed ("" when none).
function Manager:leader_election()
  local le = rawget(self, "_le")
  return le and le:state() or nil
end

--- Read-only view of an informer by name ("v1/pods", :name()), or nil, msg, code.
function Manager:lister(name) return options.call(self.env.lister, self.env, name) end

--- Per informer, the projection keeping what code read (kinformer.advise).
function Manager:advise() return require("kinformer.advise").of(self) end
--- Sharding's state (kinformer.sharding's status), or nil without it.
function Manager:shards() local s = rawget(self, "_shard") return s and s:status() end

--- Calls fn() until it returns a true value, pumping main-state handlers
-- between calls, up to timeout seconds (default 10). Returns fn's value, or
-- nil, "timed out", "ETIMEDOUT".
function Manager:wait_for(fn, timeout)
  if type(fn) ~= "function" then
    options.raise(("bad argument #1 to mgr:wait_for (function expected, got %s)"):format(type(fn)))
  end
  local deadline = core.monotime() + (timeout or 10)
  while true do
    local v = fn()
    if v then return v end
    if core.monotime() >= deadline then return nil, "timed out", "ETIMEDOUT" end
    self.env:step(0.01)
    self:_run_checks()
  end
end

setmetatable(M, { __call = function(_, opts) return M.new(opts) end })

return M
