--- The Website operator's reconciler (examples/website).
--
-- A Website (example.kinformer.io/v1, crd.json) asks for a web server:
-- spec.image, spec.replicas (default 1), spec.port (default 80). For each
-- Website this reconciler keeps a Deployment and a Service of the same
-- name, both with the Website as controller owner, and reports in
-- status.conditions (type Ready, with observedGeneration). A finalizer lets
-- it delete the children itself when the Website is deleted: a cluster
-- without a garbage collector (kinformer.sim, a bare kube-apiserver) would
-- leave them behind otherwise.
--
-- The module runs in the controller's worker states (the controller names
-- it: reconciler = "website_reconciler") and in the main state (register,
-- reconcile_once). Every function here is plain Lua over the ctx. What it
-- creates or scales, and an invalid spec, it also reports as Events about
-- the Website (ctx:event: kubectl describe website / kubectl get events).
local M = {}

M.RESOURCE = "example.kinformer.io/v1/websites"
M.FINALIZER = "example.kinformer.io/children"
M.DEPLOYMENTS = "apps/v1/deployments"
M.SERVICES = "v1/services"

local function labels(name)
  return { ["app.kubernetes.io/name"] = "website", ["app.kubernetes.io/instance"] = name,
           ["app.kubernetes.io/managed-by"] = "kinformer" }
end

local function selector(name)
  return { ["app.kubernetes.io/name"] = "website", ["app.kubernetes.io/instance"] = name }
end

-- Integer view of a JSON number (cjson decodes numbers as floats).
local function int(v, default)
  if type(v) ~= "number" then return default end
  return math.tointeger(v) or v
end

--- The spec with defaults, or nil and what is wrong with it.
function M.spec_of(site)
  local s = type(site.spec) == "table" and site.spec or {}
  local image, replicas, port = s.image, int(s.replicas, 1), int(s.port, 80)
  if type(image) ~= "string" or image == "" then return nil, "spec.image is required" end
  if math.type(replicas) ~= "integer" or replicas < 0 then return nil, "spec.replicas must be an integer >= 0" end
  if math.type(port) ~= "integer" or port < 1 or port > 65535 then return nil, "spec.port must be 1-65535" end
  return { image = image, replicas = replicas, port = port }
end

local function container(spec)
  return { name = "web", image = spec.image, ports = { { name = "http", containerPort = spec.port } } }
end

--- The Deployment a Website asks for (without owner reference).
function M.desired_deployment(site, spec)
  local name, ns = site.metadata.name, site.metadata.namespace
  return {
    apiVersion = "apps/v1", kind = "Deployment",
    metadata = { name = name, namespace = ns, labels = labels(name) },
    spec = {
      replicas = spec.replicas,
      selector = { matchLabels = selector(name) },
      template = {
        metadata = { labels = labels(name) },
        spec = { containers = { container(spec) } },
      },
    },
  }
end

--- The Service a Website asks for (without owner reference).
function M.desired_service(site, spec)
  local name, ns = site.metadata.name, site.metadata.namespace
  return {
    apiVersion = "v1", kind = "Service",
    metadata = { name = name, namespace = ns, labels = labels(name) },
    spec = {
      selector = selector(name),
      ports = { { name = "http", port = spec.port, targetPort = spec.port, protocol = "TCP" } },
    },
  }
end

-- The controller owner reference of obj, or nil.
local function controller_of(obj)
  for _, r in ipairs(obj.metadata and obj.metadata.ownerReferences or {}) do
    if r.controller then return r end
  end
  return nil
end

local function owned_by(obj, site)
  local r = controller_of(obj)
  return r ~= nil and r.uid == site.metadata.uid
end

-- The current child: the cache first (ctx.listers), the server when the
-- cache has not seen it yet (just created by an earlier reconcile).
local function current(ctx, res, ns, name)
  local l = ctx.listers[res]
  local obj = l and l:get(ns .. "/" .. name)
  if obj then return obj end
  local got, err, code = ctx.client:get(res, ns, name)
  if got then return got end
  if code == "NotFound" then return nil end
  error(err, 0)
end

