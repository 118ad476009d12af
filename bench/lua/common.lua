--- Shared by the make bench-lua client scripts (bench/lua/*_bench.lua):
-- argument parsing, clocks, the ready file and the one JSON line each run
-- prints for bench/lua_bench.sh.
local cjson = require "cjson"
local core = require "kinformer.core"

local M = {}

--- Parses "--name value" pairs into a table; numbers stay strings.
-- Raises on a stray argument.
function M.args(argv, defaults)
  local a = {}
  for k, v in pairs(defaults or {}) do a[k] = v end
  local i = 1
  while i <= #argv do
    local k = argv[i]:match("^%-%-([%w-]+)$")
    if not k or argv[i + 1] == nil then error("usage: --name value ...; bad argument " .. argv[i], 0) end
    a[k:gsub("-", "_")] = argv[i + 1]
    i = i + 2
  end
  return a
end

--- Seconds on the system-wide monotonic clock (CLOCK_MONOTONIC).
M.monotime = core.monotime

-- Wall clock (seconds since the epoch, microseconds): lua-system, which
-- busted depends on (Debian package lua-system). The driver stamps the
-- start of a burst with bash's $EPOCHREALTIME; the client stamps the end
-- with this, as the Go client does with time.Now().
local system = require "system"
M.walltime = system.gettime
M.sleep = system.sleep

--- Creates the ready file (empty).
function M.ready(path)
  if not path or path == "" then return end
  local f = assert(io.open(path, "w"))
  f:close()
end

--- Polls fn() every `every` seconds until it returns a true value or
-- timeout seconds pass. Returns fn's value, or nil on time-out.
function M.poll(fn, every, timeout)
  local deadline = M.monotime() + timeout
  while true do
    local v = fn()
    if v then return v end
    if M.monotime() >= deadline then return nil end
    M.sleep(every)
  end
end

--- VmRSS of this process in KiB, or nil.
function M.rss_kib()
  local f = io.open("/proc/self/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return tonumber(s:match("VmRSS:%s*(%d+)"))
end

--- Prints r as one JSON line (the last line of stdout is the result).
function M.emit(r)
  io.stdout:write(cjson.encode(r), "\n")
  io.stdout:flush()
end

return M
