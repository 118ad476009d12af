-- kinformer.sim serves every built-in resource of kube-apiserver v1.36.3,
-- from the capture of its discovery (csrc/sim/discovery/discovery.json):
-- the discovery documents, CRUD and watch of a sample of the resources,
-- status subresources, generation rules, create-only review resources.
local simmod = require "kinformer.sim"
local cjson = require "cjson"

-- HTTP through the curl command; body is a Lua table (JSON) or a string.
local function http(method, url, body, ctype)
  if type(body) == "table" then body = cjson.encode(body) end
  local tmp
  if body then
    tmp = os.tmpname()
    local f = assert(io.open(tmp, "wb"))
    f:write(body)
    f:close()
  end
  local cmd = string.format("curl -s -o - -w '\\n%%{http_code}' -X %s -H 'Content-Type: %s'%s '%s'",
    method, ctype or "application/json", tmp and (" --data-binary @" .. tmp) or "", url)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  if tmp then os.remove(tmp) end
  local text, code = out:match("^(.*)\n(%d+)$")
  local ok, v = pcall(cjson.decode, text)
  return tonumber(code), ok and v or text
end

local function read_capture()
  local f = assert(io.open("csrc/sim/discovery/discovery.json"))
  local d = cjson.decode(f:read("a"))
  f:close()
  return d
end

-- The subresources kinformer.sim serves (docs/sim.md lists the others).
local function served_sub(name)
  return not name:find("/") or name:match("/status$") or name:match("/scale$")
end

