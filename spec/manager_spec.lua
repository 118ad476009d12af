-- The manager (lua/kinformer/manager.lua over kinformer.core.env): start
-- and cache sync, main-state handlers pumped by mgr:step, run until a
-- signal, stop; against kinformer.sim.
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"

local http = require "support.sim_http"

local function create_cm(sim, name, v)
  local _, code = http(sim, "POST", "/api/v1/namespaces/default/configmaps",
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name }, data = { v = v } })
  assert(code == 201, "create " .. name .. ": " .. tostring(code))
end

local function update_cm(sim, name, v)
  local path = "/api/v1/namespaces/default/configmaps/" .. name
  local obj = assert(http(sim, "GET", path))
  obj.data = { v = v }
  local _, code = http(sim, "PUT", path, obj)
  assert(code == 200)
end

local function delete_cm(sim, name)
  local _, code = http(sim, "DELETE", "/api/v1/namespaces/default/configmaps/" .. name)
  assert(code == 200)
end

-- Runs a Lua script in a fresh interpreter with this process's paths;
-- extra shell runs after it starts (with $pid set). Returns stdout, the log
-- (stderr) and the exit status.
local function run_lua(code, extra)
  return require("support.proc").run_lua(code, { env = "KINFORMER_LOG_LEVEL=2", extra = extra })
end

