--- kinformer.cmd.types: `kinformer types RESOURCE...`, LuaCATS classes of
-- Kubernetes objects from a server's OpenAPI v3 documents, for editors
-- (lua-language-server, EmmyLua): with them `obj.spec.replicas` completes
-- and is type-checked.
--
--   kinformer types [--kubeconfig F [--context C] | --sim [--seed FILE]]
--                   (RESOURCE... | --all)
--
-- It reads the index /openapi/v3, then the document of each resource's
-- group-version (built-ins and custom resources alike), finds the kind the
-- resource serves (its paths' x-kubernetes-group-version-kind) and prints a
-- class for that kind and for every schema it references, transitively.
--
-- Class names (stable):
--   - a built-in schema drops "io.k8s." and its Go package's prefix
--     ("api.", "apimachinery.pkg.apis.", "apiextensions-apiserver.pkg.apis.",
--     "kube-aggregator.pkg.apis.", "apimachinery.pkg."), under "k8s.":
--     io.k8s.api.apps.v1.DeploymentSpec is k8s.apps.v1.DeploymentSpec,
--     io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta k8s.meta.v1.ObjectMeta;
--   - a custom resource's kind is k8s.<group>.<version>.<Kind>
--     (k8s.example.kinformer.io.v1.Website);
--   - an object schema written inline (a CRD's spec) is named after its
--     property under its parent's class (k8s.example.kinformer.io.v1.Website.spec);
--     array items and map values take the property's name too;
--   - "-" becomes "_".
-- A kind's class extends kinformer.KObject (types/), so objects of it go
-- to the client's verbs.
-- Fields: `---@field name type first sentence of its description`, `name?`
-- unless the schema requires it; string, integer, number, boolean; arrays
-- T[]; maps table<string, T>; oneOf as a union (int-or-string:
-- integer|string; a Quantity: string|number, as the documents declare
-- it); an object without properties (RawExtension,
-- x-kubernetes-preserve-unknown-fields) table; no type at all any.
--
-- M.generate(fetch, resources) is the pure part (fetch(path) returns a
-- document's text, or nil and a message); M.main(argv) the command.
local M = {}

local argv_walk = require("kinformer.cmd.argv").walk

M.usage = [=[
usage: kinformer types [--kubeconfig FILE [--context NAME] | --sim [--seed FILE]]
                       (RESOURCE... | --all)

Prints LuaCATS classes (---@class, ---@field) of the objects of each
RESOURCE ("apps/v1/deployments", "v1/configmaps",
"example.kinformer.io/v1/websites") and of every schema they reference,
from the server's OpenAPI v3 documents (built-in and custom resources), for
editors: save the output in a folder of the language server's
workspace.library and annotate objects, e.g. ---@type k8s.apps.v1.Deployment.
--all prints every schema the server documents. Classes: a built-in
io.k8s.api.apps.v1.Deployment is k8s.apps.v1.Deployment; a custom
resource's kind k8s.<group>.<version>.<Kind>.
  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, ~/.kube/config)
  --context NAME      kubeconfig context
  --sim               an in-process kinformer.sim (--seed FILE: objects and CRDs to load)
exit status: 0, 1 when the server cannot be read or lacks a RESOURCE, 2 on a usage error
]=]

-- ---- names ---------------------------------------------------------------------

local PREFIXES = {
  "io.k8s.api.", "io.k8s.apimachinery.pkg.apis.", "io.k8s.apiextensions-apiserver.pkg.apis.",
  "io.k8s.kube-aggregator.pkg.apis.", "io.k8s.apimachinery.pkg.", "io.k8s.",
}

--- The class name of the schema called name in components.schemas.
function M.class_name(name, schema)
  local out
  for _, p in ipairs(PREFIXES) do
    if name:sub(1, #p) == p then
      out = "k8s." .. name:sub(#p + 1)
      break
    end
  end
  if not out then
    local gvk = type(schema) == "table" and schema["x-kubernetes-group-version-kind"]
    gvk = type(gvk) == "table" and gvk[1]
    if type(gvk) == "table" and gvk.kind then
      out = "k8s." .. (gvk.group ~= "" and (gvk.group .. ".") or "core.") .. gvk.version .. "." .. gvk.kind
    else
      out = "k8s." .. name
    end
  end
  return (out:gsub("[^%w_.]", "_"))
end

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or
  repeat return then true until while]]):gmatch("%a+") do KEYWORDS[w] = true end

-- A field's name as LuaCATS writes it: bare, or ["x-y"].
local function field_name(k)
  if k:match("^[%a_][%w_]*$") and not KEYWORDS[k] then return k end
  return ('["%s"]'):format(k:gsub('[\\"]', "\\%0"))
end

--- The first sentence of a description, on one line ("" when none).
function M.first_sentence(d)
  if type(d) ~= "string" then return "" end
  d = d:gsub("%s+", " "):gsub("^ ", "")
  local s = d:match("^(.-[%.!?])%s") or d
  return (s:gsub("%s+$", ""))
end

-- ---- schemas to classes ---------------------------------------------------------

-- The generator's state: schemas (every document's, merged by name),
-- classes to print in order, names seen.
local function new_gen(schemas)
  return { schemas = schemas, order = {}, classes = {}, queued = {} }
