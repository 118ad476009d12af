---@meta kinformer.log
-- kinformer.log (lua/kinformer/log.lua): loggers whose lines go to
-- kinformer's log (KINFORMER_LOG_LEVEL), tagged with a controller and key.

---A logger (ctx.log): log:info(fmt, ...), with a colon.
---@class kinformer.Logger
---@field component string kinformer's log component ("reconcile")
---@field prefix string "[controller=c key=k] "
local Logger = {}

---string.format(fmt, ...) (or fmt alone) as one line at level error.
---@param fmt any
---@param ... any
function Logger:error(fmt, ...) end

---@param fmt any
---@param ... any
function Logger:warn(fmt, ...) end

---@param fmt any
---@param ... any
function Logger:info(fmt, ...) end

---@param fmt any
---@param ... any
function Logger:debug(fmt, ...) end

---The module: require "kinformer.log".
---@class kinformer.log
local M = {}

---A logger whose lines start with "[controller=<c> key=<k>] ".
---@param controller? string
---@param key? string
---@param component? string default "reconcile"
---@return kinformer.Logger
function M.logger(controller, key, component) end

return M
