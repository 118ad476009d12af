-- examples/pod-label-auditor: informer handlers only, run as `kinformer run
-- examples/pod-label-auditor/operator.lua --namespace NS` against
-- kinformer.sim, or the real kube-apiserver under `make e2e-lua`.
local h = require "examples.helper"

local function pod(ns, name, labels)
  return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = ns, labels = labels },
           spec = { containers = { { name = "c", image = "busybox:1.36" } } } }
end

describe("examples/pod-label-auditor", function()
  local t, ns, op

  setup(function()
    t = h.target()
    ns = h.namespace(t, "audit")
    assert(t.client:create(pod(ns, "ok-1", { app = "web", team = "shop" })))
    assert(t.client:create(pod(ns, "no-team", { app = "web" })))
    assert(t.client:create(pod(ns, "bare", nil)))
    op = h.operator("examples/pod-label-auditor/operator.lua", t, { "--namespace", ns })
  end)

  teardown(function()
    if op then op:cleanup() end
    if t then
      if ns then h.cleanup_namespace(t, ns, { "v1/pods" }) end
      t.stop()
    end
  end)

  local e = h.esc

  it("reports the pods of the initial list once synced", function()
    local pods, ok, bad = op:wait_output("pod label audit: (%d+) pods, (%d+) compliant, (%d+) missing")
    assert.same({ "3", "1", "2" }, { pods, ok, bad })
    local out = op:stdout()
    assert.matches("without app: 1", out, 1, true)
    assert.matches("without team: 2", out, 1, true)
    assert.matches(e(ns) .. "/bare: app, team", out)
    assert.matches(e(ns) .. "/no%-team: team", out)
    -- and the handler saw them in its own state
    op:wait_output("missing: " .. e(ns) .. "/bare has no app, team")
    op:wait_output("missing: " .. e(ns) .. "/no%-team has no team")
  end)

  it("follows creates, label fixes and deletes with live counts", function()
    assert(t.client:create(pod(ns, "late", { team = "data" })))
    op:wait_output("missing: " .. e(ns) .. "/late has no app")
    op:wait_output("audit: 4 pods, 3 missing required labels")

    assert(t.client:patch("v1/pods", ns, "no-team", { metadata = { labels = { team = "shop" } } }, { type = "merge" }))
    op:wait_output("fixed: " .. e(ns) .. "/no%-team has every required label")
    op:wait_output("audit: 4 pods, 2 missing required labels")

    assert(t.client:delete("v1/pods", ns, "bare", { grace_period = 0 }))
    op:wait_output("gone: " .. e(ns) .. "/bare")
    op:wait_output("audit: 3 pods, 1 missing required labels")
  end)

  it("prints the final report from the cache on SIGTERM and exits 0", function()
    assert.equal(0, op:stop("TERM"))
    local out = op:stdout()
    local last = out:match(".*(pod label audit: [^\n]*)")
    assert.equal("pod label audit: 3 pods, 2 compliant, 1 missing required labels (app, team)", last)
    assert.matches(e(ns) .. "/late: app", out)
  end)
end)
