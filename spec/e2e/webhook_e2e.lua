-- Webhooks against kube-apiserver (issue 25): the Website example's
-- operator with a mutating webhook and two ConfigMap webhooks added
-- (spec/fixtures/webhook_e2e/operator.lua), run by bin/kinformer with
-- --webhook-bind-address 127.0.0.1:<free port>. The manager makes its own
-- CA and serving certificate and, at start, installs its
-- ValidatingWebhookConfiguration, MutatingWebhookConfiguration and the
-- Website CRD's conversion stanza with that CA as caBundle; kube-apiserver
-- then calls it over TLS on loopback:
--   a Website without an image (or with negative replicas) is refused and
--   kubectl prints the handler's message; the mutating webhook's default
--   label is in the stored object; the CRD is served at v1 (stored) and v2,
--   each read at the other version through the conversion webhook; with
--   the operator stopped, a ConfigMap matched by the failurePolicy Fail
--   webhook is refused with kube-apiserver's "failed calling webhook" and
--   one matched by the Ignore webhook is created.
--
-- Run by make e2e-lua (cluster.sh run exports KINFORMER_E2E_*):
--   spec/e2e/cluster.sh run env LUA_PATH='lua/?.lua;lua/?/init.lua;spec/?.lua;;' \
--     LUA_CPATH='build/release/?.so;;' busted --lua=lua5.4 --pattern=_e2e spec/e2e/webhook_e2e.lua
-- Without a cluster it starts one of its own (spec/e2e/cluster.lua).
local cluster = require "e2e.cluster"
local proc = require "support.proc"
local cjson = require "cjson"

local sh = proc.sh
local NS = "webhook-e2e"
local CRD = "websites.example.kinformer.io"

local function website(version, name, spec)
  return { apiVersion = "example.kinformer.io/" .. version, kind = "Website",
           metadata = { name = name, namespace = NS }, spec = spec }
end

local function configmap(name, label)
  return { apiVersion = "v1", kind = "ConfigMap",
           metadata = { name = name, namespace = NS, labels = { ["webhook-e2e"] = label } },
           data = { k = "v" } }
end

-- Polls fn() every 0.2 s until it returns a true value (returned), for at
-- most timeout (default 30) seconds; fails naming what, with fn's last
-- second value.
local function eventually(fn, what, timeout)
  local last
  for _ = 1, (timeout or 30) * 5 do
    local v, why = fn()
    if v then return v end
    last = why
    sh("sleep 0.2")
  end
  error(("timed out waiting for %s: %s"):format(what, tostring(last)), 2)
end

