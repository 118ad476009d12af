-- The Website operator: `kinformer run examples/website/operator.lua --sim
-- --seed examples/website/seed.json` (or --kubeconfig F against a cluster
-- where examples/website/crd.json is applied).
--
-- A Website (example.kinformer.io/v1, crd.json) asks for a web server:
-- spec.image, spec.replicas (default 1), spec.port (default 80). For each
-- Website the controller keeps a Deployment and a Service of the same name,
-- both controlled by the Website (ctx:ensure: server-side apply, no write
-- when they already are as described; anything else it owns is pruned), and
-- reports in status.conditions (type Ready, with observedGeneration). When
-- the Website is deleted, the garbage collector (kube-controller-manager's,
-- or kinformer.sim's) deletes the children through their owner references:
-- no finalizer is needed. What it creates or changes, and an invalid spec,
-- it also reports as Events about the Website (kubectl describe website /
-- kubectl get events). Its webhooks (below) refuse a Website without an
-- image or with negative replicas, and convert between v1 and v2.
local mgr = ...

local RESOURCE = "example.kinformer.io/v1/websites"

-- Integer view of a JSON number.
local function int(v, default)
  if type(v) ~= "number" then return default end
  return math.tointeger(v) or v
end

-- The spec with defaults, or nil and what is wrong with it.
local function spec_of(site)
  local s = type(site.spec) == "table" and site.spec or {}
  local image, replicas, port = s.image, int(s.replicas, 1), int(s.port, 80)
  if type(image) ~= "string" or image == "" then return nil, "spec.image is required" end
  if math.type(replicas) ~= "integer" or replicas < 0 then return nil, "spec.replicas must be an integer >= 0" end
  if math.type(port) ~= "integer" or port < 1 or port > 65535 then return nil, "spec.port must be 1-65535" end
  return { image = image, replicas = replicas, port = port }
end

local function labels(name)
  return { ["app.kubernetes.io/name"] = "website", ["app.kubernetes.io/instance"] = name,
           ["app.kubernetes.io/managed-by"] = "kinformer" }
end

local function selector(name)
  return { ["app.kubernetes.io/name"] = "website", ["app.kubernetes.io/instance"] = name }
end

local function deployment(site, spec)
  local name = site.metadata.name
  return {
    apiVersion = "apps/v1", kind = "Deployment",
    metadata = { name = name, namespace = site.metadata.namespace, labels = labels(name) },
    spec = {
      replicas = spec.replicas,
      selector = { matchLabels = selector(name) },
      template = {
        metadata = { labels = labels(name) },
        spec = { containers = { { name = "web", image = spec.image,
                                  ports = { { name = "http", containerPort = spec.port } } } } },
      },
    },
  }, string.format("replicas %d, image %s", spec.replicas, spec.image)
end

local function service(site, spec)
  local name = site.metadata.name
  return {
    apiVersion = "v1", kind = "Service",
    metadata = { name = name, namespace = site.metadata.namespace, labels = labels(name) },
    spec = { selector = selector(name),
             ports = { { name = "http", port = spec.port, targetPort = spec.port, protocol = "TCP" } } },
  }, string.format("port %d", spec.port)
end

-- Sets the Ready condition and observedGeneration, writing the status
-- only when they changed.
local function set_ready(ctx, site, ready, reason, message)
  local changed = ctx.set_condition(site, { type = "Ready", status = ready and "True" or "False",
                                            reason = reason, message = message })
  local gen = int(site.metadata.generation, nil)
  if site.status.observedGeneration ~= gen then
    site.status.observedGeneration, changed = gen, true
  end
  if not changed then return end
  -- a merge patch of the status: no conflict with the cache's resourceVersion
  assert(ctx.client:patch(RESOURCE, site.metadata.namespace, site.metadata.name, { status = site.status },
    { type = "merge", subresource = "status" }))
  ctx.log:info("set Website %s Ready=%s (%s, generation %s)", ctx.request.key, ready and "True" or "False",
    reason, tostring(gen))
end

local function reconcile(req, ctx)
  local site = ctx:object()
  if not site then return end -- deleted; the garbage collector deletes the children
  local spec, why = spec_of(site)
  if not spec then
    ctx:event(site, "Warning", "InvalidSpec", why)
    set_ready(ctx, site, false, "InvalidSpec", why)
    return nil, ctx.terminal("invalid Website: " .. why)
  end
  for _, make in ipairs { deployment, service } do
    local want, summary = make(site, spec)
    local obj, state = ctx:ensure(want)
    if not obj then -- a failed request (retried), or a child another owner controls (terminal)
      if ctx.is_terminal(state) then set_ready(ctx, site, false, "ChildConflict", state.message) end
      return nil, state
    end
    if state ~= "unchanged" then
      local what = string.format("%s %s %s (%s)", state, want.kind, req.key, summary)
      ctx.log:info("%s", what)
      ctx:event(site, "Normal", state == "created" and "Created" or "Updated", what)
    end
  end
  set_ready(ctx, site, true, "Reconciled", string.format("Deployment and Service %s are up to date", req.name))
end

-- Webhooks (docs/webhooks.md). kube-apiserver, or kinformer.sim in process,
-- calls them before a Website is stored; the manager serves them over HTTPS
-- (--webhook-bind-address, default :9443) with a certificate it makes and
-- installs its ValidatingWebhookConfiguration and the CRD's conversion
-- stanza at start.
--
-- v2 groups what describes the container: spec.container {image, port}
-- next to spec.replicas, where v1 has spec.image and spec.port. v1 is the
-- stored version; a client may read and write either.

-- The image and replicas of a Website at v1 or v2.
local function image_replicas(site)
  local s = type(site.spec) == "table" and site.spec or {}
  local image = s.image
  if type(s.container) == "table" then image = s.container.image end
  return image, s.replicas
end

-- validate: a Website needs an image and replicas >= 0 (what spec_of also
-- checks, refused here before it is stored).
local function validate(req)
  local image, replicas = image_replicas(req.object)
  if type(image) ~= "string" or image == "" then
    return false, "spec.image is required" .. (req.kind.version == "v2" and " (spec.container.image at v2)" or "")
  end
  if replicas ~= nil and (math.type(replicas) ~= "integer" or replicas < 0) then
    return false, "spec.replicas must be an integer >= 0, got " .. tostring(replicas)
  end
  return true
end

-- convert: one Website to to_version ("example.kinformer.io/v1" or "/v2").
-- Nothing is lost either way: v1's image and port are v2's
-- container.image and container.port.
local function convert(site, to_version)
  local s = type(site.spec) == "table" and site.spec or nil
  if s then
    if to_version:match("/v2$") and s.container == nil then
      s.container = { image = s.image, port = s.port }
      s.image, s.port = nil, nil
    elseif to_version:match("/v1$") and type(s.container) == "table" then
      s.image, s.port = s.container.image, s.container.port
      s.container = nil
    end
  end
  site.apiVersion = to_version
  return site
end

assert(mgr:webhook{
  name = "website-validate",
  validate = validate,
  resources = { "websites.example.kinformer.io" },
  operations = { "CREATE", "UPDATE" },
})
assert(mgr:webhook{
  name = "website-convert",
  convert = convert,
  resources = { "websites.example.kinformer.io" },
})

if not mgr.env:resource(RESOURCE) then
  error("the Website CRD is not installed on this server (apply examples/website/crd.json first)", 0)
end
assert(mgr:controller{
  name = "website",
  ["for"] = RESOURCE,
  children = { "apps/v1/deployments", "v1/services" },
  workers = 2,
  reconciler = reconcile,
})
