--- kinformer.cmd.argv: the one walk over a command's words, for the
-- subcommands that parse their own (kinformer inspect, record). Internal.
--
--   local ok, err = argv.walk(words, 2, function(a, value, usage)
--     if a == "--timeout" then o.timeout = tonumber(value())
--     elseif a:sub(1, 1) == "-" then usage("unknown option " .. a)
--     else o.rest[#o.rest + 1] = a end
--   end)
local M = {}

local USAGE = {} -- the metatable of a usage error raised inside walk

--- Calls handle(a, value, usage) for each word of words from index first.
-- a is the word, or the flag of a `--flag=value` word; value() returns
-- the flag's value (the part after "=", else the next word, which it
-- consumes); usage(msg) stops the walk with a usage error. Returns true,
-- or nil, msg for a usage error (a flag missing its value included); any
-- other error raised by handle propagates.
function M.walk(words, first, handle)
  local function usage(msg) error(setmetatable({ msg = msg }, USAGE)) end
  local i = first
  while i <= #words do
    local a = words[i]
    local flag, inline = a:match("^(%-%-[%w-]+)=(.*)$")
    local function value()
      if inline then return inline end
      i = i + 1
      if words[i] == nil then usage((flag or a) .. " needs a value") end
      return words[i]
    end
    local ok, err = pcall(handle, flag or a, value, usage)
    if not ok then
      if getmetatable(err) == USAGE then return nil, err.msg end
      error(err, 0)
    end
    i = i + 1
  end
  return true
end

--- value() as a positive number, or a usage error naming the flag.
function M.positive(flag, value, usage, what)
  local v = value()
  local n = tonumber(v)
  if not n or n <= 0 then usage(("%s must be a positive %s, not %s"):format(flag, what or "number", v)) end
  return n
end

return M
