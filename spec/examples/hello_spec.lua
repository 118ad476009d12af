-- examples/hello: the README's 20-line operator, run as `kinformer run
-- --leader-elect --metrics-bind-address ... --health-probe-bind-address ...`
-- against kinformer.sim (or kube-apiserver under `make e2e-lua`): it leads,
-- greets the labelled ConfigMap only, counts it in its own metric next to
-- controller-runtime's, records an Event, answers its probes, and releases
-- the Lease on SIGTERM.
local h = require "examples.helper"
local scrape = require "support.scrape"
local proc = require "support.proc"

describe("examples/hello", function()
  local t, ns, op, mport, hport

  setup(function()
    t = h.target()
    ns = h.namespace(t, "hello")
    op = h.operator("examples/hello/operator.lua", t, {
      "--namespace", ns, "--leader-elect", "--leader-election-id", "hello",
      "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0" })
    mport = tonumber(op:wait_output("serving metrics on port (%d+)", "err"))
    hport = tonumber(op:wait_output("serving health probes on port (%d+)", "err"))
    op:wait_output("caches synced", "err")
  end)

  teardown(function()
    if op then op:cleanup() end
    if t then
      if ns then h.cleanup_namespace(t, ns, { "v1/configmaps", "coordination.k8s.io/v1/leases" }) end
      t.stop()
    end
  end)

  it("greets, counts, records an Event, probes, and hands the Lease back", function()
    local lease = h.eventually(function()
      local l = t.client:get("coordination.k8s.io/v1/leases", ns, "hello")
      return l and l.spec.holderIdentity ~= nil and l.spec.holderIdentity ~= "" and l
    end, "the Lease held")
    for _, name in ipairs { "greet-me", "leave-me" } do
      assert(t.client:create{ apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = name, namespace = ns, labels = { hello = name == "greet-me" and "true" or "no" } } })
    end
    local cm = h.eventually(function()
      local c = t.client:get("v1/configmaps", ns, "greet-me")
      return c and c.data and c.data.greeting and c
    end, "data.greeting")
    assert.equal("hello, greet-me", cm.data.greeting)

    local ev = h.eventually(function()
      for _, e in ipairs(t.client:list("events.k8s.io/v1/events", ns).items) do
        if e.reason == "Greeted" then return e end
      end
    end, "the Greeted Event")
    assert.equal("Normal", ev.type)
    assert.equal("greet-me", ev.regarding.name)
    assert.equal("set data.greeting", ev.note)
    assert.equal("hello", ev.reportingController)
    -- kube-apiserver shows it to kubectl describe (the sim keeps events.k8s.io
    -- apart from core v1 Events, which describe reads: docs/sim.md)
    local kubectl = os.getenv("KINFORMER_E2E_KUBECTL")
    if t.real and kubectl then
      local out = proc.run(("%s --kubeconfig %s describe configmap greet-me -n %s"):format(kubectl, t.kubeconfig, ns))
      assert.matches("Normal%s+Greeted%s+.-set data%.greeting", out)
    end

    local text = h.eventually(function()
      local body, code = scrape.get(mport, "/metrics")
      return code == 200 and scrape.sample(body, "hello_greetings_total") == 1 and body
    end, "hello_greetings_total 1")
    assert.is_true(scrape.sample(text, 'controller_runtime_reconcile_total{controller="hello",result="success"}') >= 1)
    assert.equal(1, scrape.sample(text, 'leader_election_master_status{name="hello"}'))
    assert.equal(200, select(2, scrape.get(hport, "/readyz")))
    assert.equal(200, select(2, scrape.get(hport, "/healthz")))
    -- the unlabelled ConfigMap was filtered out in C: never greeted
    assert.is_nil((t.client:get("v1/configmaps", ns, "leave-me").data or {}).greeting)

    assert.equal(0, op:stop("TERM"))
    local released = t.client:get("coordination.k8s.io/v1/leases", ns, "hello")
    assert.is_true(released.spec.holderIdentity == nil or released.spec.holderIdentity == "",
      "holder after release: " .. tostring(released.spec.holderIdentity))
    assert.equal(lease.spec.leaseTransitions, released.spec.leaseTransitions)
  end)
end)
