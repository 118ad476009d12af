-- Controllers against kinformer.sim: For/Owns/Watches enqueue, predicates,
-- workers, requeue and error results, terminal errors, reconcile_once.
--
-- Reconcilers run in worker states, so they report through a log file:
-- each test writes a reconciler module (with the log path baked in) into a
-- temporary directory on package.path, which worker states inherit.
--
-- The tests that make the controller log errors on purpose run in a child
-- busted whose log is captured and asserted (spec/support/quiet.lua).
local kinformer = require "kinformer"
local support_mgr = require "support.mgr"
local quiet = require "support.quiet"

local sim
local tmpdir
local nmod = 0

local function sh(cmd) assert(os.execute(cmd)) end

-- Writes a module whose source is `body` with LOG (the log path) and rec
-- (appends a line) defined; returns its name and the log path.
local function module(body)
  nmod = nmod + 1
  local name = ("kin_ctl_spec_m%d"):format(nmod)
  local log = ("%s/%s.log"):format(tmpdir, name)
  local f = assert(io.open(("%s/%s.lua"):format(tmpdir, name), "w"))
  f:write(([[
local LOG = %q
local function rec(line)
  local f = assert(io.open(LOG, "a"))
  f:write(line, "\n")
  f:close()
end
]]):format(log), body)
  f:close()
  assert(io.open(log, "w")):close()
  return name, log
end

local function lines(log)
  local t = {}
  local f = io.open(log, "r")
  if not f then return t end
  for l in f:lines() do t[#t + 1] = l end
  f:close()
  return t
end

local function count(log, line)
  local n = 0
  for _, l in ipairs(lines(log)) do if l == line then n = n + 1 end end
  return n
end

-- Polls fn (pumping the manager) until it returns a true value.
local eventually = support_mgr.eventually

local function new_namespace(mgr) return support_mgr.new_namespace(mgr, "ctl") end

local function cm(ns, name, data, extra)
  local o = { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = name }, data = data or {} }
  for k, v in pairs(extra or {}) do o.metadata[k] = v end
  return o
end

local function deployment(ns, name, replicas)
  return {
    apiVersion = "apps/v1", kind = "Deployment",
    metadata = { namespace = ns, name = name, labels = { app = name } },
    spec = {
      replicas = replicas,
      selector = { matchLabels = { app = name } },
      template = { metadata = { labels = { app = name } },
                   spec = { containers = { { name = "c", image = "nginx" } } } },
    },
  }
end

