--- kinformer.util.builtin_resources: the group of each built-in resource
-- kube-apiserver serves outside the core group, by plural, for code that
-- must read a bare plural ("deployments") without discovery (`kinformer
-- manifests` runs offline). From kube-apiserver v1.36's discovery (the
-- sim's csrc/sim/discovery/discovery.json); a plural also served by the
-- core group ("events": v1 and events.k8s.io) is core's and not listed.
--
--   local B = require "kinformer.util.builtin_resources"
--   B.group_of("deployments") --> "apps";  B.group_of("pods") --> ""
--   B.GROUPS.deployments      --> "apps"
--   B.GROUP_SET["apps"]       --> true (a built-in group; "" too)
local M = {}

M.GROUPS = {
  apiservices = "apiregistration.k8s.io",
  certificatesigningrequests = "certificates.k8s.io",
  clusterrolebindings = "rbac.authorization.k8s.io",
  clusterroles = "rbac.authorization.k8s.io",
  controllerrevisions = "apps",
  cronjobs = "batch",
  csidrivers = "storage.k8s.io",
  csinodes = "storage.k8s.io",
  csistoragecapacities = "storage.k8s.io",
  customresourcedefinitions = "apiextensions.k8s.io",
  daemonsets = "apps",
  deployments = "apps",
  deviceclasses = "resource.k8s.io",
  endpointslices = "discovery.k8s.io",
  flowschemas = "flowcontrol.apiserver.k8s.io",
  horizontalpodautoscalers = "autoscaling",
  ingressclasses = "networking.k8s.io",
  ingresses = "networking.k8s.io",
  ipaddresses = "networking.k8s.io",
  jobs = "batch",
  leases = "coordination.k8s.io",
  localsubjectaccessreviews = "authorization.k8s.io",
  mutatingadmissionpolicies = "admissionregistration.k8s.io",
  mutatingadmissionpolicybindings = "admissionregistration.k8s.io",
  mutatingwebhookconfigurations = "admissionregistration.k8s.io",
  networkpolicies = "networking.k8s.io",
  poddisruptionbudgets = "policy",
  priorityclasses = "scheduling.k8s.io",
  prioritylevelconfigurations = "flowcontrol.apiserver.k8s.io",
  replicasets = "apps",
  resourceclaims = "resource.k8s.io",
  resourceclaimtemplates = "resource.k8s.io",
  resourceslices = "resource.k8s.io",
  rolebindings = "rbac.authorization.k8s.io",
  roles = "rbac.authorization.k8s.io",
  runtimeclasses = "node.k8s.io",
  selfsubjectaccessreviews = "authorization.k8s.io",
  selfsubjectreviews = "authentication.k8s.io",
  selfsubjectrulesreviews = "authorization.k8s.io",
  servicecidrs = "networking.k8s.io",
  statefulsets = "apps",
  storageclasses = "storage.k8s.io",
  subjectaccessreviews = "authorization.k8s.io",
  tokenreviews = "authentication.k8s.io",
  validatingadmissionpolicies = "admissionregistration.k8s.io",
  validatingadmissionpolicybindings = "admissionregistration.k8s.io",
  validatingwebhookconfigurations = "admissionregistration.k8s.io",
  volumeattachments = "storage.k8s.io",
  volumeattributesclasses = "storage.k8s.io",
}

--- The built-in groups (the core group "" included): { [group] = true }.
M.GROUP_SET = { [""] = true }
for _, g in pairs(M.GROUPS) do M.GROUP_SET[g] = true end

--- The group serving the bare plural: its built-in group, else "" (core).
function M.group_of(plural)
  return M.GROUPS[plural] or ""
end

return M
