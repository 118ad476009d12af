-- Pod label auditor: informer handlers only, no controller.
--   kinformer run examples/pod-label-auditor/operator.lua --sim --seed examples/pod-label-auditor/seed.json
-- Prints a line when a pod lacks required labels (KINFORMER_AUDIT_LABELS,
-- default "app,team") or gets them, a count after every change, and a full
-- report from the cache once synced and again at shutdown. The handlers run
-- on the informer's listener thread, in a Lua state of their own with their
-- own copy of `seen` (shared by the three of them) and of the helpers.
---@type kinformer.Manager
local mgr = ...

local required = {}
for k in (os.getenv("KINFORMER_AUDIT_LABELS") or "app,team"):gmatch("[^,%s]+") do required[#required + 1] = k end

local function key(pod) return (pod.metadata.namespace or "") .. "/" .. pod.metadata.name end

-- The required labels pod lacks, as "app, team" ("" when it complies).
local function missing(pod)
  local labels, out = pod.metadata.labels or {}, {}
  for _, k in ipairs(required) do
    if type(labels[k]) ~= "string" or labels[k] == "" then out[#out + 1] = k end
  end
  return table.concat(out, ", ")
end

local function out(fmt, ...)
  io.stdout:write(string.format(fmt, ...), "\n")
  io.stdout:flush()
end

local seen = { missing = {}, pods = 0, bad = 0 } -- key -> what it lacks; counts

local function counts(force)
  if force or seen.pods % 1000 == 0 then out("audit: %d pods, %d missing required labels", seen.pods, seen.bad) end
end

local function observe(pod, initial)
  local k, miss = key(pod), missing(pod)
  local before = seen.missing[k]
  if miss == "" then
    if before then
      seen.missing[k], seen.bad = nil, seen.bad - 1
      out("fixed: %s has every required label", k)
    end
  elseif before ~= miss then
    if not before then seen.bad = seen.bad + 1 end
    seen.missing[k] = miss
    out("missing: %s has no %s", k, miss)
  end
  counts(not initial)
end

local pods = mgr:informer("v1/pods")
assert(pods:add_handler{
  on_add = function(pod, is_in_initial_list)
    seen.pods = seen.pods + 1
    observe(pod, is_in_initial_list)
  end,
  on_update = function(_, pod) observe(pod, false) end,
  on_delete = function(obj)
    local k = obj.key or key(obj) -- a tombstone: {key =, object =}
    seen.pods = seen.pods - 1
    if seen.missing[k] then
      seen.missing[k], seen.bad = nil, seen.bad - 1
      out("gone: %s", k)
    end
    counts(true)
  end,
})

-- The report over the cache, in the main state.
local function report()
  local list, offenders, without = pods:list(), {}, {}
  for _, k in ipairs(required) do without[k] = 0 end
  for _, pod in ipairs(list) do
    local miss = missing(pod)
    if miss ~= "" then
      offenders[#offenders + 1] = "  " .. key(pod) .. ": " .. miss
      for k in miss:gmatch("[^, ]+") do without[k] = without[k] + 1 end
    end
  end
  table.sort(offenders)
  out("pod label audit: %d pods, %d compliant, %d missing required labels (%s)", #list, #list - #offenders,
    #offenders, table.concat(required, ", "))
  for _, k in ipairs(required) do out("  without %s: %d", k, without[k]) end
  if #offenders > 0 then out("%s", table.concat(offenders, "\n")) end
end

-- kinformer run calls on_start once the caches synced, on_stop after shutdown
return { on_start = report, on_stop = report }
