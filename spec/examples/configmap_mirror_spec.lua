-- examples/configmap-mirror: run as `kinformer run
-- examples/configmap-mirror/operator.lua --namespace NS` against
-- kinformer.sim, or the real kube-apiserver under `make e2e-lua`.
local h = require "examples.helper"

local MIRROR = "kinformer.io/mirror"

local function configmap(ns, name, labels, data)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = ns, labels = labels },
           data = data }
end

describe("examples/configmap-mirror", function()
  local t, ns, op

  setup(function()
    t = h.target()
    ns = h.namespace(t, "mirror")
    -- one labelled ConfigMap exists before the operator starts (initial list)
    assert(t.client:create(configmap(ns, "early", { [MIRROR] = "true" }, { a = "1" })))
    op = h.operator("examples/configmap-mirror/operator.lua", t, { "--namespace", ns })
    op:wait_output("caches synced", "err")
  end)

  teardown(function()
    if op then op:cleanup() end
    if t then
      if ns then h.cleanup_namespace(t, ns, { "v1/configmaps", "v1/secrets" }) end
      t.stop()
    end
  end)

  local function secret(name)
    return t.client:get("v1/secrets", ns, name)
  end

  local function gone(name)
    return h.eventually(function()
      local _, _, code = secret(name)
      return code == "NotFound"
    end, "Secret " .. name .. " to be deleted")
  end

  it("mirrors a ConfigMap labelled before the operator started", function()
    local s = h.eventually(function() return secret("early") end, "Secret early")
    assert.same({ a = "MQ==" }, s.data)
  end)

  it("mirrors a labelled ConfigMap into a Secret it controls, base64-encoded", function()
    local cm = assert(t.client:create(configmap(ns, "settings", { [MIRROR] = "true" },
      { log_level = "debug", greeting = "hello, world" })))
    local s = h.eventually(function() return secret("settings") end, "Secret settings")
    assert.equal("Opaque", s.type)
    assert.same({ log_level = "ZGVidWc=", greeting = "aGVsbG8sIHdvcmxk" }, s.data)
    assert.equal("settings", s.metadata.labels["kinformer.io/mirror-of"])
    local ref = h.controller_ref(s)
    assert.same({ "v1", "ConfigMap", "settings", cm.metadata.uid, true },
      { ref.apiVersion, ref.kind, ref.name, ref.uid, ref.blockOwnerDeletion })
  end)

  it("leaves unlabelled ConfigMaps alone", function()
    assert(t.client:create(configmap(ns, "plain", nil, { x = "1" })))
    -- a labelled one created after it is mirrored; by then "plain" was seen
    assert(t.client:create(configmap(ns, "marker", { [MIRROR] = "true" }, { y = "2" })))
    h.eventually(function() return secret("marker") end, "Secret marker")
    local _, _, code = secret("plain")
    assert.equal("NotFound", code)
  end)

  it("follows data changes, including removed keys", function()
    local cm = assert(t.client:get("v1/configmaps", ns, "settings"))
    cm.data = { log_level = "info" }
    assert(t.client:update(cm))
    h.eventually(function()
      local s = secret("settings")
      return s and s.data.log_level == "aW5mbw==" and s.data.greeting == nil
    end, "Secret settings updated")
  end)

  it("restores a Secret edited or deleted by hand (Owns)", function()
    local s = assert(secret("settings"))
    s.data = { log_level = "dGFtcGVyZWQ=" }
    assert(t.client:update(s))
    h.eventually(function()
      local cur = secret("settings")
      return cur and cur.data.log_level == "aW5mbw=="
    end, "the edit reverted")
    assert(t.client:delete("v1/secrets", ns, "settings"))
    h.eventually(function()
      local cur = secret("settings")
      return cur and cur.metadata.uid ~= s.metadata.uid
    end, "the Secret recreated")
  end)

  it("deletes the Secret when the label is removed, and mirrors again when it returns", function()
    assert(t.client:patch("v1/configmaps", ns, "settings", { metadata = { labels = { [MIRROR] = "false" } } },
      { type = "merge" }))
    gone("settings")
    assert(t.client:patch("v1/configmaps", ns, "settings", { metadata = { labels = { [MIRROR] = "true" } } },
      { type = "merge" }))
    h.eventually(function() return secret("settings") end, "Secret settings again")
  end)

  it("deletes the Secret when the ConfigMap is deleted", function()
    assert(t.client:delete("v1/configmaps", ns, "settings"))
    gone("settings")
  end)

  it("never touches a Secret it does not control", function()
    assert(t.client:create({ apiVersion = "v1", kind = "Secret", type = "Opaque",
      metadata = { name = "foreign", namespace = ns }, data = { keep = "bWU=" } }))
    assert(t.client:create(configmap(ns, "foreign", { [MIRROR] = "true" }, { other = "x" })))
    op:wait_output("Secret " .. h.esc(ns) .. "/foreign exists and has no controller: not adopting it for "
      .. "ConfigMap foreign", "err")
    local s = assert(secret("foreign"))
    assert.same({ keep = "bWU=" }, s.data)
    assert.is_nil(h.controller_ref(s))
    -- unlabelling or deleting the ConfigMap leaves it too
    assert(t.client:delete("v1/configmaps", ns, "foreign"))
    assert(t.client:create(configmap(ns, "after", { [MIRROR] = "true" }, {})))
    h.eventually(function() return secret("after") end, "Secret after")
    assert(secret("foreign"))
  end)

  it("exits 0 on SIGINT", function()
    assert.equal(0, op:stop("INT"))
  end)
end)
