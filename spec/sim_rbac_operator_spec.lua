-- The issue's "Done when" for RBAC on kinformer.sim: an example operator
-- (examples/configmap-mirror, a namespaced manager with a Role) runs under
-- the RBAC `kinformer manifests` prints for it, applied to a sim started
-- with authorization = "rbac", as its ServiceAccount: its whole reconcile
-- (mirror, update, unmirror, mirror again, delete through the finalizer)
-- gets 0 forbidden answers in the sim's request log. Then one rule is
-- removed (delete on secrets) and the operator's pruning is refused with
-- kube-apiserver's forbidden text, in the request log and the operator's
-- log (quiet.it: the reconcile error is logged on purpose).
local simmod = require "kinformer.sim"
local lyaml = require "lyaml"
local proc = require "support.proc"
local quiet = require "support.quiet"

local SCRIPT = "examples/configmap-mirror/operator.lua"
local NS = "shop"
local SA = "system:serviceaccount:shop:configmap-mirror"
local FORBIDDEN = 'secrets "cfg2" is forbidden: User "system:serviceaccount:shop:configmap-mirror" cannot delete '
  .. 'resource "secrets" in API group "" in the namespace "shop"'

local function escape(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

-- The request log entries of the operator's user since the last take:
-- all of them and the forbidden ones.
local function operator_requests(sim)
  local all, forbidden = {}, {}
  for _, e in ipairs(assert(sim:request_log_take())) do
    if e.user == SA then
      all[#all + 1] = e
      if e.code == 403 then forbidden[#forbidden + 1] = e end
    end
  end
  return all, forbidden
end

describe("an example operator under the RBAC kinformer manifests prints, on kinformer.sim", function()
  quiet.it(it, "runs with 0 forbidden, and with one rule removed gets the real server's forbidden text",
    { escape(FORBIDDEN) }, function()
    local out, rc = proc.run(("KUBECONFIG=/nonexistent %s bin/kinformer manifests %s --namespace %s 2>/dev/null")
      :format(proc.paths_env(), SCRIPT, NS))
    assert.equal(0, rc, out)
    local sim = assert(simmod.start{ authorization = "rbac" })
    -- the driver: the sim's anonymous user, in system:masters
    local driver = require("kinformer").manager{ sim = sim }
    local c = driver.client
    assert(c:create{ apiVersion = "v1", kind = "Namespace", metadata = { name = NS } })
    local kinds = {}
    for _, doc in ipairs(lyaml.load(out, { all = true })) do
      assert(c:create(doc))
      kinds[#kinds + 1] = doc.kind
    end
    assert.is_truthy(table.concat(kinds, " "):find("ServiceAccount Role RoleBinding", 1, true))

    sim:request_log_start()
    local s = assert(require("kinformer.bootstrap").load{ script = SCRIPT, namespace = NS,
      manager = { url = sim.url, token = sim:token(SA) } })
    local mgr = s.mgr
    assert(mgr:start{ timeout = 10 })
    local function secret(name) return (c:get("v1/secrets", NS, name)) end
    local function gone(res, name) return select(3, c:get(res, NS, name)) == "NotFound" end
    -- mirror, change, unmirror, mirror again, delete (the finalizer)
    assert(c:create{ apiVersion = "v1", kind = "ConfigMap", data = { a = "1" },
      metadata = { name = "cfg", namespace = NS, labels = { ["kinformer.io/mirror"] = "true" } } })
    assert(mgr:wait_for(function() return secret("cfg") end))
    assert(c:patch("v1/configmaps", NS, "cfg", { data = { b = "2" } }, { type = "merge" }))
    assert(mgr:wait_for(function() local x = secret("cfg") return x and x.data.b end))
    assert(c:patch("v1/configmaps", NS, "cfg", { metadata = { labels = { ["kinformer.io/mirror"] = "false" } } },
      { type = "merge" }))
    assert(mgr:wait_for(function() return gone("v1/secrets", "cfg") end))
    assert(c:patch("v1/configmaps", NS, "cfg", { metadata = { labels = { ["kinformer.io/mirror"] = "true" } } },
      { type = "merge" }))
    assert(mgr:wait_for(function() return secret("cfg") end))
    assert(c:delete("v1/configmaps", NS, "cfg"))
    assert(mgr:wait_for(function() return gone("v1/configmaps", "cfg") and gone("v1/secrets", "cfg") end))
    local all, forbidden = operator_requests(sim)
    assert.is_true(#all > 10, "the operator's requests: " .. #all)
    assert.same({}, forbidden)

    -- one rule removed: the Role's secrets rule loses delete
    local role = assert(c:get("rbac.authorization.k8s.io/v1/roles", NS, "configmap-mirror"))
    for _, rule in ipairs(role.rules) do
      if rule.resources[1] == "secrets" then
        local verbs = {}
        for _, v in ipairs(rule.verbs) do if v ~= "delete" then verbs[#verbs + 1] = v end end
        rule.verbs = verbs
      end
    end
    assert(c:update("rbac.authorization.k8s.io/v1/roles", role))
    assert(c:create{ apiVersion = "v1", kind = "ConfigMap", data = { a = "1" },
      metadata = { name = "cfg2", namespace = NS, labels = { ["kinformer.io/mirror"] = "true" } } })
    assert(mgr:wait_for(function() return secret("cfg2") end))
    assert(c:patch("v1/configmaps", NS, "cfg2", { metadata = { labels = { ["kinformer.io/mirror"] = "no" } } },
      { type = "merge" }))
    -- the pruning is refused, and the Secret stays
    local refused = assert(mgr:wait_for(function()
      local _, f = operator_requests(sim)
      return #f > 0 and f
    end))
    assert.same({ verb = "delete", resource = "secrets", namespace = NS, name = "cfg2", code = 403 },
      { verb = refused[1].verb, resource = refused[1].resource, namespace = refused[1].namespace,
        name = refused[1].name, code = refused[1].code })
    assert.is_truthy(secret("cfg2"))
    s:close()
    driver:stop()
    -- the text, as the ServiceAccount is answered
    local p = assert(io.popen(("curl -s -X DELETE -H 'Authorization: Bearer %s' '%s/api/v1/namespaces/%s/secrets/cfg2'")
      :format(sim:token(SA), sim.url, NS)))
    local body = require("cjson").decode(p:read("a"))
    p:close()
    assert.equal(FORBIDDEN, body.message)
    sim:stop()
  end)
end)