-- One sample per resource: path prefix (group-version), plural, namespaced,
-- a valid object, a spec change (nil: the update changes an annotation),
-- and metadata.generation after the create, the update and the label
-- patch (nil: the kind has none).
local NS = "/namespaces/default"
local G = { 1, 2, 2 }
local samples = {
  { "/api/v1", "resourcequotas", true, { kind = "ResourceQuota", apiVersion = "v1",
    spec = { hard = { pods = "10" } } }, { hard = { pods = "20" } } },
  { "/api/v1", "limitranges", true, { kind = "LimitRange", apiVersion = "v1",
    spec = { limits = { { type = "Container", max = { cpu = "1" } } } } },
    { limits = { { type = "Container", max = { cpu = "2" } } } } },
  { "/api/v1", "persistentvolumeclaims", true, { kind = "PersistentVolumeClaim", apiVersion = "v1",
    spec = { accessModes = { "ReadWriteOnce" }, resources = { requests = { storage = "1Gi" } } } },
    { accessModes = { "ReadWriteOnce" }, resources = { requests = { storage = "2Gi" } } } },
  { "/apis/rbac.authorization.k8s.io/v1", "roles", true, { kind = "Role",
    apiVersion = "rbac.authorization.k8s.io/v1",
    rules = { { apiGroups = { "" }, resources = { "pods" }, verbs = { "get" } } } } },
  { "/apis/rbac.authorization.k8s.io/v1", "rolebindings", true, { kind = "RoleBinding",
    apiVersion = "rbac.authorization.k8s.io/v1",
    roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = "r" },
    subjects = { { kind = "ServiceAccount", name = "default", namespace = "default" } } } },
  { "/apis/rbac.authorization.k8s.io/v1", "clusterroles", false, { kind = "ClusterRole",
    apiVersion = "rbac.authorization.k8s.io/v1",
    rules = { { apiGroups = { "" }, resources = { "pods" }, verbs = { "list" } } } } },
  { "/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", false, { kind = "ClusterRoleBinding",
    apiVersion = "rbac.authorization.k8s.io/v1",
    roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "r" },
    subjects = { { kind = "User", name = "u", apiGroup = "rbac.authorization.k8s.io" } } } },
  { "/apis/batch/v1", "jobs", true, { kind = "Job", apiVersion = "batch/v1",
    spec = { template = { spec = { restartPolicy = "Never",
      containers = { { name = "c", image = "busybox" } } } } } },
    { suspend = true, template = { spec = { restartPolicy = "Never",
      containers = { { name = "c", image = "busybox" } } } } }, G },
  { "/apis/batch/v1", "cronjobs", true, { kind = "CronJob", apiVersion = "batch/v1",
    spec = { schedule = "*/5 * * * *", jobTemplate = { spec = { template = { spec = {
      restartPolicy = "Never", containers = { { name = "c", image = "busybox" } } } } } } } },
    { schedule = "*/9 * * * *", jobTemplate = { spec = { template = { spec = {
      restartPolicy = "Never", containers = { { name = "c", image = "busybox" } } } } } } },
    G },
  { "/apis/networking.k8s.io/v1", "ingresses", true, { kind = "Ingress",
    apiVersion = "networking.k8s.io/v1",
    spec = { defaultBackend = { service = { name = "s", port = { number = 80 } } } } },
    { defaultBackend = { service = { name = "s", port = { number = 81 } } } }, G },
  { "/apis/networking.k8s.io/v1", "networkpolicies", true, { kind = "NetworkPolicy",
    apiVersion = "networking.k8s.io/v1", spec = { podSelector = {} } },
    { podSelector = { matchLabels = { a = "b" } } }, G },
  { "/apis/policy/v1", "poddisruptionbudgets", true, { kind = "PodDisruptionBudget",
    apiVersion = "policy/v1", spec = { minAvailable = 1, selector = { matchLabels = { a = "b" } } } },
    { minAvailable = 2, selector = { matchLabels = { a = "b" } } }, G },
  { "/apis/autoscaling/v2", "horizontalpodautoscalers", true, { kind = "HorizontalPodAutoscaler",
    apiVersion = "autoscaling/v2", spec = { maxReplicas = 3,
      scaleTargetRef = { apiVersion = "apps/v1", kind = "Deployment", name = "d" } } },
    { maxReplicas = 5, scaleTargetRef = { apiVersion = "apps/v1", kind = "Deployment", name = "d" } } },
  { "/apis/storage.k8s.io/v1", "storageclasses", false, { kind = "StorageClass",
    apiVersion = "storage.k8s.io/v1", provisioner = "example.com/p" } },
  { "/apis/scheduling.k8s.io/v1", "priorityclasses", false, { kind = "PriorityClass",
    apiVersion = "scheduling.k8s.io/v1", value = 1000 }, nil, { 1, 1, 1 } },
  { "/apis/discovery.k8s.io/v1", "endpointslices", true, { kind = "EndpointSlice",
    apiVersion = "discovery.k8s.io/v1", addressType = "IPv4",
    endpoints = { { addresses = { "10.0.0.1" } } } }, nil, { 1, 1, 2 } },
  { "/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", false, {
    kind = "ValidatingWebhookConfiguration", apiVersion = "admissionregistration.k8s.io/v1",
    webhooks = { { name = "v.example.com", sideEffects = "None", admissionReviewVersions = { "v1" },
      clientConfig = { url = "https://example.com/v" } } } }, nil, { 1, 1, 1 } },
}

