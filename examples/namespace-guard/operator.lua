-- Namespace guard: every Namespace labelled team=<name> gets a ConfigMap of
-- team settings and a ServiceAccount for the team's deployments, owned by the
-- Namespace (changed back if edited, deleted when the label goes), an Event
-- when it is provisioned and when it is released, and a metric:
--   kinformer run examples/namespace-guard/operator.lua --sim --seed examples/namespace-guard/seed.json
local mgr = ...
local metrics = require "kinformer.metrics"

local config = { settings = "team-settings", deployer = "team-deployer", max_pods = "20" }

local function team_of(ns) return ns.metadata.labels.team end

local function settings(ns)
  return { apiVersion = "v1", kind = "ConfigMap",
           metadata = { name = config.settings, namespace = ns.metadata.name },
           data = { team = team_of(ns), ["max-pods"] = config.max_pods } }
end

local function deployer(ns)
  return { apiVersion = "v1", kind = "ServiceAccount",
           metadata = { name = config.deployer, namespace = ns.metadata.name, labels = { team = team_of(ns) } } }
end

assert(mgr:controller{
  name = "namespace-guard",
  ["for"] = "v1/namespaces",
  selector = "team",                                  -- the Namespaces it guards
  children = { "v1/configmaps", "v1/serviceaccounts" }, -- owned; what it stops ensuring is deleted
  finalizer = "guard.kinformer.io/release",
  finalize = function(req, ctx, ns)                   -- runs when a guarded Namespace is deleted
    ctx:event(ns, "Normal", "Released", "namespace of team " .. team_of(ns) .. " released")
  end,
  reconciler = function(req, ctx)
    local ns = ctx:object()
    if not ns then return end
    for _, want in ipairs { settings(ns), deployer(ns) } do
      local _, state = assert(ctx:ensure(want))    -- server-side apply, owner set; no write if unchanged
      if state == "created" then
        ctx:event(ns, "Normal", "Provisioned", want.kind .. " " .. want.metadata.name .. " for team " .. team_of(ns))
        metrics.counter{ name = "guard_objects_created_total", help = "Objects the guard created.",
                         labels = { "kind" } }:inc{ kind = want.kind }
      end
    end
  end,
})
