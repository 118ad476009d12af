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
-- Helpers, called as ctx.f(obj, ...) (also module functions, callable
-- without a ctx; ctx:f(...) raises): ensure_finalizer,
-- remove_finalizer, has_finalizer, set_controller_reference,
-- set_owner_reference, set_condition, get_condition, is_being_deleted,
-- terminal, is_terminal. They edit the table they are given; writing it
-- back (ctx.client:update / update_status) is up to the caller.
--
-- The same module works in every Lua state (the main state, controller
-- worker states); per-state caches keep ctx.new cheap enough to call once
-- per reconcile.
local core = require "kinformer.core"
local errors = require "kinformer.errors"

local M = {}

-- A value that is there: neither absent nor a JSON null (core.null).
local function present(v)
  return v ~= nil and v ~= core.null
end

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

-- ---- log ------------------------------------------------------------------

local Log = {}
Log.__index = Log

local function emit(self, level, fmt, ...)
  if not core.log_enabled(level) then return end
  local msg
  if select("#", ...) > 0 then
    msg = string.format(fmt, ...)
  else
    msg = tostring(fmt)
  end
  core.log(level, self.component, self.prefix .. msg)
end

--- log:error/warn/info/debug(fmt, ...): string.format(fmt, ...) (or fmt
-- alone) as one line of kin's log at that level (KINFORMER_LOG_LEVEL).
-- One call style: log:info(...); log.info(...) raises saying so.
for _, level in ipairs { "error", "warn", "info", "debug" } do
  Log[level] = function(self, fmt, ...)
    if getmetatable(self) ~= Log then
      error(string.format("log.%s(...): call it as log:%s(fmt, ...)", level, level), 2)
    end
    return emit(self, level, fmt, ...)
  end
end

