--- kinformer.webhook: mgr:webhook{...}, admission and conversion webhooks
-- served by the manager (issue 25; docs/webhooks.md is the user guide).
--
--   local wh = mgr:webhook{
--     name = "website-validate", resources = { "websites.example.com" },
--     validate = function(req, ctx)
--       if not req.object.spec.image then return false, "spec.image is required" end
--       return true
--     end,
--   }
--   wh:name(), wh:path(), wh:type()
--
-- The spec is normalized by kinformer.webhook_config (options, paths,
-- rules); the handler runs in `workers` worker states of the hook
-- (kinformer.webhook_run, csrc/lua/lwebhook_hook.c) with the closure rules,
-- deadlines and memory limits of reconcilers.
--
-- The manager's server (core.webhook_server, csrc/lua/lwebhook.c) is made
-- at the first mgr:webhook. It listens on webhook_bind_address (default
-- ":9443"; "0": no HTTPS server; a manager on a sim listens only when the
-- option is given) from mgr:start, or at once when the manager already
-- runs; hooks added later are served at once. Its certificate: the key
-- pair in webhook_cert_path (webhook_cert_name, webhook_cert_key; reloaded
-- when rotated), else a CA and a serving certificate made at start for
-- localhost, 127.0.0.1, webhook_host and the Service's DNS names; with
-- webhook_configure (default: with a self-made certificate) every replica
-- applies the webhook configurations with that CA at start
-- (kinformer.webhook_install). On a sim, the hooks are registered with it
-- in process (its admission chain calls them without a socket), unless the
-- manager applies its configurations to the sim (an HTTPS server with
-- webhook_configure): the sim then calls them over HTTPS. mgr:stop
-- unregisters them and closes the server.
local core = require "kinformer.core"
local options = require "kinformer.util.options"

local M = {}

M.OPTIONS = {
  "webhook_bind_address", "webhook_cert_path", "webhook_cert_name", "webhook_cert_key", "webhook_host",
  "webhook_service", "webhook_configure",
}

local function check_type(opts, k, ty)
  local v = opts[k]
  if v ~= nil and type(v) ~= ty then
    options.raise(("kinformer.manager: option '%s' must be a %s, got %s"):format(k, ty, type(v)))
  end
end

