-- kubectl v1.36.3 (the e2e tier's, built by spec/e2e/build.sh kubectl when
-- missing) against kinformer.sim over HTTPS with a bearer token: get,
-- apply (create, change, no-op; server-side with a conflict and force), create, scale, patch (merge, json,
-- strategic), get -w, delete, explain. Every case reads what kubectl
-- printed (JSON parsed where kubectl can print it).
local cjson = require "cjson"
local proc = require "support.proc"
local client_sim = require "support.client_sim"

local function shq(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

describe("kubectl against kinformer.sim", function()
  local sim, kc, kubectl

  -- kubectl's output and exit status (30 s at most).
  local function k(args, stdin)
    local cmd = ("timeout 30 %s --kubeconfig %s %s"):format(kubectl, kc, args)
    if stdin then
      local f = proc.write_tmp(stdin)
      cmd = cmd .. " <" .. f
      local out, rc = proc.run(cmd)
      os.remove(f)
      return out, rc
    end
    return proc.run(cmd)
  end

  -- kubectl ... -o json (stderr kept apart), decoded.
  local function kj(args, stdin)
    local errf = os.tmpname()
    local out, rc = k(args .. " -o json 2>" .. errf, stdin)
    local err = proc.slurp(errf)
    assert(rc == 0, ("kubectl %s: exit %s: %s%s"):format(args, tostring(rc), out, err))
    return cjson.decode(out)
  end

  local function cm_yaml(v)
    return ([[
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-cm, namespace: default, labels: {app: kc}}
data: {k: "%s"}
]]):format(v)
  end
  local function deploy_yaml(replicas)
    return ([[
apiVersion: apps/v1
kind: Deployment
metadata: {name: kc-deploy, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: kc}}
  template:
    metadata: {labels: {app: kc}}
    spec: {containers: [{name: c, image: busybox}]}
]]):format(replicas)
  end

  setup(function()
    local why
    kubectl, why = client_sim.kubectl()
    assert(kubectl, why)
    -- the API server's answers (Tables of a Pending pod, a Deployment at
    -- 0/3): without the workloads' controllers, which would run them
    sim, kc = client_sim.start { controllers = "*,-scheduler,-kubelet,-deployment,-replicaset" }
  end)
  teardown(function() client_sim.stop(sim, kc) end)

  it("talks HTTPS with the token, verifying the server's certificate", function()
    local v = kj("version")
    assert.are.equal("v1.36.3", v.clientVersion.gitVersion)
    assert.are.equal("36", v.serverVersion.minor)
    local ns = kj("get namespaces")
    local names = {}
    for _, item in ipairs(ns.items) do names[#names + 1] = item.metadata.name end
    assert.are.same({ "default", "kube-node-lease", "kube-public", "kube-system" }, names)
  end)

  it("get: lists and reads a resource, and names a missing one", function()
    local list = kj("get configmaps")
    assert.are.equal("List", list.kind)
    assert.are.equal(0, #list.items)
    local out, rc = k("get configmap nope")
    assert.are.equal(1, rc)
    assert.matches('configmaps "nope" not found', out, 1, true)
    local res = k("api-resources --api-group=apps -o name")
    assert.matches("deployments.apps", res, 1, true)
  end)

  it("apply: creates, changes, then leaves unchanged", function()
    local out, rc = k("apply -f -", cm_yaml("v1"))
    assert.are.equal(0, rc, out)
    assert.matches("configmap/kc-cm created", out, 1, true)
    out = k("apply -f -", deploy_yaml(1))
    assert.matches("deployment.apps/kc-deploy created", out, 1, true)
    local cm = kj("get configmap kc-cm")
    assert.are.equal("v1", cm.data.k)
    -- kubectl keeps the last applied configuration for the next three-way merge
    assert.is_string(cm.metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"])

    out = k("apply -f -", cm_yaml("v2"))
    assert.matches("configmap/kc-cm configured", out, 1, true)
    out = k("apply -f -", deploy_yaml(3))
    assert.matches("deployment.apps/kc-deploy configured", out, 1, true)
    cm = kj("get configmap kc-cm")
    assert.are.equal("v2", cm.data.k)
    local d = kj("get deployment kc-deploy")
    assert.are.equal(3, d.spec.replicas)
    assert.are.equal(2, d.metadata.generation)

    local rv = cm.metadata.resourceVersion
    out = k("apply -f -", cm_yaml("v2"))
    assert.matches("configmap/kc-cm unchanged", out, 1, true)
    assert.are.equal(rv, kj("get configmap kc-cm").metadata.resourceVersion)
  end)

  it("apply --server-side: creates, conflicts with another manager, force-conflicts takes over", function()
    local yaml = [[
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-ssa}
data: {k: %s}
]]
    local out, rc = k("apply --server-side -f -", yaml:format("a"))
    assert.are.equal(0, rc, out)
    assert.matches("configmap/kc-ssa serverside-applied", out, 1, true)
    local cm = kj("get configmap kc-ssa --show-managed-fields")
    assert.are.equal("a", cm.data.k)
    assert.are.equal("kubectl", cm.metadata.managedFields[1].manager)
    assert.are.equal("Apply", cm.metadata.managedFields[1].operation)
    out, rc = k("apply --server-side --field-manager=other -f -", yaml:format("b"))
    assert.are.equal(1, rc, out)
    assert.matches('conflict with "kubectl": .data.k', out, 1, true)
    out, rc = k("apply --server-side --field-manager=other --force-conflicts -f -", yaml:format("b"))
    assert.are.equal(0, rc, out)
    cm = kj("get configmap kc-ssa --show-managed-fields")
    assert.are.equal("b", cm.data.k)
    assert.are.equal("other", cm.metadata.managedFields[1].manager)
    out, rc = k("delete configmap kc-ssa")
    assert.are.equal(0, rc, out)
  end)

  it("create -f: creates from a manifest, and refuses an existing name", function()
    local d = kj("create -f -", [[
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-created}
data: {a: b}
]])
    assert.are.equal("kc-created", d.metadata.name)
    assert.are.equal("default", d.metadata.namespace)
    assert.are.equal("b", d.data.a)
    assert.is_string(d.metadata.uid)
    local out, rc = k("create -f -", cm_yaml("v9"))
    assert.are.equal(1, rc)
    assert.matches('configmaps "kc-cm" already exists', out, 1, true)
  end)

  it("get prints the server's Table columns (pods, deployments -o wide, configmaps)", function()
    local out, rc = k("create -f -", [[
apiVersion: v1
kind: Pod
metadata: {name: kc-pod}
spec: {containers: [{name: c, image: busybox}, {name: d, image: nginx}]}
]])
    assert.are.equal(0, rc, out)
    -- header and row as kubectl lays them out (columns padded by 3 spaces)
    local function lines(s)
      local t = {}
      for l in s:gmatch("[^\n]+") do t[#t + 1] = l:gsub("%s+$", "") end
      return t
    end
    local function age_free(l) return (l:gsub("%d+s$", "<age>")) end
    out, rc = k("get pods")
    assert.are.equal(0, rc, out)
    local l = lines(out)
    assert.are.equal("NAME     READY   STATUS    RESTARTS   AGE", l[1])
    assert.are.equal("kc-pod   0/2     Pending   0          <age>", age_free(l[2]))
    assert.are.equal(2, #l)

    out, rc = k("get deployments -o wide")
    assert.are.equal(0, rc, out)
    l = lines(out)
    assert.matches("^NAME%s+READY%s+UP%-TO%-DATE%s+AVAILABLE%s+AGE%s+CONTAINERS%s+IMAGES%s+SELECTOR$", l[1])
    assert.matches("^kc%-deploy%s+0/3%s+0%s+0%s+%d+s%s+c%s+busybox%s+app=kc$", l[2])

    out, rc = k("get configmaps")
    assert.are.equal(0, rc, out)
    l = lines(out)
    assert.matches("^NAME%s+DATA%s+AGE$", l[1])
    assert.matches("^kc%-cm%s+1%s+%d+s$", l[2])
    assert.matches("^kc%-created%s+1%s+%d+s$", l[3])
    assert.are.equal(0, select(2, k("delete pod kc-pod --wait=false")))
  end)

  -- kubectl's typed creates (create configmap/secret/deployment/namespace)
  -- send protobuf bodies and accept protobuf first: the sim decodes them
  -- and answers in protobuf (kubectl prints "<kind>/<name> created" from
  -- the decoded answer); get -o yaml/json reads what was stored.
  it("create configmap (protobuf body)", function()
    local out, rc = k("create configmap kc-typed --from-literal=a=b --from-literal=e= -v=8 2>&1")
    assert.are.equal(0, rc, out)
    assert.matches("configmap/kc%-typed created", out)
    -- request and response both protobuf
    assert.matches("Content%-Type: application/vnd%.kubernetes%.protobuf", out)
    assert.matches("Response Body.-00000000  6b 38 73 00", out)
    local cm = kj("get configmap kc-typed")
    assert.are.same({a = "b", e = ""}, cm.data)
    assert.is_string(cm.metadata.uid)
    local y = k("get configmap kc-typed -o yaml")
    assert.matches("\n  a: b\n", y)
    assert.are.equal(0, select(2, k("delete configmap kc-typed")))
  end)

  it("create secret generic (bytes through protobuf)", function()
    local out, rc = k("create secret generic kc-secret --from-literal=pw=hunter2 " ..
      "--type=kinformer.dev/test")
    assert.are.equal(0, rc, out)
    local s = kj("get secret kc-secret")
    assert.are.equal("aHVudGVyMg==", s.data.pw) -- base64 of hunter2
    assert.are.equal("kinformer.dev/test", s.type)
  end)

  it("create deployment (nested messages, a pointer's zero)", function()
    local out, rc = k("create deployment kc-typed-deploy --image=busybox --replicas=0 --port=8080")
    assert.are.equal(0, rc, out)
    local d = kj("get deployment kc-typed-deploy")
    assert.are.equal(0, d.spec.replicas) -- *int32 0: kept, not defaulted to 1
    assert.are.same({app = "kc-typed-deploy"}, d.spec.selector.matchLabels)
    local c = d.spec.template.spec.containers[1]
    assert.are.equal("busybox", c.image)
    assert.are.equal(8080, c.ports[1].containerPort)
    -- Go's omitzero: a zero creationTimestamp is left out of the template
    assert.is_nil(d.spec.template.metadata.creationTimestamp)
    local y = k("get deployment kc-typed-deploy -o yaml")
    assert.matches("replicas: 0", y)
    assert.are.equal(0, select(2, k("delete deployment kc-typed-deploy")))
  end)

  it("create namespace", function()
    local out, rc = k("create namespace kc-typed-ns")
    assert.are.equal(0, rc, out)
    local ns = kj("get namespace kc-typed-ns")
    assert.are.equal("Active", ns.status.phase)
    assert.are.equal("kc-typed-ns", ns.metadata.labels["kubernetes.io/metadata.name"])
  end)

  it("scale: writes the deployment's scale subresource", function()
    local out, rc = k("scale deployment kc-deploy --replicas=5")
    assert.are.equal(0, rc, out)
    assert.matches("deployment.apps/kc-deploy scaled", out, 1, true)
    local d = kj("get deployment kc-deploy")
    assert.are.equal(5, d.spec.replicas)
    assert.are.equal(3, d.metadata.generation)
    local s = kj("get deployment kc-deploy --subresource=scale")
    assert.are.equal("Scale", s.kind)
    assert.are.equal("autoscaling/v1", s.apiVersion)
    assert.are.equal(5, s.spec.replicas)
    assert.are.equal("app=kc", s.status.selector)
    -- with a precondition: --current-replicas must match
    out, rc = k("scale deployment kc-deploy --current-replicas=2 --replicas=1")
    assert.are_not.equal(0, rc)
    assert.matches("Expected replicas to be 2, was 5", out, 1, true)
    assert.are.equal(5, kj("get deployment kc-deploy").spec.replicas)
  end)

  it("patch --type merge, json and strategic", function()
    local cm = kj("patch configmap kc-cm --type merge -p " .. shq('{"data":{"m":"1","k":null}}'))
    assert.are.same({ m = "1" }, cm.data)
    cm = kj("patch configmap kc-cm --type json -p " ..
      shq('[{"op":"add","path":"/data/j","value":"2"},{"op":"test","path":"/data/m","value":"1"}]'))
    assert.are.same({ m = "1", j = "2" }, cm.data)
    local out, rc = k("patch configmap kc-cm --type json -p " ..
      shq('[{"op":"test","path":"/data/m","value":"x"}]'))
    assert.are_not.equal(0, rc)
    assert.matches("test", out)
    -- strategic: containers merge by name (a merge patch would replace the list)
    local d = kj("patch deployment kc-deploy --type strategic -p " ..
      shq('{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"nginx"}]}}}}'))
    local names = {}
    for _, c in ipairs(d.spec.template.spec.containers) do names[#names + 1] = c.name .. "=" .. c.image end
    table.sort(names)
    assert.are.same({ "c=busybox", "side=nginx" }, names)
    d = kj("patch deployment kc-deploy -p " ..
      shq('{"spec":{"template":{"spec":{"containers":[{"name":"side","$patch":"delete"}]}}}}'))
    assert.are.equal(1, #d.spec.template.spec.containers)
    assert.are.equal("c", d.spec.template.spec.containers[1].name)
  end)

  it("get -w sees a change made while it watches", function()
    local pid, outf = client_sim.spawn(("timeout 15 %s --kubeconfig %s get configmap kc-cm -w " ..
      "--output-watch-events -o json --request-timeout=15s"):format(kubectl, kc))
    -- one JSON document per event, pretty-printed, back to back
    local function events()
      local text, evs = proc.read(outf), {}
      for doc in text:gmatch("(%b{})") do
        local ok, v = pcall(cjson.decode, doc)
        if ok and v.type then evs[#evs + 1] = v end
      end
      return evs
    end
    client_sim.wait_for(function() return #events() >= 1 end, 10)
    kj("patch configmap kc-cm --type merge -p " .. shq('{"data":{"w":"seen"}}'))
    client_sim.wait_for(function() return #events() >= 2 end, 10)
    os.execute("kill " .. pid .. " 2>/dev/null")
    local evs = events()
    os.remove(outf)
    assert.is_true(#evs >= 2, "events: " .. #evs)
    assert.are.equal("ADDED", evs[1].type)
    assert.are.equal("kc-cm", evs[1].object.metadata.name)
    assert.is_nil(evs[1].object.data.w)
    assert.are.equal("MODIFIED", evs[2].type)
    assert.are.equal("seen", evs[2].object.data.w)
  end)

  it("delete: removes the objects", function()
    local out, rc = k("delete configmap kc-cm kc-created")
    assert.are.equal(0, rc, out)
    assert.matches('configmap "kc-cm" deleted', out, 1, true)
    assert.matches('configmap "kc-created" deleted', out, 1, true)
    out = k("delete -f -", deploy_yaml(1))
    assert.matches('deployment.apps "kc-deploy" deleted', out, 1, true)
    assert.are.equal(0, #kj("get configmaps").items)
    assert.are.equal(0, #kj("get deployments").items)
  end)

  -- explain reads the types' schemas from /openapi/v3 (kube-apiserver's
  -- documents, shipped in csrc/sim/openapi/) and prints their descriptions.
  it("explain", function()
    local out, rc = k("explain deployment.spec.replicas")
    assert.are.equal(0, rc, out)
    assert.matches("GROUP:%s+apps\n", out)
    assert.matches("KIND:%s+Deployment\n", out)
    assert.matches("VERSION:%s+v1\n", out)
    assert.matches("FIELD: replicas <integer>", out, 1, true)
    assert.matches("Number of desired pods.", out, 1, true)
    out, rc = k("explain configmap")
    assert.are.equal(0, rc, out)
    assert.matches("KIND:%s+ConfigMap\n", out)
    assert.matches("ConfigMap holds configuration data for pods to consume.", out, 1, true)
    for _, field in ipairs { "binaryData\t<map[string]string>", "data\t<map[string]string>",
      "immutable\t<boolean>", "metadata\t<ObjectMeta>" } do
      assert.matches(field, out, 1, true)
    end
    out, rc = k("explain configmap.nosuchfield")
    assert.are_not.equal(0, rc, out)
    assert.matches('field "nosuchfield" does not exist', out, 1, true)
  end)
end)
