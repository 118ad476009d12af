-- max_response_bytes (kinformer.manager / core.env, csrc/lua/lenv.c): the
-- cap on every answer that is not a watch, against kinformer.sim. The
-- misbehaving servers and RSS are C specs (spec/c/test_response_caps.c).
local core = require "kinformer.core"

describe("max_response_bytes", function()
  local sim

  setup(function()
    sim = assert(require("kinformer.sim").start { controllers = "none" })
  end)

  teardown(function()
    if sim then sim:stop() end
  end)

  it("fails a GET whose body passes the cap with ETOOBIG, naming URL and cap", function()
    local env = assert(core.env { kubeconfig = sim.kubeconfig, max_response_bytes = 20000 })
    local c = env:client()
    local big = string.rep("x", 40000)
    -- (written through a client without the cap: a create's answer is the object)
    local wenv = assert(core.env { kubeconfig = sim.kubeconfig })
    local w = wenv:client()
    assert(w:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "big", namespace = "default" }, data = { k = big } }))
    w:close()
    wenv:close()
    local o, msg, code = c:get("v1/configmaps", "default", "big")
    assert.is_nil(o)
    assert.are.equal("ETOOBIG", code)
    assert.matches("GET http://127%.0%.0%.1:%d+/api/v1/namespaces/default/configmaps/big: "
      .. "response body larger than its cap of 20000 bytes", msg)
    c:close()
    env:close()
  end)

  it("is 256 MiB by default and refuses a negative value", function()
    local env = assert(core.env { kubeconfig = sim.kubeconfig })
    local c = env:client()
    assert(c:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "small", namespace = "default" }, data = { k = string.rep("y", 8192) } }))
    assert(c:get("v1/configmaps", "default", "small"))
    c:close()
    env:close()
    assert.has_error(function() core.env { kubeconfig = sim.kubeconfig, max_response_bytes = -1 } end,
      "bad argument #1 to 'env' (option 'max_response_bytes' must not be negative)")
  end)

  it("is a kinformer.manager option", function()
    local manager = require "kinformer.manager"
    local found = false
    for _, k in ipairs(manager.OPTIONS) do found = found or k == "max_response_bytes" end
    assert.is_true(found)
    local mgr = assert(manager.new { sim = sim, max_response_bytes = 1 << 20 })
    mgr:stop()
  end)
end)