local function first_container(dep)
  local t = dep.spec and dep.spec.template and dep.spec.template.spec
  local c = t and t.containers and t.containers[1]
  return c or {}
end

-- Creates or fixes the Deployment. Returns the actions taken (strings).
local function ensure_deployment(ctx, site, spec, actions)
  local name, ns = site.metadata.name, site.metadata.namespace
  local dep = current(ctx, M.DEPLOYMENTS, ns, name)
  if not dep then
    local want = M.desired_deployment(site, spec)
    assert(ctx.set_controller_reference(site, want))
    local _, err, code = ctx.client:create(M.DEPLOYMENTS, want)
    if err and code ~= "AlreadyExists" then error(err, 0) end
    if code == "AlreadyExists" then return { requeue = true } end
    actions[#actions + 1] = string.format("created Deployment %s/%s (replicas %d, image %s)",
      ns, name, spec.replicas, spec.image)
    ctx:event(site, "Normal", "Created", actions[#actions])
    return
  end
  if not owned_by(dep, site) then
    return nil, ctx.terminal(string.format("Deployment %s/%s exists and is not controlled by Website %s",
      ns, name, name))
  end
  local c = first_container(dep)
  local have_replicas = int(dep.spec and dep.spec.replicas, 1)
  local have_port = int(c.ports and c.ports[1] and c.ports[1].containerPort, nil)
  if have_replicas == spec.replicas and c.image == spec.image and have_port == spec.port then return end
  local _, err = ctx.client:patch(M.DEPLOYMENTS, ns, name, {
    spec = { replicas = spec.replicas, template = { spec = { containers = { container(spec) } } } },
  }, { type = "merge" })
  if err then error(err, 0) end
  if have_replicas ~= spec.replicas then
    actions[#actions + 1] = string.format("scaled Deployment %s/%s from %d to %d replicas", ns, name,
      have_replicas, spec.replicas)
    ctx:event(site, "Normal", "Scaled", actions[#actions])
  end
  if c.image ~= spec.image then
    actions[#actions + 1] = string.format("changed the image of Deployment %s/%s from %s to %s", ns, name,
      tostring(c.image), spec.image)
  end
  if have_port ~= spec.port then
    actions[#actions + 1] = string.format("changed the port of Deployment %s/%s to %d", ns, name, spec.port)
  end
end

local function ensure_service(ctx, site, spec, actions)
  local name, ns = site.metadata.name, site.metadata.namespace
  local svc = current(ctx, M.SERVICES, ns, name)
  if not svc then
    local want = M.desired_service(site, spec)
    assert(ctx.set_controller_reference(site, want))
    local _, err, code = ctx.client:create(M.SERVICES, want)
    if err and code ~= "AlreadyExists" then error(err, 0) end
    if code == "AlreadyExists" then return { requeue = true } end
    actions[#actions + 1] = string.format("created Service %s/%s (port %d)", ns, name, spec.port)
    ctx:event(site, "Normal", "Created", actions[#actions])
    return
  end
  if not owned_by(svc, site) then
    return nil, ctx.terminal(string.format("Service %s/%s exists and is not controlled by Website %s",
      ns, name, name))
  end
  local p = svc.spec and svc.spec.ports and svc.spec.ports[1] or {}
  if int(p.port) == spec.port and int(p.targetPort) == spec.port then return end
  local _, err = ctx.client:patch(M.SERVICES, ns, name, {
    spec = { ports = { { name = "http", port = spec.port, targetPort = spec.port, protocol = "TCP" } } },
  }, { type = "merge" })
  if err then error(err, 0) end
  actions[#actions + 1] = string.format("changed the port of Service %s/%s to %d", ns, name, spec.port)
end

-- Deletes a child the Website controls (a NotFound is fine).
local function delete_child(ctx, res, kind, site, actions)
  local name, ns = site.metadata.name, site.metadata.namespace
  local obj, err, code = ctx.client:get(res, ns, name)
  if not obj then
    if code == "NotFound" then return end
    error(err, 0)
  end
  if not owned_by(obj, site) then return end
  local ok, derr, dcode = ctx.client:delete(res, ns, name, { uid = obj.metadata.uid })
  if not ok and dcode ~= "NotFound" then error(derr, 0) end
  actions[#actions + 1] = string.format("deleted %s %s/%s", kind, ns, name)
end

-- Writes the Ready condition (and the summary fields) when they changed.
local function write_status(ctx, site, ready, reason, message, actions)
  local changed = ctx.set_condition(site, { type = "Ready", status = ready and "True" or "False",
                                            reason = reason, message = message })
  local gen = int(site.metadata.generation, nil)
  local st = site.status
  if st.observedGeneration ~= gen then st.observedGeneration = gen; changed = true end
  if ready then
    if st.deployment ~= site.metadata.name then st.deployment = site.metadata.name; changed = true end
    if st.service ~= site.metadata.name then st.service = site.metadata.name; changed = true end
  end
  if not changed then return end
  local _, err = ctx.client:update_status(M.RESOURCE, site)
  if err then error(err, 0) end
  actions[#actions + 1] = string.format("set Website %s/%s Ready=%s (%s, generation %s)",
    site.metadata.namespace, site.metadata.name, ready and "True" or "False", reason, tostring(gen))
end

local function log_actions(ctx, actions)
  for _, a in ipairs(actions) do ctx.log:info("%s", a) end
end

--- reconcile(req, ctx): see the module comment. Returns nothing when the
-- world matches the Website, {requeue = true} after a lost create race,
-- nil + terminal error for an invalid spec or a child it does not own.
function M.reconcile(req, ctx)
  local actions = {}
  local site, err, code = ctx.client:get(M.RESOURCE, req.namespace, req.name)
  if not site then
    if code == "NotFound" then return end -- deleted; the finalizer already cleaned up
    error(err, 0)
  end

  if ctx.is_being_deleted(site) then
    if ctx.has_finalizer(site, M.FINALIZER) then
      delete_child(ctx, M.DEPLOYMENTS, "Deployment", site, actions)
      delete_child(ctx, M.SERVICES, "Service", site, actions)
      ctx.remove_finalizer(site, M.FINALIZER)
      local _, uerr = ctx.client:update(M.RESOURCE, site)
      if uerr then
        log_actions(ctx, actions)
        error(uerr, 0)
      end
      actions[#actions + 1] = string.format("removed the finalizer of Website %s/%s", req.namespace, req.name)
    end
    log_actions(ctx, actions)
    return
  end

  if ctx.ensure_finalizer(site, M.FINALIZER) then
    local updated, uerr = ctx.client:update(M.RESOURCE, site)
    if not updated then error(uerr, 0) end
    site = updated
    actions[#actions + 1] = string.format("added finalizer %s to Website %s/%s", M.FINALIZER,
      req.namespace, req.name)
  end

  local spec, why = M.spec_of(site)
  if not spec then
    ctx:event(site, "Warning", "InvalidSpec", why)
    write_status(ctx, site, false, "InvalidSpec", why, actions)
    log_actions(ctx, actions)
    return nil, ctx.terminal("invalid Website: " .. why)
  end

  local r, terr = ensure_deployment(ctx, site, spec, actions)
  if r == nil and terr == nil then r, terr = ensure_service(ctx, site, spec, actions) end
  if terr then
    write_status(ctx, site, false, "ChildConflict", tostring(terr.message or terr), actions)
    log_actions(ctx, actions)
    return nil, terr
  end
  if r then
    log_actions(ctx, actions)
    return r
  end
  write_status(ctx, site, true, "Reconciled", string.format("Deployment and Service %s are up to date",
    site.metadata.name), actions)
  log_actions(ctx, actions)
end

--- Registers the Website controller on mgr. opts: workers (2). Returns the
-- controller, or raises with a hint when the CRD is not installed.
function M.register(mgr, opts)
  opts = opts or {}
  if not mgr.env:resource(M.RESOURCE) then
    error("the Website CRD is not installed on this server (apply examples/website/crd.json first)", 2)
  end
  return mgr:controller{
    name = "website",
    ["for"] = M.RESOURCE,
    owns = { M.DEPLOYMENTS, M.SERVICES },
    workers = opts.workers or 2,
    reconciler = "website_reconciler",
  }
end

return M
