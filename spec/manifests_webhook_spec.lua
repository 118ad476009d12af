-- `kinformer manifests` for a script with webhooks (issue 25,
-- lua/kinformer/cmd/manifests_webhook.lua): the webhook configurations,
-- the Service, the Deployment's port, the conversion stanza, the RBAC of
-- the at-start install (enough for it on a kinformer.sim with RBAC), and
-- --cert-manager.
local lyaml = require "lyaml"
local proc = require "support.proc"

-- bin/kinformer manifests ARGS -> exit status, stdout, stderr
local run = proc.manifests

local SCRIPT = [[
local mgr = ...
mgr:webhook{ name = "website-validate", resources = { "websites.example.com" },
  validate = function(req, ctx)
    return req.object.spec.image ~= nil, "spec.image is required"
  end }
mgr:webhook{ name = "website-default", resources = { "websites.example.com" }, operations = { "CREATE" },
  mutate = function(req) req.object.spec.replicas = req.object.spec.replicas or 1 end }
mgr:webhook{ name = "website-convert", resources = { "websites.example.com" },
  convert = function(obj, to) return obj end }
mgr:webhook{ name = "pod-check", resources = { "v1/pods" }, failure_policy = "Ignore", timeout = 3,
  validate = function() return true end }
]]

-- The documents by kind (lists), and the text.
local function manifests(extra)
  local script = proc.write_tmp(SCRIPT)
  local rc, out, err = run(script .. " --name site-operator --namespace ops " .. (extra or ""))
  os.remove(script)
  assert.equal(0, rc, err)
  assert.equal("", err)
  local by = {}
  for _, d in ipairs(lyaml.load(out, { all = true })) do
    by[d.kind] = by[d.kind] or {}
    table.insert(by[d.kind], d)
  end
  return by, out
end

local function named(list, name)
  for _, d in ipairs(list or {}) do
    if d.metadata.name == name then return d end
  end
end

