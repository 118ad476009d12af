-- Secure metrics against kube-apiserver (issue 24): the hello example
-- operator deployed with the RBAC `kinformer manifests` prints (its
-- metrics-auth ClusterRole for TokenReview and SubjectAccessReview, and
-- the metrics-reader ClusterRole), run by bin/kinformer with only its
-- ServiceAccount's token and --metrics-secure: /metrics answers 401
-- without a token and with a bad one, 403 for a ServiceAccount not bound
-- to metrics-reader, 200 for one bound to it; the operator's log holds no
-- "forbidden" (its own reviews are in its printed RBAC) and the
-- Authentication/Authorization failures of a short RBAC would show as 500.
--
-- Run by make e2e-lua (cluster.sh run exports KINFORMER_E2E_*):
--   spec/e2e/cluster.sh run env LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' \
--     LUA_CPATH='build/release/?.so;;' busted --lua=lua5.4 --pattern=_e2e spec/e2e/metrics_auth_e2e.lua
-- Without a cluster it starts one of its own (spec/e2e/cluster.lua).
local cluster = require "e2e.cluster"
local proc = require "support.proc"

local sh, curl = proc.sh, proc.curl

describe("secure metrics on kube-apiserver", function()
  local c, pid, tmp
  setup(function()
    c = cluster.attach() or cluster.start()
    tmp = os.tmpname()
    os.remove(tmp)
    assert(os.execute("mkdir -p " .. tmp))
  end)
  teardown(function()
    if pid then os.execute("kill -INT " .. pid .. " 2>/dev/null") end
    cluster.stop(c)
    if tmp then os.execute("rm -rf " .. tmp) end
  end)

  it("answers 401 without or with a bad token, 403 without metrics-reader, 200 with it", function()
    local yaml, rc = proc.run(("KUBECONFIG=/nonexistent %s bin/kinformer manifests examples/hello/operator.lua")
      :format(proc.paths_env()))
    assert.equal(0, rc, yaml)
    proc.write(tmp .. "/hello.yaml", yaml)
    local out, ok = cluster.kubectl(c, "apply -f " .. tmp .. "/hello.yaml")
    assert.is_true(ok, out)
    for _, sa in ipairs { "scraper", "nobody" } do
      out, ok = cluster.kubectl(c, "create serviceaccount " .. sa .. " -n default")
      assert.is_true(ok, out)
    end
    out, ok = cluster.kubectl(c, "create clusterrolebinding scraper-hello-metrics --clusterrole hello-metrics-reader "
      .. "--serviceaccount default:scraper")
    assert.is_true(ok, out)
    local function token(sa)
      local t, tok_ok = cluster.kubectl(c, "create token " .. sa .. " -n default --duration 1h")
      assert.is_true(tok_ok, t)
      return (t:gsub("%s+$", ""))
    end
    -- the operator with only its ServiceAccount's token
    proc.write(tmp .. "/hello.kubeconfig", ([[
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "%s", certificate-authority: "%s"}}]
users: [{name: sa, user: {token: "%s"}}]
contexts: [{name: sa, context: {cluster: e2e, user: sa, namespace: default}}]
current-context: sa
]]):format(c.server, c.ca, token("hello")))
    local log = tmp .. "/run.log"
    pid = sh(("%s bin/kinformer run examples/hello/operator.lua --kubeconfig %s --metrics-secure "
      .. "--metrics-bind-address 127.0.0.1:0 -v >%s 2>&1 & echo $!"):format(proc.paths_env(), tmp .. "/hello.kubeconfig", log))
      :match("%d+")
    local port
    for _ = 1, 300 do
      port = proc.read(log):match("serving metrics on port (%d+)")
      if port and proc.read(log):find("caches synced", 1, true) then break end
      sh("sleep 0.1")
    end
    assert.is_truthy(port, proc.read(log))
    local url = ("https://127.0.0.1:%s/metrics"):format(port)
    assert.equal(401, curl(url))
    assert.equal(401, curl(url, "garbage"))
    assert.equal(403, curl(url, token("nobody")))
    local good = token("scraper")
    assert.equal(200, curl(url, good))
    assert.matches("rest_client_requests_total", sh(("curl -sk -H 'Authorization: Bearer %s' '%s'"):format(good, url)))
    os.execute("kill -INT " .. pid)
    for _ = 1, 100 do
      if not os.execute("kill -0 " .. pid .. " 2>/dev/null") then break end
      sh("sleep 0.1")
    end
    pid = nil
    local text = proc.read(log)
    local at = text:find("forbidden", 1, true)
    assert.is_nil(at, at and text:sub(math.max(1, at - 300), at + 200))
    assert.is_nil(text:find("Authentication failed: TokenReview", 1, true), text)
    assert.is_nil(text:find("Authorization for user", 1, true), text)
  end)
end)
