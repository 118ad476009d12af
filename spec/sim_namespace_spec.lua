-- Namespace lifecycle in kinformer.sim: the API server's part
-- (namespace_lifecycle.c: Terminating, NamespaceLifecycle
-- admission, the finalize subresource) and the namespace controller's
-- (controllers/namespace.c: content deleted, conditions, finalize), on a
-- fake clock so the controller's delays pass on demand.
local simmod = require "kinformer.sim"
local http = require "support.sim_http"

local function ns_obj(name)
  return { apiVersion = "v1", kind = "Namespace", metadata = { name = name } }
end

local function cm(name)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name } }
end

local function condition(ns, type)
  for _, c in ipairs(ns.status.conditions or {}) do
    if c.type == type then return c end
  end
end

describe("kinformer.sim namespace lifecycle", function()
  local sim
  before_each(function()
    sim = assert(simmod.start{ controllers = { "namespace", "garbagecollector" }, clock = "fake" })
  end)
  after_each(function() sim:stop() end)

  it("creates namespaces with the kubernetes finalizer and phase Active", function()
    local ns, code = http(sim, "POST", "/api/v1/namespaces", ns_obj("a"))
    assert.equal(201, code)
    assert.same({ "kubernetes" }, ns.spec.finalizers)
    assert.equal("Active", ns.status.phase)
    local withf = ns_obj("b")
    withf.spec = { finalizers = { "example.com/x" } }
    ns = http(sim, "POST", "/api/v1/namespaces", withf)
    assert.same({ "example.com/x", "kubernetes" }, ns.spec.finalizers)
    -- an update does not change spec.finalizers (only finalize does)
    ns.spec.finalizers = {}
    ns = http(sim, "PUT", "/api/v1/namespaces/b", ns)
    assert.same({ "example.com/x", "kubernetes" }, ns.spec.finalizers)
  end)

  it("goes through Terminating, deletes its contents, then disappears", function()
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces", ns_obj("team"))))
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces/team/configmaps", cm("one"))))
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces/team/secrets",
      { apiVersion = "v1", kind = "Secret", metadata = { name = "s" } })))
    local held = cm("held")
    held.metadata.finalizers = { "example.com/hold" }
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces/team/configmaps", held)))
    local ns, code = http(sim, "DELETE", "/api/v1/namespaces/team")
    assert.equal(200, code)
    assert.equal("Namespace", ns.kind)
    assert.equal("Terminating", ns.status.phase)
    assert.is_string(ns.metadata.deletionTimestamp)
    assert.same({ "kubernetes" }, ns.spec.finalizers)
    -- creates are refused with NamespaceLifecycle's text
    local st
    st, code = http(sim, "POST", "/api/v1/namespaces/team/configmaps", cm("late"))
    assert.equal(403, code)
    assert.equal("configmaps \"late\" is forbidden: unable to create new content in namespace team " ..
      "because it is being terminated", st.message)
    assert.equal("NamespaceTerminating", st.details.causes[1].reason)
    -- nothing happens before the controller's 5 s grace period
    assert(sim:settle())
    assert.equal(200, select(2, http(sim, "GET", "/api/v1/namespaces/team/configmaps/one")))
    sim:clock_advance(5)
    assert(sim:settle())
    assert.equal(404, select(2, http(sim, "GET", "/api/v1/namespaces/team/configmaps/one")))
    assert.equal(404, select(2, http(sim, "GET", "/api/v1/namespaces/team/secrets/s")))
    local h = assert(http(sim, "GET", "/api/v1/namespaces/team/configmaps/held"))
    assert.is_string(h.metadata.deletionTimestamp)
    ns = assert(http(sim, "GET", "/api/v1/namespaces/team"))
    assert.equal("Terminating", ns.status.phase)
    local types = {}
    for _, c in ipairs(ns.status.conditions) do types[#types + 1] = c.type end
    assert.same({ "NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
                  "NamespaceDeletionContentFailure", "NamespaceContentRemaining",
                  "NamespaceFinalizersRemaining" }, types)
    local c = condition(ns, "NamespaceContentRemaining")
    assert.same({ "True", "SomeResourcesRemain", "Some resources are remaining: configmaps. has 1 resource instances" },
      { c.status, c.reason, c.message })
    c = condition(ns, "NamespaceFinalizersRemaining")
    assert.same({ "True", "SomeFinalizersRemain",
                  "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances" },
      { c.status, c.reason, c.message })
    c = condition(ns, "NamespaceDeletionDiscoveryFailure")
    assert.same({ "False", "ResourcesDiscovered", "All resources successfully discovered" },
      { c.status, c.reason, c.message })
    -- the finalizer goes; the controller comes back after 15/2+1 s
    h.metadata.finalizers = nil
    assert.equal(200, select(2, http(sim, "PUT", "/api/v1/namespaces/team/configmaps/held", h)))
    assert(sim:settle())
    assert.equal(200, select(2, http(sim, "GET", "/api/v1/namespaces/team")))
    sim:clock_advance(8)
    assert(sim:settle())
    local _, gone = http(sim, "GET", "/api/v1/namespaces/team")
    assert.equal(404, gone)
  end)

  it("deletes the pods first and the rest once no pod is left", function()
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces", ns_obj("pods-first"))))
    local pod = { apiVersion = "v1", kind = "Pod",
                  metadata = { name = "p", finalizers = { "example.com/hold" } },
                  spec = { containers = { { name = "c", image = "i" } } } }
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces/pods-first/pods", pod)))
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces/pods-first/configmaps", cm("c"))))
    assert.equal(200, select(2, http(sim, "DELETE", "/api/v1/namespaces/pods-first")))
    assert(sim:settle()) -- the controller sees the change at this clock's time
    sim:clock_advance(5)
    assert(sim:settle())
    local p = assert(http(sim, "GET", "/api/v1/namespaces/pods-first/pods/p"))
    assert.is_string(p.metadata.deletionTimestamp)
    -- the ConfigMap waits for the pods (OrderedNamespaceDeletion)
    assert.equal(200, select(2, http(sim, "GET", "/api/v1/namespaces/pods-first/configmaps/c")))
    -- and, as the real controller, the conditions are written without the totals
    local ns = assert(http(sim, "GET", "/api/v1/namespaces/pods-first"))
    assert.equal("False", condition(ns, "NamespaceContentRemaining").status)
    p.metadata.finalizers = nil
    assert.equal(200, select(2, http(sim, "PUT", "/api/v1/namespaces/pods-first/pods/p", p)))
    assert(sim:settle()) -- the controller sees the change at this clock's time
    sim:clock_advance(8)
    assert(sim:settle())
    assert.equal(404, select(2, http(sim, "GET", "/api/v1/namespaces/pods-first/configmaps/c")))
    assert.equal(404, select(2, http(sim, "GET", "/api/v1/namespaces/pods-first")))
  end)

  it("refuses creates in a namespace that does not exist and deletes of the immortal ones", function()
    local st, code = http(sim, "POST", "/api/v1/namespaces/nope/configmaps", cm("x"))
    assert.equal(404, code)
    assert.equal('namespaces "nope" not found', st.message)
    st, code = http(sim, "DELETE", "/api/v1/namespaces/default")
    assert.equal(403, code)
    assert.equal('namespaces "default" is forbidden: this namespace may not be deleted', st.message)
  end)

  it("is finalized through the finalize subresource and waits for metadata.finalizers", function()
    local n = ns_obj("f")
    n.metadata.finalizers = { "example.com/meta" }
    assert.equal(201, select(2, http(sim, "POST", "/api/v1/namespaces", n)))
    local ns = http(sim, "DELETE", "/api/v1/namespaces/f")
    assert.same({ "example.com/meta" }, ns.metadata.finalizers)
    assert(sim:settle()) -- the controller sees the change at this clock's time
    sim:clock_advance(5)
    assert(sim:settle())
    -- spec.finalizers empty: the namespace stays for its metadata finalizer
    ns = assert(http(sim, "GET", "/api/v1/namespaces/f"))
    assert.is_nil(ns.spec.finalizers)
    ns.metadata.finalizers = nil
    local _, code = http(sim, "PUT", "/api/v1/namespaces/f", ns)
    assert.equal(200, code)
    assert.equal(404, select(2, http(sim, "GET", "/api/v1/namespaces/f")))
  end)
end)
