--- kinformer.cmd.replay: `kinformer replay TRACE SCRIPT ...`, the command
-- over kinformer.replay (which does the replaying).
local replay = require "kinformer.replay"

local M = {}

M.usage = [[
usage: kinformer replay TRACE SCRIPT [--compare NEW_SCRIPT] [--fault N:KIND]...
                        [--namespace NS] [--settle S] [--tail S] [--set] [-q|-v]
                        [-- ARGS...]

Replays TRACE (from `kinformer record`) through SCRIPT against an
in-process kinformer.sim at full speed, the controllers on a fake clock
that follows the recorded offsets (requeue_after and retries fire in
between), and prints, as JSON, the writes SCRIPT's reconcilers made.
The recorded objects keep their recorded uids, creationTimestamps and
resourceVersions, so owner references and uid preconditions hold as they
did in the recorded cluster; each watch event is applied as the change
from the object's previous recorded state, so the operator's own writes
are not written again (an object it created takes the recorded identity
when the recorded create arrives).
--compare NEW_SCRIPT: shadow reconcile before an upgrade: replays TRACE
through SCRIPT, then through NEW_SCRIPT (each on its own sim, the same
fake clock and options) and prints, per object written, a unified diff
from SCRIPT's distinct writes to NEW_SCRIPT's ("--- SCRIPT <resource>
<ns>/<name>", "+++ NEW_SCRIPT ..."); exit status 0 when they make the
same writes, 2 when they differ, 1 when a replay failed.
--fault N:KIND applies KIND (drop_watches, cut_watches, compact,
fail_next) right after the N-th watch event. --tail S runs the fake
clock S seconds past the last event (default 1). --settle S: seconds
without a reconcile that count as quiet (default 0.1).
--set prints each distinct write once, sorted (what the golden files of
kinformer.testing.replay hold with set = true): an operator may repeat a
write when its cache lags behind its own last one.
Exit status: 0, 1 an error, 2 a usage error (or, with --compare, writes
that differ).
]]

--- `kinformer replay TRACE SCRIPT --compare NEW`: ropts are replay.run's
-- options (script = the old version), o the parsed flags. Prints the
-- per-object diff; returns 0 (the same writes), 2 (they differ) or 1.
function M.compare(ropts, o)
  local cmp = require "kinformer.replay_compare"
  local copts = { old = ropts.script, new = o.compare }
  for k, v in pairs(ropts) do
    if k ~= "script" then copts[k] = v end
  end
  local ok, r = pcall(cmp.compare, copts)
  if not ok then
    io.stderr:write("kinformer: ", tostring(r), "\n")
    return 1
  end
  io.stdout:write(r.diff)
  io.stdout:flush()
  if not o.quiet then
    io.stderr:write(string.format("kinformer: %s\n", #r.objects == 0
      and string.format("%s and %s make the same writes", copts.old, copts.new)
      or string.format("the writes of %s and %s differ on %d object(s)", copts.old, copts.new, #r.objects)))
  end
  return #r.objects == 0 and 0 or 2
end

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
    elseif a == "--fault" or a == "--namespace" or a == "-n" or a == "--settle" or a == "--tail"
        or a == "--compare" then
      local v = argv[i + 1]
      if not v then return usage(a .. " needs a value") end
      i = i + 1
      if a == "--fault" then
        local n, kind = v:match("^(%d+):([%w_]+)$")
        if not n or not replay.FAULTS[kind] then
          return usage("--fault wants N:KIND (KIND drop_watches, cut_watches, compact, fail_next), not " .. v)
        end
        o.faults[#o.faults + 1] = { at = math.tointeger(tonumber(n)), fault = kind }
      elseif a == "--compare" then
        o.compare = v
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
  if o.compare and o.set then return usage("--set and --compare do not go together") end
  require("kinformer.core").set_log_level(o.verbose and "debug" or o.quiet and "warn" or "info")
  local ropts = { trace = pos[1], script = pos[2], faults = o.faults, namespace = o.namespace,
                  settle = o.settle, tail = o.tail, args = o.args }
  if o.compare then return M.compare(ropts, o) end
  local ok, writes = pcall(replay.run, ropts)
  if not ok then
    io.stderr:write("kinformer: ", tostring(writes), "\n")
    return 1
  end
  io.stdout:write(replay.format(o.set and replay.set(writes) or writes))
  io.stdout:flush()
  return 0
end

return M
