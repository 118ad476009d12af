-- Secure serving (issue 24; csrc/core/metrics/, csrc/core/tls/,
-- docs/security.md) against kinformer.sim with RBAC authorization: /metrics
-- over HTTPS behind TokenReview + SubjectAccessReview (401 without or with
-- a bad token, 403 for a ServiceAccount without metrics-reader, 200 with
-- it), the admin endpoint on loopback by default with its Host check and
-- behind the same reviews elsewhere, /healthz answering within 1 s while
-- 2,000 idle connections are held on the metrics and admin ports, running
-- out of fds logged as such, and a rotated certificate picked up.
local simmod = require "kinformer.sim"
local kinformer = require "kinformer"
local cjson = require "cjson"
local proc = require "support.proc"
local quiet = require "support.quiet"

local sh, curl = proc.sh, proc.curl

-- The RBAC of the test: ServiceAccounts scraper (bound to metrics-reader,
-- which also reads the admin paths) and nobody, in default.
local function setup_rbac(c)
  for _, sa in ipairs { "scraper", "nobody" } do
    assert(c:create{ apiVersion = "v1", kind = "ServiceAccount", metadata = { name = sa, namespace = "default" } })
  end
  assert(c:create{ apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole",
    metadata = { name = "metrics-reader" },
    rules = { { nonResourceURLs = { "/metrics", "/caches" }, verbs = { "get" } } } })
  assert(c:create{ apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding",
    metadata = { name = "scraper-metrics-reader" },
    roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "metrics-reader" },
    subjects = { { kind = "ServiceAccount", name = "scraper", namespace = "default" } } })
end

-- A TokenRequest token of ServiceAccount sa (the sim's anonymous user is
-- in system:masters).
local function token(sim, sa)
  local out = sh(("curl -sk -X POST -H 'Content-Type: application/json' --data '{}' "
    .. "'%s/api/v1/namespaces/default/serviceaccounts/%s/token'"):format(sim.url, sa))
  return (assert(cjson.decode(out).status.token, out))
end

-- This machine's first non-loopback IPv4 address.
local function outside_ip()
  for ip in sh("hostname -I"):gmatch("%S+") do
    if ip:match("^%d+%.%d+%.%d+%.%d+$") and not ip:match("^127%.") then return ip end
  end
end

