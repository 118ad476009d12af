--- kinformer.cmd.manifests_metrics: the documents `kinformer manifests`
-- prints for the secure metrics endpoint (--metrics-secure, as
-- kubebuilder's scaffold): a ClusterRole letting the operator create
-- TokenReviews and SubjectAccessReviews (kubebuilder's metrics-auth-role)
-- bound to its ServiceAccount, the metrics-reader ClusterRole a scraper is
-- bound to (nonResourceURLs /metrics, get; named <name>-metrics-reader as
-- kubebuilder's namePrefix does), and a Service on port 8443 (https).
local M = {}

M.PORT = 8443
-- the operator's own requests when --metrics-secure (csrc/core/metrics/authfilter.c)
M.AUTH_RULES = {
  { group = "authentication.k8s.io", resource = "tokenreviews", verbs = { "create" } },
  { group = "authorization.k8s.io", resource = "subjectaccessreviews", verbs = { "create" } },
}

--- The documents, appended to docs. om: the ordered-map maker of
-- kinformer.cmd.manifests; meta(name, namespace): an object's metadata;
-- name, ns: the operator's; subj: the ServiceAccount subject list;
-- selector: the Deployment's pod labels.
function M.append(docs, om, meta, name, ns, subj, selector)
  local rbac = "rbac.authorization.k8s.io"
  local auth_rules = {}
  for _, r in ipairs(M.AUTH_RULES) do
    auth_rules[#auth_rules + 1] = om("apiGroups", { r.group }, "resources", { r.resource }, "verbs", r.verbs)
  end
  local auth = om("apiVersion", rbac .. "/v1", "kind", "ClusterRole", "metadata", meta(name .. "-metrics-auth"),
    "rules", auth_rules)
  auth.__header = { "--metrics-secure: the operator authenticates and authorizes each scrape",
    "(TokenReview, SubjectAccessReview of get on /metrics), as controller-runtime's",
    "filters.WithAuthenticationAndAuthorization (kubebuilder's metrics-auth-role)." }
  docs[#docs + 1] = auth
  docs[#docs + 1] = om("apiVersion", rbac .. "/v1", "kind", "ClusterRoleBinding",
    "metadata", meta(name .. "-metrics-auth"),
    "roleRef", om("apiGroup", rbac, "kind", "ClusterRole", "name", name .. "-metrics-auth"), "subjects", subj)
  local reader = om("apiVersion", rbac .. "/v1", "kind", "ClusterRole", "metadata", meta(name .. "-metrics-reader"),
    "rules", { om("nonResourceURLs", { "/metrics" }, "verbs", { "get" }) })
  reader.__header = { "Bind a scraper (Prometheus' ServiceAccount) to this role to read /metrics." }
  docs[#docs + 1] = reader
  local svc = om("apiVersion", "v1", "kind", "Service", "metadata", meta(name .. "-metrics", ns),
    "spec", om("selector", selector,
      "ports", { om("name", "https", "port", M.PORT, "protocol", "TCP", "targetPort", "metrics") }))
  svc.__header = { "The metrics endpoint: HTTPS on " .. M.PORT .. ", self-signed unless --metrics-cert-path",
    "names a mounted kubernetes.io/tls Secret (docs/security.md)." }
  docs[#docs + 1] = svc
end

return M
