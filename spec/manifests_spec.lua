-- `kinformer manifests` (lua/kinformer/cmd/manifests.lua, its source scanner
-- lua/kinformer/cmd/rbac_scan.lua): the YAML printed for the example
-- operators and for small scripts written here, parsed with lyaml
-- (Debian's lua-yaml, over libyaml), and its RBAC rules asserted exactly;
-- what it cannot determine fails the command (stderr, exit 1) unless
-- declared or --allow-undetermined.
local lyaml = require "lyaml"
local manifests = require "kinformer.cmd.manifests"
local proc = require "support.proc"

-- bin/kinformer manifests ARGS -> exit status, stdout, stderr
local run = proc.manifests

-- The documents and, by kind, those of the operator's own rules (the
-- secure metrics endpoint's, named <name>-metrics-auth, <name>-metrics-reader
-- and the Service <name>-metrics, go to by.metrics, a list in order; those
-- of its webhooks (kinformer.cmd.manifests_webhook: the configurations,
-- <name>-webhook-service, the <name>-webhook ClusterRole and binding) to
-- by.webhook).
local WEBHOOK_KINDS = { ValidatingWebhookConfiguration = true, MutatingWebhookConfiguration = true, Issuer = true,
  Certificate = true }
local function docs_of(yaml)
  local docs = lyaml.load(yaml, { all = true })
  local by = { metrics = {}, webhook = {} }
  for _, d in ipairs(docs) do
    local n = d.metadata and d.metadata.name or ""
    if n:match("%-metrics%-auth$") or n:match("%-metrics%-reader$") or (d.kind == "Service" and n:match("%-metrics$")) then
      table.insert(by.metrics, d)
    elseif WEBHOOK_KINDS[d.kind] or n:match("%-webhook$") or n:match("%-webhook%-service$") then
      table.insert(by.webhook, d)
    else
      by[d.kind] = by[d.kind] or {}
      table.insert(by[d.kind], d)
    end
  end
  return docs, by
end

