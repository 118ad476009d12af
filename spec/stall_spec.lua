-- A stalled TCP connection (issue 12, "never blind"): the project's fault
-- proxy (build/<mode>/kin-fault-proxy) sits between a manager and the
-- server and pauses the connection: it stays open and no byte moves, as
-- with a dead NAT entry or a hung load balancer. An object created on the
-- server meanwhile (through a direct client) must reach the informer's
-- cache within 10 s, with short timeouts set from Lua.
--
-- In `make test` the server is kinformer.sim (HTTP/1.1: the watch idle
-- timeout is the guard); in `make e2e` (KINFORMER_E2E_ADMIN_KUBECONFIG set)
-- it is kube-apiserver over HTTP/2, where every watch shares one
-- connection and only the connection health check (read_idle_timeout,
-- ping_timeout) finds the stall. The scenario runs in a child interpreter
-- whose log is read back and asserted, so the warnings it provokes do not
-- land in the test run's output.
local h = require "examples.helper"
local proc = require "support.proc"

local run = proc.run

-- The child: proxy, manager through it, pause, create directly, wait.
-- Prints "recovered SECONDS" or fails. arg[5] "informer": the short
-- timeouts are set on the informer (the manager keeps the 30 s / 15 s
-- defaults), else on the manager.
local CHILD = [[
local upstream_kc, ns, proxy_bin, real = arg[1], arg[2], arg[3], arg[4] == "real"
local per_informer = arg[5] == "informer"
local kinformer = require "kinformer"
local core = kinformer.core

local function slurp(p) local f = assert(io.open(p)); local s = f:read("a"); f:close(); return s end

-- the proxy, its commands on stdin, its answers in a file
local out = os.tmpname()
local kc = slurp(upstream_kc)
local scheme, host, port = kc:match("server:%s*['\"]?(https?)://([%d%.]+):(%d+)")
assert(port, "no loopback server URL in " .. upstream_kc)
local proxy = assert(io.popen(proxy_bin .. " " .. host .. ":" .. port .. " >" .. out, "w"))
local listen
for _ = 1, 200 do
  listen = slurp(out):match("listening (%d+)")
  if listen then break end
  os.execute("sleep 0.05")
end
assert(listen, "the fault proxy did not start: " .. slurp(out))

-- the same kubeconfig, through the proxy (same host: the certificate still matches)
local proxied = os.tmpname()
local f = assert(io.open(proxied, "w"))
f:write((kc:gsub("(server:%s*['\"]?https?://[%d%.]+:)%d+", "%1" .. listen)))
f:close()

local short = { read_idle_timeout = 2, ping_timeout = 2 }
local mgr = assert(kinformer.manager{
  kubeconfig = proxied, namespace = ns,
  read_idle_timeout = not per_informer and 2 or nil, ping_timeout = not per_informer and 2 or nil,
  -- over HTTP/2 leave the watch idle timeout at its 300 s default, so
  -- that only the connection health check can find the stall
  watch_idle_timeout = not real and 2 or nil,
})
local cms = assert(mgr:informer("v1/configmaps", per_informer and short or nil))
assert(mgr:start{ timeout = 30 })
-- the engine applies the informer's settings while its watch runs
assert(mgr:wait_for(function()
  local hc = mgr:connection_health()
  return hc.read_idle_timeout == 2 and hc.ping_timeout == 2
end, 5), "the engine does not apply the short timeouts")

local direct = assert(core.env{ kubeconfig = upstream_kc }):client()
proxy:write("pause\n"); proxy:flush()
os.execute("sleep 0.3")
local t0 = core.monotime()
assert(direct:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
  metadata = { name = "stalled", namespace = ns }, data = { v = "1" } }))
local got = mgr:wait_for(function() return cms:get(ns .. "/stalled") end, 20)
local took = core.monotime() - t0
proxy:write("stats\n"); proxy:flush()
mgr:stop()
proxy:close()
assert(got, string.format("the object created during the stall never arrived (%.1f s)", took))
print(string.format("recovered %.2f", took))
os.remove(out); os.remove(proxied)
]]

-- Runs the child against the target (sim or kube-apiserver) with the
-- short timeouts set on where ("manager" or "informer"); asserts and
-- prints the recovery time.
local function stall_case(where)
  local proxy_bin = proc.build_dir() .. "kin-fault-proxy"
  assert.is_true(io.open(proxy_bin) ~= nil, proxy_bin .. " is missing: make fault-proxy")
  local t = h.target()
  local ns = t.real and h.namespace(t, "stall") or "default"
  local script = proc.write_tmp(proc.paths_prologue() .. CHILD)
  local out, rc = run(string.format("timeout 60 lua5.4 %s %s %s %s %s %s", script, h.quote(t.kubeconfig),
    h.quote(ns), h.quote(proxy_bin), t.real and "real" or "sim", where))
  os.remove(script)
  t.stop()
  assert.are.equal(0, rc, out)
  local took = tonumber(out:match("recovered ([%d%.]+)"))
  assert.is_not_nil(took, out)
  assert.is_true(took < 10, out)
  if t.real then
    -- HTTP/2: the health probe found the dead connection and closed it
    assert.matches("received nothing for %d+ ms and no answer to a health probe within 2000 ms: "
      .. "closing it, %d+ requests? fail over to a new connection", out)
    assert.is_nil(out:find("no byte on the watch", 1, true), out)
  else
    -- HTTP/1.1: the watch's own idle timeout
    assert.matches("v1/configmaps in namespace " .. ns .. ": no byte on the watch for 2000 ms: "
      .. "re%-establishing it", out)
  end
  print(string.format("\nstall_spec: %s, timeouts set on the %s, object created during the stall "
    .. "cached after %.2f s",
    t.real and "kube-apiserver over HTTP/2 (read_idle_timeout 2, ping_timeout 2)"
    or "kinformer.sim over HTTP/1.1 (watch_idle_timeout 2)", where, took))
end

describe("a paused connection", function()
  it("is found and left, and the watch catches up within 10 s (timeouts set on the manager)", function()
    stall_case("manager")
  end)

  it("is found and left within 10 s with the timeouts set on the informer only", function()
    stall_case("informer")
  end)
end)
