-- examples/team-namespace: run as `kinformer run
-- examples/team-namespace/operator.lua` against kinformer.sim, or the real
-- kube-apiserver under `make e2e-lua`. A Namespace labelled team=<name>
-- gets a ConfigMap team-info and a ServiceAccount team-bot it controls.
local h = require "examples.helper"

describe("examples/team-namespace", function()
  local t, op
  local spaces = {}

  -- a fresh namespace with labels (kinformer-ex-team-<random>)
  local function namespace(labels)
    local name = string.format("kinformer-ex-team-%05d", math.random(0, 99999))
    assert(t.client:create("v1/namespaces", { apiVersion = "v1", kind = "Namespace",
      metadata = { name = name, labels = labels } }))
    spaces[#spaces + 1] = name
    return name
  end

  setup(function()
    t = h.target()
    math.randomseed(os.time())
    op = h.operator("examples/team-namespace/operator.lua", t, { "-v" })
    op:wait_output("caches synced", "err")
  end)

  teardown(function()
    if op then op:cleanup() end
    if t then
      for _, ns in ipairs(spaces) do h.cleanup_namespace(t, ns, { "v1/configmaps", "v1/serviceaccounts" }) end
      t.stop()
    end
  end)

  local function get(res, ns, name)
    return t.client:get(res, ns, name)
  end

  it("gives a team's namespace a ConfigMap and a ServiceAccount it controls", function()
    local ns = namespace({ team = "payments" })
    local cm = h.eventually(function() return get("v1/configmaps", ns, "team-info") end, "ConfigMap team-info")
    assert.same({ team = "payments" }, cm.data)
    assert.equal("payments", cm.metadata.labels.team)
    local sa = h.eventually(function() return get("v1/serviceaccounts", ns, "team-bot") end, "ServiceAccount team-bot")
    assert.equal("payments", sa.metadata.labels.team)
    local nsobj = assert(get("v1/namespaces", "", ns))
    for _, o in ipairs { cm, sa } do
      local ref = h.controller_ref(o)
      assert.same({ "v1", "Namespace", ns, nsobj.metadata.uid, true },
        { ref.apiVersion, ref.kind, ref.name, ref.uid, ref.blockOwnerDeletion })
    end
    op:wait_output("created ConfigMap " .. h.esc(ns) .. "/team%-info for team payments", "err")
    op:wait_output("created ServiceAccount " .. h.esc(ns) .. "/team%-bot for team payments", "err")
  end)

  it("follows the team label, and recreates what is deleted (owns)", function()
    local ns = namespace({ team = "search" })
    local cm = h.eventually(function() return get("v1/configmaps", ns, "team-info") end, "ConfigMap team-info")
    h.eventually(function() return get("v1/serviceaccounts", ns, "team-bot") end, "ServiceAccount team-bot")
    assert(t.client:patch("v1/namespaces", "", ns, { metadata = { labels = { team = "ads" } } }, { type = "merge" }))
    h.eventually(function()
      local c = get("v1/configmaps", ns, "team-info")
      local s = get("v1/serviceaccounts", ns, "team-bot")
      return c and s and c.data.team == "ads" and c.metadata.labels.team == "ads" and s.metadata.labels.team == "ads"
    end, "both relabelled to ads")
    assert(t.client:delete("v1/configmaps", ns, "team-info"))
    h.eventually(function()
      local c = get("v1/configmaps", ns, "team-info")
      return c and c.metadata.uid ~= cm.metadata.uid and c.data.team == "ads"
    end, "the ConfigMap recreated")
  end)

  it("leaves namespaces without a team label alone", function()
    local plain = namespace(nil)
    -- one with a team, created after it: by the time it is served, "plain" was seen
    local marker = namespace({ team = "marker" })
    h.eventually(function() return get("v1/serviceaccounts", marker, "team-bot") end, "the marker's ServiceAccount")
    local _, _, code = get("v1/configmaps", plain, "team-info")
    assert.equal("NotFound", code)
    _, _, code = get("v1/serviceaccounts", plain, "team-bot")
    assert.equal("NotFound", code)
  end)

  it("exits 0 on SIGINT", function()
    assert.equal(0, op:stop("INT"))
  end)
end)
