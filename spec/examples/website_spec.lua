-- examples/website: the Website operator run as `kinformer run
-- examples/website/operator.lua --namespace NS -v` against kinformer.sim,
-- or the real kube-apiserver under `make e2e-lua`.
local h = require "examples.helper"
local cjson = require "cjson"
local core = require "kinformer.core"
local kinformer = require "kinformer"

-- kube-controller-manager's garbage collector looks for new resources
-- every 30 s (GarbageCollector.Sync): an owner of a kind created since is
-- not watched yet, and its deletion would go unseen.
local GC_DISCOVERY_S = 35

local RES = "example.kinformer.io/v1/websites"

local function read_json(path)
  return cjson.decode(h.read(path))
end

local function ready(site)
  for _, c in ipairs(site.status and site.status.conditions or {}) do
    if c.type == "Ready" then return c end
  end
  return nil
end

-- The events.k8s.io/v1 Events about Website name in ns whose note matches
-- pattern (plain), waiting until there is one.
local function wait_event(t, ns, name, reason, note)
  return h.eventually(function()
    local l = t.client:list("events.k8s.io/v1/events", ns)
    for _, e in ipairs(l and l.items or {}) do
      if e.reason == reason and e.regarding and e.regarding.name == name
         and e.note and e.note:find(note, 1, true) then
        return e
      end
    end
    return nil, "no " .. reason .. " event matching " .. note
  end, reason .. " event of Website " .. name)
end

local function website(ns, name, spec)
  return { apiVersion = "example.kinformer.io/v1", kind = "Website",
           metadata = { name = name, namespace = ns }, spec = spec }
end

