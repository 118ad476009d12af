--- kinformer.lifecycle: a controller's finalizer and children, run around
-- its reconciler (kopf's finalizer handling and Metacontroller's pruning,
-- in controller-runtime's terms). kinformer.controller installs it when a
-- controller has `finalizer` or `children`:
--
--   mgr:controller{ ["for"] = "v1/namespaces",
--     children = { "v1/configmaps", "v1/resourcequotas" },   -- owned, pruned
--     finalizer = "example.com/cleanup",                    -- added, removed
--     finalize = function(req, ctx, obj) ... end,           -- runs on delete
--     reconciler = function(req, ctx) ... ctx:ensure(child) ... end }
--
-- For each request (run below), with obj the For informer's cached object:
--   * obj gone: the reconciler runs as usual (it sees nil in its lister);
--   * obj live but not matching the controller's `selector` (a label
--     selector: the objects the controller is for): its children are
--     pruned, its finalizer removed, and the reconciler does not run (an
--     object that stops matching is let go, as kopf does);
--   * obj being deleted and holding the finalizer (in the cache, and then
--     in a GET: the cache may lag behind the reconcile that finalized it):
--     instead of the reconciler, every child obj controls is deleted (with children: a
--     cluster without a garbage collector would keep them), then
--     finalize(req, ctx, obj) runs; once it returns done, the finalizer is
--     removed (a merge patch with the resourceVersion it saw as a
--     precondition); an error, a
--     requeue or a requeue_after keeps it, retried as the reconciler's;
--   * obj being deleted without the finalizer: nothing runs (it is going);
--   * obj live without the finalizer: the finalizer is added first (the
--     same kind of patch), then the reconciler runs, ctx:object() being the
--     patched object: no object is ever reconciled without the finalizer
--     that guarantees finalize;
--   * after a reconcile that succeeded (done, requeue, requeue_after), each
--     child obj controls (index M.INDEX of the children's informers) that
--     the reconcile did not ctx:ensure is deleted, with its uid as a
--     precondition (prune = false: never).
-- Every write goes through ctx.client, so a plan (kinformer.plan: a dry-run
-- client) shows the finalizer patches and the prunes, and `ctl:why` lists
-- them among the reconcile's writes.
local core = require "kinformer.core"
local fin = require "kinformer.util.finalizer"
local ctxmod = require "kinformer.ctx"

local M = {}

--- The name of the children informers' index by controller owner uid
-- (added by kinformer.controller: inf:add_index(M.INDEX, "controller")).
M.INDEX = "kinformer.io/controller-uid"

-- The function code names: a function, or a module whose value is a
-- function or has field (reconcile, finalize); raises naming what is wrong.
local function resolve(code, field)
  if type(code) == "function" then return code end
  local m = require(code)
  if type(m) == "function" then return m end
  if type(m) == "table" and type(m[field]) == "function" then return m[field] end
  error(string.format("module '%s' has no function '%s' (return a function, or a table with .%s)",
    code, field, field), 0)
end
M.resolve = resolve

local function array(t) return setmetatable(t, core.array_mt) end

-- A copy of obj's finalizers as a plain array (nil when it has none).
local function finalizers_of(obj)
  local f = type(obj.metadata) == "table" and obj.metadata.finalizers
  if type(f) ~= "table" then return nil end
  local out = {}
  for i, v in ipairs(f) do out[i] = v end
  return array(out)
end

-- Patches obj's finalizers to want (a list), with obj's resourceVersion
-- as a precondition (a merge patch: kubectl's optimistic concurrency), so a
-- stale copy never drops a finalizer someone else added meanwhile: it gets
-- a Conflict. Returns the patched object, or nil, msg, code.
local function patch_once(ctx, res, obj, want)
  local m = obj.metadata
  local patch = { metadata = { resourceVersion = m.resourceVersion,
                               finalizers = #want > 0 and array(want) or core.null } }
  return ctx.client:patch(res, m.namespace, m.name, patch, { type = "merge" })
end

-- patch_once, and on a Conflict (someone wrote the object since obj was
-- read: a writer racing the reconcile, or a lagging cache) again on a
-- fresh GET, as client-go's RetryOnConflict, at most three times in all:
-- change(finalizers) gives the list to write from a copy's list, or nil
-- when the fresh copy needs no change (then the fresh copy is returned).
local function patch_finalizers(ctx, res, obj, change)
  local want = change(finalizers_of(obj) or {})
  for attempt = 1, 3 do
    if want == nil then return obj end
    local patched, err, code, http = patch_once(ctx, res, obj, want)
    if patched or code ~= "Conflict" or attempt == 3 then return patched, err, code, http end
    local m = obj.metadata
    local fresh, gerr, gcode, ghttp = ctx.client:get(res, m.namespace, m.name)
    if not fresh then return nil, gerr, gcode, ghttp end
    obj, want = fresh, change(finalizers_of(fresh) or {})
  end
end

-- The change functions of patch_finalizers: name added, name removed.
local function adding(name)
  return function(list)
    for _, f in ipairs(list) do if f == name then return nil end end
    list[#list + 1] = name
    return list
  end
end

local function removing(name)
  return function(list)
    local out, found = {}, false
    for _, f in ipairs(list) do
      if f == name then found = true else out[#out + 1] = f end
    end
    return found and out or nil
  end
end

-- "ns/name" or "name".
local function key_of(m)
  return (m.namespace and m.namespace ~= "" and (m.namespace .. "/") or "") .. m.name
end

-- Deletes the children of obj in cfg.children that keep() says no to,
-- logging each with why ("Website default/web no longer ensures it").
-- Returns true, or nil, msg, code for the first delete that failed (the
-- others are still tried).
local function delete_children(cfg, ctx, obj, keep, why)
  local uid = obj.metadata.uid
  local ok, first_err, first_code = true, nil, nil
  for _, ch in ipairs(cfg.children or {}) do
    local l = ctx.lister(ch.informer)
    for _, c in ipairs(l and l:by_index(M.INDEX, uid) or {}) do
      local m = c.metadata
      local key = key_of(m)
      if not keep(ch.resource, key) then
        local done, err, code = ctx.client:delete(ch.resource, m.namespace, m.name, { uid = m.uid })
        if done or code == "NotFound" or code == "Conflict" then -- gone, or another object now
          if done then ctx.log:info("deleted %s %s: %s %s %s", tostring(c.kind), key, cfg.label, key_of(obj.metadata),
            why) end
        elseif ok then
          ok, first_err, first_code = nil, err, code
        end
      end
    end
  end
  if ok then return true end
  return nil, first_err, first_code
end

--- Deletes every child obj controls (what a deleted object's finalizer
-- does before finalize). Returns true, or nil, msg, code.
function M.delete_all_children(cfg, ctx, obj, why)
  return delete_children(cfg, ctx, obj, function() return false end, why or "is being deleted")
end

-- Whether a reconciler's values mean success (done, requeue, requeue_after).
local function succeeded(a, b)
  local kind = core.reconcile_result(true, a, b)
  return kind == "done" or kind == "requeue" or kind == "requeue_after"
end

-- Parsed selectors of this Lua state, by their text.
local selectors = {}

-- Whether obj matches cfg.selector (true without one).
local function selected(cfg, obj)
  local text = cfg.selector
  if not text then return true end
  local sel = selectors[text]
  if not sel then
    sel = assert(core.label_selector(text))
    selectors[text] = sel
  end
  return sel:matches(type(obj.metadata) == "table" and obj.metadata.labels or nil)
end

--- Runs one request through cfg = {reconcile = code, finalize = code or
-- nil, finalizer = name or nil, children = {{resource =, informer =}} or
-- nil, prune = boolean, selector = label selector or nil, for_resource =,
-- label = "Kind"} (kinformer.controller builds it); returns what the
-- reconciler (or finalize) returned.
function M.run(cfg, req, ctx)
  local obj = ctx:object()
  if obj ~= nil and not selected(cfg, obj) and not (cfg.finalizer and fin.is_being_deleted(obj)) then
    -- out of scope: let it go
    if cfg.children and cfg.prune ~= false then
      local ok, err, code = M.delete_all_children(cfg, ctx, obj, "no longer matches " .. cfg.selector)
      if not ok then return nil, err, code end
    end
    if cfg.finalizer and fin.has_finalizer(obj, cfg.finalizer) then
      local patched, err, code = patch_finalizers(ctx, cfg.for_resource, obj, removing(cfg.finalizer))
      if not patched and code ~= "NotFound" then return nil, err, code end
      ctx.log:info("removed finalizer %s of %s %s (no longer matches %s)", cfg.finalizer, cfg.label, req.key,
        cfg.selector)
    end
    return
  end
  if obj ~= nil and cfg.finalizer then
    local name = cfg.finalizer
    if fin.is_being_deleted(obj) then
      if not fin.has_finalizer(obj, name) then return end -- going; not ours to hold
      -- the cache may lag behind an earlier reconcile that already finalized
      -- it (a child's deletion enqueues it again): finalize on what the
      -- server holds now, once (a deletion is rare, one GET is cheap)
      local fresh, gerr, gcode = ctx.client:get(cfg.for_resource, obj.metadata.namespace, obj.metadata.name)
      if not fresh then
        if gcode == "NotFound" then return end
        return nil, gerr, gcode
      end
      if not fin.has_finalizer(fresh, name) then return end
      obj = fresh
      ctxmod.set_object(ctx, fresh)
      -- the children first (a cluster without a garbage collector keeps
      -- them otherwise), then finalize, told they are gone
      if cfg.children then
        local ok, err, code = M.delete_all_children(cfg, ctx, obj)
        if ok == nil and err ~= nil then return nil, err, code end
      end
      if cfg.finalize then
        local a, b, c = resolve(cfg.finalize, "finalize")(req, ctx, obj)
        if core.reconcile_result(true, a, b) ~= "done" then return a, b, c end
      end
      local patched, err, code = patch_finalizers(ctx, cfg.for_resource, obj, removing(name))
      if not patched and code ~= "NotFound" then return nil, err, code end
      ctx.log:info("removed finalizer %s of %s %s", name, cfg.label, req.key)
      return
    end
    if not fin.has_finalizer(obj, name) then
      local patched, err, code = patch_finalizers(ctx, cfg.for_resource, obj, adding(name))
      if not patched then return nil, err, code end
      ctx.log:info("added finalizer %s to %s %s", name, cfg.label, req.key)
      -- the reconciler sees the object as patched, not the cache's older copy
      obj = patched
      ctxmod.set_object(ctx, patched)
    end
  elseif obj ~= nil and fin.is_being_deleted(obj) and cfg.children then
    -- no finalizer: the garbage collector deletes the children; nothing to
    -- ensure for an object that is going
    return
  end
  local a, b, c = resolve(cfg.reconcile, "reconcile")(req, ctx)
  if obj ~= nil and cfg.children and cfg.prune ~= false and succeeded(a, b) then
    local ensured = ctxmod.ensured(ctx)
    local ok, err, code = delete_children(cfg, ctx, obj, function(res, key) return ensured[res .. "\0" .. key] end,
      "no longer ensures it")
    if not ok then return nil, err, code end
  end
  return a, b, c
end

return M
