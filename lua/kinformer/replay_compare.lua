--- kinformer.replay_compare: shadow reconcile before an upgrade. One
-- recorded trace (`kinformer record`) replayed through two versions of an
-- operator, each against its own kinformer.sim on a fake clock that
-- follows the same recorded offsets (kinformer.replay.run, the same
-- options for both), and the difference of their write sets, object by
-- object: what the new release would change in the cluster.
--
--   local cmp = require "kinformer.replay_compare"
--   local r = cmp.compare{ trace = "trace.jsonl", old = "v1/operator.lua", new = "v2/operator.lua" }
--   io.write(r.diff)        -- "" when both make the same writes
--   -- r.objects = { {key =, diff =}, ... } (the differing objects, sorted),
--   -- r.old, r.new = the writes of each (kinformer.replay.run's)
--
-- An object is "<resource> <namespace>/<name>" (or "<resource> <name>");
-- its writes are the distinct writes made to it (kinformer.replay.set's
-- sense: a write repeated because a cache lagged counts once) in the order
-- first made, each rendered as its verb (and subresource) followed by its
-- body as YAML-like text (kinformer.yamlish), with the volatile fields
-- kinformer.replay drops. The diff of an object is a unified diff
-- (kinformer.diff) from the old version's writes to the new one's, headed
-- "--- OLD <object>" / "+++ NEW <object>"; an object only one version
-- writes is diffed against nothing.
local replay = require "kinformer.replay"
local udiff = require "kinformer.diff"
local yamlish = require "kinformer.yamlish"

local M = {}

-- The object a write is to.
local function object_key(w)
  return w.resource .. " " .. ((w.namespace and w.namespace ~= "") and (w.namespace .. "/") or "")
    .. tostring(w.name)
end

--- The lines showing one write: "<verb>[ <subresource>]" then the body
-- indented by two spaces.
function M.write_lines(w)
  local out = { w.verb .. (w.subresource and (" " .. w.subresource) or "") }
  if w.body ~= nil then
    for _, l in ipairs(yamlish.lines(w.body)) do out[#out + 1] = "  " .. l end
  end
  return out
end

--- The writes grouped by object: a map object key -> array of lines (its
-- distinct writes in the order first made, M.write_lines each).
function M.by_object(writes)
  local out, seen = {}, {}
  for _, w in ipairs(writes) do
    local k = object_key(w)
    local text = table.concat(M.write_lines(w), "\n")
    seen[k] = seen[k] or {}
    if not seen[k][text] then
      seen[k][text] = true
      out[k] = out[k] or {}
      for _, l in ipairs(M.write_lines(w)) do table.insert(out[k], l) end
    end
  end
  return out
end

--- The per-object diff of two lists of writes (kinformer.replay.run's).
-- labels: {old =, new =} (the header names, default "old" and "new").
-- Returns {diff = text ("" when equal), objects = {{key =, diff =}}}.
function M.diff(old_writes, new_writes, labels)
  labels = labels or {}
  local a, b = M.by_object(old_writes), M.by_object(new_writes)
  local keys, seen = {}, {}
  for _, t in ipairs({ a, b }) do
    for k in pairs(t) do
      if not seen[k] then seen[k] = true keys[#keys + 1] = k end
    end
  end
  table.sort(keys)
  local objects, parts = {}, {}
  for _, k in ipairs(keys) do
    local d = udiff.unified(a[k] or {}, b[k] or {}, {
      from = (labels.old or "old") .. " " .. k, to = (labels.new or "new") .. " " .. k })
    if d ~= "" then
      objects[#objects + 1] = { key = k, diff = d }
      parts[#parts + 1] = d
    end
  end
  return { diff = table.concat(parts), objects = objects }
end

--- Replays opts.trace through opts.old, then through opts.new (each
-- kinformer.replay.run with the other options of opts: faults, namespace,
-- settle, timeout, tail, args) and diffs their writes (M.diff, labelled
-- with the two script names). Returns {diff =, objects =, old =, new =};
-- raises as kinformer.replay.run does.
function M.compare(opts)
  if type(opts) ~= "table" or type(opts.old) ~= "string" or type(opts.new) ~= "string" then
    error("replay_compare.compare: a table {trace =, old =, new =} expected", 2)
  end
  local function run(script)
    local o = {}
    for k, v in pairs(opts) do
      if k ~= "old" and k ~= "new" then o[k] = v end
    end
    o.script = script
    return replay.run(o)
  end
  local old = run(opts.old)
  local new = run(opts.new)
  local r = M.diff(old, new, { old = opts.old, new = opts.new })
  r.old, r.new = old, new
  return r
end

return M
