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

--- Handlers, listers and map functions get lazy views of cached objects
-- (csrc/lua/lview.h): tables that decode a member on its first read.
-- plain(v) decodes every view in v in place, deeply, and returns v: plain
-- tables afterwards, for code that needs next() or rawget() to see every
-- member (core.materialize; not "materialize" here, which would take
-- kinformer.ma<Tab> from manager in the REPL). is_view(v) tells whether v
-- is a view not yet decoded whole.
M.plain = core.materialize
M.is_view = core.is_view

--- Creates a manager (lua/kinformer/manager.lua): kinformer.manager{...}.
function M.manager(opts) return require("kinformer.manager").new(opts) end

--- Terminal errors (lua/kinformer/errors.lua): a reconciler that raises or
-- returns kinformer.terminal(err) is not retried.
M.terminal = require("kinformer.errors").terminal
M.is_terminal = require("kinformer.errors").is_terminal

--- Renders a value as indented JSON with sorted keys, for reading objects
-- in the REPL: print(kinformer.dump(inf:get("default/web"))). Returns the
-- string, or nil, message, "EINVAL" when the value cannot be encoded.
function M.dump(v)
  local json, err = core.json_encode(v)
  if not json then return nil, err, "EINVAL" end
  local out, indent = {}, "  "
  local function emit(x, depth)
    local pad = indent:rep(depth)
    if type(x) ~= "table" then
      out[#out + 1] = core.json_encode(x)
      return
    end
    local n = #x
    local is_array = getmetatable(x) == core.array_mt or (n > 0 and next(x, n > 0 and n or nil) == nil)
    if is_array then
      if n == 0 then out[#out + 1] = "[]" return end
      out[#out + 1] = "[\n"
      for i = 1, n do
        out[#out + 1] = pad .. indent
        emit(x[i], depth + 1)
        out[#out + 1] = i < n and ",\n" or "\n"
      end
      out[#out + 1] = pad .. "]"
      return
    end
    local keys = {}
    for k in pairs(x) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    if #keys == 0 then out[#out + 1] = "{}" return end
    out[#out + 1] = "{\n"
    for i, k in ipairs(keys) do
      out[#out + 1] = pad .. indent .. core.json_encode(k) .. ": "
      emit(x[k], depth + 1)
      out[#out + 1] = i < #keys and ",\n" or "\n"
    end
    out[#out + 1] = pad .. "}"
  end
  emit(core.json_decode(json), 0)
  return table.concat(out)
end

return M
