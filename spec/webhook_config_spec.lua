-- kinformer.webhook_config (issue 25): a mgr:webhook spec -> the hook, its
-- webhooks[].name, and the configurations the API server is given.
local C = require "kinformer.webhook_config"

-- Calls f (a function of this file, so the error is raised at a line of
-- it) and returns its error message; fails when f does not raise.
local function raised(f)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local function at_line(err) return tonumber(err:match("webhook_config_spec%.lua:(%d+):")) end
local function line() return debug.getinfo(2, "l").currentline + 1 end
local function ok_fn() return true end

describe("webhook_config", function()
  describe("parse_resource", function()
    local cases = {
      { "websites.example.com", { group = "example.com", resource = "websites" } },
      { "websites.example.com/status", { group = "example.com", resource = "websites", subresource = "status" } },
      { "deployments.apps", { group = "apps", resource = "deployments" } },
      { "apps/v1/deployments", { group = "apps", version = "v1", resource = "deployments" } },
      { "apps/v1/deployments/scale", { group = "apps", version = "v1", resource = "deployments", subresource = "scale" } },
      { "example.com/v2beta1/websites", { group = "example.com", version = "v2beta1", resource = "websites" } },
      { "v1/pods", { group = "", version = "v1", resource = "pods" } },
      { "v1/pods/status", { group = "", version = "v1", resource = "pods", subresource = "status" } },
      { "pods", { group = "", resource = "pods" } },
      { "pods/status", { group = "", resource = "pods", subresource = "status" } },
      { "deployments", { group = "apps", resource = "deployments" } },
      { "ingresses", { group = "networking.k8s.io", resource = "ingresses" } },
      { "events", { group = "", resource = "events" } },
      { "*", { group = "*", resource = "*" } },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        assert.same(c[2], (C.parse_resource(c[1])))
      end)
    end
    it("refuses what is not a resource", function()
      for _, s in ipairs({ "", "a//b", "/pods", "Pods", "apps/v1/deployments/scale/x", "example.com/v1",
        "x/y/z", "websites.example.com/a/b", "websites.Example.com" }) do
        local t, why = C.parse_resource(s)
        assert.is_nil(t, s)
        assert.is_string(why, s)
      end
    end)
  end)

  describe("normalize", function()
    it("fills the defaults of a validating hook", function()
      local h = C.normalize{ name = "website-validate", validate = ok_fn, resources = { "websites.example.com" } }
      assert.equal("website-validate", h.name)
      assert.equal("validating", h.type)
      assert.equal(ok_fn, h.handler)
      assert.equal("/validate-example-com-any-websites", h.path)
      assert.same({ { apiGroups = { "example.com" }, apiVersions = { "*" }, resources = { "websites" },
        operations = { "CREATE", "UPDATE" }, scope = "*" } }, h.rules)
      assert.equal("Fail", h.failure_policy)
      assert.equal(10, h.timeout)
      assert.equal("None", h.side_effects)
      assert.equal("example.com", h.group)
      assert.is_nil(h.match_policy)
      assert.is_nil(h.reinvocation_policy)
      assert.is_nil(h.crd)
    end)

    it("keeps every option of a mutating hook", function()
      local sel = { matchLabels = { team = "a" } }
      local h = C.normalize{ name = "pod-defaults", mutate = ok_fn, resources = { "v1/pods", "apps/v1/deployments/scale" },
        operations = { "CREATE", "DELETE", "CREATE" }, failure_policy = "Ignore", timeout = 5.0,
        side_effects = "NoneOnDryRun", namespace_selector = sel, object_selector = { matchExpressions = {} },
        match_policy = "Exact", reinvocation_policy = "IfNeeded", workers = 3, memory_limit = 1 << 20,
        path = "/mutate-pods" }
      assert.equal("mutating", h.type)
      assert.equal("/mutate-pods", h.path)
      assert.equal(5, h.timeout)
      assert.equal(math.type(h.timeout), "integer")
      assert.same({ "CREATE", "DELETE" }, h.rules[1].operations)
      assert.same({ "" }, h.rules[1].apiGroups)
      assert.same({ "v1" }, h.rules[1].apiVersions)
      assert.same({ "apps" }, h.rules[2].apiGroups)
      assert.same({ "deployments/scale" }, h.rules[2].resources)
      assert.equal("Ignore", h.failure_policy)
      assert.equal("NoneOnDryRun", h.side_effects)
      assert.equal(sel, h.namespace_selector)
      assert.equal("Exact", h.match_policy)
      assert.equal("IfNeeded", h.reinvocation_policy)
      assert.equal(3, h.workers)
      assert.equal(1 << 20, h.memory_limit)
      assert.equal("", h.group)
    end)

    it("makes default paths from the first resource", function()
      local function path(kind, res)
        return C.normalize{ name = "h", [kind] = ok_fn, resources = { res } }.path
      end
      assert.equal("/mutate--v1-pods", path("mutate", "v1/pods"))
      assert.equal("/validate-apps-v1-deployments-status", path("validate", "apps/v1/deployments/status"))
      assert.equal("/validate-apps-any-deployments", path("validate", "deployments"))
      assert.equal("/convert-websites-example-com", path("convert", "websites.example.com"))
    end)

    it("reads a conversion hook's CRD", function()
      local h = C.normalize{ name = "website-convert", convert = ok_fn, resources = { "websites.example.com" },
        timeout = 20 }
      assert.equal("conversion", h.type)
      assert.equal("websites.example.com", h.crd)
      assert.equal("example.com", h.group)
      assert.equal(20, h.timeout)
      assert.is_nil(h.rules)
    end)

    it("raises at the user's line naming the option and the fix", function()
      local function check(spec, pattern)
        local here = line()
        local err = raised(function() C.normalize(spec) end)
        assert.equal(here, at_line(err), err)
        assert.matches(pattern, err, 1, true)
      end
      check({ name = "a", validate = ok_fn, resources = { "pods" }, failur_policy = "Fail" },
        'unknown option "failur_policy" to mgr:webhook (did you mean "failure_policy"?)')
      check({ validate = ok_fn, resources = { "pods" } }, "name is required")
      check({ name = "Bad_Name", validate = ok_fn, resources = { "pods" } }, 'name "Bad_Name" must be lower-case')
      check({ name = "a", resources = { "pods" } }, "exactly one of validate, mutate or convert")
      check({ name = "a", validate = ok_fn, mutate = ok_fn, resources = { "pods" } }, "got validate and mutate")
      check({ name = "a", validate = "f", resources = { "pods" } }, "validate must be a function")
      check({ name = "a", validate = ok_fn }, "resources is required")
      check({ name = "a", validate = ok_fn, resources = { "x/y/z" } }, 'resources[1] "x/y/z" is not a resource')
      check({ name = "a", validate = ok_fn, resources = { "pods" }, operations = { "create" } },
        'operations[1] "create" is not an operation (did you mean "CREATE"?)')
      check({ name = "a", validate = ok_fn, resources = { "pods" }, operations = { "UPDAET" } },
        '(did you mean "UPDATE"?)')
      check({ name = "a", validate = ok_fn, resources = { "pods" }, failure_policy = "fail" },
        'failure_policy must be one of "Fail", "Ignore", got "fail" (did you mean "Fail"?)')
      check({ name = "a", validate = ok_fn, resources = { "pods" }, side_effects = "Some" },
        'side_effects must be one of "None", "NoneOnDryRun"')
      check({ name = "a", validate = ok_fn, resources = { "pods" }, timeout = 31 }, "timeout must be a whole number")
      check({ name = "a", validate = ok_fn, resources = { "pods" }, timeout = 1.5 }, "from 1 to 30")
      check({ name = "a", validate = ok_fn, resources = { "pods" }, reinvocation_policy = "IfNeeded" },
        "reinvocation_policy applies to mutate hooks only")
      check({ name = "a", validate = ok_fn, resources = { "pods" }, namespace_selector = { matchLabel = {} } },
        'namespace_selector has an unknown key "matchLabel" (did you mean "matchLabels"?)')
      check({ name = "a", validate = ok_fn, resources = { "pods" }, path = "validate" }, "path must be an absolute")
      check({ name = "a", convert = ok_fn, resources = { "websites.example.com", "x.example.com" } },
        "exactly one CRD")
      check({ name = "a", convert = ok_fn, resources = { "pods" } }, "exactly one CRD")
      check({ name = "a", convert = ok_fn, resources = { "example.com/v1/websites" } }, "exactly one CRD")
      check({ name = "a", convert = ok_fn, resources = { "websites.example.com" }, failure_policy = "Fail" },
        "failure_policy does not apply to a convert hook")
    end)
  end)

  describe("webhook_name", function()
    it("is a DNS subdomain of at least three segments", function()
      for _, c in ipairs({
        { "websites.example.com", "website-validate.kinformer.example.com" },
        { "deployments.apps", "website-validate.kinformer.apps" },
        { "pods", "website-validate.kinformer.k8s.io" },
        { "*", "website-validate.kinformer.all.k8s.io" },
      }) do
        local h = C.normalize{ name = "website-validate", validate = ok_fn, resources = { c[1] } }
        local n = C.webhook_name("site-operator", h)
        assert.equal(c[2], n)
        assert.is_true(C.is_subdomain(n))
        assert.is_true(select(2, n:gsub("%.", "")) >= 2)
      end
    end)
  end)

  describe("configurations", function()
    local v = C.normalize{ name = "website-validate", validate = ok_fn, resources = { "websites.example.com" },
      operations = { "*" }, namespace_selector = { matchLabels = { a = "b" } }, match_policy = "Equivalent" }
    local m = C.normalize{ name = "website-default", mutate = ok_fn, resources = { "websites.example.com" },
      reinvocation_policy = "IfNeeded", failure_policy = "Ignore", timeout = 3 }
    local c = C.normalize{ name = "website-convert", convert = ok_fn, resources = { "websites.example.com" } }

    it("gives a VWC, an MWC and a partial CRD with a url clientConfig and the CA", function()
      local objs = C.configurations("site-operator", { c, m, v },
        { url = "https://127.0.0.1:9443/", ca_bundle = "Q0E=" })
      assert.equal(3, #objs)
      assert.same({
        apiVersion = "admissionregistration.k8s.io/v1",
        kind = "ValidatingWebhookConfiguration",
        metadata = { name = "site-operator" },
        webhooks = { {
          name = "website-validate.kinformer.example.com",
          clientConfig = { url = "https://127.0.0.1:9443/validate-example-com-any-websites", caBundle = "Q0E=" },
          rules = { { apiGroups = { "example.com" }, apiVersions = { "*" }, resources = { "websites" },
            operations = { "*" }, scope = "*" } },
          failurePolicy = "Fail", sideEffects = "None", timeoutSeconds = 10, admissionReviewVersions = { "v1" },
          matchPolicy = "Equivalent", namespaceSelector = { matchLabels = { a = "b" } },
        } },
      }, objs[1])
      assert.equal("MutatingWebhookConfiguration", objs[2].kind)
      local mw = objs[2].webhooks[1]
      assert.equal("website-default.kinformer.example.com", mw.name)
      assert.equal("IfNeeded", mw.reinvocationPolicy)
      assert.equal("Ignore", mw.failurePolicy)
      assert.equal(3, mw.timeoutSeconds)
      assert.equal("https://127.0.0.1:9443/mutate-example-com-any-websites", mw.clientConfig.url)
      assert.same({
        apiVersion = "apiextensions.k8s.io/v1",
        kind = "CustomResourceDefinition",
        metadata = { name = "websites.example.com" },
        spec = { conversion = { strategy = "Webhook", webhook = {
          clientConfig = { url = "https://127.0.0.1:9443/convert-websites-example-com", caBundle = "Q0E=" },
          conversionReviewVersions = { "v1" } } } },
      }, objs[3])
    end)

    it("uses a service clientConfig and omits what has no hook", function()
      local objs = C.configurations("site-operator", { v },
        { service = { namespace = "ops", name = "site-operator-webhook-service" } })
      assert.equal(1, #objs)
      assert.same({ service = { namespace = "ops", name = "site-operator-webhook-service", port = 443,
        path = "/validate-example-com-any-websites" } }, objs[1].webhooks[1].clientConfig)
      assert.same({}, C.configurations("x", {}, { url = "https://h:1" }))
    end)
  end)
end)
