-- Informers with handler sets on listener threads (worker states), a
-- main-state handler, a Lua transform on the reflector thread and listers,
-- all at once against kinformer.sim: for ASan/TSan (test_lua_scenarios.c).
local kinformer = require "kinformer"
local sim <close> = assert(require("kinformer.sim").start{})
local mgr = assert(kinformer.manager{ kubeconfig = sim.kubeconfig })
local client = mgr.client

local N = 40
for i = 1, N do
  assert(client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
    metadata = { name = "cm" .. i, namespace = "default" }, data = { v = "0" } }))
end

local inf = assert(mgr:informer("v1/configmaps"))
-- Two handler sets, each on its own listener thread and Lua state; one
-- fails on every tenth object, which must not stop its later events.
local h1 = inf:add_handler{
  on_add = function(o) local _ = o.data.v end,
  on_update = function(old, new) assert(new.data.v ~= old.data.v) end,
  on_delete = function(o) local _ = o.metadata.name end,
}
local h2 = inf:add_handler{
  on_update = function(_, new)
    if tonumber(new.metadata.name:match("%d+")) % 10 == 0 then error("refused " .. new.metadata.name) end
  end,
}
local main_seen = 0
inf:add_handler({ on_update = function() main_seen = main_seen + 1 end }, { main = true })
local shouted = assert(mgr:informer("v1/configmaps", {
  namespace = "default",
  transform = function(o) o.metadata.annotations = { transformed = "yes" }; return o end,
}))
assert(mgr:start{ timeout = 30 })

-- Updates from two worker states at once while the listeners deliver.
local w1 = assert(kinformer.core.worker(function(kc, from, to)
  local env = assert(require("kinformer.core").env{ kubeconfig = kc })
  local c = env:client()
  for i = math.tointeger(from), math.tointeger(to) do
    local o = assert(c:get("v1/configmaps", "default", "cm" .. i))
    o.data.v = "1"
    assert(c:update("v1/configmaps", o))
  end
  env:close()
  return true
end))
assert(w1:call(nil, sim.kubeconfig, 1, N // 2))
assert(w1:call(nil, sim.kubeconfig, N // 2 + 1, N))
w1:close()

assert(mgr:wait_for(function() return main_seen == N end, 30), "main-state handler saw " .. main_seen)
assert(mgr:wait_for(function()
  return h1:stats().delivered == 2 * N and h2:stats().delivered == 2 * N
end, 30), "listeners did not deliver every event")
assert(h2:stats().errors == N // 10, "errors " .. h2:stats().errors)
assert(h1:stats().errors == 0)

-- The cache matches the server; listers are read-only views of it.
for i = 1, N do assert(inf:get("default/cm" .. i).data.v == "1") end
local t = assert(shouted:get("default/cm1"))
assert(t.metadata.annotations.transformed == "yes")
t.data.v = "mutated"
assert(shouted:get("default/cm1").data.v == "1", "a returned table must not alias the cache")
local lister = assert(mgr:lister("v1/configmaps"))
assert(#lister:list() == N)
assert(not pcall(lister.add_handler, lister, { on_add = function() end }))

assert(inf:remove_handler(h2))
for i = 1, 5 do assert(client:delete("v1/configmaps", "default", "cm" .. i)) end
assert(mgr:wait_for(function() return inf:len() == N - 5 and h1:stats().delivered == 2 * N + 5 end, 30))
mgr:stop()
