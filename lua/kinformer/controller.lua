--- kinformer.controller: controllers in the controller-runtime model.
--
-- Built by the manager (mgr:controller(cfg) calls controller.new(mgr, cfg)):
--
--   local ctl = mgr:controller{
--     name = "web",                       -- default: the For resource's kind, lower case
--     ["for"] = "apps/v1/deployments",    -- EnqueueRequestForObject
--     owns = { "v1/pods", {"v1/services", predicates = {...}} },  -- EnqueueRequestForOwner
--     watches = { {"v1/configmaps", map = fn_or_module, predicates = {...}} },
--     predicates = { "generation_changed" },  -- apply to every watch (a list is AND)
--     workers = 2,
--     rate_limiter = { base_delay = 0.005, max_delay = 1000, qps = 10, burst = 100 },
--     reconciler = "mymod" or function(req, ctx) ... end,   -- upvalues copied per worker
--     memory_limit = bytes,               -- per worker state
--     reconcile_timeout = 30,             -- seconds; default the manager's (none)
--     busy_warning_after = 60,            -- seconds; default the manager's (60; 0: never)
--     informer_opts = { namespace = ..., label_selector = ... },
--   }
--
-- The reconciler runs in worker states (one per worker thread): a module
-- name (the module returns a function or a table with .reconcile) or a
-- function, sent with copies of its upvalues as Lanes does: each worker
-- state gets its own copy of the script's local helpers, constants and
-- tables (a change a worker makes to a copied table stays in that worker);
-- a module or a module's field (local json = require "cjson", string.format)
-- is the worker's own; _ENV is the worker's globals. An upvalue that cannot
-- be copied (the manager, an informer, a client, any userdata, a coroutine)
-- is refused at mgr:controller, naming every one: use ctx.client and
-- ctx.listers in the reconciler instead. reconcile(req, ctx) with
-- req = {namespace=, name=, key=} returns nothing (done),
-- {requeue_after = seconds}, {requeue = true}, or raises / returns nil, err
-- (rate-limited retry); kinformer.terminal(err) stops retrying.
--
-- reconcile_timeout: a reconcile running longer is interrupted (a count
-- hook raises "reconcile interrupted: ..." in its Lua code; a REST call in
-- flight is cut at the deadline), logged with the controller, key and
-- duration, counted (stats().reconcile_timeouts) and retried with the
-- key's backoff. busy_warning_after: when every worker has been on its
-- key longer than that, one warning names the keys (once per episode).
--
-- A map function (watches) runs on the watched informer's listener thread,
-- in its own worker state (its upvalues copied as the reconciler's):
-- map(obj, ctx) returns a list of {namespace =, name =} requests.
local core = require "kinformer.core"
local options = require "kinformer.util.options"
local raise = options.raise

local M = {}

local Controller = {}
Controller.__index = Controller

-- The module whose for_request(env, controller, worker, req) builds the
-- ctx a reconciler or map function gets: the workers' states require it by
-- this name (the spec's ctx, csrc/lua/lcontroller.c), reconcile_once here.
local CTX_MODULE = "kinformer.ctx"

--- The name ctl was registered under (for the manager's registry).
function M.name_of(ctl) return rawget(ctl, "_name") end

--- What kinformer.plan needs of ctl, so that it reads no private field:
-- {name =, reconciler = (what the workers run: the lifecycle around the
-- user's code when there is one), env =, mgr =, for_informer =,
-- for_resource = (its name)} (a new table).
function M.parts(ctl)
  local for_inf = rawget(ctl, "_for")
  return { name = rawget(ctl, "_name"), reconciler = rawget(ctl, "_run") or rawget(ctl, "_reconciler"),
           env = rawget(ctl, "_env"), mgr = rawget(ctl, "_mgr"), for_informer = for_inf,
           for_resource = for_inf and for_inf:name() or nil }
end

-- A runtime failure (discovery failed, the server has no such resource):
-- mgr:controller catches it and returns nil, msg, code (M.RUNTIME marks it).
M.RUNTIME = {}
local function runtime(msg, code)
  error(setmetatable({ msg = msg, code = code }, M.RUNTIME), 0)
end

local function get_informer(mgr, res, opts)
  if opts ~= nil and type(opts) ~= "table" then raise("controller: informer_opts must be a table") end
  local inf, msg, code = mgr:informer(res, opts)
  if not inf then runtime(("controller: informer %s: %s"):format(res, tostring(msg)), code) end
  return inf -- the kinformer.informer userdata (mgr:informer's result)
end

-- Combines the controller-wide predicates with a watch's own.
local function combine(top, own)
  if type(top) == "string" then top = { top } end
  if type(own) == "string" then own = { own } end
  if top and own then return { "and", top, own } end
  return top or own
end

local function check_predicates(p, what)
  if p ~= nil and type(p) ~= "table" and type(p) ~= "string" then
    raise(("controller: %s predicates must be a list, a name or a table, not a %s"):format(what, type(p)))
  end
end

-- The keys of an owns/watches entry {"v1/pods", ...}: add new ones here.
M.ENTRY_OPTIONS = {
  owns = { "resource", "predicates", "informer_opts", "all_owners" },
  watches = { "resource", "predicates", "informer_opts", "map", "owner" },
}

-- Returns {resource, opts...} from "v1/pods" or {"v1/pods", k = v}.
local function entry(e, what, i)
  if type(e) == "string" then return e, {} end
  if type(e) == "table" then
    options.check(e, M.ENTRY_OPTIONS[what], ("mgr:controller's %s entry"):format(what), true)
    local res = e[1] or e.resource
    if type(res) == "string" then return res, e end
  end
  raise(("controller: %s #%d must be a resource name or {resource, ...}"):format(what, i))
end

local function lower_first(kind) return (kind:lower()) end

--- Creates a controller from the user's config. Raises on a bad config
-- at the user's line (the message names the field; an unknown key names
-- the closest valid one). Returns the controller object. A runtime
-- failure (a watched resource the server does not have, discovery failed)
-- raises a value with metatable M.RUNTIME ({msg=, code=}), which
-- mgr:controller returns as nil, msg, code. opts.claim (mgr:controller's
-- registry check) is called with the controller's name once the config is
-- checked, before the controller is made; it raises when the name is taken.
M.OPTIONS = { -- mgr:controller{...}'s keys: add new options here
  "name", "for", "owns", "watches", "predicates", "workers", "rate_limiter", "reconciler",
  "memory_limit", "reconcile_timeout", "busy_warning_after", "informer_opts", "replace",
  "children", "prune", "finalizer", "finalize", "selector", "rbac", "priority_queue",
}

-- A reconciler given as a module name must name a module that exists and
-- returns a function or a table with .reconcile (what the workers will
-- look up): checked here, in the calling state, so that a typo fails at
-- mgr:controller with the path searched, not on every reconcile.
local function check_module(name, field, what)
  if package.loaded[name] == nil and not package.searchpath(name, package.path) then
    if not pcall(require, name) then -- preloads, C modules: require knows
      local seen, list = {}, {}
      for t in package.path:gmatch("[^;]+") do
        if not seen[t] then seen[t] = true list[#list + 1] = t end
      end
      raise(("controller: %s module '%s' not found; searched package.path:\n\t%s"):format(what, name,
        table.concat(list, "\n\t")))
    end
  end
  local ok, m = pcall(require, name)
  if not ok then raise(("controller: %s module '%s' failed to load: %s"):format(what, name, tostring(m))) end
  if type(m) ~= "function" and not (type(m) == "table" and type(m[field]) == "function") then
    raise(("controller: %s module '%s' returns a %s%s: return a function, or a table with a function '%s'")
      :format(what, name, type(m), type(m) == "table" and (" without a function '" .. field .. "'") or "", field))
  end
end

-- The RBAC rules an rbac option declares, checked: a list of {resources =
-- {...}, verbs = {...}, api_groups = {...}?, resource_names = {...}?,
-- non_resource_urls = {...}?}. A resource is a kinformer name
-- ("v1/configmaps", "apps/v1/deployments/status": its group is derived,
-- and must be among api_groups when they are given) or a plain resource
-- ("configmaps", "pods/log", "*"), which needs api_groups. Used by
-- mgr:controller{rbac =}, kinformer.manager{rbac =} and mgr:rbac; `kinformer
-- manifests` prints them. Raises naming the entry; returns the list.
M.RBAC_KEYS = { "resources", "verbs", "api_groups", "resource_names", "non_resource_urls" }
-- The group of a kinformer resource name ("" for "v1/pods", "apps" for
-- "apps/v1/deployments"), nil for a plain resource ("pods", "*").
local function rbac_group(res)
  local a, b = res:match("^([^/]+)/([^/]+)/")
  if res:match("^v%d[^/]*/[^/]") then return "" end
  if a and b:match("^v%d") then return a end
  return nil
end
function M.check_rbac(rules, what)
  if rules == nil then return nil end
  if type(rules) ~= "table" then raise(what .. ": rbac must be a list of rules") end
  for i, r in ipairs(rules) do
    if type(r) ~= "table" then raise(("%s: rbac rule #%d must be a table"):format(what, i)) end
    options.check(r, M.RBAC_KEYS, ("%s's rbac rule #%d"):format(what, i))
    if type(r.verbs) ~= "table" or #r.verbs == 0 then
      raise(("%s: rbac rule #%d needs verbs = {...}"):format(what, i))
    end
    if (type(r.resources) ~= "table" or #r.resources == 0) and type(r.non_resource_urls) ~= "table" then
      raise(("%s: rbac rule #%d needs resources = {...} (or non_resource_urls)"):format(what, i))
    end
    for _, k in ipairs(M.RBAC_KEYS) do
      if r[k] ~= nil and type(r[k]) ~= "table" then
        raise(("%s: rbac rule #%d: %s must be a list of strings"):format(what, i, k))
      end
      for j, v in ipairs(type(r[k]) == "table" and r[k] or {}) do
        if type(v) ~= "string" then raise(("%s: rbac rule #%d: %s[%d] must be a string"):format(what, i, k, j)) end
      end
    end
    local groups
    if r.api_groups then
      groups = {}
      for _, g in ipairs(r.api_groups) do groups[g] = true end
    end
    for _, res in ipairs(type(r.resources) == "table" and r.resources or {}) do
      local g = rbac_group(res)
      if g == nil and not groups then
        raise(("%s: rbac rule #%d: resource %q needs api_groups (or a kinformer name such as \"v1/%s\")")
          :format(what, i, res, res))
      elseif g ~= nil and groups and not groups[g] and not groups["*"] then
        raise(("%s: rbac rule #%d: resource %q is in group %q, which api_groups does not list"):format(what, i, res, g))
      end
    end
  end
  if next(rules) ~= nil and #rules == 0 then raise(what .. ": rbac must be a list of rules") end
  return rules
end
function M.new(mgr, cfg, opts)
  if type(cfg) ~= "table" then raise("controller: config table expected") end
  options.check(cfg, M.OPTIONS, "mgr:controller")
  local env = require("kinformer.manager").env_of(mgr)
  local for_res = cfg["for"]
  if for_res ~= nil and type(for_res) ~= "string" then raise("controller: 'for' must be a resource name") end
  if for_res == nil and not cfg.watches then raise("controller: 'for' or 'watches' required") end
  if cfg.reconciler == nil then raise("controller: reconciler required (a module name or a function)") end
  local rt = type(cfg.reconciler)
  if rt ~= "string" and rt ~= "function" then
    raise("controller: reconciler must be a module name or a function")
  end
  if rt == "string" then check_module(cfg.reconciler, "reconcile", "reconciler") end
  if cfg.finalizer ~= nil and (type(cfg.finalizer) ~= "string" or cfg.finalizer == "") then
    raise("controller: finalizer must be a non-empty string (a qualified name: example.com/cleanup)")
  end
  if cfg.finalize ~= nil then
    if type(cfg.finalize) ~= "function" and type(cfg.finalize) ~= "string" then
      raise("controller: finalize must be a function(req, ctx, obj) or a module name")
    end
    if not cfg.finalizer then raise("controller: finalize needs finalizer (the finalizer it runs for)") end
    if type(cfg.finalize) == "string" then check_module(cfg.finalize, "finalize", "finalize") end
  end
  if cfg.finalizer and cfg.finalize == nil and cfg.children == nil then
    raise("controller: finalizer needs finalize = function(req, ctx, obj) (or children, which it then deletes)")
  end
  if cfg.children ~= nil and (type(cfg.children) ~= "table" or #cfg.children == 0) then
    raise("controller: children must be a list of resources, e.g. {\"v1/configmaps\"}")
  end
  if cfg.prune ~= nil and type(cfg.prune) ~= "boolean" then raise("controller: prune must be a boolean") end
  if cfg.selector ~= nil then
    if type(cfg.selector) ~= "string" then raise("controller: selector must be a label selector string") end
    local ok, msg = core.label_selector(cfg.selector)
    if not ok then raise("controller: selector: " .. tostring(msg)) end
  end
  if (cfg.finalizer or cfg.children or cfg.selector) and not for_res then
    raise("controller: finalizer, children and selector need 'for' (the object they are about)")
  end
  M.check_rbac(cfg.rbac, "controller")
  check_predicates(cfg.predicates, "controller")
  local iopts = cfg.informer_opts

  local owner
  if for_res then
    local r, msg, code = options.call(env.resource, env, for_res)
    if not r then runtime(("controller: resource %s: %s"):format(for_res, tostring(msg)), code) end
    owner = r
  end
  local name = cfg.name
  if name == nil then
    if not owner then raise("controller: name required when there is no 'for'") end
    name = lower_first(owner.kind)
  end
  if type(name) ~= "string" or name == "" then raise("controller: name must be a non-empty string") end

  local watches = {}
  -- kinformer.sharding: the For informer holds this replica's ranges only
  local shard = type(mgr) == "table" and rawget(mgr, "_shard") or nil
  if shard and not for_res then raise("controller: a sharded manager's controllers need 'for'") end
  if for_res then
    local finf = get_informer(mgr, for_res, shard and shard:informer_opts(iopts) or iopts)
    if shard then shard:add_informer(finf) end
    watches[#watches + 1] = { informer = finf, kind = "object",
                              name = for_res, predicates = combine(cfg.predicates, nil) }
  end
  -- children are owned too (their changes enqueue the owner): an entry of
  -- owns for each that owns does not list already
  local owns = {}
  for i, e in ipairs(cfg.owns or {}) do owns[i] = e end
  local children = {}
  for i, c in ipairs(cfg.children or {}) do
    if type(c) ~= "string" then raise(("controller: children #%d must be a resource name"):format(i)) end
    local r, msg, code = options.call(env.resource, env, c)
    if not r then runtime(("controller: resource %s: %s"):format(c, tostring(msg)), code) end
    local listed = false
    for _, e in ipairs(owns) do
      local res = type(e) == "table" and (e[1] or e.resource) or e
      if res == c then listed = true end
    end
    if not listed then owns[#owns + 1] = c end
    children[#children + 1] = { name = c, resource = require("kinformer.ctx").resource_name(r) }
  end
  for i, e in ipairs(owns) do
    if not owner then raise("controller: 'owns' needs 'for' (the owner type)") end
    local res, o = entry(e, "owns", i)
    check_predicates(o.predicates, "owns " .. res)
    watches[#watches + 1] = {
      informer = get_informer(mgr, res, o.informer_opts or iopts), kind = "owner", name = res,
      owner_group = owner.group or "", owner_kind = owner.kind,
      cluster_scoped = not owner.namespaced, all_owners = o.all_owners and true or false,
      predicates = combine(cfg.predicates, o.predicates),
    }
    for _, ch in ipairs(children) do
      if ch.name == res then ch.informer = watches[#watches].informer end
    end
  end
  for i, e in ipairs(cfg.watches or {}) do
    local res, o = entry(e, "watches", i)
    check_predicates(o.predicates, "watches " .. res)
    local w = { informer = get_informer(mgr, res, o.informer_opts or iopts), name = res,
                predicates = combine(cfg.predicates, o.predicates) }
    if o.map ~= nil then
      if type(o.map) ~= "string" and type(o.map) ~= "function" then
        raise(("controller: watches %s: map must be a module name or a function"):format(res))
      end
      w.kind, w.map = "map", o.map
    elseif o.owner then
      local r, msg, code = options.call(env.resource, env, o.owner)
      if not r then runtime(("controller: resource %s: %s"):format(o.owner, tostring(msg)), code) end
      w.kind, w.owner_group, w.owner_kind, w.cluster_scoped = "owner", r.group or "", r.kind, not r.namespaced
    else
      w.kind = "object"
    end
    watches[#watches + 1] = w
  end

  local function mgr_default(k)
    if type(mgr) ~= "table" then return nil end
    local v = rawget(mgr, k)
    if v == nil and type(getmetatable(mgr)) == "table" then v = mgr[k] end
    return v
  end
  local rtimeout = cfg.reconcile_timeout
  if rtimeout == nil then rtimeout = mgr_default("reconcile_timeout") end
  local busy_after = cfg.busy_warning_after
  if busy_after == nil then busy_after = mgr_default("busy_warning_after") end
  local reconciler = M.worker_code(mgr, name, cfg, { owner, children })
  local spec = {
    name = name, ctx = CTX_MODULE, workers = cfg.workers, reconciler = reconciler,
    for_resource = for_res and watches[1].informer:name() or nil,
    memory_limit = cfg.memory_limit,
    rate_limiter = cfg.rate_limiter, watches = watches,
    reconcile_timeout = rtimeout, busy_warning_after = busy_after,
    priority_queue = cfg.priority_queue, sharded = shard and true or nil,
  }
  if opts and opts.claim then opts.claim(name) end
  local ok, ud = pcall(env.controller, env, spec)
  if not ok then
    -- "bad argument #2 to 'controller' (...)": keep the reason only
    local why = tostring(ud)
    why = why:match("^bad argument #%d+ to '[^']*' %((.*)%)$") or why
    raise("controller " .. name .. ": " .. why)
  end
  -- _cfg: the leader election rebuilds a controller stopped by a lost lease
  -- _for: the For informer (its keys are what ctl:plan() plans by default)
  return setmetatable({ _ud = ud, _env = env, _mgr = mgr, _reconciler = cfg.reconciler,
                        _run = reconciler ~= cfg.reconciler and reconciler or nil,
                        _lc_args = { owner, children },
                        _for_res = for_res, _namespaced = owner and owner.namespaced or false,
                        _name = name, _cfg = cfg, _for = for_res and watches[1].informer or nil }, Controller)
end

--- What a controller's workers run for cfg (and lc_args = {owner,
-- children} of M.lifecycle_reconciler): the reconciler, in
-- the lifecycle when the controller has a finalizer, children or a
-- selector, logged per reconcile when the manager has log_reconciles.
function M.worker_code(mgr, name, cfg, lc_args)
  local code = cfg.reconciler
  if cfg.finalizer or cfg.children or cfg.selector then
    code = M.lifecycle_reconciler(cfg, table.unpack(lc_args))
  end
  if type(mgr) == "table" and rawget(mgr, "log_reconciles") then
    code = require("kinformer.reconcile_log").wrap(name, code)
  end
  return code
end

--- The reconciler a controller with a finalizer or children runs: the
-- user's code (cfg.reconciler, cfg.finalize) inside kinformer.lifecycle.
-- owner: the For resource's table; children:
-- {{name =, resource =, informer =}}. Adds the children informers' index
-- by controller uid. Returns a function (sent to the worker states with
-- its upvalues copied).
function M.lifecycle_reconciler(cfg, owner, children)
  local lc = {
    reconcile = cfg.reconciler, finalize = cfg.finalize, finalizer = cfg.finalizer,
    prune = cfg.prune ~= false, selector = cfg.selector,
    for_resource = require("kinformer.ctx").resource_name(owner),
    label = owner.kind, children = nil,
  }
  if #children > 0 then
    lc.children = {}
    for i, ch in ipairs(children) do
      local ok, msg, code = ch.informer:add_index(require("kinformer.lifecycle").INDEX, "controller")
      if not ok and code ~= "EEXIST" then runtime(("controller: children %s: %s"):format(ch.name, tostring(msg)), code) end
      lc.children[i] = { resource = ch.resource, informer = ch.informer:name() }
    end
  end
  return function(req, ctx) return require("kinformer.lifecycle").run(lc, req, ctx) end
end

--- Waits for the watched caches and starts the workers.
-- Returns true, or nil, message, code.
function Controller:start() return self._ud:start() end

--- Stops: no new requests, in-flight reconciles finish, queued requests
-- are dropped, workers joined. With timeout (seconds), reconciles still
-- running then are interrupted. The controller leaves its manager's
-- registry (mgr:controllers()), so its name can be registered again.
function Controller:stop(timeout)
  local r = options.call(self._ud.stop, self._ud, timeout)
  local mgr = rawget(self, "_mgr")
  if type(mgr) == "table" and mgr._unregister then mgr:_unregister(self) end
  return r
end

-- Stops without leaving the registry (the manager's shutdown, the leader
-- election's loss of the lease).
function Controller:_halt(timeout) return self._ud:stop(timeout) end

-- For kinformer.leader_election: the lease was lost (it has called
-- ctl:shutdown(0) on every controller first). Stops at once, stays
-- registered, and is rebuilt by _lead() when this replica leads again.
function Controller:_unlead()
  pcall(self._ud.stop, self._ud, 0)
  self._le_stopped = true
end

-- For kinformer.leader_election: this replica leads. A controller stopped
-- by a lost lease is rebuilt from its config (a C controller does not
-- restart); then it starts. Returns true, or nil, message, code.
function Controller:_lead()
  if self._le_stopped and self._cfg then
    local fresh = M.new(self._mgr, self._cfg)
    pcall(self._ud.close, self._ud)
    self._ud, self._le_stopped = fresh._ud, nil
  end
  return self:start()
end

--- Reloads the reconciler (issue 15): with no argument, its module is
-- required again from its file (a function reconciler is captured again:
-- its upvalues copied as they are now); with code (a module name or a
-- function, whose upvalues are copied now), that becomes the reconciler.
-- Module map functions of the watches are reloaded too. Each worker
-- finishes its current reconcile, then its state is rebuilt with the new
-- code; the cache, the queue and each key's backoff
-- are kept. Returns true, or nil, msg (naming file:line), code when the
-- new code fails to load: the old code keeps running. reconcile_once
-- follows (the module is required afresh in the calling state).
function Controller:reload(code)
  if code ~= nil and type(code) ~= "string" and type(code) ~= "function" then
    raise("ctl:reload: code must be a module name or a function, not a " .. type(code))
  end
  local r = code
  if r == nil then r = self._reconciler end
  -- what the workers get: the code itself, or what wraps it (the
  -- lifecycle, the per-reconcile log line)
  local cfg = type(self._cfg) == "table" and self._cfg or { reconciler = r }
  local send = code
  if type(r) == "function" then send = r end
  if rawget(self, "_run") then
    if type(r) == "string" then -- the workers load it inside a wrapper: check it here
      package.loaded[r] = nil
      local ok, err = pcall(require, r)
      if not ok then
        return nil, ("controller \"%s\": reload of the reconciler failed, the old code keeps running: %s")
          :format(tostring(self._name), (tostring(err):gsub("\n\t", " "))), "EINVAL"
      end
    end
    local c = {}
    for k, v in pairs(cfg) do c[k] = v end
    c.reconciler = r
    send = M.worker_code(self._mgr, self._name, c, self._lc_args)
  end
  local called, ok, msg, ecode = pcall(self._ud.reload, self._ud, send)
  if not called then -- misuse (an upvalue that cannot be copied...): at the caller's line
    local why = tostring(ok)
    why = why:match("^bad argument #%d+ to '[^']*' %((.*)%)$") or why
    raise("ctl:reload: " .. why)
  end
  if not ok then return nil, msg, ecode end
  if type(self._reconciler) == "string" then package.loaded[self._reconciler] = nil end
  if type(r) == "string" then package.loaded[r] = nil end
  self._reconciler, self._fn = r, nil
  if rawget(self, "_run") then self._run = send end
  if code ~= nil and type(cfg) == "table" then
    local c = {}
    for k, v in pairs(cfg) do c[k] = v end
    c.reconciler = code
    self._cfg = c -- what the leader election rebuilds from
  end
  return true
end

--- Stops taking work without waiting (queued requests are dropped); with
-- timeout, reconciles still running then are interrupted. stop() joins.
function Controller:shutdown(timeout) return options.call(self._ud.shutdown, self._ud, timeout) end

--- The reconciles in flight: a list of {worker =, key =, seconds =}.
function Controller:busy() return self._ud:busy() end

--- Frees the controller (stops it first). Also on <close>.
function Controller:close() return self._ud:close() end
Controller.__close = Controller.close

--- Counters (controller-runtime's metric names) plus queue_len.
function Controller:stats() return self._ud:stats() end

--- Adds a request to the queue: ctl:enqueue(ns, name) (ns nil or "" when
-- cluster-scoped), or ctl:enqueue(key) with key "ns/name" or, for a
-- cluster-scoped For resource, "name" (as ctl:why and ctl:plan take
-- them), or a request/object ({namespace=, name=} or {metadata=...}).
function Controller:enqueue(ns, name)
  if name == nil then
    local key = ns
    if type(key) == "table" then
      local m = type(key.metadata) == "table" and key.metadata or key
      ns, name = m.namespace, m.name
    elseif type(key) == "string" then
      local a, b = key:match("^([^/]*)/([^/]+)$")
      if a then
        ns, name = a, b
      elseif not key:find("/", 1, true) and key ~= "" then
        if rawget(self, "_namespaced") then
          raise(("ctl:enqueue(%q): %s is namespaced: give \"namespace/name\" or (namespace, name)")
            :format(key, tostring(rawget(self, "_for_res"))))
        end
        ns, name = "", key
      end
    end
    if type(name) ~= "string" or name == "" then
      raise(("ctl:enqueue: want (namespace, name), \"namespace/name\", \"name\" or a request table, got %s")
        :format(type(key) == "string" and string.format("%q", key) or type(key)))
    end
  elseif type(name) ~= "string" or name == "" or (ns ~= nil and type(ns) ~= "string") then
    raise(("ctl:enqueue(ns, name): ns must be a string or nil and name a non-empty string, got %s, %s")
      :format(type(ns), type(name)))
  end
  return options.call(self._ud.enqueue, self._ud, ns, name)
end

--- Adds ns/name for every name of the array names in one call (a batch
-- enqueued from C: no Lua call per name). ns nil or "" when cluster-scoped.
function Controller:enqueue_many(ns, names)
  if (ns ~= nil and type(ns) ~= "string") or type(names) ~= "table" then
    raise(("ctl:enqueue_many(ns, names): ns must be a string or nil and names an array, got %s, %s")
      :format(type(ns), type(names)))
  end
  return options.call(self._ud.enqueue_many, self._ud, ns, names)
end

--- Why did this run: the key's bounded history (what enqueued it, the
-- predicates' verdicts, each reconcile with its result and writes), oldest
-- first, as a list of tables whose tostring is one readable line per
-- event (see csrc/lua/lcontroller_why.c for the fields). key: "ns/name",
-- "name" (cluster-scoped), or a request/object ({namespace=, name=} or
-- {metadata={namespace=, name=}}). opts.print: also print it.
function Controller:why(key, opts)
  if type(key) == "table" then
    local m = key.metadata or key
    local ns, name = m.namespace, m.name
    if type(name) ~= "string" then error("why: the key table has no name", 2) end
    key = (ns and ns ~= "") and (ns .. "/" .. name) or name
  elseif type(key) ~= "string" then
    error("why: key must be \"ns/name\" or a request table, got " .. type(key), 2)
  end
  local h, msg, code = self._ud:why(key)
  if not h then return nil, msg, code end
  if type(opts) == "table" and opts.print then print(tostring(h)) end
  return h
end

function Controller:name() return self._ud:name() end

--- How many times the key ("ns/name") failed in a row: its backoff grows
-- with it (0 when it is not failing).
function Controller:num_requeues(key) return self._ud:num_requeues(key) end

function Controller:queue_len() return self._ud:queue_len() end

--- What the workqueue holds now: a list of {key =, state = "ready"|
-- "processing"|"waiting", due_in =, processing_for =, requeues =} (at most
-- max items, default all), and the smallest due_in (seconds on the
-- controllers' clock) of the waiting ones, nil when none wait.
function Controller:queue(max) return options.call(self._ud.queue, self._ud, max) end

function Controller:__tostring() return tostring(self._ud) end

-- The reconcile function of a reconciler (a function, or a module name
-- whose module is a function or has .reconcile), or nil, msg. Shared with
-- kinformer.plan (M.resolve).
local function resolve(r)
  if type(r) == "function" then return r end
  local m = require(r)
  if type(m) == "function" then return m end
  if type(m) == "table" and type(m.reconcile) == "function" then return m.reconcile end
  return nil, ("reconciler module '%s' returns a %s: return a function or a table with .reconcile"):format(r, type(m))
end

-- xpcall's handler for a reconcile run here: a terminal error as it is,
-- anything else with its traceback. Shared with kinformer.plan (M.handler).
local function handler(e)
  if core.is_terminal(e) then return e end
  return debug.traceback(tostring(e), 2)
end
M.resolve, M.handler = resolve, handler

--- Runs the reconciler once in the calling state on {namespace=, name=}
-- with a ctx over the manager's env. Returns true (done) or the result
-- table, or nil, err, code (a raised error carries a traceback; a terminal
-- error is returned as is; a result the workers would take for an error,
-- such as a bad requeue_after, gives nil and the workers' message). code
-- is what the reconciler returned third (return nil, msg, code: the Status
-- reason of a failed client call, "NotFound", "Conflict"...), or the
-- .code field of a raised or terminal error table, or nil.
function Controller:reconcile_once(req)
  if type(req) ~= "table" or type(req.name) ~= "string" or req.name == "" then
    raise("reconcile_once: want {namespace = ..., name = ...}")
  end
  -- resolved once and kept until ctl:reload, as the workers' states are:
  -- clearing package.loaded alone changes neither
  local runs = rawget(self, "_run") or self._reconciler
  local fn = rawget(self, "_fn")
  if not fn or rawget(self, "_fn_for") ~= runs then
    local msg
    fn, msg = resolve(runs)
    if not fn then return nil, msg end
    self._fn, self._fn_for = fn, runs
  end
  local ns = req.namespace or ""
  local r = { namespace = ns, name = req.name, key = ns ~= "" and (ns .. "/" .. req.name) or req.name }
  local for_inf = rawget(self, "_for")
  local ctx = require(CTX_MODULE).new(self._env, { controller = self._name, worker = 0, request = r,
                                                  for_resource = for_inf and for_inf:name() or nil })
  local ok, res, err, code = xpcall(fn, handler, r, ctx)
  if not ok then return nil, res, type(res) == "table" and rawget(res, "code") or nil end
  -- what the values mean is decided in one place, C's (csrc/lua/lresult.c),
  -- the same for the controller's workers
  local kind, detail = core.reconcile_result(true, res, err)
  if kind == "terminal" then
    local t = core.is_terminal(res) and res or err
    return nil, t, code or (type(t) == "table" and rawget(t, "code")) or nil
  end
  if kind == "error" then
    if res == nil or res == false then return nil, err, code end
    return nil, detail
  end
  if type(res) == "table" then return res end
  return true
end

--- What the reconciler would change for keys ("ns/name", {namespace=,
-- name=}, a list of them, or nil: every key of the For informer), with
-- every write sent as a server-side dry run: see kinformer.plan. opts:
-- timeout (cache sync, seconds), out (a file the text is written to).
-- Returns the report (tostring: unified diffs per key; .changed, .failed),
-- or nil, msg, code when the caches cannot sync.
function Controller:plan(keys, opts) return require("kinformer.plan").plan(self, keys, opts) end

return M
