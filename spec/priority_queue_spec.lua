-- The controllers' priority queue (controller-runtime's priorityqueue,
-- csrc/core/workqueue): after a start, the initial list's requests wait
-- behind a fresh event (priority_queue = false: client-go's FIFO), and a
-- reconciler's result may give its requeue a priority.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local support_mgr = require "support.mgr"

local sim, tmpdir
local nmod = 0
local eventually = support_mgr.eventually

-- A reconciler module that works ~3 ms per request (so a backlog takes
-- time) and appends the request's name to its log.
local function module()
  nmod = nmod + 1
  local name = ("kin_prio_spec_m%d"):format(nmod)
  local log = ("%s/%s.log"):format(tmpdir, name)
  local f = assert(io.open(("%s/%s.lua"):format(tmpdir, name), "w"))
  f:write(([[
local LOG = %q
return function(req)
  local t = os.clock() + 0.003
  while os.clock() < t do end
  local f = assert(io.open(LOG, "a"))
  f:write(req.name, "\n")
  f:close()
end
]]):format(log))
  f:close()
  assert(io.open(log, "w")):close()
  return name, log
end

local function lines(log)
  local t = {}
  for l in io.lines(log) do t[#t + 1] = l end
  return t
end

local function index_of(t, v)
  for i, x in ipairs(t) do if x == v then return i end end
end

describe("priority queue", function()
  local mgr, ns
  setup(function()
    sim = assert(require("kinformer.sim").start {})
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    assert(os.execute("mkdir -p " .. tmpdir))
    package.path = tmpdir .. "/?.lua;" .. package.path
  end)
  teardown(function()
    if sim then sim:stop() end
    if tmpdir then os.execute("rm -rf " .. tmpdir) end
  end)
  before_each(function()
    mgr = assert(kinformer.manager { kubeconfig = sim.kubeconfig })
    ns = support_mgr.new_namespace(mgr, "prio")
  end)
  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
  end)

  -- 150 objects before the start, one created once the manager runs:
  -- returns the order the reconciler saw them in.
  local function run(priority_queue)
    local mod, log = module()
    for i = 1, 150 do
      assert(mgr.client:create("v1/configmaps",
        { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = ("old-%03d"):format(i) } }))
    end
    mgr:controller { name = "prio-" .. tostring(priority_queue), ["for"] = "v1/configmaps", reconciler = mod,
                     informer_opts = { namespace = ns }, priority_queue = priority_queue }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps",
      { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = "fresh" } }))
    eventually(mgr, function() return #lines(log) >= 151 end, 30, "151 reconciles")
    return lines(log)
  end

  it("reconciles a fresh event before the initial list's backlog", function()
    local order = run(nil)
    local at = assert(index_of(order, "fresh"))
    -- it came while the backlog of ~0.45 s was being worked through
    assert.is_true(at < 100, "fresh reconciled as #" .. at .. " of 151")
  end)

  it("is client-go's FIFO with priority_queue = false", function()
    local order = run(false)
    assert.equal(151, index_of(order, "fresh"))
  end)

  it("takes priority in a result, and refuses one that is no integer", function()
    assert.equal("requeue_after", (core.reconcile_result(true, { requeue_after = 1, priority = 10 })))
    local kind, msg = core.reconcile_result(true, { requeue_after = 1, priority = "high" })
    assert.equal("error", kind)
    assert.matches("bad priority", msg, 1, true)
    assert.has_error(function()
      mgr:controller { name = "bad", ["for"] = "v1/configmaps", reconciler = "x", priority_queue = "yes" }
    end)
  end)
end)
