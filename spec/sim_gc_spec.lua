-- kinformer.sim's garbage collector (controllers/garbagecollector.c) and
-- the API server's half of it (gc_delete.c): owner references
-- under each propagation policy, as kube-apiserver and
-- kube-controller-manager v1.36.3 do them.
local simmod = require "kinformer.sim"
local http = require "support.sim_http"

local CM = "/api/v1/namespaces/default/configmaps"

local function cm(name, owners)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, ownerReferences = owners } }
end

-- An ownerReference to obj (controller, blockOwnerDeletion when block).
local function ref(obj, block)
  return { apiVersion = obj.apiVersion, kind = obj.kind, name = obj.metadata.name,
           uid = obj.metadata.uid, blockOwnerDeletion = block or nil }
end

local function create(sim, path, obj)
  local out, code = http(sim, "POST", path, obj)
  assert.equal(201, code, out and out.message)
  return out
end

local function get(sim, path)
  local out, code = http(sim, "GET", path)
  return code == 200 and out or nil, code
end

-- The names of the ConfigMaps in default that name owner (uid) as owner.
local function refs_to(sim, uid)
  local l = assert(get(sim, CM))
  local names = {}
  for _, c in ipairs(l.items) do
    for _, r in ipairs(c.metadata.ownerReferences or {}) do
      if r.uid == uid then names[#names + 1] = c.metadata.name end
    end
  end
  table.sort(names)
  return names
end

describe("kinformer.sim garbage collector", function()
  local sim
  before_each(function() sim = assert(simmod.start{ controllers = { "garbagecollector" } }) end)
  after_each(function() sim:stop() end)

  it("deletes the dependents of a deleted owner in the background", function()
    local owner = create(sim, CM, cm("owner"))
    create(sim, CM, cm("child-a", { ref(owner) }))
    create(sim, CM, cm("child-b", { ref(owner, true) }))
    local other = create(sim, CM, cm("other"))
    create(sim, CM, cm("shared", { ref(owner), ref(other) }))
    assert(sim:settle())
    local st, code = http(sim, "DELETE", CM .. "/owner")
    assert.equal(200, code)
    assert.equal("Success", st.status)
    assert(sim:settle())
    assert.equal(404, select(2, get(sim, CM .. "/child-a")))
    assert.equal(404, select(2, get(sim, CM .. "/child-b")))
    -- a dependent with another live owner stays, without the dangling reference
    local shared = assert(get(sim, CM .. "/shared"))
    assert.same({ other.metadata.uid }, { shared.metadata.ownerReferences[1].uid })
    assert.equal(1, #shared.metadata.ownerReferences)
  end)

  it("deletes in the foreground: the owner waits for its blocking dependents", function()
    local owner = create(sim, CM, cm("owner"))
    local blocker = cm("blocker", { ref(owner, true) })
    blocker.metadata.finalizers = { "example.com/hold" }
    create(sim, CM, blocker)
    create(sim, CM, cm("plain", { ref(owner) }))
    assert(sim:settle())
    local out, code = http(sim, "DELETE", CM .. "/owner", { propagationPolicy = "Foreground" })
    assert.equal(200, code)
    assert.equal("ConfigMap", out.kind)
    assert.same({ "foregroundDeletion" }, out.metadata.finalizers)
    assert.is_string(out.metadata.deletionTimestamp)
    assert(sim:settle())
    -- both dependents are deleted; the one with a finalizer stays, marked
    assert.equal(404, select(2, get(sim, CM .. "/plain")))
    local b = assert(get(sim, CM .. "/blocker"))
    assert.is_string(b.metadata.deletionTimestamp)
    -- the owner is visible, deleting, until its blocking dependent is gone
    local o = assert(get(sim, CM .. "/owner"))
    assert.is_string(o.metadata.deletionTimestamp)
    assert.same({ "foregroundDeletion" }, o.metadata.finalizers)
    b.metadata.finalizers = nil
    local _, c2 = http(sim, "PUT", CM .. "/blocker", b)
    assert.equal(200, c2)
    assert(sim:settle())
    assert.equal(404, select(2, get(sim, CM .. "/blocker")))
    assert.equal(404, select(2, get(sim, CM .. "/owner")))
  end)

  it("deletes a chain in the foreground, from the leaves up", function()
    local a = create(sim, CM, cm("a"))
    local b = create(sim, CM, cm("b", { ref(a, true) }))
    local leaf = cm("c", { ref(b, true) })
    leaf.metadata.finalizers = { "example.com/hold" }
    create(sim, CM, leaf)
    assert(sim:settle())
    assert.equal(200, select(2, http(sim, "DELETE", CM .. "/a", { propagationPolicy = "Foreground" })))
    assert(sim:settle())
    -- b waits in the foreground for c, a for b
    local gb = assert(get(sim, CM .. "/b"))
    assert.same({ "foregroundDeletion" }, gb.metadata.finalizers)
    assert.is_string(assert(get(sim, CM .. "/a")).metadata.deletionTimestamp)
    local c = assert(get(sim, CM .. "/c"))
    assert.is_string(c.metadata.deletionTimestamp)
    c.metadata.finalizers = nil
    assert.equal(200, select(2, http(sim, "PUT", CM .. "/c", c)))
    assert(sim:settle())
    for _, n in ipairs { "a", "b", "c" } do assert.equal(404, select(2, get(sim, CM .. "/" .. n)), n) end
  end)

  it("orphans: the dependents stay without the owner's reference", function()
    local owner = create(sim, CM, cm("owner"))
    local other = create(sim, CM, cm("other"))
    create(sim, CM, cm("a", { ref(owner, true) }))
    create(sim, CM, cm("b", { ref(owner), ref(other) }))
    assert(sim:settle())
    local out, code = http(sim, "DELETE", CM .. "/owner?propagationPolicy=Orphan")
    assert.equal(200, code)
    assert.same({ "orphan" }, out.metadata.finalizers)
    assert(sim:settle())
    assert.equal(404, select(2, get(sim, CM .. "/owner")))
    local a = assert(get(sim, CM .. "/a"))
    assert.is_nil(a.metadata.ownerReferences)
    local b = assert(get(sim, CM .. "/b"))
    assert.equal(1, #b.metadata.ownerReferences)
    assert.equal(other.metadata.uid, b.metadata.ownerReferences[1].uid)
    assert.same({}, refs_to(sim, owner.metadata.uid))
  end)

  it("collects namespaced dependents of a cluster-scoped owner", function()
    local crd = create(sim, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
      apiVersion = "apiextensions.k8s.io/v1", kind = "CustomResourceDefinition",
      metadata = { name = "gadgets.example.com" },
      spec = { group = "example.com", scope = "Cluster",
               names = { plural = "gadgets", singular = "gadget", kind = "Gadget" },
               versions = { { name = "v1", served = true, storage = true,
                              schema = { openAPIV3Schema = { type = "object",
                                                             ["x-kubernetes-preserve-unknown-fields"] = true } } } } } })
    create(sim, CM, cm("crd-child", { ref(crd) }))
    local gadget = create(sim, "/apis/example.com/v1/gadgets", { apiVersion = "example.com/v1", kind = "Gadget",
                                                               metadata = { name = "g1" } })
    create(sim, CM, cm("gadget-child", { ref(gadget, true) }))
    assert(sim:settle())
    assert(get(sim, CM .. "/crd-child"))
    assert(get(sim, CM .. "/gadget-child"))
    assert.equal(200, select(2, http(sim, "DELETE", "/apis/example.com/v1/gadgets/g1")))
    assert(sim:settle())
    assert.equal(404, select(2, get(sim, CM .. "/gadget-child")))
    assert(get(sim, CM .. "/crd-child"))
    local crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
    assert.equal(200, select(2, http(sim, "DELETE", crds .. "gadgets.example.com")))
    assert(sim:settle())
    assert.equal(404, select(2, get(sim, CM .. "/crd-child")))
  end)

  it("deletes a dependent whose owner never existed or has another uid", function()
    local owner = create(sim, CM, cm("owner"))
    create(sim, CM, cm("ghost", { { apiVersion = "v1", kind = "ConfigMap", name = "nobody",
                                     uid = "00000000-0000-0000-0000-000000000001" } }))
    create(sim, CM, cm("wrong-uid", { { apiVersion = "v1", kind = "ConfigMap", name = "owner",
                                         uid = "00000000-0000-0000-0000-000000000002" } }))
    create(sim, CM, cm("fine", { ref(owner) }))
    assert(sim:settle())
    assert.equal(404, select(2, get(sim, CM .. "/ghost")))
    assert.equal(404, select(2, get(sim, CM .. "/wrong-uid")))
    assert(get(sim, CM .. "/fine"))
  end)

  it("ignores references to kinds the server does not serve", function()
    create(sim, CM, cm("alien", { { apiVersion = "example.com/v1", kind = "Gadget", name = "g",
                                     uid = "00000000-0000-0000-0000-000000000003" } }))
    assert(sim:settle())
    assert(get(sim, CM .. "/alien"))
  end)

  it("changes the finalizers when a second delete asks for another policy", function()
    local owner = create(sim, CM, cm("owner"))
    local child = cm("child", { ref(owner, true) })
    child.metadata.finalizers = { "example.com/hold" }
    create(sim, CM, child)
    -- a finalizer of its own keeps the owner while the policies change
    local o = assert(get(sim, CM .. "/owner"))
    o.metadata.finalizers = { "example.com/keep" }
    assert.equal(200, select(2, http(sim, "PUT", CM .. "/owner", o)))
    local out = http(sim, "DELETE", CM .. "/owner", { propagationPolicy = "Orphan" })
    assert.same({ "example.com/keep", "orphan" }, out.metadata.finalizers)
    local ts = out.metadata.deletionTimestamp
    out = http(sim, "DELETE", CM .. "/owner", { propagationPolicy = "Foreground" })
    assert.same({ "example.com/keep", "foregroundDeletion" }, out.metadata.finalizers)
    assert.equal(ts, out.metadata.deletionTimestamp)
  end)

  it("answers the real server's errors for bad DeleteOptions", function()
    local x = cm("x")
    x.metadata.finalizers = { "example.com/hold" }
    create(sim, CM, x)
    local out, code = http(sim, "DELETE", CM .. "/x", { propagationPolicy = "Sideways" })
    assert.equal(422, code)
    assert.equal('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: ' ..
      '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"', out.message)
    out, code = http(sim, "DELETE", CM .. "/x", { propagationPolicy = "Orphan", orphanDependents = true })
    assert.equal(422, code)
    assert.equal('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: ' ..
      '"Orphan": orphanDependents and deletionPropagation cannot be both set', out.message)
    -- orphanDependents=false and not deleted at once (a finalizer holds it): 202
    out, code = http(sim, "DELETE", CM .. "/x", { orphanDependents = false })
    assert.equal(202, code)
    assert.same({ "example.com/hold" }, out.metadata.finalizers)
    assert.is_string(out.metadata.deletionTimestamp)
  end)
end)
