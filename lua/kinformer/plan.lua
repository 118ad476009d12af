--- kinformer.plan: what a controller would change, without changing it.
--
--   local report = ctl:plan("default/shop")    -- or a list of keys, or nil: all
--   print(report)                              -- unified diffs, per key
--   if report.changed then ... end
--
-- and `kinformer plan script.lua [--key ns/name]...` (kinformer.cmd.cli).
--
-- A plan syncs the manager's caches (when the manager has not been
-- started: its informers only, the controllers stay stopped), then runs the
-- controller's reconciler once per key in the calling Lua state (as
-- ctl:reconcile_once does) with a ctx whose client sends every write as a
-- server-side dry run (?dryRun=All, honoured by kube-apiserver and
-- kinformer.sim: the server validates, defaults and answers with the object
-- it would store, and stores nothing) and records it, and whose
-- ctx:event records the Event instead of sending it. Reads (ctx.listers,
-- ctx.client:get / list) see the cache and the server as they are. The
-- background workers (when running) are not involved and keep their own
-- clients. Writes made around the ctx (ctx.env, another client) are NOT
-- intercepted.
--
-- Per key, the report shows each object the reconcile would write as a
-- unified diff (kinformer.diff) of its YAML-like rendering
-- (kinformer.yamlish): the object on the server before the first write vs
-- the dry-run result of the last one (a create diffs from /dev/null, a
-- delete to /dev/null). Several writes to one object in one reconcile are
-- folded: a write to the status subresource changes only .status of what
-- the earlier writes made; a main-resource write that leaves .status as the
-- server had it keeps the status an earlier status write planned.
-- metadata.resourceVersion, managedFields, uid, creationTimestamp,
-- generation and selfLink are left out of both sides (they always differ
-- between a dry run and what is stored). An object whose rendering does
-- not change (a no-op write) is not a change. Failed writes (the server's
-- answer to the dry run: Conflict, Invalid...) and the reconcile's result
-- (done, requeue, requeue after, error, terminal error) are shown per key;
-- only the first pass is planned (a requeue would run again).
--
-- Admission webhooks (kinformer.plan_admission): a write an admission
-- webhook denied shows as "denied by admission webhook "X"" with its
-- message (the write's .denied = {webhook =, message =}; a webhook that
-- could not be called, .denied.failed = true); a write whose dry-run
-- answer holds changes a mutating webhook made (fields the write set that
-- the answer changes, fields it adds to labels, annotations or a custom
-- resource) shows them under the object's diff as a second diff, the
-- object as sent vs "changed by admission" (the change's .admission: a
-- list of such diffs, one per write).
--
-- A report: {changed = bool (some object would change), failed = bool
-- (some reconcile failed or a key could not be planned), text = the
-- rendering, keys = { {key =, controller =, result = "done"|"requeue"|
-- "requeue_after"|"error"|"terminal", detail =, changes = { {action =
-- "create"|"update"|"delete", kind =, namespace =, name =, before =,
-- after =, diff =, admission =} }, writes = { {verb =, resource =, namespace =,
-- name =, subresource =, ok =, error =, code =, denied =} }, events = { {type =, reason =,
-- message =, regarding =} } } }}, tostring(report) = report.text.
local core = require "kinformer.core"
local yamlish = require "kinformer.yamlish"
local diff = require "kinformer.diff"
local admission = require "kinformer.plan_admission"

local M = {}

--- Exit statuses of `kinformer plan`.
M.EXIT_NO_CHANGES, M.EXIT_ERROR, M.EXIT_CHANGES = 0, 1, 2

-- ---- the dry-run client ------------------------------------------------------

local NOISE = { "resourceVersion", "managedFields", "uid", "creationTimestamp", "generation", "selfLink" }

local values = require "kinformer.util.value"
local deep_copy, deep_equal = values.copy, values.equal

local function decoded(obj)
  if type(obj) == "string" then
    local ok, v = pcall(core.json_decode, obj)
    if ok and type(v) == "table" then return v end
    return nil
  end
  if type(obj) == "table" then return obj end
  return nil
end

local function is_json_text(s) return type(s) == "string" and s:match("^%s*{") ~= nil end

-- Shallow copy of an options table with dry_run = "All".
local function dry_opts(opts)
  local o = {}
  if type(opts) == "table" then
    for k, v in pairs(opts) do o[k] = v end
  end
  o.dry_run = "All"
  return o
end

