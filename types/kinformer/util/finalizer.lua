---@meta kinformer.util.finalizer
-- kinformer.util.finalizer (lua/kinformer/util/finalizer.lua): controller-
-- runtime's controllerutil finalizer helpers. Each edits the table it is
-- given; writing it back (client:update) is up to the caller.

---@class kinformer.util.finalizer
local M = {}

---Whether obj.metadata.finalizers holds name.
---@param obj kinformer.KObject
---@param name string
---@return boolean
function M.has_finalizer(obj, name) end

---Adds finalizer name: true when added, false when present.
---@param obj kinformer.KObject
---@param name string
---@return boolean
function M.ensure_finalizer(obj, name) end

---Removes every occurrence of name: true when one was removed (an emptied
---list becomes nil).
---@param obj kinformer.KObject
---@param name string
---@return boolean
function M.remove_finalizer(obj, name) end

---Whether obj has a deletionTimestamp.
---@param obj kinformer.KObject
---@return boolean
function M.is_being_deleted(obj) end

return M
