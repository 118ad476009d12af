---@meta kinformer.advise
-- kinformer.advise (lua/kinformer/advise.lua): the fields projection each
-- informer could use, from what code has read (mgr:advise, kinformer
-- inspect advise).
---@class kinformer.advise
local M = {}

---The advice of every informer of mgr, sorted by informer name.
---@param mgr kinformer.Manager
---@return kinformer.Advice[]
function M.of(mgr) end

---The advice as text, as `kinformer inspect advise` prints it.
---@param list kinformer.Advice[]
---@return string
function M.format(list) end

return M