describe("kinformer.manager", function()
  local sim, mgr

  before_each(function()
    sim = assert(simmod.start{})
    mgr = assert(kinformer.manager{ sim = sim })
  end)

  after_each(function()
    mgr:stop()
    sim:stop()
  end)

  it("reports a kubeconfig it cannot load", function()
    local m, msg = kinformer.manager{ kubeconfig = "/nonexistent/kubeconfig" }
    assert.is_nil(m)
    assert.matches("/nonexistent/kubeconfig", msg, 1, true)
  end)

  it("starts, syncs, reports progress, and is idempotent to start and stop", function()
    create_cm(sim, "a", "1")
    local inf = assert(mgr:informer("v1/configmaps"))
    assert.are.equal("default", mgr.namespace)
    local progress
    assert.is_true(mgr:start{ timeout = 10, on_progress = function(p) progress = p end })
    assert.is_true(inf:has_synced())
    assert.are.equal(1, inf:len())
    assert.is_table(progress)
    assert.are.equal("v1/configmaps", progress[1].name)
    assert.is_true(mgr:start())
    mgr:stop()
    mgr:stop()
    local r, _, code = mgr:start()
    assert.is_nil(r)
    assert.are.equal("ECLOSED", code)
  end)

  it("shares one informer per resource and options", function()
    local a = assert(mgr:informer("v1/configmaps"))
    local b = assert(mgr:informer("v1/configmaps"))
    create_cm(sim, "a", "1")
    assert(mgr:start{ timeout = 10 })
    assert.is_true(mgr:wait_for(function() return a:len() == 1 end, 20))
    assert.are.equal(1, b:len())
    local c = assert(mgr:informer("v1/configmaps", { label_selector = "x=y" }))
    assert.are_not.equal(a:name(), c:name())
    assert.is_true(mgr:wait_for(function() return c:has_synced() end, 20))
    assert.are.equal(0, c:len())
    local bad, msg, code = mgr:informer("v1/nosuchthings")
    assert.is_nil(bad)
    assert.are.equal("ENOENT", code)
    assert.matches("nosuchthings", msg, 1, true)
  end)

  it("runs main-state handlers (closures allowed) only in mgr:step, in order", function()
    create_cm(sim, "a", "1")
    local inf = assert(mgr:informer("v1/configmaps"))
    local events = {}
    inf:add_handler({
      on_add = function(o, initial) events[#events + 1] = "add " .. o.metadata.name .. " " .. tostring(initial) end,
      on_update = function(old, new) events[#events + 1] = "update " .. old.data.v .. "->" .. new.data.v end,
      on_delete = function(o) events[#events + 1] = "delete " .. o.metadata.name .. " " .. o.data.v end,
    }, { main = true })
    assert(mgr:start{ timeout = 10 })
    -- the initial add reaches the main queue from the listener thread, maybe after start returned
    assert.is_true(mgr:wait_for(function() return #events == 1 end, 20))
    assert.are.same({ "add a true" }, events)
    events = {}
    update_cm(sim, "a", "2")
    create_cm(sim, "b", "1")
    delete_cm(sim, "b")
    os.execute("sleep 0.3")
    assert.are.same({}, events) -- nothing runs until the main state steps
    assert.is_true(mgr:wait_for(function() return #events == 3 end, 20))
    assert.are.same({ "update 1->2", "add b false", "delete b 1" }, events)
    assert.are.equal(0, mgr:step(0))
  end)

  it("delivers the initial list to main-state handlers with is_in_initial_list", function()
    create_cm(sim, "a", "1")
    local inf = assert(mgr:informer("v1/configmaps"))
    local events = {}
    inf:add_handler({ on_add = function(o, initial) events[#events + 1] = o.metadata.name .. " " .. tostring(initial) end },
      { main = true })
    assert(mgr:start{ timeout = 10 })
    assert.is_true(mgr:wait_for(function() return #events == 1 end, 20))
    assert.are.same({ "a true" }, events)
  end)

  it("stops main-state deliveries after remove_handler, also for queued events", function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local n = 0
    local h = inf:add_handler({ on_add = function() n = n + 1 end }, { main = true })
    assert(mgr:start{ timeout = 10 })
    create_cm(sim, "a", "1")
    -- wait without pumping the main state: the event stays queued there
    local core = require "kinformer.core"
    local deadline = core.monotime() + 20
    while h:stats().delivered < 1 and core.monotime() < deadline do os.execute("sleep 0.02") end
    assert.equal(1, h:stats().delivered)
    assert.equal(0, n)
    assert.is_true(inf:remove_handler(h))
    create_cm(sim, "b", "1")
    os.execute("sleep 0.3")
    mgr:step(0.1)
    assert.are.equal(0, n)
  end)

  it("logs a main-state handler's error with the key and a traceback, and runs the next event", function()
    local out, log = run_lua(string.format([[
      local mgr = assert(require("kinformer").manager{ url = %q })
      local inf = assert(mgr:informer("v1/configmaps"))
      local seen = {}
      inf:add_handler({ on_add = function(o)
        seen[#seen + 1] = o.metadata.name
        if o.metadata.name == "bad" then error("handler exploded") end
      end }, { main = true })
      assert(mgr:start{ timeout = 10 })
      local c = io.popen("curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{\"metadata\":{\"name\":\"bad\"}}' %s/api/v1/namespaces/default/configmaps; curl -s -o /dev/null -X POST -H 'Content-Type: application/json' -d '{\"metadata\":{\"name\":\"good\"}}' %s/api/v1/namespaces/default/configmaps")
      c:read("a"); c:close()
      assert(mgr:wait_for(function() return #seen == 2 end, 20))
      print(table.concat(seen, ","))
      mgr:stop()
    ]], sim.url, sim.url, sim.url))
    assert.are.equal("bad,good\n", out)
    assert.matches("on_add for default/bad failed", log, 1, true)
    assert.matches("handler exploded", log, 1, true)
    assert.matches("stack traceback", log, 1, true)
  end)

  it("times out waiting for sync with a message naming the unsynced informer", function()
    assert(mgr:informer("v1/configmaps"))
    local pods = assert(mgr:informer("v1/pods", { namespace = "default" }))
    sim:fault{ kind = "fail", code = 500, count = 100000 }
    local ok, msg, code = mgr:start{ timeout = 0.5 }
    assert.is_nil(ok)
    assert.are.equal("ETIMEDOUT", code)
    assert.matches("timed out waiting for caches to sync", msg, 1, true)
    assert.is_truthy(msg:find("v1/configmaps", 1, true) or msg:find("v1/pods in namespace default", 1, true))
    assert.is_false(pods:has_synced())
  end)

  it("defaults namespaced informers to the manager's namespace", function()
    local _, code = http(sim, "POST", "/api/v1/namespaces",
      { apiVersion = "v1", kind = "Namespace", metadata = { name = "team" } })
    assert.are.equal(201, code)
    local m = assert(kinformer.manager{ sim = sim, namespace = "team" })
    local cms = assert(m:informer("v1/configmaps"))
    local nss = assert(m:informer("v1/namespaces"))
    assert.matches("namespace=team", cms:name(), 1, true)
    assert.are.equal("v1/namespaces", nss:name())
    assert.are.equal("team", m.namespace)
    m:stop()
  end)

  it("runs until SIGTERM, then stops and returns", function()
    local out, log, rc = run_lua(string.format([[
      local mgr = assert(require("kinformer").manager{ url = %q })
      local inf = assert(mgr:informer("v1/configmaps"))
      inf:add_handler{ on_add = function() end }
      io.stdout:setvbuf("no")
      print("running")
      assert(mgr:run{ timeout = 10 })
      print("stopped", inf:has_synced())
    ]], sim.url), "sleep 1.5; kill -TERM $pid;")
    assert.are.equal(0, rc, log)
    assert.are.equal("running\nstopped\ttrue\n", out)
  end)

  it("takes SIGINT in mgr:run even when a sim, informers and controllers started threads before", function()
    local out, log, rc = run_lua([[
      local kinformer = require "kinformer"
      local sim = assert(require("kinformer.sim").start{})
      local mgr = assert(kinformer.manager{ sim = sim })
      local inf = assert(mgr:informer("v1/configmaps"))
      inf:add_handler{ on_add = function() end }
      mgr:controller{ ["for"] = "v1/secrets", workers = 2, reconciler = function() end }
      assert(mgr:start{ timeout = 10 })            -- every thread exists before run blocks signals
      io.stdout:setvbuf("no")
      print("running")
      assert(mgr:run())
      print("stopped")
      sim:stop()
    ]], "sleep 1.5; kill -INT $pid;")
    assert.are.equal(0, rc, log)
    assert.are.equal("running\nstopped\n", out)
  end)
end)

describe("kinformer.manager{url=, token=}", function()
  local sim
  before_each(function() sim = assert(simmod.start { token = "right-token" }) end)
  after_each(function() sim:stop() end)

  it("talks to the URL with the token without writing a kubeconfig", function()
    local tmpname, made = os.tmpname, 0
    os.tmpname = function() made = made + 1 return tmpname() end -- luacheck: ignore
    local ok, mgr = pcall(kinformer.manager, { url = sim.url, token = "right-token" })
    os.tmpname = tmpname -- luacheck: ignore
    assert.is_true(ok, mgr)
    assert.are.equal(0, made)
    assert(mgr, "no manager")
    assert.are.equal(sim.url, mgr.env:host())
    assert.are.equal("default", mgr.namespace)
    local r = assert(mgr.env:resource("v1/configmaps"))
    assert.are.equal("ConfigMap", r.kind)
    assert(mgr.client:create { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "by-url", namespace = "default" } })
    assert.are.equal("by-url", assert(mgr.client:get("v1/configmaps", "default", "by-url")).metadata.name)
    mgr:stop()
  end)

  it("core.env takes url, token, insecure and ca directly", function()
    local core = require "kinformer.core"
    local env = assert(core.env { url = sim.url, token = "right-token", insecure = true })
    assert(env:resource("v1/configmaps"))
    env:shutdown()
    env:close()
    local none, msg, code = core.env { url = sim.url, ca = "/nonexistent/kin-ca.pem" }
    assert.is_nil(none)
    assert.matches("option url: certificate-authority /nonexistent/kin-ca.pem", msg, 1, true)
    assert.are.equal("ENOENT", code)
    assert.has_error(function() core.env { token = "t" } end)
    assert.has_error(function() core.env { url = sim.url, kubeconfig = "/x" } end)
    assert.has_error(function() core.env { url = "" } end)
  end)
end)
