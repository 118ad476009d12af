--- kinformer.log: loggers whose lines go to kin's log (the level set by
-- KINFORMER_LOG_LEVEL), tagged with a controller and key. ctx.log is one.
--
--   local log = require("kinformer.log").logger("mirror", "ns/a")
--   log:info("copied %d keys", n)   -- [controller=mirror key=ns/a] copied 2 keys
local core = require "kinformer.core"

local M = {}

local Log = {}
Log.__index = Log

local function emit(self, level, fmt, ...)
  if not core.log_enabled(level) then return end
  local msg
  if select("#", ...) > 0 then
    msg = string.format(fmt, ...)
  else
    msg = tostring(fmt)
  end
  core.log(level, self.component, self.prefix .. msg)
end

--- log:error/warn/info/debug(fmt, ...): string.format(fmt, ...) (or fmt
-- alone) as one line of kin's log at that level (KINFORMER_LOG_LEVEL).
-- One call style: log:info(...); log.info(...) raises saying so.
for _, level in ipairs { "error", "warn", "info", "debug" } do
  Log[level] = function(self, fmt, ...)
    if getmetatable(self) ~= Log then
      error(string.format("log.%s(...): call it as log:%s(fmt, ...)", level, level), 2)
    end
    return emit(self, level, fmt, ...)
  end
end

--- A logger whose lines start with "[controller=<c> key=<k>] " (the parts
-- that are known). component is kin's log component ("reconcile").
function M.logger(controller, key, component)
  local tags = {}
  if controller then tags[#tags + 1] = "controller=" .. tostring(controller) end
  if key then tags[#tags + 1] = "key=" .. tostring(key) end
  local prefix = #tags > 0 and ("[" .. table.concat(tags, " ") .. "] ") or ""
  return setmetatable({ component = component or "reconcile", prefix = prefix }, Log)
end

return M