describe("kinformer manifests with webhooks", function()
  it("prints the configurations, the Service, the Deployment's port, the conversion and the install's RBAC", function()
    local by, out = manifests()
    local vwc = assert(named(by.ValidatingWebhookConfiguration, "site-operator"))
    assert.equal("admissionregistration.k8s.io/v1", vwc.apiVersion)
    assert.equal("site-operator", vwc.metadata.labels["app.kubernetes.io/name"])
    assert.is_nil(vwc.metadata.annotations)
    assert.equal(2, #vwc.webhooks)
    local w = vwc.webhooks[1]
    assert.equal("website-validate.kinformer.example.com", w.name)
    assert.same({ service = { namespace = "ops", name = "site-operator-webhook-service", port = 443,
      path = "/validate-example-com-any-websites" } }, w.clientConfig)
    assert.same({ { apiGroups = { "example.com" }, apiVersions = { "*" }, resources = { "websites" },
      operations = { "CREATE", "UPDATE" }, scope = "*" } }, w.rules)
    assert.same({ "v1" }, w.admissionReviewVersions)
    assert.equal("None", w.sideEffects)
    assert.equal("Fail", w.failurePolicy)
    assert.equal(10, w.timeoutSeconds)
    local p = vwc.webhooks[2]
    assert.equal("pod-check.kinformer.k8s.io", p.name)
    assert.same({ "" }, p.rules[1].apiGroups)
    assert.equal("Ignore", p.failurePolicy)
    assert.equal(3, p.timeoutSeconds)
    local mwc = assert(named(by.MutatingWebhookConfiguration, "site-operator"))
    assert.equal(1, #mwc.webhooks)
    assert.equal("website-default.kinformer.example.com", mwc.webhooks[1].name)
    assert.same({ "CREATE" }, mwc.webhooks[1].rules[1].operations)
    assert.is_nil(mwc.webhooks[1].clientConfig.caBundle)
    assert.matches("caBundle: the operator makes a CA at start and patches it in", out, 1, true)

    -- the Service selects the Deployment's pods, 443 -> webhook-server (9443)
    local dep = by.Deployment[1]
    local svc = assert(named(by.Service, "site-operator-webhook-service"))
    assert.equal("ops", svc.metadata.namespace)
    assert.same(dep.spec.selector.matchLabels, svc.spec.selector)
    assert.same({ { name = "webhook", port = 443, protocol = "TCP", targetPort = "webhook-server" } }, svc.spec.ports)
    local c = dep.spec.template.spec.containers[1]
    local ports = {}
    for _, port in ipairs(c.ports) do ports[port.name] = port.containerPort end
    assert.equal(9443, ports["webhook-server"])
    local cmd = table.concat(c.command, " ")
    assert.matches("--webhook-bind-address :9443 /operator/", cmd, 1, true)
    assert.is_nil(cmd:find("--webhook-cert-path", 1, true))

    -- the conversion: a comment, not a document that would replace the CRD
    assert.is_nil(by.CustomResourceDefinition)
    assert.matches("#       strategy: Webhook", out, 1, true)
    assert.matches("#             path: /convert-websites-example-com", out, 1, true)
    assert.matches("#     name: websites.example.com", out, 1, true)

    -- the install's RBAC: a ClusterRole limited to the names
    local role = assert(named(by.ClusterRole, "site-operator-webhook"))
    assert.same({
      { apiGroups = { "admissionregistration.k8s.io" }, resources = { "validatingwebhookconfigurations" },
        resourceNames = { "site-operator" }, verbs = { "get", "create", "patch", "update" } },
      { apiGroups = { "admissionregistration.k8s.io" }, resources = { "mutatingwebhookconfigurations" },
        resourceNames = { "site-operator" }, verbs = { "get", "create", "patch", "update" } },
      { apiGroups = { "apiextensions.k8s.io" }, resources = { "customresourcedefinitions" },
        resourceNames = { "websites.example.com" }, verbs = { "get", "patch" } },
    }, role.rules)
    local binding = assert(named(by.ClusterRoleBinding, "site-operator-webhook"))
    assert.same({ apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "site-operator-webhook" },
      binding.roleRef)
    assert.same({ { kind = "ServiceAccount", name = "site-operator", namespace = "ops" } }, binding.subjects)
    assert.is_nil(by.Certificate)
    assert.is_nil(by.Issuer)
  end)

  it("grants what the operator's install does: 0 forbidden on kinformer.sim with RBAC", function()
    local by = manifests()
    local sim = assert(require("kinformer.sim").start{ authorization = "rbac", controllers = "none" })
    local admin = assert(require("kinformer").manager{ sim = sim })
    local schema = { openAPIV3Schema = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true } }
    assert(admin.client:create{ apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition",
      metadata = { name = "websites.example.com" },
      spec = { group = "example.com", scope = "Namespaced",
        names = { plural = "websites", singular = "website", kind = "Website" },
        versions = { { name = "v1", served = true, storage = true, schema = schema } } } })
    -- as `kubectl apply` of the printed documents would (the configurations first)
    for _, k in ipairs { "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ClusterRole",
      "ClusterRoleBinding" } do
      for _, d in ipairs(by[k]) do assert(admin.client:create(d)) end
    end
    local sa = "system:serviceaccount:ops:site-operator"
    local op = assert(require("kinformer").manager{ url = sim.url, token = sim:token(sa), name = "site-operator" })
    -- the hooks as the runtime has them
    local C = require "kinformer.webhook_config"
    local hooks = {}
    local f = function() return true end
    for _, s in ipairs {
      { name = "website-validate", validate = f, resources = { "websites.example.com" } },
      { name = "website-default", mutate = f, resources = { "websites.example.com" }, operations = { "CREATE" } },
      { name = "website-convert", convert = f, resources = { "websites.example.com" } },
      { name = "pod-check", validate = f, resources = { "v1/pods" }, failure_policy = "Ignore", timeout = 3 },
    } do hooks[#hooks + 1] = C.normalize(s) end
    sim:request_log_start()
    local where = { service = { namespace = "ops", name = "site-operator-webhook-service", port = 443 } }
    assert(require("kinformer.webhook_install").install(op, hooks, where))
    local n = 0
    for _, e in ipairs(assert(sim:request_log_take())) do
      if e.user == sa then
        n = n + 1
        assert.not_equal(403, e.code, ("%s %s %s"):format(e.verb, e.resource or e.nonResourceURL, e.name or ""))
      end
    end
    assert.is_true(n >= 3)
    -- what the manifests printed is what the operator installs
    local v = assert(admin.client:get("admissionregistration.k8s.io/v1/validatingwebhookconfigurations", nil,
      "site-operator"))
    assert.same(by.ValidatingWebhookConfiguration[1].webhooks[1].clientConfig, v.webhooks[1].clientConfig)
    op:stop()
    admin:stop()
    sim:stop()
  end)

  it("--cert-manager: an Issuer, a Certificate, the Secret mounted, the CA injected, no install RBAC", function()
    local by, out = manifests("--cert-manager")
    local anno = { ["cert-manager.io/inject-ca-from"] = "ops/site-operator-serving-cert" }
    assert.same(anno, named(by.ValidatingWebhookConfiguration, "site-operator").metadata.annotations)
    assert.same(anno, named(by.MutatingWebhookConfiguration, "site-operator").metadata.annotations)
    assert.matches("#       cert-manager.io/inject-ca-from: ops/site-operator-serving-cert", out, 1, true)
    assert.equal("site-operator-selfsigned-issuer", by.Issuer[1].metadata.name)
    assert.same({ selfSigned = {} }, by.Issuer[1].spec)
    local cert = by.Certificate[1]
    assert.equal("site-operator-serving-cert", cert.metadata.name)
    assert.same({ "site-operator-webhook-service.ops.svc", "site-operator-webhook-service.ops.svc.cluster.local" },
      cert.spec.dnsNames)
    assert.equal("site-operator-webhook-server-cert", cert.spec.secretName)
    local pod = by.Deployment[1].spec.template.spec
    local c = pod.containers[1]
    assert.matches("--webhook-bind-address :9443 --webhook-cert-path /tmp/k8s-webhook-server/serving-certs "
      .. "/operator/", table.concat(c.command, " "), 1, true)
    assert.same({ name = "webhook-cert", mountPath = "/tmp/k8s-webhook-server/serving-certs", readOnly = true },
      c.volumeMounts[#c.volumeMounts])
    assert.same({ name = "webhook-cert", secret = { secretName = "site-operator-webhook-server-cert" } },
      pod.volumes[#pod.volumes])
    assert.is_nil(named(by.ClusterRole, "site-operator-webhook"))
  end)

  it("fails at the script's line on a bad webhook", function()
    local script = proc.write_tmp('local mgr = ...\n\nmgr:webhook{ name = "x", validate = function() end,\n'
      .. '  resources = { "pods" }, failure_policy = "fail" }\n')
    local rc, out, err = run(script)
    os.remove(script)
    assert.equal(1, rc)
    assert.equal("", out)
    assert.matches(script:match("[^/]+$") .. ":3: mgr:webhook: failure_policy must be one of \"Fail\", \"Ignore\", "
      .. 'got "fail" (did you mean "Fail"?)', err, 1, true)
  end)
end)