--- A logger whose lines start with "[controller=<c> key=<k>] " (the parts
-- that are known). component is kin's log component ("reconcile").
function M.logger(controller, key, component)
  local tags = {}
  if controller then tags[#tags + 1] = "controller=" .. tostring(controller) end
  if key then tags[#tags + 1] = "key=" .. tostring(key) end
  local prefix = #tags > 0 and ("[" .. table.concat(tags, " ") .. "] ") or ""
  return setmetatable({ component = component or "reconcile", prefix = prefix }, Log)
end

-- ---- helpers ----------------------------------------------------------------

local function check_obj(obj, what, level)
  if type(obj) ~= "table" then
    error(string.format("%s: expected an object (table), got %s", what, type(obj)), (level or 2) + 1)
  end
end

local function meta(obj)
  local m = obj.metadata
  if type(m) ~= "table" then
    m = {}
    obj.metadata = m
  end
  return m
end

--- Whether obj.metadata.finalizers holds name.
function M.has_finalizer(obj, name)
  check_obj(obj, "has_finalizer")
  assert(type(name) == "string", "has_finalizer: name must be a string")
  local m = obj.metadata
  local f = type(m) == "table" and m.finalizers
  if type(f) ~= "table" then return false end
  for _, v in ipairs(f) do
    if v == name then return true end
  end
  return false
end

--- Adds finalizer name to obj.metadata.finalizers. Returns true when it
-- was added (the caller then updates the object), false when present.
function M.ensure_finalizer(obj, name)
  check_obj(obj, "ensure_finalizer")
  assert(type(name) == "string" and name ~= "", "ensure_finalizer: name must be a non-empty string")
  if M.has_finalizer(obj, name) then return false end
  local m = meta(obj)
  if type(m.finalizers) ~= "table" then m.finalizers = {} end
  table.insert(m.finalizers, name)
  return true
end

--- Removes every occurrence of name from obj.metadata.finalizers. Returns
-- true when one was removed. An emptied list becomes nil (so that an
-- update sends no finalizers: an empty Lua table would encode as {}).
function M.remove_finalizer(obj, name)
  check_obj(obj, "remove_finalizer")
  assert(type(name) == "string", "remove_finalizer: name must be a string")
  local m = obj.metadata
  local f = type(m) == "table" and m.finalizers
  if type(f) ~= "table" then return false end
  local kept, removed = {}, false
  for _, v in ipairs(f) do
    if v == name then removed = true else kept[#kept + 1] = v end
  end
  if removed then m.finalizers = #kept > 0 and kept or nil end
  return removed
end

--- Whether obj has a deletionTimestamp (it waits for its finalizers).
function M.is_being_deleted(obj)
  check_obj(obj, "is_being_deleted")
  local m = obj.metadata
  return type(m) == "table" and present(m.deletionTimestamp) and m.deletionTimestamp ~= ""
end

-- The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
local function group_of(api_version)
  return api_version:match("^(.*)/[^/]*$") or ""
end

-- The ownerReference for owner (raises when owner lacks an identity field).
local function owner_ref(owner, what)
  check_obj(owner, what, 3)
  local m = owner.metadata
  local function need(v, field)
    if type(v) ~= "string" or v == "" then
      error(string.format("%s: the owner has no %s", what, field), 4)
    end
  end
  need(owner.apiVersion, "apiVersion")
  need(owner.kind, "kind")
  need(type(m) == "table" and m.name, "metadata.name")
  need(m.uid, "metadata.uid (was it read from the server?)")
  return { apiVersion = owner.apiVersion, kind = owner.kind, name = m.name, uid = m.uid }
end

-- Same object: same API group, kind and name (the version may differ).
local function same_owner(a, b)
  return type(a.apiVersion) == "string" and group_of(a.apiVersion) == group_of(b.apiVersion)
      and a.kind == b.kind and a.name == b.name
end

local function check_namespaces(owner, obj, what)
  local ons = type(owner.metadata) == "table" and owner.metadata.namespace
  local ns = type(obj.metadata) == "table" and obj.metadata.namespace
  if present(ons) and ons ~= "" and present(ns) and ns ~= "" and ons ~= ns then
    return nil, string.format("%s: cross-namespace owner references are disallowed: owner %s/%s, object in namespace %s",
      what, ons, owner.metadata.name, ns), "Invalid"
  end
  return true
end

local function upsert(obj, ref)
  local m = meta(obj)
  if type(m.ownerReferences) ~= "table" then m.ownerReferences = {} end
  local refs = m.ownerReferences
  for i, r in ipairs(refs) do
    if same_owner(r, ref) then
      refs[i] = ref
      return
    end
  end
  refs[#refs + 1] = ref
end

local function obj_label(obj)
  local m = type(obj.metadata) == "table" and obj.metadata or {}
  local ns = present(m.namespace) and m.namespace ~= "" and (m.namespace .. "/") or ""
  return ns .. tostring(m.name or m.generateName or "?")
end

--- Makes owner the managing controller of obj: an ownerReference with
-- controller = true and blockOwnerDeletion = true (so garbage collection
-- deletes obj with owner, and Owns() watches map obj to owner). owner
-- must come from the server (metadata.uid). Returns true; or nil, msg,
-- "AlreadyOwned" when another object is obj's controller (controller-
-- runtime's AlreadyOwnedError), nil, msg, "Invalid" for owner and object
-- in different namespaces. Raises when owner or obj is not an object.
function M.set_controller_reference(owner, obj)
  local ref = owner_ref(owner, "set_controller_reference")
  check_obj(obj, "set_controller_reference")
  local ok, msg, code = check_namespaces(owner, obj, "set_controller_reference")
  if not ok then return nil, msg, code end
  local refs = type(obj.metadata) == "table" and obj.metadata.ownerReferences
  if type(refs) == "table" then
    for _, r in ipairs(refs) do
      if r.controller == true and not same_owner(r, ref) then
        return nil, string.format("object %s is already owned by another %s controller %s",
          obj_label(obj), tostring(r.kind), tostring(r.name)), "AlreadyOwned"
      end
    end
  end
  ref.controller = true
  ref.blockOwnerDeletion = true
  upsert(obj, ref)
  return true
end

--- Adds (or refreshes) a plain ownerReference to owner on obj, without
-- making it the controller; an existing reference to the same owner keeps
-- its controller and blockOwnerDeletion flags. Returns true, or nil, msg,
-- "Invalid" for different namespaces.
function M.set_owner_reference(owner, obj)
  local ref = owner_ref(owner, "set_owner_reference")
  check_obj(obj, "set_owner_reference")
  local ok, msg, code = check_namespaces(owner, obj, "set_owner_reference")
  if not ok then return nil, msg, code end
  local refs = type(obj.metadata) == "table" and obj.metadata.ownerReferences
  if type(refs) == "table" then
    for _, r in ipairs(refs) do
      if same_owner(r, ref) then
        ref.controller, ref.blockOwnerDeletion = r.controller, r.blockOwnerDeletion
        break
      end
    end
  end
  upsert(obj, ref)
  return true
end

--- The condition of type typ in obj.status.conditions, or nil.
function M.get_condition(obj, typ)
  check_obj(obj, "get_condition")
  local st = obj.status
  local conds = type(st) == "table" and st.conditions
  if type(conds) ~= "table" then return nil end
  for _, c in ipairs(conds) do
    if c.type == typ then return c end
  end
  return nil
end

local function now_rfc3339()
  return os.date("!%Y-%m-%dT%H:%M:%SZ")
end

--- Sets a condition in obj.status.conditions, as apimachinery's
-- meta.SetStatusCondition: cond = {type=, status="True"|"False"|"Unknown",
-- reason=, message=, observed_generation= (default obj.metadata.generation),
-- last_transition_time= (default now)}. lastTransitionTime changes only
-- when the status changes (or the condition is new); reason, message and
-- observedGeneration are always set. Returns true when anything changed.
function M.set_condition(obj, cond)
  check_obj(obj, "set_condition")
  if type(cond) ~= "table" then error("set_condition: cond must be a table", 2) end
  if type(cond.type) ~= "string" or cond.type == "" then error("set_condition: cond.type is required", 2) end
  local status = cond.status
  if status == true then status = "True" elseif status == false then status = "False" end
  if status ~= "True" and status ~= "False" and status ~= "Unknown" then
    error("set_condition: cond.status must be \"True\", \"False\" or \"Unknown\"", 2)
  end
  local gen = cond.observed_generation or cond.observedGeneration
  if gen == nil and type(obj.metadata) == "table" and present(obj.metadata.generation) then
    gen = obj.metadata.generation
  end
  if math.type(gen) == "float" and gen == math.floor(gen) then gen = math.tointeger(gen) end
  local ltt = cond.last_transition_time or cond.lastTransitionTime or now_rfc3339()
  if type(obj.status) ~= "table" then obj.status = {} end
  local st = obj.status
  if type(st.conditions) ~= "table" then st.conditions = {} end
  local existing = M.get_condition(obj, cond.type)
  if not existing then
    st.conditions[#st.conditions + 1] = {
      type = cond.type, status = status, reason = cond.reason, message = cond.message,
      observedGeneration = gen, lastTransitionTime = ltt,
    }
    return true
  end
  local changed = false
  if existing.status ~= status then
    existing.status = status
    existing.lastTransitionTime = ltt
    changed = true
  end
  for k, v in pairs { reason = cond.reason, message = cond.message, observedGeneration = gen } do
    if existing[k] ~= v then
      existing[k] = v
      changed = true
    end
  end
  return changed
end

--- Whether obj's condition typ has status "True".
function M.is_condition_true(obj, typ)
  local c = M.get_condition(obj, typ)
  return c ~= nil and c.status == "True"
end

M.terminal = errors.terminal
M.is_terminal = errors.is_terminal

local HELPERS = {
  "has_finalizer", "ensure_finalizer", "remove_finalizer", "is_being_deleted",
  "set_controller_reference", "set_owner_reference", "get_condition", "set_condition",
  "is_condition_true", "terminal", "is_terminal",
}

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
    return M.logger(rawget(self, "controller"), request_key(rawget(self, "request")))
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
