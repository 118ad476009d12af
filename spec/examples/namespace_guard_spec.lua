-- examples/namespace-guard (the README's "Writing an operator"): run as
-- `kinformer run examples/namespace-guard/operator.lua -v` against
-- kinformer.sim, or the real kube-apiserver under `make e2e-lua`.
local h = require "examples.helper"
local null = require("kinformer.core").null

local FIN = "guard.kinformer.io/release"

describe("examples/namespace-guard", function()
  local t, op, name

  setup(function()
    t = h.target()
    name = "guard-" .. tostring(os.time() % 100000) .. "-" .. tostring(math.random(1000, 9999))
    op = h.operator("examples/namespace-guard/operator.lua", t, { "-v" })
    op:wait_output("caches synced", "err")
  end)

  teardown(function()
    if op then op:cleanup() end
    if t then
      if name then
        -- the finalizer must not keep the namespace if a test failed half-way
        t.client:patch("v1/namespaces", nil, name, { metadata = { finalizers = null } }, { type = "merge" })
        t.client:delete("v1/namespaces", nil, name)
      end
      t.stop()
    end
  end)

  local function get(res, n) return t.client:get(res, name, n) end

  local function has_finalizer(ns)
    for _, f in ipairs(ns and ns.metadata.finalizers or {}) do if f == FIN then return true end end
    return false
  end

  it("gives a team's Namespace its ConfigMap and ServiceAccount, owned, and a finalizer", function()
    assert(t.client:create{ apiVersion = "v1", kind = "Namespace",
                            metadata = { name = name, labels = { team = "alpha" } } })
    local cm = h.eventually(function() return get("v1/configmaps", "team-settings") end, "the team's ConfigMap")
    local sa = h.eventually(function() return get("v1/serviceaccounts", "team-deployer") end, "the ServiceAccount")
    local ns = assert(t.client:get("v1/namespaces", nil, name))
    assert.same({ team = "alpha", ["max-pods"] = "20" }, cm.data)
    assert.equal("alpha", sa.metadata.labels.team)
    for _, obj in ipairs { cm, sa } do
      local ref = h.controller_ref(obj)
      assert.same({ "Namespace", name, ns.metadata.uid }, { ref.kind, ref.name, ref.uid })
    end
    assert.is_true(has_finalizer(ns))
    op:wait_output("%[reconcile%] namespace%-guard " .. h.esc(name) .. ": done", "err")
  end)

  it("puts an edited child back", function()
    assert(t.client:patch("v1/configmaps", name, "team-settings", { data = { ["max-pods"] = "99" } },
      { type = "merge" }))
    h.eventually(function()
      local cm = get("v1/configmaps", "team-settings")
      return cm and cm.data["max-pods"] == "20"
    end, "max-pods back at 20")
  end)

  it("lets go of a Namespace that loses its team label, and guards it again when it comes back", function()
    assert(t.client:patch("v1/namespaces", nil, name, { metadata = { labels = { team = null } } }, { type = "merge" }))
    h.eventually(function()
      return select(3, get("v1/configmaps", "team-settings")) == "NotFound"
        and select(3, get("v1/serviceaccounts", "team-deployer")) == "NotFound"
    end, "the children pruned")
    h.eventually(function() return not has_finalizer(t.client:get("v1/namespaces", nil, name)) end,
      "the finalizer removed")
    assert(t.client:patch("v1/namespaces", nil, name, { metadata = { labels = { team = "beta" } } },
      { type = "merge" }))
    h.eventually(function()
      local cm = get("v1/configmaps", "team-settings")
      return cm and cm.data.team == "beta"
    end, "the ConfigMap for team beta")
  end)

  it("deletes the children and releases the Namespace through its finalizer", function()
    h.eventually(function() return has_finalizer(t.client:get("v1/namespaces", nil, name)) end, "the finalizer back")
    assert(t.client:delete("v1/namespaces", nil, name))
    -- kinformer.sim deletes it once the finalizer is gone; a bare
    -- kube-apiserver (no namespace controller) leaves it Terminating
    h.eventually(function()
      local ns, _, code = t.client:get("v1/namespaces", nil, name)
      return code == "NotFound" or (ns and not has_finalizer(ns))
    end, "the finalizer removed on delete")
    op:wait_output("%[reconcile%] namespace%-guard " .. h.esc(name) .. ": done", "err")
    assert.equal("NotFound", select(3, get("v1/configmaps", "team-settings")))
    assert.equal(0, op:stop("TERM"))
  end)
end)
