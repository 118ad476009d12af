--- The Lua side of handler dispatch alone, for instruction counts: calls
-- on_update(old, new), reading new.metadata.resourceVersion, with the two
-- objects pushed as handlers get them (obj:view(), a lazy view) or decoded
-- whole (obj:decode(), what handlers got before views), N times over a
-- 1 KB ConfigMap shaped like bench/informer_seed.c's.
--
--   LUA_CPATH='build/release/?.so;;' lua5.4 bench/lua/dispatch_micro.lua view|decode N [none]
--
-- "none" leaves the handler empty (the cost of making the objects). Per
-- event: run valgrind --tool=callgrind at two N and divide the difference.
local core = require "kinformer.core"
local mode, n, body = arg[1] or "view", tonumber(arg[2] or 200000), arg[3]
assert(mode == "view" or mode == "decode", "mode: view or decode")
local a, b = ("x"):rep(250), ("y"):rep(200)
local json = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-000001","namespace":"bench-1",'
  .. '"uid":"6f1c7a52-3c1e-4a8e-9a55-0d6f7f6b9b01","resourceVersion":"123456","creationTimestamp":"2026-11-20T09:12:40Z",'
  .. '"labels":{"app":"app-1","tier":"backend","app.kubernetes.io/part-of":"bench","app.kubernetes.io/managed-by":"helm"},'
  .. '"annotations":{"meta.helm.sh/release-name":"app-1","meta.helm.sh/release-namespace":"bench-1"}},'
  .. '"data":{"app.yaml":"listen: 0.0.0.0:8080\\nlog:\\n  level: info\\n  format: json\\nsecret: ' .. a
  .. '\\n","extra.txt":"' .. b .. '","id":"zz-1"}}'
local o1, o2 = assert(core.object(json)), assert(core.object(json))
local bytes = 0
local handler = body == "none" and function() end
  or function(_, new) bytes = bytes + #new.metadata.resourceVersion end
local push = mode == "view" and o1.view or o1.decode
local t0 = os.clock()
for _ = 1, n do handler(push(o1), push(o2)) end
local dt = os.clock() - t0
print(("%s: %d events in %.3f s CPU: %.0f/s (object %d bytes)"):format(mode, n, dt, n / dt, #json))
