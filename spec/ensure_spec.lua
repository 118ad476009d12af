-- ctx:ensure (lua/kinformer/ctx.lua, kinformer.util.apply) and the
-- controller lifecycle (kinformer.lifecycle: finalizer, finalize,
-- children with pruning, selector) against kinformer.sim.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local apply = require "kinformer.util.apply"

local function cm(name, data, ns)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = ns or "default" },
           data = data }
end

describe("kinformer.util.apply", function()
  it("hashes a description the same in any key order, and differently when a field goes", function()
    local a = { b = 1, a = { "x", "y" }, c = { d = true } }
    local b = { c = { d = true }, a = { "x", "y" }, b = 1 }
    assert.equal(apply.hash(a), apply.hash(b))
    assert.not_equal(apply.hash(a), apply.hash({ b = 1, a = { "x", "y" } }))
    assert.not_equal(apply.hash(a), apply.hash({ b = 1, a = { "y", "x" }, c = { d = true } }))
    assert.matches("^%x+$", apply.hash(a))
    assert.equal(16, #apply.hash(a))
  end)

  it("tells a described subset from a change", function()
    local want = { metadata = { labels = { a = "1" } }, spec = { ports = { { port = 80 } } } }
    local have = { metadata = { labels = { a = "1", b = "2" }, uid = "u" },
                   spec = { ports = { { port = 80, protocol = "TCP" } }, clusterIP = "10.0.0.1" } }
    assert.is_true(apply.subset(want, have))
    have.spec.ports[1].port = 81
    assert.is_false(apply.subset(want, have))
    assert.is_false(apply.subset({ a = "1" }, { a = 1 }))
    assert.is_true(apply.subset({ n = 2 }, { n = 2.0 }))
  end)

  it("adds the controller reference and the hash annotation to a copy", function()
    local owner = { apiVersion = "v1", kind = "Namespace", metadata = { name = "team-a", uid = "u-1" } }
    local desc = cm("c", { a = "1" }, "team-a")
    local d, h = apply.desired(desc, owner)
    assert.is_nil(desc.metadata.ownerReferences) -- the description is not changed
    assert.equal(h, d.metadata.annotations[apply.ANNOTATION])
    assert.same({ apiVersion = "v1", kind = "Namespace", name = "team-a", uid = "u-1", controller = true,
                  blockOwnerDeletion = true }, d.metadata.ownerReferences[1])
    local cur = apply.copy(d)
    cur.metadata.resourceVersion = "7"
    assert.is_true(apply.unchanged(d, h, cur))
    cur.metadata.annotations[apply.ANNOTATION] = "0000000000000000"
    assert.is_false(apply.unchanged(d, h, cur))
  end)
end)

describe("ctx:ensure", function()
  local sim, mgr, ctl, client

  setup(function()
    sim = assert(require("kinformer.sim").start{})
    mgr = assert(kinformer.manager{ sim = sim })
    client = mgr.client
    assert(client:create(cm("owner", { want = "a" })))
    assert(client:create(cm("foreign-owner", {})))
    -- a reconciler that ensures the child its owner's data.want asks for
    ctl = assert(mgr:controller{
      name = "ensurer", ["for"] = "v1/configmaps", workers = 1,
      predicates = { { label_selector = "never=true" } }, -- only reconcile_once runs it here
      reconciler = function(req, ctx)
        local o = ctx:object()
        if not o or req.name ~= "owner" then return end
        local want = { apiVersion = "v1", kind = "ConfigMap",
                       metadata = { name = "child", namespace = req.namespace },
                       data = { v = o.data.want } }
        local obj, state, code = ctx:ensure(want)
        KIN_ENSURE_SPEC = { state = state, obj = obj, code = code }
        if not obj then return nil, state end
      end,
    })
    assert(mgr:start{ timeout = 10 })
  end)

  teardown(function()
    mgr:stop()
    sim:stop()
  end)

  local function reconcile()
    local r, err = ctl:reconcile_once{ namespace = "default", name = "owner" }
    return KIN_ENSURE_SPEC, r, err
  end

  local function writes_of(log)
    local n = 0
    for _, w in ipairs(log) do
      if w.uri:match("/configmaps/child") and not w.uri:match("dryRun") then n = n + 1 end
    end
    return n
  end

  it("creates, leaves alone, updates and drops a field, with one request per change", function()
    sim:write_log_start()
    local out = assert(reconcile())
    assert.equal("created", out.state)
    assert.equal("a", out.obj.data.v)
    local ref = out.obj.metadata.ownerReferences[1]
    assert.same({ "ConfigMap", "owner", true }, { ref.kind, ref.name, ref.controller })
    assert.equal("ensurer", out.obj.metadata.managedFields[1].manager)
    assert.equal("Apply", out.obj.metadata.managedFields[1].operation)
    assert(mgr:wait_for(function() return mgr:lister("v1/configmaps"):get("default/child") end, 20))
    -- the same description: no write at all (the cache has it, hash and fields)
    out = assert(reconcile())
    assert.equal("unchanged", out.state)
    local log = core.json_decode(sim:write_log_take())
    assert.equal(1, writes_of(log))
    -- a changed owner: one apply
    local o = assert(client:get("v1/configmaps", "default", "owner"))
    o.data.want = "b"
    assert(client:update(o))
    assert(mgr:wait_for(function() return mgr:lister("v1/configmaps"):get("default/owner").data.want == "b" end, 20))
    out = assert(reconcile())
    assert.equal("updated", out.state)
    assert.equal("b", out.obj.data.v)
    assert.equal(1, writes_of(core.json_decode(sim:write_log_take())))
    -- someone else changes the field: ensure puts it back
    local c = assert(client:get("v1/configmaps", "default", "child"))
    c.data.v = "tampered"
    assert(client:update(c))
    assert(mgr:wait_for(function() return mgr:lister("v1/configmaps"):get("default/child").data.v == "tampered" end, 20))
    sim:write_log_take()
    out = assert(reconcile())
    assert.equal("updated", out.state)
    assert.equal("b", assert(client:get("v1/configmaps", "default", "child")).data.v)
  end)

  it("refuses, as a terminal error naming it, an object another owner controls", function()
    local foreign = assert(client:get("v1/configmaps", "default", "foreign-owner"))
    local squat = cm("child2", { x = "1" })
    assert(require("kinformer.util.owner").set_controller_reference(foreign, squat))
    assert(client:create(squat))
    local owner = assert(client:get("v1/configmaps", "default", "owner"))
    local ctx = require("kinformer.ctx").new(mgr.env, { controller = "ensurer", request = {
      namespace = "default", name = "owner" }, for_resource = "v1/configmaps" })
    local obj, err, code = ctx:ensure(cm("child2", { x = "2" }), { owner = owner })
    assert.is_nil(obj)
    assert.equal("AlreadyOwned", code)
    assert.is_true(kinformer.is_terminal(err))
    assert.equal("ConfigMap default/child2 exists and is controlled by ConfigMap foreign-owner, not by "
      .. "ConfigMap owner", err.message)
    -- owner = false: no reference set, applied as described
    local plain, state = ctx:ensure(cm("free", { y = "1" }), { owner = false })
    assert.equal("created", state)
    assert.is_nil(plain.metadata.ownerReferences)
  end)

  it("raises misuse at the caller's line", function()
    local ctx = require("kinformer.ctx").new(mgr.env, { controller = "ensurer" })
    local ok, err = pcall(function() local r = ctx:ensure({ apiVersion = "v1", kind = "ConfigMap", metadata = {} }); return r end)
    assert.is_false(ok)
    assert.matches("ensure_spec.lua:%d+: ctx:ensure: the object needs metadata.name", err)
    ok, err = pcall(ctx.ensure, ctx, { metadata = { name = "x" } })
    assert.is_false(ok)
    assert.matches("ctx:ensure: the object needs apiVersion and kind", err)
    ok, err = pcall(ctx.ensure, ctx, cm("x", {}), { ownr = false })
    assert.is_false(ok)
    assert.matches('unknown option "ownr" to ctx:ensure %(did you mean "owner"%?%)', err)
    ok, err = pcall(ctx.ensure, cm("x", {}))
    assert.is_false(ok)
    assert.matches("call it as ctx:ensure", err)
  end)
end)