-- {"group resource" = "verb,verb"} of a Role/ClusterRole (one resource and
-- one group per rule, as kinformer manifests writes them)
local function rules_of(role)
  local out = {}
  for _, r in ipairs(role.rules) do
    assert.equal(1, #r.apiGroups)
    assert.equal(1, #r.resources)
    local k = r.apiGroups[1] .. " " .. r.resources[1]
    assert.is_nil(out[k], "one rule per resource: " .. k)
    out[k] = table.concat(r.verbs, ",")
  end
  return out
end

local EVENTS = { [" events"] = "create,patch", ["events.k8s.io events"] = "create,patch" }

local function with_events(t)
  for k, v in pairs(EVENTS) do t[k] = v end
  return t
end

local WEBSITE_RULES = with_events {
  ["example.kinformer.io websites"] = "get,list,watch",
  ["example.kinformer.io websites/status"] = "patch",
  ["example.kinformer.io websites/finalizers"] = "update",
  ["apps deployments"] = "get,list,watch,create,patch,delete",
  [" services"] = "get,list,watch,create,patch,delete",
}

describe("kinformer manifests", function()
  it("prints the Website operator's RBAC, ServiceAccount, ConfigMap and Deployment", function()
    local rc, out, err = run("examples/website/operator.lua --image registry.example/website-op:1.2")
    assert.equal(0, rc, err)
    assert.equal("", err)
    local docs, by = docs_of(out)
    local kinds = {}
    for _, d in ipairs(docs) do kinds[#kinds + 1] = d.kind end
    -- the example's webhooks (mgr:webhook), when it has some: their documents
    -- come last (spec/manifests_webhook_spec.lua checks them in detail)
    local hooks = #by.webhook > 0
    local want = { "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap",
                   "Deployment", "ClusterRole", "ClusterRoleBinding", "ClusterRole", "Service" }
    for _, d in ipairs(by.webhook) do want[#want + 1] = d.kind end
    assert.same(want, kinds)
    if hooks then
      assert.equal("website-webhook-service", by.webhook[#by.webhook - 2].metadata.name)
      assert.equal("website-webhook", by.webhook[#by.webhook - 1].metadata.name)
    end
    local sa = by.ServiceAccount[1]
    assert.same({ "website", "default" }, { sa.metadata.name, sa.metadata.namespace })
    local role = by.ClusterRole[1]
    assert.equal("website", role.metadata.name)
    assert.same(WEBSITE_RULES, rules_of(role))
    local crb = by.ClusterRoleBinding[1]
    assert.same({ kind = "ClusterRole", name = "website", apiGroup = "rbac.authorization.k8s.io" }, crb.roleRef)
    assert.same({ { kind = "ServiceAccount", name = "website", namespace = "default" } }, crb.subjects)
    -- leader election: leases in the operator's namespace only
    local le = by.Role[1]
    assert.same({ "website-leader-election", "default" }, { le.metadata.name, le.metadata.namespace })
    assert.same({ ["coordination.k8s.io leases"] = "get,create,update" }, rules_of(le))
    assert.same({ kind = "Role", name = "website-leader-election", apiGroup = "rbac.authorization.k8s.io" },
      by.RoleBinding[1].roleRef)

    -- the ConfigMap ships the script (one file), unchanged
    local cm = by.ConfigMap[1]
    assert.equal(proc.read("examples/website/operator.lua"), cm.data["operator.lua"])

    local dep = by.Deployment[1]
    assert.equal(2, dep.spec.replicas)
    local pod = dep.spec.template.spec
    assert.equal("website", pod.serviceAccountName)
    local c = pod.containers[1]
    assert.equal("registry.example/website-op:1.2", c.image)
    local cmd = { "kinformer", "run", "--name", "website", "--leader-elect", "--leader-election-id", "website",
                  "--metrics-bind-address", ":8443", "--metrics-secure", "--health-probe-bind-address", ":8081" }
    if hooks then
      cmd[#cmd + 1] = "--webhook-bind-address"
      cmd[#cmd + 1] = ":9443"
    end
    cmd[#cmd + 1] = "/operator/operator.lua"
    assert.same(cmd, c.command)
    assert.same({ path = "/readyz", port = "health" }, c.readinessProbe.httpGet)
    assert.same({ path = "/healthz", port = "health" }, c.livenessProbe.httpGet)
    local ports = {}
    for _, p in ipairs(c.ports) do ports[p.name] = p.containerPort end
    assert.same({ metrics = 8443, health = 8081, ["webhook-server"] = hooks and 9443 or nil }, ports)
    assert.same({ ["prometheus.io/scrape"] = "true", ["prometheus.io/port"] = "8443", ["prometheus.io/scheme"] = "https",
                  ["kinformer.io/script-hash"] = dep.spec.template.metadata.annotations["kinformer.io/script-hash"] },
      dep.spec.template.metadata.annotations)
    -- --metrics-secure: the reviews' ClusterRole bound to the ServiceAccount,
    -- metrics-reader, the Service on 8443
    local m = by.metrics
    assert.same({ "website-metrics-auth", {
      { apiGroups = { "authentication.k8s.io" }, resources = { "tokenreviews" }, verbs = { "create" } },
      { apiGroups = { "authorization.k8s.io" }, resources = { "subjectaccessreviews" }, verbs = { "create" } } } },
      { m[1].metadata.name, m[1].rules })
    assert.same({ "ClusterRoleBinding", { kind = "ClusterRole", name = "website-metrics-auth",
      apiGroup = "rbac.authorization.k8s.io" }, { { kind = "ServiceAccount", name = "website", namespace = "default" } } },
      { m[2].kind, m[2].roleRef, m[2].subjects })
    assert.same({ "ClusterRole", "website-metrics-reader", { { nonResourceURLs = { "/metrics" }, verbs = { "get" } } } },
      { m[3].kind, m[3].metadata.name, m[3].rules })
    assert.same({ "Service", "website-metrics", "default", { ["app.kubernetes.io/name"] = "website" },
      { { name = "https", port = 8443, protocol = "TCP", targetPort = "metrics" } } },
      { m[4].kind, m[4].metadata.name, m[4].metadata.namespace, m[4].spec.selector, m[4].spec.ports })
    assert.same({ { name = "script", mountPath = "/operator", readOnly = true } }, c.volumeMounts)
    assert.equal("website-script", pod.volumes[1].configMap.name)
    assert.same({ { key = "operator.lua", path = "operator.lua" } }, pod.volumes[1].configMap.items)
    assert.same(dep.spec.selector.matchLabels["app.kubernetes.io/name"],
      dep.spec.template.metadata.labels["app.kubernetes.io/name"])

    -- the comments say where each rule came from
    assert.matches("# Every client call's resource was determined.", out, 1, true)
    assert.matches("# get, list, watch: plan: informer of controller website (for)", out, 1, true)
    assert.matches("# patch: source: client:patch at operator.lua:", out, 1, true)
    assert.matches("# get, create, patch, delete: plan: children of controller website", out, 1, true)
  end)

  it("gives a namespaced manager a Role in its namespace (configmap-mirror)", function()
    local rc, out, err = run("examples/configmap-mirror/operator.lua --namespace shop")
    assert.equal(0, rc, err)
    local _, by = docs_of(out)
    assert.is_nil(by.ClusterRole)
    assert.is_nil(by.ClusterRoleBinding)
    assert.equal(2, #by.Role)
    local role = by.Role[1]
    assert.same({ "configmap-mirror", "shop" }, { role.metadata.name, role.metadata.namespace })
    assert.same(with_events {
      [" configmaps"] = "get,list,watch,patch",
      [" configmaps/finalizers"] = "update",
      [" secrets"] = "get,list,watch,create,patch,delete",
    }, rules_of(role))
    assert.equal("shop", by.RoleBinding[1].subjects[1].namespace)
    assert.equal("shop", by.Deployment[1].metadata.namespace)
    local cmd = by.Deployment[1].spec.template.spec.containers[1].command
    assert.same({ "--namespace", "shop", "/operator/operator.lua" }, { table.unpack(cmd, #cmd - 2) })
    assert.same({ "operator.lua" }, (function()
      local keys = {}
      for k in pairs(by.ConfigMap[1].data) do keys[#keys + 1] = k end
      return keys
    end)())
  end)

  it("gives a handlers-only script its informer's rules (pod-label-auditor)", function()
    local rc, out, err = run("examples/pod-label-auditor/operator.lua")
    assert.equal(0, rc, err)
    local _, by = docs_of(out)
    assert.same(with_events { [" pods"] = "get,list,watch" }, rules_of(by.ClusterRole[1]))
    local data = by.ConfigMap[1].data
    assert.equal(proc.read("examples/pod-label-auditor/operator.lua"), data["operator.lua"])
    assert.equal("pod-label-auditor", by.Deployment[1].metadata.name)
  end)

  it("records client calls made while loading, reads inline reconcilers, and names what it cannot resolve", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/lib"))
    proc.write(dir .. "/lib/helper.lua", [[
local M = {}
function M.touch(client, res, ns, name) return client:patch(res, ns, name, { metadata = {} }) end
function M.use(ctx) return M.touch(ctx.client, "batch/v1/jobs", "ns", "j") end
function M.unknown(ctx, t) return ctx.client:delete(t.resource, "ns", "x") end
return M
]])
    -- a reconciler module (never loaded while planning) and what it requires
    proc.write(dir .. "/recon.lua", [[
local util = require("recon_util")
return { reconcile = function(req, ctx) return util.drop(ctx, req) end }
]])
    proc.write(dir .. "/recon_util.lua", [[
return { drop = function(ctx, req) return ctx.client:delete("v1/persistentvolumeclaims", req.namespace, req.name) end }
]])
    proc.write(dir .. "/op.lua", [[
local mgr = ...
package.path = ]] .. string.format("%q", dir .. "/?.lua;") .. [[ .. package.path
require "lib.helper"
mgr.client:list("v1/namespaces")
mgr:controller{
  ["for"] = "apps/v1/statefulsets",
  watches = { { "v1/configmaps", map = function() return {} end } },
  reconciler = function(req, ctx)
    ctx.client:patch("apps/v1/statefulsets", req.namespace, req.name, {}, { subresource = "status" })
    ctx.client:apply("v1/configmaps", {})
  end,
}
mgr:controller{ name = "pvc", ["for"] = "v1/persistentvolumeclaims", reconciler = "recon" }
]])
    local rc, out, err = run(dir .. "/op.lua --name Demo_Op --allow-undetermined")
    assert.equal(0, rc, err)
    -- the call it could not resolve: on stderr too, with the path given
    assert.equal("kinformer: manifests: " .. dir .. "/lib/helper.lua:4: client:delete(t.resource, ...): "
      .. 'resource not determined; declare it with rbac = {{resources = {...}, verbs = {"delete"}}} '
      .. "on the controller\n", err)
    os.execute("rm -rf " .. dir)
    local _, by = docs_of(out)
    assert.same(with_events {
      [" namespaces"] = "list",
      ["apps statefulsets"] = "get,list,watch",
      ["apps statefulsets/status"] = "patch",
      [" configmaps"] = "get,list,watch,create,patch", -- an apply may create
      ["batch jobs"] = "patch",
      [" persistentvolumeclaims"] = "get,list,watch,delete",
    }, rules_of(by.ClusterRole[1]))
    assert.equal("demo-op", by.ClusterRole[1].metadata.name)
    assert.matches("# list: plan: client:list at script load", out, 1, true)
    assert.matches("# NOT DETERMINED (no rule granted; add what they need by hand):", out, 1, true)
    assert.matches("#   source: lib/helper.lua:4: client:delete(t.resource, ...): resource not determined", out, 1,
      true)
    assert.same({ { key = "op.lua", path = "op.lua" }, { key = "recon.lua", path = "recon.lua" },
                  { key = "lib__helper.lua", path = "lib/helper.lua" }, { key = "recon_util.lua", path = "recon_util.lua" } },
      by.Deployment[1].spec.template.spec.volumes[1].configMap.items)
    assert.matches("^local M = {}", by.ConfigMap[1].data["lib__helper.lua"])
  end)

  it("plans a script that makes its own manager and uses features planning does not know", function()
    local script = proc.write_tmp([[
local kinformer = require "kinformer"
local mgr = kinformer.manager{ namespace = "team-a", leader_election = { name = "my-op", namespace = "ops" } }
local c = mgr.metrics:counter{ name = "my_total" }
c:inc()
mgr:informer("batch/v1/cronjobs")
assert(mgr:start())
mgr:run()
]])
    local rc, out, err = run(script)
    os.remove(script)
    assert.equal(0, rc, err)
    local _, by = docs_of(out)
    assert.is_nil(by.ClusterRole)
    local role, le = by.Role[1], by.Role[2]
    assert.same({ "team-a", "ops" }, { role.metadata.namespace, le.metadata.namespace })
    assert.same(with_events { ["batch cronjobs"] = "get,list,watch" }, rules_of(role))
    assert.same({ ["coordination.k8s.io leases"] = "get,create,update" }, rules_of(le))
    assert.matches("Lease in namespace ops (my-op, the script's leader_election.name)", out, 1, true)
    -- the script names its namespace itself: no --namespace on the command line
    local cmd = by.Deployment[1].spec.template.spec.containers[1].command
    assert.matches("^/operator/", cmd[#cmd])
    assert.not_equal("team-a", cmd[#cmd - 1])
  end)

  it("is parsed by the cli with run's --namespace and its own --image, --name and --allow-undetermined", function()
    local cli = require "kinformer.cmd.cli"
    local o = assert(cli.parse { "manifests", "op.lua", "--namespace", "ns", "--image=reg/op:1", "--name", "x" })
    assert.same({ command = "manifests", script = "op.lua", namespace = "ns", image = "reg/op:1", name = "x",
                  args = {} }, o)
    o = assert(cli.parse { "manifests", "op.lua", "--allow-undetermined" })
    assert.same({ command = "manifests", script = "op.lua", allow_undetermined = true, args = {} }, o)
    assert.matches("--allow-undetermined", cli.usage, 1, true)
    for argv, msg in pairs {
      [{ "manifests" }] = "manifests needs a script",
      [{ "manifests", "op.lua", "--sim" }] = "manifests takes no --sim",
      [{ "run", "op.lua", "--image", "i" }] = "--image is an option of manifests",
      [{ "run", "op.lua", "--allow-undetermined" }] = "--allow-undetermined is an option of manifests",
      [{ "run", "op.lua", "--name", "Demo_Op" }] = "--name: name must be a lower-case DNS name",
    } do
      local none, err = cli.parse(argv)
      assert.is_nil(none)
      assert.matches(msg, err, 1, true)
    end
  end)

  it("fails with a message for a script that raises or a missing one", function()
    local bad = proc.write_tmp("error('boom at load')\n")
    local rc, out, err = run(bad)
    os.remove(bad)
    assert.equal(1, rc)
    assert.equal("", out)
    assert.matches("failed while planning: .*boom at load", err)
    local rc2, _, err2 = run("/nonexistent/op.lua")
    assert.equal(1, rc2)
    assert.matches("cannot open script /nonexistent/op.lua", err2, 1, true)
  end)

  -- a temporary folder holding files {name = text}; returns its path
  local function folder(files)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    for name, text in pairs(files) do proc.write(dir .. "/" .. name, text) end
    return dir
  end

  it("prints complete rules for every example, and update on configmaps for hello", function()
    for _, ex in ipairs { "hello", "website", "configmap-mirror", "pod-label-auditor", "team-namespace" } do
      local rc, out, err = run("examples/" .. ex .. "/operator.lua")
      assert.equal(0, rc, ex .. ": " .. err)
      assert.equal("", err, ex)
      assert.matches("# Every client call's resource was determined.", out, 1, true)
      if ex == "hello" then
        local _, by = docs_of(out)
        assert.same(with_events { [" configmaps"] = "get,list,watch,update" }, rules_of(by.ClusterRole[1]))
        assert.matches("# update: source: client:update at operator.lua:14", out, 1, true)
      elseif ex == "team-namespace" then
        local _, by = docs_of(out)
        assert.same(with_events {
          [" namespaces"] = "get,list,watch",
          [" namespaces/finalizers"] = "update", -- the ConfigMap's and ServiceAccount's controller reference
          [" configmaps"] = "get,list,watch,create,update",
          [" serviceaccounts"] = "get,list,watch,create,update",
        }, rules_of(by.ClusterRole[1]))
      end
    end
    -- the same as data (what another source of rules is compared with)
    local r = assert(manifests.rules_for("examples/hello/operator.lua"))
    assert.same({ { group = "", resource = "configmaps", verbs = { "get", "list", "watch", "update" },
                    why = { "get, list, watch: plan: informer of controller hello (for)",
                            "update: source: client:update at operator.lua:14" } } }, r.rules)
    assert.same({}, r.undetermined)
  end)

  it("resolves resources declared on one line, local constants, table fields and concatenations", function()
    local dir = folder {
      ["op.lua"] = [[
local mgr = ...
mgr:controller{ ["for"] = "v1/namespaces", reconciler = "recon" }
]],
      ["recon.lua"] = [[
local M = {}
M.A, M.B, M.C = "v1/namespaces", "v1/configmaps", "v1/resourcequotas"
local SECRETS, JOBS <const> = "v1/secrets", "batch/v1/jobs"
local R = { dep = "apps/v1/deployments", ["svc"] = "v1/" .. "services" }
local GROUP = "example.com"
local WIDGETS = GROUP .. "/v1/" .. "widgets"
function M.reconcile(req, ctx)
  local NODES, PVS = "v1/nodes", "v1/persistentvolumes"
  ctx.client:get(M.A, "", req.name)
  ctx.client:create(M.B, {})
  ctx.client:update(M.C, {})
  ctx.client:delete(SECRETS, req.namespace, req.name)
  ctx.client:list(JOBS, req.namespace)
  ctx.client:patch(R.dep, req.namespace, req.name, {})
  ctx.client:get(R["svc"], req.namespace, req.name)
  ctx.client:update_status(WIDGETS, {})
  ctx.client:list(NODES)
  ctx.client:get(PVS, "", "x")
  ctx.env:client():list("v1/limitranges")
  M.cleanup(ctx)
end
-- a client passed to a parameter of another name
local function drop(c, res) return c:delete(res, "ns", "x") end
function M.cleanup(ctx) drop(ctx.client, "v1/podtemplates") end
return M
]],
    }
    local rc, out, err = run(dir .. "/op.lua")
    os.execute("rm -rf " .. dir)
    assert.equal(0, rc, err)
    assert.equal("", err)
    local _, by = docs_of(out)
    assert.same(with_events {
      [" namespaces"] = "get,list,watch",
      [" configmaps"] = "create",
      [" resourcequotas"] = "update",
      [" secrets"] = "delete",
      ["batch jobs"] = "list",
      ["apps deployments"] = "patch",
      [" services"] = "get",
      ["example.com widgets/status"] = "update",
      [" nodes"] = "list",
      [" persistentvolumes"] = "get",
      [" limitranges"] = "list",
      [" podtemplates"] = "delete",
    }, rules_of(by.ClusterRole[1]))
    assert.matches("# update: source: client:update at recon.lua:11", out, 1, true)
  end)

  it("fails naming file:line and prints no YAML for a call it cannot resolve, unless --allow-undetermined", function()
    local dir = folder {
      ["op.lua"] = [[
local mgr = ...
mgr:controller{
  ["for"] = "v1/configmaps",
  reconciler = function(req, ctx)
    local obj = build(req)
    ctx.client:update(obj)
    ctx:ensure(build(req))
  end,
}
mgr:informer("v1/pods"):add_handler("handlers")
]],
      ["handlers.lua"] = [[
return { on_add = function(pod) local c = require("shared").client c:delete(pod) end }
]],
    }
    local script = dir .. "/op.lua"
    local rc, out, err = run(script)
    assert.equal(1, rc)
    assert.equal("", out)
    local lines = {}
    for l in err:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.same({
      "kinformer: manifests: " .. script .. ":6: client:update(obj, ...): resource not determined; "
        .. 'declare it with rbac = {{resources = {...}, verbs = {"update"}}} on the controller',
      "kinformer: manifests: " .. script .. ":7: ctx:ensure(build(req)): resource not determined; "
        .. 'declare it with rbac = {{resources = {...}, verbs = {"get", "create", "patch"}}} on the controller',
      "kinformer: manifests: " .. dir .. "/handlers.lua:1: client:delete(pod, ...): resource not determined; "
        .. 'declare it with mgr:rbac{{resources = {...}, verbs = {"delete"}}} (or rbac = ... on the controller)',
      "kinformer: manifests: 3 calls not determined: no YAML printed (declare what they need with rbac rules, "
        .. "or pass --allow-undetermined to print the YAML without them)",
    }, lines)

    rc, out, err = run(script .. " --allow-undetermined")
    os.execute("rm -rf " .. dir)
    assert.equal(0, rc, err)
    assert.same(lines[1], err:match("^[^\n]+"))
    assert.equal(3, select(2, err:gsub("\n", "")))
    local _, by = docs_of(out)
    -- what it could read is granted; what it could not, nothing
    assert.same(with_events {
      [" configmaps"] = "get,list,watch",
      [" configmaps/finalizers"] = "update", -- ctx:ensure's controller reference
      [" pods"] = "get,list,watch",
    }, rules_of(by.ClusterRole[1]))
    assert.matches("# NOT DETERMINED (no rule granted; add what they need by hand):\n"
      .. "#   source: op.lua:6: client:update(obj, ...): resource not determined\n"
      .. "#   source: op.lua:7: ctx:ensure(build(req)): resource not determined\n"
      .. "#   source: handlers.lua:1: client:delete(pod, ...): resource not determined\n", out, 1, true)
  end)

  it("counts a module outside the script's folder that may make calls as undetermined", function()
    local ext = folder {
      ["extrecon.lua"] = "return { reconcile = function(req, ctx) end }\n",
      ["extlib.lua"] = 'return { touch = function(client) return client:get("v1/pods", "a", "b") end }\n',
      ["purelib.lua"] = "return { add = function(a, b) return a + b end }\n",
    }
    local body = "local mgr = ...\npackage.path = " .. string.format("%q", ext .. "/?.lua;") .. " .. package.path\n"
      .. 'require "extlib"\nrequire "purelib"\n'
      .. 'mgr:controller{ ["for"] = "v1/pods", reconciler = "extrecon"%s }\n'
    local dir = folder { ["op.lua"] = body:format("") }
    local rc, out, err = run(dir .. "/op.lua")
    assert.equal(1, rc)
    assert.equal("", out)
    assert.equal(table.concat({
      "kinformer: manifests: module extrecon (reconciler of controller pods, " .. ext .. "/extrecon.lua) is outside "
        .. "the script's folder: not scanned; declare what it needs with rbac = {{resources = {...}, verbs = {...}}} "
        .. "on the controller (or mgr:rbac)",
      -- (purelib makes no client call: not listed)
      "kinformer: manifests: module extlib (required by the script, " .. ext .. "/extlib.lua) is outside "
        .. "the script's folder: not scanned; declare what it needs with rbac = {{resources = {...}, verbs = {...}}} "
        .. "on the controller (or mgr:rbac)",
      "kinformer: manifests: 2 modules not determined: no YAML printed (declare what they need with rbac rules, "
        .. "or pass --allow-undetermined to print the YAML without them)", "" }, "\n"), err)
    -- a declared rule says what they need
    proc.write(dir .. "/op.lua", body:format(', rbac = { { resources = { "v1/pods" }, verbs = { "update" } } }'))
    rc, out, err = run(dir .. "/op.lua")
    os.execute("rm -rf " .. dir .. " " .. ext)
    assert.equal(0, rc, err)
    assert.equal("", err)
    assert.same(with_events { [" pods"] = "get,list,watch,update" }, rules_of(docs_of(out)[2]))
    assert.matches("#   module extrecon (reconciler of controller pods) is outside the script's folder: not scanned",
      out, 1, true)
  end)

  it("merges declared rbac rules (controller, mgr:rbac), which cover undetermined calls, with their origin", function()
    local script = proc.write_tmp([[
local mgr = ...
mgr:controller{
  name = "cm", ["for"] = "v1/configmaps",
  rbac = { { resources = { "v1/configmaps", "apps/v1/deployments/status" }, verbs = { "update" } } },
  reconciler = function(req, ctx)
    ctx.client:update(build(req))
  end,
}
mgr:rbac{
  { api_groups = { "apps" }, resources = { "deployments/scale" }, verbs = { "get", "patch" } },
  { resources = { "v1/secrets" }, resource_names = { "tls", "ca" }, verbs = { "get" } },
  { non_resource_urls = { "/healthz" }, verbs = { "get" } },
}
]])
    local rc, out, err = run(script)
    os.remove(script)
    assert.equal(0, rc, err)
    assert.equal("", err)
    local _, by = docs_of(out)
    local role = by.ClusterRole[1]
    local plain, other = { rules = {} }, {}
    for _, r in ipairs(role.rules) do
      if r.resourceNames or r.nonResourceURLs then other[#other + 1] = r else table.insert(plain.rules, r) end
    end
    assert.same(with_events {
      [" configmaps"] = "get,list,watch,update",
      ["apps deployments/status"] = "update",
      ["apps deployments/scale"] = "get,patch",
    }, rules_of(plain))
    assert.same({ { apiGroups = { "" }, resources = { "secrets" }, resourceNames = { "ca", "tls" }, verbs = { "get" } },
                  { nonResourceURLs = { "/healthz" }, verbs = { "get" } } }, other)
    local base = script:match("([^/]*)$")
    assert.matches("# get, list, watch: plan: informer of controller cm (for)\n"
      .. "# update: declared: rbac of controller cm (" .. base .. ":2)\n", out, 1, true)
    assert.matches("# get, patch: declared: mgr:rbac at " .. base .. ":9 #1", out, 1, true)
    assert.matches("# Not determined from the source, covered by the declared rules (declared:):\n"
      .. "#   " .. base .. ":6: client:update(build(req), ...): resource not determined", out, 1, true)
  end)

  it("honours kinformer.manager{rbac = ...}; a namespaced manager's non-resource URLs get a ClusterRole", function()
    local script = proc.write_tmp([[
local kinformer = require "kinformer"
local mgr = kinformer.manager{ namespace = "team-a",
  rbac = { { api_groups = { "*" }, resources = { "*" }, verbs = { "delete" } } } }
mgr:rbac{ { non_resource_urls = { "/metrics" }, verbs = { "get" } } }
mgr:controller{ ["for"] = "v1/pods", reconciler = function(req, ctx) ctx.client:delete(pick(req)) end }
]])
    local rc, out, err = run(script .. " --name op")
    os.remove(script)
    assert.equal(0, rc, err)
    assert.equal("", err)
    local _, by = docs_of(out)
    assert.same(with_events { [" pods"] = "get,list,watch", ["* *"] = "delete" }, rules_of(by.Role[1]))
    assert.equal("team-a", by.Role[1].metadata.namespace)
    assert.matches("# delete: declared: rbac of kinformer.manager{...}", out, 1, true)
    local cr = by.ClusterRole[1]
    assert.same({ "op-non-resource", { { nonResourceURLs = { "/metrics" }, verbs = { "get" } } } },
      { cr.metadata.name, cr.rules })
    assert.same({ kind = "ClusterRole", name = "op-non-resource", apiGroup = "rbac.authorization.k8s.io" },
      by.ClusterRoleBinding[1].roleRef)
    assert.same({ { kind = "ServiceAccount", name = "op", namespace = "team-a" } }, by.ClusterRoleBinding[1].subjects)
  end)

  it("is kept by a real manager: kinformer.manager{rbac = ...} and mgr:rbac, checked as the controller's", function()
    local kinformer = require "kinformer"
    -- a URL nothing listens on: a manager connects only when started
    local mgr = assert(kinformer.manager{ url = "http://127.0.0.1:9",
      rbac = { { resources = { "v1/pods" }, verbs = { "get" } } } })
    local all = mgr:rbac{ { api_groups = { "apps" }, resources = { "deployments" }, verbs = { "list" } } }
    assert.same({ { resources = { "v1/pods" }, verbs = { "get" } },
                  { api_groups = { "apps" }, resources = { "deployments" }, verbs = { "list" } } }, all)
    local ok, err = pcall(mgr.rbac, mgr, { { resources = { "pods" }, verbs = { "get" } } })
    assert.is_false(ok)
    assert.matches('mgr:rbac: rbac rule #1: resource "pods" needs api_groups', err, 1, true)
    assert.equal(2, #mgr:rbac{})
    mgr:stop()
    ok, err = pcall(kinformer.manager, { url = "http://127.0.0.1:9", rbac = { { verbs = { "get" } } } })
    assert.is_false(ok)
    assert.matches("kinformer.manager: rbac rule #1 needs resources = {...}", err, 1, true)
  end)

  it("rejects a malformed rbac rule at the script's line", function()
    for rule, msg in pairs {
      ['{ resources = { "configmaps" }, verbs = { "get" } }'] =
        'controller: rbac rule #1: resource "configmaps" needs api_groups '
          .. '(or a kinformer name such as "v1/configmaps")',
      ['{ api_groups = { "" }, resources = { "apps/v1/deployments" }, verbs = { "get" } }'] =
        'controller: rbac rule #1: resource "apps/v1/deployments" is in group "apps", which api_groups does not list',
      ['{ resources = { "v1/pods" } }'] = "controller: rbac rule #1 needs verbs = {...}",
      ['{ resources = { "v1/pods" }, verb = { "get" } }'] = 'unknown option "verb" to controller\'s rbac rule #1',
    } do
      local script = proc.write_tmp("local mgr = ...\nmgr:controller{ [\"for\"] = \"v1/pods\", reconciler = \"x\",\n"
        .. "  rbac = { " .. rule .. " } }\n")
      local rc, out, err = run(script)
      os.remove(script)
      assert.equal(1, rc, err)
      assert.equal("", out)
      assert.matches(script:match("([^/]*)$") .. ":2: ", err, 1, true)
      assert.matches(msg, err, 1, true)
    end
  end)

  it("grants what ctx:ensure, children, a finalizer and server-side apply need", function()
    local script = proc.write_tmp([[
local mgr = ...
mgr:controller{
  name = "shelf", ["for"] = "example.com/v1/shelves",
  children = { "v1/configmaps", "apps/v1/deployments" },
  finalizer = "example.com/cleanup",
  reconciler = function(req, ctx)
    ctx:ensure({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = req.name } })
    ctx:ensure(make_deployment(req)) -- not read: one of the children
  end,
}
mgr:controller{
  name = "plain", ["for"] = "v1/pods",
  reconciler = function(req, ctx)
    local pdb = { apiVersion = "policy/v1", kind = "PodDisruptionBudget", metadata = { name = req.name } }
    ctx:ensure(pdb, { owner = false })
    ctx.client:apply{ apiVersion = "v1", kind = "Endpoints", metadata = { name = "x" } }
    ctx.client:patch("v1/services", req.namespace, req.name, {}, { type = "apply" })
    ctx.client:apply("v1/limitranges", {}, { subresource = "status" })
  end,
}
]])
    local rc, out, err = run(script)
    os.remove(script)
    assert.equal(0, rc, err)
    assert.equal("", err)
    local _, by = docs_of(out)
    assert.same(with_events {
      ["example.com shelves"] = "get,list,watch,patch",   -- informer; the finalizer's JSON patches
      ["example.com shelves/finalizers"] = "update",      -- the finalizer; ctx:ensure's owner references
      [" configmaps"] = "get,list,watch,create,patch,delete",
      ["apps deployments"] = "get,list,watch,create,patch,delete",
      [" pods"] = "get,list,watch",                       -- owner = false: no finalizers rule
      ["policy poddisruptionbudgets"] = "get,create,patch",
      [" endpoints"] = "create,patch",
      [" services"] = "create,patch",
      [" limitranges/status"] = "patch",
    }, rules_of(by.ClusterRole[1]))
    local base = script:match("([^/]*)$")
    assert.matches("# get, create, patch, delete: plan: children of controller shelf", out, 1, true)
    assert.matches("# patch: plan: finalizer example.com/cleanup of controller shelf", out, 1, true)
    assert.matches("# get, create, patch: source: ctx:ensure at " .. base .. ":8 (server-side apply; "
      .. "one of the controller's children)", out, 1, true)
    assert.matches("# update: source: ctx:ensure at " .. base .. ":7 (owner reference with blockOwnerDeletion; "
      .. "the reconciled object)", out, 1, true)
    assert.matches("# get, create, patch: source: ctx:ensure at " .. base .. ":15 (server-side apply; "
      .. "resource from the object's kind)", out, 1, true)
    assert.matches("# create, patch: source: client:apply at " .. base .. ":16 (resource from the object's kind)",
      out, 1, true)
  end)

  it("writes YAML that round-trips tricky scalars", function()
    local om = manifests.om
    local doc = om("a", ":8080", "b", "", "c", "true", "d", "  indented\nlines\n", "e", "no newline\nend",
                   "f", "two\n\n", "g", { "x: y", "- z", "#c" }, "h", om(), "i", {}, "j", 5, "k", false,
                   "l", "tab\there \"q\" \\")
    local back = lyaml.load(manifests.yaml({ doc }))
    assert.same({ a = ":8080", b = "", c = "true", d = "  indented\nlines\n", e = "no newline\nend",
                  f = "two\n\n", g = { "x: y", "- z", "#c" }, i = {}, j = 5, k = false,
                  h = {}, l = "tab\there \"q\" \\" }, back)
  end)
end)
