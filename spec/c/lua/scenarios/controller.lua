-- A controller with two workers (each its own worker state) that writes
-- through ctx.client from both at once, Owns its Secrets, a map watch, a
-- failing and a terminal key, then a graceful stop: for ASan/TSan
-- (test_lua_scenarios.c).
local kinformer = require "kinformer"
local sim <close> = assert(require("kinformer.sim").start{})
local mgr = assert(kinformer.manager{ kubeconfig = sim.kubeconfig })
local client = mgr.client

local N = 30
for i = 1, N do
  assert(client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
    metadata = { name = "cm" .. i, namespace = "default" }, data = { v = tostring(i) } }))
end

local ctl = mgr:controller{
  name = "mirror",
  ["for"] = "v1/configmaps",
  owns = { "v1/secrets" },
  watches = { { "v1/services", map = function(svc)
    return { { namespace = svc.metadata.namespace, name = "cm1" } }
  end } },
  workers = 2,
  rate_limiter = { base_delay = 0.001, max_delay = 0.01 },
  reconciler = function(req, ctx)
    if req.name == "cm-fail" then error("always fails") end
    if req.name == "cm-terminal" then return nil, require("kinformer").terminal("give up") end
    local cm = ctx.lister("v1/configmaps"):get(req.key)
    if not cm then return end
    local secret = ctx.client:get("v1/secrets", req.namespace, req.name)
    if secret then return end
    secret = { apiVersion = "v1", kind = "Secret",
      metadata = { name = req.name, namespace = req.namespace }, stringData = cm.data }
    assert(ctx.set_controller_reference(cm, secret))
    local ok, msg, code = ctx.client:create("v1/secrets", secret)
    if not ok and code ~= "AlreadyExists" then error(msg) end
  end,
}
assert(mgr:start{ timeout = 30 })
assert(mgr:wait_for(function() return #mgr.client:list("v1/secrets", "default").items == N end, 60),
  "secrets were not all created")

assert(client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
  metadata = { name = "cm-fail", namespace = "default" } }))
assert(client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
  metadata = { name = "cm-terminal", namespace = "default" } }))
assert(mgr:wait_for(function()
  local st = ctl:stats()
  return st.reconcile_errors >= 5 and st.terminal_reconcile_errors == 1
end, 30), "errors were not retried")

-- Owns: deleting a Secret brings its owner back to the queue, which recreates it.
assert(client:delete("v1/secrets", "default", "cm7"))
assert(mgr:wait_for(function() return client:get("v1/secrets", "default", "cm7") ~= nil end, 30))
-- watches with a map function
local before = ctl:stats().reconcile_success
assert(client:create("v1/services", { apiVersion = "v1", kind = "Service",
  metadata = { name = "s", namespace = "default" }, spec = { ports = { { port = 80 } } } }))
assert(mgr:wait_for(function() return ctl:stats().reconcile_success > before end, 30))
assert(ctl:reconcile_once{ namespace = "default", name = "cm2" })
mgr:stop()
