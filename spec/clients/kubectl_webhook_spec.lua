-- kubectl v1.36.3 against kinformer.sim with a stored
-- ValidatingWebhookConfiguration whose webhook (spec/support/webhook_deny.py,
-- HTTPS with the fixture certificate as caBundle) denies: kubectl prints
-- the handler's message in kube-apiserver's words and the webhook's
-- warning, for create, apply and delete; nothing is stored.
local proc = require "support.proc"
local client_sim = require "support.client_sim"

local PYTHON = os.getenv("KINFORMER_PYTHON") or "/usr/bin/python3"

describe("kubectl against kinformer.sim with a validating webhook", function()
  local sim, kc, kubectl, pid, pidout

  local function k(args, stdin)
    local cmd = ("timeout 30 %s --kubeconfig %s %s 2>&1"):format(kubectl, kc, args)
    if stdin then
      local f = proc.write_tmp(stdin)
      local out, rc = proc.run(cmd .. " <" .. f)
      os.remove(f)
      return out, rc
    end
    return proc.run(cmd)
  end

  setup(function()
    local why
    kubectl, why = client_sim.kubectl()
    assert(kubectl, why)
    sim, kc = client_sim.start { controllers = "none" }
    local root = os.getenv("PWD")
    pid, pidout = client_sim.spawn(("%s %s/spec/support/webhook_deny.py %s %s/spec/c/fixtures/sim_tls.key "
      .. "'image is required' 'replicas defaulted'"):format(PYTHON, root, client_sim.CA, root))
    local port = client_sim.wait_for(function() return proc.read(pidout):match("^(%d+)\n") end, 15)
    assert(port, "webhook_deny.py did not start: " .. proc.read(pidout))
    local ca = proc.run("base64 -w0 " .. client_sim.CA)
    local out, rc = k("apply -f -", ([[
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: website-validate}
webhooks:
- name: validate.website.example.com
  clientConfig: {url: "https://127.0.0.1:%s/validate", caBundle: "%s"}
  rules:
  - {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE, UPDATE, DELETE]}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
]]):format(port, ca))
    assert(rc == 0, out)
  end)
  teardown(function()
    if pid then os.execute("kill " .. pid) end
    if pidout then os.remove(pidout) end
    client_sim.stop(sim, kc)
  end)

  it("create: kubectl prints the denial and the warning", function()
    local out, rc = k("create configmap denied --from-literal=a=b")
    assert.are.equal(1, rc, out)
    assert.matches('Warning: replicas defaulted', out, 1, true)
    assert.matches('error: failed to create configmap: admission webhook '
      .. '"validate.website.example.com" denied the request: image is required', out, 1, true)
    local _, grc = k("get configmap denied")
    assert.are.equal(1, grc)
  end)

  it("apply: the same denial", function()
    local out, rc = k("apply -f -", [[
apiVersion: v1
kind: ConfigMap
metadata: {name: applied, namespace: default}
data: {a: b}
]])
    assert.are.equal(1, rc, out)
    assert.matches('admission webhook "validate.website.example.com" denied the request: '
      .. 'image is required', out, 1, true)
  end)

  it("server-side apply and delete: the same denial", function()
    local out, rc = k("apply --server-side -f -", [[
apiVersion: v1
kind: ConfigMap
metadata: {name: ssa, namespace: default}
]])
    assert.are.equal(1, rc, out)
    assert.matches('denied the request: image is required', out, 1, true)
    -- an object put without admission (kin_sim_put): its delete is denied
    assert(sim:put { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "old", namespace = "default" } })
    out, rc = k("delete configmap old")
    assert.are.equal(1, rc, out)
    assert.matches('admission webhook "validate.website.example.com" denied the request: '
      .. 'image is required', out, 1, true)
    local _, grc = k("get configmap old")
    assert.are.equal(0, grc)
  end)
end)
