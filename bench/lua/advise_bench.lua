--- make bench-lua, the advised projection: RSS of an informer's cache of
-- Pods with and without the fields = {...} list mgr:advise() gives for a
-- handler that reads what a pod-status operator reads (spec.nodeName,
-- status.phase, status.conditions, a label).
--
--   lua5.4 bench/lua/advise_bench.lua --kubeconfig K --objects N [--fields a,b,...] [--timeout S]
--
-- Without --fields: the whole objects are cached; once the handler has
-- seen every Pod the run asks mgr:advise() and prints its fields. With
-- --fields: the informer keeps only those paths. Either way it prints
-- {rss_kib (after the handler saw every object, as the library leaves it:
-- no trim), base_rss_kib (before the manager), objects, fields}.
local common = require "bench.lua.common"
local kinformer = require "kinformer"

local a = common.args(arg, { timeout = "300" })
local want = assert(tonumber(a.objects), "--objects N required")
local fields
if a.fields and a.fields ~= "" then
  fields = {}
  for f in a.fields:gmatch("[^,]+") do fields[#fields + 1] = f end
end
collectgarbage("collect")
local base = common.rss_kib()
-- no response cap: the sim serves the list as one page (as the watch
-- cache does), over the default 256 MiB at 100k Pods; client-go has none
local mgr = assert(kinformer.manager { kubeconfig = a.kubeconfig, log_level = "warn",
                                       max_response_bytes = math.huge })
local inf = assert(mgr:informer("v1/pods", fields and { fields = fields } or nil))
local seen, running = 0, 0
inf:add_handler({ on_add = function(p)
  seen = seen + 1
  if p.spec.nodeName ~= nil and p.status.phase == "Running" and p.metadata.labels.app then
    local c = p.status.conditions
    if c and c[1] then running = running + 1 end
  end
end }, { main = true })
assert(mgr:start { timeout = tonumber(a.timeout) })
assert(mgr:wait_for(function() return seen >= want end, tonumber(a.timeout)), "handler saw " .. seen)
collectgarbage("collect")
local r = { client = "kinformer-lua", mode = fields and "advised" or "full", objects = inf:len(),
            rss_kib = common.rss_kib(), base_rss_kib = base, seen = seen }
if fields then
  r.fields = a.fields
else
  local adv = inf:advise()
  r.fields = adv and adv.fields and table.concat(adv.fields, ",") or ""
  r.bytes_per_object = adv and adv.bytes_per_object
  r.advised_bytes_per_object = adv and adv.advised_bytes_per_object
end
mgr:stop()
common.emit(r)
