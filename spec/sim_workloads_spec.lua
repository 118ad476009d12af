-- kinformer.sim's workloads (csrc/sim/controllers/): Nodes, the scheduler
-- and kubelet as KWOK fakes them, and kube-controller-manager's
-- deployment, replicaset, statefulset, daemonset, job and cronjob
-- controllers, on a fake clock (sim:clock_advance) so nothing sleeps.
local core = require "kinformer.core"
local simmod = require "kinformer.sim"

local function pod_template(labels, extra)
  local spec = { containers = { { name = "c", image = "nginx" } } }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return { metadata = { labels = labels }, spec = spec }
end

local function deployment(ns, name, replicas, extra)
  local d = {
    apiVersion = "apps/v1", kind = "Deployment",
    metadata = { namespace = ns, name = name },
    spec = { replicas = replicas, selector = { matchLabels = { app = name } },
             template = pod_template({ app = name }) },
  }
  for k, v in pairs(extra or {}) do d.spec[k] = v end
  return d
end

describe("kinformer.sim workloads", function()
  local sim, env, c

  -- a sim on a fake clock with opts, and a client
  local function start(opts)
    opts = opts or {}
    opts.clock = "fake"
    sim = assert(simmod.start(opts))
    env = assert(core.env { kubeconfig = sim.kubeconfig })
    c = env:client()
    assert(sim:settle(10))
  end

  after_each(function()
    if c then c:close() end
    if env then env:close() end
    if sim then sim:stop() end
    c, env, sim = nil, nil, nil
  end)

  -- lets the controllers run and the clock pass s seconds, in steps
  local function pass(s, step)
    assert(sim:settle(10))
    step = step or 1
    local t = 0
    while t < s do
      sim:clock_advance(step)
      t = t + step
      assert(sim:settle(10))
    end
  end

  local function items(res, ns, sel)
    return assert(c:list(res, ns, sel and { label_selector = sel } or nil)).items
  end

  local function ready(pod)
    for _, cond in ipairs(pod.status.conditions or {}) do
      if cond.type == "Ready" then return cond.status == "True" end
    end
    return false
  end

  it("registers a Ready Node with capacity and nodeInfo", function()
    start()
    local nodes = items("v1/nodes")
    assert.equal(1, #nodes)
    local n = nodes[1]
    assert.equal("kinformer-sim-node-0", n.metadata.name)
    assert.equal("110", n.status.allocatable.pods)
    assert.equal("v1.36.3", n.status.nodeInfo.kubeletVersion)
    local r
    for _, cond in ipairs(n.status.conditions) do if cond.type == "Ready" then r = cond end end
    assert.same({ "True", "KubeletReady" }, { r.status, r.reason })
  end)

  it("a Deployment of 3 replicas reports 3 available replicas and 3 Ready pods", function()
    start()
    assert(c:create("apps/v1/deployments", deployment("default", "web", 3)))
    assert(sim:settle(10))
    local rss = items("apps/v1/replicasets", "default")
    assert.equal(1, #rss)
    local rs = rss[1]
    local hash = rs.metadata.labels["pod-template-hash"]
    assert.equal("web-" .. hash, rs.metadata.name)
    assert.equal("1", rs.metadata.annotations["deployment.kubernetes.io/revision"])
    assert.equal("3", rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"])
    assert.equal("4", rs.metadata.annotations["deployment.kubernetes.io/max-replicas"])
    assert.equal(hash, rs.spec.selector.matchLabels["pod-template-hash"])
    local pods = items("v1/pods", "default")
    assert.equal(3, #pods)
    for _, p in ipairs(pods) do
      assert.matches("^web%-" .. hash .. "%-", p.metadata.name)
      local ref = p.metadata.ownerReferences[1]
      assert.same({ "ReplicaSet", rs.metadata.name, rs.metadata.uid, true, true },
        { ref.kind, ref.name, ref.uid, ref.controller, ref.blockOwnerDeletion })
      assert.equal("kinformer-sim-node-0", p.spec.nodeName)
      assert.equal("Pending", p.status.phase)
    end
    pass(1)
    pods = items("v1/pods", "default")
    for _, p in ipairs(pods) do
      assert.equal("Running", p.status.phase)
      assert.is_true(ready(p))
      assert.matches("^10%.244%.0%.%d+$", p.status.podIP)
      assert.is_true(p.status.containerStatuses[1].ready)
      assert.is_true(p.status.containerStatuses[1].started)
    end
    local d = assert(c:get("apps/v1/deployments", "default", "web"))
    assert.equal("1", d.metadata.annotations["deployment.kubernetes.io/revision"])
    local st = d.status
    assert.same({ 1, 3, 3, 3, 3 }, { st.observedGeneration, st.replicas, st.updatedReplicas,
                                     st.readyReplicas, st.availableReplicas })
    assert.is_nil(st.unavailableReplicas)
    local conds = {}
    for _, cond in ipairs(st.conditions) do conds[cond.type] = cond end
    assert.same({ "True", "MinimumReplicasAvailable", "Deployment has minimum availability." },
      { conds.Available.status, conds.Available.reason, conds.Available.message })
    assert.same({ "True", "NewReplicaSetAvailable",
                  ('ReplicaSet "%s" has successfully progressed.'):format(rs.metadata.name) },
      { conds.Progressing.status, conds.Progressing.reason, conds.Progressing.message })
    rs = assert(c:get("apps/v1/replicasets", "default", rs.metadata.name))
    assert.same({ 3, 3, 3, 3, 1 }, { rs.status.replicas, rs.status.fullyLabeledReplicas,
      rs.status.readyReplicas, rs.status.availableReplicas, rs.status.observedGeneration })
  end)
end)
