-- `kinformer plan` / ctl:plan and ctl:why with admission webhooks (issue
-- 25), on kinformer.sim: one manager serves a validating and a mutating
-- webhook over HTTPS (its configurations installed in the sim with its
-- CA), another runs an operator whose writes go through them. The plan
-- shows a denied write as a denial with the webhook and its message and a
-- mutating webhook's change as a diff "changed by admission"; after a real
-- run, ctl:why shows the reconcile's write the webhook denied.
local kinformer = require "kinformer"
local quiet = require "support.quiet"

local DENIAL = 'denied by admission webhook "cm-validate.kinformer.k8s.io"'

-- The webhook host: configmaps with data.bad are refused, every configmap
-- gets the label stamped=yes.
local function webhook_host(sim)
  local host = assert(kinformer.manager{ sim = sim, name = "guard", webhook_bind_address = "127.0.0.1:0" })
  assert(host:webhook{ name = "cm-validate", resources = { "v1/configmaps" },
    validate = function(req)
      if req.object.data and req.object.data.bad then return false, "data.bad is not allowed" end
      return true
    end })
  assert(host:webhook{ name = "cm-stamp", resources = { "v1/configmaps" },
    mutate = function(req)
      local labels = req.object.metadata.labels or {}
      labels.stamped = "yes"
      req.object.metadata.labels = labels
    end })
  assert(host:start{ timeout = 10 })
  return host
end

-- The operator: for each Secret, a ConfigMap of the same name (data.bad
-- when the Secret is labelled bad).
local function operator(sim)
  local mgr = assert(kinformer.manager{ sim = sim, name = "mirror" })
  local ctl = mgr:controller{ name = "mirror", ["for"] = "v1/secrets",
    reconciler = function(req, ctx)
      local s = ctx.listers["v1/secrets"]:get(req.key)
      if not s then return true end
      local data = { from = s.metadata.name }
      if s.metadata.labels and s.metadata.labels.bad then data.bad = "1" end
      local cm = { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = req.namespace, name = req.name },
        data = data }
      local _, err, code = ctx.client:create(cm)
      if err and code ~= "AlreadyExists" then return nil, err end
      return true
    end }
  return mgr, ctl
end

local function setup_sim()
  local sim = assert(require("kinformer.sim").start{ controllers = "none" })
  local driver = assert(kinformer.manager{ sim = sim })
  for _, s in ipairs { { "ok" }, { "bad", { bad = "true" } } } do
    assert(driver.client:create{ apiVersion = "v1", kind = "Secret",
      metadata = { namespace = "default", name = s[1], labels = s[2] }, data = {} })
  end
  return sim, driver
end

describe("plan and why with admission webhooks", function()
  it("plan shows a webhook's denial and a mutating webhook's change", function()
    local sim, driver = setup_sim()
    local host = webhook_host(sim)
    local mgr, ctl = operator(sim)
    local report = assert(ctl:plan(nil, { timeout = 10 }))
    local text = tostring(report)
    assert.matches("!  create v1/ConfigMap default/bad " .. DENIAL .. " (dry run): data.bad is not allowed", text,
      1, true)
    assert.is_true(report.failed)
    local bad, ok
    for _, e in ipairs(report.keys) do
      if e.key == "default/bad" then bad = e else ok = e end
    end
    assert.same({ webhook = "cm-validate.kinformer.k8s.io", message = "data.bad is not allowed" },
      bad.writes[1].denied)
    assert.equal(1, #ok.changes)
    assert.equal(1, #ok.changes[1].admission)
    assert.matches("changed by admission (mutating webhooks: the server's answer differs from what was sent):\n"
      .. "--- ConfigMap default/ok (as sent)\n+++ ConfigMap default/ok (changed by admission)", text, 1, true)
    assert.matches('+  labels:\n+    stamped: "yes"', ok.changes[1].admission[1], 1, true)
    -- nothing was stored
    assert.is_nil((driver.client:get("v1/configmaps", "default", "ok")))
    mgr:stop()
    host:stop()
    driver:stop()
    sim:stop()
  end)

  quiet.it(it, "why shows the reconcile's write the webhook denied", { "data.bad is not allowed" }, function()
    local sim, driver = setup_sim()
    local host = webhook_host(sim)
    local mgr, ctl = operator(sim)
    assert(mgr:start{ timeout = 10 })
    local text
    assert(mgr:wait_for(function()
      text = tostring(assert(ctl:why("default/bad")))
      return text:find(DENIAL, 1, true) ~= nil
    end, 10), "no denial in the history:\n" .. tostring(text))
    assert.matches("; writes: POST /api/v1/namespaces/default/configmaps 403 " .. DENIAL
      .. ": data.bad is not allowed", text, 1, true)
    local rec
    for _, e in ipairs(ctl:why("default/bad")) do
      if e.type == "reconcile" and e.writes[1] and e.writes[1].denied then rec = e end
    end
    assert.equal("error", rec.result)
    assert.same({ webhook = "cm-validate.kinformer.k8s.io", message = "data.bad is not allowed" },
      rec.writes[1].denied)
    -- the other key's write went through, stamped
    assert(mgr:wait_for(function() return driver.client:get("v1/configmaps", "default", "ok") ~= nil end, 10))
    assert.equal("yes", driver.client:get("v1/configmaps", "default", "ok").metadata.labels.stamped)
    for _, e in ipairs(ctl:why("default/ok")) do
      for _, w in ipairs(e.writes or {}) do assert.is_nil(w.denied) end
    end
    mgr:stop()
    host:stop()
    driver:stop()
    sim:stop()
  end)
end)
