-- Pod label auditor: informer handlers only, no controller.
--   kinformer run examples/pod-label-auditor/operator.lua --sim --seed examples/pod-label-auditor/seed.json
-- Prints a line when a pod lacks required labels (KINFORMER_AUDIT_LABELS,
-- default "app,team") or gets them, a count after every change, and a full
-- report from the cache once synced and again at shutdown.
---@type kinformer.Manager
local mgr = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path

local auditor = require "auditor"
local pods = mgr:informer("v1/pods")
assert(pods:add_handler("auditor_handlers"))

local function report()
  local _, text = auditor.report(pods:list())
  io.stdout:write(text, "\n")
  io.stdout:flush()
end

-- kinformer run calls on_start once the caches synced, on_stop after shutdown
return { on_start = report, on_stop = report }
