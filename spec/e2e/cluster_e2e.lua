-- busted spec of the Lua cluster helper; run by spec/e2e/smoke.sh
-- (check lua_helper), not by `make test` (the name does not end in _spec):
--   LUA_PATH='spec/?.lua;;' busted --lua=lua5.4 --pattern=_e2e spec/e2e/cluster_e2e.lua
local cluster = require("e2e.cluster")

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1", "r"))
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return false
end

describe("e2e.cluster", function()
  local c

  setup(function() c = cluster.start() end)
  teardown(function() cluster.stop(c) end)

  it("starts a ready cluster and describes it", function()
    assert.truthy(c.server:match("^https://127%.0%.0%.1:%d+$"))
    assert.is_true(exists(c.admin_kubeconfig))
    assert.is_true(exists(c.token_kubeconfig))
    assert.is_true(tonumber(c.ready_ms) > 0)
    local out, ok = cluster.kubectl(c, "get --raw /readyz")
    assert.is_true(ok, out)
    assert.are.equal("ok", out)
  end)

  it("serves the token user through RBAC and refuses the nobody user", function()
    local out = sh(string.format("curl -sS --cacert %s -H 'Authorization: Bearer %s' %s/version",
      c.ca, c.token, c.server))
    assert.truthy(out:find('"gitVersion": "' .. c.k8s_version .. '"', 1, true), out)
    local who = cluster.kubectl(c, "auth whoami -o jsonpath={.status.userInfo.username}", { user = "token" })
    assert.are.equal("kinformer-token", who)
    local _, ok = cluster.kubectl(c, "get namespaces", { user = "nobody" })
    assert.is_false(ok)
  end)

  it("stops: processes gone, state dir removed", function()
    local dir = c.dir
    local pid = io.open(dir .. "/kube-apiserver.pid"):read("l")
    cluster.stop(c)
    assert.is_false(exists(dir .. "/env"))
    -- gone, or a zombie waiting for init to reap it
    local f = io.open("/proc/" .. pid .. "/stat", "r")
    local state = f and f:read("l"):match("^%d+ %b() (%a)")
    if f then f:close() end
    assert.is_true(state == nil or state == "Z", "kube-apiserver state " .. tostring(state))
  end)
end)
