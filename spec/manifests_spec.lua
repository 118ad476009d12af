-- `kinformer manifests` (lua/kinformer/manifests.lua): the YAML printed for
-- the example operators, parsed with lyaml (Debian's lua-yaml, over
-- libyaml), and its RBAC rules asserted exactly.
local lyaml = require "lyaml"
local manifests = require "kinformer.cmd.manifests"
local proc = require "support.proc"

-- bin/kinformer manifests ARGS with no kubeconfig reachable (planning
-- must not connect); returns the exit status, stdout and stderr.
local function run(args)
  local errf = os.tmpname()
  local out, rc = proc.run(string.format("KUBECONFIG=/nonexistent %s bin/kinformer manifests %s 2>%s",
    proc.paths_env(), args, errf))
  return rc, out, proc.slurp(errf)
end

local function docs_of(yaml)
  local docs = lyaml.load(yaml, { all = true })
  local by = {}
  for _, d in ipairs(docs) do
    by[d.kind] = by[d.kind] or {}
    table.insert(by[d.kind], d)
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
  ["example.kinformer.io websites"] = "get,list,watch,update",
  ["example.kinformer.io websites/status"] = "update",
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
    assert.same({ "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap",
                  "Deployment" }, kinds)
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

    -- the ConfigMap ships the script and the reconciler module, unchanged
    local cm = by.ConfigMap[1]
    assert.equal(proc.read("examples/website/operator.lua"), cm.data["operator.lua"])
    assert.equal(proc.read("examples/website/website_reconciler.lua"), cm.data["website_reconciler.lua"])

    local dep = by.Deployment[1]
    assert.equal(2, dep.spec.replicas)
    local pod = dep.spec.template.spec
    assert.equal("website", pod.serviceAccountName)
    local c = pod.containers[1]
    assert.equal("registry.example/website-op:1.2", c.image)
    assert.same({ "kinformer", "run", "--name", "website", "--leader-elect", "--leader-election-id", "website",
                  "--metrics-bind-address", ":8080", "--health-probe-bind-address", ":8081",
                  "/operator/operator.lua" }, c.command)
    assert.same({ path = "/readyz", port = "health" }, c.readinessProbe.httpGet)
    assert.same({ path = "/healthz", port = "health" }, c.livenessProbe.httpGet)
    local ports = {}
    for _, p in ipairs(c.ports) do ports[p.name] = p.containerPort end
    assert.same({ metrics = 8080, health = 8081 }, ports)
    assert.same({ { name = "script", mountPath = "/operator", readOnly = true } }, c.volumeMounts)
    assert.equal("website-script", pod.volumes[1].configMap.name)
    assert.same({ { key = "operator.lua", path = "operator.lua" },
                  { key = "website_reconciler.lua", path = "website_reconciler.lua" } },
      pod.volumes[1].configMap.items)
    assert.same(dep.spec.selector.matchLabels["app.kubernetes.io/name"],
      dep.spec.template.metadata.labels["app.kubernetes.io/name"])

    -- the comments say where each rule came from
    assert.matches("# Every client call's resource was determined.", out, 1, true)
    assert.matches("# get, list, watch: plan: informer of controller website (for)", out, 1, true)
    assert.matches("# update: source: client:update_status at website_reconciler.lua:", out, 1, true)
    assert.matches("# delete: source: client:delete at website_reconciler.lua:", out, 1, true)
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
      [" configmaps"] = "get,list,watch",
      [" configmaps/finalizers"] = "update",
      [" secrets"] = "get,list,watch,create,update,delete",
    }, rules_of(role))
    assert.equal("shop", by.RoleBinding[1].subjects[1].namespace)
    assert.equal("shop", by.Deployment[1].metadata.namespace)
    local cmd = by.Deployment[1].spec.template.spec.containers[1].command
    assert.same({ "--namespace", "shop", "/operator/operator.lua" }, { table.unpack(cmd, #cmd - 2) })
    assert.is_string(by.ConfigMap[1].data["mirror_reconciler.lua"])
  end)

  it("gives a handlers-only script its informer's rules and ships its handler module (pod-label-auditor)", function()
    local rc, out, err = run("examples/pod-label-auditor/operator.lua")
    assert.equal(0, rc, err)
    local _, by = docs_of(out)
    assert.same(with_events { [" pods"] = "get,list,watch" }, rules_of(by.ClusterRole[1]))
    local data = by.ConfigMap[1].data
    assert.equal(proc.read("examples/pod-label-auditor/auditor_handlers.lua"), data["auditor_handlers.lua"])
    assert.equal(proc.read("examples/pod-label-auditor/auditor.lua"), data["auditor.lua"])
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
    local rc, out, err = run(dir .. "/op.lua --name Demo_Op")
    os.execute("rm -rf " .. dir)
    assert.equal(0, rc, err)
    local _, by = docs_of(out)
    assert.same(with_events {
      [" namespaces"] = "list",
      ["apps statefulsets"] = "get,list,watch",
      ["apps statefulsets/status"] = "patch",
      [" configmaps"] = "get,list,watch,patch",
      ["batch jobs"] = "patch",
      [" persistentvolumeclaims"] = "get,list,watch,delete",
    }, rules_of(by.ClusterRole[1]))
    assert.equal("demo-op", by.ClusterRole[1].metadata.name)
    assert.matches("# list: plan: client:list at script load", out, 1, true)
    assert.matches("# NOT DETERMINED (no rule granted; add what they need by hand):", out, 1, true)
    assert.matches("#   source: lib/helper.lua:4: client:delete(t.resource, ...)", out, 1, true)
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

  it("is parsed by the cli with run's --namespace and its own --image and --name", function()
    local cli = require "kinformer.cmd.cli"
    local o = assert(cli.parse { "manifests", "op.lua", "--namespace", "ns", "--image=reg/op:1", "--name", "x" })
    assert.same({ command = "manifests", script = "op.lua", namespace = "ns", image = "reg/op:1", name = "x",
                  args = {} }, o)
    for argv, msg in pairs {
      [{ "manifests" }] = "manifests needs a script",
      [{ "manifests", "op.lua", "--sim" }] = "manifests takes no --sim",
      [{ "run", "op.lua", "--image", "i" }] = "--image is an option of manifests",
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
