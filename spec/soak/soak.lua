-- The soak (issue 17): the ConfigMap mirror example operator
-- (examples/configmap-mirror, run as `bin/kinformer run ... --kubeconfig`,
-- its own process) against a kinformer.sim started here, under steady
-- churn: a writer creates, updates and deletes mirrored ConfigMaps at a
-- fixed rate over a fixed set of names. Every interval seconds it samples
-- the operator's RSS (VmRSS), open file descriptors (/proc/PID/fd) and
-- threads (Threads) from /proc into a CSV, and at the end prints the
-- least-squares slope of RSS in KiB/hour and the fd and thread counts,
-- first vs last. It fails when the operator dies, or when the mirror is
-- behind the ConfigMaps once the churn stops.
--
--   lua5.4 spec/soak/soak.lua DURATION [INTERVAL] [RATE] [CSV]
--     DURATION seconds of churn, a sample every INTERVAL s (default 5),
--     RATE writes per second (default 20), CSV (default
--     build/soak/soak-<time>.csv). LUA_PATH/LUA_CPATH as for the specs.
local core = require "kinformer.core"

local duration = tonumber(arg[1] or "")
if not duration then
  io.stderr:write("usage: lua5.4 spec/soak/soak.lua DURATION [INTERVAL] [RATE] [CSV]\n")
  os.exit(2)
end
local interval = tonumber(arg[2] or "") or 5
local rate = tonumber(arg[3] or "") or 20
os.execute("mkdir -p build/soak")
local csv_path = arg[4] or string.format("build/soak/soak-%s.csv", os.date("!%Y%m%dT%H%M%SZ"))

local NAMES, NS, LABEL = 200, "default", "kinformer.io/mirror"

local function slurp(p)
  local f = io.open(p)
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local sim = assert(require("kinformer.sim").start{})
local env = assert(core.env{ kubeconfig = sim.kubeconfig, qps = -1 })
local c = env:client()

-- the operator, its own process; its pid is the lua5.4 of bin/kinformer
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. q(dir)))
local cpath, lpath = package.cpath, package.path
assert(os.execute(string.format(
  "sh -c %s >/dev/null 2>&1 &",
  q(string.format("LUA_PATH=%s LUA_CPATH=%s exec bin/kinformer run examples/configmap-mirror/operator.lua "
    .. "--kubeconfig %s --namespace %s >%s/out 2>%s/err & echo $! >%s/pid; wait",
    q(lpath), q(cpath), q(sim.kubeconfig), NS, dir, dir, dir)))))
local pid
for _ = 1, 100 do
  pid = tonumber((slurp(dir .. "/pid") or ""):match("%d+"))
  if pid then break end
  os.execute("sleep 0.05")
end
assert(pid, "the operator did not start")

local function alive() return slurp("/proc/" .. pid .. "/status") ~= nil end

local function sample()
  local st = slurp("/proc/" .. pid .. "/status")
  if not st then return nil end
  local rss = tonumber(st:match("VmRSS:%s*(%d+)"))
  local threads = tonumber(st:match("Threads:%s*(%d+)"))
  local p = io.popen("ls /proc/" .. pid .. "/fd 2>/dev/null | wc -l")
  local fds = tonumber(p:read("a"):match("%d+"))
  p:close()
  return rss, fds, threads
end

local function fail(msg)
  io.stderr:write("soak: ", msg, "\noperator stderr (tail):\n", (slurp(dir .. "/err") or ""):sub(-2000), "\n")
  os.execute("kill -KILL " .. pid .. " 2>/dev/null")
  sim:stop()
  os.exit(1)
end

-- wait until the operator runs (its first mirror appears)
assert(c:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
  metadata = { name = "soak-probe", namespace = NS, labels = { [LABEL] = "true" } }, data = { v = "0" } }))
local t_wait = core.monotime() + 30
while not c:get("v1/secrets", NS, "soak-probe") do
  if not alive() then fail("the operator exited at start") end
  if core.monotime() > t_wait then fail("the operator mirrored nothing within 30 s") end
  os.execute("sleep 0.1")
end