--- Returns a table that stands for client (a kinformer.client) in a ctx:
-- get, list, resource, namespace are passed through; create, update,
-- update_status, patch, apply and delete are sent with dry_run = "All"
-- and appended to rec.writes ({verb, resource (the resource table), label,
-- namespace, name, subresource, before, after, ok, error, code}); they
-- return what the server answered to the dry run, as the client would.
-- Misuse raises as the client does (the call is passed through as is).
function M.dry_client(client, rec)
  rec.writes = rec.writes or {}
  local d = {}
  for _, m in ipairs { "get", "list", "resource", "namespace" } do
    d[m] = function(_, ...) return client[m](client, ...) end
  end
  d.close = function() end

  -- resource table and namespace for a resource name (or apiVersion/kind)
  local function where(resname, ns)
    local r = client:resource(resname)
    if r and r.namespaced and (ns == nil or ns == "") then ns = client:namespace() end
    if r and not r.namespaced then ns = nil end
    return r, ns
  end

  local function before_of(resname, ns, name)
    if not name or name == "" then return nil end
    local cur = client:get(resname, ns, name)
    return cur
  end

  local function record(w, ...)
    local res, err, code = ...
    w.ok = res ~= nil and res ~= false
    if w.ok then
      if type(res) == "table" then w.after = res end
    else
      w.error, w.code = err, code
      w.denied = admission.denial(err)
    end
    rec.writes[#rec.writes + 1] = w
    return ...
  end

  -- verb([res,] obj [, opts]): create, update, update_status, apply
  local function obj_verb(verb, sub_default)
    return function(_, a, b, c)
      local resname, obj, opts
      if type(a) == "string" and not is_json_text(a) then
        resname, obj, opts = a, b, c
      else
        obj, opts = a, b
      end
      local o = decoded(obj)
      if o == nil then return client[verb](client, a, b, c) end -- the client says what is wrong
      local md = type(o.metadata) == "table" and o.metadata or {}
      local label = resname or (tostring(o.apiVersion) .. "/" .. tostring(o.kind))
      local r, ns = where(label, md.namespace)
      local w = { verb = verb, resource = r, label = label, namespace = ns, name = md.name,
                  subresource = (type(opts) == "table" and opts.subresource) or sub_default,
                  sent = deep_copy(o) } -- as sent: the reconciler may change its table afterwards
      if verb ~= "create" or w.subresource then w.before = before_of(label, ns, md.name) end
      if resname then
        return record(w, client[verb](client, resname, obj, dry_opts(opts)))
      end
      return record(w, client[verb](client, obj, dry_opts(opts)))
    end
  end
  d.create = obj_verb("create")
  d.update = obj_verb("update")
  d.update_status = obj_verb("update_status", "status")
  d.apply = obj_verb("apply")

  -- patch(res, ns, name, patch [, opts])
  function d.patch(_, resname, ns, name, p, opts)
    if type(resname) ~= "string" or type(name) ~= "string" then
      return client:patch(resname, ns, name, p, opts)
    end
    local r, rns = where(resname, ns)
    local w = { verb = "patch", resource = r, label = resname, namespace = rns, name = name,
                subresource = type(opts) == "table" and opts.subresource or nil, sent = deep_copy(decoded(p)),
                patch_type = type(opts) == "table" and opts.type or "merge" }
    w.before = before_of(resname, rns, name)
    return record(w, client:patch(resname, ns, name, p, dry_opts(opts)))
  end

  -- delete(res, ns, name [, opts]) or delete(obj [, opts])
  function d.delete(_, a, b, c, e)
    local resname, ns, name, opts
    if type(a) == "table" then
      local md = type(a.metadata) == "table" and a.metadata or {}
      resname, ns, name, opts = tostring(a.apiVersion) .. "/" .. tostring(a.kind), md.namespace, md.name, b
    else
      resname, ns, name, opts = a, b, c, e
    end
    if type(resname) ~= "string" or type(name) ~= "string" then return client:delete(a, b, c, e) end
    local r, rns = where(resname, ns)
    local w = { verb = "delete", resource = r, label = resname, namespace = rns, name = name }
    w.before = before_of(resname, rns, name)
    if type(a) == "table" then return record(w, client:delete(a, dry_opts(opts))) end
    return record(w, client:delete(a, b, c, dry_opts(opts)))
  end

  -- a method this wrapper does not know could write for real: refuse it
  return setmetatable(d, {
    __name = "kinformer.plan.client",
    __tostring = function() return "kinformer.client (dry run: " .. tostring(client) .. ")" end,
    __index = function(_, k)
      error(string.format("ctx.client.%s is not available in a plan (dry run): use get, list, resource, "
        .. "namespace, create, update, update_status, patch, apply, delete", tostring(k)), 2)
    end,
  })
end

-- ---- folding writes into per-object changes ------------------------------------

local function strip(obj)
  if type(obj) ~= "table" then return obj end
  local c = deep_copy(obj)
  if type(c.metadata) == "table" then
    for _, k in ipairs(NOISE) do c.metadata[k] = nil end
  end
  return c
end

local function kind_of(w)
  local after, before = w.after, w.before
  return (after and after.kind) or (before and before.kind) or (w.resource and w.resource.kind) or w.label
end

local function object_name(ns, name)
  if ns and ns ~= "" then return ns .. "/" .. tostring(name) end
  return tostring(name)
end

--- Folds rec.writes into changes (see the module comment): an array of
-- {action, kind, namespace, name, before, after, diff} in the order of
-- each object's first write, objects that would not change left out.
function M.changes(writes)
  local order, by = {}, {}
  for _, w in ipairs(writes) do
    if w.ok and w.name ~= nil and w.name ~= "" or (w.ok and w.after and w.after.metadata) then
      local name = w.name
      if (name == nil or name == "") and w.after then name = w.after.metadata.name end
      local r = w.resource or {}
      local id = string.format("%s/%s %s", r.group or "", r.resource or w.label, object_name(w.namespace, name))
      local st = by[id]
      if not st then
        st = { kind = kind_of(w), namespace = w.namespace, name = name, before = w.before }
        if w.verb == "create" and not w.subresource then st.before = nil end
        by[id] = st
        order[#order + 1] = st
      end
      local adm = admission.changes(w)
      if adm ~= "" then
        st.admission = st.admission or {}
        st.admission[#st.admission + 1] = adm
      end
      local prev -- the object as the earlier writes left it (nil once deleted)
      if not st.deleted then prev = st.after or st.before end
      if w.verb == "delete" then
        st.after, st.deleted = nil, true
      elseif w.subresource == "status" and w.after then
        local base = deep_copy(prev or w.after)
        base.status = deep_copy(w.after.status)
        st.after, st.deleted = base, false
      elseif w.subresource then
        -- another subresource (scale...): the object's own rendering does not show it
        st.after = st.after or deep_copy(prev)
        st.notes = st.notes or {}
        st.notes[#st.notes + 1] = string.format("%s of subresource %s", w.verb, w.subresource)
      elseif w.after then
        local new = deep_copy(w.after)
        if st.after and st.before and not deep_equal(st.after.status, st.before.status)
            and deep_equal(new.status, st.before.status) then
          new.status = deep_copy(st.after.status)
        end
        st.after, st.deleted = new, false
      end
    end
  end
  local out = {}
  for _, st in ipairs(order) do
    local label = string.format("%s %s", st.kind, object_name(st.namespace, st.name))
    local a = st.before and yamlish.lines(strip(st.before)) or {}
    local b = (not st.deleted and st.after) and yamlish.lines(strip(st.after)) or {}
    local action = st.deleted and "delete" or (st.before == nil and "create" or "update")
    local text = diff.unified(a, b, {
      from = st.before and label or "/dev/null",
      to = (not st.deleted and st.after) and (label .. " (planned)") or "/dev/null",
    })
    if st.deleted and st.before == nil then text = "" end
    if text ~= "" or (st.notes and #st.notes > 0) or st.admission then
      out[#out + 1] = { action = action, kind = st.kind, namespace = st.namespace, name = st.name,
                        before = st.before, after = not st.deleted and st.after or nil, diff = text,
                        notes = st.notes, admission = st.admission }
    end
  end
  return out
end

-- ---- running the reconciler -------------------------------------------------------

-- the controller's own rules for finding and running a reconcile function
local resolve, handler
do
  local controller = require "kinformer.controller"
  resolve, handler = controller.resolve, controller.handler
end

local function request_of(key)
  if type(key) == "table" then
    local ns = key.namespace or ""
    return { namespace = ns, name = key.name, key = ns ~= "" and (ns .. "/" .. key.name) or key.name }
  end
  local ns, name = key:match("^([^/]*)/(.+)$")
  if not ns then ns, name = "", key end
  return { namespace = ns, name = name, key = key }
end

local function err_text(e)
  if type(e) == "table" and e.message ~= nil then return tostring(e.message) end
  return tostring(e)
end

-- What the plan needs of ctl (kinformer.controller.parts: no private field
-- read here).
local function P(ctl) return require("kinformer.controller").parts(ctl) end

--- Plans one key of ctl (a kinformer.controller object). Returns the key's
-- entry of the report (see the module comment).
function M.plan_key(ctl, key)
  local req = request_of(key)
  local rec = { writes = {}, events = {} }
  local entry = { key = req.key, controller = P(ctl).name, writes = rec.writes, events = rec.events }
  local fn, msg = resolve(P(ctl).reconciler)
  if not fn then
    entry.result, entry.detail, entry.changes = "error", msg, {}
    return entry
  end
  local env = P(ctl).env
  local ctx = require("kinformer.ctx").new(env, { controller = P(ctl).name, worker = 0, request = req,
                                                  for_resource = P(ctl).for_resource })
  rawset(ctx, "client", M.dry_client(env:client(), rec))
  -- its lines say what it did, which it did not: they are tagged as a plan's
  rawset(ctx, "log", require("kinformer.log").logger(tostring(P(ctl).name) .. " (plan, dry run)", req.key))
  rawset(ctx, "event", function(_, obj, etype, reason, message)
    local md = type(obj) == "table" and type(obj.metadata) == "table" and obj.metadata or {}
    rec.events[#rec.events + 1] = {
      type = etype, reason = reason, message = message,
      regarding = string.format("%s %s", tostring(type(obj) == "table" and obj.kind or "?"),
        object_name(md.namespace, md.name)),
    }
    return true
  end)
  -- the operator's own metrics do not count what a plan runs
  local ok, res, err = require("kinformer.metrics").dropped(xpcall, fn, handler, req, ctx)
  if not ok then
    entry.result = core.is_terminal(res) and "terminal" or "error"
    entry.detail = err_text(res)
  else
    local kind, detail = core.reconcile_result(true, res, err)
    entry.result = kind
    if kind == "terminal" then
      entry.detail = err_text(core.is_terminal(res) and res or err)
    elseif kind == "error" then
      entry.detail = (res == nil or res == false) and err_text(err) or tostring(detail)
    else
      entry.detail = detail
    end
  end
  entry.changes = M.changes(rec.writes)
  return entry
end

-- ---- the report ------------------------------------------------------------------

local function result_text(e)
  if e.result == "done" then return "done" end
  if e.result == "requeue" then return "requeue" end
  if e.result == "requeue_after" then return string.format("requeue after %gs", tonumber(e.detail) or 0) end
  if e.result == "terminal" then return "terminal error: " .. tostring(e.detail) end
  return "error: " .. tostring(e.detail)
end

local function verb_text(w)
  return w.verb .. (w.subresource and w.verb ~= "update_status" and ("/" .. w.subresource) or "")
end

--- The text of a report's keys (what tostring(report) gives).
function M.render(keys)
  local out = {}
  local n_changes, n_failed = 0, 0
  for _, e in ipairs(keys) do
    local first = (e.result == "done" or e.result == "requeue" or e.result == "requeue_after")
    if not first then n_failed = n_failed + 1 end
    local head = string.format("== %s %s: %s", e.controller or "?", e.key, result_text(e):match("^[^\n]*"))
    if #e.changes == 0 then head = head .. ", no changes"
    else head = head .. string.format(", %d object%s would change", #e.changes, #e.changes == 1 and "" or "s") end
    out[#out + 1] = head
    if not first and e.detail and tostring(e.detail):find("\n") then
      for line in tostring(e.detail):gmatch("[^\n]+") do out[#out + 1] = "   " .. line end
    end
    for _, w in ipairs(e.writes or {}) do
      if not w.ok and w.denied and not w.denied.failed then
        out[#out + 1] = string.format('!  %s %s %s denied by admission webhook "%s" (dry run): %s', verb_text(w),
          w.label, object_name(w.namespace, w.name), w.denied.webhook, tostring(w.denied.message))
      elseif not w.ok and w.denied then
        out[#out + 1] = string.format('!  %s %s %s failed (dry run): admission webhook "%s" could not be called: %s',
          verb_text(w), w.label, object_name(w.namespace, w.name), w.denied.webhook, tostring(w.denied.message))
      elseif not w.ok then
        out[#out + 1] = string.format("!  %s %s %s failed (dry run): %s (%s)", verb_text(w), w.label,
          object_name(w.namespace, w.name), tostring(w.error), tostring(w.code))
      end
    end
    for _, c in ipairs(e.changes) do
      n_changes = n_changes + 1
      out[#out + 1] = string.format("%s %s %s", c.action, c.kind, object_name(c.namespace, c.name))
      for _, note in ipairs(c.notes or {}) do out[#out + 1] = "  (" .. note .. ")" end
      if c.diff ~= "" then out[#out + 1] = (c.diff:gsub("\n$", "")) end
      for _, a in ipairs(c.admission or {}) do
        out[#out + 1] = "  changed by admission (mutating webhooks: the server's answer differs from what was sent):"
        out[#out + 1] = (a:gsub("\n$", ""))
      end
    end
    for _, ev in ipairs(e.events or {}) do
      out[#out + 1] = string.format("event %s %s on %s: %s", tostring(ev.type), tostring(ev.reason),
        ev.regarding, tostring(ev.message))
    end
  end
  out[#out + 1] = string.format("plan: %d key%s, %d change%s, %d failed", #keys, #keys == 1 and "" or "s",
    n_changes, n_changes == 1 and "" or "s", n_failed)
  return table.concat(out, "\n") .. "\n", n_changes, n_failed
end

local Report = {}
Report.__index = Report
Report.__name = "kinformer.plan.report"
Report.__tostring = function(r) return r.text end

-- ---- syncing and keys --------------------------------------------------------------

--- Syncs the caches of ctl's manager: when the manager is not started,
-- starts its informers (not its controllers) and waits up to timeout
-- seconds (default the manager's sync_timeout). Returns true or nil, msg,
-- code.
function M.sync(ctl, timeout)
  local parts = P(ctl)
  local mgr, env = parts.mgr, parts.env
  local state = type(mgr) == "table" and mgr:state()
  if state == "stopped" then return nil, "manager is stopped", "ECLOSED" end
  local started = state == "started"
  if not started then
    local ok, msg, code = env:start()
    if not ok then return nil, msg, code end
  end
  timeout = timeout or (type(mgr) == "table" and mgr.sync_timeout) or 120
  local deadline = core.monotime() + timeout
  while true do
    local left = deadline - core.monotime()
    local ok, msg, code = env:wait_for_cache_sync(math.max(0, math.min(0.1, left)))
    env:step(0)
    if ok then return true end
    if code ~= "ETIMEDOUT" or core.monotime() >= deadline then return nil, msg, code end
  end
end

--- The keys to plan: keys (a key "ns/name", a {namespace=, name=}, or a
-- list of those) or, when nil, every key of ctl's For informer (sorted).
-- Returns the list or nil, msg.
function M.keys_of(ctl, keys)
  if keys == nil then
    local inf = P(ctl).for_informer
    if not inf then return nil, "controller " .. tostring(P(ctl).name) .. " has no 'for' informer: name the keys" end
    return inf:keys()
  end
  if type(keys) == "string" or (type(keys) == "table" and keys.name ~= nil) then return { keys } end
  if type(keys) ~= "table" then return nil, "keys: want \"ns/name\", {namespace=, name=} or a list of them" end
  return keys
end

--- ctl:plan([keys] [, opts]) (see the module comment). opts: timeout (sync,
-- seconds), out (a file to write the text to, e.g. io.stdout). Raises on
-- misuse; returns the report, or nil, msg, code when the caches cannot
-- sync.
function M.plan(ctl, keys, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("plan: opts must be a table", 3) end
  if keys ~= nil then -- misuse raises before anything starts
    local list, kmsg = M.keys_of(ctl, keys)
    if not list then error("plan: " .. kmsg, 3) end
    for _, k in ipairs(list) do
      if not (type(k) == "string" and k ~= "") and not (type(k) == "table" and type(k.name) == "string") then
        error("plan: a key is \"ns/name\", \"name\" or {namespace=, name=}, not " .. tostring(k), 3)
      end
    end
  elseif not P(ctl).for_informer then
    error("plan: controller " .. tostring(P(ctl).name) .. " has no 'for' informer: name the keys", 3)
  end
  local ok, msg, code = M.sync(ctl, opts.timeout)
  if not ok then return nil, msg, code end
  local list = M.keys_of(ctl, keys) -- the For informer's keys once synced
  local entries = {}
  for _, k in ipairs(list) do entries[#entries + 1] = M.plan_key(ctl, k) end
  local text, n_changes, n_failed = M.render(entries)
  local report = setmetatable({ keys = entries, text = text, changed = n_changes > 0, failed = n_failed > 0 },
    Report)
  if opts.out then
    opts.out:write(text)
    opts.out:flush()
  end
  return report
end

return M