describe("kinformer.sim built-in resources", function()
  local sim
  -- the API server's own answers: without the controllers that would
  -- write to the workloads under test (spec/sim_workloads_spec.lua has them)
  before_each(function()
    sim = assert(simmod.start {
      controllers = "*,-deployment,-replicaset,-statefulset,-daemonset,-job,-cronjob,-scheduler,-kubelet" })
  end)
  after_each(function() sim:stop() end)

  it("serves the discovery the real server gave, and every group-version of it", function()
    local cap = read_capture()
    local code, apis = http("GET", sim.url .. "/apis")
    assert.are.equal(200, code)
    assert.are.same(cap.groups, apis.groups)
    local total, top = 0, 0
    for gv, res in pairs(cap.resources) do
      local path = gv == "v1" and "/api/v1" or "/apis/" .. gv
      local c, list = http("GET", sim.url .. path)
      assert.are.equal(200, c, path)
      local want = {}
      for _, r in ipairs(res) do
        if served_sub(r.name) then want[#want + 1] = r end
        if not r.name:find("/") then top = top + 1 end
      end
      assert.are.same(want, list.resources, path)
      total = total + #list.resources
    end
    -- 68 resources over 22 group-versions (autoscaling v1 and v2 both
    -- serve HorizontalPodAutoscalers: kubectl api-resources counts 67)
    assert.are.equal(68, top)
    assert.is_true(total > top)
  end)

  for _, s in ipairs(samples) do
    local prefix, plural, namespaced, obj, spec2, gen = s[1], s[2], s[3], s[4], s[5], s[6]
    it("creates, gets, lists, watches, updates, patches and deletes " .. plural, function()
      local base = sim.url .. prefix .. (namespaced and NS or "") .. "/" .. plural
      obj.metadata = { name = "x1", labels = { app = "t" } }
      local code, created = http("POST", base, obj)
      assert.are.equal(201, code, cjson.encode(created))
      assert.are.equal(obj.kind, created.kind)
      assert.are.equal(namespaced and "default" or nil, created.metadata.namespace)
      local rv0 = created.metadata.resourceVersion
      assert.are.equal(gen and gen[1], created.metadata.generation)
      local c, got = http("GET", base .. "/x1")
      assert.are.equal(200, c)
      assert.are.equal(created.metadata.uid, got.metadata.uid)
      local c2, list = http("GET", base .. "?labelSelector=app%3Dt")
      assert.are.equal(200, c2)
      assert.are.equal(obj.kind .. "List", list.kind)
      assert.are.equal(1, #list.items)
      -- update (spec change when the kind has one), then patch a label
      if spec2 then got.spec = spec2 else got.metadata.annotations = { a = "1" } end
      local c3, upd = http("PUT", base .. "/x1", got)
      assert.are.equal(200, c3, cjson.encode(upd))
      assert.are.equal(gen and gen[2], upd.metadata.generation)
      local c4, pat = http("PATCH", base .. "/x1", { metadata = { labels = { b = "2" } } },
        "application/merge-patch+json")
      assert.are.equal(200, c4)
      assert.are.equal("2", pat.metadata.labels.b)
      assert.are.equal(gen and gen[3], pat.metadata.generation) -- labels: EndpointSlices only
      -- the watch from the create's resourceVersion sees both changes
      local c5, w = http("GET", base .. "?watch=1&timeoutSeconds=1&resourceVersion=" .. rv0)
      assert.are.equal(200, c5)
      local types = {}
      for line in tostring(w):gmatch("[^\n]+") do types[#types + 1] = cjson.decode(line).type end
      assert.are.same({ "MODIFIED", "MODIFIED" }, types)
      local c6 = http("DELETE", base .. "/x1")
      assert.are.equal(200, c6)
      assert.are.equal(404, (http("GET", base .. "/x1")))
    end)
  end

  it("writes the status subresource without touching spec or generation", function()
    local base = sim.url .. "/apis/batch/v1/namespaces/default/jobs"
    local _, job = http("POST", base, samples[8][4])
    assert.are.equal(1, job.metadata.generation)
    job.status = { active = 1 }
    job.spec.parallelism = 7
    local c, st = http("PUT", base .. "/x1/status", job)
    assert.are.equal(200, c)
    assert.are.equal(1, st.status.active)
    assert.are.equal(1, st.spec.parallelism) -- status writes ignore spec (7)
    assert.are.equal(1, st.metadata.generation)
    -- and the main resource ignores status
    st.status = { active = 5 }
    local _, upd = http("PUT", base .. "/x1", st)
    assert.are.equal(1, upd.status.active)
    -- a resource without status subresource (ResourceQuota has one; Role not)
    assert.are.equal(404, (http("GET", sim.url ..
      "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/x/status")))
  end)

  it("bumps the generation of webhook configurations on webhooks, Deployments on annotations", function()
    local base = sim.url .. "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    local o = samples[#samples][4]
    o.metadata = { name = "vw" }
    local _, vw = http("POST", base, o)
    assert.are.equal(1, vw.metadata.generation)
    vw.webhooks[1].timeoutSeconds = 5
    local _, u = http("PUT", base .. "/vw", vw)
    assert.are.equal(2, u.metadata.generation)
    local dep = { apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "d" },
      spec = { selector = { matchLabels = { a = "b" } }, template = { metadata = { labels = { a = "b" } },
        spec = { containers = { { name = "c", image = "i" } } } } } }
    local dbase = sim.url .. "/apis/apps/v1/namespaces/default/deployments"
    assert.are.equal(201, (http("POST", dbase, dep)))
    local _, d2 = http("PATCH", dbase .. "/d", { metadata = { annotations = { x = "y" } } },
      "application/merge-patch+json")
    assert.are.equal(2, d2.metadata.generation)
    -- PriorityClass: generation 1 at create, never bumped
    local pbase = sim.url .. "/apis/scheduling.k8s.io/v1/priorityclasses"
    local _, pc = http("POST", pbase, { apiVersion = "scheduling.k8s.io/v1", kind = "PriorityClass",
      metadata = { name = "p" }, value = 1, description = "a" })
    assert.are.equal(1, pc.metadata.generation)
    local _, pc2 = http("PATCH", pbase .. "/p", { description = "b" }, "application/merge-patch+json")
    assert.are.equal(1, pc2.metadata.generation)
  end)

  it("defaults a Job's selector, template labels and counts, and a CronJob's policy", function()
    local base = sim.url .. "/apis/batch/v1/namespaces/default/jobs"
    local j = samples[8][4]
    j.metadata = { name = "x1" }
    local _, job = http("POST", base, j)
    local uid = job.metadata.uid
    assert.are.same({ ["batch.kubernetes.io/controller-uid"] = uid }, job.spec.selector.matchLabels)
    assert.are.same({ ["batch.kubernetes.io/controller-uid"] = uid, ["batch.kubernetes.io/job-name"] = "x1",
      ["controller-uid"] = uid, ["job-name"] = "x1" }, job.spec.template.metadata.labels)
    assert.are.equal("x1", job.metadata.labels["job-name"]) -- no labels of its own: the template's
    assert.are.same({ 1, 1, 6, "NonIndexed", false, false }, { job.spec.parallelism, job.spec.completions,
      job.spec.backoffLimit, job.spec.completionMode, job.spec.suspend, job.spec.manualSelector })
    local _, cj = http("POST", sim.url .. "/apis/batch/v1/namespaces/default/cronjobs", samples[9][4])
    assert.are.same({ "Allow", 3, 1 }, { cj.spec.concurrencyPolicy, cj.spec.successfulJobsHistoryLimit,
      cj.spec.failedJobsHistoryLimit })
  end)

  it("selects Jobs by status.successful (0 while absent), as the job registry's fields", function()
    local base = sim.url .. "/apis/batch/v1/namespaces/default/jobs"
    assert.are.equal(201, (http("POST", base, samples[8][4])))
    local _, l0 = http("GET", base .. "?fieldSelector=status.successful%3D0")
    assert.are.equal(1, #l0.items)
    local _, l1 = http("GET", base .. "?fieldSelector=status.successful%3D1")
    assert.are.equal(0, #l1.items)
  end)

  it("serves the scale of ReplicationControllers, their map selector as a selector string", function()
    local rcs = sim.url .. "/api/v1/namespaces/default/replicationcontrollers"
    assert.are.equal(201, (http("POST", rcs, { apiVersion = "v1", kind = "ReplicationController",
      metadata = { name = "rc" }, spec = { replicas = 2, selector = { b = "2", a = "1" },
      template = { metadata = { labels = { a = "1", b = "2" } },
      spec = { containers = { { name = "c", image = "i" } } } } } })))
    local c, sc = http("GET", rcs .. "/rc/scale")
    assert.are.equal(200, c)
    assert.are.same({ 2, "a=1,b=2" }, { sc.spec.replicas, sc.status.selector })
    local c2, sc2 = http("PATCH", rcs .. "/rc/scale", { spec = { replicas = 3 } }, "application/merge-patch+json")
    assert.are.equal(200, c2)
    assert.are.equal(3, sc2.spec.replicas)
    local _, rc = http("GET", rcs .. "/rc")
    assert.are.same({ 3, 2 }, { rc.spec.replicas, rc.metadata.generation })
  end)

  it("serves HorizontalPodAutoscalers in autoscaling v1 and v2 from one storage", function()
    local v2 = sim.url .. "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
    local v1 = sim.url .. "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    local o = samples[13][4]
    o.metadata = { name = "h" }
    assert.are.equal(201, (http("POST", v2, o)))
    local c, got = http("GET", v1 .. "/h")
    assert.are.equal(200, c)
    assert.are.equal("autoscaling/v1", got.apiVersion)
    local _, list = http("GET", v1)
    assert.are.equal(1, #list.items)
  end)

  it("answers the create of a review resource without storing it", function()
    for _, r in ipairs{
      { "/apis/authentication.k8s.io/v1/tokenreviews", "TokenReview", { token = "t" } },
      { "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "SelfSubjectAccessReview",
        { resourceAttributes = { verb = "get", resource = "pods" } } },
      { "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        "LocalSubjectAccessReview", { user = "u", resourceAttributes = { verb = "get", resource = "pods",
        namespace = "default" } } },
    } do
      local apiVersion = r[1]:match("^/apis/([^/]+/v1)/")
      local code, out = http("POST", sim.url .. r[1], { apiVersion = apiVersion, kind = r[2], spec = r[3] })
      assert.are.equal(201, code, r[1])
      assert.are.equal(r[2], out.kind)
      -- create is the only verb: no list (405), no object path (404)
      assert.are.equal(405, (http("GET", sim.url .. r[1])))
      assert.are.equal(404, (http("GET", sim.url .. r[1] .. "/x")))
    end
    -- ComponentStatuses are get and list only
    assert.are.equal(405, (http("POST", sim.url .. "/api/v1/componentstatuses",
      { apiVersion = "v1", kind = "ComponentStatus", metadata = { name = "c" } })))
  end)

  it("binds a pod to a node through a v1 Binding, once", function()
    local pods = sim.url .. "/api/v1/namespaces/default/pods"
    assert.are.equal(201, (http("POST", pods, { apiVersion = "v1", kind = "Pod", metadata = { name = "p" },
      spec = { containers = { { name = "c", image = "i" } } } })))
    local b = sim.url .. "/api/v1/namespaces/default/bindings"
    local code, st = http("POST", b, { apiVersion = "v1", kind = "Binding",
      metadata = { name = "p", annotations = { x = "y" } }, target = { kind = "Node", name = "n1" } })
    assert.are.equal(201, code)
    assert.are.equal("Success", st.status)
    local _, pod = http("GET", pods .. "/p")
    assert.are.equal("n1", pod.spec.nodeName)
    assert.are.equal("y", pod.metadata.annotations.x)
    local c2, conflict = http("POST", b, { apiVersion = "v1", kind = "Binding", metadata = { name = "p" },
      target = { kind = "Node", name = "n2" } })
    assert.are.equal(409, c2)
    assert.are.equal('Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"',
      conflict.message)
    assert.are.equal(404, (http("POST", b, { apiVersion = "v1", kind = "Binding", metadata = { name = "nope" },
      target = { kind = "Node", name = "n2" } })))
  end)

  it("checks names by the kind's rule: DNS label for Services, path segment for RBAC", function()
    local c, e = http("POST", sim.url .. "/api/v1/namespaces/default/services", { apiVersion = "v1",
      kind = "Service", metadata = { name = "a.b" }, spec = { ports = { { port = 80 } } } })
    assert.are.equal(422, c)
    assert.are.equal('Service "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots',
      e.message)
    -- RBAC names may hold colons and capitals (system:controller:...)
    assert.are.equal(201, (http("POST", sim.url .. "/apis/rbac.authorization.k8s.io/v1/clusterroles",
      { apiVersion = "rbac.authorization.k8s.io/v1", kind = "ClusterRole", metadata = { name = "System:X" } })))
    -- PersistentVolumeClaims start Pending
    local _, pvc = http("POST", sim.url .. "/api/v1/namespaces/default/persistentvolumeclaims",
      samples[3][4])
    assert.are.equal("Pending", pvc.status.phase)
  end)

  it("answers the aggregated discovery (apidiscovery.k8s.io/v2) with every resource", function()
    local n, kinds = 0, {}
    for _, path in ipairs{ "/api", "/apis" } do
      local p = assert(io.popen("curl -s -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;" ..
        "as=APIGroupDiscoveryList,application/json' '" .. sim.url .. path .. "'"))
      local list = cjson.decode(p:read("a"))
      p:close()
      assert.are.equal("APIGroupDiscoveryList", list.kind)
      assert.are.equal("apidiscovery.k8s.io/v2", list.apiVersion)
      for _, g in ipairs(list.items) do
        for _, v in ipairs(g.versions) do
          for _, r in ipairs(v.resources) do
            n = n + 1
            kinds[r.resource] = r
          end
        end
      end
    end
    assert.are.equal(68, n)
    assert.are.equal("Namespaced", kinds.resourcequotas.scope)
    assert.are.same({ "all" }, kinds.jobs.categories)
    assert.are.same({ "create" }, kinds.tokenreviews.verbs)
    assert.are.equal("scale", kinds.deployments.subresources[1].subresource)
  end)

  it("names in a Warning the subresources kube-apiserver serves and the sim does not", function()
    assert.are.equal(201, (http("POST", sim.url .. "/api/v1/namespaces/default/pods", { apiVersion = "v1",
      kind = "Pod", metadata = { name = "p" }, spec = { containers = { { name = "c", image = "i" } } } })))
    local p = assert(io.popen("curl -s -D - -o /dev/null '" .. sim.url ..
      "/api/v1/namespaces/default/pods/p/log'"))
    local head = p:read("a")
    p:close()
    assert.truthy(head:find("HTTP/1.1 404", 1, true))
    assert.truthy(head:find('Warning: 299 - "kinformer.sim does not serve pods/log, which kube-apiserver does',
      1, true))
  end)

  it("refuses changes of immutable fields with kube-apiserver's messages", function()
    local M = "application/merge-patch+json"
    local dep = sim.url .. "/apis/apps/v1/namespaces/default/deployments"
    assert.are.equal(201, (http("POST", dep, { apiVersion = "apps/v1", kind = "Deployment",
      metadata = { name = "d" }, spec = { selector = { matchLabels = { a = "b" } },
      template = { metadata = { labels = { a = "b" } }, spec = { containers = { { name = "c", image = "i" } } } } } })))
    local c, e = http("PATCH", dep .. "/d", { spec = { selector = { matchLabels = { a = "c" } },
      template = { metadata = { labels = { a = "c" } } } } }, M)
    assert.are.equal(422, c)
    assert.are.equal('Deployment.apps "d" is invalid: spec.selector: Invalid value: {"matchLabels":{"a":"c"}}: ' ..
      "field is immutable", e.message)
    local cms = sim.url .. "/api/v1/namespaces/default/configmaps"
    assert.are.equal(201, (http("POST", cms, { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "im" },
      immutable = true, data = { a = "b" } })))
    c, e = http("PATCH", cms .. "/im", { data = { a = "c" } }, M)
    assert.are.equal(422, c)
    assert.are.equal('ConfigMap "im" is invalid: data: Forbidden: field is immutable when `immutable` is set',
      e.message)
    local rbs = sim.url .. "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    assert.are.equal(201, (http("POST", rbs, { apiVersion = "rbac.authorization.k8s.io/v1", kind = "RoleBinding",
      metadata = { name = "rb" }, roleRef = { apiGroup = "rbac.authorization.k8s.io", kind = "Role", name = "r" } })))
    c, e = http("PATCH", rbs .. "/rb", { roleRef = { name = "r2" } }, M)
    assert.are.equal(422, c)
    assert.are.equal('RoleBinding.rbac.authorization.k8s.io "rb" is invalid: roleRef: Invalid value: ' ..
      '{"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"r2"}: cannot change roleRef', e.message)
    local pcs = sim.url .. "/apis/scheduling.k8s.io/v1/priorityclasses"
    assert.are.equal(201, (http("POST", pcs, { apiVersion = "scheduling.k8s.io/v1", kind = "PriorityClass",
      metadata = { name = "pc" }, value = 5 })))
    c, e = http("PATCH", pcs .. "/pc", { value = 6 }, M)
    assert.are.equal(422, c)
    assert.are.equal('PriorityClass.scheduling.k8s.io "pc" is invalid: value: Forbidden: may not be changed in an update.',
      e.message)
  end)
end)

