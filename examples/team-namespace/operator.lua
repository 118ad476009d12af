-- Team namespaces: every Namespace labelled team=<name> gets a ConfigMap
-- team-info (data.team = <name>) and a ServiceAccount team-bot, labelled
-- with the team and controlled by the Namespace, made with plain
-- ctx.client calls (get, create, update):
--   kinformer run examples/team-namespace/operator.lua --sim --seed examples/team-namespace/seed.json -v
-- Relabelling the Namespace updates both; deleting one recreates it (owns).
-- (A ResourceQuota would be the natural second object; kinformer.sim does
-- not serve ResourceQuota, docs/sim.md, so a ServiceAccount stands in.)
local mgr = ...
-- the resources, declared on one line (`kinformer manifests` resolves them);
-- the reconciler takes them along to its worker threads
local NAMESPACES, CONFIGMAPS, SERVICEACCOUNTS = "v1/namespaces", "v1/configmaps", "v1/serviceaccounts"

assert(mgr:controller{
  name = "team-namespace",
  ["for"] = "v1/namespaces",
  owns = { "v1/configmaps", "v1/serviceaccounts" },
  reconciler = function(req, ctx)
    local ns = ctx.listers[NAMESPACES]:get(req.name)
    local team = ns and not ns.metadata.deletionTimestamp and (ns.metadata.labels or {}).team
    if not team or team == "" then return end -- not a team's namespace (or going)

    local cm, err, code = ctx.client:get(CONFIGMAPS, req.name, "team-info")
    if not cm and code ~= "NotFound" then return nil, err end
    if not cm then
      cm = { apiVersion = "v1", kind = "ConfigMap", data = { team = team },
             metadata = { name = "team-info", namespace = req.name, labels = { team = team } } }
      assert(ctx.set_controller_reference(ns, cm))
      local _, cerr = ctx.client:create(CONFIGMAPS, cm)
      if cerr then return nil, cerr end
      ctx.log:info("created ConfigMap %s/team-info for team %s", req.name, team)
    elseif (cm.data or {}).team ~= team or (cm.metadata.labels or {}).team ~= team then
      cm.data = cm.data or {}
      cm.data.team = team
      cm.metadata.labels = cm.metadata.labels or {}
      cm.metadata.labels.team = team
      local _, uerr = ctx.client:update(CONFIGMAPS, cm)
      if uerr then return nil, uerr end
      ctx.log:info("updated ConfigMap %s/team-info to team %s", req.name, team)
    end

    local sa
    sa, err, code = ctx.client:get(SERVICEACCOUNTS, req.name, "team-bot")
    if not sa and code ~= "NotFound" then return nil, err end
    if not sa then
      sa = { apiVersion = "v1", kind = "ServiceAccount",
             metadata = { name = "team-bot", namespace = req.name, labels = { team = team } } }
      assert(ctx.set_controller_reference(ns, sa))
      local _, cerr = ctx.client:create(SERVICEACCOUNTS, sa)
      if cerr then return nil, cerr end
      ctx.log:info("created ServiceAccount %s/team-bot for team %s", req.name, team)
    elseif (sa.metadata.labels or {}).team ~= team then
      sa.metadata.labels = sa.metadata.labels or {}
      sa.metadata.labels.team = team
      local _, uerr = ctx.client:update(SERVICEACCOUNTS, sa)
      if uerr then return nil, uerr end
      ctx.log:info("updated ServiceAccount %s/team-bot to team %s", req.name, team)
    end
  end,
})
