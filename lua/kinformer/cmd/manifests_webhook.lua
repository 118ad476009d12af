--- kinformer.cmd.manifests_webhook: the documents `kinformer manifests`
-- prints for the webhooks a script registers (mgr:webhook, recorded by the
-- planning run, kinformer.cmd.manifests_plan), as kubebuilder's scaffold
-- does:
--   * the ValidatingWebhookConfiguration / MutatingWebhookConfiguration
--     named after the operator (kinformer.webhook_config.configurations),
--     their clientConfig the Service below. No caBundle: the operator
--     makes a CA at start and patches it in (kinformer.webhook_install);
--     with --cert-manager, cert-manager's cainjector fills it instead
--     (annotation cert-manager.io/inject-ca-from, a self-signed Issuer and
--     a Certificate whose Secret the Deployment mounts for
--     --webhook-cert-path);
--   * the Service <name>-webhook-service, port 443 -> the container's
--     port webhook-server (9443), selecting the Deployment's pods;
--   * for a conversion hook, its CRD's spec.conversion as a comment (a
--     partial CRD is not a document to `kubectl apply`: it would replace
--     the CRD); the operator patches it at start;
--   * the ClusterRole and ClusterRoleBinding <name>-webhook of the
--     operator's at-start install (M.rules).
-- The Deployment's container gets the port and --webhook-bind-address
-- (M.patch_deployment).
local C = require "kinformer.webhook_config"

local M = {}

M.PORT = 9443
M.SERVICE_PORT = 443
M.CERT_DIR = "/tmp/k8s-webhook-server/serving-certs" -- controller-runtime's default
M.CERT_MANAGER_ANNOTATION = "cert-manager.io/inject-ca-from"

