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
    local lease = assert(c:get("coordination.k8s.io/v1/leases", "kube-node-lease", "kinformer-sim-node-0"))
    assert.same({ "kinformer-sim-node-0", 40, "Node" }, { lease.spec.holderIdentity, lease.spec.leaseDurationSeconds,
                                                         lease.metadata.ownerReferences[1].kind })
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

  local function get_rs(ns)
    local t = {}
    for _, rs in ipairs(items("apps/v1/replicasets", ns)) do t[#t + 1] = rs end
    table.sort(t, function(a, b)
      return tonumber(a.metadata.annotations["deployment.kubernetes.io/revision"])
        < tonumber(b.metadata.annotations["deployment.kubernetes.io/revision"])
    end)
    return t
  end

  it("rolls a new template out within maxSurge and maxUnavailable and ends with only the new ReplicaSet scaled", function()
    start()
    assert(c:create("apps/v1/deployments", deployment("default", "web", 4,
      { strategy = { type = "RollingUpdate", rollingUpdate = { maxSurge = 1, maxUnavailable = 0 } } })))
    pass(1)
    local d = assert(c:get("apps/v1/deployments", "default", "web"))
    d.spec.template.spec.containers[1].image = "nginx:2"
    assert(c:update("apps/v1/deployments", d))
    assert(sim:settle(10))
    local rss = get_rs("default")
    assert.equal(2, #rss)
    -- maxSurge 1, maxUnavailable 0: one new pod, no old one gone yet
    assert.same({ 4, 1 }, { rss[1].spec.replicas, rss[2].spec.replicas })
    assert.equal(5, #items("v1/pods", "default"))
    local max_pods = 5
    for _ = 1, 20 do
      sim:clock_advance(0.5)
      assert(sim:settle(10))
      local n = 0
      for _, p in ipairs(items("v1/pods", "default")) do
        if p.status.phase ~= "Succeeded" and p.status.phase ~= "Failed" then n = n + 1 end
      end
      max_pods = math.max(max_pods, n)
    end
    assert.equal(5, max_pods)
    rss = get_rs("default")
    assert.same({ 0, 4 }, { rss[1].spec.replicas, rss[2].spec.replicas })
    assert.equal("2", rss[2].metadata.annotations["deployment.kubernetes.io/revision"])
    local pods = items("v1/pods", "default")
    assert.equal(4, #pods)
    for _, p in ipairs(pods) do
      assert.equal("nginx:2", p.spec.containers[1].image)
      assert.is_true(ready(p))
    end
    d = assert(c:get("apps/v1/deployments", "default", "web"))
    assert.same({ 2, 4, 4, 4, 4 }, { d.metadata.generation, d.status.replicas, d.status.updatedReplicas,
                                      d.status.readyReplicas, d.status.availableReplicas })
    assert.equal("2", d.metadata.annotations["deployment.kubernetes.io/revision"])
    local prog = d.status.conditions[#d.status.conditions]
    assert.same({ "Progressing", "NewReplicaSetAvailable" }, { prog.type, prog.reason })
    assert.equal(('ReplicaSet "%s" has successfully progressed.'):format(rss[2].metadata.name), prog.message)
  end)

  it("scales a Deployment down, and Recreate replaces every pod at once", function()
    start()
    assert(c:create("apps/v1/deployments", deployment("default", "web", 3, { strategy = { type = "Recreate" } })))
    pass(1)
    local d = assert(c:get("apps/v1/deployments", "default", "web"))
    d.spec.replicas = 1
    assert(c:update("apps/v1/deployments", d))
    pass(1)
    assert.equal(1, #items("v1/pods", "default"))
    d = assert(c:get("apps/v1/deployments", "default", "web"))
    assert.same({ 1, 1, 1 }, { d.status.replicas, d.status.availableReplicas, get_rs("default")[1].spec.replicas })
    assert.equal("1", get_rs("default")[1].metadata.annotations["deployment.kubernetes.io/desired-replicas"])
    d.spec.template.spec.containers[1].image = "nginx:2"
    d.spec.replicas = 2
    assert(c:update("apps/v1/deployments", d))
    -- the old pods go (at once: the sim deletes pods without a grace
    -- period) before the new ReplicaSet is scaled up
    pass(2)
    local rss = get_rs("default")
    assert.same({ 0, 2 }, { rss[1].spec.replicas, rss[2].spec.replicas })
    local pods = items("v1/pods", "default")
    assert.equal(2, #pods)
    for _, p in ipairs(pods) do assert.equal("nginx:2", p.spec.containers[1].image) end
    d = assert(c:get("apps/v1/deployments", "default", "web"))
    assert.same({ 2, 2, 2 }, { d.status.replicas, d.status.updatedReplicas, d.status.availableReplicas })
  end)

  it("holds availableReplicas back for minReadySeconds", function()
    start()
    assert(c:create("apps/v1/deployments", deployment("default", "web", 2, { minReadySeconds = 10 })))
    pass(2)
    local d = assert(c:get("apps/v1/deployments", "default", "web"))
    assert.same({ 2, 2 }, { d.status.readyReplicas, d.status.unavailableReplicas })
    assert.is_nil(d.status.availableReplicas)
    pass(10)
    d = assert(c:get("apps/v1/deployments", "default", "web"))
    assert.equal(2, d.status.availableReplicas)
  end)

  it("times a rollout out after progressDeadlineSeconds when its pods never become Ready", function()
    start()
    local d = deployment("default", "stuck", 2, { progressDeadlineSeconds = 30 })
    d.spec.template.metadata.annotations = { ["kinformer.io/sim-fault"] = "unready" }
    assert(c:create("apps/v1/deployments", d))
    pass(10, 5)
    d = assert(c:get("apps/v1/deployments", "default", "stuck"))
    local conds = {}
    for _, cond in ipairs(d.status.conditions) do conds[cond.type] = cond end
    assert.same({ "False", "MinimumReplicasUnavailable" }, { conds.Available.status, conds.Available.reason })
    assert.equal("True", conds.Progressing.status)
    assert.same({ 2, 2 }, { d.status.replicas, d.status.unavailableReplicas })
    pass(30, 5)
    d = assert(c:get("apps/v1/deployments", "default", "stuck"))
    for _, cond in ipairs(d.status.conditions) do conds[cond.type] = cond end
    local rs = items("apps/v1/replicasets", "default")[1]
    assert.same({ "False", "ProgressDeadlineExceeded", ('ReplicaSet "%s" has timed out progressing.'):format(rs.metadata.name) },
      { conds.Progressing.status, conds.Progressing.reason, conds.Progressing.message })
  end)

  it("creates StatefulSet pods in order, each once the one before is Ready", function()
    start()
    assert(c:create("apps/v1/statefulsets", {
      apiVersion = "apps/v1", kind = "StatefulSet", metadata = { namespace = "default", name = "db" },
      spec = { replicas = 3, serviceName = "db", selector = { matchLabels = { app = "db" } },
               template = pod_template({ app = "db" }) } }))
    assert(sim:settle(10))
    local names = function()
      local t = {}
      for _, p in ipairs(items("v1/pods", "default")) do t[#t + 1] = p.metadata.name end
      table.sort(t)
      return t
    end
    assert.same({ "db-0" }, names())
    pass(1)
    assert.same({ "db-0", "db-1" }, names())
    pass(1)
    assert.same({ "db-0", "db-1", "db-2" }, names())
    pass(1)
    local p = assert(c:get("v1/pods", "default", "db-1"))
    assert.same({ "db-1", "db", "db-1", "1" }, { p.spec.hostname, p.spec.subdomain,
      p.metadata.labels["statefulset.kubernetes.io/pod-name"], p.metadata.labels["apps.kubernetes.io/pod-index"] })
    local sts = assert(c:get("apps/v1/statefulsets", "default", "db"))
    assert.equal(p.metadata.labels["controller-revision-hash"], sts.status.updateRevision)
    assert.same({ 3, 3, 3, 3, 3 }, { sts.status.replicas, sts.status.readyReplicas, sts.status.currentReplicas,
      sts.status.updatedReplicas, sts.status.availableReplicas })
    assert.equal(sts.status.updateRevision, sts.status.currentRevision)
    -- scale down: highest ordinal first (at once here: pods go without a
    -- grace period)
    sts.spec.replicas = 1
    assert(c:update("apps/v1/statefulsets", sts))
    pass(1)
    assert.same({ "db-0" }, names())
    sts = assert(c:get("apps/v1/statefulsets", "default", "db"))
    assert.same({ 1, 1 }, { sts.status.replicas, sts.status.readyReplicas })
  end)

  it("creates Parallel StatefulSet pods at once and rolls a new template out from the highest ordinal", function()
    start()
    assert(c:create("apps/v1/statefulsets", {
      apiVersion = "apps/v1", kind = "StatefulSet", metadata = { namespace = "default", name = "web" },
      spec = { replicas = 3, podManagementPolicy = "Parallel", serviceName = "web",
               selector = { matchLabels = { app = "web" } }, template = pod_template({ app = "web" }) } }))
    assert(sim:settle(10))
    assert.equal(3, #items("v1/pods", "default"))
    pass(1)
    local sts = assert(c:get("apps/v1/statefulsets", "default", "web"))
    local rev1 = sts.status.updateRevision
    assert.equal(3, sts.status.readyReplicas)
    sts.spec.template.spec.containers[1].image = "nginx:2"
    assert(c:update("apps/v1/statefulsets", sts))
    pass(6)
    sts = assert(c:get("apps/v1/statefulsets", "default", "web"))
    assert.are_not.equal(rev1, sts.status.updateRevision)
    assert.same({ 3, 3, 3 }, { sts.status.updatedReplicas, sts.status.currentReplicas, sts.status.readyReplicas })
    assert.equal(sts.status.updateRevision, sts.status.currentRevision)
    for _, p in ipairs(items("v1/pods", "default")) do
      assert.equal("nginx:2", p.spec.containers[1].image)
      assert.equal(sts.status.updateRevision, p.metadata.labels["controller-revision-hash"])
    end
  end)

  it("runs one DaemonSet pod on each Ready Node", function()
    start { nodes = 3 }
    assert.equal(3, #items("v1/nodes"))
    assert(c:create("apps/v1/daemonsets", {
      apiVersion = "apps/v1", kind = "DaemonSet", metadata = { namespace = "kube-system", name = "agent" },
      spec = { selector = { matchLabels = { app = "agent" } }, template = pod_template({ app = "agent" }) } }))
    pass(1)
    local on = {}
    for _, p in ipairs(items("v1/pods", "kube-system")) do
      on[#on + 1] = p.spec.nodeName
      assert.equal("Running", p.status.phase)
    end
    table.sort(on)
    assert.same({ "kinformer-sim-node-0", "kinformer-sim-node-1", "kinformer-sim-node-2" }, on)
    local ds = assert(c:get("apps/v1/daemonsets", "kube-system", "agent"))
    assert.same({ 3, 3, 3, 0, 3, 3 }, { ds.status.desiredNumberScheduled, ds.status.currentNumberScheduled,
      ds.status.numberReady, ds.status.numberMisscheduled, ds.status.numberAvailable, ds.status.updatedNumberScheduled })
    -- a Node gone: its pod goes, the status follows
    assert(c:delete("v1/nodes", nil, "kinformer-sim-node-2"))
    pass(1)
    assert.equal(2, #items("v1/pods", "kube-system"))
    ds = assert(c:get("apps/v1/daemonsets", "kube-system", "agent"))
    assert.same({ 2, 2, 2 }, { ds.status.desiredNumberScheduled, ds.status.currentNumberScheduled, ds.status.numberReady })
  end)

  it("runs a Job to its completions and marks it Complete", function()
    start { job_run_ms = 5000 }
    assert(c:create("batch/v1/jobs", {
      apiVersion = "batch/v1", kind = "Job", metadata = { namespace = "default", name = "batch" },
      spec = { completions = 3, parallelism = 2,
               template = pod_template({ app = "batch" }, { restartPolicy = "Never" }) } }))
    assert(sim:settle(10))
    assert.equal(2, #items("v1/pods", "default"))
    local j = assert(c:get("batch/v1/jobs", "default", "batch"))
    assert.equal(2, j.status.active)
    assert.is_string(j.status.startTime)
    pass(6)
    j = assert(c:get("batch/v1/jobs", "default", "batch"))
    assert.same({ 2, 1 }, { j.status.succeeded, j.status.active })
    pass(6)
    j = assert(c:get("batch/v1/jobs", "default", "batch"))
    assert.equal(3, j.status.succeeded)
    assert.is_nil(j.status.active)
    assert.is_string(j.status.completionTime)
    local types = {}
    for _, cond in ipairs(j.status.conditions) do
      types[#types + 1] = cond.type
      assert.same({ "True", "CompletionsReached", "Reached expected number of succeeded pods" },
        { cond.status, cond.reason, cond.message })
    end
    assert.same({ "SuccessCriteriaMet", "Complete" }, types)
    local p = items("v1/pods", "default", "batch.kubernetes.io/job-name=batch")[1]
    assert.equal("Succeeded", p.status.phase)
    assert.equal("Completed", p.status.containerStatuses[1].state.terminated.reason)
  end)

  it("runs an Indexed Job: one pod per completion index, completedIndexes", function()
    start()
    assert(c:create("batch/v1/jobs", {
      apiVersion = "batch/v1", kind = "Job", metadata = { namespace = "default", name = "idx" },
      spec = { completions = 3, parallelism = 3, completionMode = "Indexed",
               template = pod_template({ app = "idx" }, { restartPolicy = "Never" }) } }))
    assert(sim:settle(10))
    local idx = {}
    for _, p in ipairs(items("v1/pods", "default")) do
      local i = p.metadata.annotations["batch.kubernetes.io/job-completion-index"]
      idx[#idx + 1] = i
      assert.equal(i, p.metadata.labels["batch.kubernetes.io/job-completion-index"])
      assert.matches("^idx%-" .. i .. "%-", p.metadata.name)
      assert.equal("JOB_COMPLETION_INDEX", p.spec.containers[1].env[1].name)
    end
    table.sort(idx)
    assert.same({ "0", "1", "2" }, idx)
    pass(3)
    local j = assert(c:get("batch/v1/jobs", "default", "idx"))
    assert.same({ 3, "0-2", "Complete" }, { j.status.succeeded, j.status.completedIndexes,
                                            j.status.conditions[#j.status.conditions].type })
  end)

  it("fails a Job whose pods fail beyond backoffLimit", function()
    start()
    assert(c:create("batch/v1/jobs", {
      apiVersion = "batch/v1", kind = "Job", metadata = { namespace = "default", name = "bad" },
      spec = { backoffLimit = 1, template = {
        metadata = { labels = { app = "bad" }, annotations = { ["kinformer.io/sim-fault"] = "fail" } },
        spec = { restartPolicy = "Never", containers = { { name = "c", image = "x" } } } } } }))
    pass(40, 2)
    local j = assert(c:get("batch/v1/jobs", "default", "bad"))
    assert.equal(2, j.status.failed)
    local types = {}
    for _, cond in ipairs(j.status.conditions) do
      types[#types + 1] = cond.type
      assert.same({ "BackoffLimitExceeded", "Job has reached the specified backoff limit" }, { cond.reason, cond.message })
    end
    assert.same({ "FailureTarget", "Failed" }, types)
    local p = items("v1/pods", "default")[1]
    assert.equal("Failed", p.status.phase)
    assert.equal(1, p.status.containerStatuses[1].state.terminated.exitCode)
  end)

  it("makes a CronJob's Job when the clock passes its schedule", function()
    start()
    assert(c:create("batch/v1/cronjobs", {
      apiVersion = "batch/v1", kind = "CronJob", metadata = { namespace = "default", name = "tick" },
      spec = { schedule = "*/5 * * * *", jobTemplate = { spec = {
        template = pod_template({ app = "tick" }, { restartPolicy = "OnFailure" }) } } } }))
    assert(sim:settle(10))
    assert.equal(0, #items("batch/v1/jobs", "default"))
    -- the first time divisible by 5 minutes comes within 5 minutes
    local jobs = {}
    for _ = 1, 31 do
      pass(10, 10)
      jobs = items("batch/v1/jobs", "default")
      if #jobs > 0 then break end
    end
    assert.equal(1, #jobs)
    local cj = assert(c:get("batch/v1/cronjobs", "default", "tick"))
    local sched = jobs[1].metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert.equal(cj.status.lastScheduleTime, sched)
    local y, mo, d, h, mi = sched:match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):00Z$")
    assert.equal(0, tonumber(mi) % 5)
    local t = os.time { year = y, month = mo, day = d, hour = h, min = mi, sec = 0, isdst = false }
    local utc_offset = os.time(os.date("*t", 0)) - os.time(os.date("!*t", 0))
    assert.equal(("tick-%d"):format((t + utc_offset) // 60), jobs[1].metadata.name)
    assert.equal("CronJob", jobs[1].metadata.ownerReferences[1].kind)
    pass(5)
    cj = assert(c:get("batch/v1/cronjobs", "default", "tick"))
    assert.is_string(cj.status.lastSuccessfulTime)
    assert.is_nil(cj.status.active)
    -- suspended: no more Jobs
    cj.spec.suspend = true
    assert(c:update("batch/v1/cronjobs", cj))
    pass(600, 60)
    assert.equal(1, #items("batch/v1/jobs", "default"))
  end)

  describe("faults (annotation kinformer.io/sim-fault)", function()
    local function faulty(name, fault)
      return { apiVersion = "v1", kind = "Pod",
               metadata = { namespace = "default", name = name, annotations = { ["kinformer.io/sim-fault"] = fault } },
               spec = { containers = { { name = "c", image = "nginx" } } } }
    end

    it("fail, crashloop, unready and pending", function()
      start()
      for _, f in ipairs { "fail", "crashloop", "unready", "pending" } do assert(c:create("v1/pods", faulty(f, f))) end
      pass(1)
      local p = assert(c:get("v1/pods", "default", "fail"))
      assert.equal("Failed", p.status.phase)
      assert.same({ 1, "Error" }, { p.status.containerStatuses[1].state.terminated.exitCode,
                                    p.status.containerStatuses[1].state.terminated.reason })
      p = assert(c:get("v1/pods", "default", "unready"))
      assert.equal("Running", p.status.phase)
      assert.is_false(ready(p))
      assert.is_false(p.status.containerStatuses[1].ready)
      p = assert(c:get("v1/pods", "default", "pending"))
      assert.equal("Pending", p.status.phase)
      assert.is_nil(p.spec.nodeName)
      assert.same({ "PodScheduled", "False", "Unschedulable" },
        { p.status.conditions[1].type, p.status.conditions[1].status, p.status.conditions[1].reason })
      p = assert(c:get("v1/pods", "default", "crashloop"))
      assert.equal("Running", p.status.phase)
      local cs = p.status.containerStatuses[1]
      assert.same({ "CrashLoopBackOff", 1, false }, { cs.state.waiting.reason, cs.restartCount, cs.ready })
      assert.equal(1, cs.lastState.terminated.exitCode)
      pass(30, 5)
      p = assert(c:get("v1/pods", "default", "crashloop"))
      assert.equal(3, p.status.containerStatuses[1].restartCount)
    end)
  end)

  it("leaves a pod Pending and Unschedulable when no Node fits its nodeSelector", function()
    start()
    assert(c:create("v1/pods", { apiVersion = "v1", kind = "Pod", metadata = { namespace = "default", name = "p" },
      spec = { nodeSelector = { disk = "ssd" }, containers = { { name = "c", image = "nginx" } } } }))
    pass(1)
    local p = assert(c:get("v1/pods", "default", "p"))
    assert.is_nil(p.spec.nodeName)
    assert.equal("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
      .. "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
      p.status.conditions[1].message)
    local n = assert(c:get("v1/nodes", nil, "kinformer-sim-node-0"))
    n.metadata.labels.disk = "ssd"
    assert(c:update("v1/nodes", n))
    pass(1)
    p = assert(c:get("v1/pods", "default", "p"))
    assert.equal("kinformer-sim-node-0", p.spec.nodeName)
    assert.equal("Running", p.status.phase)
  end)

  it("binds only to Nodes whose NoSchedule taints the pod tolerates", function()
    start { nodes = 2 }
    for _, name in ipairs { "kinformer-sim-node-0", "kinformer-sim-node-1" } do
      local n = assert(c:get("v1/nodes", nil, name))
      n.spec.taints = { { key = "dedicated", value = name, effect = "NoSchedule" } }
      assert(c:update("v1/nodes", n))
    end
    local function pod(name, tolerations)
      return { apiVersion = "v1", kind = "Pod", metadata = { namespace = "default", name = name },
               spec = { tolerations = tolerations, containers = { { name = "c", image = "nginx" } } } }
    end
    assert(c:create("v1/pods", pod("none")))
    assert(c:create("v1/pods", pod("one", { { key = "dedicated", operator = "Equal", value = "kinformer-sim-node-1",
                                              effect = "NoSchedule" } })))
    assert(c:create("v1/pods", pod("any", { { operator = "Exists" } })))
    pass(1)
    local p = assert(c:get("v1/pods", "default", "none"))
    assert.is_nil(p.spec.nodeName)
    assert.equal("0/2 nodes are available: 2 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: "
      .. "2 Preemption is not helpful for scheduling.", p.status.conditions[1].message)
    assert.equal("kinformer-sim-node-1", assert(c:get("v1/pods", "default", "one")).spec.nodeName)
    assert.is_string(assert(c:get("v1/pods", "default", "any")).spec.nodeName)
  end)

  it("takes its timing and node count from start{} and runs no workload with controllers = none", function()
    start { nodes = 2, pod_ready_delay_ms = 5000 }
    assert.equal(2, #items("v1/nodes"))
    assert(c:create("apps/v1/deployments", deployment("default", "web", 1)))
    pass(4)
    assert.equal("Pending", items("v1/pods", "default")[1].status.phase)
    pass(1)
    assert.equal("Running", items("v1/pods", "default")[1].status.phase)
    c:close() env:close() sim:stop()
    start { controllers = "none" }
    assert.equal(0, #items("v1/nodes"))
    assert(c:create("apps/v1/deployments", deployment("default", "web", 1)))
    assert.equal(0, #items("apps/v1/replicasets", "default"))
    local ok, err = pcall(simmod.start, { nodes = -1 })
    assert.is_false(ok)
    assert.matches("nodes must be between 0 and 10000", err, 1, true)
  end)
end)
