--- kinformer.cmd.manifests_webhook: the documents `kinformer manifests`
-- prints for the webhooks a script registers (mgr:webhook, recorded by the
-- planning run, kinformer.cmd.manifests_plan).
local M = {}

--- The RBAC rules (plain tables) the operator's at-start install
-- (kinformer.webhook_install) needs for hooks (normalized) of manager
-- mgr_name: get/create/patch/update of its Validating/Mutating
-- WebhookConfiguration (server-side apply: create when missing, with the
-- name, so resourceNames holds), get/patch of each conversion CRD.
function M.rules(mgr_name, hooks)
  local adm, crds, seen = {}, {}, {}
  for _, h in ipairs(hooks) do
    if h.type == "conversion" then
      if not seen[h.crd] then
        seen[h.crd] = true
        crds[#crds + 1] = h.crd
      end
    elseif not seen[h.type] then
      seen[h.type] = true
      adm[#adm + 1] = h.type .. "webhookconfigurations"
    end
  end
  table.sort(adm, function(a, b) return a > b end) -- validating first
  table.sort(crds)
  local rules = {}
  if #adm > 0 then
    rules[#rules + 1] = { apiGroups = { "admissionregistration.k8s.io" }, resources = adm,
      resourceNames = { mgr_name }, verbs = { "get", "create", "patch", "update" } }
  end
  if #crds > 0 then
    rules[#rules + 1] = { apiGroups = { "apiextensions.k8s.io" }, resources = { "customresourcedefinitions" },
      resourceNames = crds, verbs = { "get", "patch" } }
  end
  return rules
end

return M