describe("secure metrics serving on kinformer.sim with RBAC", function()
  local sim, mgr
  before_each(function()
    sim = assert(simmod.start{ authorization = "rbac" })
  end)
  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
    sim:stop()
  end)

  it("answers /metrics 401 without or with a bad token, 403 without metrics-reader, 200 with it", function()
    mgr = assert(kinformer.manager{ sim = sim, metrics_bind = "127.0.0.1:0", metrics_secure = true,
      health_bind = "127.0.0.1:0" })
    setup_rbac(mgr.client)
    local url = ("https://127.0.0.1:%d/metrics"):format(mgr:metrics_port())
    assert.equal(401, curl(url))
    assert.equal(401, curl(url, "garbage"))
    assert.equal(403, curl(url, token(sim, "nobody")))
    local good = token(sim, "scraper")
    assert.equal(200, curl(url, good))
    local body = sh(("curl -sk -H 'Authorization: Bearer %s' '%s'"):format(good, url))
    assert.matches("# TYPE rest_client_requests_total counter", body, 1, true)
    -- the answers' texts, as controller-runtime's filter
    assert.equal("Unauthorized\n", sh(("curl -sk '%s'"):format(url)))
    assert.equal("Authorization denied for user system:serviceaccount:default:nobody\n",
      sh(("curl -sk -H 'Authorization: Bearer %s' '%s'"):format(token(sim, "nobody"), url)))
    -- plain HTTP is not served on the HTTPS port; the probes stay plain HTTP
    assert.equal(0, (curl(url:gsub("^https", "http"))))
    assert.equal(200, curl(("http://127.0.0.1:%d/healthz"):format(mgr:metrics_port("health"))))
  end)

  it("binds the admin endpoint to loopback for :PORT and refuses a foreign Host", function()
    mgr = assert(kinformer.manager{ sim = sim, admin_bind = ":0" })
    local port = mgr:metrics_port("admin")
    assert.equal(200, curl(("http://127.0.0.1:%d/caches"):format(port)))
    assert.equal(200, curl(("http://localhost:%d/caches"):format(port)))
    -- DNS rebinding: a page of evil.example resolved to 127.0.0.1
    assert.equal(403, curl(("http://127.0.0.1:%d/caches"):format(port), nil, "-H 'Host: evil.example:" .. port .. "'"))
    assert.equal(403, curl(("http://127.0.0.1:%d/caches"):format(port), nil, "-H 'Host: localhost:1'"))
    -- listening on 127.0.0.1 only (/proc/net/tcp: local address 0100007F,
    -- state 0A LISTEN), so not reachable on this machine's other addresses
    local listen = {}
    for line in io.lines("/proc/net/tcp") do
      local addr, p, st = line:match("^%s*%d+: (%x+):(%x+) %x+:%x+ (%x+)")
      if addr and tonumber(p, 16) == port and st == "0A" then listen[#listen + 1] = addr end
    end
    assert.same({ "0100007F" }, listen)
    local ip = outside_ip()
    if ip then assert.equal(0, (curl(("http://%s:%d/caches"):format(ip, port)))) end
  end)

  it("serves an admin endpoint bound elsewhere over HTTPS behind TokenReview + SubjectAccessReview", function()
    mgr = assert(kinformer.manager{ sim = sim, admin_bind = "0.0.0.0:0" })
    setup_rbac(mgr.client)
    local port = mgr:metrics_port("admin")
    local ip = "127.0.0.1" -- bound to every address: the reviews apply whoever connects
    local url = ("https://%s:%d/caches"):format(ip, port)
    assert.equal(401, curl(url))
    assert.equal(403, curl(url, token(sim, "nobody")))
    assert.equal(200, curl(url, token(sim, "scraper")))
    assert.equal(403, curl(("https://%s:%d/queues"):format(ip, port), token(sim, "scraper")))
    -- kinformer inspect with the token, over HTTPS
    local out, rc = proc.run(("KINFORMER_ADMIN_TOKEN=%s %s bin/kinformer inspect caches --insecure-skip-tls-verify "
      .. "--address %s:%d 2>&1"):format(token(sim, "scraper"), proc.paths_env(), ip, port))
    assert.equal(0, rc, out)
    assert.matches("CACHES", out, 1, true)
    -- and with a bad one: the server's 401
    out, rc = proc.run(("%s bin/kinformer inspect caches --token garbage --insecure-skip-tls-verify --address %s:%d 2>&1")
      :format(proc.paths_env(), ip, port))
    assert.equal(1, rc, out)
    assert.matches("HTTP 401", out, 1, true)
  end)

  it("answers /healthz within 1 s while 2,000 idle connections are held on the metrics and admin ports", function()
    mgr = assert(kinformer.manager{ sim = sim, metrics_bind = "127.0.0.1:0", metrics_secure = true,
      health_bind = "127.0.0.1:0", admin_bind = "127.0.0.1:0" })
    local outf = os.tmpname()
    local h = assert(io.popen(("python3 spec/support/hold_conns.py 2000 127.0.0.1 %d %d > %s")
      :format(mgr:metrics_port(), mgr:metrics_port("admin"), outf), "w"))
    local held
    for _ = 1, 600 do
      held = proc.read(outf):match("held (%d+)")
      if held then break end
      sh("sleep 0.1")
    end
    assert.is_truthy(held, "the helper did not report")
    assert.is_true(tonumber(held) >= 2000, "connections held: " .. tostring(held))
    local health = ("http://127.0.0.1:%d/healthz"):format(mgr:metrics_port("health"))
    local worst = 0
    for _ = 1, 5 do
      local code, t = curl(health)
      assert.equal(200, code)
      assert.is_true(t < 1, "healthz took " .. tostring(t) .. " s")
      worst = math.max(worst, t)
    end
    if os.getenv("KIN_SPEC_VERBOSE") then
      print(("[metrics_secure] %s idle connections held on the metrics and admin ports: /healthz in %.1f ms at worst of 5")
        :format(held, worst * 1000))
    end
    h:close()
    os.remove(outf)
  end)
end)

-- A key pair made with openssl in dir (cert name, key name, CN).
local function make_pair(dir, crt, key, cn)
  assert(os.execute(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
    .. "-subj /CN=%s -keyout %s/%s.tmp -out %s/%s.tmp 2>/dev/null && mv %s/%s.tmp %s/%s && mv %s/%s.tmp %s/%s")
    :format(cn, dir, key, dir, crt, dir, crt, dir, crt, dir, key, dir, key)))
