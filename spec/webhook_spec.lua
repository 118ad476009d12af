-- mgr:webhook over HTTPS (issue 25): a manager on kinformer.sim serves its
-- hooks on 127.0.0.1:<free port> with a self-made certificate; reviews are
-- POSTed with curl as kube-apiserver would send them, and the answers
-- checked: validate (allow, deny with message and warnings), mutate (the
-- JSONPatch, decoded and applied), convert (v1 <-> v2), the closure rules,
-- deadlines (a looping handler answered in time), errors naming file:line,
-- memory limits, metrics and concurrency. Handlers that fail on purpose
-- run in a child (spec/support/quiet.lua) so their log lines are captured.
local core = require "kinformer.core"
local kin = require "kinformer"
local P = require "kinformer.webhook_patch"
local proc = require "support.proc"
local quiet = require "support.quiet"

local function new_mgr(extra)
  local sim = assert(require("kinformer.sim").start {})
  -- over the sim's URL: a manager on the sim (sim =) would register its hooks in process
  local opts = { url = sim.url, webhook_bind_address = "127.0.0.1:0", webhook_configure = false }
  for k, v in pairs(extra or {}) do opts[k] = v end
  if opts.webhook_cert_path then opts.webhook_configure = nil end -- its default: false
  local mgr = assert(kin.manager(opts))
  return mgr, sim
end

local function review(op, obj, old, extra)
  local r = {
    uid = "uid-1", operation = op,
    kind = { group = "example.com", version = "v1", kind = "Website" },
    resource = { group = "example.com", version = "v1", resource = "websites" },
    name = obj and obj.metadata.name or old.metadata.name, namespace = "default",
    userInfo = { username = "alice", groups = { "dev" } },
    object = obj, oldObject = old, dryRun = false,
  }
  for k, v in pairs(extra or {}) do r[k] = v end
  return { apiVersion = "admission.k8s.io/v1", kind = "AdmissionReview", request = r }
end

local function site(spec, name)
  return { apiVersion = "example.com/v1", kind = "Website", metadata = { name = name or "w1", namespace = "default" },
           spec = spec }
end

-- POSTs the review (a table) to the hook; returns the HTTP status, the
-- decoded answer (or the raw text) and the seconds from the request sent
-- (TLS set up) to the answer.
local function post(mgr, path, body, query)
  local f = proc.write_tmp(core.json_encode(body))
  local out = proc.sh(("curl -sk --max-time 40 -X POST -H 'Content-Type: application/json' --data-binary @%s "
    .. "-w '\\n%%{http_code} %%{time_pretransfer} %%{time_total}' 'https://127.0.0.1:%d%s%s'"):format(f, mgr:webhook_port(), path,
    query or ""))
  os.remove(f)
  local text, code, t0, t1 = out:match("^(.*)\n(%d+) ([%d.]+) ([%d.]+)$")
  local ok, dec = pcall(core.json_decode, text)
  return tonumber(code), ok and dec or text, t1 and (tonumber(t1) - tonumber(t0)) -- from the request sent
end

local function b64decode(s)
  local f = proc.write_tmp(s)
  local out = proc.sh("base64 -d " .. f)
  os.remove(f)
  return out
end