local out = assert(io.open(csv_path, "w"))
out:write("seconds,rss_kib,fds,threads,writes\n")
local samples = {}
local writes, x = 0, 2463534242
local function rnd(n) -- xorshift32, fixed seed: the same churn each run
  x = x ~ ((x << 13) & 0xffffffff); x = x ~ (x >> 17); x = x ~ ((x << 5) & 0xffffffff)
  return x % n
end
local t0 = core.monotime()
local next_sample, next_write = t0, t0
while true do
  local now = core.monotime()
  if now >= next_sample then
    local rss, fds, threads = sample()
    if not rss then fail(string.format("the operator died after %.0f s", now - t0)) end
    samples[#samples + 1] = { t = now - t0, rss = rss, fds = fds, threads = threads }
    out:write(string.format("%.1f,%d,%d,%d,%d\n", now - t0, rss, fds, threads, writes))
    out:flush()
    next_sample = next_sample + interval
  end
  if now - t0 >= duration then break end
  if now >= next_write then
    local name = string.format("soak-%03d", rnd(NAMES))
    local op = rnd(10)
    if op < 5 then
      local ok, _, code = c:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = name, namespace = NS, labels = { [LABEL] = "true" } }, data = { v = tostring(writes) } })
      if not ok and code == "AlreadyExists" then
        c:patch("v1/configmaps", NS, name, { data = { v = tostring(writes) } }, { type = "merge" })
      end
    elseif op < 8 then
      c:patch("v1/configmaps", NS, name, { data = { v = tostring(writes), w = string.rep("x", rnd(512)) } },
        { type = "merge" })
    else
      c:delete("v1/configmaps", NS, name)
    end
    writes = writes + 1
    next_write = next_write + 1 / rate
  end
  local wake = math.min(next_sample, next_write) - core.monotime()
  if wake > 0 then os.execute(string.format("sleep %.3f", wake)) end
end
out:close()

-- the mirror caught up: every labelled ConfigMap has its Secret, no Secret
-- without its ConfigMap
local function behind()
  local cms = assert(c:list("v1/configmaps", NS)).items
  local secrets = assert(c:list("v1/secrets", NS)).items
  local want, have = {}, {}
  for _, cm in ipairs(cms) do
    if cm.metadata.labels and cm.metadata.labels[LABEL] == "true" then want[cm.metadata.name] = true end
  end
  for _, s in ipairs(secrets) do
    if s.metadata.labels and s.metadata.labels["kinformer.io/mirror-of"] then have[s.metadata.name] = true end
  end
  local n = 0
  for k in pairs(want) do if not have[k] then n = n + 1 end end
  for k in pairs(have) do if not want[k] then n = n + 1 end end
  return n
end
local t_end = core.monotime() + 60
local lag = behind()
while lag > 0 and core.monotime() < t_end do
  os.execute("sleep 0.2")
  lag = behind()
end
if not alive() then fail("the operator died") end
os.execute("kill -TERM " .. pid)
for _ = 1, 300 do
  if not alive() then break end
  os.execute("sleep 0.1")
end
local err = slurp(dir .. "/err") or ""
os.execute("rm -rf " .. q(dir))
sim:stop()
if lag > 0 then fail(lag .. " ConfigMaps and Secrets still differ 60 s after the churn stopped") end

-- least-squares slope of RSS over time
local n, sx, sy, sxx, sxy = #samples, 0, 0, 0, 0
for _, s in ipairs(samples) do
  sx, sy, sxx, sxy = sx + s.t, sy + s.rss, sxx + s.t * s.t, sxy + s.t * s.rss
end
local slope = 0
if n >= 2 and n * sxx - sx * sx > 0 then slope = (n * sxy - sx * sy) / (n * sxx - sx * sx) end
local first, last = samples[1], samples[#samples]
local errors = 0
for line in err:gmatch("[^\n]+") do
  if line:find("^kinformer error") then errors = errors + 1 end
end
print(string.format("soak: %gs, %d writes (%g/s), %d samples every %gs -> %s", duration, writes, rate, n, interval,
  csv_path))
print(string.format("soak: RSS %d KiB -> %d KiB, slope %.1f KiB/hour; fds %d -> %d; threads %d -> %d; "
  .. "operator error lines %d", first.rss, last.rss, slope * 3600, first.fds, last.fds, first.threads,
  last.threads, errors))
