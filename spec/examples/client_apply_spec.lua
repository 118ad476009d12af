-- Server-side apply through the Lua client (ctx.client:apply): field
-- managers, a conflict, force. kube-apiserver is the reference (make e2e-lua
-- runs this against it); kinformer.sim does not implement apply and must
-- say so with a clear status instead of pretending (make test).
local h = require("examples.helper")

describe("client:apply", function()
  local t, ns
  before_each(function()
    t = h.target()
    ns = h.namespace(t, "apply")
  end)
  after_each(function() t.stop() end)

  local function cm(data)
    return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "applied", namespace = ns }, data = data }
  end

  it("creates, conflicts with another field manager, and force takes the field", function()
    local obj, msg, code, http = t.client:apply(cm{ owner = "a" }, { field_manager = "alice" })
    if not t.real then
      assert.is_nil(obj)
      assert.equal(415, http)
      assert.is_string(msg)
      assert.is_string(code)
      return
    end
    assert(obj, msg)
    assert.equal("a", obj.data.owner)
    local managers = {}
    for _, m in ipairs(obj.metadata.managedFields) do managers[m.manager] = m.operation end
    assert.equal("Apply", managers.alice)

    obj, msg, code, http = t.client:apply(cm{ owner = "b" }, { field_manager = "bob" })
    assert.is_nil(obj)
    assert.equal("Conflict", code)
    assert.equal(409, http)
    assert.matches("alice", msg, 1, true)

    obj = assert(t.client:apply(cm{ owner = "b" }, { field_manager = "bob", force = true }))
    assert.equal("b", obj.data.owner)
    assert.equal("b", assert(t.client:get("v1/configmaps", ns, "applied")).data.owner)
  end)
end)