describe("mgr:webhook over HTTPS", function()
  local mgr, sim
  after_each(function()
    if mgr then mgr:stop() end
    if sim then sim:stop() end
    mgr, sim = nil, nil
  end)

  it("validates: allows, denies with the message, returns warnings", function()
    mgr, sim = new_mgr()
    local wh = mgr:webhook { name = "website-validate", resources = { "websites.example.com" },
      validate = function(req, ctx)
        local spec = req.object.spec
        if not spec.image then return false, "spec.image is required", { "see the docs" } end
        if spec.replicas and spec.replicas < 0 then return false, "replicas must be >= 0" end
        ctx:warn("user " .. req.user_info.username .. " " .. req.operation .. " " .. req.namespace .. "/" .. req.name)
        return true, nil, { "third value" }
      end }
    assert.are.equal("website-validate", wh:name())
    assert.are.equal("validating", wh:type())
    assert.truthy(wh:path():find("^/validate%-example%-com%-"), wh:path()) -- kinformer.webhook_config's
    assert(mgr:start())
    assert.is_number(mgr:webhook_port())
    local code, ans = post(mgr, wh:path(), review("CREATE", site({ replicas = 1 })))
    assert.are.equal(200, code)
    assert.are.equal("uid-1", ans.response.uid)
    assert.is_false(ans.response.allowed)
    assert.are.equal("spec.image is required", ans.response.status.message)
    assert.are.equal(403, ans.response.status.code)
    assert.are.same({ "see the docs" }, ans.response.warnings)
    code, ans = post(mgr, wh:path(), review("CREATE", site({ image = "nginx", replicas = -1 })))
    assert.are.equal(200, code)
    assert.is_false(ans.response.allowed)
    assert.are.equal("replicas must be >= 0", ans.response.status.message)
    code, ans = post(mgr, wh:path(), review("UPDATE", site({ image = "nginx" }), site({})))
    assert.are.equal(200, code)
    assert.is_true(ans.response.allowed)
    assert.are.same({ "third value", "user alice UPDATE default/w1" }, ans.response.warnings)
    assert.is_string(mgr:webhook_ca())
    assert.truthy(mgr:webhook_ca():find("BEGIN CERTIFICATE", 1, true))
  end)

  it("mutates: the JSONPatch turns the object into what the handler left", function()
    mgr, sim = new_mgr()
    local DEFAULT_REPLICAS = 2
    local function defaults(spec) -- a local helper: copied with the handler
      spec.replicas = spec.replicas or DEFAULT_REPLICAS
      spec.tags = nil
    end
    local wh = mgr:webhook { name = "website-default", resources = { "websites.example.com" },
      mutate = function(req, ctx)
        defaults(req.object.spec)
        req.object.metadata.labels = { ["app.kubernetes.io/name"] = req.object.metadata.name }
        if req.object.spec.image == "replace-me" then
          local o = { apiVersion = req.object.apiVersion, kind = req.object.kind, metadata = { name = "w1",
            namespace = "default" }, spec = { image = "new" } }
          return o
        end
        if req.object.spec.image == "deny" then return false, "no" end
        ctx:warn("defaulted")
      end }
    assert.are.equal("mutating", wh:type())
    assert(mgr:start())
    local obj = site({ image = "nginx", tags = { "a", "b" } })
    local code, ans = post(mgr, wh:path(), review("CREATE", obj))
    assert.are.equal(200, code)
    assert.is_true(ans.response.allowed)
    assert.are.equal("JSONPatch", ans.response.patchType)
    assert.are.same({ "defaulted" }, ans.response.warnings)
    local ops = core.json_decode(b64decode(ans.response.patch))
    assert.are.same({ -- an object's removals first, then its additions and changes, each in key order
      { op = "add", path = "/metadata/labels", value = { ["app.kubernetes.io/name"] = "w1" } },
      { op = "remove", path = "/spec/tags" },
      { op = "add", path = "/spec/replicas", value = 2 },
    }, ops)
    local want = site({ image = "nginx", replicas = 2 })
    want.metadata.labels = { ["app.kubernetes.io/name"] = "w1" }
    assert.is_true(P.equal(want, assert(P.apply(obj, ops))))
    -- a new object returned
    obj = site({ image = "replace-me", replicas = 5 })
    code, ans = post(mgr, wh:path(), review("CREATE", obj))
    assert.are.equal(200, code)
    ops = core.json_decode(b64decode(ans.response.patch))
    assert.is_true(P.equal(site({ image = "new" }), assert(P.apply(obj, ops))))
    -- a denial
    code, ans = post(mgr, wh:path(), review("CREATE", site({ image = "deny" })))
    assert.are.equal(200, code)
    assert.is_false(ans.response.allowed)
    assert.are.equal("no", ans.response.status.message)
    assert.is_nil(ans.response.patch)
  end)

  it("converts every object of a ConversionReview, v1 <-> v2", function()
    mgr, sim = new_mgr()
    local wh = mgr:webhook { name = "website-convert", resources = { "websites.example.com" },
      convert = function(obj, to, ctx)
        assert(ctx.webhook == "website-convert")
        if to == "example.com/v2" then
          obj.spec.container = { image = obj.spec.image }
          obj.spec.image = nil
        else
          obj.spec.image = obj.spec.container.image
          obj.spec.container = nil
          obj.apiVersion = to
        end
        return obj
      end }
    assert.are.equal("conversion", wh:type())
    assert.are.equal("/convert-websites-example-com", wh:path())
    assert(mgr:start())
    local req = { apiVersion = "apiextensions.k8s.io/v1", kind = "ConversionReview", request = {
      uid = "c1", desiredAPIVersion = "example.com/v2",
      objects = { site({ image = "a" }, "w1"), site({ image = "b" }, "w2") } } }
    local code, ans = post(mgr, wh:path(), req)
    assert.are.equal(200, code)
    assert.are.equal("c1", ans.response.uid)
    assert.are.equal("Success", ans.response.result.status)
    local conv = ans.response.convertedObjects
    assert.are.equal(2, #conv)
    assert.are.equal("example.com/v2", conv[1].apiVersion)
    assert.are.same({ container = { image = "a" } }, conv[1].spec)
    assert.are.equal("w2", conv[2].metadata.name)
    -- and back
    req.request.desiredAPIVersion = "example.com/v1"
    req.request.objects = conv
    code, ans = post(mgr, wh:path(), req)
    assert.are.equal(200, code)
    assert.are.equal("example.com/v1", ans.response.convertedObjects[2].apiVersion)
    assert.are.same({ image = "b" }, ans.response.convertedObjects[2].spec)
  end)

  it("copies upvalues per state and gives ctx the manager's client and listers", function()
    mgr, sim = new_mgr()
    local seen = { n = 0 }
    local limits = { max = 3 }
    assert(mgr.client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
      metadata = { name = "quota", namespace = "default" }, data = { max = "1" } }))
    local wh = mgr:webhook { name = "uses-ctx", resources = { "websites.example.com" }, workers = 1,
      validate = function(req, ctx)
        seen.n = seen.n + 1 -- the state's own copy
        local cm, err = ctx.client:get("v1/configmaps", "default", "quota")
        if not cm then return false, "client: " .. tostring(err) end
        local l = ctx:lister("v1/configmaps")
        if req.object.spec.n > limits.max then return false, "over " .. limits.max end
        return true, nil, { "n=" .. seen.n, "max=" .. cm.data.max, "lister=" .. tostring(l ~= nil),
          "deadline=" .. tostring(ctx.deadline > core.monotime()) }
      end }
    assert(mgr:start())
    local _, ans = post(mgr, wh:path(), review("CREATE", site({ n = 1 })))
    assert.is_true(ans.response.allowed)
    _, ans = post(mgr, wh:path(), review("CREATE", site({ n = 2 })))
    assert.are.same({ "n=2", "max=1", "lister=false", "deadline=true" }, ans.response.warnings)
    _, ans = post(mgr, wh:path(), review("CREATE", site({ n = 4 })))
    assert.are.equal("over 3", ans.response.status.message)
    assert.are.equal(0, seen.n) -- the main state's table is untouched
  end)

  it("adds a hook registered after start at once", function()
    mgr, sim = new_mgr()
    mgr:webhook { name = "first", resources = { "websites.example.com" }, validate = function() return true end }
    assert(mgr:start())
    local wh = assert(mgr:webhook { name = "late", resources = { "apps/v1/deployments" },
      validate = function() return false, "late hook" end })
    local _, ans = post(mgr, wh:path(), review("CREATE", site({})))
    assert.are.equal("late hook", ans.response.status.message)
  end)

  it("refuses misuse at the caller's line", function()
    mgr, sim = new_mgr()
    mgr:webhook { name = "a", resources = { "websites.example.com" }, validate = function() return true end }
    local ok, err = pcall(mgr.webhook, mgr, { name = "a", resources = { "pods" }, validate = function() end })
    assert.is_false(ok)
    assert.truthy(err:find('"a" is already registered', 1, true), err)
    ok, err = pcall(mgr.webhook, mgr, { name = "b", resources = { "pods" }, workers = 0, validate = function() end })
    assert.is_false(ok)
    assert.truthy(err:find("workers", 1, true), err)
    local co = coroutine.create(function() end)
    ok, err = pcall(mgr.webhook, mgr, { name = "c", resources = { "pods" },
      validate = function() return co end })
    assert.is_false(ok)
    assert.truthy(err:find("co", 1, true), err)
    ok, err = pcall(kin.manager, { sim = sim, webhook_configure = "yes" })
    assert.is_false(ok)
    assert.truthy(err:find("webhook_configure", 1, true), err)
  end)

  -- Two reviews sent together: each handler computes for 0.4 s and reports
  -- when it ran; with 2 workers the runs overlap, with 1 they follow each
  -- other (the second waited for the one state).
  local function two_at_once(workers)
    mgr, sim = new_mgr()
    local wh = mgr:webhook { name = "busy", resources = { "websites.example.com" }, workers = workers,
      validate = function()
        local c = require "kinformer.core"
        local t0 = c.monotime()
        while c.monotime() - t0 < 0.4 do end
        return true, nil, { ("%.6f %.6f"):format(t0, c.monotime()) }
      end }
    assert(mgr:start())
    local f = proc.write_tmp(core.json_encode(review("CREATE", site({}))))
    local url = ("https://127.0.0.1:%d%s"):format(mgr:webhook_port(), wh:path())
    local outs = { os.tmpname(), os.tmpname() }
    assert(os.execute(("for o in %s %s; do curl -sk --max-time 20 -X POST -H 'Content-Type: application/json' "
      .. "--data-binary @%s '%s' -o $o & done; wait"):format(outs[1], outs[2], f, url)))
    os.remove(f)
    local runs = {}
    for i, o in ipairs(outs) do
      local ans = core.json_decode(proc.slurp(o))
      local a, b = ans.response.warnings[1]:match("^(%S+) (%S+)$")
      runs[i] = { tonumber(a), tonumber(b) }
    end
    table.sort(runs, function(x, y) return x[1] < y[1] end)
    return runs
  end

  it("serves `workers` reviews at once", function()
    local runs = two_at_once(2)
    assert.is_true(runs[2][1] < runs[1][2], "the two runs did not overlap: " .. core.json_encode(runs))
  end)

  it("queues reviews past `workers` until a state is free", function()
    local runs = two_at_once(1)
    assert.is_true(runs[2][1] >= runs[1][2], "the two runs overlapped: " .. core.json_encode(runs))
  end)

  -- Starts a manager with the hook name (validate, a 2 s timeout) and
  -- asserts that a review's answer is the 500 denial of a handler that ran
  -- out of time, given before the timeout. Returns the hook and the answer.
  local function timed_out(name, validate)
    mgr, sim = new_mgr()
    local wh = mgr:webhook { name = name, resources = { "websites.example.com" }, timeout = 2,
      validate = validate }
    assert(mgr:start())
    local code, ans, took = post(mgr, wh:path(), review("CREATE", site({})), "?timeout=2s")
    assert.are.equal(200, code)
    assert.is_false(ans.response.allowed)
    assert.are.equal(500, ans.response.status.code)
    assert.truthy(ans.response.status.message:find("timed out after", 1, true), ans.response.status.message)
    assert.is_true(took < 2, "answered after " .. took .. " s")
    return wh, ans
  end

  quiet.it(it, "answers a looping handler with a 500 denial before its timeout",
    { "webhook loops: timed out after" }, function()
    local wh, ans = timed_out("loops", function()
      local x = 0
      while true do x = x + 1 end
    end)
    local msg = ans.response.status.message
    assert.truthy(msg:find("loops", 1, true), msg)
    assert.truthy(msg:find("webhook_spec.lua:%d+"), msg)
    -- the state serves the next review
    local code
    code, ans = post(mgr, wh:path(), review("CREATE", site({})), "?timeout=1s")
    assert.are.equal(200, code)
    assert.are.equal(500, ans.response.status.code)
  end)

  -- the test reads curl's answer through io.popen: a handler's os.execute
  -- must not wait for that stream's lock (fflush(NULL) did, past the deadline)
  quiet.it(it, "cuts a handler's os.execute at the deadline while the caller reads an io.popen stream",
    { "webhook sleeps: timed out after" }, function()
    timed_out("sleeps", function()
      os.execute("sleep 30")
      return true
    end)
  end)

  quiet.it(it, "names the file:line of a handler's error",
    { "webhook raises: .*webhook_spec.lua:%d+: boom", "stack traceback" }, function()
    mgr, sim = new_mgr()
    local wh = mgr:webhook { name = "raises", resources = { "websites.example.com" },
      validate = function(req) if req.object.spec.x then error("boom") end return true end }
    local cv = mgr:webhook { name = "convert-raises", resources = { "websites.example.com" },
      convert = function() error({}) end }
    assert(mgr:start())
    local code, ans = post(mgr, wh:path(), review("CREATE", site({ x = 1 })))
    assert.are.equal(200, code)
    assert.is_false(ans.response.allowed)
    assert.are.equal(500, ans.response.status.code)
    assert.truthy(ans.response.status.message:find("^webhook raises: .*webhook_spec.lua:%d+: boom$"),
      ans.response.status.message)
    code, ans = post(mgr, wh:path(), review("CREATE", site({})))
    assert.are.equal(200, code)
    assert.is_true(ans.response.allowed)
    code, ans = post(mgr, cv:path(), { apiVersion = "apiextensions.k8s.io/v1", kind = "ConversionReview",
      request = { uid = "c", desiredAPIVersion = "example.com/v2", objects = { site({}) } } })
    assert.are.equal(200, code)
    assert.are.equal("Failure", ans.response.result.status)
    assert.truthy(ans.response.result.message:find("convert-raises", 1, true), ans.response.result.message)
    -- counted as controller-runtime counts a handler's panic
    local text = core.metrics_render()
    assert.truthy(text:find("\ncontroller_runtime_webhook_panics_total [1-9]"), text)
    assert.truthy(text:find("\ncontroller_runtime_conversion_webhook_panics_total [1-9]"), text)
  end)

  quiet.it(it, "answers a handler past its memory limit and rebuilds its state",
    { "webhook hog: out of memory", "built a new one" }, function()
    mgr, sim = new_mgr()
    local wh = mgr:webhook { name = "hog", resources = { "websites.example.com" }, memory_limit = 4 * 1024 * 1024,
      workers = 1, validate = function(req)
        if req.object.spec.hog then
          local t = {}
          for i = 1, 1e8 do t[i] = ("x"):rep(64) .. i end
          return #t > 0
        end
        return true
      end }
    assert(mgr:start())
    local _, ans = post(mgr, wh:path(), review("CREATE", site({ hog = true })))
    assert.is_false(ans.response.allowed)
    assert.are.equal(500, ans.response.status.code)
    assert.truthy(ans.response.status.message:find("out of memory", 1, true), ans.response.status.message)
    _, ans = post(mgr, wh:path(), review("CREATE", site({})))
    assert.is_true(ans.response.allowed)
  end)

  it("counts reviews in controller-runtime's metrics on the manager's /metrics", function()
    mgr, sim = new_mgr { metrics_bind = "127.0.0.1:0" }
    local wh = mgr:webhook { name = "counted", resources = { "websites.example.com" },
      validate = function() return true end }
    assert(mgr:start())
    post(mgr, wh:path(), review("CREATE", site({})))
    local text = proc.sh(("curl -s http://127.0.0.1:%d/metrics"):format(mgr:metrics_port()))
    assert.truthy(text:find('controller_runtime_webhook_requests_total{webhook="' .. wh:path() .. '",code="200"} 1',
      1, true), text)
    assert.truthy(text:find("controller_runtime_webhook_latency_seconds_bucket", 1, true))
    assert.truthy(text:find("controller_runtime_webhook_requests_in_flight", 1, true))
  end)

  it("applies its configuration with the self-made CA at start (webhook_configure)", function()
    mgr, sim = new_mgr { name = "wh-install", webhook_configure = true, webhook_host = "localhost" }
    local wh = mgr:webhook { name = "cm-check", resources = { "v1/configmaps" }, failure_policy = "Ignore",
      validate = function(req) return req.name ~= "forbidden", "forbidden name" end }
    assert(mgr:start())
    local vwc = assert(mgr.client:get("admissionregistration.k8s.io/v1/validatingwebhookconfigurations", nil,
      "wh-install"))
    local w = vwc.webhooks[1]
    assert.are.equal(("https://localhost:%d%s"):format(mgr:webhook_port(), wh:path()), w.clientConfig.url)
    assert.are.equal(require("kinformer.webhook").base64(mgr:webhook_ca()), w.clientConfig.caBundle)
    assert.are.equal("Ignore", w.failurePolicy)
    -- the serving certificate is signed by that CA for webhook_host
    local ca = proc.write_tmp(mgr:webhook_ca())
    local out = proc.sh(("curl -s --cacert %s -o /dev/null -w '%%{http_code}' -X POST -H 'Content-Type: "
      .. "application/json' --data-binary '{}' 'https://localhost:%d%s'"):format(ca, mgr:webhook_port(), wh:path()))
    os.remove(ca)
    assert.are.equal("400", out) -- TLS verified; the empty body is no review
    -- the sim calls it over HTTPS, as kube-apiserver would
    local cm = { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = "default", name = "forbidden" } }
    local ok, err = mgr.client:create(cm)
    assert.is_nil(ok)
    assert.truthy(tostring(err):find("forbidden name", 1, true), err)
    cm.metadata.name = "fine"
    assert(mgr.client:create(cm))
    -- a hook added after start is applied too
    assert(mgr:webhook { name = "late", resources = { "v1/secrets" }, validate = function() return true end })
    vwc = assert(mgr.client:get("admissionregistration.k8s.io/v1/validatingwebhookconfigurations", nil, "wh-install"))
    assert.are.equal(2, #vwc.webhooks)
  end)

  it("applies its configuration on a replica that does not lead (writes outside the leadership fence)", function()
    local now = os.date("!%Y-%m-%dT%H:%M:%S.000000Z")
    mgr, sim = new_mgr { name = "wh-follower", webhook_configure = true, webhook_host = "localhost",
      leader_election = { name = "wh-follower", namespace = "default", lease_duration = 60 } }
    -- another replica holds the Lease for the next minute
    local env = assert(core.env { url = sim.url })
    assert(env:client():create("coordination.k8s.io/v1/leases", { metadata = { name = "wh-follower",
      namespace = "default" }, spec = { holderIdentity = "other", leaseDurationSeconds = 60, acquireTime = now,
      renewTime = now } }))
    mgr:webhook { name = "cm-check", resources = { "v1/configmaps" }, validate = function() return true end }
    assert(mgr:start())
    assert.is_false(mgr:leader_election().is_leader)
    local vwc = assert(mgr.client:get("admissionregistration.k8s.io/v1/validatingwebhookconfigurations", nil,
      "wh-follower"))
    assert.are.equal(require("kinformer.webhook").base64(mgr:webhook_ca()), vwc.webhooks[1].clientConfig.caBundle)
    -- the manager's own client stays fenced: a follower writes nothing else
    local ok, _, code = mgr.client:create({ apiVersion = "v1", kind = "ConfigMap",
      metadata = { namespace = "default", name = "x" } })
    assert.is_nil(ok)
    assert.are.equal("EFENCED", code)
    env:shutdown()
  end)

  it("serves the key pair of webhook_cert_path (no CA made, nothing applied by default)", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    proc.sh(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost "
      .. "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout %s/k.pem -out %s/c.pem 2>/dev/null"):format(dir, dir))
    mgr, sim = new_mgr { name = "wh-files", webhook_cert_path = dir,
      webhook_cert_name = "c.pem", webhook_cert_key = "k.pem" }
    local wh = mgr:webhook { name = "ok", resources = { "v1/configmaps" }, validate = function() return true end }
    assert(mgr:start())
    assert.is_nil(mgr:webhook_ca())
    local out = proc.sh(("curl -s --cacert %s/c.pem -o /dev/null -w '%%{http_code}' -X POST -H 'Content-Type: "
      .. "application/json' --data-binary '{}' 'https://127.0.0.1:%d%s'"):format(dir, mgr:webhook_port(), wh:path()))
    assert.are.equal("400", out) -- verified against the files' certificate
    assert.is_nil(mgr.client:get("admissionregistration.k8s.io/v1/validatingwebhookconfigurations", nil, "wh-files"))
    os.execute("rm -rf " .. dir)
  end)

  it("base64 encodes as RFC 4648", function()
    local b = require("kinformer.webhook").base64
    assert.are.equal("", b(""))
    assert.are.equal("Zg==", b("f"))
    assert.are.equal("Zm8=", b("fo"))
    assert.are.equal("Zm9v", b("foo"))
    assert.are.equal("Zm9vYmFy", b("foobar"))
  end)

  it("serves no HTTPS on a sim unless webhook_bind_address is given; srv:serve answers in memory", function()
    local s = assert(require("kinformer.sim").start {})
    sim = s
    mgr = assert(kin.manager { sim = s })
    local wh = mgr:webhook { name = "mem", resources = { "websites.example.com" },
      validate = function(req) return req.dry_run, "dry runs only" end }
    assert(mgr:start())
    assert.is_nil(mgr:webhook_port())
    assert.is_nil(mgr:webhook_ca())
    local srv = require("kinformer.webhook").server(mgr)
    local st, text = srv:serve(wh:path(), core.json_encode(review("CREATE", site({}), nil, { dryRun = true })))
    assert.are.equal(200, st)
    assert.is_true(core.json_decode(text).response.allowed)
    st, text = srv:serve(wh:path(), core.json_encode(review("CREATE", site({}))))
    assert.are.equal(200, st)
    assert.are.equal("dry runs only", core.json_decode(text).response.status.message)
  end)
end)
