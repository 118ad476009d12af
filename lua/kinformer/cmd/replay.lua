--- kinformer.cmd.replay: `kinformer replay TRACE SCRIPT ...`, the command
-- over kinformer.replay (which does the replaying).
local replay = require "kinformer.replay"

local M = {}

M.usage = [[
usage: kinformer replay TRACE SCRIPT [--fault N:KIND]... [--namespace NS]
                        [--settle S] [--tail S] [--set] [-q|-v] [-- ARGS...]

Replays TRACE (from `kinformer record`) through SCRIPT against an
in-process kinformer.sim at full speed, the controllers on a fake clock
that follows the recorded offsets (requeue_after and retries fire in
between), and prints, as JSON, the writes SCRIPT's reconcilers made.
--fault N:KIND applies KIND (drop_watches, cut_watches, compact,
fail_next) right after the N-th watch event. --tail S runs the fake
clock S seconds past the last event (default 1). --settle S: seconds
without a reconcile that count as quiet (default 0.1).
--set prints each distinct write once, sorted (what the golden files of
kinformer.testing.replay hold with set = true): an operator may repeat a
write when its cache lags behind its own last one.
]]

--- Entry point for `kinformer replay ...` (argv as `arg`). Returns the exit status.
function M.main(argv)
  local o = { faults = {}, args = {} }
  local pos = {}
  local i = 2
  local function usage(msg)
    io.stderr:write("kinformer: ", msg, "\n", M.usage)
    return 2
  end
  while i <= #argv do
    local a = argv[i]
    if a == "--" then
      for j = i + 1, #argv do o.args[#o.args + 1] = argv[j] end
      break
    elseif a == "--fault" or a == "--namespace" or a == "-n" or a == "--settle" or a == "--tail" then
      local v = argv[i + 1]
      if not v then return usage(a .. " needs a value") end
      i = i + 1
      if a == "--fault" then
        local n, kind = v:match("^(%d+):([%w_]+)$")
        if not n or not replay.FAULTS[kind] then
          return usage("--fault wants N:KIND (KIND drop_watches, cut_watches, compact, fail_next), not " .. v)
        end
        o.faults[#o.faults + 1] = { at = math.tointeger(tonumber(n)), fault = kind }
      elseif a == "--settle" or a == "--tail" then
        local k = a:sub(3)
        o[k] = tonumber(v)
        if not o[k] or o[k] < 0 then return usage(a .. " must be seconds >= 0") end
      else
        o.namespace = v
      end
    elseif a == "-h" or a == "--help" then
      io.stdout:write(M.usage)
      return 0
    elseif a == "--set" then o.set = true
    elseif a == "-v" or a == "--verbose" then o.verbose = true
    elseif a == "-q" or a == "--quiet" then o.quiet = true
    elseif a:sub(1, 1) == "-" then return usage("unknown option " .. a)
    else pos[#pos + 1] = a end
    i = i + 1
  end
  if #pos ~= 2 then return usage("replay needs a TRACE and a SCRIPT") end
  require("kinformer.core").set_log_level(o.verbose and "debug" or o.quiet and "warn" or "info")
  local ok, writes = pcall(replay.run, { trace = pos[1], script = pos[2], faults = o.faults,
                                    namespace = o.namespace, settle = o.settle, tail = o.tail,
                                    args = o.args })
  if not ok then
    io.stderr:write("kinformer: ", tostring(writes), "\n")
    return 1
  end
  io.stdout:write(replay.format(o.set and replay.set(writes) or writes))
  io.stdout:flush()
  return 0
end

return M
