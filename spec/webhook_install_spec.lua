-- kinformer.webhook_install (issue 25): a manager's webhook configurations
-- and its CRDs' conversion put on kinformer.sim at start, again on a
-- restart with other hooks, and the messages of what the server refuses
-- (a missing CRD; a ServiceAccount without the rules `kinformer manifests`
-- prints, then with them).
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"
local C = require "kinformer.webhook_config"
local I = require "kinformer.webhook_install"

local VWC = "admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
local MWC = "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
local CRDS = "apiextensions.k8s.io/v1/customresourcedefinitions"
local function f() return true end
local function sh(cmd) return (require("support.proc").run(cmd)) end
-- a CA certificate (PEM, base64) as caBundle: kube-apiserver checks a CRD's is PEM
local CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJlVENDQVIrZ0F3SUJBZ0lVV21TczJjMjhJc0h3VUdaTGxqZG1rR3UxMnZz"
  .. "d0NnWUlLb1pJemowRUF3SXcKRWpFUU1BNEdBMVVFQXd3SGRHVnpkQzFqWVRBZUZ3MHlOakV4TWpneE1qVTJNVE5hRncwek5qRXhN"
  .. "alV4TWpVMgpNVE5hTUJJeEVEQU9CZ05WQkFNTUIzUmxjM1F0WTJFd1dUQVRCZ2NxaGtqT1BRSUJCZ2dxaGtqT1BRTUJCd05DCkFB"
  .. "U3ptQlRkeis1TldvVTZvWkFBN296dkFkRmZTUFk2MDhwTUxoMXQrcXhVYTJLVytHY0prNGU5UitRVzJUYVoKUVA3djA0dnZQbjh4"
  .. "Ym9LamRDVWRDdFNUbzFNd1VUQWRCZ05WSFE0RUZnUVUwaWpsN3NyeXFOTll6RVkxbmZUWQpXeERYSzdFd0h3WURWUjBqQkJnd0Zv"
  .. "QVUwaWpsN3NyeXFOTll6RVkxbmZUWVd4RFhLN0V3RHdZRFZSMFRBUUgvCkJBVXdBd0VCL3pBS0JnZ3Foa2pPUFFRREFnTklBREJG"
  .. "QWlCaXE5dXo0WTJoU0w1cWdPdDJJV25zbkFUY3lhbmUKY2xDbitQcXBiZ0tOMGdJaEFOS2UyR0srRTZadDdMVWtMR0Z4K0xaMWJo"
  .. "emVvTUZ5Z1ZTcEI5Nlg3WWQwCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"

local function crd(plural, group)
  local schema = { openAPIV3Schema = { type = "object", ["x-kubernetes-preserve-unknown-fields"] = true } }
  return {
    apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition",
    metadata = { name = plural .. "." .. group },
    spec = { group = group, scope = "Namespaced",
      names = { plural = plural, singular = plural:sub(1, -2), kind = plural:sub(1, 1):upper() .. plural:sub(2, -2) },
      versions = { { name = "v1", served = true, storage = true, schema = schema },
        { name = "v2", served = true, storage = false, schema = schema } } },
  }
end

-- another replica's CA
local CA2 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJmVENDQVNPZ0F3SUJBZ0lVQ0NBcDVia2I0ZUJVQmJoYkl6eityQTBXd3JJ"
  .. "d0NnWUlLb1pJemowRUF3SXcKRkRFU01CQUdBMVVFQXd3SmRHVnpkQzFqWVMweU1CNFhEVEkyTVRFeU9ERXpNVFV6TlZvWERUTTJN"
  .. "VEV5TlRFegpNVFV6TlZvd0ZERVNNQkFHQTFVRUF3d0pkR1Z6ZEMxallTMHlNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBECkFR"
  .. "Y0RRZ0FFRFNuUUs2ajJhZFdna1NYWkdEems0MjBoUnBLcEpaUDdsMk5lMlBSQlROcUJQR1BBVTB2Q0FDSCsKQ3FDSmRPVklWM0Jh"
  .. "R3J4NHRMU2xNTjhSMTM3SXRLTlRNRkV3SFFZRFZSME9CQllFRk1TWkViQThaUFM2YUJodwo4OVo2Vll4M3BwZVpNQjhHQTFVZEl3"
  .. "UVlNQmFBRk1TWkViQThaUFM2YUJodzg5WjZWWXgzcHBlWk1BOEdBMVVkCkV3RUIvd1FGTUFNQkFmOHdDZ1lJS29aSXpqMEVBd0lE"
  .. "U0FBd1JRSWdldUZ6dFpnNVpmV01hTVZvamVYUGtXNWsKd0tMTENRL3M0YXRxVjRUZzM4Z0NJUUM2dFlxOXpkcWh5aUxBRXphdEdo"
  .. "N1JwSUJMZ0xEeTlvRG95MzFYSjFsVwpDQT09Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"