end

-- The subject of the certificate served on 127.0.0.1:port.
local function served_subject(port)
  return sh(("openssl s_client -connect 127.0.0.1:%d </dev/null 2>/dev/null | openssl x509 -noout -subject")
    :format(port)):match("CN%s*=%s*([%w.-]+)")
end

describe("the metrics server's certificates", function()
  quiet.it(it, "serves --metrics-cert-path's pair and picks up its rotation; a bad pair keeps the last good one",
    { "serving certificate not reloaded, the previous one stays: .*The certificate and the given key do not match" },
    function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    make_pair(dir, "serving.crt", "serving.key", "first.example")
    local sim = assert(simmod.start{})
    local mgr = assert(kinformer.manager{ sim = sim, metrics_bind = "127.0.0.1:0", metrics_secure = true,
      metrics_cert_path = dir, metrics_cert_name = "serving.crt", metrics_cert_key = "serving.key" })
    local port = mgr:metrics_port()
    assert.equal("first.example", served_subject(port))
    assert.equal(1, mgr._server:cert_generation())
    make_pair(dir, "serving.crt", "serving.key", "second.example")
    sh("sleep 1.1")
    assert.equal("second.example", served_subject(port))
    assert.equal(2, mgr._server:cert_generation())
    -- a certificate whose key does not match: logged, the last pair stays
    make_pair(dir, "other.crt", "other.key", "third.example")
    assert(os.execute(("mv %s/other.crt %s/serving.crt"):format(dir, dir)))
    sh("sleep 1.1")
    assert.equal("second.example", served_subject(port))
    assert.equal(2, mgr._server:cert_generation())
    mgr:stop()
    sim:stop()
    os.execute("rm -rf " .. dir)
  end)

  it("makes a self-signed certificate without --metrics-cert-path; a missing pair fails the manager", function()
    local sim = assert(simmod.start{})
    local mgr = assert(kinformer.manager{ sim = sim, metrics_bind = "127.0.0.1:0", metrics_secure = true })
    assert.equal("kinformer", served_subject(mgr:metrics_port()))
    mgr:stop()
    local m2, msg = kinformer.manager{ sim = sim, metrics_bind = "127.0.0.1:0", metrics_secure = true,
      metrics_cert_path = "/nonexistent" }
    assert.is_nil(m2)
    assert.equal("certificate /nonexistent/tls.crt: no such file", msg)
    sim:stop()
  end)
end)

describe("the metrics server's listeners", function()
  it("start from a manager that raised RLIMIT_NOFILE's soft limit to the hard one", function()
    local out, rc = proc.run(("ulimit -S -n 256; %s lua5.4 -e %q 2>&1"):format(proc.paths_env(), [[
      local sim = require("kinformer.sim").start{}
      local mgr = assert(require("kinformer").manager{ sim = sim })
      for l in io.lines("/proc/self/limits") do
        if l:match("^Max open files") then print(l) end
      end
      mgr:stop() sim:stop()
    ]]))
    assert.equal(0, rc, out)
    local soft, hard = out:match("Max open files%s+(%d+)%s+(%d+)")
    assert.is_truthy(soft, out)
    assert.equal(hard, soft)
    assert.is_true(tonumber(soft) > 256)
  end)

  quiet.it(it, "log running out of file descriptors as such",
    { "out of file descriptors %(EMFILE, RLIMIT_NOFILE 64%): the metrics endpoint on port %d+" }, function()
    local cmd = [[
      local core = require "kinformer.core"
      local s = assert(core.metrics_server{ metrics_bind = "127.0.0.1:0", max_conns = 1000, max_conns_per_ip = 1000 })
      io.stdout:write(s:port("metrics"), "\n") io.stdout:flush()
      io.stdin:read("l")
      s:close()
    ]]
    local outf = os.tmpname()
    local child = assert(io.popen(("ulimit -n 64; %s lua5.4 -e %q > %s"):format(proc.paths_env(), cmd, outf), "w"))
    local port
    for _ = 1, 100 do
      port = proc.read(outf):match("(%d+)")
      if port then break end
      sh("sleep 0.1")
    end
    assert.is_truthy(port)
    local flood = sh(("sleep 1 | python3 spec/support/hold_conns.py 200 127.0.0.1 %s"):format(port))
    assert.matches("held", flood)
    child:write("\n")
    child:close()
    os.remove(outf)
  end)
end)
