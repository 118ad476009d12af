--- kinformer.errors: error values with a meaning for the controller.
--
-- A reconciler that raises or returns `kinformer.terminal(err)` is not
-- retried (controller-runtime's TerminalError): the error is logged once
-- and the request is forgotten until the object changes again.
--
--   local kinformer = require "kinformer"
--   return function(req, ctx)
--     local obj = ctx.listers["example.com/v1/websites"]:get(req.key)
--     if obj and not obj.spec.image then
--       return nil, kinformer.terminal("spec.image is required")
--     end
--   end
--
-- The value is a plain table { kinformer_terminal = true, message = "...",
-- cause = err } so that the C side recognises it without calling back into
-- Lua; tostring() gives "terminal error: <message>". The one test of what
-- is terminal is C's (csrc/lua/lresult.c, core.is_terminal): this module
-- only makes terminal errors.
local core = require "kinformer.core"

local M = {}

local Terminal = {}
Terminal.__index = Terminal
Terminal.__name = "kinformer.terminal"
Terminal.__tostring = function(self) return "terminal error: " .. tostring(self.message) end

--- Wraps err (a string, or any value: tostring gives the message) as a
-- terminal error. A terminal error is returned unchanged.
function M.terminal(err)
  if M.is_terminal(err) then return err end
  local msg
  if err == nil then
    msg = "terminal error"
  elseif type(err) == "table" and type(err.message) == "string" then
    msg = err.message
  else
    msg = tostring(err)
  end
  return setmetatable({ kinformer_terminal = true, message = msg, cause = err }, Terminal)
end

--- Whether v is a terminal error (made by terminal, or any table with
-- kinformer_terminal = true, such as one that crossed a state boundary).
M.is_terminal = core.is_terminal

return M
