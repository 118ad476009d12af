--- kinformer.webhook_run: one review in a webhook's worker state. The
-- binding (csrc/lua/lwebhook.c) calls M.run on the server's connection
-- thread, in a worker state taken from the hook's pool, under the
-- review's deadline; what it returns becomes the kin_webhook_response.
--
--   M.run(kind, handler, req, original, env, info) -> result
--     kind     "validating" | "mutating" | "conversion"
--     handler  the user's function (copied into this state with its upvalues)
--     req      admission: {uid=, operation=, kind={group=, version=, kind=},
--              resource={group=, version=, resource=}, sub_resource=, name=,
--              namespace=, dry_run=, user_info=, options=, object=, old_object=}
--              (objects are lazy views, nil when absent);
--              conversion: {uid=, desired_api_version=, objects={views...}}
--     original a second view of req.object (mutating): the object as sent,
--              what the patch is computed against
--     env      the manager's kinformer.env userdata in this state
--     info     {name=, path=, deadline=, timeout=}
--   result: {allowed=, message=, code=, warnings={...}, patch=JSON text or
--   nil} (admission) | {converted={JSON text...}} or {failed=true,
--   message=} (conversion). A raised error propagates (the binding answers
--   it as a failure naming the hook and the file:line).
--
-- ctx (the handlers' last argument): ctx.client (the manager's client; its
-- requests carry the review's deadline, set by the binding), ctx.listers /
-- ctx:lister(name) (the manager's informers, read-only), ctx.log (lines
-- tagged [webhook=<name> key=<ns/name>]), ctx:warn(msg) (a warning in the
-- response), ctx.deadline (core.monotime() seconds by which the answer is
-- due), ctx.webhook (the hook's name), ctx.env.
local core = require "kinformer.core"
local ctxmod = require "kinformer.ctx"
local log = require "kinformer.log"
local patch = require "kinformer.webhook_patch"
local lazy_index = require("kinformer.util.lazy").index

local M = {}

local WCtx = {}
WCtx.__name = "kinformer.webhook_ctx"

local lazy = {
  client = function(self) return rawget(self, "_base").client end,
  listers = function(self) return rawget(self, "_base").listers end,
  log = function(self)
    local l = log.logger(nil, nil, "webhook")
    local key = rawget(self, "_key")
    l.prefix = ("[webhook=%s%s] "):format(rawget(self, "webhook"), key and (" key=" .. key) or "")
    return l
  end,
}

WCtx.__index = lazy_index(lazy, WCtx)
WCtx.__tostring = function(self) return ("kinformer.webhook_ctx (webhook=%s)"):format(rawget(self, "webhook")) end

--- ctx:warn(msg): adds a warning to the response (kubectl prints it).
function WCtx.warn(self, msg)
  if getmetatable(self) ~= WCtx then error("ctx.warn(msg): call it as ctx:warn(msg)", 2) end
  local w = rawget(self, "_warnings")
  w[#w + 1] = tostring(msg)
end

--- ctx:lister(name): the manager's informer named name, read-only, or
-- nil, msg, code.
function WCtx:lister(name)
  if getmetatable(self) ~= WCtx then error("ctx.lister(name): call it as ctx:lister(name)", 2) end
  return rawget(self, "_base").lister(name)
end

local function new_ctx(env, info, key)
  local base = ctxmod.new(env, { controller = info.name })
  return setmetatable({ env = env, webhook = info.name, deadline = info.deadline, _base = base,
                        _key = key, _warnings = {} }, WCtx)
end

-- A plain copy of v (views materialized): what is compared and encoded.
local function plain(v)
  if type(v) == "table" and core.is_view(v) then core.materialize(v) end
  return v
end

local function add_warnings(out, list)
  if type(list) ~= "table" then return end
  for _, w in ipairs(list) do out[#out + 1] = tostring(w) end
end

local function admission(kind, handler, req, original, ctx)
  local ok, msg, warnings = handler(req, ctx)
  local res = { warnings = {} }
  local obj
  if kind == "mutating" and type(ok) == "table" then
    obj, ok = ok, true
  end
  if ok == false or (ok == nil and msg ~= nil) then
    res.allowed = false
    res.message = msg ~= nil and tostring(msg) or nil
  else
    res.allowed = true
    if msg ~= nil then res.message = tostring(msg) end
  end
  add_warnings(res.warnings, warnings)
  add_warnings(res.warnings, rawget(ctx, "_warnings"))
  if kind == "mutating" and res.allowed then
    if obj == nil then obj = req.object end
    if obj ~= nil and original ~= nil then
      local ops = patch.diff(plain(original), plain(obj))
      if #ops > 0 then res.patch = core.json_encode(ops) end
    end
  end
  return res
end

local function conversion(handler, req, ctx)
  local to = req.desired_api_version
  local out = {}
  for i, obj in ipairs(req.objects) do
    local from = obj.apiVersion
    local r, msg = handler(obj, to, ctx)
    if r == nil or r == false then
      return { failed = true, message = ("converting object %d%s to %s: %s"):format(i,
        type(obj.metadata) == "table" and obj.metadata.name and (" (" .. tostring(obj.metadata.name) .. ")") or "",
        to, msg ~= nil and tostring(msg) or "the handler returned no object") }
    end
    if type(r) ~= "table" then
      error(("convert returned a %s, not an object (table)"):format(type(r)), 0)
    end
    if r.apiVersion == nil or r.apiVersion == from then r.apiVersion = to end
    out[i] = core.json_encode(plain(r))
  end
  return { converted = out, warnings = rawget(ctx, "_warnings") }
end

function M.run(kind, handler, req, original, env, info)
  local key
  if req.name and req.name ~= "" then
    key = (req.namespace and req.namespace ~= "") and (req.namespace .. "/" .. req.name) or req.name
  end
  local ctx = new_ctx(env, info, key)
  if kind == "conversion" then return conversion(handler, req, ctx) end
  return admission(kind, handler, req, original, ctx)
end

M.new_ctx = new_ctx

return M
