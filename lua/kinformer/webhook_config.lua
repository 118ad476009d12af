--- kinformer.webhook_config: what a mgr:webhook{...} spec means to the API
-- server, shared by the runtime (kinformer.webhook), the at-start install
-- (kinformer.webhook_install) and `kinformer manifests`. Pure Lua, no
-- discovery: it runs offline.
--
--   local C = require "kinformer.webhook_config"
--   local hook = C.normalize(spec)           -- raises at the user's line
--   C.webhook_name("site-operator", hook)    -- "website-validate.kinformer.example.com"
--   C.configurations("site-operator", { hook, ... },
--     { url = "https://127.0.0.1:9443", ca_bundle = b64 })  -- objects to apply
--
-- Resource strings (spec.resources):
--   "plural.group" ("websites.example.com", "deployments.apps"): every version;
--   "group/version/plural" ("apps/v1/deployments"), "v1/pods": that version;
--   "plural" ("pods"): core, unless it is a built-in plural of another group
--     ("deployments" -> apps; kinformer.util.builtin_resources);
--   any of these + "/sub" for a subresource ("pods/status",
--     "websites.example.com/status", "apps/v1/deployments/scale");
--   "*": every resource of every group.
-- A convert hook names exactly one CRD, "plural.group"; hook.crd is it.
local options = require "kinformer.util.options"
local builtin = require "kinformer.util.builtin_resources"

local M = {}

M.KNOWN = {
  "name", "validate", "mutate", "convert", "resources", "operations", "failure_policy", "timeout", "path",
  "side_effects", "namespace_selector", "object_selector", "match_policy", "reinvocation_policy", "workers",
  "memory_limit",
}

local FN = "mgr:webhook"
local OPERATIONS = { "CREATE", "UPDATE", "DELETE", "CONNECT", "*" }
local ENUMS = {
  failure_policy = { "Fail", "Ignore" },
  side_effects = { "None", "NoneOnDryRun" },
  match_policy = { "Exact", "Equivalent" },
  reinvocation_policy = { "Never", "IfNeeded" },
}
-- options that mean nothing to a conversion webhook (a CRD's
-- spec.conversion.webhook has a clientConfig and review versions only)
local ADMISSION_ONLY = {
  "operations", "failure_policy", "side_effects", "namespace_selector", "object_selector", "match_policy",
  "reinvocation_policy",
}

local function raise(fmt, ...)
  options.raise(FN .. ": " .. fmt:format(...))
end

local function one_of(list, v)
  for _, x in ipairs(list) do
    if x == v then return true end
  end
  return false
end

-- ' (did you mean "X"?)' for word among list (case-insensitive first), or "".
local function suggest(word, list)
  if type(word) ~= "string" then return "" end
  for _, x in ipairs(list) do
    if x:lower() == word:lower() then return (' (did you mean "%s"?)'):format(x) end
  end
  local near = options.closest(word, list)
  return near and (' (did you mean "%s"?)'):format(near) or ""
end

local function quoted_list(list)
  local out = {}
  for i, x in ipairs(list) do out[i] = '"' .. x .. '"' end
  return table.concat(out, ", ")
end

local function is_label(s)
  if #s == 0 or #s > 63 then return false end
  return s:match("^[a-z0-9]$") ~= nil or s:match("^[a-z0-9][a-z0-9%-]*[a-z0-9]$") ~= nil
end

-- Whether s is a DNS-1123 subdomain (lower-case labels joined by dots, at
-- most 253 characters).
local function is_subdomain(s)
  if #s == 0 or #s > 253 then return false end
  for label in (s .. "."):gmatch("([^.]*)%.") do
    if not is_label(label) then return false end
  end
  return true
end
M.is_subdomain = is_subdomain

local function is_version(s)
  return s:match("^v%d+$") ~= nil or s:match("^v%d+alpha%d+$") ~= nil or s:match("^v%d+beta%d+$") ~= nil
end

