---@meta kinformer.util.owner
-- kinformer.util.owner (lua/kinformer/util/owner.lua): owner references, as
-- controllerutil.SetControllerReference / SetOwnerReference. Each edits
-- the table it is given.

---@class kinformer.util.owner
local M = {}

---Makes owner (read from the server: metadata.uid) obj's managing
---controller. Returns true, or nil, message, "AlreadyOwned" (another
---controller owns obj) or "Invalid" (different namespaces).
---@param owner kinformer.KObject
---@param obj kinformer.KObject
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function M.set_controller_reference(owner, obj) end

---Adds or refreshes a plain ownerReference to owner. Returns true, or nil,
---message, "Invalid".
---@param owner kinformer.KObject
---@param obj kinformer.KObject
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function M.set_owner_reference(owner, obj) end

return M
