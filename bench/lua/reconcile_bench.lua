--- make bench-lua, reconcile rate: a kinformer controller whose reconciler
-- is a trivial Lua function (returns nothing: done), run by
-- `workers` worker threads, each in its own worker state.
--
--   lua5.4 bench/lua/reconcile_bench.lua --kubeconfig K --keys M --workers N
--          [--for v1/secrets] [--timeout S] [--metrics 1]
--
-- --metrics 1: the same with metrics on as an operator deploys them: the
-- /metrics endpoint served (metrics_bind, a free port), a user counter
-- incremented by every reconcile, and /metrics scraped every second
-- during the run (as Prometheus would, but 15x as often) by a curl
-- process, so the scrape's collection contends with the workers.
--
-- The controller is For a resource with no objects in the sim, so nothing
-- but the benchmark enqueues; once it runs, the main state enqueues M
-- distinct requests with one ctl:enqueue_many (a C loop, as the C event handlers) and
-- polls ctl:stats().reconcile_success every millisecond until it reaches M.
-- The time is from the first enqueue to that poll. Prints one JSON line.
local common = require "bench.lua.common"
local kinformer = require "kinformer"

local a = common.args(arg, { ["for"] = "v1/secrets", workers = "1", timeout = "300", poll = "0.001",
                              metrics = "0" })
local with_metrics = a.metrics == "1"
local keys = assert(tonumber(a.keys), "--keys M required")
local workers = assert(tonumber(a.workers))
local timeout = tonumber(a.timeout)
local r = { client = "kinformer-lua", version = kinformer._VERSION, mode = "controller",
            keys = keys, workers = workers, metrics = with_metrics }

local function fail(msg)
  r.error = tostring(msg)
  common.emit(r)
  os.exit(1)
end

local mgr, err = kinformer.manager { kubeconfig = a.kubeconfig, log_level = "warn",
                                    metrics_bind = with_metrics and "127.0.0.1:0" or nil }
if not mgr then fail(err) end
local ok, ctl, cerr = pcall(mgr.controller, mgr, {
  name = "bench",
  ["for"] = a["for"],
  workers = workers,
  reconciler = with_metrics and function(req, ctx)
    -- registered once per worker state (the same metric), then one add
    local c = BENCH_COUNTER
    if not c then
      c = require("kinformer.metrics").counter{ name = "bench_reconciles_total", help = "Reconciles." }
      BENCH_COUNTER = c
    end
    c:inc()
  end or function(req, ctx) end,
})
if not ok then fail(ctl) end
if not ctl then fail(cerr) end
local sok, serr = mgr:start { timeout = timeout }
if not sok then fail(serr) end
-- One request first, outside the clock: the workers are up and their
-- worker states built (the Go side does the same).
ctl:enqueue("bench", "warm-up")
if not common.poll(function() return ctl:stats().reconcile_success >= 1 end, 0.001, timeout) then
  fail("the warm-up reconcile did not finish")
end
local before = ctl:stats().reconcile_success
r.reconcile_success_before = before

-- Names are made before the clock starts, as the informer would have them.
local names = {}
for i = 1, keys do names[i] = "obj-" .. (i - 1) end

-- the scraper: a background curl loop, killed after the run
local scraper
if with_metrics then
  local pidfile = os.tmpname()
  os.execute(("(while curl -s -o /dev/null http://127.0.0.1:%d/metrics; do sleep 1; done) >/dev/null 2>&1 & echo $! > %s")
    :format(mgr:metrics_port(), pidfile))
  local f = io.open(pidfile)
  scraper = f and tonumber(f:read("l"))
  if f then f:close() end
  os.remove(pidfile)
end

-- One call: the C loop of ctl:enqueue_many adds them (as the informers'
-- C event handlers would), so a Lua loop in the main state is not what is
-- timed while the workers drain the queue.
local t0 = common.monotime()
local eok, eerr = ctl:enqueue_many("bench", names)
if not eok then fail(eerr) end
local enq_ms = (common.monotime() - t0) * 1000
local target = before + keys
local st
local every = tonumber(a.poll)
local done = common.poll(function()
  st = ctl:stats()
  return st.reconcile_success >= target
end, every, timeout)
local t1 = common.monotime()
r.reconcile_success = st.reconcile_success - before
r.reconcile_errors = st.reconcile_errors
r.enqueue_ms = enq_ms
r.poll_ms = every * 1000
r.rss_kib = common.rss_kib()
if scraper then os.execute("kill " .. scraper .. " 2>/dev/null") end
if with_metrics then
  local text = require("kinformer.metrics").render()
  r.counted = tonumber(text:match("\nbench_reconciles_total (%d+)"))
  if r.counted ~= keys + 1 then r.error = ("bench_reconciles_total %s, want %d"):format(tostring(r.counted), keys + 1) end
end
mgr:stop()
if not done then fail(("%d of %d reconciles within %s s"):format(r.reconcile_success, keys, timeout)) end
r.ms = (t1 - t0) * 1000
if st.reconcile_errors > 0 then r.error = st.reconcile_errors .. " reconcile error(s)" end
common.emit(r)
