--- kinformer.util.finalizer: finalizers and deletion, as controller-
-- runtime's controllerutil (AddFinalizer, RemoveFinalizer,
-- ContainsFinalizer). Each edits the table it is given; writing it back
-- (client:update) is up to the caller. Also ctx.has_finalizer etc.
local O = require "kinformer.util.object"

local M = {}

-- obj.metadata.finalizers when it is a table, else nil; raises (for the
-- helper named what) when obj is no object or name no string.
local function finalizers(obj, name, what)
  O.check(obj, what, 3)
  if type(name) ~= "string" then error(what .. ": name must be a string", 3) end
  local m = obj.metadata
  local f = type(m) == "table" and m.finalizers
  return type(f) == "table" and f or nil
end

--- Whether obj.metadata.finalizers holds name.
function M.has_finalizer(obj, name)
  local f = finalizers(obj, name, "has_finalizer")
  if not f then return false end
  for _, v in ipairs(f) do
    if v == name then return true end
  end
  return false
end

--- Adds finalizer name to obj.metadata.finalizers. Returns true when it
-- was added (the caller then updates the object), false when present.
function M.ensure_finalizer(obj, name)
  O.check(obj, "ensure_finalizer")
  assert(type(name) == "string" and name ~= "", "ensure_finalizer: name must be a non-empty string")
  if M.has_finalizer(obj, name) then return false end
  local m = O.meta(obj)
  if type(m.finalizers) ~= "table" then m.finalizers = {} end
  table.insert(m.finalizers, name)
  return true
end

--- Removes every occurrence of name from obj.metadata.finalizers. Returns
-- true when one was removed. An emptied list becomes nil (so that an
-- update sends no finalizers: an empty Lua table would encode as {}).
function M.remove_finalizer(obj, name)
  local f = finalizers(obj, name, "remove_finalizer")
  if not f then return false end
  local kept, removed = {}, false
  for _, v in ipairs(f) do
    if v == name then removed = true else kept[#kept + 1] = v end
  end
  if removed then obj.metadata.finalizers = #kept > 0 and kept or nil end
  return removed
end

--- Whether obj has a deletionTimestamp (it waits for its finalizers).
function M.is_being_deleted(obj)
  O.check(obj, "is_being_deleted")
  local m = obj.metadata
  return type(m) == "table" and O.present(m.deletionTimestamp) and m.deletionTimestamp ~= ""
end

return M