local validate = C.normalize{ name = "website-validate", validate = f, resources = { "websites.example.com" } }
local mutate = C.normalize{ name = "website-default", mutate = f, resources = { "websites.example.com" },
  reinvocation_policy = "IfNeeded" }
local convert = C.normalize{ name = "website-convert", convert = f, resources = { "websites.example.com" } }

describe("webhook_install", function()
  local sim, mgr
  before_each(function()
    sim = assert(simmod.start{ authorization = "rbac", controllers = "none" })
    mgr = assert(kinformer.manager{ sim = sim, name = "site-operator" })
    assert(mgr.client:create(crd("websites", "example.com")))
  end)
  after_each(function()
    mgr:stop()
    sim:stop()
  end)

  it("applies the configurations with the CA and patches the CRD's conversion", function()
    local done = assert(I.install(mgr, { validate, mutate, convert }, { url = "https://127.0.0.1:9443",
      ca_bundle = CA }))
    assert.equal(3, #done)
    local v = assert(mgr.client:get(VWC, nil, "site-operator"))
    assert.equal(1, #v.webhooks)
    local w = v.webhooks[1]
    assert.equal("website-validate.kinformer.example.com", w.name)
    assert.equal("https://127.0.0.1:9443/validate-example-com-any-websites", w.clientConfig.url)
    assert.equal(CA, w.clientConfig.caBundle)
    assert.same({ "v1" }, w.admissionReviewVersions)
    assert.equal("None", w.sideEffects)
    assert.equal("Fail", w.failurePolicy)
    assert.equal(10, w.timeoutSeconds)
    local managers = {}
    for _, e in ipairs(v.metadata.managedFields) do managers[e.manager] = e.operation end
    assert.equal("Apply", managers["kinformer-site-operator"])
    local m = assert(mgr.client:get(MWC, nil, "site-operator"))
    assert.equal("IfNeeded", m.webhooks[1].reinvocationPolicy)
    local c = assert(mgr.client:get(CRDS, nil, "websites.example.com"))
    assert.equal("Webhook", c.spec.conversion.strategy)
    assert.same({ "v1" }, c.spec.conversion.webhook.conversionReviewVersions)
    assert.same({ url = "https://127.0.0.1:9443/convert-websites-example-com", caBundle = CA },
      c.spec.conversion.webhook.clientConfig)
    assert.equal(2, #c.spec.versions, "the rest of the CRD is kept")
  end)

  it("replaces what an earlier start applied: fewer webhooks, a service instead of a url", function()
    local other = C.normalize{ name = "website-other", validate = f, resources = { "deployments" } }
    assert(I.install(mgr, { validate, other, convert }, { url = "https://127.0.0.1:9443", ca_bundle = CA }))
    assert.equal(2, #assert(mgr.client:get(VWC, nil, "site-operator")).webhooks)
    local where = { service = { namespace = "ops", name = "site-operator-webhook-service", port = 443 },
      ca_bundle = CA }
    assert(I.install(mgr, { other, convert }, where))
    local v = assert(mgr.client:get(VWC, nil, "site-operator"))
    assert.equal(1, #v.webhooks)
    assert.equal("website-other.kinformer.apps", v.webhooks[1].name)
    assert.equal(CA, v.webhooks[1].clientConfig.caBundle)
    local cc = assert(mgr.client:get(CRDS, nil, "websites.example.com")).spec.conversion.webhook.clientConfig
    assert.is_nil(cc.url)
    assert.same({ namespace = "ops", name = "site-operator-webhook-service", port = 443,
      path = "/convert-websites-example-com" }, cc.service)
    assert.equal(CA, cc.caBundle)
  end)

  it("replaces the webhooks `kubectl apply` of the manifests made, and empties a type it has no hook of", function()
    -- as the printed manifests create them: a service clientConfig, no caBundle
    local printed = C.configurations("site-operator", { validate, mutate },
      { service = { namespace = "ops", name = "site-operator-webhook-service" } })
    for _, o in ipairs(printed) do
      o.metadata.labels = { ["app.kubernetes.io/name"] = "site-operator" }
      assert(mgr.client:create(o))
    end
    assert(I.install(mgr, { validate }, { url = "https://127.0.0.1:9443", ca_bundle = CA }))
    local v = assert(mgr.client:get(VWC, nil, "site-operator"))
    assert.same({ url = "https://127.0.0.1:9443/validate-example-com-any-websites", caBundle = CA },
      v.webhooks[1].clientConfig)
    assert.equal("site-operator", v.metadata.labels["app.kubernetes.io/name"])
    local m = assert(mgr.client:get(MWC, nil, "site-operator"))
    assert.is_true(m.webhooks == nil or #m.webhooks == 0)
  end)

  it("keeps the other replicas' CAs in the caBundle, each once, the newest MAX_CAS", function()
    local hooks = { validate, convert }
    assert(I.install(mgr, hooks, { url = "https://127.0.0.1:9443", ca_bundle = CA }))
    assert(I.install(mgr, hooks, { url = "https://127.0.0.1:9443", ca_bundle = CA2 }))
    assert(I.install(mgr, hooks, { url = "https://127.0.0.1:9443", ca_bundle = CA2 })) -- a restart: once
    local both = I.merge_bundles({ CA }, CA2)
    local v = assert(mgr.client:get(VWC, nil, "site-operator"))
    assert.equal(both, v.webhooks[1].clientConfig.caBundle)
    local c = assert(mgr.client:get(CRDS, nil, "websites.example.com"))
    assert.equal(both, c.spec.conversion.webhook.clientConfig.caBundle)
    -- the bundle is the two PEM certificates, the first replica's first
    local pem = sh("echo " .. both .. " | base64 -d")
    assert.equal(2, select(2, pem:gsub("BEGIN CERTIFICATE", "")))
    assert.equal(CA, I.merge_bundles({}, CA))
    assert.equal(1, pem:find(sh("echo " .. CA .. " | base64 -d"), 1, true))
    -- at most MAX_CAS, the oldest dropped
    local fake = {}
    for i = 1, 10 do
      local p = ("-----BEGIN CERTIFICATE-----\nQUJD%02d\n-----END CERTIFICATE-----\n"):format(i)
      fake[i] = sh("printf '%s' '" .. p .. "' | base64 -w0")
    end
    local merged = I.merge_bundles(fake, CA)
    local text = sh("echo " .. merged .. " | base64 -d")
    assert.equal(I.MAX_CAS, select(2, text:gsub("BEGIN CERTIFICATE", "")))
    assert.is_nil(text:find("QUJD03", 1, true))
    assert.is_truthy(text:find("QUJD04", 1, true))
    assert.equal("not pem", I.merge_bundles({ CA }, "not pem"))
    assert.is_nil(I.merge_bundles({ CA }, nil))
  end)

  it("says which CRD is missing", function()
    local gadgets = C.normalize{ name = "gadget-convert", convert = f, resources = { "gadgets.example.com" } }
    local ok, msg = I.install(mgr, { gadgets }, { url = "https://127.0.0.1:9443" })
    assert.is_nil(ok)
    assert.matches('patch CustomResourceDefinition "gadgets.example.com" failed', msg, 1, true)
    assert.matches("install the CRD before the operator starts", msg, 1, true)
    assert.matches("(NotFound)", msg, 1, true)
  end)

  it("names the RBAC rule a ServiceAccount lacks, and succeeds with the rules manifests prints", function()
    local sa = "system:serviceaccount:ops:site-operator"
    local op = assert(kinformer.manager{ url = sim.url, token = sim:token(sa), name = "site-operator" })
    local hooks = { validate, mutate, convert }
    local where = { url = "https://127.0.0.1:9443", ca_bundle = CA }
    local ok, msg = I.install(op, hooks, where)
    assert.is_nil(ok)
    assert.matches('patch ValidatingWebhookConfiguration "site-operator" failed', msg, 1, true)
    assert.matches("apiGroups [admissionregistration.k8s.io], resources [validatingwebhookconfigurations], "
      .. "verbs [get, create, patch, update], resourceNames [site-operator]", msg, 1, true)
    assert.matches("(Forbidden)", msg, 1, true)
    -- the rules of kinformer.cmd.manifests_webhook
    local rules = require("kinformer.cmd.manifests_webhook").rules("site-operator", hooks)
    assert(mgr.client:create{ apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole",
      metadata = { name = "site-operator-webhook" }, rules = rules })
    assert(mgr.client:create{ apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRoleBinding",
      metadata = { name = "site-operator-webhook" },
      roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "site-operator-webhook" },
      subjects = { { kind = "ServiceAccount", namespace = "ops", name = "site-operator" } } })
    sim:request_log_start()
    assert(I.install(op, hooks, where))
    assert(I.install(op, hooks, where)) -- the second start: the objects exist
    local n = 0
    for _, e in ipairs(assert(sim:request_log_take())) do
      if e.user == sa then
        n = n + 1
        -- the first start finds no configuration to read or merge-patch (404): it is then applied
        assert.is_true(e.code < 300 or (e.code == 404 and e.resource:match("webhook") ~= nil),
          ("%s %s %s: %d"):format(e.verb, e.resource, e.name or "", e.code))
      end
    end
    assert.is_true(n >= 6)
    op:stop()
  end)
end)
