-- Issue 12 under ASan/TSan (test_lua_scenarios.c): reconcile_timeout
-- interrupting Lua loops (also one that catches the error) and cutting a
-- slow REST call, the watchdog's busy warning, and a manager stop that
-- interrupts a reconciler with no timeout after shutdown_timeout.
local kinformer = require "kinformer"
local core = kinformer.core
local sim <close> = assert(require("kinformer.sim").start{})
local mgr = assert(kinformer.manager{ kubeconfig = sim.kubeconfig, shutdown_timeout = 0.3,
                                      busy_warning_after = 0.2 })
local client = mgr.client
for _, n in ipairs{ "loop", "catch", "slow", "ok1", "ok2" } do
  assert(client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
    metadata = { name = n, namespace = "default" } }))
end

local timed = mgr:controller{
  name = "timed", ["for"] = "v1/configmaps", workers = 2, reconcile_timeout = 0.3,
  rate_limiter = { base_delay = 0.05, max_delay = 0.05 },
  reconciler = function(req, ctx)
    if req.name == "loop" then while true do end end
    if req.name == "catch" then while true do pcall(function() while true do end end) end end
    if req.name == "slow" then
      local obj, err = ctx.client:get("v1/configmaps", req.namespace, req.name)
      if not obj then return nil, err end
    end
  end,
}
local stuck = mgr:controller{
  name = "stuck", ["for"] = "v1/configmaps", workers = 1,
  reconciler = function(req) if req.name == "loop" then while true do end end end,
}
assert(mgr:start{ timeout = 30 })
sim:fault{ kind = "latency", ms = 3000 }
assert(mgr:wait_for(function()
  local st = timed:stats()
  return st.reconcile_timeouts >= 4 and st.reconcile_success >= 2
end, 30), "timeouts and successes")
sim:fault{ kind = "latency", ms = 0 }
assert(timed:stats().reconcile_panics == 0)
assert(mgr:wait_for(function() return #stuck:busy() == 1 end, 30), "stuck is busy")
local b = stuck:busy()[1]
assert(b.key == "default/loop" and b.worker == 1 and b.seconds >= 0, b.key)
local t0 = core.monotime()
mgr:stop()
assert(core.monotime() - t0 < 10, "stop took too long")
assert(stuck:stats().reconcile_interrupts == 1)
assert(#stuck:busy() == 0 and #timed:busy() == 0)
