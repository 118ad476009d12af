-- mgr:webhook on kinformer.sim in process (issue 25): a manager on a sim
-- registers its hooks with the sim's admission chain (no HTTPS server, no
-- certificate), which calls them for creates, updates, patches, applies
-- and deletes through every API path; mgr:stop unregisters them.
local kin = require "kinformer"

local function cm(name, data)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = "default" }, data = data }
end

describe("mgr:webhook on a sim, in process", function()
  local mgr, sim
  before_each(function()
    sim = assert(require("kinformer.sim").start {})
    mgr = assert(kin.manager { sim = sim })
  end)
  after_each(function()
    if mgr then mgr:stop() end
    if sim then sim:stop() end
    mgr, sim = nil, nil
  end)

  it("denies a create with the handler's message, allows the others; no HTTPS server", function()
    local calls = 0
    mgr:webhook { name = "no-bad", resources = { "configmaps" },
      validate = function(req, ctx)
        calls = calls + 1
        if req.object.data and req.object.data.bad then return false, "the key bad is not allowed" end
        ctx:warn("checked " .. req.name)
        return true
      end }
    assert(mgr:start())
    assert.is_nil(mgr:webhook_port())
    local ok, err, code = mgr.client:create(cm("x", { bad = "1" }))
    assert.is_nil(ok)
    assert.truthy(tostring(err):find("the key bad is not allowed", 1, true), err)
    assert.are.equal("Forbidden", code)
    assert(mgr.client:create(cm("y", { good = "1" })))
    assert.are.equal(0, calls) -- the handler's state has its own copy
    -- an update through the same chain
    local y = assert(mgr.client:get("v1/configmaps", "default", "y"))
    y.data.bad = "2"
    ok, err = mgr.client:update(y)
    assert.is_nil(ok)
    assert.truthy(tostring(err):find("not allowed", 1, true), err)
  end)

  it("applies a mutating hook's patch to what is stored", function()
    mgr:webhook { name = "label-it", resources = { "v1/configmaps" },
      mutate = function(req)
        local md = req.object.metadata
        md.labels = md.labels or {}
        md.labels.owner = req.user_info.username ~= "" and "set" or "anon"
        req.object.data = req.object.data or {}
        req.object.data.defaulted = "yes"
      end }
    assert(mgr:start())
    local got = assert(mgr.client:create(cm("m", { a = "1" })))
    assert.are.equal("yes", got.data.defaulted)
    assert.are.equal("1", got.data.a)
    assert.is_string(got.metadata.labels.owner)
    local stored = assert(mgr.client:get("v1/configmaps", "default", "m"))
    assert.are.equal("yes", stored.data.defaulted)
    -- server-side apply goes through the chain too
    local applied = assert(mgr.client:apply(cm("ap", { b = "2" }), { field_manager = "spec" }))
    assert.are.equal("yes", applied.data.defaulted)
  end)

  it("is called for deletes when asked, with old_object", function()
    mgr:webhook { name = "keep", resources = { "configmaps" }, operations = { "DELETE" },
      validate = function(req)
        if req.object ~= nil then return false, "object on delete" end
        return req.old_object.metadata.name ~= "keep", "keep " .. req.old_object.metadata.name
      end }
    assert(mgr:start())
    assert(mgr.client:create(cm("keep", {})))
    assert(mgr.client:create(cm("drop", {})))
    local ok, err = mgr.client:delete("v1/configmaps", "default", "keep")
    assert.is_nil(ok)
    assert.truthy(tostring(err):find("keep keep", 1, true), err)
    assert(mgr.client:delete("v1/configmaps", "default", "drop"))
  end)

  it("is unregistered when a manager is collected without mgr:stop", function()
    mgr:webhook { name = "deny-all", resources = { "configmaps" }, validate = function() return false, "no" end }
    assert.is_nil((mgr.client:create(cm("a", {}))))
    mgr = nil
    collectgarbage()
    collectgarbage()
    mgr = assert(kin.manager { sim = sim })
    assert(mgr.client:create(cm("a", {})))
  end)

  it("stops being called once the manager stops", function()
    mgr:webhook { name = "deny-all", resources = { "configmaps" }, validate = function() return false, "no" end }
    assert(mgr:start())
    assert.is_nil((mgr.client:create(cm("a", {}))))
    mgr:stop()
    mgr = assert(kin.manager { sim = sim })
    assert(mgr.client:create(cm("a", {})))
  end)
end)
