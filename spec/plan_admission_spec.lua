-- kinformer.plan_admission and its use by kinformer.plan (issue 25): a
-- planned write an admission webhook denied, and the changes a mutating
-- webhook made to a dry-run answer, from recorded server answers (the
-- texts are kube-apiserver's: k8s.io/apiserver admission/plugin/webhook
-- errors.ToStatusErr, util/webhook ErrCallingWebhook).
local A = require "kinformer.plan_admission"
local plan = require "kinformer.plan"
local core = require "kinformer.core"

local DENIED = 'create example.com/v1/Website: admission webhook "website-validate.kinformer.example.com" '
  .. "denied the request: spec.image is required"

local function arr(t) return setmetatable(t, core.array_mt) end

describe("plan_admission", function()
  it("reads a webhook's denial, a failed call and a webhook that cannot take a dry run", function()
    assert.same({ webhook = "website-validate.kinformer.example.com", message = "spec.image is required" },
      A.denial(DENIED))
    assert.same({ webhook = "v.example.com", message = "(without explanation)" },
      A.denial('admission webhook "v.example.com" denied the request without explanation'))
    assert.same({ webhook = "v.example.com", failed = true,
      message = 'failed to call webhook: Post "https://127.0.0.1:9443/validate": connection refused' },
      A.denial('Internal error occurred: failed calling webhook "v.example.com": failed to call webhook: '
        .. 'Post "https://127.0.0.1:9443/validate": connection refused'))
    local d = A.denial('admission webhook "m.example.com" does not support dry run')
    assert.equal("m.example.com", d.webhook)
    assert.is_true(d.failed)
    assert.matches("sideEffects", d.message)
    assert.is_nil(A.denial('websites.example.com "a" is invalid: spec.port: Invalid value'))
    assert.is_nil(A.denial(nil))
  end)

  it("shows what a webhook changed in a custom resource, not what the server always sets", function()
    local sent = { apiVersion = "example.com/v1", kind = "Website",
      metadata = { name = "shop", namespace = "default", labels = { app = "shop" } },
      spec = { image = "nginx", port = 8080 } }
    local answer = { apiVersion = "example.com/v1", kind = "Website",
      metadata = { name = "shop", namespace = "default", uid = "u-1", resourceVersion = "12", generation = 1,
        creationTimestamp = "2026-01-01T00:00:00Z", labels = { app = "shop", team = "web" },
        managedFields = arr { { manager = "x" } } },
      spec = { image = "nginx:1.27", port = 8080, replicas = 1 }, status = { ready = false } }
    local text = A.changes{ verb = "create", ok = true, resource = { group = "example.com", resource = "websites" },
      label = "example.com/v1/websites", namespace = "default", name = "shop", sent = sent, after = answer }
    assert.equal(table.concat({
      "--- Website default/shop (as sent)",
      "+++ Website default/shop (changed by admission)",
      "@@ -5,6 +5,8 @@",
      "   namespace: default",
      "   labels:",
      "     app: shop",
      "+    team: web",
      " spec:",
      "-  image: nginx",
      "+  image: nginx:1.27",
      "   port: 8080",
      "+  replicas: 1",
      "" }, "\n"), text)
    -- nothing changed: no diff
    local same = { apiVersion = "example.com/v1", kind = "Website",
      metadata = { name = "shop", namespace = "default", uid = "u", labels = { app = "shop" } },
      spec = { image = "nginx", port = 8080 } }
    assert.equal("", A.changes{ verb = "create", ok = true, resource = { group = "example.com" }, sent = sent,
      after = same })
  end)

  it("leaves a built-in's defaults out but shows a changed value and an added label", function()
    local sent = { apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "web", namespace = "default" },
      spec = { replicas = 2, template = { spec = { containers = arr { { name = "c", image = "nginx" } } } } } }
    local answer = { apiVersion = "apps/v1", kind = "Deployment",
      metadata = { name = "web", namespace = "default", annotations = { ["injected-by"] = "hook" } },
      spec = { replicas = 3, revisionHistoryLimit = 10, progressDeadlineSeconds = 600,
        template = { spec = { dnsPolicy = "ClusterFirst", containers = arr { { name = "c", image = "nginx",
          imagePullPolicy = "Always", terminationMessagePath = "/dev/termination-log" } } } } } }
    local text = A.changes{ verb = "create", ok = true, resource = { group = "apps", resource = "deployments" },
      sent = sent, after = answer }
    assert.matches("+  annotations:\n+    injected-by: hook", text, 1, true)
    assert.matches("-  replicas: 2\n+  replicas: 3", text, 1, true)
    assert.is_nil(text:find("revisionHistoryLimit", 1, true))
    assert.is_nil(text:find("imagePullPolicy", 1, true))
    assert.is_nil(text:find("dnsPolicy", 1, true))
  end)

  it("compares a merge patch with the object before, and skips what it cannot compare", function()
    local before = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "c", namespace = "d",
      labels = { old = "1" } }, data = { a = "1", b = "2" } }
    local after = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "c", namespace = "d",
      labels = { old = "1", stamped = "yes" } }, data = { a = "9", c = "3" } }
    local text = A.changes{ verb = "patch", ok = true, resource = { group = "" }, before = before, after = after,
      sent = { data = { a = "9", b = core.null, c = "3" } }, patch_type = "merge" }
    assert.matches('+    stamped: "yes"', text, 1, true)
    assert.is_nil(text:find("data:\n-", 1, true), text) -- the patch's own changes are not admission's
    assert.equal("", A.changes{ verb = "patch", ok = true, before = before, after = after,
      sent = arr { { op = "add" } }, patch_type = "json" })
    assert.equal("", A.changes{ verb = "update_status", subresource = "status", ok = true, sent = before,
      after = after })
    assert.equal("", A.changes{ verb = "create", ok = false, sent = before })
  end)

  it("renders a denial and a webhook's change in the plan's report", function()
    local entry = {
      key = "default/shop", controller = "website", result = "error", detail = DENIED,
      writes = { { verb = "create", label = "example.com/v1/websites", namespace = "default", name = "shop",
        ok = false, error = DENIED, code = "Forbidden", denied = A.denial(DENIED) },
        { verb = "create", label = "v1/configmaps", namespace = "default", name = "cfg", ok = false,
          error = 'Internal error occurred: failed calling webhook "m.example.com": timeout', code = "InternalError",
          denied = A.denial('Internal error occurred: failed calling webhook "m.example.com": timeout') } },
      changes = { { action = "create", kind = "ConfigMap", namespace = "default", name = "x",
        diff = "--- /dev/null\n+++ ConfigMap default/x (planned)\n@@ -0,0 +1 @@\n+kind: ConfigMap\n",
        admission = { "--- ConfigMap default/x (as sent)\n+++ ConfigMap default/x (changed by admission)\n"
          .. "@@ -1 +1,2 @@\n kind: ConfigMap\n+x: 1\n" } } },
      events = {},
    }
    local text = plan.render({ entry })
    assert.matches('!  create example.com/v1/websites default/shop denied by admission webhook '
      .. '"website-validate.kinformer.example.com" (dry run): spec.image is required', text, 1, true)
    assert.matches('!  create v1/configmaps default/cfg failed (dry run): admission webhook "m.example.com" '
      .. "could not be called: timeout", text, 1, true)
    assert.matches("  changed by admission (mutating webhooks: the server's answer differs from what was sent):\n"
      .. "--- ConfigMap default/x (as sent)\n+++ ConfigMap default/x (changed by admission)", text, 1, true)
  end)
end)
