--- kinformer.util.value: deep copy and deep equality of decoded JSON
-- values (tables of tables, as kinformer.core's json_decode makes them).
-- Internal to the library (kinformer.plan, kinformer.plan_admission,
-- kinformer.replay); not part of the documented API. Requires nothing, so
-- any Lua state may load it.
local M = {}

--- A deep copy of v: tables copied with their metatables (core.array_mt
-- stays an array), anything else as is.
function M.copy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = M.copy(x) end
  return setmetatable(c, getmetatable(v))
end

--- Whether a and b hold the same value: the same keys with equal values,
-- table by table (metatables not compared), anything else by ==.
function M.equal(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do
    if not M.equal(v, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

return M
