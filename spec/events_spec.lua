-- Kubernetes Events from kinformer (csrc/core/events, csrc/lua/levent.c):
-- ctx:event in a controller's reconcile and mgr:event_recorder in main
-- state code write events.k8s.io/v1 Events (core v1 ones where the server
-- has no events.k8s.io), read back here with the Events API of
-- kinformer.sim: type, reason, note, regarding, reportingController,
-- series count; with kubectl when it is installed.
local kinformer = require "kinformer"
local support_mgr = require "support.mgr"
local ctxmod = require "kinformer.ctx"

local eventually = support_mgr.eventually

local function new_namespace(mgr) return support_mgr.new_namespace(mgr, "ev") end

local function cm(ns, name)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = name }, data = { k = "v" } }
end

-- The Events of resource in ns, by reason (the last one of each).
local function events(mgr, resource, ns)
  local l = assert(mgr.client:list(resource, ns))
  local by = {}
  for _, e in ipairs(l.items) do by[e.reason] = e end
  return by, #l.items
end

-- kubectl, when installed (the e2e tier's cache or $KUBECTL), else nil.
local function kubectl_path()
  local candidates = { os.getenv("KUBECTL") or "",
                       (os.getenv("HOME") or "") .. "/.cache/kinformer-e2e/v1.36.3/bin/kubectl" }
  for _, p in ipairs(candidates) do
    if p ~= "" then
      local f = io.open(p, "r")
      if f then f:close() return p end
    end
  end
end

local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("a")
  local ok = p:close()
  return ok, out
end

describe("events", function()
  local sim, mgr, ns

  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
    if sim then sim:stop() end
    sim = nil
  end)

  local function start(opts)
    sim = assert(require("kinformer.sim").start(opts or {}))
    mgr = assert(kinformer.manager { kubeconfig = sim.kubeconfig, events = { instance = "spec-host" } })
    ns = new_namespace(mgr)
  end

  it("ctx:event in a reconcile writes events.k8s.io/v1 Events, repeats counted into a series", function()
    start()
    mgr:controller {
      name = "cm-events", ["for"] = "v1/configmaps", informer_opts = { namespace = ns },
      reconciler = function(req, ctx)
        local obj = ctx.listers["v1/configmaps"]:get(req.key)
        if not obj then return end
        assert(ctx:event(obj, "Normal", "Seen", "saw " .. req.name))
        assert(ctx:event(obj, "Normal", "Seen", "saw " .. req.name))
        assert(ctx:event(obj, "Warning", "Odd", "odd " .. req.name, "Check"))
        -- the helper style is refused with a message naming the right one
        local ok, err = pcall(ctx.event, obj, "Normal", "X", "y")
        if ok or not tostring(err):find("call it as ctx:event", 1, true) then
          error("ctx.event did not raise: " .. tostring(err))
        end
      end,
    }
    assert(mgr:start { timeout = 30 })
    local created = assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    local by
    eventually(mgr, function()
      by = events(mgr, "events.k8s.io/v1/events", ns)
      return by.Seen and by.Odd and by.Seen.series and by.Seen.series.count == 2
    end, 15, "the Seen event with a series of 2 and the Odd event")
    local seen = by.Seen
    assert.equal("Normal", seen.type)
    assert.equal("saw a", seen.note)
    assert.equal("Seen", seen.action)
    assert.equal("cm-events", seen.reportingController)
    assert.equal("spec-host", seen.reportingInstance)
    assert.equal("ConfigMap", seen.regarding.kind)
    assert.equal("v1", seen.regarding.apiVersion)
    assert.equal(ns, seen.regarding.namespace)
    assert.equal("a", seen.regarding.name)
    assert.equal(created.metadata.uid, seen.regarding.uid)
    assert.is_string(seen.regarding.resourceVersion)
    assert.matches("^%d+%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d%d%d%dZ$", seen.eventTime)
    assert.equal("Warning", by.Odd.type)
    assert.equal("Check", by.Odd.action)
    assert.equal("odd a", by.Odd.note)
    assert.is_nil(by.Odd.series)
  end)

  it("mgr:event_recorder writes from main-state code; flush and stats", function()
    start()
    local rec = mgr:event_recorder("main-code")
    local obj = assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    for _ = 1, 3 do assert(rec:event(obj, "Normal", "Touched", "touched b")) end
    assert(rec:flush(10))
    local st = rec:stats()
    assert.equal("events.k8s.io/v1", st.api)
    assert.equal(3, st.queued)
    assert.equal(1, st.created)
    assert.equal(2, st.patched)
    assert.equal(0, st.failed)
    local by, n = events(mgr, "events.k8s.io/v1/events", ns)
    assert.equal(1, n)
    assert.equal("main-code", by.Touched.reportingController)
    assert.equal(3, by.Touched.series.count)
    assert.equal(obj.metadata.uid, by.Touched.regarding.uid)
    -- misuse raises
    assert.has_error(function() rec:event(obj, "Info", "R", "m") end)
    assert.has_error(function() rec:event({ kind = "ConfigMap" }, "Normal", "R", "m") end)
    assert.has_error(function() mgr:event_recorder("") end)
    -- a ctx made in the main state has the same method
    local ctx = ctxmod.new(mgr.env, { controller = "main-ctx" })
    assert(ctx:event(obj, "Normal", "ByCtx", "from a ctx"))
    assert.has_error(function() ctx.event(obj, "Normal", "ByCtx", "x") end,
                     "ctx.event(...): call it as ctx:event(obj, type, reason, message)")
    assert(rec:flush(10))
    by = events(mgr, "events.k8s.io/v1/events", ns)
    assert.equal("main-ctx", by.ByCtx.reportingController)
  end)

  it("falls back to core v1 Events when the server has no events.k8s.io/v1", function()
    start { legacy_events = true }
    local rec = mgr:event_recorder("legacy")
    local obj = assert(mgr.client:create("v1/configmaps", cm(ns, "c")))
    assert(rec:event(obj, "Warning", "Broken", "c is broken"))
    assert(rec:event(obj, "Warning", "Broken", "c is broken"))
    assert(rec:flush(10))
    assert.equal("v1", rec:stats().api)
    local by, n = events(mgr, "v1/events", ns)
    assert.equal(1, n)
    local e = by.Broken
    assert.equal("Warning", e.type)
    assert.equal("c is broken", e.message)
    assert.equal(2, e.count)
    assert.equal("legacy", e.source.component)
    assert.equal("spec-host", e.source.host)
    assert.equal("ConfigMap", e.involvedObject.kind)
    assert.equal(obj.metadata.uid, e.involvedObject.uid)
    assert.matches("^%d+%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", e.firstTimestamp)
    assert.is_true(e.lastTimestamp >= e.firstTimestamp)
  end)

  local kubectl = kubectl_path()
  local kit = kubectl and it or pending
  -- kinformer.sim serves no server-side Tables, so kubectl get prints
  -- NAME and AGE only: the columns are asked for; kubectl describe and
  -- kubectl events read core v1 Events (the sim keeps the two groups apart,
  -- docs/sim.md), hence the legacy_events sim for them.
  kit("kubectl get events / describe / events show them", function()
    start()
    local rec = mgr:event_recorder("kubectl-spec")
    local obj = assert(mgr.client:create("v1/configmaps", cm(ns, "d")))
    assert(rec:event(obj, "Normal", "Shown", "shown by kubectl"))
    assert(rec:flush(10))
    local cols = "TYPE:.type,REASON:.reason,OBJECT:.regarding.name,NOTE:.note,FROM:.reportingController"
    local ok, out = run(("%s --kubeconfig %s get events.events.k8s.io -n %s -o custom-columns=%s"):format(
      kubectl, sim.kubeconfig, ns, cols))
    assert(ok, out)
    assert.matches("Normal%s+Shown%s+d%s+shown by kubectl%s+kubectl%-spec", out)
    mgr:stop()
    mgr = nil
    sim:stop()
    start { legacy_events = true }
    rec = mgr:event_recorder("kubectl-spec")
    obj = assert(mgr.client:create("v1/configmaps", cm(ns, "e")))
    assert(rec:event(obj, "Warning", "ShownToo", "legacy shown"))
    assert(rec:event(obj, "Warning", "ShownToo", "legacy shown"))
    assert(rec:flush(10))
    ok, out = run(("%s --kubeconfig %s describe configmap e -n %s"):format(kubectl, sim.kubeconfig, ns))
    assert(ok, out)
    assert.matches("Warning%s+ShownToo%s+.-%(x2 over .-%)%s+kubectl%-spec%s+legacy shown", out)
    ok, out = run(("%s --kubeconfig %s events -n %s"):format(kubectl, sim.kubeconfig, ns))
    assert(ok, out)
    assert.matches("Warning%s+ShownToo%s+ConfigMap/e%s+legacy shown", out)
  end)
end)
