---@meta kinformer.errors
-- kinformer.errors (lua/kinformer/errors.lua): terminal errors.

---A terminal error: a reconciler that raises or returns it is not retried.
---tostring gives "terminal error: <message>".
---@class kinformer.TerminalError
---@field kinformer_terminal true
---@field message string
---@field cause any what was wrapped

---The module: require "kinformer.errors".
---@class kinformer.errors
local M = {}

---Wraps err (a string, or any value) as a terminal error; a terminal error
---is returned unchanged.
---@param err any
---@return kinformer.TerminalError
function M.terminal(err) end

---Whether v is a terminal error (any table with kinformer_terminal = true).
---@param v any
---@return boolean
function M.is_terminal(v) end

return M
