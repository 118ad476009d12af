--- kinformer.util.object: the small rules every object helper shares
-- (what counts as present, the metadata table, a readable label). Internal
-- to kinformer.util.*; not part of the documented API.
local core = require "kinformer.core"

local M = {}

--- Whether v is there: neither absent nor a JSON null (core.null).
function M.present(v)
  return v ~= nil and v ~= core.null
end

--- Raises "<what>: expected an object (table), got <type>" at the
-- caller's caller (level counts from the helper that checks).
function M.check(obj, what, level)
  if type(obj) ~= "table" then
    error(string.format("%s: expected an object (table), got %s", what, type(obj)), (level or 2) + 1)
  end
end

--- obj.metadata, made a table first when it is not one.
function M.meta(obj)
  local m = obj.metadata
  if type(m) ~= "table" then
    m = {}
    obj.metadata = m
  end
  return m
end

--- "namespace/name" (or name, or generateName, or "?") for messages.
function M.label(obj)
  local m = type(obj.metadata) == "table" and obj.metadata or {}
  local ns = M.present(m.namespace) and m.namespace ~= "" and (m.namespace .. "/") or ""
  return ns .. tostring(m.name or m.generateName or "?")
end

return M
