-- Server-side apply through the Lua client (ctx.client:apply), as an
-- operator uses it: create by apply, re-apply unchanged (no new
-- resourceVersion) and changed, a conflict with another field manager
-- naming the field, force taking it, and fields dropped from the applied
-- configuration removed. The same spec runs against kinformer.sim (make
-- test) and kube-apiserver (make e2e-lua).
local h = require("examples.helper")

describe("client:apply", function()
  local t, ns
  before_each(function()
    t = h.target()
    ns = h.namespace(t, "apply")
  end)
  after_each(function() t.stop() end)

  local function cm(data, labels)
    return { apiVersion = "v1", kind = "ConfigMap",
             metadata = { name = "applied", namespace = ns, labels = labels }, data = data }
  end

  local function managers(obj)
    local m = {}
    for _, e in ipairs(obj.metadata.managedFields or {}) do m[e.manager] = e end
    return m
  end

  it("creates, conflicts with another field manager, and force takes the field", function()
    local obj, msg = t.client:apply(cm({ owner = "a", size = "1" }, { app = "web" }), { field_manager = "alice" })
    assert(obj, msg)
    assert.equal("a", obj.data.owner)
    local alice = managers(obj).alice
    assert.equal("Apply", alice.operation)
    assert.equal("v1", alice.apiVersion)
    assert.equal("FieldsV1", alice.fieldsType)
    assert.same({ ["f:owner"] = {}, ["f:size"] = {} }, alice.fieldsV1["f:data"])
    local rv = obj.metadata.resourceVersion

    -- the same configuration again is a no-op
    obj = assert(t.client:apply(cm({ owner = "a", size = "1" }, { app = "web" }), { field_manager = "alice" }))
    assert.equal(rv, obj.metadata.resourceVersion)

    -- a changed one moves the object
    obj = assert(t.client:apply(cm({ owner = "a", size = "2" }, { app = "web" }), { field_manager = "alice" }))
    assert.equal("2", obj.data.size)
    assert.are_not.equal(rv, obj.metadata.resourceVersion)

    -- another manager's different value for alice's field: 409 naming it
    local code, http
    obj, msg, code, http = t.client:apply(cm{ owner = "b" }, { field_manager = "bob" })
    assert.is_nil(obj)
    assert.equal("Conflict", code)
    assert.equal(409, http)
    assert.matches('conflict with "alice": .data.owner', msg, 1, true)

    -- force takes it; alice keeps the rest
    obj = assert(t.client:apply(cm{ owner = "b" }, { field_manager = "bob", force = true }))
    assert.equal("b", obj.data.owner)
    local m = managers(obj)
    assert.same({ ["f:owner"] = {} }, m.bob.fieldsV1["f:data"])
    assert.same({ ["f:size"] = {} }, m.alice.fieldsV1["f:data"])

    -- alice drops size and the label from her configuration: both go;
    -- bob's owner stays
    obj = assert(t.client:apply(cm{ extra = "x" }, { field_manager = "alice" }))
    assert.is_nil(obj.data.size)
    assert.is_nil((obj.metadata.labels or {}).app)
    assert.equal("b", obj.data.owner)
    assert.equal("x", obj.data.extra)
    local got = assert(t.client:get("v1/configmaps", ns, "applied"))
    assert.same({ owner = "b", extra = "x" }, got.data)
  end)
end)
