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

Ctx.__index = function(self, k)
  local make = lazy[k]
  if make then
    local v = make(self)
    rawset(self, k, v)
    return v
  end
  return Ctx[k]
end
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

Listers.__index = function(self, name)
  if type(name) ~= "string" then return nil end
  return (get_lister(rawget(self, "_env"), name))
end


--- ctx.new(env_ud, info) -> ctx. info: {controller=, worker=, request=}.
-- env_ud: a kinformer.env userdata. Cheap: client and listers are cached
-- per env in this Lua state.
function M.new(env, info)
  if env == nil then error("ctx.new: env (a kinformer.env) is required", 2) end
  info = info or {}
  local req = info.request
  if req and req.key == nil then req.key = request_key(req) end
  return setmetatable({ env = env, controller = info.controller, worker = info.worker, request = req }, Ctx)
end

--- The controller's constructor (lcontroller.c): the same ctx as new, for
-- one reconcile, without an info table.
function M.for_request(env, controller, worker, req)
  return setmetatable({ env = env, controller = controller, worker = worker, request = req }, Ctx)
end

return M