describe("examples/website", function()
  local t, ns, op, crd_created

  setup(function()
    t = h.target()
    -- the CRD (crd.json) first, then wait until the server serves it
    local _, err, code = t.client:create("apiextensions.k8s.io/v1/customresourcedefinitions",
      read_json("examples/website/crd.json"))
    assert(not err or code == "AlreadyExists", err)
    if not err then crd_created = core.monotime() end
    h.eventually(function() return t.client:list(RES, "default") end, "the Website CRD to be served")
    ns = h.namespace(t, "website")
    -- its webhooks on a free port (installed on the target, which calls them over HTTPS)
    op = h.operator("examples/website/operator.lua", t,
      { "--namespace", ns, "-v", "--webhook-bind-address", "127.0.0.1:0" })
    op:wait_output("caches synced", "err")
  end)

  -- The operator's webhooks outlive it on the server (other replicas would
  -- serve them): with failurePolicy Fail and a conversion webhook pointing
  -- at a stopped process, every later Website write on this server would
  -- fail. Take them off as an operator's uninstall would.
  local function uninstall_webhooks()
    for _, kind in ipairs { "validatingwebhookconfigurations", "mutatingwebhookconfigurations" } do
      local res = "admissionregistration.k8s.io/v1/" .. kind
      for _, c in ipairs((t.client:list(res) or { items = {} }).items) do
        for _, w in ipairs(c.webhooks or {}) do
          if w.name:match("^website%-") and (w.clientConfig.url or ""):match("^https://127%.0%.0%.1:") then
            assert(t.client:delete(res, nil, c.metadata.name))
            break
          end
        end
      end
    end
    local crd = "websites.example.kinformer.io"
    assert(t.client:patch("apiextensions.k8s.io/v1/customresourcedefinitions", nil, crd,
      { spec = { conversion = { strategy = "None", webhook = core.null } } }, { type = "merge" }))
  end

  teardown(function()
    if op then op:cleanup() end
    if t then
      uninstall_webhooks()
      if ns then h.cleanup_namespace(t, ns, { RES, "apps/v1/deployments", "v1/services" }) end
      t.stop()
    end
  end)

  -- waits until the Website is Ready for its current generation; returns it
  local function wait_ready(name)
    return h.eventually(function()
      local site = t.client:get(RES, ns, name)
      local c = site and ready(site)
      if c and c.status == "True" and c.observedGeneration == site.metadata.generation then return site end
      return nil, site and cjson.encode(site.status or {}) or "no website"
    end, "Website " .. name .. " Ready for its generation")
  end

  it("creates a Deployment and a Service owned by the Website and sets Ready", function()
    local created = assert(t.client:create(RES, website(ns, "shop", { image = "nginx:1.27", replicas = 2, port = 8080 })))
    local site = wait_ready("shop")
    assert.equal(created.metadata.uid, site.metadata.uid)
    assert.is_nil(site.metadata.finalizers) -- the garbage collector deletes the children
    local c = ready(site)
    assert.equal("Reconciled", c.reason)
    assert.is_string(c.lastTransitionTime)
    assert.equal(site.metadata.generation, site.status.observedGeneration)

    local dep = assert(t.client:get("apps/v1/deployments", ns, "shop"))
    assert.equal(2, dep.spec.replicas)
    assert.equal("nginx:1.27", dep.spec.template.spec.containers[1].image)
    assert.equal(8080, dep.spec.template.spec.containers[1].ports[1].containerPort)
    local ref = h.controller_ref(dep)
    assert.same({ "Website", "shop", site.metadata.uid, "example.kinformer.io/v1", true },
      { ref.kind, ref.name, ref.uid, ref.apiVersion, ref.blockOwnerDeletion })

    local svc = assert(t.client:get("v1/services", ns, "shop"))
    assert.equal(8080, svc.spec.ports[1].port)
    assert.equal("shop", svc.spec.selector["app.kubernetes.io/instance"])
    assert.equal(site.metadata.uid, h.controller_ref(svc).uid)

    -- Events about the Website (ctx:event), from the controller "website"
    local ev = wait_event(t, ns, "shop", "Created", "created Deployment " .. ns .. "/shop (replicas 2, image nginx:1.27)")
    assert.equal("Normal", ev.type)
    assert.equal("website", ev.reportingController)
    assert.same({ "Website", "example.kinformer.io/v1", ns, site.metadata.uid },
      { ev.regarding.kind, ev.regarding.apiVersion, ev.regarding.namespace, ev.regarding.uid })
    ev = wait_event(t, ns, "shop", "Created", "created Service " .. ns .. "/shop (port 8080)")
    assert.equal("Normal", ev.type)
  end)

  it("scales and changes the image, with observedGeneration following", function()
    local site = assert(t.client:patch(RES, ns, "shop", { spec = { replicas = 3 } }, { type = "merge" }))
    local gen = site.metadata.generation
    h.eventually(function()
      local dep = t.client:get("apps/v1/deployments", ns, "shop")
      return dep and dep.spec.replicas == 3
    end, "the Deployment scaled to 3")
    assert.equal(gen, ready(wait_ready("shop")).observedGeneration)

    site = assert(t.client:patch(RES, ns, "shop", { spec = { image = "nginx:1.28" } }, { type = "merge" }))
    assert.is_true(site.metadata.generation > gen)
    h.eventually(function()
      local dep = t.client:get("apps/v1/deployments", ns, "shop")
      return dep and dep.spec.template.spec.containers[1].image == "nginx:1.28"
    end, "the Deployment's image changed")
    assert.equal(site.metadata.generation, wait_ready("shop").status.observedGeneration)
  end)

  it("recreates a Deployment deleted behind its back (Owns)", function()
    local old = assert(t.client:get("apps/v1/deployments", ns, "shop"))
    assert(t.client:delete("apps/v1/deployments", ns, "shop"))
    local dep = h.eventually(function()
      local d = t.client:get("apps/v1/deployments", ns, "shop")
      return d and d.metadata.uid ~= old.metadata.uid and d
    end, "the Deployment to be recreated")
    assert.equal(3, dep.spec.replicas)
    assert.equal("nginx:1.28", dep.spec.template.spec.containers[1].image)
  end)

  it("leaves the children to the garbage collector when the Website is deleted", function()
    assert(t.client:get("apps/v1/deployments", ns, "shop"))
    if t.real and crd_created then -- the real GC must be watching Websites
      local left = crd_created + GC_DISCOVERY_S - core.monotime()
      if left > 0 then h.sleep(left) end
    end
    assert(t.client:delete(RES, ns, "shop"))
    local _, _, code = t.client:get(RES, ns, "shop")
    assert.equal("NotFound", code) -- no finalizer holds it
    local wait = t.real and 60 or nil
    h.eventually(function()
      local _, _, dcode = t.client:get("apps/v1/deployments", ns, "shop")
      local _, _, scode = t.client:get("v1/services", ns, "shop")
      return dcode == "NotFound" and scode == "NotFound", dcode, scode
    end, "the garbage collector to delete the Deployment and Service", wait)
    -- and the operator does not recreate them for the deleted Website
    h.sleep(0.5)
    assert.equal("NotFound", select(3, t.client:get("apps/v1/deployments", ns, "shop")))
  end)

  it("reports an invalid spec in Ready=False without retrying", function()
    if t.real then
      -- the real server validates spec.port against the CRD schema (1-65535)
      local _, _, code = t.client:create(RES, website(ns, "bad", { image = "nginx", port = 70000 }))
      assert.equal("Invalid", code)
      return
    end
    assert(t.client:create(RES, website(ns, "bad", { image = "nginx", port = 70000 })))
    local site = h.eventually(function()
      local s = t.client:get(RES, ns, "bad")
      local c = s and ready(s)
      return c and c.status == "False" and s
    end, "Ready=False on the invalid Website")
    assert.equal("InvalidSpec", ready(site).reason)
    local ev = wait_event(t, ns, "bad", "InvalidSpec", "spec.port must be 1-65535")
    assert.equal("Warning", ev.type)
    assert.matches("spec.port", ready(site).message, 1, true)
    local _, _, code = t.client:get("apps/v1/deployments", ns, "bad")
    assert.equal("NotFound", code)
    op:wait_output("website " .. h.esc(ns) .. "/bad: terminal: invalid Website", "err")
    -- deleting it goes at once: no finalizer
    assert(t.client:delete(RES, ns, "bad"))
    h.eventually(function()
      local _, _, c = t.client:get(RES, ns, "bad")
      return c == "NotFound"
    end, "the invalid Website to be gone")
  end)

  it("logged one line per reconcile (-v) and exits 0 on SIGTERM", function()
    local err = op:stderr()
    assert.matches("%[reconcile%] website " .. h.esc(ns) .. "/shop: done %(%d+%.%d ms%)", err)
    assert.matches("created Deployment " .. h.esc(ns) .. "/shop", err)
    assert.equal(0, op:stop("TERM"))
    assert.matches("kinformer: stopped", op:stderr(), 1, true)
  end)
