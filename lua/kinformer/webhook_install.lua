--- kinformer.webhook_install: a manager's webhook configurations put on the
-- API server at start (every replica, leader or not; the runtime in
-- kinformer.webhook calls it when webhook_configure is on), as kopf and
-- envtest do, under the field manager "kinformer-<manager name>":
--   * the ValidatingWebhookConfiguration / MutatingWebhookConfiguration
--     named after the manager: its webhooks list replaced by the
--     manager's (a merge patch: a list is replaced whole, so a webhook
--     the manager no longer has, or a clientConfig.service that `kubectl
--     apply` of the printed manifests left beside the url, is gone; other
--     fields, labels and annotations stay), or, when it does not exist,
--     created by a server-side apply (force) -- a PATCH, so the RBAC rule
--     may name it (resourceNames). A configuration of a type the manager
--     has no hook of is emptied when it exists (webhooks: []), so that a
--     removed hook is not called any more;
--   * each conversion hook's CRD: a merge patch of spec.conversion
--     (strategy Webhook, the clientConfig with the caBundle, review
--     versions [v1]). The CRD must exist (a patch never creates it); a url
--     clientConfig clears a service one and the other way round.
--
--   local I = require "kinformer.webhook_install"
--   local ok, msg = I.install(mgr, hooks, { url = "https://127.0.0.1:9443", ca_bundle = b64 })
--
-- hooks: kinformer.webhook_config.normalize's. The RBAC these requests
-- need is what `kinformer manifests` prints (kinformer.cmd.manifests_webhook).
local C = require "kinformer.webhook_config"

local M = {}

M.CRD_RESOURCE = "apiextensions.k8s.io/v1/customresourcedefinitions"

local RESOURCE_OF = {
  ValidatingWebhookConfiguration = { "admissionregistration.k8s.io", "validatingwebhookconfigurations" },
  MutatingWebhookConfiguration = { "admissionregistration.k8s.io", "mutatingwebhookconfigurations" },
  CustomResourceDefinition = { "apiextensions.k8s.io", "customresourcedefinitions" },
}

--- The field manager of mgr_name's configuration writes.
function M.field_manager(mgr_name) return "kinformer-" .. mgr_name end

--- The message for a failed write of obj (verb "patch", the RBAC verb the
-- request needs): the object, the server's message, and what to do for the
-- statuses an operator can fix (Forbidden: the RBAC rule; NotFound: the CRD).
function M.describe(obj, verb, err, code, http)
  local what = ('%s "%s"'):format(obj.kind, obj.metadata.name)
  local msg = ("webhook configuration: %s %s failed: %s"):format(verb, what, tostring(err))
  local r = RESOURCE_OF[obj.kind]
  if code == "Forbidden" or http == 403 then
    local verbs = obj.kind == "CustomResourceDefinition" and "get, patch" or "get, create, patch, update"
    msg = msg .. ("; the operator's ServiceAccount needs a ClusterRole rule: apiGroups [%s], resources [%s], "
      .. "verbs [%s], resourceNames [%s] (`kinformer manifests` prints it)"):format(r[1], r[2], verbs,
      obj.metadata.name)
  elseif code == "NotFound" or http == 404 then
    if obj.kind == "CustomResourceDefinition" then
      msg = msg .. "; install the CRD before the operator starts (its conversion webhook is set at start)"
    end
  end
  if code and code ~= "" then msg = msg .. " (" .. tostring(code) .. ")" end
  return msg
end

-- obj's spec.conversion as a merge patch: the clientConfig's other kind of
-- target (url / service) set to null so that it is replaced, not merged.
local function crd_patch(obj)
  local null = require("kinformer.core").null
  local conv = obj.spec.conversion
  local cc = {}
  for k, v in pairs(conv.webhook.clientConfig) do cc[k] = v end
  if cc.url then cc.service = null else cc.url = null end
  return { spec = { conversion = { strategy = conv.strategy, webhook = {
    clientConfig = cc, conversionReviewVersions = conv.webhook.conversionReviewVersions } } } }
end

local ADMISSION = {
  { "validating", "ValidatingWebhookConfiguration", "admissionregistration.k8s.io/v1/validatingwebhookconfigurations" },
  { "mutating", "MutatingWebhookConfiguration", "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations" },
}

--- Applies the configurations of hooks (normalized) for mgr (a
-- kinformer.manager: its name and client) with where as
-- kinformer.webhook_config.configurations takes it. client: optional, a
-- kinformer client to use instead of the manager's. Returns the list of
-- objects the server answered (the configurations, then the CRDs), or
-- nil, message (the first failure: the object, the status and the fix;
-- the later ones are not tried).
function M.install(mgr, hooks, where, client)
  local core = require "kinformer.core"
  local name = mgr:name()
  client = client or mgr.client
  local fm = M.field_manager(name)
  local objs = C.configurations(name, hooks, where)
  local by_kind = {}
  for _, o in ipairs(objs) do by_kind[o.kind] = o end
  local done = {}
  local admission = by_kind.ValidatingWebhookConfiguration or by_kind.MutatingWebhookConfiguration
  for _, a in ipairs(admission and ADMISSION or {}) do
    local obj = by_kind[a[2]]
    local webhooks = obj and obj.webhooks or setmetatable({}, core.array_mt)
    local res, err, code, http = client:patch(a[3], nil, name, { webhooks = webhooks },
      { type = "merge", field_manager = fm })
    if not res and code == "NotFound" and obj then
      res, err, code, http = client:apply(obj, { field_manager = fm, force = true })
    end
    if res then
      if obj then done[#done + 1] = res end
    elseif obj or code ~= "NotFound" then
      return nil, M.describe(obj or { kind = a[2], metadata = { name = name } }, "patch", err, code, http)
    end
  end
  for _, obj in ipairs(objs) do
    if obj.kind == "CustomResourceDefinition" then
      local res, err, code, http = client:patch(M.CRD_RESOURCE, nil, obj.metadata.name, crd_patch(obj),
        { type = "merge", field_manager = fm })
      if not res then return nil, M.describe(obj, "patch", err, code, http) end
      done[#done + 1] = res
    end
  end
  return done
end

return M