describe("webhooks on kube-apiserver", function()
  local c, tmp, pid, log, port

  local function kubectl(args) return cluster.kubectl(c, args) end
  -- path of a temporary JSON file holding obj
  local function file(name, obj)
    local p = tmp .. "/" .. name .. ".json"
    proc.write(p, cjson.encode(obj))
    return p
  end
  local function get(what)
    local out, ok = kubectl("get " .. what .. " -n " .. NS .. " -o json")
    assert.is_true(ok, out)
    return cjson.decode(out)
  end

  setup(function()
    c = cluster.attach() or cluster.start()
    tmp = os.tmpname()
    os.remove(tmp)
    assert(os.execute("mkdir -p " .. tmp))
    local out, ok = kubectl("apply -f examples/website/crd.json")
    assert.is_true(ok, out)
    out, ok = kubectl("wait --for condition=Established --timeout 30s crd/" .. CRD)
    assert.is_true(ok, out)
    out, ok = kubectl("create namespace " .. NS)
    assert.is_true(ok, out)
    port = tonumber(sh([[python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])']]))
    log = tmp .. "/run.log"
    pid = sh(("%s bin/kinformer run spec/fixtures/webhook_e2e/operator.lua --kubeconfig %s "
      .. "--webhook-bind-address 127.0.0.1:%d -v >%s 2>&1 & echo $!")
      :format(proc.paths_env(), c.admin_kubeconfig, port, log)):match("%d+")
    eventually(function()
      if not os.execute("kill -0 " .. pid .. " 2>/dev/null") then error("the operator exited:\n" .. proc.read(log), 0) end
      return proc.read(log):find("caches synced", 1, true), proc.read(log)
    end, "the operator to start")
  end)

  teardown(function()
    if pid then os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
    if c and c.dir then
      -- the configurations name this operator's server: gone with it
      for _, kind in ipairs { "validatingwebhookconfigurations", "mutatingwebhookconfigurations" } do
        local names = kubectl("get " .. kind .. " -o name")
        for name in names:gmatch("[^\n]+") do kubectl("delete " .. name) end
      end
      kubectl("delete namespace " .. NS .. " --wait=false")
    end
    cluster.stop(c)
    if tmp then os.execute("rm -rf " .. tmp) end
  end)

  it("installs its configurations with the self-made CA and the loopback URL", function()
    local vwc = cjson.decode(eventually(function()
      local out, ok = kubectl("get validatingwebhookconfigurations -o json")
      return ok and #cjson.decode(out).items > 0 and out, out
    end, "the ValidatingWebhookConfiguration"))
    local urls = {}
    for _, w in ipairs(vwc.items[1].webhooks) do
      assert.matches("^https://127%.0%.0%.1:" .. port .. "/", w.clientConfig.url)
      assert.is_truthy(w.clientConfig.caBundle and #w.clientConfig.caBundle > 100)
      assert.same({ "v1" }, w.admissionReviewVersions)
      assert.equal("None", w.sideEffects)
      urls[#urls + 1] = w.clientConfig.url
    end
    assert.equal(3, #urls) -- website-validate, configmap-fail, configmap-ignore
    local crd = eventually(function()
      local out, ok = kubectl("get crd " .. CRD .. " -o json")
      local o = ok and cjson.decode(out)
      return o and o.spec.conversion.strategy == "Webhook" and o, out
    end, "the CRD's conversion stanza")
    local wh = crd.spec.conversion.webhook
    assert.matches("^https://127%.0%.0%.1:" .. port .. "/", wh.clientConfig.url)
    assert.is_truthy(#wh.clientConfig.caBundle > 100)
    assert.same({ "v1" }, wh.conversionReviewVersions)
  end)

  it("refuses a Website without an image: kubectl prints the handler's message", function()
    local bad = file("bad", website("v1", "bad", { replicas = 1 }))
    -- kube-apiserver's configuration informer sees the new configuration a
    -- moment after it is stored
    local out = eventually(function()
      local o, ok = kubectl("create -f " .. bad)
      if ok then kubectl("delete -f " .. bad) end
      return not ok and o:find("denied the request", 1, true) and o, o
    end, "the validating webhook to be called")
    assert.matches('admission webhook "[^"]+" denied the request: spec.image is required', out)
    out = kubectl("create -f " .. file("neg", website("v1", "neg", { image = "nginx", replicas = -1 })))
    assert.matches("denied the request: spec.replicas must be an integer >= 0, got %-1", out)
    -- at v2 the image is spec.container.image
    out = kubectl("create -f " .. file("bad2", website("v2", "bad2", { container = { port = 80 } })))
    assert.matches("denied the request: spec.image is required %(spec.container.image at v2%)", out)
    local _, ok = kubectl("get websites.v1.example.kinformer.io bad -n " .. NS)
    assert.is_false(ok)
  end)

  it("stores the mutating webhook's default", function()
    local out, ok = kubectl("create -f " .. file("shop", website("v1", "shop", { image = "nginx:1.27", replicas = 2 })))
    assert.is_true(ok, out)
    local site = get("websites.v1.example.kinformer.io shop")
    assert.equal("web", site.metadata.labels.tier)
    assert.equal("nginx:1.27", site.spec.image)
    -- a label given is kept
    out, ok = kubectl("create -f " .. file("blog0", {
      apiVersion = "example.kinformer.io/v1", kind = "Website",
      metadata = { name = "blog0", namespace = NS, labels = { tier = "edge" } }, spec = { image = "httpd" } }))
    assert.is_true(ok, out)
    assert.equal("edge", get("websites.v1.example.kinformer.io blog0").metadata.labels.tier)
  end)

  it("serves the CRD at v1 and v2, converting both ways", function()
    -- stored at v1, read at v2
    local v2 = get("websites.v2.example.kinformer.io shop")
    assert.equal("example.kinformer.io/v2", v2.apiVersion)
    assert.same({ image = "nginx:1.27", port = 80 }, v2.spec.container)
    assert.equal(2, v2.spec.replicas)
    assert.is_nil(v2.spec.image)
    assert.is_nil(v2.spec.port)
    -- written at v2 (converted to v1 to be stored), read at v1
    local out, ok = kubectl("create -f " .. file("blog", website("v2", "blog",
      { container = { image = "httpd:2.4", port = 8081 }, replicas = 1 })))
    assert.is_true(ok, out)
    local v1 = get("websites.v1.example.kinformer.io blog")
    assert.equal("example.kinformer.io/v1", v1.apiVersion)
    assert.equal("httpd:2.4", v1.spec.image)
    assert.equal(8081, v1.spec.port)
    assert.is_nil(v1.spec.container)
    assert.equal("web", v1.metadata.labels.tier)
    -- a list at v2 converts each item
    local list = get("websites.v2.example.kinformer.io")
    local images = {}
    for _, s in ipairs(list.items) do images[s.metadata.name] = s.spec.container.image end
    assert.same({ shop = "nginx:1.27", blog = "httpd:2.4", blog0 = "httpd" }, images)
  end)

  it("with the server stopped: failurePolicy Fail refuses, Ignore admits", function()
    -- while it runs, both are admitted
    for _, p in ipairs { "fail", "ignore" } do
      local out, ok = kubectl("create -f " .. file("cm-up-" .. p, configmap("up-" .. p, p)))
      assert.is_true(ok, out)
    end
    os.execute("kill -TERM " .. pid)
    eventually(function() return not os.execute("kill -0 " .. pid .. " 2>/dev/null") end, "the operator to exit")
    pid = nil
    local out, ok = kubectl("create -f " .. file("cm-fail", configmap("down-fail", "fail")))
    assert.is_false(ok, out)
    assert.matches('failed calling webhook "configmap%-fail[^"]*"', out)
    assert.matches("connect: connection refused", out, 1, true)
    out, ok = kubectl("create -f " .. file("cm-ignore", configmap("down-ignore", "ignore")))
    assert.is_true(ok, out)
    local _, found = kubectl("get configmap down-ignore -n " .. NS)
    assert.is_true(found)
  end)
end)
