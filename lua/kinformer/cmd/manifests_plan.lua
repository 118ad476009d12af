--- kinformer.cmd.manifests_plan: the planning run of `kinformer manifests`
-- (kinformer.cmd.manifests): the script is loaded (kinformer.bootstrap)
-- against a stand-in manager that records what it registers instead of
-- connecting: informers, controllers (for, owns, watches, children,
-- finalizer, rbac, and where their reconciler, finalize and map code is:
-- a module, or a function's file and lines), declared rules (mgr:rbac,
-- kinformer.manager{rbac = ...}), webhooks (mgr:webhook, normalized by
-- kinformer.webhook_config) and the client calls made while loading.
local scan = require "kinformer.cmd.rbac_scan"

local M = {}

-- ---- resources ------------------------------------------------------------

--- "apps/v1/deployments" -> "apps", "deployments"; "v1/pods" -> "", "pods";
-- a subresource ("v1/pods/status") stays in the resource ("pods/status");
-- a kind ("apps/v1/Deployment") is turned into its resource
-- (rbac_scan.kind_to_resource). Returns nil for anything else.
function M.split_resource(res)
  if type(res) ~= "string" then return nil end
  local parts = {}
  for p in res:gmatch("[^/]+") do parts[#parts + 1] = p end
  local g, at
  if #parts >= 2 and parts[1]:match("^v%d") then
    g, at = "", 2
  elseif #parts >= 3 and parts[2]:match("^v%d") then
    g, at = parts[1], 3
  else
    return nil
  end
  if parts[at]:match("^%u") then parts[at] = scan.kind_to_resource(parts[at]) end
  return g, table.concat(parts, "/", at)
end

-- ---- the planning manager -------------------------------------------------

-- What an unknown field or method of the planning objects gives: a value
-- that can be indexed and called (returning itself), so that a script
-- calling a manager feature planning knows nothing of (a metric, a health
-- check...) while it loads does not fail.
local anything
anything = setmetatable({}, {
  __index = function() return anything end,
  __call = function() return anything end,
  __tostring = function() return "kinformer.cmd.manifests planning stand-in" end,
})

local function permissive(t)
  return setmetatable(t, { __index = function() return anything end })
end

local CLIENT_VERBS = { "get", "list", "create", "update", "update_status", "patch", "apply", "delete" }

-- "examples/./x//y.lua" -> "examples/x/y.lua"
local function norm_path(p)
  p = p:gsub("/%./", "/"):gsub("^%./", ""):gsub("//+", "/")
  return p
end

-- The first frame outside kinformer's modules: {path =, line =}.
local function caller()
  local prefix = debug.getinfo(1, "S").source:match("^@(.*/)cmd/manifests_plan%.lua$")
  for level = 3, 30 do
    local info = debug.getinfo(level, "Sl")
    if not info then break end
    local src = info.source or ""
    if info.what ~= "C" and src:sub(1, 1) == "@" and not (prefix and src:sub(2, #prefix + 1) == prefix) then
      return { path = norm_path(src:sub(2)), line = info.currentline }
    end
  end
  return nil
end

-- Where function fn is defined: {path =, first =, last =}, or nil.
local function where_fn(fn)
  if type(fn) ~= "function" then return nil end
  local info = debug.getinfo(fn, "S")
  if not info or info.what ~= "Lua" or info.source:sub(1, 1) ~= "@" then return nil end
  return { path = norm_path(info.source:sub(2)), first = info.linedefined, last = info.lastlinedefined }
end

--- Runs the script (path) against a planning manager. opts: namespace
-- (the manager's, as --namespace), args. Returns the plan
-- {informers = {{resource=, namespace=, why=}}, controllers = {{name=,
-- ["for"]=, owns=, watches=, children=, finalizer=, rbac=, reconciler=
-- (module name), code = {{path=, first=, last=}: its functions}}},
-- rbac = {{rules =, why =}} (the manager's declared rules), webhooks =
-- {hooks as kinformer.webhook_config.normalize gives them}, modules =
-- {names required or named}, calls = {{verb=, resource=, why=}},
-- undetermined = {{where=, text=, verbs=, reason=}}}, or nil, message when
-- the script cannot be loaded or raises.
function M.plan_script(path, opts)
  opts = opts or {}
  local check_rbac = require("kinformer.controller").check_rbac
  local plan = { informers = {}, controllers = {}, modules = {}, module_set = {}, module_of = {}, calls = {},
                 undetermined = {}, rbac = {}, webhooks = {}, namespace = opts.namespace }
  local function module(name, why, ctl)
    if type(name) ~= "string" then return end
    if not plan.module_set[name] then
      plan.module_set[name] = why
      plan.modules[#plan.modules + 1] = name
    end
    if ctl then
      plan.module_of[name] = plan.module_of[name] or {}
      table.insert(plan.module_of[name], ctl)
    end
  end
  local function informer(res, o, why)
    plan.informers[#plan.informers + 1] = { resource = res, namespace = o and o.namespace or opts.namespace,
                                            why = why }
  end
  local client = {}
  for _, v in ipairs(CLIENT_VERBS) do
    client[v] = function(_, ...)
      local args = table.pack(...)
      local at = caller()
      local why = "script load" .. (at and (" (" .. at.path:match("([^/]*)$") .. ":" .. at.line .. ")") or "")
      local res, obj, o, guessed
      local a = args[1]
      local named = type(a) == "string" and not a:match("^%s*{")
      if v == "get" or v == "list" or v == "patch" or (v == "delete" and named) then
        res = named and a or nil
        o = v == "patch" and args[5] or nil
      elseif named and args.n >= 2 then
        res, obj, o = a, args[2], args[3]
      else
        obj, o = a, args[2]
      end
      if not res and type(obj) == "table" and type(obj.apiVersion) == "string" and type(obj.kind) == "string" then
        res, guessed = scan.object_resource(obj.apiVersion, obj.kind), true
      end
      o = type(o) == "table" and o or {}
      local verbs = ({ update_status = { "update" }, apply = { "patch", "create" } })[v] or { v }
      local sub = v == "update_status" and "status" or nil
      if (v == "patch" or v == "apply") and type(o.subresource) == "string" then sub, verbs = o.subresource, { "patch" }
      elseif v == "patch" and o.type == "apply" then verbs = { "patch", "create" } end
      if res then
        plan.calls[#plan.calls + 1] = { verb = v, verbs = verbs, resource = sub and (res .. "/" .. sub) or res,
                                        why = why, guessed = guessed }
      else
        plan.undetermined[#plan.undetermined + 1] = {
          where = at and (at.path .. ":" .. at.line), text = "client:" .. v .. " at script load",
          verbs = verbs, reason = "resource not determined (an object without apiVersion and kind)" }
      end
      return nil, "planning: no server", "EPLAN"
    end
  end
  client = permissive(client)
  local env = permissive({
    resource = function(_, res)
      local g, r = M.split_resource(res)
      if not g then return nil end
      return { group = g, resource = r, name = res }
    end,
    namespace = function() return opts.namespace or "default" end,
    client = function() return client end,
    sync_progress = function() return {} end,
  })
  local function fake_informer(res)
    return permissive({
      add_handler = function(_, h)
        if type(h) == "string" then module(h, "handler of informer " .. res) end
        return true
      end,
      list = function() return {} end,
      name = function() return res end,
      has_synced = function() return true end,
    })
  end
  local function declare(rules, why)
    plan.rbac[#plan.rbac + 1] = { rules = rules, why = why }
  end
  local mgr = permissive({
    env = env, client = client, namespace = opts.namespace or "default", planning = true,
    informer = function(_, res, o)
      informer(res, o, "mgr:informer")
      return fake_informer(res)
    end,
    rbac = function(_, rules)
      check_rbac(rules, "mgr:rbac")
      if rules == nil then require("kinformer.util.options").raise("mgr:rbac: a list of rules expected") end
      local at = caller()
      declare(rules, "mgr:rbac" .. (at and (" at " .. at.path:match("([^/]*)$") .. ":" .. at.line) or ""))
      local all = {}
      for _, d in ipairs(plan.rbac) do for _, r in ipairs(d.rules) do all[#all + 1] = r end end
      return all
    end,
    controller = function(_, cfg)
      if type(cfg) ~= "table" then require("kinformer.util.options").raise("controller: config table expected") end
      check_rbac(cfg.rbac, "controller")
      local c = { name = cfg.name or (cfg["for"] and cfg["for"]:match("([^/]+)$")) or "controller",
                  ["for"] = cfg["for"], owns = {}, watches = {}, code = {}, children = {},
                  finalizer = cfg.finalizer, rbac = cfg.rbac }
      if type(c.name) ~= "string" then c.name = "controller" end
      local iopts = cfg.informer_opts
      if cfg["for"] then informer(cfg["for"], iopts, "controller " .. c.name .. " (for)") end
      local function res_of(e) if type(e) == "table" then return e[1] or e.resource, e end return e, {} end
      for _, e in ipairs(cfg.owns or {}) do
        local r, o = res_of(e)
        c.owns[#c.owns + 1] = r
        informer(r, o.informer_opts or iopts, "controller " .. c.name .. " (owns)")
      end
      for _, r in ipairs(type(cfg.children) == "table" and cfg.children or {}) do
        if type(r) == "string" then
          c.children[#c.children + 1] = r
          informer(r, iopts, "controller " .. c.name .. " (children)")
        end
      end
      for _, e in ipairs(cfg.watches or {}) do
        local r, o = res_of(e)
        c.watches[#c.watches + 1] = r
        informer(r, o.informer_opts or iopts, "controller " .. c.name .. " (watches)")
        if type(o.map) == "string" then module(o.map, "map of controller " .. c.name, c)
        else c.code[#c.code + 1] = where_fn(o.map) end
      end
      for _, k in ipairs { "reconciler", "finalize" } do
        if type(cfg[k]) == "string" then
          if k == "reconciler" then c.reconciler = cfg[k] end
          module(cfg[k], k .. " of controller " .. c.name, c)
        else
          c.code[#c.code + 1] = where_fn(cfg[k])
        end
      end
      if cfg.rbac then
        local at = caller()
        declare(cfg.rbac, "rbac of controller " .. c.name
          .. (at and (" (" .. at.path:match("([^/]*)$") .. ":" .. at.line .. ")") or ""))
      end
      plan.controllers[#plan.controllers + 1] = c
      return permissive({ name = function() return c.name end })
    end,
    webhook = function(_, spec)
      -- checked as mgr:webhook checks it (raises at the script's line)
      local hook = require("kinformer.webhook_config").normalize(spec)
      for _, h in ipairs(plan.webhooks) do
        if h.name == hook.name then
          require("kinformer.util.options").raise(('mgr:webhook: a webhook named "%s" exists'):format(hook.name))
        end
      end
      plan.webhooks[#plan.webhooks + 1] = hook
      local code = where_fn(hook.handler)
      return permissive({ name = function() return hook.name end, path = function() return hook.path end,
                          type = function() return hook.type end, code = code })
    end,
    start = function() return true end,
    run = function() return true end,
    step = function() return 0 end,
    wait_for = function() return true end,
    lister = function(_, name) return fake_informer(name) end,
  })
  -- the manager of the script: the bootstrap's (by = "bootstrap"), and
  -- the one a script makes itself, whose options are honoured
  local function own_manager(o, by)
    if by ~= "bootstrap" then
      o = type(o) == "table" and o or {}
      plan.manager_opts = o
      if o.namespace and not opts.namespace then rawset(mgr, "namespace", o.namespace) end
      if o.rbac ~= nil then
        check_rbac(o.rbac, "kinformer.manager")
        declare(o.rbac, "rbac of kinformer.manager{...}")
      end
    end
    return mgr
  end
  local s, err = require("kinformer.bootstrap").load{
    script = path, namespace = opts.namespace, args = opts.args, fresh = true,
    flags = { planning = true }, make_manager = own_manager,
  }
  if not s then
    if err:match("^script ") then return nil, err:gsub("^(script %S+) failed:", "%1 failed while planning:") end
    return nil, err
  end
  for _, name in ipairs(s.loaded) do module(name, "required by the script") end
  plan.path = package.path
  return plan
end

M.norm_path = norm_path

return M
