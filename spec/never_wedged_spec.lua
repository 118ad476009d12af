-- Issue 12, "never wedged": reconcile_timeout (a count hook interrupts Lua,
-- a REST call is cut at the deadline), the busy-worker warning, and a
-- shutdown that always ends (shutdown_timeout, a second signal).
--
-- Each scenario runs in a fresh interpreter (or bin/kinformer) so that its
-- log lines land in a captured stderr and are asserted, not printed.
local kinformer = require "kinformer"
local proc = require "support.proc"

-- run_lua(code): stdout, stderr and exit status of code in a fresh lua5.4
local slurp, run_lua = proc.slurp, proc.run_lua

-- Exit times are printed with KIN_SPEC_VERBOSE=1.
local function note(...)
  if os.getenv("KIN_SPEC_VERBOSE") then print(string.format(...)) end
end

local function count(s, pat)
  local n = 0
  for _ in s:gmatch(pat) do n = n + 1 end
  return n
end

-- bin/kinformer looks in build/release, so the CLI runs get our
-- kinformer.core through LUA_CPATH.
local cpath_env = proc.paths_env

describe("reconcile_timeout", function()
  it("interrupts reconcilers that never return, counts, logs and retries them; other keys still run", function()
    local out, err, rc = run_lua [[
      local kinformer = require "kinformer"
      local sim <close> = assert(require("kinformer.sim").start{})
      local mgr = assert(kinformer.manager{ sim = sim, reconcile_timeout = 0.5 })
      local function cm(name)
        assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
          metadata = { name = name, namespace = "default" } })
      end
      cm("loop"); cm("catch")
      local ctl = mgr:controller{ name = "spin", ["for"] = "v1/configmaps", workers = 2,
        rate_limiter = { base_delay = 0.2, max_delay = 0.2 },
        reconciler = function(req)
          -- module-level state survives an interruption (the state is not rebuilt)
          RUNS = (RUNS or 0) + 1
          if req.name == "loop" then while true do end end
          if req.name == "catch" then
            -- catching the interruption does not keep it running
            while true do pcall(function() while true do end end) end
          end
        end }
      assert(mgr:start{ timeout = 10 })
      -- both workers are stuck before the other keys exist
      assert(mgr:wait_for(function() return #ctl:busy() == 2 end, 20), "both workers busy")
      local t0 = kinformer.core.monotime()
      for i = 1, 3 do cm("ok" .. i) end
      assert(mgr:wait_for(function() return ctl:stats().reconcile_success >= 3 end, 10), "ok keys reconciled")
      print(string.format("ok keys after %.3f", kinformer.core.monotime() - t0))
      -- retried with the backoff, and interrupted again
      assert(mgr:wait_for(function() return ctl:stats().reconcile_timeouts >= 4 end, 10), "retried")
      -- read once the workers are joined: a timeout is counted just before
      -- its error, so a read in between would see one more timeout
      ctl:stop(1)
      local st = ctl:stats()
      print("timeouts", st.reconcile_timeouts, "panics", st.reconcile_panics, "errors", st.reconcile_errors)
      mgr:stop()
    ]]
    assert.equal(0, rc, err)
    local secs = tonumber(out:match("ok keys after ([%d.]+)"))
    assert.is_true(secs < 3, out)
    local timeouts, panics, errors = out:match("timeouts\t(%d+)\tpanics\t(%d+)\terrors\t(%d+)")
    assert.is_true(tonumber(timeouts) >= 4, out)
    assert.equal(0, tonumber(panics), out)
    assert.is_true(tonumber(errors) >= tonumber(timeouts), out)
    -- one line per interruption, with controller, key, limit and duration
    assert.matches('%[controller%] controller "spin": reconcile of "default/loop" exceeded '
      .. 'reconcile_timeout 0%.5s %(ran [%d.]+s%); interrupted at ', err)
    assert.matches('reconcile of "default/catch" exceeded reconcile_timeout 0%.5s', err)
    assert.equal(tonumber(timeouts), count(err, "exceeded reconcile_timeout"), err)
    -- no traceback dump, no "Reconciler error" line besides ours
    assert.equal(0, count(err, "Reconciler error"), err)
    -- the worker states were not rebuilt
    assert.equal(0, count(err, "built a new one"), err)
  end)

  it("cuts a REST call that is still waiting at the deadline", function()
    local out, err, rc = run_lua [[
      local kinformer = require "kinformer"
      local sim <close> = assert(require("kinformer.sim").start{})
      local mgr = assert(kinformer.manager{ sim = sim })
      assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "slow", namespace = "default" } })
      local ctl = mgr:controller{ name = "slowrest", ["for"] = "v1/configmaps", workers = 1,
        reconcile_timeout = 0.5, rate_limiter = { base_delay = 30, max_delay = 30 },
        reconciler = function(req, ctx)
          local core = require "kinformer.core"
          local t0 = core.monotime()
          local obj, msg, code = ctx.client:get("v1/configmaps", req.namespace, req.name)
          io.stderr:write(string.format("get returned %s %s after %.3f\n",
            tostring(obj ~= nil), tostring(code), core.monotime() - t0))
          if not obj then return nil, msg end
        end }
      assert(mgr:start{ timeout = 10 })
      -- the watch is open: from now on every request waits 5 s
      sim:fault{ kind = "latency", ms = 5000 }
      local t0 = kinformer.core.monotime()
      ctl:enqueue("default", "slow")
      assert(mgr:wait_for(function() return ctl:stats().reconcile_timeouts == 1 end, 10))
      print(string.format("timed out after %.3f", kinformer.core.monotime() - t0))
      sim:fault{ kind = "latency", ms = 0 }
      mgr:stop()
    ]]
    assert.equal(0, rc, err)
    local after = tonumber(err:match("get returned false %S+ after ([%d.]+)"))
    assert.is_not_nil(after, err)
    assert.is_true(after >= 0.45 and after < 1.5, err)
    assert.is_true(tonumber(out:match("timed out after ([%d.]+)")) < 2, out)
    assert.matches('controller "slowrest": reconcile of "default/slow" exceeded reconcile_timeout 0%.5s '
      .. '%(ran 0%.%d+s%); interrupted %(in a REST call%)', err)
  end)

  it("rejects a bad reconcile_timeout", function()
    local sim = assert(require("kinformer.sim").start{})
    local mgr = assert(kinformer.manager{ sim = sim })
    local ok, msg = pcall(mgr.controller, mgr, { name = "bad", ["for"] = "v1/configmaps",
      reconciler = function() end, reconcile_timeout = -1 })
    assert.is_false(ok)
    assert.matches("reconcile_timeout", msg)
    mgr:stop()
    sim:stop()
  end)
