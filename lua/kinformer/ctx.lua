--- kinformer.ctx: what a reconciler gets as its second argument.
--
--   return function(req, ctx)
--     local dep = ctx.listers["apps/v1/deployments"]:get(req.key)
--     if not dep then return end                      -- gone: nothing to do
--     ctx.log:info("replicas %d", dep.spec.replicas)  -- [controller=x key=ns/name]
--     local cm = { apiVersion = "v1", kind = "ConfigMap",
--                  metadata = { name = req.name, namespace = req.namespace } }
--     assert(ctx.set_controller_reference(dep, cm))
--     local _, err, code = ctx.client:create(cm)
--     if err and code ~= "AlreadyExists" then return nil, err end
--   end
--
-- Fields: client (kinformer.client userdata), listers (listers["v1/pods"]:
-- a read-only informer of the manager, or nil), lister(name) (the same, or
-- nil, msg, code; ctx.lister, not ctx:lister), log (log:error/warn/info/
-- debug(fmt, ...), with a colon, through kin's
-- log, tagged with controller and key), request ({namespace=, name=, key=}),
-- controller (name), worker (index), env (the kinformer.env userdata).
--
-- Events: ctx:event(obj, "Normal"|"Warning", reason, message [, action]),
-- a method of the ctx (with a colon, as ctx.log:info), writes a Kubernetes
-- Event about obj from this controller (reportingController = its name)
-- through the manager's recorder, asynchronously: it returns true once
-- queued (nil, msg, "EBUSY" when the queue is full), never waiting for the
-- server. ctx.event(obj, ...) raises.
--
-- Children: ctx:ensure(obj [, opts]) makes obj exist as described (a
-- server-side apply under the controller's name as field manager, with the
-- reconciled object as controller owner unless opts.owner = false; no
-- request when the object already is as described: kinformer.util.apply
-- says when) and returns the object and "created", "updated" or
-- "unchanged"; an object of that name controlled by another owner is a
-- terminal error naming it. ctx:object() is the reconciled object (the
-- For informer's cached copy, nil when gone). With children = {...} on the
-- controller, what a successful reconcile did not ensure is pruned
-- (kinformer.lifecycle).
--
-- Helpers, called as ctx.f(obj, ...) (also module functions, callable
-- without a ctx; ctx:f(...) raises), each owned by the module of what it
-- serves: kinformer.util.finalizer (ensure_finalizer, remove_finalizer,
-- has_finalizer, is_being_deleted), kinformer.util.owner
-- (set_controller_reference, set_owner_reference),
-- kinformer.util.condition (set_condition, get_condition,
-- is_condition_true), kinformer.errors (terminal, is_terminal). They edit
-- the table they are given; writing it back (ctx.client:update /
-- update_status) is up to the caller. ctx.log comes from kinformer.log.
--
-- The same module works in every Lua state (the main state, controller
-- worker states); per-state caches keep ctx.new cheap enough to call once
-- per reconcile.
local errors = require "kinformer.errors"
local log = require "kinformer.log"
local options = require "kinformer.util.options"
local lazy_index = require("kinformer.util.lazy").index

local M = {}

-- Each helper, by the module that owns it (one owner per rule).
local OWNERS = {
  ["kinformer.util.finalizer"] = { "has_finalizer", "ensure_finalizer", "remove_finalizer", "is_being_deleted" },
  ["kinformer.util.owner"] = { "set_controller_reference", "set_owner_reference" },
  ["kinformer.util.condition"] = { "get_condition", "set_condition", "is_condition_true" },
}
local HELPERS = {}
for mod, names in pairs(OWNERS) do
  local m = require(mod)
  for _, name in ipairs(names) do
    M[name] = m[name]
    HELPERS[#HELPERS + 1] = name
  end
end
M.terminal = errors.terminal
M.is_terminal = errors.is_terminal
HELPERS[#HELPERS + 1] = "terminal"
HELPERS[#HELPERS + 1] = "is_terminal"

--- ctx.logger(controller, key, component): kinformer.log's logger.
M.logger = log.logger

-- ---- per-state caches: env userdata -> {client =, listers = {}} ----------
local per_env = setmetatable({}, { __mode = "k" })

local function env_cache(env)
  local c = per_env[env]
  if not c then
    c = { listers = {} }
    per_env[env] = c
  end
  return c
end

-- The env's recorder for component (cached per env and component).
local function get_recorder(env, component)
  local c = env_cache(env)
  c.recorders = c.recorders or {}
  local r = c.recorders[component]
  if not r then
    r = env:event_recorder(component)
    c.recorders[component] = r
  end
  return r
end

local function get_client(env)
  local c = env_cache(env)
  if not c.client then c.client = env:client() end
  return c.client
end

-- Returns the lister named name (cached per env), or nil, msg, code.
local function get_lister(env, name)
  local c = env_cache(env)
  local l = c.listers[name]
  if l then return l end
  local msg, code
  l, msg, code = env:lister(name)
  if not l then return nil, msg, code end
  c.listers[name] = l
  return l
end

-- ---- ctx --------------------------------------------------------------------

local function request_key(req)
  if type(req) ~= "table" then return nil end
  if req.key then return req.key end
  if req.name then
    if req.namespace and req.namespace ~= "" then return req.namespace .. "/" .. req.name end
    return req.name
  end
end

local Ctx = {}
local Listers = {}

-- Everything but the request is made on first use and kept in the ctx:
-- a reconcile that only reads its request pays for one table.
local lazy = {
  client = function(self) return get_client(rawget(self, "env")) end,
  log = function(self)
    return log.logger(rawget(self, "controller"), request_key(rawget(self, "request")))
  end,
  listers = function(self) return setmetatable({ _env = rawget(self, "env") }, Listers) end,
  -- ctx.lister(name) -> read-only informer | nil, msg, code
  lister = function(self)
    local env = rawget(self, "env")
    return function(name)
      if name == self then error("ctx:lister(name): call it as ctx.lister(name)", 2) end
      return get_lister(env, name)
    end
  end,
}

Ctx.__index = lazy_index(lazy, Ctx)
Ctx.__name = "kinformer.ctx"
Ctx.__tostring = function(self)
  return string.format("kinformer.ctx (controller=%s key=%s)", tostring(self.controller),
    tostring(self.request and self.request.key))
end

-- Helpers have one call style, ctx.f(obj, ...) (README "ctx helpers");
-- ctx:f(obj, ...) raises saying so rather than treating the ctx as the
-- object.
for _, name in ipairs(HELPERS) do
  local f = M[name]
  Ctx[name] = function(a, ...)
    if getmetatable(a) == Ctx then
      error(string.format("ctx:%s(...): call it as ctx.%s(...)", name, name), 2)
    end
    return f(a, ...)
  end
end

--- ctx:event(obj, type, reason, message [, action]) -> true | nil, msg, code
function Ctx.event(self, obj, ...)
  if getmetatable(self) ~= Ctx then
    error("ctx.event(...): call it as ctx:event(obj, type, reason, message)", 2)
  end
  local controller = rawget(self, "controller")
  if type(controller) ~= "string" or controller == "" then
    error("ctx:event: this ctx has no controller name (the Event's reportingController)", 2)
  end
  return get_recorder(rawget(self, "env"), controller):event(obj, ...)
end

-- "group/version/resource" (or "version/resource") of a resource table.
local function resource_name(r)
  return (r.group and r.group ~= "" and (r.group .. "/") or "") .. r.version .. "/" .. r.resource
end
M.resource_name = resource_name

--- ctx:object() -> the reconciled object: the For informer's cached copy
-- of the request's key (a lazy view), or nil when it is not cached (gone,
-- or the controller has no For resource); before the informer synced (a
-- reconcile_once before mgr:start) the server's copy, read once per ctx
-- (a failed read raises).
function Ctx.object(self)
  if getmetatable(self) ~= Ctx then error("ctx.object(): call it as ctx:object()", 2) end
  local set = rawget(self, "_object")
  if set ~= nil then return set or nil end
  local res = rawget(self, "for_resource")
  local req = rawget(self, "request")
  if type(res) ~= "string" or type(req) ~= "table" then return nil end
  local l = get_lister(rawget(self, "env"), res)
  if l and l:has_synced() then return l:get(request_key(req)) or nil end
  -- no synced cache (reconcile_once before mgr:start, in a REPL): the server
  local obj, err, code = self.client:get(res:match("^[^?]*"), req.namespace, req.name)
  if not obj and code ~= "NotFound" then error("ctx:object(): " .. tostring(err), 2) end
  rawset(self, "_object", obj or false)
  return obj or nil
end

M.ENSURE_OPTIONS = { "owner", "resource", "force", "field_manager", "adopt" }

--- ctx:ensure(obj [, opts]) -> the object, "created" | "updated" |
-- "unchanged"; or nil, msg, code [, http_code] (a failed request; a
-- terminal error when another controller owns the object). opts: owner
-- (false: no owner reference; a table: that object instead of ctx:object()),
-- resource (default: obj's apiVersion and kind), force (default true: take
-- over fields another manager set), field_manager (default: the
-- controller's name), adopt (default true: an existing object nobody
-- controls becomes owner's, as controller-runtime's SetControllerReference
-- adopts; false: that is a terminal error too). Misuse (no table, no name, no apiVersion/kind)
-- raises at the caller's line.
function Ctx.ensure(self, obj, opts)
  if getmetatable(self) ~= Ctx then error("ctx.ensure(...): call it as ctx:ensure(obj [, opts])", 2) end
  if type(obj) ~= "table" then error("ctx:ensure: expected an object (table), got " .. type(obj), 2) end
  opts = options.check(opts, M.ENSURE_OPTIONS, "ctx:ensure")
  local apply = require "kinformer.util.apply"
  local m = type(obj.metadata) == "table" and obj.metadata or {}
  if type(m.name) ~= "string" or m.name == "" then
    error("ctx:ensure: the object needs metadata.name (generateName cannot be ensured)", 2)
  end
  local resname = opts.resource
  if resname == nil then
    if type(obj.apiVersion) ~= "string" or type(obj.kind) ~= "string" then
      error("ctx:ensure: the object needs apiVersion and kind (or opts.resource)", 2)
    end
    resname = obj.apiVersion .. "/" .. obj.kind
  end
  local client = self.client
  local r, msg, code = client:resource(resname)
  if not r then return nil, msg, code end
  local req = rawget(self, "request") or {}
  local owner
  if opts.owner ~= false then
    owner = opts.owner or self:object()
    if owner == nil then
      return nil, string.format("ctx:ensure: no owner for %s %s: the reconciled object %s is not in the cache "
        .. "(deleted?); pass opts.owner, or owner = false", tostring(r.kind), m.name, tostring(req.key)), "NotFound"
    end
  end
  local d, h, ocode = apply.desired(obj, owner)
  if not d then return nil, h, ocode end
  local ns = d.metadata.namespace
  if r.namespaced then
    if ns == nil or ns == "" then
      ns = (req.namespace ~= nil and req.namespace ~= "") and req.namespace or client:namespace()
      d.metadata.namespace = ns
    end
  else
    ns, d.metadata.namespace = nil, nil
  end
  if d.apiVersion == nil then d.apiVersion = (r.group ~= "" and (r.group .. "/") or "") .. r.version end
  if d.kind == nil then d.kind = r.kind end
  local plural = resource_name(r)
  local key = ns and (ns .. "/" .. m.name) or m.name
  local ensured = rawget(self, "_ensured")
  if not ensured then
    ensured = {}
    rawset(self, "_ensured", ensured)
  end
  -- the current object: the cache, else the server (a child created by an
  -- earlier reconcile may not be cached yet)
  local l = get_lister(rawget(self, "env"), plural)
  local cur = l and l:get(key) or nil
  if cur == nil then
    local got, gerr, gcode, ghttp = client:get(plural, ns, m.name)
    if got then cur = got
    elseif gcode ~= "NotFound" then return nil, gerr, gcode, ghttp end
  end
  if cur ~= nil then
    local ref = apply.controller_of(cur)
    if ref and owner and not apply.same_owner(ref, owner) then
      return nil, errors.terminal(string.format("%s %s exists and is controlled by %s %s, not by %s %s",
        r.kind, key, tostring(ref.kind), tostring(ref.name), tostring(owner.kind), tostring(owner.metadata.name))),
        "AlreadyOwned"
    end
    if not ref and owner and opts.adopt == false then
      return nil, errors.terminal(string.format("%s %s exists and has no controller: not adopting it for %s %s "
        .. "(adopt = false)", r.kind, key, tostring(owner.kind), tostring(owner.metadata.name))), "AlreadyExists"
    end
    if apply.unchanged(d, h, cur) then
      ensured[plural .. "\0" .. key] = true
      return cur, "unchanged"
    end
  end
  local fm = opts.field_manager or rawget(self, "controller") or "kinformer"
  local res, aerr, acode, ahttp = client:apply(plural, d, { field_manager = fm, force = opts.force ~= false })
  if not res then return nil, aerr, acode, ahttp end
  ensured[plural .. "\0" .. key] = true
  if cur == nil then return res, "created" end
  local rv = type(res.metadata) == "table" and res.metadata.resourceVersion
  return res, (rv ~= nil and rv == cur.metadata.resourceVersion) and "unchanged" or "updated"
end

--- Makes ctx:object() return obj for the rest of this reconcile (the
-- lifecycle's copy after it patched the object: fresher than the cache).
function M.set_object(ctx, obj) rawset(ctx, "_object", obj) end

--- What this reconcile ensured: a set of "<resource>\0<key>" strings
-- (kinformer.lifecycle prunes the rest).
function M.ensured(ctx) return rawget(ctx, "_ensured") or {} end

Listers.__index = function(self, name)
  if type(name) ~= "string" then return nil end
  return (get_lister(rawget(self, "_env"), name))
end


--- ctx.new(env_ud, info) -> ctx. info: {controller=, worker=, request=, for_resource=}.
-- env_ud: a kinformer.env userdata. Cheap: client and listers are cached
-- per env in this Lua state.
function M.new(env, info)
  if env == nil then error("ctx.new: env (a kinformer.env) is required", 2) end
  info = info or {}
  local req = info.request
  if req and req.key == nil then req.key = request_key(req) end
  return setmetatable({ env = env, controller = info.controller, worker = info.worker, request = req,
                        for_resource = info.for_resource }, Ctx)
end

--- The controller's constructor (lcontroller.c): the same ctx as new, for
-- one reconcile, without an info table. for_resource: the controller's
-- For resource (ctx:object, ctx:ensure's owner), nil when it has none.
function M.for_request(env, controller, worker, req, for_resource)
  return setmetatable({ env = env, controller = controller, worker = worker, request = req,
                        for_resource = for_resource }, Ctx)
end

--- The metatable of every ctx: lcontroller.c builds a reconcile's ctx
-- with it in C, with the same five fields as for_request.
M.metatable = Ctx

return M
