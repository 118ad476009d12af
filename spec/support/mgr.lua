-- Waiting on a manager in the specs that run one in process: polling a
-- condition while the manager's main state is pumped, and a fresh
-- namespace per test.
local core = require "kinformer.core"

local M = {}

-- Calls fn() until it returns a true value (returned), pumping mgr every
-- 20 ms; fails the spec at the caller's line after timeout s (default 10).
function M.eventually(mgr, fn, timeout, what)
  local deadline = core.monotime() + (timeout or 10)
  while true do
    local v = fn()
    if v then return v end
    if core.monotime() > deadline then error("timed out waiting for " .. (what or "condition"), 2) end
    mgr:step(0.02)
  end
end

-- Creates the namespace "<prefix>-<n>" (n counts up in this process) and
-- returns its name.
local n = 0
function M.new_namespace(mgr, prefix)
  n = n + 1
  local ns = ("%s-%d"):format(prefix, n)
  assert(mgr.client:create("v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = ns } }))
  return ns
end

return M