end)

describe("kinformer run --shutdown-timeout", function()
  it("is parsed and checked", function()
    local cli = require "kinformer.cmd.cli"
    assert.equal(5, assert(cli.parse { "run", "x.lua", "--shutdown-timeout", "5" }).shutdown_timeout)
    assert.equal(0.5, assert(cli.parse { "run", "x.lua", "--shutdown-timeout=0.5" }).shutdown_timeout)
    local o, msg = cli.parse { "run", "x.lua", "--shutdown-timeout", "soon" }
    assert.is_nil(o)
    assert.matches("--shutdown-timeout must be a number", msg, 1, true)
    assert.matches("--shutdown-timeout S", cli.usage, 1, true)
  end)
end)

describe("busy-worker warning", function()
  it("warns once when every worker is stuck, naming the keys; mgr:stop interrupts them", function()
    local out, err, rc = run_lua [[
      local kinformer = require "kinformer"
      local sim <close> = assert(require("kinformer.sim").start{})
      local mgr = assert(kinformer.manager{ sim = sim, busy_warning_after = 0.3, shutdown_timeout = 0.5 })
      assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "stuck", namespace = "default" } })
      local ctl = mgr:controller{ name = "busy", ["for"] = "v1/configmaps", workers = 1,
        reconciler = function() while true do end end }
      assert(mgr:start{ timeout = 10 })
      local t = kinformer.core.monotime()
      while kinformer.core.monotime() - t < 1.2 do mgr:step(0.05) end
      local t0 = kinformer.core.monotime()
      mgr:stop()
      print(string.format("stopped after %.3f interrupts %d", kinformer.core.monotime() - t0,
        ctl:stats().reconcile_interrupts))
    ]]
    assert.equal(0, rc, err)
    assert.equal(1, count(err, "all 1 workers busy"), err)
    assert.matches('%[controller%] controller "busy": all 1 workers busy for more than 0%.3s, nothing else '
      .. 'is reconciled: "default/stuck" %(0%.%ds%)', err)
    local secs, n = out:match("stopped after ([%d.]+) interrupts (%d+)")
    assert.is_true(tonumber(secs) < 1.5, out)
    assert.equal("1", n)
    assert.matches('reconcile of "default/stuck" still running when shutdown_timeout passed', err)
  end)
end)

