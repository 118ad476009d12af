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
-- The caBundle: every replica makes its own CA, and kube-apiserver may
-- reach any replica (through the Service), so the bundle keeps the CAs
-- already installed (read from the configurations and CRDs first) and adds
-- this replica's: the newest M.MAX_CAS distinct certificates, this
-- replica's last. A CA whose replica is gone stays until pushed out.
--
-- hooks: kinformer.webhook_config.normalize's. The RBAC these requests
-- need is what `kinformer manifests` prints (kinformer.cmd.manifests_webhook).
local C = require "kinformer.webhook_config"
local base64 = require "kinformer.util.base64"

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

M.MAX_CAS = 8

-- The certificates (PEM blocks, normalized) of a base64 caBundle.
local function certs_of(b64)
  local pem = type(b64) == "string" and base64.decode(b64) or nil
  local out = {}
  for block in (pem or ""):gmatch("%-%-%-%-%-BEGIN CERTIFICATE%-%-%-%-%-.-%-%-%-%-%-END CERTIFICATE%-%-%-%-%-") do
    out[#out + 1] = block:gsub("\r", "") .. "\n"
  end
  return out
end

--- The caBundle (base64) holding the certificates of the bundles in
-- existing (base64 texts, oldest first) then those of ours, each once
-- (its last place kept), the newest M.MAX_CAS. ours nil: nil.
function M.merge_bundles(existing, ours)
  if not ours then return nil end
  local all = {}
  for _, b in ipairs(existing) do
    for _, c in ipairs(certs_of(b)) do all[#all + 1] = c end
  end
  local mine = certs_of(ours)
  if #mine == 0 then return ours end -- not PEM: as given
  for _, c in ipairs(mine) do all[#all + 1] = c end
  local seen, kept = {}, {}
  for i = #all, 1, -1 do
    if not seen[all[i]] and #kept < M.MAX_CAS then
      seen[all[i]] = true
      table.insert(kept, 1, all[i])
    end
  end
  return base64.encode(table.concat(kept))
end

-- The caBundles installed now in objs' objects (base64 texts).
local function installed_bundles(client, objs)
  local out = {}
  local paths = {
    ValidatingWebhookConfiguration = "admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    MutatingWebhookConfiguration = "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    CustomResourceDefinition = "apiextensions.k8s.io/v1/customresourcedefinitions",
  }
  for _, o in ipairs(objs) do
    local cur = client:get(paths[o.kind], nil, o.metadata.name)
    if type(cur) == "table" then
      for _, w in ipairs(type(cur.webhooks) == "table" and cur.webhooks or {}) do
        out[#out + 1] = type(w.clientConfig) == "table" and w.clientConfig.caBundle or nil
      end
      local conv = type(cur.spec) == "table" and cur.spec.conversion
      local cw = type(conv) == "table" and type(conv.webhook) == "table" and conv.webhook or nil
      if cw and type(cw.clientConfig) == "table" then out[#out + 1] = cw.clientConfig.caBundle end
    end
  end
  return out
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
  if where.ca_bundle then -- the other replicas' CAs stay (see the header)
    local bundle = M.merge_bundles(installed_bundles(client, objs), where.ca_bundle)
    if bundle ~= where.ca_bundle then
      local w = {}
      for k, v in pairs(where) do w[k] = v end
      w.ca_bundle = bundle
      objs = C.configurations(name, hooks, w)
    end
  end
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