--- Parses one resource string (see the header) -> {group =, version =
-- (nil: every version), resource = plural, subresource = or nil}, or nil,
-- reason.
function M.parse_resource(s)
  if type(s) ~= "string" or s == "" then return nil, "a resource must be a non-empty string" end
  if s == "*" or s == "*/*" then return { group = "*", resource = s } end
  local parts = {}
  for p in (s .. "/"):gmatch("([^/]*)/") do parts[#parts + 1] = p end
  for _, p in ipairs(parts) do
    if p == "" then return nil, "empty segment" end
  end
  local group, version, plural, sub
  if #parts >= 3 and is_version(parts[2]) then
    -- "group/version/plural[/sub]"
    if #parts > 4 then return nil, "too many segments" end
    group, version, plural, sub = parts[1], parts[2], parts[3], parts[4]
  elseif parts[1]:find(".", 1, true) then
    -- "plural.group[/sub]"
    if #parts > 2 then return nil, "\"plural.group\" takes at most one \"/subresource\"" end
    if is_version(parts[2] or "") then return nil, "missing the plural after the version" end
    plural, group = parts[1]:match("^([^.]+)%.(.+)$")
    if not plural then return nil, "expected \"plural.group\"" end
    sub = parts[2]
  elseif is_version(parts[1]) then
    -- "v1/pods[/sub]": core
    if #parts < 2 or #parts > 3 then return nil, "expected \"v1/plural\" or \"v1/plural/subresource\"" end
    group, version, plural, sub = "", parts[1], parts[2], parts[3]
  elseif #parts <= 2 then
    -- "plural[/sub]": core or a known built-in group
    plural, sub = parts[1], parts[2]
    group = builtin.group_of(plural)
  else
    return nil, "too many segments"
  end
  if plural ~= "*" and not plural:match("^[a-z0-9][a-z0-9%-]*$") then
    return nil, ("%q is not a plural resource name (lower case)"):format(plural)
  end
  if group ~= "" and group ~= "*" and not is_subdomain(group) then
    return nil, ("%q is not an API group"):format(group)
  end
  return { group = group, version = version, resource = plural, subresource = sub }
end

local RESOURCE_HELP = '"plural.group" ("websites.example.com"), "group/version/plural" ("apps/v1/deployments"), '
  .. '"v1/pods", "pods", with "/status" for a subresource'

-- The path segment of a target: "<group with . as ->-<version or any>-<plural[-sub]>".
local function path_part(t)
  local plural = t.resource:gsub("%*", "all"):gsub("/", "-")
  if t.subresource then plural = plural .. "-" .. t.subresource:gsub("%*", "all") end
  return ("%s-%s-%s"):format((t.group:gsub("%.", "-"):gsub("%*", "all")), t.version or "any", plural)
end

local function check_selector(v, key)
  if v == nil then return nil end
  if type(v) ~= "table" then
    raise("%s must be a LabelSelector table ({matchLabels = {...}, matchExpressions = {...}}), got %s", key, type(v))
  end
  for k in pairs(v) do
    if k ~= "matchLabels" and k ~= "matchExpressions" then
      local msg = ("%s has an unknown key %s"):format(key, type(k) == "string" and ('"' .. k .. '"') or tostring(k))
      raise("%s%s; a LabelSelector has matchLabels and matchExpressions",
        msg, suggest(tostring(k), { "matchLabels", "matchExpressions" }))
    end
  end
  return v
end

local function check_enum(spec, key)
  local v = spec[key]
  if v == nil then return nil end
  if not one_of(ENUMS[key], v) then
    raise("%s must be one of %s, got %s%s", key, quoted_list(ENUMS[key]),
      type(v) == "string" and ('"' .. v .. '"') or tostring(v), suggest(v, ENUMS[key]))
  end
  return v
end

--- The hook a mgr:webhook spec describes (see the module header and the
-- issue 25 contract); raises at the user's line with the option and the
-- fix when spec is wrong. The handler is kept as hook.handler.
function M.normalize(spec)
  options.check(spec, M.KNOWN, FN)
  if spec == nil then raise("a spec table is required ({name =, validate|mutate|convert =, resources =})") end
  -- name
  local name = spec.name
  if type(name) ~= "string" or name == "" then
    raise("name is required: a lower-case DNS name unique in the manager (name = \"website-validate\")")
  end
  if #name > 63 or not is_subdomain(name) then
    raise("name %q must be lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, "
      .. "at most 63 characters (e.g. \"website-validate\")", name)
  end
  -- the handler
  local kinds = {}
  for _, k in ipairs({ "validate", "mutate", "convert" }) do
    if spec[k] ~= nil then
      if type(spec[k]) ~= "function" then raise("%s must be a function, got %s", k, type(spec[k])) end
      kinds[#kinds + 1] = k
    end
  end
  if #kinds ~= 1 then
    raise("%q needs exactly one of validate, mutate or convert (a function), got %s", name,
      #kinds == 0 and "none" or table.concat(kinds, " and "))
  end
  local kind = kinds[1]
  local hook = {
    name = name,
    type = ({ validate = "validating", mutate = "mutating", convert = "conversion" })[kind],
    handler = spec[kind],
    workers = spec.workers, -- checked by the runtime (kinformer.webhook), as mgr:controller's
    memory_limit = spec.memory_limit,
  }
  -- timeout
  local timeout = spec.timeout
  if timeout == nil then
    timeout = 10
  elseif math.type(timeout) == "float" and timeout == math.floor(timeout) then
    timeout = math.tointeger(timeout)
  end
  if math.type(timeout) ~= "integer" or timeout < 1 or timeout > 30 then
    raise("timeout must be a whole number of seconds from 1 to 30 (timeoutSeconds), got %s", tostring(spec.timeout))
  end
  hook.timeout = timeout
  -- resources
  local res = spec.resources
  if type(res) == "string" then res = { res } end
  if type(res) ~= "table" or #res == 0 then
    raise("resources is required: a list of resources (%s)", RESOURCE_HELP)
  end
  local targets = {}
  for i, s in ipairs(res) do
    local t, why = M.parse_resource(s)
    if not t then
      raise("resources[%d] %s is not a resource (%s); use %s", i,
        type(s) == "string" and ('"' .. s .. '"') or tostring(s), why, RESOURCE_HELP)
    end
    targets[i] = t
  end
  hook.targets = targets
  hook.group = targets[1].group
  -- path
  local path = spec.path
  if path ~= nil then
    if type(path) ~= "string" or not path:match("^/[%w%-%._~/]*$") then
      raise("path must be an absolute URL path such as \"/validate-website\", got %s", tostring(path))
    end
  end
  if kind == "convert" then
    for _, k in ipairs(ADMISSION_ONLY) do
      if spec[k] ~= nil then
        raise("%s does not apply to a convert hook (a CRD's conversion webhook has none); remove it", k)
      end
    end
    local t = targets[1]
    if #targets ~= 1 or t.version or t.subresource or t.group == "" or t.group == "*" or not t.group:find(".", 1, true) then
      raise("a convert hook takes exactly one CRD as resources = { \"plural.group\" } (e.g. \"websites.example.com\"), "
        .. "got %s", quoted_list(res))
    end
    hook.crd = t.resource .. "." .. t.group
    hook.path = path or ("/convert-" .. hook.crd:gsub("%.", "-"))
    return hook
  end
  -- operations
  local ops = spec.operations
  if ops == nil then ops = { "CREATE", "UPDATE" } end
  if type(ops) == "string" then ops = { ops } end
  if type(ops) ~= "table" or #ops == 0 then
    raise("operations must be a list of %s, got %s", quoted_list(OPERATIONS), tostring(spec.operations))
  end
  local seen, out = {}, {}
  for i, op in ipairs(ops) do
    if not one_of(OPERATIONS, op) then
      raise("operations[%d] %s is not an operation%s; use %s", i,
        type(op) == "string" and ('"' .. op .. '"') or tostring(op), suggest(op, OPERATIONS), quoted_list(OPERATIONS))
    end
    if not seen[op] then
      seen[op] = true
      out[#out + 1] = op
    end
  end
  hook.operations = out
  hook.failure_policy = check_enum(spec, "failure_policy") or "Fail"
  hook.side_effects = check_enum(spec, "side_effects") or "None"
  hook.match_policy = check_enum(spec, "match_policy")
  hook.reinvocation_policy = check_enum(spec, "reinvocation_policy")
  if hook.reinvocation_policy and kind ~= "mutate" then
    raise("reinvocation_policy applies to mutate hooks only; remove it")
  end
  hook.namespace_selector = check_selector(spec.namespace_selector, "namespace_selector")
  hook.object_selector = check_selector(spec.object_selector, "object_selector")
  -- rules: one per resource
  local rules = {}
  for i, t in ipairs(targets) do
    rules[i] = {
      apiGroups = { t.group },
      apiVersions = { t.version or "*" },
      resources = { t.subresource and (t.resource .. "/" .. t.subresource) or t.resource },
      operations = out,
      scope = "*",
    }
  end
  hook.rules = rules
  hook.path = path or ("/" .. kind .. "-" .. path_part(targets[1]))
  return hook
end

--- The webhooks[].name of hook: "<hook name>.kinformer.<group>" (the core
-- group as "k8s.io", every group as "all.k8s.io"), a DNS subdomain of at
-- least three segments as kube-apiserver requires. mgr_name is not part of
-- it: the configuration holding it is already the manager's.
function M.webhook_name(mgr_name, hook)
  local _ = mgr_name
  local g = hook.group
  if g == nil or g == "" then
    g = "k8s.io"
  elseif g == "*" then
    g = "all.k8s.io"
  end
  return hook.name .. ".kinformer." .. g
end

-- clientConfig for path: {url = where.url .. path} or {service = {...,
-- path = path}}, caBundle from where.ca_bundle.
local function client_config(where, path)
  local cc = {}
  if where.url then
    cc.url = where.url:gsub("/+$", "") .. path
  elseif where.service then
    local s = where.service
    cc.service = { namespace = s.namespace, name = s.name, port = s.port or 443, path = path }
  else
    error("webhook_config.configurations: where needs url or service", 2)
  end
  if where.ca_bundle then cc.caBundle = where.ca_bundle end
  return cc
end
M.client_config = client_config

--- The objects to apply for hooks (normalized) of manager mgr_name, where
-- = {url = "https://host:port"} | {service = {namespace =, name =, port
-- =}}, with ca_bundle = base64 PEM or nil: the
-- ValidatingWebhookConfiguration and MutatingWebhookConfiguration named
-- mgr_name (each omitted when no hook has its type; webhooks in the order
-- of hooks), then one partial CustomResourceDefinition per conversion hook
-- (metadata.name and spec.conversion only).
function M.configurations(mgr_name, hooks, where)
  local by = { validating = {}, mutating = {} }
  local crds = {}
  for _, h in ipairs(hooks) do
    if h.type == "conversion" then
      crds[#crds + 1] = {
        apiVersion = "apiextensions.k8s.io/v1",
        kind = "CustomResourceDefinition",
        metadata = { name = h.crd },
        spec = { conversion = { strategy = "Webhook", webhook = {
          clientConfig = client_config(where, h.path), conversionReviewVersions = { "v1" } } } },
      }
    else
      local w = {
        name = M.webhook_name(mgr_name, h),
        clientConfig = client_config(where, h.path),
        rules = h.rules,
        failurePolicy = h.failure_policy,
        sideEffects = h.side_effects,
        timeoutSeconds = h.timeout,
        admissionReviewVersions = { "v1" },
        matchPolicy = h.match_policy,
        namespaceSelector = h.namespace_selector,
        objectSelector = h.object_selector,
      }
      if h.type == "mutating" then w.reinvocationPolicy = h.reinvocation_policy end
      local list = by[h.type]
      list[#list + 1] = w
    end
  end
  local out = {}
  for _, t in ipairs({ { "validating", "ValidatingWebhookConfiguration" },
    { "mutating", "MutatingWebhookConfiguration" } }) do
    if #by[t[1]] > 0 then
      out[#out + 1] = {
        apiVersion = "admissionregistration.k8s.io/v1",
        kind = t[2],
        metadata = { name = mgr_name },
        webhooks = by[t[1]],
      }
    end
  end
  for _, c in ipairs(crds) do out[#out + 1] = c end
  return out
end

return M