describe("shutdown", function()
  local op

  setup(function()
    op = os.tmpname()
    local f = assert(io.open(op, "w"))
    f:write [[
      local mgr = ...
      for i = 1, 4 do
        assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
          metadata = { name = "c" .. i, namespace = "default" } })
      end
      mgr:controller{ name = "spin", ["for"] = "v1/configmaps", workers = 2,
        reconcile_timeout = tonumber(os.getenv("KIN_SPEC_RT")),
        reconciler = function() while true do end end }
      return { on_start = function() io.stderr:write("READY\n") end }
    ]]
    f:close()
  end)

  teardown(function() os.remove(op) end)

  -- Runs `kinformer run op --sim args`, waits for READY, runs signals (a
  -- shell snippet with $pid) and times from the first signal to the exit.
  -- Returns status, seconds, stderr.
  local function run_cli(args, signals, env)
    local errf = os.tmpname()
    local sh = string.format([[
%s %s bin/kinformer run %s --sim %s 2>%s & pid=$!
for i in $(seq 200); do grep -q READY %s && break; sleep 0.05; done
sleep 0.3
t0=$(date +%%s.%%N); %s; wait $pid; rc=$?; t1=$(date +%%s.%%N)
echo "$rc $t0 $t1"]], cpath_env(), env or "", op, args, errf, errf, signals)
    local p = assert(io.popen(sh))
    local rc, t0, t1 = p:read("a"):match("(%d+) ([%d.]+) ([%d.]+)")
    p:close()
    return tonumber(rc), tonumber(t1) - tonumber(t0), slurp(errf)
  end

  it("SIGTERM interrupts reconcilers that never return after shutdown_timeout and exits 0", function()
    local rc, secs, err = run_cli("--shutdown-timeout 1", "kill -TERM $pid")
    note("[never_wedged] SIGTERM, no reconcile_timeout, shutdown_timeout 1: exit %d after %.3f s",
      rc, secs)
    assert.equal(0, rc, err)
    assert.is_true(secs >= 0.9 and secs < 1 + 2, err)
    assert.matches("SIGTERM: stopping; waiting up to 1s", err)
    assert.equal(2, count(err, "still running when shutdown_timeout passed"), err)
    assert.matches("kinformer: stopped", err)
  end)

  it("SIGTERM with reconcile_timeout set exits within shutdown_timeout", function()
    local rc, secs, err = run_cli("--shutdown-timeout 1", "kill -TERM $pid", "KIN_SPEC_RT=0.3")
    note("[never_wedged] SIGTERM, reconcile_timeout 0.3, shutdown_timeout 1: exit %d after %.3f s",
      rc, secs)
    assert.equal(0, rc, err)
    assert.is_true(secs < 1 + 2, err)
    assert.matches("exceeded reconcile_timeout 0.3s", err, 1, true)
    assert.matches("kinformer: stopped", err)
  end)

  it("a second signal exits at once, non-zero, naming what it abandoned", function()
    local rc, secs, err = run_cli("--shutdown-timeout 30", "kill -TERM $pid; sleep 0.3; kill -INT $pid")
    note("[never_wedged] SIGTERM then SIGINT, shutdown_timeout 30: exit %d after %.3f s", rc, secs)
    assert.equal(130, rc, err)
    assert.is_true(secs < 2, err)
    assert.matches('kinformer: second signal %(SIGINT%): exiting at once, abandoning reconciles in flight: '
      .. 'controller "spin": "default/c%d" %([%d.]+s%), "default/c%d" %([%d.]+s%)', err)
    assert.is_nil(err:match("kinformer: stopped"), err)
  end)

  it("mgr:run() behaves the same: the second SIGTERM exits at once with status 143", function()
    local errf = os.tmpname()
    local script = proc.write_tmp(proc.paths_prologue() .. [[
      local kinformer = require "kinformer"
      kinformer.core.block_signals()
      local sim = assert(require("kinformer.sim").start{})
      local mgr = assert(kinformer.manager{ sim = sim })
      assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "x", namespace = "default" } })
      local ctl = mgr:controller{ name = "run", ["for"] = "v1/configmaps",
        reconciler = function() while true do end end }
      assert(mgr:start{ timeout = 10 })
      assert(mgr:wait_for(function() return #ctl:busy() == 1 end, 20))
      io.stderr:write("READY\n")
      mgr:run()
      io.stderr:write("run returned\n")
    ]])
    local p = assert(io.popen(string.format([[
lua5.4 %s 2>%s & pid=$!
for i in $(seq 200); do grep -q READY %s && break; sleep 0.05; done
t0=$(date +%%s.%%N); kill -TERM $pid; sleep 0.3; kill -TERM $pid; wait $pid; rc=$?; t1=$(date +%%s.%%N)
echo "$rc $t0 $t1"]], script, errf, errf)))
    local rc, t0, t1 = p:read("a"):match("(%d+) ([%d.]+) ([%d.]+)")
    p:close()
    os.remove(script)
    local err = slurp(errf)
    local secs = tonumber(t1) - tonumber(t0)
    note("[never_wedged] mgr:run, SIGTERM twice, shutdown_timeout 30: exit %s after %.3f s", rc, secs)
    assert.equal(143, tonumber(rc), err)
    assert.is_true(secs < 2, err)
    assert.matches('second signal %(SIGTERM%): exiting at once, abandoning reconciles in flight: '
      .. 'controller "run": "default/x"', err)
    assert.is_nil(err:match("run returned"), err)
  end)
end)