end)

-- The example's webhooks called by kinformer.sim's admission chain in
-- process: a manager on the sim (sim =) loads the operator, which registers
-- its hooks with the sim; no certificate, no port. On kube-apiserver the
-- same hooks are tested over TLS by spec/e2e/webhook_e2e.lua.
if not h.real_kubeconfig() then
  describe("examples/website webhooks in kinformer.sim's admission chain", function()
    local sim, mgr, client

    setup(function()
      sim = assert(require("kinformer.sim").start { seed = "examples/website/seed.json" })
      mgr = assert(kinformer.manager { sim = sim, log_level = "error" })
      assert(loadfile("examples/website/operator.lua"))(mgr)
      assert(mgr:start { timeout = 30 })
      client = mgr.client
    end)

    teardown(function()
      if mgr then mgr:stop() end
      if sim then sim:stop() end
    end)

    it("denies a Website without an image or with negative replicas, with the handler's message", function()
      local obj, err = client:create(RES, website("default", "noimage", { replicas = 1 }))
      assert.is_nil(obj)
      assert.matches('admission webhook "[^"]+" denied the request: spec%.image is required', err)
      obj, err = client:create(RES, website("default", "neg", { image = "nginx", replicas = -1 }))
      assert.is_nil(obj)
      assert.matches("denied the request: spec%.replicas must be an integer >= 0, got %-1", err)
      -- an update is checked too
      assert(client:create(RES, website("default", "upd", { image = "nginx" })))
      obj, err = client:patch(RES, "default", "upd", { spec = { image = "" } }, { type = "merge" })
      assert.is_nil(obj)
      assert.matches("spec%.image is required", err)
      assert.equal("NotFound", select(3, client:get(RES, "default", "noimage")))
    end)

    it("admits a valid Website", function()
      local obj = assert(client:create(RES, website("default", "shop", { image = "nginx:1.27", replicas = 2, port = 8080 })))
      assert.equal("nginx:1.27", obj.spec.image)
      assert.equal("nginx:1.27", assert(client:get(RES, "default", "shop")).spec.image)
    end)

    it("converts a Website between v1 and v2 both ways", function()
      -- stored at v1, read at v2
      local v2 = assert(client:get("example.kinformer.io/v2/websites", "default", "shop"))
      assert.equal("example.kinformer.io/v2", v2.apiVersion)
      assert.same({ image = "nginx:1.27", port = 8080 }, v2.spec.container)
      assert.equal(2, v2.spec.replicas)
      assert.is_nil(v2.spec.image)
      -- written at v2, read at v1
      assert(client:create("example.kinformer.io/v2/websites", {
        apiVersion = "example.kinformer.io/v2", kind = "Website", metadata = { name = "blog", namespace = "default" },
        spec = { container = { image = "httpd:2.4", port = 8081 }, replicas = 1 } }))
      local v1 = assert(client:get(RES, "default", "blog"))
      assert.equal("example.kinformer.io/v1", v1.apiVersion)
      assert.same({ "httpd:2.4", 8081, 1 }, { v1.spec.image, v1.spec.port, v1.spec.replicas })
      assert.is_nil(v1.spec.container)
      -- a v2 Website without its container image is refused with the v2 field named
      local obj, err = client:create("example.kinformer.io/v2/websites", {
        apiVersion = "example.kinformer.io/v2", kind = "Website", metadata = { name = "bad2", namespace = "default" },
        spec = { container = { port = 80 } } })
      assert.is_nil(obj)
      assert.matches("spec%.container%.image at v2", err)
    end)
  end)
end
