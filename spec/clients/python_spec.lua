-- The official Kubernetes Python client (Debian's python3-kubernetes, from
-- tools/deps.sh) against kinformer.sim over HTTPS with a bearer token:
-- spec/clients/python_client.py runs the calls once and prints what each
-- returned as JSON; each case below asserts on its part.
local cjson = require "cjson"
local proc = require "support.proc"
local client_sim = require "support.client_sim"

-- Debian's interpreter, where python3-kubernetes is installed (a python3
-- earlier in PATH, e.g. pyenv's, would not see it).
local PYTHON = os.getenv("KINFORMER_PYTHON") or "/usr/bin/python3"

describe("the Python client against kinformer.sim", function()
  local sim, kc, res

  setup(function()
    -- the API server's answers (a Deployment's scale with no pod):
    -- without the workloads' controllers, which would run it
    sim, kc = client_sim.start { controllers = "*,-scheduler,-kubelet,-deployment,-replicaset" }
    local errf = os.tmpname()
    local out, rc = proc.run(("timeout 60 %s spec/clients/python_client.py %s 2>%s"):format(PYTHON, kc, errf))
    local err = proc.slurp(errf)
    assert(rc == 0, "python_client.py: exit " .. tostring(rc) .. ": " .. out .. err)
    res = cjson.decode(out)
  end)
  teardown(function() client_sim.stop(sim, kc) end)

  -- A case's result, failing with the Python traceback when it raised.
  local function case(name)
    local r = res[name]
    assert(r, "no result for " .. name)
    assert(not r.error, name .. " raised: " .. tostring(r.error) .. "\n" .. tostring(r.trace))
    return r
  end

  it("lists", function()
    local r = case("list")
    assert.are.same({ "default", "kube-node-lease", "kube-public", "kube-system" }, r.namespaces)
    assert.matches("^%d+$", r.list_rv)
    assert.are.equal(0, r.configmaps)
    assert.are.equal(0, r.selected)
  end)

  it("creates, and gets 409 AlreadyExists the second time", function()
    local r = case("create")
    assert.are.equal("py-cm", r.name)
    assert.are.equal("default", r.namespace)
    assert.are.equal(36, #r.uid)
    assert.are.same({ a = "1" }, r.data)
    assert.are.same({ a = "1" }, r.read_data)
    assert.are.same({ status = 409, reason = "AlreadyExists" }, r.again)
  end)

  it("patches (a dict as a strategic merge patch, a list as a JSON patch)", function()
    local r = case("patch")
    assert.are.same({ a = "1", b = "2" }, r.strategic)
    assert.are.same({ a = "3", b = "2" }, r.json)
    assert.is_true(r.rvs_differ)
  end)

  it("streams a watch (watch=True, timeout_seconds): ADDED, MODIFIED, DELETED", function()
    local r = case("watch")
    local seen = {}
    for _, ev in ipairs(r.events) do
      seen[#seen + 1] = ev.type .. " " .. ev.name .. " " .. ((ev.data ~= cjson.null and ev.data.v) or "")
      assert.are.equal("V1ConfigMap", ev.kind)
    end
    assert.are.same({ "ADDED py-w 1", "MODIFIED py-w 2", "DELETED py-w 2" }, seen)
  end)

  it("reads, patches and replaces a deployment's scale", function()
    local r = case("scale")
    assert.are.same({ kind = "Scale", replicas = 1, status_replicas = 0, selector = "app=py" }, r.read)
    assert.are.equal(4, r.patched)
    assert.are.equal(2, r.replaced)
    assert.are.equal(2, r.deployment_replicas)
    assert.are.equal(3, r.generation)
  end)
end)
