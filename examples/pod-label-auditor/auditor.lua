--- Pod label auditor (examples/pod-label-auditor): the rules and the report.
--
-- A pod must carry every required label (KINFORMER_AUDIT_LABELS, comma
-- separated; default "app,team"). This module is required both by the
-- handler set (auditor_handlers.lua, in the informer's listener state) and
-- by the script in the main state (the report from the cache).
local M = {}

--- The required label keys, in order.
function M.required()
  local spec = os.getenv("KINFORMER_AUDIT_LABELS")
  if not spec or spec == "" then spec = "app,team" end
  local out = {}
  for k in spec:gmatch("[^,%s]+") do out[#out + 1] = k end
  return out
end

--- The required labels pod lacks (an array, empty when it complies).
function M.missing(pod, required)
  local labels = pod.metadata and pod.metadata.labels
  if type(labels) ~= "table" then labels = {} end
  local out = {}
  for _, k in ipairs(required or M.required()) do
    local v = labels[k]
    if type(v) ~= "string" or v == "" then out[#out + 1] = k end
  end
  return out
end

local function key(pod)
  local m = pod.metadata or {}
  return (m.namespace and m.namespace ~= "" and (m.namespace .. "/") or "") .. tostring(m.name)
end
M.key = key

--- The report over a list of pods: a table {pods=, compliant=, missing=,
-- by_label = {label = count}, offenders = {"ns/name: app, team", ...}} and
-- its text (several lines, the first "pod label audit: N pods, C
-- compliant, M missing required labels (app, team)").
function M.report(pods, required)
  required = required or M.required()
  local r = { pods = #pods, compliant = 0, missing = 0, by_label = {}, offenders = {} }
  for _, k in ipairs(required) do r.by_label[k] = 0 end
  for _, pod in ipairs(pods) do
    local miss = M.missing(pod, required)
    if #miss == 0 then
      r.compliant = r.compliant + 1
    else
      r.missing = r.missing + 1
      for _, k in ipairs(miss) do r.by_label[k] = r.by_label[k] + 1 end
      r.offenders[#r.offenders + 1] = key(pod) .. ": " .. table.concat(miss, ", ")
    end
  end
  table.sort(r.offenders)
  local lines = { string.format("pod label audit: %d pods, %d compliant, %d missing required labels (%s)",
    r.pods, r.compliant, r.missing, table.concat(required, ", ")) }
  for _, k in ipairs(required) do
    lines[#lines + 1] = string.format("  without %s: %d", k, r.by_label[k])
  end
  for _, o in ipairs(r.offenders) do lines[#lines + 1] = "  " .. o end
  return r, table.concat(lines, "\n")
end

return M
