-- The object model as seen from Lua.
local kinformer = require "kinformer"

local fixture = require("support.proc").fixture

describe("kinformer.object", function()
  it("exposes the metadata of a real Pod", function()
    local o = assert(kinformer.object(fixture("pod.json")))
    assert.are.equal("shop/web-7d4b9c8f6d-x2k9p", o:key())
    assert.are.equal("shop", o:namespace())
    assert.are.equal("184467", o:resource_version())
    assert.are.equal(1, o:generation())
    assert.are.equal("Pod", o:kind())
    assert.are.same({ app = "web", ["pod-template-hash"] = "7d4b9c8f6d",
                      ["app.kubernetes.io/part-of"] = "shop", tier = "frontend" }, o:labels())
    assert.are.same({ api_version = "apps/v1", kind = "ReplicaSet", name = "web-7d4b9c8f6d",
                      uid = "a3c1e2f4-9b8d-4e6f-8a7b-1c2d3e4f5a6b" }, o:controller())
    assert.is_false(o:is_tombstone())
  end)

  it("decodes to a fresh table each time, so the cache cannot be mutated", function()
    local o = assert(kinformer.object(fixture("configmap.json")))
    local a = o:decode()
    a.metadata.name = "changed"
    a.data = nil
    local b = o:decode()
    assert.are.equal("web-config", b.metadata.name)
    assert.is_table(b.data)
    assert.are.equal("web-config", o:name())
  end)

  it("returns nil, message, code for malformed JSON", function()
    for _, bad in ipairs({ "", "{", "[]", "{\"metadata\":{\"name\":\"a\",}}",
                           "<html>502 Bad Gateway</html>", "{\"metadata\":{}}" }) do
      local o, msg, code = kinformer.object(bad)
      assert.is_nil(o)
      assert.are.equal("EINVAL", code)
      assert.matches("parse object", msg)
    end
  end)

  it("raises on misuse", function()
    assert.has_error(function() kinformer.object(nil) end)
    assert.has_error(function() kinformer.object({}) end)
  end)

  it("makes tombstones that carry the last state", function()
    local last = assert(kinformer.object('{"metadata":{"name":"a","namespace":"n","resourceVersion":"3"}}'))
    local t = kinformer.tombstone("n/a", last)
    assert.is_true(t:is_tombstone())
    assert.are.equal("n/a", t:key())
    assert.are.equal("3", t:resource_version())
    assert.are.equal("a", t:last_state():name())
    local bare = kinformer.tombstone("gone")
    assert.is_nil(bare:last_state())
    assert.is_nil(bare:json())
  end)

  it("supports to-be-closed variables", function()
    local s = 'return function(k) local o <close> = k.object(\'{"metadata":{"name":"x"}}\'); return o end'
    local o = load(s)()(kinformer)
    assert.has_error(function() o:name() end, "calling 'name' on bad self (object is closed)")
  end)
end)
