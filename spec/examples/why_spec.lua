-- ctl:why(key): the per-key history of a controller (what enqueued the
-- key, the predicates' verdicts, each reconcile with its result and
-- writes), against kinformer.sim, or the real kube-apiserver under `make
-- e2e-lua` (spec/examples/helper.lua's target).
--
-- Reconcilers run in worker states, so each test writes its reconciler
-- module into a temporary directory on package.path. The test whose
-- reconciler fails on purpose runs in a child busted (support.quiet) that
-- captures the error line.
local kinformer = require "kinformer"
local h = require "examples.helper"
local quiet = require "support.quiet"

local esc = h.esc
local tmpdir
local nmod = 0

local function module(body)
  nmod = nmod + 1
  local name = ("kin_why_spec_m%d"):format(nmod)
  local f = assert(io.open(("%s/%s.lua"):format(tmpdir, name), "w"))
  f:write(body)
  f:close()
  return name
end

local function cm(ns, name, data, labels)
  return { apiVersion = "v1", kind = "ConfigMap",
           metadata = { namespace = ns, name = name, labels = labels }, data = data or {} }
end

-- The printed history of key, once it has a line matching each pattern.
local function why_until(mgr, ctl, key, patterns)
  local text
  local ok = mgr:wait_for(function()
    text = tostring(assert(ctl:why(key)))
    for _, p in ipairs(patterns) do
      if not text:find(p) then return false end
    end
    return true
  end, h.TIMEOUT)
  assert(ok, "history of " .. key .. " never matched; it is:\n" .. tostring(text))
  return text
end

describe("ctl:why", function()
  local t, ns, mgr

  setup(function()
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    assert(os.execute("mkdir -p " .. tmpdir))
    package.path = tmpdir .. "/?.lua;" .. package.path
    t = h.target()
    ns = h.namespace(t, "why")
  end)

  teardown(function()
    if t then
      if ns then h.cleanup_namespace(t, ns, { "v1/configmaps", "v1/secrets" }) end
      t.stop()
    end
    if tmpdir then os.execute("rm -rf " .. tmpdir) end
  end)

  before_each(function()
    mgr = assert(kinformer.manager { kubeconfig = t.kubeconfig })
  end)

  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
  end)

  it("tells an add, its reconcile's writes and requeue_after, an update, an owner event and a manual enqueue", function()
    local mod = module [[
return function(req, ctx)
  if req.name ~= "web" then return end
  local _, _, code = ctx.client:get("v1/secrets", req.namespace, "web-secret")
  if code == "NotFound" then
    local cm = assert(ctx.client:get("v1/configmaps", req.namespace, req.name))
    assert(ctx.client:create("v1/secrets", { apiVersion = "v1", kind = "Secret",
      metadata = { namespace = req.namespace, name = "web-secret", ownerReferences = { {
        apiVersion = "v1", kind = "ConfigMap", name = req.name, uid = cm.metadata.uid,
        controller = true } } } }))
  end
  return { requeue_after = 30 }
end]]
    local ctl = mgr:controller { name = "why-web", ["for"] = "v1/configmaps", owns = { "v1/secrets" },
                                 reconciler = mod, informer_opts = { namespace = ns } }
    assert(mgr:start { timeout = 30 })
    local key = ns .. "/web"
    local made = assert(t.client:create("v1/configmaps", cm(ns, "web", { a = "1" })))
    local rv1 = made.metadata.resourceVersion
    local text = why_until(mgr, ctl, key, {
      "enqueued: add %(resourceVersion " .. rv1 .. "%)",
      "reconcile #%d+ started %(worker 1%)",
      "reconcile #%d+ done in [%d.]+ [mu]?s: requeue_after 30s; writes: POST /api/v1/namespaces/"
        .. esc(ns) .. "/secrets 201",
      "enqueued: owner %(add of %S+ " .. esc(ns) .. "/web%-secret%)",
    })
    -- lines start with a wall-clock time
    for line in text:gmatch("[^\n]+") do assert.truthy(line:match("^%d%d:%d%d:%d%d%.%d%d%d "), line) end

    local obj = assert(t.client:get("v1/configmaps", ns, "web"))
    obj.data.a = "2"
    local upd = assert(t.client:update("v1/configmaps", obj))
    why_until(mgr, ctl, key, {
      "enqueued: update %(resourceVersion " .. rv1 .. " %-> " .. upd.metadata.resourceVersion .. "%)" })
    assert(ctl:enqueue(ns, "web"))
    why_until(mgr, ctl, key, { "enqueued: manual" })

    -- the list form
    local hist = assert(ctl:why(key))
    local first = hist[1]
    assert.same({ "event", "add", true }, { first.type, first.cause, first.enqueued })
    assert.is_number(first.time)
    local rec
    for _, e in ipairs(hist) do
      if e.type == "reconcile" and #e.writes > 0 then rec = e end
    end
    assert.truthy(rec, tostring(hist))
    assert.same({ "requeue_after", 30, 1, 1 }, { rec.result, rec.after, rec.worker, rec.nwrites })
    assert.same({ "POST", "/api/v1/namespaces/" .. ns .. "/secrets", 201 },
      { rec.writes[1].method, rec.writes[1].path, rec.writes[1].code })
    assert.is_true(rec.duration >= 0)
    -- a table key and an unknown key
    assert.is_true(#assert(ctl:why { namespace = ns, name = "web" }) >= #hist)
    assert.equal("(no history)", tostring(assert(ctl:why(ns .. "/nothing-here"))))
    assert.has_error(function() ctl:why(42) end)
  end)

  it("tells which predicate dropped an update", function()
    local mod = module [[return function(req, ctx) end]]
    local ctl = mgr:controller { name = "why-pred", ["for"] = "v1/configmaps", predicates = { "label_changed" },
                                 reconciler = mod, informer_opts = { namespace = ns } }
    assert(mgr:start { timeout = 30 })
    local key = ns .. "/pred"
    local made = assert(t.client:create("v1/configmaps", cm(ns, "pred", { a = "1" }, { x = "1" })))
    why_until(mgr, ctl, key, { "enqueued: add %(resourceVersion %d+; predicates: labels_changed passed%)",
                               "done in [^\n]*: success" })
    made.data.a = "2"
    local upd = assert(t.client:update("v1/configmaps", made))
    why_until(mgr, ctl, key, { "dropped: update %(resourceVersion " .. made.metadata.resourceVersion .. " %-> "
      .. upd.metadata.resourceVersion .. "; predicates: labels_changed dropped%)" })
    upd.metadata.labels.x = "2"
    assert(t.client:update("v1/configmaps", upd))
    local text = why_until(mgr, ctl, key, { "predicates: labels_changed passed%)\n[^\n]*reconcile #%d+ started" })
    local dropped = assert(ctl:why(key))
    local n = 0
    for _, e in ipairs(dropped) do
      if e.type == "event" and not e.enqueued then n = n + 1 end
    end
    assert.equal(1, n, text)
  end)

  quiet.it(it, "tells an error and the retry after it", {
    "Reconciler error for kinformer%-ex%-why%-%d+/flaky: [^\n]*failing once on purpose",
  }, function()
    local mod = module(([[
local n = 0
return function(req, ctx)
  if req.name ~= "flaky" then return end
  n = n + 1
  if n == 1 then return nil, "failing once on purpose" end
end]]))
    local ctl = mgr:controller { name = "why-flaky", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    assert(mgr:start { timeout = 30 })
    assert(t.client:create("v1/configmaps", cm(ns, "flaky")))
    local key = ns .. "/flaky"
    why_until(mgr, ctl, key, {
      "reconcile #(%d+) done in [^\n]*: error: failing once on purpose\n[^\n]* enqueued: retry after error: "
        .. "failing once on purpose\n[^\n]*reconcile #%d+ started[^\n]*\n[^\n]*done in [^\n]*: success",
    })
  end)
end)
