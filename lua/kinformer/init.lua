--- kinformer: the Kubernetes informer stack in C, for Lua 5.4.
-- This module is the public entry point; the C core is kinformer.core.
local core = require "kinformer.core"

local M = {
  _VERSION = "kinformer " .. core.version,
  core = core,
}

--- Parses one Kubernetes object from JSON.
-- Returns an object (metadata accessors, :decode() for a fresh table),
-- or nil, message, code ("EINVAL") when the JSON is malformed.
M.object = core.object

--- Makes a DeletedFinalStateUnknown tombstone for key, optionally holding
-- the last known state.
M.tombstone = core.tombstone

--- Creates a manager (lua/kinformer/manager.lua): kinformer.manager{...}.
function M.manager(opts) return require("kinformer.manager").new(opts) end

--- Terminal errors (lua/kinformer/errors.lua): a reconciler that raises or
-- returns kinformer.terminal(err) is not retried.
M.terminal = require("kinformer.errors").terminal
M.is_terminal = require("kinformer.errors").is_terminal

return M
