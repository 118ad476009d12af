--- kinformer.webhook_patch: the RFC 6902 JSON Patch that turns one JSON
-- value into another, for mutating webhooks (kinformer.webhook_run: the
-- object as the API server sent it vs the object the handler left).
-- Pure Lua over the binding's JSON mapping (csrc/lua/ljson.h): objects are
-- tables with string keys, arrays are sequences (or tables carrying
-- core.array_mt, so an emptied array stays an array), null is core.null.
--
--   local P = require "kinformer.webhook_patch"
--   P.diff(old, new)   --> { {op="replace", path="/spec/replicas", value=3}, ... }
--   P.pointer({"metadata", "labels", "a/b"}) --> "/metadata/labels/a~1b"
--   P.apply(doc, ops)  --> the patched copy (for tests and `kinformer plan`)
--
-- Rules (kept simple and correct): members of an object are compared one
-- by one (remove for those gone, add for new ones, recursion for both);
-- arrays of the same length are compared element by element; an array
-- whose length changed is replaced whole; any other change of value (a
-- type change, a scalar) is a replace. Keys are visited in sorted order,
-- so the same inputs give the same patch.
local M = {}

local array_mt
local function get_array_mt()
  if array_mt == nil then
    local ok, core = pcall(require, "kinformer.core")
    array_mt = ok and core.array_mt or false
  end
  return array_mt
end

--- Whether t (a table) is a JSON array: it carries core.array_mt, or its
-- keys are exactly 1..n with n > 0.
function M.is_array(t)
  local mt = getmetatable(t)
  if mt ~= nil and mt == get_array_mt() then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for k in next, t do
    if math.type(k) ~= "integer" or k < 1 or k > n then return false end
    count = count + 1
  end
  return count == n
end

local is_array = M.is_array

--- The JSON Pointer (RFC 6901) of a path given as a list of keys (strings
-- for members, 0-based integers for array indexes): "~" as "~0", "/" as "~1".
function M.pointer(keys)
  local parts = {}
  for i, k in ipairs(keys) do
    parts[i] = "/" .. tostring(k):gsub("~", "~0"):gsub("/", "~1")
  end
  return table.concat(parts)
end

local function escape(k) return (tostring(k):gsub("~", "~0"):gsub("/", "~1")) end

-- Whether a and b are the same JSON value.
local function equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then
    -- 1 and 1.0 are the same JSON number
    return type(a) == "number" and type(b) == "number" and a == b
  end
  local arr = is_array(a)
  if arr ~= is_array(b) then
    return false -- {} and [] differ in JSON too
  end
  if arr then
    if #a ~= #b then return false end
    for i = 1, #a do
      if not equal(a[i], b[i]) then return false end
    end
    return true
  end
  for k, v in next, a do
    if b[k] == nil or not equal(v, b[k]) then return false end
  end
  for k in next, b do
    if a[k] == nil then return false end
  end
  return true
end
M.equal = equal

local function sorted_keys(t)
  local keys = {}
  for k in next, t do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return tostring(x) < tostring(y) end)
  return keys
end

local function diff(a, b, path, ops)
  if equal(a, b) then return end
  if type(a) == "table" and type(b) == "table" then
    local aa, ba = is_array(a), is_array(b)
    if not aa and not ba then
      for _, k in ipairs(sorted_keys(a)) do
        if b[k] == nil then ops[#ops + 1] = { op = "remove", path = path .. "/" .. escape(k) } end
      end
      for _, k in ipairs(sorted_keys(b)) do
        local p = path .. "/" .. escape(k)
        if a[k] == nil then
          ops[#ops + 1] = { op = "add", path = p, value = b[k] }
        else
          diff(a[k], b[k], p, ops)
        end
      end
      return
    end
    if aa and ba and #a == #b then
      for i = 1, #a do diff(a[i], b[i], path .. "/" .. (i - 1), ops) end
      return
    end
  end
  ops[#ops + 1] = { op = "replace", path = path, value = b }
end

--- The operations that turn old into new (a list, empty when they are the
-- same JSON value). The root is replaced as a whole ("") when it is not
-- an object on both sides.
function M.diff(old, new)
  local ops = {}
  diff(old, new, "", ops)
  return ops
end

-- ---- applying (tests, plan) ---------------------------------------------

local function unescape(s) return (s:gsub("~1", "/"):gsub("~0", "~")) end

local function deep_copy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in next, v do c[k] = deep_copy(x) end
  return setmetatable(c, getmetatable(v))
end

-- The parent container of pointer p in doc and the last key (a string
-- member or a 1-based index; "-" as #arr + 1), or nil, message.
local function locate(doc, p)
  local keys = {}
  for part in p:gmatch("/([^/]*)") do keys[#keys + 1] = unescape(part) end
  if #keys == 0 then return nil, "the root" end
  local cur = doc
  for i = 1, #keys - 1 do
    local k = keys[i]
    if type(cur) ~= "table" then return nil, "no container at " .. p end
    if is_array(cur) then k = tonumber(k) and (tonumber(k) + 1) end
    cur = cur[k]
  end
  if type(cur) ~= "table" then return nil, "no container at " .. p end
  local last = keys[#keys]
  if is_array(cur) then
    if last == "-" then return cur, #cur + 1, true end
    local n = tonumber(last)
    if not n then return nil, "bad array index in " .. p end
    return cur, math.tointeger(n) + 1, true
  end
  return cur, last, false
end

--- Applies ops (add, remove, replace) to a copy of doc; returns it, or
-- nil, message for an operation that does not apply.
function M.apply(doc, ops)
  doc = deep_copy(doc)
  for _, o in ipairs(ops) do
    if o.path == "" then
      if o.op == "remove" then return nil, "cannot remove the root" end
      doc = deep_copy(o.value)
    else
      local parent, k, arr = locate(doc, o.path)
      if not parent then return nil, k end
      if o.op == "add" then
        if arr then table.insert(parent, k, deep_copy(o.value)) else parent[k] = deep_copy(o.value) end
      elseif o.op == "replace" then
        if parent[k] == nil then return nil, "nothing to replace at " .. o.path end
        parent[k] = deep_copy(o.value)
      elseif o.op == "remove" then
        if parent[k] == nil then return nil, "nothing to remove at " .. o.path end
        if arr then table.remove(parent, k) else parent[k] = nil end
      else
        return nil, "unsupported op " .. tostring(o.op)
      end
    end
  end
  return doc
end

return M
