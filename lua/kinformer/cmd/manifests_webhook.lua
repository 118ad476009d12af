--- kinformer.cmd.manifests_webhook: the documents `kinformer manifests`
-- prints for the webhooks a script registers (mgr:webhook, recorded by the
-- planning run, kinformer.cmd.manifests_plan).
local M = {}

--- The RBAC rules (plain tables) the operator's at-start install
-- (kinformer.webhook_install) needs for hooks (normalized) of manager
-- mgr_name: get/create/patch/update of its ValidatingWebhookConfiguration
-- and MutatingWebhookConfiguration (both when it has an admission hook:
-- the install empties the one of a type it has no hook of; a merge patch,
-- or a server-side apply creating it: PATCH requests naming it, so
-- resourceNames holds), get/patch of each conversion CRD.
function M.rules(mgr_name, hooks)
  local adm, crds, seen = {}, {}, {}
  for _, h in ipairs(hooks) do
    if h.type == "conversion" then
      if not seen[h.crd] then
        seen[h.crd] = true
        crds[#crds + 1] = h.crd
      end
    elseif #adm == 0 then
      adm = { "validatingwebhookconfigurations", "mutatingwebhookconfigurations" }
    end
  end
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