--- The RBAC rules (plain tables, one resource each) the operator's
-- at-start install (kinformer.webhook_install) needs for hooks
-- (normalized) of manager mgr_name: get/create/patch/update of its
-- ValidatingWebhookConfiguration and MutatingWebhookConfiguration (both
-- when it has an admission hook: the install empties the one of a type it
-- has no hook of; a merge patch, or a server-side apply creating it: PATCH
-- requests naming it, so resourceNames holds), get/patch of each
-- conversion CRD.
function M.rules(mgr_name, hooks)
  local admission, crds, seen = false, {}, {}
  for _, h in ipairs(hooks) do
    if h.type == "conversion" then
      if not seen[h.crd] then
        seen[h.crd] = true
        crds[#crds + 1] = h.crd
      end
    else
      admission = true
    end
  end
  table.sort(crds)
  local rules = {}
  if admission then
    for _, r in ipairs { "validatingwebhookconfigurations", "mutatingwebhookconfigurations" } do
      rules[#rules + 1] = { apiGroups = { "admissionregistration.k8s.io" }, resources = { r },
        resourceNames = { mgr_name }, verbs = { "get", "create", "patch", "update" } }
    end
  end
  if #crds > 0 then
    rules[#rules + 1] = { apiGroups = { "apiextensions.k8s.io" }, resources = { "customresourcedefinitions" },
      resourceNames = crds, verbs = { "get", "patch" } }
  end
  return rules
end

-- The order keys are printed in (the rest follow, sorted).
local ORDER = {
  "apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "webhooks", "spec",
  "clientConfig", "url", "service", "port", "path", "caBundle", "rules", "apiGroups", "apiVersions",
  "resources", "operations", "scope", "failurePolicy", "sideEffects", "timeoutSeconds",
  "admissionReviewVersions", "matchPolicy", "namespaceSelector", "objectSelector", "reinvocationPolicy",
  "resourceNames", "verbs",
}
local RANK = {}
for i, k in ipairs(ORDER) do RANK[k] = i end

-- v (plain tables) as kinformer.cmd.manifests' ordered maps.
local function ordered(om, v)
  if type(v) ~= "table" then return v end
  if next(v) == nil then return om() end
  if #v > 0 then
    local out = {}
    for i, x in ipairs(v) do out[i] = ordered(om, x) end
    return out
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ra, rb = RANK[a] or 1000, RANK[b] or 1000
    if ra ~= rb then return ra < rb end
    return tostring(a) < tostring(b)
  end)
  local args = {}
  for _, k in ipairs(keys) do
    args[#args + 1] = k
    args[#args + 1] = ordered(om, v[k])
  end
  return om(table.unpack(args))
end

--- Adds the webhook server to the Deployment dep (ordered maps as
-- kinformer.cmd.manifests builds it): the container port webhook-server
-- (9443), --webhook-bind-address :9443 on its command (before the script,
-- its last word), and with cert_manager the Secret's volume, its mount and
-- --webhook-cert-path.
function M.patch_deployment(dep, om, name, cert_manager)
  local pod = dep.spec.template.spec
  local c = pod.containers[1]
  table.insert(c.ports, om("name", "webhook-server", "containerPort", M.PORT, "protocol", "TCP"))
  local script = table.remove(c.command)
  for _, w in ipairs { "--webhook-bind-address", ":" .. M.PORT } do c.command[#c.command + 1] = w end
  if cert_manager then
    c.command[#c.command + 1] = "--webhook-cert-path"
    c.command[#c.command + 1] = M.CERT_DIR
    c.volumeMounts[#c.volumeMounts + 1] = om("name", "webhook-cert", "mountPath", M.CERT_DIR, "readOnly", true)
    pod.volumes[#pod.volumes + 1] = om("name", "webhook-cert", "secret",
      om("secretName", name .. "-webhook-server-cert"))
  end
  c.command[#c.command + 1] = script
end

--- The documents, appended to docs. om, meta(name, namespace): as
-- kinformer.cmd.manifests_metrics.append's; name, ns: the operator's;
-- subj: the ServiceAccount subject list; selector: the Deployment's pod
-- labels; hooks: the planned hooks (normalized); opts: cert_manager
-- (boolean), service (the manager's webhook_service option: name, port),
-- configure (false: the operator does not install its configurations at
-- start, no RBAC for it).
function M.append(docs, om, meta, name, ns, subj, selector, hooks, opts)
  opts = opts or {}
  local rbac = "rbac.authorization.k8s.io"
  local svc_opt = type(opts.service) == "table" and opts.service or {}
  local svc_name = type(svc_opt.name) == "string" and svc_opt.name or (name .. "-webhook-service")
  local svc_port = math.tointeger(svc_opt.port) or M.SERVICE_PORT
  local where = { service = { namespace = ns, name = svc_name, port = svc_port } }
  local cert = name .. "-serving-cert"
  local inject = opts.cert_manager and om(M.CERT_MANAGER_ANNOTATION, ns .. "/" .. cert) or nil
  local crds = {}
  local first = #docs + 1
  for _, obj in ipairs(C.configurations(name, hooks, where)) do
    if obj.kind == "CustomResourceDefinition" then
      crds[#crds + 1] = obj
    else
      local d = ordered(om, obj)
      d.metadata = om("name", name, "labels", meta(name).labels, "annotations", inject)
      d.__header = { obj.kind .. ": the webhooks of the script's mgr:webhook calls, served by the",
        "operator's pods through the Service " .. svc_name .. "." }
      if opts.cert_manager then
        table.insert(d.__header, "caBundle: injected by cert-manager from the Certificate " .. ns .. "/" .. cert .. ".")
      else
        table.insert(d.__header, "caBundle: the operator makes a CA at start and patches it in (each replica;")
        table.insert(d.__header, "--webhook-cert-path with a mounted Secret to use your own certificate).")
      end
      docs[#docs + 1] = d
    end
  end
  local svc = om("apiVersion", "v1", "kind", "Service", "metadata", meta(svc_name, ns),
    "spec", om("selector", selector,
      "ports", { om("name", "webhook", "port", svc_port, "protocol", "TCP", "targetPort", "webhook-server") }))
  svc.__header = { "The webhook server: HTTPS on the pods' port " .. M.PORT .. " (--webhook-bind-address)." }
  docs[#docs + 1] = svc
  if #crds > 0 then
    local y = require "kinformer.yamlish"
    local head = docs[first].__header
    head[#head + 1] = opts.cert_manager and "Conversion webhooks: add this to the CRDs' manifests (cert-manager's"
      .. " cainjector fills caBundle):"
      or "Conversion webhooks: the operator patches each CRD's spec.conversion at start (with the CA);"
    if not opts.cert_manager then head[#head + 1] = "to keep it in the CRD's own manifest, it is:" end
    for _, crd in ipairs(crds) do
      if opts.cert_manager then
        crd.metadata.annotations = { [M.CERT_MANAGER_ANNOTATION] = ns .. "/" .. cert }
      end
      for _, l in ipairs(y.lines(crd)) do head[#head + 1] = "  " .. l end
    end
  end
  if opts.cert_manager then
    local issuer = om("apiVersion", "cert-manager.io/v1", "kind", "Issuer",
      "metadata", meta(name .. "-selfsigned-issuer", ns), "spec", om("selfSigned", om()))
    issuer.__header = { "--cert-manager: the webhook server's certificate, issued by cert-manager into",
      "the Secret " .. name .. "-webhook-server-cert (mounted at " .. M.CERT_DIR .. ")." }
    docs[#docs + 1] = issuer
    docs[#docs + 1] = om("apiVersion", "cert-manager.io/v1", "kind", "Certificate", "metadata", meta(cert, ns),
      "spec", om("dnsNames", { svc_name .. "." .. ns .. ".svc", svc_name .. "." .. ns .. ".svc.cluster.local" },
        "issuerRef", om("kind", "Issuer", "name", name .. "-selfsigned-issuer"),
        "secretName", name .. "-webhook-server-cert"))
  end
  if opts.configure ~= false then
    local rules = {}
    for _, r in ipairs(M.rules(name, hooks)) do rules[#rules + 1] = ordered(om, r) end
    local role = om("apiVersion", rbac .. "/v1", "kind", "ClusterRole", "metadata", meta(name .. "-webhook"),
      "rules", rules)
    role.__header = { "The operator's own webhook configurations and conversion CRDs, which it patches",
      "at start with its CA (cluster-scoped: a ClusterRole, limited to their names)." }
    docs[#docs + 1] = role
    docs[#docs + 1] = om("apiVersion", rbac .. "/v1", "kind", "ClusterRoleBinding", "metadata", meta(name .. "-webhook"),
      "roleRef", om("apiGroup", rbac, "kind", "ClusterRole", "name", name .. "-webhook"), "subjects", subj)
  end
end

return M
