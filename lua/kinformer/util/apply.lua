--- kinformer.util.apply: the pure rules of ctx:ensure (kinformer.ctx), the
-- "make this child exist as described" of a reconcile: what is applied,
-- and when applying can be skipped.
--
-- ctx:ensure applies (server-side apply, the controller's field manager,
-- force) a copy of the object the reconciler describes, carrying the
-- controller owner reference and an annotation, kinformer.io/applied, a
-- hash of the description (everything else it applies but the owner
-- reference). The next reconcile skips the write
-- when the object it sees (the cache, else a GET) still has that hash and
-- holds every field it describes with the same value (desired ⊆ current):
-- nothing it would send is missing or different, and since the hash is
-- the same it sends no fewer fields than last time, so the apply would
-- change nothing (no field of ours to drop either). A changed description
-- (also one that drops a field: server-side apply then removes it) changes
-- the hash; a field someone else changed fails the subset test; both
-- apply. False "changed" verdicts (the server normalises "1000m" to "1")
-- only cost a request, whose answer (the resourceVersion unchanged) still
-- reports "unchanged".
local core = require "kinformer.core"
local O = require "kinformer.util.object"

local M = {}

M.ANNOTATION = "kinformer.io/applied"

-- Canonical JSON of v (sorted keys), for hashing: the same description
-- gives the same text in every Lua state.
local function canonical(v, out)
  local t = type(v)
  if t ~= "table" then
    if v == core.null then out[#out + 1] = "null"
    else out[#out + 1] = core.json_encode(v) end
    return
  end
  local n = #v
  if getmetatable(v) == core.array_mt or (n > 0 and next(v, n) == nil) then
    out[#out + 1] = "["
    for i = 1, n do
      if i > 1 then out[#out + 1] = "," end
      canonical(v[i], out)
    end
    out[#out + 1] = "]"
    return
  end
  local keys, by = {}, {}
  for k in pairs(v) do
    local s = tostring(k)
    keys[#keys + 1], by[s] = s, k
  end
  table.sort(keys)
  out[#out + 1] = "{"
  for i, k in ipairs(keys) do
    if i > 1 then out[#out + 1] = "," end
    out[#out + 1] = core.json_encode(k) .. ":"
    canonical(v[by[k]], out)
  end
  out[#out + 1] = "}"
end

--- FNV-1a (64 bit) of the canonical JSON of v, as 16 hex digits.
function M.hash(v)
  local out = {}
  canonical(v, out)
  local s = table.concat(out)
  local h = 0xcbf29ce484222325
  for i = 1, #s do h = (h ~ s:byte(i)) * 0x100000001b3 end
  return string.format("%016x", h)
end

--- A deep copy of v as plain tables (views decoded), arrays keeping
-- core.array_mt so that an empty one still encodes as [].
function M.copy(v)
  if type(v) ~= "table" then return v end
  if core.is_view(v) then v = core.materialize(v) end
  local c = {}
  for k, x in pairs(v) do c[k] = M.copy(x) end
  if getmetatable(v) == core.array_mt then setmetatable(c, core.array_mt) end
  return c
end

--- Whether every field of want is in have with the same value: maps key
-- by key (have may hold more), arrays item by item at the same index
-- (have may be longer: items others added), numbers by value (1 == 1.0).
function M.subset(want, have)
  if type(want) ~= "table" then
    if want == core.null then return have == nil or have == core.null end
    return want == have
  end
  if type(have) ~= "table" then return false end
  for k, v in pairs(want) do
    if not M.subset(v, have[k]) then return false end
  end
  return true
end

--- The controller owner reference of obj (a table), or nil.
function M.controller_of(obj)
  local m = type(obj) == "table" and obj.metadata
  for _, r in ipairs(type(m) == "table" and type(m.ownerReferences) == "table" and m.ownerReferences or {}) do
    if r.controller == true then return r end
  end
  return nil
end

-- The API group of an apiVersion ("apps/v1" -> "apps", "v1" -> "").
local function group_of(v) return type(v) == "string" and (v:match("^(.*)/[^/]*$") or "") or nil end

--- Whether the controller reference ref names owner: the same API group,
-- kind and name. A reference to an earlier object of that name (another
-- uid) counts as owner's too: that object is gone, and controller-runtime
-- adopts such children the same way.
function M.same_owner(ref, owner)
  return ref ~= nil and group_of(ref.apiVersion) == group_of(owner.apiVersion) and ref.kind == owner.kind
    and ref.name == owner.metadata.name
end

--- The object to apply for desc (not changed): a plain copy, with the
-- controller reference to owner (nil: none) and the hash annotation.
-- Returns it and the hash; or nil, msg, code when owner and obj are in
-- different namespaces (owner.lua's rule).
function M.desired(desc, owner)
  local d = M.copy(desc)
  local m = O.meta(d)
  if type(m.annotations) == "table" then m.annotations[M.ANNOTATION] = nil end
  -- the hash is of the description alone: the same in every run and every
  -- cluster (the owner's uid is not in it; the subset test sees a
  -- reference to another uid)
  local h = M.hash(d)
  if owner then
    local ok, msg, code = require("kinformer.util.owner").set_controller_reference(owner, d)
    if not ok then return nil, msg, code end
  end
  if type(m.annotations) ~= "table" then m.annotations = {} end
  m.annotations[M.ANNOTATION] = h
  return d, h
end

--- Whether applying d (from M.desired, hash h) to current would change
-- nothing: current carries h and every field of d.
function M.unchanged(d, h, current)
  if type(current) ~= "table" then return false end
  local m = current.metadata
  local ann = type(m) == "table" and m.annotations
  if type(ann) ~= "table" or ann[M.ANNOTATION] ~= h then return false end
  return M.subset(d, current)
end

return M