end

local type_of

-- The type a $ref names: the class of an object schema (queued for
-- printing), else the schema's own type (Quantity, Time, IntOrString...).
local function ref_type(g, ref)
  local name = ref:match("^#/components/schemas/(.+)$")
  local s = name and g.schemas[name]
  if type(s) ~= "table" then return "any" end
  if type(s.properties) == "table" and next(s.properties) then
    local cname = M.class_name(name, s)
    if not g.queued[cname] then
      g.queued[cname] = true
      g.order[#g.order + 1] = { name = cname, schema = s }
    end
    return cname
  end
  return type_of(g, s, M.class_name(name, s))
end

local function union(types)
  local seen, out = {}, {}
  for _, t in ipairs(types) do
    if not seen[t] then
      seen[t] = true
      out[#out + 1] = t
    end
  end
  return table.concat(out, "|")
end

-- The LuaCATS type of schema s; an inline object schema becomes the class
-- cname (queued).
type_of = function(g, s, cname)
  if type(s) ~= "table" then return "any" end
  if s["$ref"] then return ref_type(g, s["$ref"]) end
  local alt = s.oneOf or s.anyOf or (type(s.allOf) == "table" and #s.allOf == 1 and s.allOf)
  if type(alt) == "table" and #alt > 0 and not s.properties then
    local ts = {}
    for i, a in ipairs(alt) do ts[i] = type_of(g, a, cname) end
    return union(ts)
  end
  if s["x-kubernetes-int-or-string"] then return "integer|string" end
  local t = s.type
  if t == "string" or t == "integer" or t == "number" or t == "boolean" then return t end
  if t == "array" then
    local it = type_of(g, s.items, cname)
    return (it:find("|", 1, true) and ("(" .. it .. ")") or it) .. "[]"
  end
  if type(s.properties) == "table" and next(s.properties) then
    if not g.queued[cname] then
      g.queued[cname] = true
      g.order[#g.order + 1] = { name = cname, schema = s }
    end
    return cname
  end
  local ap = s.additionalProperties
  if type(ap) == "table" then return "table<string, " .. type_of(g, ap, cname) .. ">" end
  if ap == true then return "table<string, any>" end
  if t == "object" or s["x-kubernetes-preserve-unknown-fields"] then return "table" end
  return "any"
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- The lines of one class.
local function class_lines(g, c)
  local s = c.schema
  local out = {}
  local d = M.first_sentence(s.description)
  if d ~= "" then out[#out + 1] = "---" .. d end
  local gvk = s["x-kubernetes-group-version-kind"]
  out[#out + 1] = "---@class " .. c.name .. (type(gvk) == "table" and gvk[1] and ": kinformer.KObject" or "")
  local required = {}
  for _, r in ipairs(type(s.required) == "table" and s.required or {}) do required[r] = true end
  for _, k in ipairs(sorted_keys(s.properties)) do
    local p = s.properties[k]
    local ty = type_of(g, p, c.name .. "." .. k)
    -- a custom resource's document has metadata as a bare object
    if k == "metadata" and ty == "table" and gvk then ty = "kinformer.ObjectMeta" end
    local desc = M.first_sentence(type(p) == "table" and p.description)
    out[#out + 1] = ("---@field %s%s %s%s"):format(field_name(k), required[k] and "" or "?", ty,
      desc ~= "" and (" " .. desc) or "")
  end
  return out
end

-- ---- resources to schemas --------------------------------------------------------

-- group, version, resource (or Kind) of "[group/]version/resource".
local function split_resource(res)
  local parts = {}
  for p in res:gmatch("[^/]+") do parts[#parts + 1] = p end
  if #parts == 2 then return "", parts[1], parts[2] end
  if #parts == 3 then return parts[1], parts[2], parts[3] end
  return nil
end

local function decode(text, what)
  local core = require "kinformer.core"
  local v, err = core.json_decode(text)
  if type(v) ~= "table" then return nil, ("%s is not a JSON object (%s)"):format(what, tostring(err or v)) end
  return v
end

-- The kind the document's paths serve resource under (x-kubernetes-group-
-- version-kind of an operation on .../resource or .../resource/{name}).
local function kind_of(doc, prefix, resource)
  for _, path in ipairs(sorted_keys(type(doc.paths) == "table" and doc.paths or {})) do
    local rest = path:sub(#prefix + 2)
    if path:sub(1, #prefix + 1) == prefix .. "/" then
      rest = rest:gsub("^namespaces/{namespace}/", "")
      if rest == resource or rest == resource .. "/{name}" then
        for _, op in pairs(doc.paths[path]) do
          local gvk = type(op) == "table" and op["x-kubernetes-group-version-kind"]
          if type(gvk) == "table" and gvk.kind then return gvk.kind end
        end
      end
    end
  end
  return nil
end

-- The name in doc.components.schemas of the schema of group/version/kind.
local function schema_of_kind(schemas, group, version, kind)
  for _, name in ipairs(sorted_keys(schemas)) do
    local gvks = schemas[name]["x-kubernetes-group-version-kind"]
    for _, gvk in ipairs(type(gvks) == "table" and gvks or {}) do
      if gvk.group == group and gvk.version == version and gvk.kind == kind then return name end
    end
  end
  return nil
end

--- Makes the classes of resources (a list of resource names, or "--all":
-- every schema of every document). fetch(path) returns the text at path
-- of the server, or nil, message. Returns the text, or nil, message (a
-- document that cannot be read, a resource the server lacks).
function M.generate(fetch, resources)
  local text, err = fetch("/openapi/v3")
  if not text then return nil, err end
  local index
  index, err = decode(text, "/openapi/v3")
  if not index then return nil, err end
  if type(index.paths) ~= "table" then return nil, "/openapi/v3 lists no documents (paths)" end
  local docs, schemas = {}, {}
  local function doc(key)
    if docs[key] then return docs[key] end
    local entry = index.paths[key]
    if type(entry) ~= "table" or type(entry.serverRelativeURL) ~= "string" then return nil end
    local t, ferr = fetch(entry.serverRelativeURL)
    if not t then return nil, ferr end
    local d, derr = decode(t, entry.serverRelativeURL)
    if not d then return nil, derr end
    local comp = type(d.components) == "table" and d.components.schemas
    for name, s in pairs(type(comp) == "table" and comp or {}) do
      if type(s) == "table" and not schemas[name] then schemas[name] = s end
    end
    docs[key] = d
    return d
  end
  local g = new_gen(schemas)
  local roots, title = {}, {}
  if resources == "--all" then
    for _, key in ipairs(sorted_keys(index.paths)) do
      local _, derr = doc(key)
      if derr then return nil, derr end
    end
    for _, name in ipairs(sorted_keys(schemas)) do roots[#roots + 1] = name end
    title[1] = "every schema"
  else
    for _, res in ipairs(resources) do
      local group, version, resource = split_resource(res)
      if not group then
        return nil, ('"%s" is not a resource name ([group/]version/resource, e.g. apps/v1/deployments)'):format(res)
      end
      local key = group == "" and ("api/" .. version) or ("apis/" .. group .. "/" .. version)
      local d, derr = doc(key)
      if derr then return nil, derr end
      if not d then return nil, ("the server has no %s: no OpenAPI document for %s"):format(res, key) end
      local kind = resource:match("^%u") and resource or kind_of(d, "/" .. key, resource)
      local name = kind and schema_of_kind(schemas, group, version, kind)
      if not name then return nil, ("the server has no %s: its OpenAPI document %s does not serve it"):format(res, key) end
      roots[#roots + 1] = name
      title[#title + 1] = res
    end
  end
  for _, name in ipairs(roots) do ref_type(g, "#/components/schemas/" .. name) end
  local out = {
    "---@meta",
    "-- Kubernetes object types for editors (LuaCATS), made by `kinformer types` from the",
    "-- server's OpenAPI v3 documents for " .. table.concat(title, ", ") .. ". A kind's class extends",
    "-- kinformer.KObject (kinformer's types/). Use: ---@type k8s.apps.v1.Deployment",
  }
  local i = 1
  while i <= #g.order do -- classes queue more as they are printed
    out[#out + 1] = ""
    for _, l in ipairs(class_lines(g, g.order[i])) do out[#out + 1] = l end
    i = i + 1
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---- the command -------------------------------------------------------------------

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

--- Parses argv (argv[1] == "types"). Returns {kubeconfig =, context =,
-- sim =, seed =, all =, resources = {}} or nil, message (a usage error).
function M.parse(argv)
  local o = { resources = {} }
  local ok, err = argv_walk(argv, 2, function(a, value, usage)
    if a == "--kubeconfig" then o.kubeconfig = value()
    elseif a == "--context" then o.context = value()
    elseif a == "--sim" then o.sim = true
    elseif a == "--seed" then o.seed = value()
    elseif a == "--all" then o.all = true
    elseif a == "-h" or a == "--help" then o.help = true
    elseif a:sub(1, 1) == "-" then usage("unknown option " .. a)
    else o.resources[#o.resources + 1] = a end
  end)
  if not ok then return nil, err end
  if o.help then return o end
  if o.seed and not o.sim then return nil, "--seed needs --sim" end
  if o.sim and (o.kubeconfig or o.context) then return nil, "--sim excludes --kubeconfig and --context" end
  if o.all and #o.resources > 0 then return nil, "give RESOURCE... or --all, not both" end
  if not o.all and #o.resources == 0 then return nil, "types needs a RESOURCE (or --all)" end
  return o
end

--- Entry point for `kinformer types ...` (argv as `arg`). Returns the exit status.
function M.main(argv)
  local o, err = M.parse(argv)
  if not o then
    stderr("kinformer: %s\n%s", err, M.usage)
    return 2
  end
  if o.help then
    io.stdout:write(M.usage)
    return 0
  end
  local core = require "kinformer.core"
  core.set_log_level("warn")
  local sim, mgr, msg
  if o.sim then
    sim, msg = require("kinformer.sim").start { seed = o.seed }
    if not sim then
      stderr("kinformer: cannot start kinformer.sim: %s\n", tostring(msg))
      return 1
    end
  end
  mgr, msg = require("kinformer").manager { kubeconfig = o.kubeconfig, context = o.context, sim = sim }
  if not mgr then
    if sim then sim:stop() end
    stderr("kinformer: cannot create the manager: %s\n", tostring(msg))
    return 1
  end
  local host = mgr.env:host()
  local function fetch(path)
    local body, m, code, http = mgr.client:get_raw(path)
    if body then return body end
    local status = (http and http > 0) and ("HTTP %d %s"):format(http, tostring(code)) or tostring(code)
    return nil, ("cannot read %s%s: %s: %s"):format(host, path, status, tostring(m))
  end
  local text, gerr = M.generate(fetch, o.all and "--all" or o.resources)
  mgr:stop()
  if sim then sim:stop() end
  if not text then
    stderr("kinformer: %s\n", gerr)
    return 1
  end
  io.stdout:write(text)
  return 0
end

return M
