-- kubectl v1.36.3 against a kinformer.sim with authorization = "rbac"
-- (HTTPS and a bearer token, so that kubectl sends its credentials): RBAC
-- objects made with kubectl's typed creates (protobuf), `auth can-i` with
-- and without `--as`, `create token` for a ServiceAccount and that token
-- refused with kube-apiserver's Forbidden text, `auth whoami`.
local proc = require "support.proc"
local client_sim = require "support.client_sim"

describe("kubectl against kinformer.sim with RBAC", function()
  local sim, kc, kubectl

  local function k(args)
    return proc.run(("timeout 30 %s --kubeconfig %s %s"):format(kubectl, kc, args))
  end

  setup(function()
    local why
    kubectl, why = client_sim.kubectl()
    assert(kubectl, why)
    sim, kc = client_sim.start{ authorization = "rbac" }
  end)
  teardown(function() client_sim.stop(sim, kc) end)

  it("makes roles and bindings, answers can-i, makes and refuses a ServiceAccount's token", function()
    local out, rc = k("get clusterroles cluster-admin admin edit view")
    assert.equal(0, rc, out)
    for _, name in ipairs { "cluster-admin", "admin", "edit", "view" } do assert.matches("\n" .. name .. " ", out, 1, true) end
    for _, args in ipairs { "create serviceaccount op",
                            "create role cm-reader --verb=get,list,watch --resource=configmaps",
                            "create rolebinding op-cm --role=cm-reader --serviceaccount=default:op" } do
      out, rc = k(args)
      assert.equal(0, rc, out)
    end
    assert.equal("yes\n", (k("auth can-i list configmaps --as system:serviceaccount:default:op")))
    out, rc = k("auth can-i list secrets --as system:serviceaccount:default:op")
    assert.equal("no\n", out)
    assert.equal(1, rc)
    out, rc = k("get configmaps --as bob")
    assert.equal(1, rc)
    assert.matches('Error from server %(Forbidden%): configmaps is forbidden: User "bob" cannot list resource '
      .. '"configmaps" in API group "" in the namespace "default"', out)
    local token
    token, rc = k("create token op 2>/dev/null")
    assert.equal(0, rc, token)
    token = token:match("^(%S+)%s*$")
    assert.is_not_nil(token)
    out, rc = k("get configmaps --token " .. token)
    assert.equal(0, rc, out)
    out, rc = k("get secrets --token " .. token)
    assert.equal(1, rc)
    assert.equal('Error from server (Forbidden): secrets is forbidden: User "system:serviceaccount:default:op" '
      .. 'cannot list resource "secrets" in API group "" in the namespace "default"\n', out)
    out = k("auth whoami --token " .. token)
    assert.matches("Username%s+system:serviceaccount:default:op\n", out)
    assert.matches("Groups%s+%[system:serviceaccounts system:serviceaccounts:default system:authenticated%]", out)
    out, rc = k("auth can-i --list --token " .. token)
    assert.equal(0, rc, out)
    assert.matches("\nconfigmaps%s+%[%]%s+%[%]%s+%[get list watch%]", out)
  end)
end)
