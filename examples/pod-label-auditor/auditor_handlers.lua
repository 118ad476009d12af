--- The auditor's informer handlers (a module: each handler set runs in its
-- own listener thread and Lua state, which requires this module there).
-- It keeps, per pod, the required labels it lacks, prints a line when a pod
-- starts or stops breaking the rule, and after every change (and every
-- 1000 pods of the initial list) a count line:
--   audit: 12 pods, 3 missing required labels
local auditor = require "auditor"

local required = auditor.required()
local missing = {} -- key -> "app, team" for pods that lack labels
local pods, bad = 0, 0

local function out(fmt, ...)
  io.stdout:write(string.format(fmt, ...), "\n")
  io.stdout:flush()
end

local function counts(force)
  if force or pods % 1000 == 0 then out("audit: %d pods, %d missing required labels", pods, bad) end
end

local function observe(pod, initial)
  local k = auditor.key(pod)
  local miss = table.concat(auditor.missing(pod, required), ", ")
  local before = missing[k]
  if miss == "" then
    if before then
      missing[k], bad = nil, bad - 1
      out("fixed: %s has every required label", k)
    end
  elseif before ~= miss then
    if not before then bad = bad + 1 end
    missing[k] = miss
    out("missing: %s has no %s", k, miss)
  end
  counts(not initial)
end

return {
  on_add = function(pod, is_in_initial_list)
    pods = pods + 1
    observe(pod, is_in_initial_list)
  end,
  on_update = function(_, pod)
    observe(pod, false)
  end,
  on_delete = function(obj)
    local pod = obj.object or obj -- a tombstone carries the last known state
    local k = obj.key or auditor.key(pod)
    pods = pods - 1
    if missing[k] then
      missing[k], bad = nil, bad - 1
      out("gone: %s", k)
    end
    counts(true)
  end,
}
