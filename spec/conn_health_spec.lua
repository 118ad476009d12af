-- Connection health options (issue 12, "never blind"): read_idle_timeout,
-- ping_timeout and watch_idle_timeout on kinformer.manager{...} and per
-- informer; against kinformer.sim (HTTP/1.1, where
-- the watch idle timeout is the guard; the HTTP/2 probe is covered by
-- spec/c/test_e2e_stall.c).
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"
local proc = require "support.proc"

describe("connection health options", function()
  local sim, mgr

  before_each(function()
    sim = assert(simmod.start{})
  end)

  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
    sim:stop()
  end)

  it("are accepted on the manager, fractions included", function()
    mgr = assert(kinformer.manager{ sim = sim, read_idle_timeout = 2.5, ping_timeout = 0.5,
                                    watch_idle_timeout = 120 })
    local inf = assert(mgr:informer("v1/configmaps"))
    assert.is_true(mgr:start{ timeout = 10 })
    assert.is_true(inf:has_synced())
    -- math.huge: never
    local m2 = assert(kinformer.manager{ sim = sim, read_idle_timeout = math.huge,
                                         watch_idle_timeout = math.huge })
    m2:stop()
  end)

  it("are accepted per informer and reach the engine's health check", function()
    mgr = assert(kinformer.manager{ sim = sim })
    local hc = mgr:connection_health()
    assert.are.equal(30, hc.read_idle_timeout)
    assert.are.equal(15, hc.ping_timeout)
    assert.are.equal(0.25, hc.check_interval)
    local a = assert(mgr:informer("v1/configmaps", { read_idle_timeout = 0.75, ping_timeout = 3 }))
    local b = assert(mgr:informer("v1/configmaps", { label_selector = "x=y", ping_timeout = 0.5 }))
    assert.is_true(mgr:start{ timeout = 10 })
    assert.is_true(a:has_synced() and b:has_synced())
    -- while both watches run the engine checks with the smallest of each
    -- (a's read-idle, b's ping), every eighth of the smaller
    assert.is_true(mgr:wait_for(function()
      hc = mgr:connection_health()
      return hc.read_idle_timeout == 0.75 and hc.ping_timeout == 0.5
    end, 5), ("connection_health: read_idle_timeout %s, ping_timeout %s"):format(
      hc.read_idle_timeout, hc.ping_timeout))
    assert.is_true(math.abs(hc.check_interval - 0.0625) < 0.002, tostring(hc.check_interval))
    assert.are.equal(0, hc.probes) -- HTTP/1.1: never probed
    -- math.huge: this informer wants no probe; the manager's still apply
    local c = assert(mgr:informer("v1/configmaps", { label_selector = "c=d",
                                                     read_idle_timeout = math.huge }))
    assert.is_true(mgr:wait_for(function() return c:has_synced() end, 20))
  end)

  it("re-establish a stalled watch after watch_idle_timeout (manager default, informer override)", function()
    -- In a child interpreter, whose log (stderr) is read back: the sim
    -- stalls every watch for 1.5 s, so each informer gives up its watch
    -- after its own idle timeout, says so, and still gets the object.
    local out, log = proc.run_lua [[
      local kinformer = require "kinformer"
      local sim = assert(require("kinformer.sim").start{})
      local http = require "support.sim_http"
      local mgr = assert(kinformer.manager{ sim = sim, watch_idle_timeout = 0.4 })
      local a = assert(mgr:informer("v1/configmaps"))
      local b = assert(mgr:informer("v1/configmaps", { label_selector = "x=y", watch_idle_timeout = 0.25 }))
      assert(mgr:start{ timeout = 10 })
      sim:fault{ kind = "stall", ms = 1500 }
      local _, code = http(sim, "POST", "/api/v1/namespaces/default/configmaps",
        { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "s", labels = { x = "y" } } })
      assert(code == 201)
      assert(mgr:wait_for(function() return a:len() == 1 and b:len() == 1 end, 10))
      mgr:stop()
      sim:stop()
      print("ok")
    ]]
    assert.are.equal("ok\n", out, log)
    assert.matches("v1/configmaps: no byte on the watch for 400 ms", log, 1, true)
    assert.matches("with labels x=y: no byte on the watch for 250 ms", log, 1, true)
  end)

  it("reject misuse with a message naming the option", function()
    local function err_of(f)
      local ok, e = pcall(f)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.matches("option 'read_idle_timeout' must be >= 0",
      err_of(function() kinformer.manager{ sim = sim, read_idle_timeout = -1 } end), 1, true)
    assert.matches("option 'ping_timeout' must be a number",
      err_of(function() kinformer.manager{ sim = sim, ping_timeout = "15s" } end), 1, true)
    assert.matches("option 'watch_idle_timeout' must be >= 0",
      err_of(function() kinformer.manager{ sim = sim, watch_idle_timeout = 0/0 } end), 1, true)
    mgr = assert(kinformer.manager{ sim = sim })
    assert.matches("option 'watch_idle_timeout' must be a number",
      err_of(function() mgr:informer("v1/configmaps", { watch_idle_timeout = true }) end), 1, true)
    assert.matches("option 'watch_idle_timeout' must be >= 0",
      err_of(function() mgr:informer("v1/configmaps", { watch_idle_timeout = -0.5 }) end), 1, true)
    assert.matches("option 'read_idle_timeout' must be >= 0",
      err_of(function() mgr:informer("v1/configmaps", { read_idle_timeout = -1 }) end), 1, true)
    assert.matches("option 'ping_timeout' must be a number",
      err_of(function() mgr:informer("v1/configmaps", { ping_timeout = "2s" }) end), 1, true)
    assert.matches('unknown option "ping_timout" to mgr:informer (did you mean "ping_timeout"?)',
      err_of(function() mgr:informer("v1/configmaps", { ping_timout = 1 }) end), 1, true)
  end)
end)