describe("kinformer controller", function()
  local mgr, ns

  setup(function()
    sim = assert(require("kinformer.sim").start {})
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    sh("mkdir -p " .. tmpdir)
    package.path = tmpdir .. "/?.lua;" .. package.path
  end)

  teardown(function()
    if sim then sim:stop() end
    if tmpdir then sh("rm -rf " .. tmpdir) end
  end)

  before_each(function()
    mgr = assert(kinformer.manager { kubeconfig = sim.kubeconfig })
    ns = new_namespace(mgr)
  end)

  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
  end)

  local function start()
    assert(mgr:start { timeout = 30 })
  end

  it("For enqueues the object on create and on update", function()
    local mod, log = module [[return function(req, ctx) rec("R " .. req.key .. " " .. req.namespace .. " " .. req.name) end]]
    local ctl = mgr:controller { name = "for-cm", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    start()
    assert(mgr.client:create("v1/configmaps", cm(ns, "a", { x = "1" })))
    eventually(mgr, function() return count(log, ("R %s/a %s a"):format(ns, ns)) == 1 end, 10, "create")
    local obj = assert(mgr.client:get("v1/configmaps", ns, "a"))
    obj.data.x = "2"
    assert(mgr.client:update("v1/configmaps", obj))
    -- a reconcile is counted after it returned: wait for the count too
    eventually(mgr, function()
      return count(log, ("R %s/a %s a"):format(ns, ns)) == 2 and ctl:stats().reconcile_success >= 2
    end, 10, "update")
    assert.equal("for-cm", ctl:name())
    local st = ctl:stats()
    assert.is_true(st.reconcile_success >= 2)
    assert.equal(0, st.reconcile_errors)
  end)

  it("workers build the ctx with the constructor of the module the spec names", function()
    -- the C side names no Lua module: kinformer.controller passes spec.ctx
    local ctxmod = module [[return { for_request = function(env, controller, worker, req)
      return { custom = true, controller = controller, worker = worker, env = env }
    end }]]
    local mod, log = module [[return function(req, ctx)
      rec(("R %s %s %s %s"):format(req.key, tostring(ctx.custom), ctx.controller, type(ctx.env)))
    end]]
    local err = select(2, pcall(mgr.env.controller, mgr.env, { name = "no-ctx", reconciler = mod }))
    assert.matches("ctx (a module name) required", err, 1, true)
    local ud = mgr.env:controller { name = "own-ctx", ctx = ctxmod, reconciler = mod }
    assert(ud:start())
    ud:enqueue(ns, "x")
    eventually(mgr, function() return count(log, ("R %s/x true own-ctx userdata"):format(ns)) == 1 end,
      10, "reconciled with the spec's ctx")
    ud:close()
  end)

  it("Owns enqueues the owner of an owned object with a controller reference", function()
    local mod, log = module [[return function(req, ctx) rec("R " .. req.key) end]]
    mgr:controller { name = "owns", ["for"] = "v1/configmaps", owns = { "v1/secrets" },
                     reconciler = mod, informer_opts = { namespace = ns } }
    start()
    local owner = assert(mgr.client:create("v1/configmaps", cm(ns, "owner")))
    local key = ns .. "/owner"
    eventually(mgr, function() return count(log, "R " .. key) == 1 end, 10, "owner reconciled")
    local function secret(name, controller)
      return { apiVersion = "v1", kind = "Secret",
               metadata = { namespace = ns, name = name, ownerReferences = { {
                 apiVersion = "v1", kind = "ConfigMap", name = "owner", uid = owner.metadata.uid,
                 controller = controller } } } }
    end
    -- a plain owner reference does not count (OnlyControllerOwner); the
    -- barrier object's reconcile proves the event was already handled
    assert(mgr.client:create("v1/secrets", secret("plain", false)))
    assert(mgr.client:create("v1/configmaps", cm(ns, "barrier")))
    eventually(mgr, function() return count(log, "R " .. ns .. "/barrier") == 1 end, 10, "barrier")
    assert.equal(1, count(log, "R " .. key))
    assert(mgr.client:create("v1/secrets", secret("owned", true)))
    eventually(mgr, function() return count(log, "R " .. key) == 2 end, 10, "owner enqueued by owned")
    -- the owned object itself is never a request
    assert.equal(0, count(log, "R " .. ns .. "/owned"))
    assert.equal(0, count(log, "R " .. ns .. "/plain"))
  end)

  quiet.it(it, "watches with a map function enqueue what the function returns", {
    "kinformer error %[controller%] mapper: map v1/secrets for ctl%-%d+/s0 failed: [^\n]*map failed on purpose",
    "kinformer error %[listener%] v1/secrets in namespace ctl%-%d+: add handler failed for ctl%-%d+/s0",
  }, function()
    local mod, log = module [[return function(req, ctx) rec("R " .. req.key) end]]
    mgr:controller {
      name = "mapper", ["for"] = "v1/configmaps", reconciler = mod, informer_opts = { namespace = ns },
      watches = { { "v1/secrets", map = function(obj)
        local t = obj.metadata.labels and obj.metadata.labels.target
        if not t then return {} end
        if t == "boom" then error("map failed on purpose") end
        return { { namespace = obj.metadata.namespace, name = t }, { namespace = "elsewhere", name = t .. "-2" } }
      end } },
    }
    start()
    -- a map function that raises is logged; the listener goes on
    assert(mgr.client:create("v1/secrets", { apiVersion = "v1", kind = "Secret",
      metadata = { namespace = ns, name = "s0", labels = { target = "boom" } } }))
    assert(mgr.client:create("v1/secrets", { apiVersion = "v1", kind = "Secret",
      metadata = { namespace = ns, name = "s1", labels = { target = "mapped" } } }))
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/mapped") == 1 and count(log, "R elsewhere/mapped-2") == 1
    end, 10, "mapped requests")
    assert.equal(0, count(log, "R " .. ns .. "/s1"))
  end)

  it("generation_changed filters label-only and status-only changes", function()
    local mod, log = module [[return function(req, ctx) rec("R " .. req.key) end]]
    mgr:controller { name = "gen", ["for"] = "apps/v1/deployments", predicates = { "generation_changed" },
                     reconciler = mod, informer_opts = { namespace = ns } }
    start()
    local key = ns .. "/d"
    assert(mgr.client:create("apps/v1/deployments", deployment(ns, "d", 1)))
    eventually(mgr, function() return count(log, "R " .. key) == 1 end, 10, "create passes")
    assert(mgr.client:patch("apps/v1/deployments", ns, "d", { metadata = { labels = { extra = "yes" } } },
                            { type = "merge" }))
    assert(mgr.client:patch("apps/v1/deployments", ns, "d", { status = { observedGeneration = 1, replicas = 0 } },
                            { type = "merge", subresource = "status" }))
    -- barrier: events of one informer are delivered in order, one worker
    assert(mgr.client:create("apps/v1/deployments", deployment(ns, "barrier", 1)))
    eventually(mgr, function() return count(log, "R " .. ns .. "/barrier") == 1 end, 10, "barrier")
    assert.equal(1, count(log, "R " .. key))
    local d = assert(mgr.client:get("apps/v1/deployments", ns, "d"))
    assert.equal(1, d.metadata.generation)
    assert.equal("yes", d.metadata.labels.extra)
    assert(mgr.client:patch("apps/v1/deployments", ns, "d", { spec = { replicas = 3 } }, { type = "merge" }))
    eventually(mgr, function() return count(log, "R " .. key) == 2 end, 10, "spec change passes")
  end)

  it("enqueue_many adds every name of the array in one call", function()
    local mod, log = module [[
return function(req, ctx) rec("R " .. req.key) end]]
    local ctl = mgr:controller { name = "many", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    start()
    assert.is_true(ctl:enqueue_many(ns, { "m1", "m2", "m3" }))
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/m1") == 1 and count(log, "R " .. ns .. "/m2") == 1
        and count(log, "R " .. ns .. "/m3") == 1
    end, 10, "three reconciles")
    assert.has_error(function() ctl:enqueue_many(ns, "m1") end)
    assert.has_error(function() ctl:enqueue_many(ns, { "ok", "" }) end)
  end)

  it("with workers = 2 never reconciles one key concurrently", function()
    local mod, log = module [[
return function(req, ctx)
  rec("S " .. req.key)
  local t = os.clock() + 0.03
  while os.clock() < t do end
  rec("E " .. req.key)
end]]
    local ctl = mgr:controller { name = "par", ["for"] = "v1/configmaps", workers = 2, reconciler = mod,
                                 informer_opts = { namespace = ns } }
    start()
    local keys = { "k1", "k2", "k3" }
    local total = 0
    for _ = 1, 8 do
      for _, k in ipairs(keys) do
        assert(ctl:enqueue(ns, k))
      end
      -- re-add the same keys while they are being reconciled
      eventually(mgr, function() return #lines(log) > 0 end, 10, "first reconcile")
      mgr:step(0.01)
      for _, k in ipairs(keys) do assert(ctl:enqueue(ns, k)) end
      total = total + 1
    end
    eventually(mgr, function()
      local st = ctl:stats()
      return st.queue_len == 0 and st.active_workers == 0 and #lines(log) % 2 == 0 and #lines(log) > 0
        and count(log, "S " .. ns .. "/k1") == count(log, "E " .. ns .. "/k1")
    end, 20, "idle")
    local in_flight, busy, max_busy = {}, 0, 0
    for _, l in ipairs(lines(log)) do
      local what, key = l:match("^(%u) (.*)$")
      if what == "S" then
        assert.is_nil(in_flight[key], "key reconciled concurrently: " .. key)
        in_flight[key] = true
        busy = busy + 1
        if busy > max_busy then max_busy = busy end
      else
        assert.is_true(in_flight[key], "end without start: " .. key)
        in_flight[key] = nil
        busy = busy - 1
      end
    end
    assert.equal(2, max_busy) -- two workers did run at once, on different keys
    assert.equal(2, ctl:stats().max_concurrent_reconciles)
  end)

  it("requeue_after and requeue reconcile again", function()
    local mod, log = module [[
local n = {}
return function(req, ctx)
  n[req.key] = (n[req.key] or 0) + 1
  rec("R " .. req.key .. " " .. n[req.key])
  if n[req.key] >= 3 then return end
  if req.name == "after" then return { requeue_after = 0.05 } end
  return { requeue = true }
end]]
    local ctl = mgr:controller { name = "requeue", ["for"] = "v1/configmaps", reconciler = mod,
                                 rate_limiter = { base_delay = 0.01, max_delay = 1 },
                                 informer_opts = { namespace = ns } }
    start()
    local t0 = os.time()
    ctl:enqueue(ns, "after")
    ctl:enqueue(ns, "again")
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/after 3") == 1 and count(log, "R " .. ns .. "/again 3") == 1
        and ctl:stats().reconcile_success == 2 -- counted after the reconcile returned
    end, 10, "three reconciles each")
    local st = ctl:stats()
    assert.equal(2, st.reconcile_requeue_after)
    assert.equal(2, st.reconcile_requeue)
    assert.equal(2, st.reconcile_success)
    assert.is_true(os.time() - t0 < 10)
  end)

  it("on a fake clock, requeue_after and a requeue's backoff fire when mgr:clock_advance passes them", function()
    local mod, log = module [[
local n = {}
return function(req, ctx)
  n[req.key] = (n[req.key] or 0) + 1
  rec(req.name .. " " .. n[req.key])
  if req.name == "every" then return { requeue_after = 30 } end
  if n[req.key] == 1 then return { requeue = true } end
end]]
    local fmgr <close> = assert(kinformer.manager { kubeconfig = sim.kubeconfig, clock = "fake" })
    assert.same({ 0, "fake" }, { fmgr:clock_now() })
    assert.equal("real", select(2, mgr:clock_now()))
    local ctl = fmgr:controller { name = "fake-clock", ["for"] = "v1/configmaps", reconciler = mod,
                                  rate_limiter = { base_delay = 10, max_delay = 10 },
                                  informer_opts = { namespace = ns } }
    assert(mgr.client:create("v1/configmaps", cm(ns, "every")))
    assert(mgr.client:create("v1/configmaps", cm(ns, "retry")))
    assert(fmgr:start { timeout = 30 })
    -- both wait: the requeue 10 s (base_delay), the requeue_after 30 s
    local due = eventually(fmgr, function()
      local items, next_due = ctl:queue()
      return #items == 2 and items[1].state == "waiting" and items[2].state == "waiting" and next_due
    end, 10, "both keys waiting")
    assert.near(10, due, 1e-6)
    fmgr:step(0.3) -- real time passes: nothing fires
    assert.same({ "every 1", "retry 1" }, (function() local t = lines(log) table.sort(t) return t end)())
    assert.near(9.9, fmgr:clock_advance(9.9), 1e-9)
    fmgr:step(0.2)
    assert.equal(2, #lines(log))
    fmgr:clock_advance(0.1)
    eventually(fmgr, function() return count(log, "retry 2") == 1 end, 10, "the requeue's retry")
    local _, next_due = ctl:queue()
    assert.near(20, next_due, 1e-6)
    fmgr:clock_advance(20)
    eventually(fmgr, function() return count(log, "every 2") == 1 end, 10, "the first requeue_after")
    -- its next requeue_after is due 30 s from when the reconcile returned:
    -- advance only once it is queued
    eventually(fmgr, function()
      local items, due_in = ctl:queue()
      return #items == 1 and items[1].state == "waiting" and due_in and math.abs(due_in - 30) < 1e-6
    end, 10, "every waiting 30 s")
    fmgr:clock_advance(30)
    eventually(fmgr, function() return count(log, "every 3") == 1 end, 10, "the second requeue_after")
    assert.same({ "every 2", "every 3" }, { lines(log)[4], lines(log)[5] })
    assert.near(60, fmgr:clock_now(), 1e-9)
    assert.has_error(function() mgr:clock_advance(1) end)
    assert.has_error(function() kinformer.manager { kubeconfig = sim.kubeconfig, clock = "slow" } end)
    fmgr:stop()
  end)

  quiet.it(it, "retries an error with backoff until it succeeds", {
    "kinformer error %[controller%] retry%-raise: Reconciler error for ctl%-%d+/raise: [^\n]*boom 3",
    "kinformer error %[controller%] retry%-ret: Reconciler error for ctl%-%d+/ret: failed 3",
  }, function()
    local mod, log = module [[
local n = 0
return function(req, ctx)
  n = n + 1
  rec("R " .. req.key .. " " .. n)
  if req.name == "raise" and n <= 3 then error("boom " .. n) end
  if req.name == "ret" and n <= 3 then return nil, "failed " .. n end
end]]
    local function make(name)
      return mgr:controller { name = "retry-" .. name, ["for"] = "v1/configmaps", reconciler = mod,
                              rate_limiter = { base_delay = 0.02, max_delay = 1 },
                              informer_opts = { namespace = ns } }
    end
    local raise_ctl, ret_ctl = make("raise"), make("ret")
    start()
    raise_ctl:enqueue(ns, "raise")
    ret_ctl:enqueue(ns, "ret")
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/raise 4") == 1 and count(log, "R " .. ns .. "/ret 4") == 1
        and raise_ctl:stats().reconcile_success == 1 and ret_ctl:stats().reconcile_success == 1
    end, 10, "four attempts each")
    local a, b = raise_ctl:stats(), ret_ctl:stats()
    assert.equal(3, a.reconcile_errors)
    assert.equal(3, a.reconcile_panics)
    assert.equal(1, a.reconcile_success)
    assert.equal(3, b.reconcile_errors)
    assert.equal(0, b.reconcile_panics)
    assert.equal(1, b.reconcile_success)
    -- no fifth attempt: success forgets the key
    assert.equal(0, count(log, "R " .. ns .. "/raise 5"))
  end)

  quiet.it(it, "does not retry a terminal error, raised or returned", {
    "kinformer error %[controller%] terminal: Reconciler error for ctl%-%d+/raised %(terminal%): terminal error: no way",
    "kinformer error %[controller%] terminal: Reconciler error for ctl%-%d+/returned %(terminal%): terminal error: never",
  }, function()
    local mod, log = module [[
local kinformer = require "kinformer"
local n = {}
return function(req, ctx)
  n[req.key] = (n[req.key] or 0) + 1
  rec("R " .. req.key .. " " .. n[req.key])
  if req.name == "raised" then error(kinformer.terminal("no way")) end
  if req.name == "returned" then return nil, kinformer.terminal("never") end
  if req.name == "barrier" and n[req.key] == 1 then return { requeue_after = 0.3 } end
end]]
    local ctl = mgr:controller { name = "terminal", ["for"] = "v1/configmaps", reconciler = mod,
                                 rate_limiter = { base_delay = 0.01, max_delay = 0.05 },
                                 informer_opts = { namespace = ns } }
    start()
    ctl:enqueue(ns, "raised")
    ctl:enqueue(ns, "returned")
    ctl:enqueue(ns, "barrier")
    -- the barrier's second reconcile comes 0.3 s later: a retry (10 ms
    -- backoff) of either terminal key would have happened by then
    eventually(mgr, function() return count(log, "R " .. ns .. "/barrier 2") == 1 end, 10, "barrier")
    assert.equal(1, count(log, "R " .. ns .. "/raised 1"))
    assert.equal(0, count(log, "R " .. ns .. "/raised 2"))
    assert.equal(1, count(log, "R " .. ns .. "/returned 1"))
    assert.equal(0, count(log, "R " .. ns .. "/returned 2"))
    local st = ctl:stats()
    assert.equal(2, st.terminal_reconcile_errors)
    assert.equal(0, st.reconcile_panics)
  end)

  quiet.it(it, "keeps the worker alive when the reconciler raises", {
    "kinformer error %[controller%] raiser: Reconciler error for ctl%-%d+/bad: [^\n]*attempt to index a nil value",
  }, function()
    local mod, log = module [[
return function(req, ctx)
  rec("R " .. req.key)
  if req.name == "bad" then local t = nil; return t.field end
end]]
    local ctl = mgr:controller { name = "raiser", ["for"] = "v1/configmaps", reconciler = mod, workers = 1,
                                 rate_limiter = { base_delay = 5, max_delay = 10 },
                                 informer_opts = { namespace = ns } }
    start()
    ctl:enqueue(ns, "bad")
    eventually(mgr, function() return ctl:stats().reconcile_panics == 1 end, 10, "panic counted")
    ctl:enqueue(ns, "good")
    -- the log line is written inside the reconcile, the stat after it returns
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/good") == 1 and ctl:stats().reconcile_success == 1
    end, 10, "next request")
    local st = ctl:stats()
    assert.equal(1, st.reconcile_success)
    assert.equal(1, st.reconcile_errors)
  end)

  quiet.it(it, "rebuilds a worker state that runs out of memory and keeps reconciling", {
    "kinformer warn %[worker%] controller oom worker %d+: the Lua state ran out of memory",
    "kinformer error %[controller%] oom: Reconciler error for ctl%-%d+/hog: not enough memory",
  }, function()
    local mod, log = module [[
local n = 0
return function(req, ctx)
  n = n + 1
  rec("R " .. req.key .. " " .. n)
  if req.name == "hog" then
    local t = {}
    for i = 1, 1e8 do t[i] = ("x"):rep(64) .. i end
  end
end]]
    local ctl = mgr:controller { name = "oom", ["for"] = "v1/configmaps", reconciler = mod, workers = 1,
                                 memory_limit = 8 * 1024 * 1024,
                                 rate_limiter = { base_delay = 5, max_delay = 10 },
                                 informer_opts = { namespace = ns } }
    start()
    ctl:enqueue(ns, "hog")
    eventually(mgr, function() return ctl:stats().reconcile_errors == 1 end, 20, "out of memory")
    ctl:enqueue(ns, "after")
    -- module-level state started over: the counter is 1 again in the new state
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/after 1") == 1 and ctl:stats().reconcile_success == 1
    end, 10, "rebuilt state")
    assert.equal(1, ctl:stats().reconcile_success)
  end)

  it("runs a closure reconciler: its local helpers, constant and config table travel with it", function()
    local PREFIX = "derived-"
    local config = { labels = { team = "blue" }, copy = { "x", "y" }, tier = 2, ratio = 0.5 }
    config.self = config
    local function derived(name) return PREFIX .. name end
    local function pick(data)
      local out = {}
      for _, k in ipairs(config.copy) do out[k] = data and data[k] end
      return out
    end
    local seen = 0 -- each worker counts in its own copy
    local ctl = mgr:controller { name = "closure", ["for"] = "v1/configmaps", workers = 1,
                                 informer_opts = { namespace = ns },
                                 reconciler = function(req, ctx)
      if req.name:sub(1, #PREFIX) == PREFIX then return end
      local src = ctx.client:get("v1/configmaps", req.namespace, req.name)
      if not src then return end
      seen = seen + 1
      config.tier = config.tier + 1 -- a change stays in this worker's copy
      local data = pick(src.data)
      data.tier = ("%s %d"):format(math.type(config.tier), config.tier)
      data.ratio = ("%s %s"):format(math.type(config.ratio), config.ratio)
      data.self = tostring(config.self == config)
      data.seen = tostring(seen)
      local _, err, code = ctx.client:create { apiVersion = "v1", kind = "ConfigMap",
        metadata = { namespace = req.namespace, name = derived(req.name), labels = config.labels }, data = data }
      if err and code ~= "AlreadyExists" then return nil, err end
    end }
    start()
    assert(mgr.client:create("v1/configmaps", cm(ns, "a", { x = "1", y = "2", z = "3" })))
    local d = eventually(mgr, function() return mgr.client:get("v1/configmaps", ns, "derived-a") end, 10, "derived-a")
    assert.same({ x = "1", y = "2", tier = "integer 3", ratio = "float 0.5", self = "true", seen = "1" }, d.data)
    assert.same({ team = "blue" }, d.metadata.labels)
    assert(mgr.client:create("v1/configmaps", cm(ns, "b", { x = "4" })))
    d = eventually(mgr, function() return mgr.client:get("v1/configmaps", ns, "derived-b") end, 10, "derived-b")
    assert.same({ x = "4", tier = "integer 4", ratio = "float 0.5", self = "true", seen = "2" }, d.data)
    -- the main state's values are untouched
    assert.equal(0, seen)
    assert.equal(2, config.tier)
    assert.equal(0, ctl:stats().reconcile_errors)
  end)

  it("refuses a reconciler whose upvalues cannot be sent, naming every one", function()
    local inf = assert(mgr:informer("v1/configmaps"))
    local co = coroutine.create(function() end)
    local fine = { "copied" }
    local ok, err = pcall(mgr.controller, mgr, { name = "bad", ["for"] = "v1/configmaps",
      reconciler = function(_req, _ctx) return mgr, fine, inf, co end })
    assert.is_false(ok)
    assert.matches("controller bad: reconciler: cannot send to worker threads: " ..
      -- of several, the nearest offender (ties: the first path in byte order)
      "upvalue 'mgr' (mgr.client is a kinformer.client userdata), upvalue 'inf' (a kinformer.informer userdata), " ..
      "upvalue 'co' (a coroutine); a reconciler runs in its own Lua state: use ctx.client / ctx.listers " ..
      "instead of the manager, its informers and clients, or require a module inside the function",
      tostring(err), 1, true)
    assert.is_nil(tostring(err):find("fine", 1, true))
    assert.is_nil(mgr:controllers().bad)
  end)

  it("a map function closes over a local table and a helper", function()
    local mod, log = module [[return function(req, ctx) rec("R " .. req.key) end]]
    local targets = { web = { "web-a", "web-b" }, db = { "db" } }
    local function requests(ns_, names)
      local out = {}
      for i, n in ipairs(names) do out[i] = { namespace = ns_, name = n } end
      return out
    end
    mgr:controller {
      name = "map-closure", ["for"] = "v1/configmaps", reconciler = mod, informer_opts = { namespace = ns },
      watches = { { "v1/secrets", map = function(obj)
        local app = obj.metadata.labels and obj.metadata.labels.app
        return requests(obj.metadata.namespace, targets[app] or {})
      end } },
    }
    start()
    assert(mgr.client:create("v1/secrets", { apiVersion = "v1", kind = "Secret",
      metadata = { namespace = ns, name = "s", labels = { app = "web" } } }))
    eventually(mgr, function()
      return count(log, "R " .. ns .. "/web-a") == 1 and count(log, "R " .. ns .. "/web-b") == 1
    end, 10, "mapped requests")
    assert.equal(0, count(log, "R " .. ns .. "/db"))
  end)

  it("refuses bad configs with a message naming the field", function()
    local function fails(cfg, pat)
      local ok, err = pcall(mgr.controller, mgr, cfg)
      assert.is_false(ok)
      assert.matches(pat, tostring(err), 1, true)
    end
    fails({ name = "x", ["for"] = "v1/configmaps" }, "reconciler required")
    local r = function() end
    fails({ name = "x", ["for"] = "v1/configmaps", reconciler = r, predicates = { "bogus_changed" } },
          "unknown predicate 'bogus_changed'")
    fails({ name = "x", ["for"] = "v1/configmaps", reconciler = r, predicates = { { label_selector = "a in (" } } },
          "bad label_selector")
    fails({ name = "x", ["for"] = "v1/configmaps", reconciler = r, workers = 0 }, "workers")
  end)

  it("refuses a reconciler module that is missing or has no reconcile, at the user's line", function()
    local ok, err = pcall(mgr.controller, mgr, { name = "missing", ["for"] = "v1/configmaps",
                                                reconciler = "kin_ctl_spec_no_such_module" })
    assert.is_false(ok)
    assert.matches("^spec/controller_spec.lua:%d+: controller: reconciler module 'kin_ctl_spec_no_such_module' "
      .. "not found; searched package.path:\n\t", err)
    assert.matches("\tlua/?.lua\n", err, 1, true) -- the templates searched, one per line
    local mod = module "return { reconsile = function() end }"
    ok, err = pcall(mgr.controller, mgr, { name = "typo", ["for"] = "v1/configmaps", reconciler = mod })
    assert.is_false(ok)
    assert.matches("spec/controller_spec.lua:%d+: controller: reconciler module '" .. mod
      .. "' returns a table without a function 'reconcile'", err)
    mod = module "error('boom at load')"
    ok, err = pcall(mgr.controller, mgr, { name = "boom", ["for"] = "v1/configmaps", reconciler = mod })
    assert.is_false(ok)
    assert.matches("controller: reconciler module '" .. mod .. "' failed to load: .*boom at load", err)
  end)

  quiet.it(it, "names the cause when a worker cannot start, never an errno", {
    "kinformer error %[controller%] controller onlymain worker %d+: .*only loads in the main state",
    "kinformer error %[controller%] onlymain: worker %d+ failed to start: invalid argument or malformed input %(EINVAL%)",
  }, function()
    -- loads in the main state (so mgr:controller takes it), fails in the workers'
    local mod = module [[
if not KIN_CTL_SPEC_MAIN then error("this module only loads in the main state") end
return { reconcile = function() end }]]
    _G.KIN_CTL_SPEC_MAIN = true
    mgr:controller { name = "onlymain", ["for"] = "v1/configmaps", reconciler = mod,
                     informer_opts = { namespace = ns } }
    _G.KIN_CTL_SPEC_MAIN = nil
    local ok, err = mgr:start { timeout = 30 }
    assert.is_nil(ok)
    assert.matches("controller onlymain: a worker failed to start: .*only loads in the main state", err)
  end)

  it("enqueues by (ns, name), \"ns/name\", \"name\" for a cluster-scoped For, or a request table", function()
    local ctl = mgr:controller { name = "nsed", ["for"] = "v1/namespaces", reconciler = function() end }
    local cms = mgr:controller { name = "cms", ["for"] = "v1/configmaps", reconciler = function() end,
                                 informer_opts = { namespace = ns } }
    for _, k in ipairs { "team-a" } do assert(ctl:enqueue(k)) end
    assert(ctl:enqueue({ metadata = { name = "team-b" } }))
    assert(cms:enqueue(ns .. "/a"))
    assert(cms:enqueue(ns, "b"))
    assert(cms:enqueue({ namespace = ns, name = "c" }))
    local keys = {}
    for _, it_ in ipairs(ctl:queue()) do keys[#keys + 1] = it_.key end
    table.sort(keys)
    assert.same({ "team-a", "team-b" }, keys)
    keys = {}
    for _, it_ in ipairs(cms:queue()) do keys[#keys + 1] = it_.key end
    table.sort(keys)
    assert.same({ ns .. "/a", ns .. "/b", ns .. "/c" }, keys)
    -- a bare name for a namespaced For: an error at the caller's line saying what to give
    local ok, err = pcall(function() local r = cms:enqueue("a"); return r end)
    assert.is_false(ok)
    assert.matches('^spec/controller_spec.lua:%d+: ctl:enqueue%("a"%): v1/configmaps is namespaced: give '
      .. '"namespace/name" or %(namespace, name%)', err)
    ok, err = pcall(function() local r = cms:enqueue(42); return r end)
    assert.is_false(ok)
    assert.matches("^spec/controller_spec.lua:%d+: ctl:enqueue: want %(namespace, name%)", err)
  end)

  it("reconcile_once runs the reconciler in the calling state", function()
    local mod = module [[
local kinformer = require "kinformer"
return { reconcile = function(req, ctx)
  KIN_CTL_SPEC_ONCE = req.key
  local obj = ctx.client:get("v1/configmaps", req.namespace, req.name)
  if req.name == "raise" then error("exploded") end
  if req.name == "terminal" then return nil, kinformer.terminal("stop") end
  if req.name == "retry" then return nil, "try later" end
  if obj then return { requeue_after = 7 } end
end }]]
    local ctl = mgr:controller { name = "once", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    start()
    assert(mgr.client:create("v1/configmaps", cm(ns, "there")))
    KIN_CTL_SPEC_ONCE = nil
    assert.same({ requeue_after = 7 }, ctl:reconcile_once { namespace = ns, name = "there" })
    assert.equal(ns .. "/there", KIN_CTL_SPEC_ONCE) -- ran here, in the main state
    assert.equal(true, ctl:reconcile_once { namespace = ns, name = "absent" })
    local r, err = ctl:reconcile_once { namespace = ns, name = "raise" }
    assert.is_nil(r)
    assert.matches("exploded", err, 1, true)
    assert.matches("traceback", err, 1, true)
    r, err = ctl:reconcile_once { namespace = ns, name = "terminal" }
    assert.is_nil(r)
    assert.is_true(kinformer.is_terminal(err))
    r, err = ctl:reconcile_once { namespace = ns, name = "retry" }
    assert.is_nil(r)
    assert.equal("try later", err)
    KIN_CTL_SPEC_ONCE = nil
  end)

  it("stats reports controller-runtime's counters", function()
    local mod = module [[return function() end]]
    local ctl = mgr:controller { name = "stats", ["for"] = "v1/configmaps", reconciler = mod, workers = 3,
                                 informer_opts = { namespace = ns } }
    start()
    for i = 1, 5 do ctl:enqueue(ns, "s" .. i) end
    eventually(mgr, function() return ctl:stats().reconcile_success == 5 end, 10, "five reconciles")
    local st = ctl:stats()
    assert.equal(3, st.max_concurrent_reconciles)
    assert.equal(5, st.reconcile_time_count)
    assert.equal(0, st.reconcile_errors)
    assert.equal(0, st.reconcile_errors)
    assert.equal(0, st.terminal_reconcile_errors)
    assert.equal("number", type(st.reconcile_time_sum_seconds))
    assert.equal(0, ctl:queue_len())
  end)

  it("logs a raised error once, with the controller, the key and the traceback", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
      local kinformer = require "kinformer"
      local sim <close> = assert(require("kinformer.sim").start{})
      local mgr = assert(kinformer.manager{ sim = sim })
      assert(mgr.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "x", namespace = "default" } })
      local ctl = mgr:controller{ name = "logs", ["for"] = "v1/configmaps",
        rate_limiter = { base_delay = 10, max_delay = 10 },
        reconciler = function(req) error("cannot reconcile " .. req.name) end }
      assert(mgr:start{ timeout = 10 })
      assert(mgr:wait_for(function() return ctl:stats().reconcile_errors >= 1 end, 10))
      mgr:stop()
    ]])
    f:close()
    local p = assert(io.popen("lua5.4 " .. script .. " 2>&1"))
    local out = p:read("a")
    local ok = p:close()
    os.remove(script)
    assert.is_true(ok, out)
    local nlines = 0
    for _ in out:gmatch("%[controller%] logs: Reconciler error for default/x:") do nlines = nlines + 1 end
    assert.equal(1, nlines, out)
    assert.matches("Reconciler error for default/x: [^\n]*cannot reconcile x\nstack traceback:", out)
  end)
end)
