--- kinformer.reconcile_log: one log line per reconcile, for `kinformer run
-- -v` (the manager's log_reconciles option): "reconcile <controller>
-- <ns/name>: done|requeue|requeue after Ns|error: msg|terminal: msg (1.2
-- ms)". kinformer.controller wraps a controller's reconciler with wrap()
-- when its manager has log_reconciles, at registration and at each reload.
local M = {}

-- "terminal: msg", or "error: " and the first line of msg, for a
-- reconcile's error.
local function errtext(e)
  if type(e) == "table" and rawget(e, "kinformer_terminal") then return "terminal: " .. tostring(e.message) end
  return "error: " .. (tostring(e):match("^[^\n]*"))
end

--- Returns a reconciler that runs r (a module name or a function) and logs
-- one line per reconcile. Results and errors pass through unchanged (an
-- error keeps its traceback in the message). It is a closure over r, so it
-- goes to the worker states as any closure does, each with its own copy (a
-- module r is required there on the first reconcile). Anything else is
-- returned unchanged, for the controller to report.
function M.wrap(controller, r)
  if type(r) ~= "string" and type(r) ~= "function" then return r end
  controller = tostring(controller)
  local modname = type(r) == "string" and r or nil
  local reconciler = type(r) == "function" and r or nil
  return function(req, ctx)
    local core = require "kinformer.core"
    if not reconciler then
      local m = require(modname)
      reconciler = type(m) == "table" and m.reconcile or m
    end
    local t0 = core.monotime()
    local key = req.key or ((req.namespace and req.namespace ~= "" and (req.namespace .. "/") or "") .. tostring(req.name))
    local function line(what)
      local ms = (core.monotime() - t0) * 1000
      core.log("info", "reconcile", string.format("%s %s: %s (%.1f ms)", controller, key, what, ms))
    end
    -- a raised error is logged while it unwinds (a to-be-closed guard), so
    -- the controller's own traceback still points at where it was raised
    local finished = false
    local guard <close> = setmetatable({}, { __close = function(_, e) -- luacheck: ignore 211
      if not finished then line(errtext(e)) end
    end })
    local a, b = reconciler(req, ctx)
    finished = true
    if a == nil and b ~= nil then
      line(errtext(b))
    elseif type(a) == "table" and a.requeue_after then
      line(string.format("requeue after %gs", a.requeue_after))
    elseif type(a) == "table" and a.requeue then
      line("requeue")
    else
      line("done")
    end
    return a, b
  end
end

return M