--- The webhook state of a manager made with opts (checked here: misuse
-- raises at the user's line): what kinformer.manager keeps as mgr._wh.
function M.state(opts)
  for _, k in ipairs { "webhook_cert_path", "webhook_cert_name", "webhook_cert_key", "webhook_host" } do
    check_type(opts, k, "string")
  end
  check_type(opts, "webhook_configure", "boolean")
  check_type(opts, "webhook_service", "table")
  local bind = opts.webhook_bind_address
  if bind ~= nil and type(bind) ~= "string" and math.type(bind) ~= "integer" then
    options.raise("kinformer.manager: option 'webhook_bind_address' must be an address such as \":9443\" "
      .. "or \"127.0.0.1:0\", or \"0\" to disable the webhook server")
  end
  if bind == nil then bind = opts.sim and "0" or ":9443" end
  bind = tostring(bind)
  local svc = opts.webhook_service
  if svc then
    options.check(svc, { "namespace", "name", "port" }, "kinformer.manager: webhook_service")
  end
  local configure = opts.webhook_configure
  if configure == nil then configure = opts.webhook_cert_path == nil end
  local in_cluster = os.getenv("KUBERNETES_SERVICE_HOST") ~= nil and not (opts.kubeconfig or opts.url or opts.sim)
  return {
    bind = bind, https = bind ~= "0", cert_path = opts.webhook_cert_path, cert_name = opts.webhook_cert_name,
    cert_key = opts.webhook_cert_key, host = opts.webhook_host, service = svc, configure = configure,
    in_cluster = in_cluster and opts.webhook_host == nil, sim = opts.sim, hooks = {}, sim_ids = {},
  }
end

local function wh_of(mgr)
  local st = rawget(mgr, "_wh")
  if not st then error("kinformer.webhook: not a manager with webhook state", 3) end
  return st
end

-- The Service of clientConfig.service and of the certificate's names.
local function service(mgr, st)
  local s = st.service or {}
  return { namespace = s.namespace or mgr.namespace or "default",
           name = s.name or (mgr:name() .. "-webhook-service"), port = s.port or 443 }
end

-- The server, made on first use.
local function server(mgr, st)
  if st.srv then return st.srv end
  local svc = service(mgr, st)
  local hosts = { svc.name .. "." .. svc.namespace .. ".svc", svc.name .. "." .. svc.namespace .. ".svc.cluster.local" }
  if st.host then table.insert(hosts, 1, st.host) end
  local srv, msg, code = core.webhook_server {
    env = rawget(mgr, "env"), bind_address = st.https and st.bind or nil, tls = st.https,
    cert_path = st.cert_path, cert_name = st.cert_name, cert_key = st.cert_key, hosts = hosts,
  }
  if not srv then return nil, msg, code end
  st.srv = srv
  return srv
end

--- s in base64 (RFC 4648, padded).
M.base64 = require("kinformer.util.base64").encode

-- Where the API server reaches the hooks: {url=} or {service=}, with the
-- CA as caBundle when self-made.
local function where(mgr, st)
  local ca = st.srv and st.srv:ca()
  local w = { ca_bundle = ca and M.base64(ca) or nil }
  if st.in_cluster then
    w.service = service(mgr, st)
  else
    w.url = ("https://%s:%d"):format(st.host or "127.0.0.1", st.port or 9443)
  end
  return w
end
M.where = function(mgr) return where(mgr, wh_of(mgr)) end

local function hook_list(st)
  local list = {}
  for i, h in ipairs(st.hooks) do list[i] = h.hook end
  return list
end

-- Unregisters st's hooks from the sim, then closes the server.
local function close(st)
  if st.sim then
    for i = #st.sim_ids, 1, -1 do
      pcall(st.sim._webhook_unregister, st.sim, st.sim_ids[i])
      st.sim_ids[i] = nil
    end
  end
  if st.srv then
    st.srv:close()
    st.srv = nil
    st.port = nil
  end
end

-- Registers the hooks with the manager's sim in process (again: the
-- previous registrations go first). Returns true or nil, msg, code.
local function sim_register(mgr, st)
  local sim = st.sim
  -- a manager that applies its configurations to the sim is called over HTTPS: not twice
  if not sim or (st.https and st.configure) or not st.srv then return true end
  for i = #st.sim_ids, 1, -1 do
    sim:_webhook_unregister(st.sim_ids[i])
    st.sim_ids[i] = nil
  end
  if not st.guard then
    -- a manager collected without mgr:stop: the sim must not keep calling a
    -- freed server (this finalizer, set after the server's, runs before it)
    st.guard = setmetatable({}, { __gc = function() close(st) end })
  end
  local fn, ud = st.srv:inprocess()
  local C = require "kinformer.webhook_config"
  for _, obj in ipairs(C.configurations(mgr:name(), hook_list(st), { url = "https://inprocess" })) do
    local id, msg, code = sim:_webhook_register(core.json_encode(obj), fn, ud)
    if not id then return nil, msg, code end
    st.sim_ids[#st.sim_ids + 1] = id
  end
  return true
end

-- Applies the configurations (kinformer.webhook_install) when configured.
local function install(mgr, st)
  if not (st.configure and st.https and st.port) then return true end
  local I = require "kinformer.webhook_install"
  -- every replica installs, leader or not: its writes skip the leadership fence
  local done, msg, code = I.install(mgr, hook_list(st), where(mgr, st), mgr.env:client { fenced = false })
  if not done then return nil, msg, code end
  return true
end

local Webhook = {}
Webhook.__index = Webhook
Webhook.__name = "kinformer.webhook"
Webhook.__tostring = function(self)
  return ("kinformer.webhook (%s %s at %s)"):format(self.hook.type, self.hook.name, self.hook.path)
end
function Webhook:name() return self.hook.name end
function Webhook:path() return self.hook.path end
function Webhook:type() return self.hook.type end

--- mgr:webhook(spec): adds a hook (see the module header). Misuse raises
-- at the caller's line; a runtime failure (the server could not be made or
-- started) returns nil, message, code.
function M.add(mgr, spec)
  local st = wh_of(mgr)
  if rawget(mgr, "_stopped") then return nil, "manager is stopped", "ECLOSED" end
  local C = require "kinformer.webhook_config"
  local hook = C.normalize(spec)
  local workers, mem = spec.workers, spec.memory_limit
  if workers ~= nil and (math.type(workers) ~= "integer" or workers < 1 or workers > 256) then
    options.raise("mgr:webhook: workers must be an integer from 1 to 256, got " .. tostring(workers))
  end
  if mem ~= nil and (math.type(mem) ~= "integer" or mem < 0) then
    options.raise("mgr:webhook: memory_limit must be a number of bytes (an integer >= 0), got " .. tostring(mem))
  end
  for _, h in ipairs(st.hooks) do
    if h.hook.name == hook.name then
      options.raise(('mgr:webhook: a webhook named "%s" is already registered'):format(hook.name))
    end
  end
  local srv, msg, code = server(mgr, st)
  if not srv then return nil, msg, code end
  local ok
  ok, msg, code = srv:add { name = hook.name, path = hook.path, type = hook.type, handler = hook.handler,
    workers = workers or 2, memory_limit = mem, timeout = hook.timeout }
  if not ok then
    if code == "EEXIST" then options.raise("mgr:webhook: " .. msg .. " (give this one another path)") end
    return nil, msg, code
  end
  local wh = setmetatable({ hook = hook }, Webhook)
  st.hooks[#st.hooks + 1] = wh
  ok, msg, code = sim_register(mgr, st)
  if not ok then -- the sim refused it: not registered at all
    table.remove(st.hooks)
    srv:remove(hook.path)
    sim_register(mgr, st)
    return nil, msg, code
  end
  if rawget(mgr, "_started") then -- served at once; the configurations include it
    if st.port then ok, msg, code = install(mgr, st) else ok, msg, code = M.start(mgr) end
    if not ok then return nil, msg, code end
  end
  return wh
end

--- The manager's start: the HTTPS server listens (when it has hooks and
-- an address) and the configurations are applied when configured.
-- Returns true, or nil, message, code.
function M.start(mgr)
  local st = rawget(mgr, "_wh")
  if not st or not st.srv or not st.https or st.port then return true end
  local port, msg, code = st.srv:start()
  if not port then return nil, "webhook server: " .. tostring(msg), code end
  st.port = port
  core.log("info", "webhook", ("serving webhooks on %s (port %d)"):format(st.bind, port))
  return install(mgr, st)
end

--- The manager's stop: unregisters the hooks from the sim, closes the server.
function M.stop(mgr)
  local st = rawget(mgr, "_wh")
  if st then close(st) end
end

--- mgr:webhook_ca(): the self-made CA's PEM (the caBundle), or nil.
function M.ca(mgr)
  local st = wh_of(mgr)
  return st.srv and st.srv:ca() or nil
end

--- mgr:webhook_port(): the port the HTTPS server listens on, or nil.
function M.port(mgr) return wh_of(mgr).port end

--- mgr:webhooks(): the hooks registered (kinformer.webhook objects, in order).
function M.list(mgr)
  local t = {}
  for i, h in ipairs(wh_of(mgr).hooks) do t[i] = h end
  return t
end

--- The server userdata (tests, `kinformer plan`): srv:serve(path, body).
function M.server(mgr) return wh_of(mgr).srv end

return M
