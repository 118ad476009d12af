--- kinformer.cmd.manifests: `kinformer manifests script.lua` -- the Kubernetes
-- objects that deploy an operator script: a ServiceAccount, the RBAC its
-- informers, controllers and client calls need, a ConfigMap holding the
-- script and its modules, and a Deployment running it (see docs/deploy.md).
--
-- What the script uses is learnt two ways, and the output says which rule
-- came from which (YAML comments):
--   * plan: the script runs once against a planning manager (plan_script
--     below) that records mgr:informer, mgr:controller (for / owns /
--     watches) and handler and reconciler module names, and records the
--     client calls the script itself makes while it loads, instead of
--     connecting (no server, no kubeconfig);
--   * source: reconcilers, handlers and map functions run later, in other
--     Lua states, so their client calls are read from the source of the
--     script and of its modules (scan_source): every `client:<verb>(` call,
--     its resource taken from a string literal, from a constant assigned a
--     string literal in the same file (M.RES = "apps/v1/deployments"), or,
--     when it is a parameter of the enclosing function, from the arguments
--     of that function's calls in the same file. A call whose resource
--     cannot be resolved that way is listed as undetermined in the output
--     (and grants nothing): add its rule by hand.
-- The files read are the script and the modules of its folder that it
-- requires (while planning, or in the text of a read file) or names as a
-- reconciler, handler or map module; they are what the ConfigMap ships. A
-- script that makes its own manager (kinformer.manager{...}) gets the
-- planning one, and its namespace and leader_election are honoured.
--
-- The script travels in a ConfigMap rather than in the image: one image
-- (examples/deploy/Containerfile) serves every operator, and a changed
-- script is a `kubectl apply` (a hash of it in the pod template rolls the
-- pods) instead of an image build.
--
-- RBAC verbs: an informer (For, Owns, Watches or mgr:informer) needs get,
-- list, watch; client get/list/create/update/patch/delete need their verb,
-- apply needs patch, update_status update on <resource>/status (patch with
-- subresource = "status": patch on it). A controller whose reconciler sets
-- owner references (set_controller_reference / set_owner_reference, which
-- set blockOwnerDeletion) gets update on <for resource>/finalizers, which
-- the OwnerReferencesPermissionEnforcement admission plugin asks for.
-- Always added: events (create, patch; groups "" and events.k8s.io) and, in
-- a Role of the operator's own namespace, coordination.k8s.io leases (get,
-- create, update) for leader election.
local M = {}

-- ---- resources ------------------------------------------------------------

--- "apps/v1/deployments" -> "apps", "deployments"; "v1/pods" -> "", "pods";
-- a subresource ("v1/pods/status") stays in the resource ("pods/status").
-- Returns nil for anything else.
function M.split_resource(res)
  if type(res) ~= "string" then return nil end
  local parts = {}
  for p in res:gmatch("[^/]+") do parts[#parts + 1] = p end
  if #parts >= 2 and parts[1]:match("^v%d") then
    return "", table.concat(parts, "/", 2)
  elseif #parts >= 3 and parts[2]:match("^v%d") then
    return parts[1], table.concat(parts, "/", 3)
  end
  return nil
end

-- ---- the planning manager -------------------------------------------------

-- What an unknown field or method of the planning objects gives: a value
-- that can be indexed and called (returning itself), so that a script
-- calling a manager feature planning knows nothing of (a metric, a health
-- check...) while it loads does not fail.
local anything
anything = setmetatable({}, {
  __index = function() return anything end,
  __call = function() return anything end,
  __tostring = function() return "kinformer.cmd.manifests planning stand-in" end,
})

local function permissive(t)
  return setmetatable(t, { __index = function() return anything end })
end

local CLIENT_VERBS = { "get", "list", "create", "update", "update_status", "patch", "apply", "delete" }

-- The first argument of a client call as a resource string, or nil (an
-- object: its resource would come from apiVersion/kind).
local function call_resource(a)
  if type(a) == "string" then return a end
  if type(a) == "table" and type(a.apiVersion) == "string" and type(a.kind) == "string" then
    return nil, a.apiVersion .. " " .. a.kind
  end
  return nil
end

--- Runs the script (path) against a planning manager. opts: namespace
-- (the manager's, as --namespace), args. Returns the plan
-- {informers = {{resource=, namespace=, why=}}, controllers = {{name=,
-- ["for"]=, owns=, watches=, reconciler=}}, modules = {names required or
-- named}, calls = {{verb=, resource=, why=}}, undetermined = {...}}, or
-- nil, message when the script cannot be loaded or raises.
function M.plan_script(path, opts)
  opts = opts or {}
  local plan = { informers = {}, controllers = {}, modules = {}, module_set = {}, calls = {},
                 undetermined = {}, namespace = opts.namespace }
  local function module(name, why)
    if type(name) == "string" and not plan.module_set[name] then
      plan.module_set[name] = why
      plan.modules[#plan.modules + 1] = name
    end
  end
  local function informer(res, o, why)
    plan.informers[#plan.informers + 1] = { resource = res, namespace = o and o.namespace or opts.namespace,
                                            why = why }
  end
  local client = {}
  for _, v in ipairs(CLIENT_VERBS) do
    client[v] = function(_, a)
      local res, objdesc = call_resource(a)
      local why = "script load"
      if res then
        plan.calls[#plan.calls + 1] = { verb = v, resource = res, why = why }
      else
        plan.undetermined[#plan.undetermined + 1] = "client:" .. v .. " at script load on "
          .. (objdesc or "an unknown resource")
      end
      return nil, "planning: no server", "EPLAN"
    end
  end
  client = permissive(client)
  local env = permissive({
    resource = function(_, res)
      local g, r = M.split_resource(res)
      if not g then return nil end
      return { group = g, resource = r, name = res }
    end,
    namespace = function() return opts.namespace or "default" end,
    client = function() return client end,
    sync_progress = function() return {} end,
  })
  local function fake_informer(res)
    return permissive({
      add_handler = function(_, h)
        if type(h) == "string" then module(h, "handler of informer " .. res) end
        return true
      end,
      list = function() return {} end,
      name = function() return res end,
      has_synced = function() return true end,
    })
  end
  local mgr = permissive({
    env = env, client = client, namespace = opts.namespace or "default", planning = true,
    informer = function(_, res, o)
      informer(res, o, "mgr:informer")
      return fake_informer(res)
    end,
    controller = function(_, cfg)
      local c = { name = cfg.name or (cfg["for"] and cfg["for"]:match("([^/]+)$")) or "controller",
                  ["for"] = cfg["for"], owns = {}, watches = {} }
      local iopts = cfg.informer_opts
      if cfg["for"] then informer(cfg["for"], iopts, "controller " .. c.name .. " (for)") end
      local function res_of(e) if type(e) == "table" then return e[1], e end return e, {} end
      for _, e in ipairs(cfg.owns or {}) do
        local r, o = res_of(e)
        c.owns[#c.owns + 1] = r
        informer(r, o.informer_opts or iopts, "controller " .. c.name .. " (owns)")
      end
      for _, e in ipairs(cfg.watches or {}) do
        local r, o = res_of(e)
        c.watches[#c.watches + 1] = r
        informer(r, o.informer_opts or iopts, "controller " .. c.name .. " (watches)")
        if type(o.map) == "string" then module(o.map, "map of controller " .. c.name) end
      end
      if type(cfg.reconciler) == "string" then
        c.reconciler = cfg.reconciler
        module(cfg.reconciler, "reconciler of controller " .. c.name)
      end
      plan.controllers[#plan.controllers + 1] = c
      return permissive({ name = function() return c.name end })
    end,
    start = function() return true end,
    run = function() return true end,
    step = function() return 0 end,
    wait_for = function() return true end,
    lister = function(_, name) return fake_informer(name) end,
  })
  -- the manager of the script: the bootstrap's (by = "bootstrap"), and
  -- the one a script makes itself, whose options are honoured
  local function own_manager(o, by)
    if by ~= "bootstrap" then
      o = type(o) == "table" and o or {}
      plan.manager_opts = o
      if o.namespace and not opts.namespace then rawset(mgr, "namespace", o.namespace) end
    end
    return mgr
  end
  local s, err = require("kinformer.bootstrap").load{
    script = path, namespace = opts.namespace, args = opts.args, fresh = true,
    flags = { planning = true }, make_manager = own_manager,
  }
  if not s then
    if err:match("^script ") then return nil, err:gsub("^(script %S+) failed:", "%1 failed while planning:") end
    return nil, err
  end
  for _, name in ipairs(s.loaded) do module(name, "required by the script") end
  plan.path = package.path
  return plan
end

-- ---- the source scan ------------------------------------------------------

-- Splits the argument list that starts at src[i] (just after "(") into
-- argument texts (top-level commas), skipping strings and comments.
-- Returns the array of trimmed texts and the index after ")".
local function split_args(src, i)
  local args, depth, start = {}, 0, i
  local n = #src
  while i <= n do
    local c = src:sub(i, i)
    if c == '"' or c == "'" then
      local j = i + 1
      while j <= n do
        local d = src:sub(j, j)
        if d == "\\" then j = j + 1 elseif d == c then break end
        j = j + 1
      end
      i = j
    elseif c == "[" and src:match("^%[=*%[", i) then
      local eq = src:match("^%[(=*)%[", i)
      local close = src:find("]" .. eq .. "]", i, true)
      i = close and close + #eq + 1 or n
    elseif c == "-" and src:sub(i, i + 1) == "--" then
      local eol = src:find("\n", i, true)
      i = eol or n
    elseif c == "(" or c == "{" or c == "[" then
      depth = depth + 1
    elseif c == ")" or c == "}" or c == "]" then
      if depth == 0 then
        local a = src:sub(start, i - 1):match("^%s*(.-)%s*$")
        if a ~= "" or #args > 0 then args[#args + 1] = a end
        return args, i + 1
      end
      depth = depth - 1
    elseif c == "," and depth == 0 then
      args[#args + 1] = src:sub(start, i - 1):match("^%s*(.-)%s*$")
      start = i + 1
    end
    i = i + 1
  end
  return args, n + 1
end

local function line_of(src, pos)
  local _, n = src:sub(1, pos):gsub("\n", "")
  return n + 1
end

-- The string an expression denotes in src, or nil: a literal, or a name
-- (M.X, X) assigned a string literal somewhere in src.
local function constant(src, expr)
  local lit = expr:match('^"([^"\\]*)"$') or expr:match("^'([^'\\]*)'$")
  if lit then return lit end
  if not expr:match("^[%a_][%w_]*$") and not expr:match("^[%a_][%w_]*%.[%a_][%w_]*$") then return nil end
  local pat = "%f[%w_.]" .. expr:gsub("%.", "%%.") .. "%s*=%s*(['\"])([^'\"\n]*)%1"
  local _, v = src:match(pat)
  return v
end

-- The enclosing function of position pos: the nearest preceding
-- "function NAME(params)" -> name, params array.
local function enclosing(src, pos)
  local best, bname, bparams
  for s, name, params in src:gmatch("()function%s+([%w_.:]+)%s*(%b())") do
    if s < pos then best, bname, bparams = s, name, params else break end
  end
  if not best then return nil end
  local ps = {}
  for p in bparams:sub(2, -2):gmatch("[^,%s]+") do ps[#ps + 1] = p end
  return bname:match("([%w_]+)$"), ps
end

-- The resources expr may denote at pos in src: a constant, or, for a
-- parameter of the enclosing function, the constants passed at its call
-- sites. Returns an array (empty when undetermined).
local function resolve(src, expr, pos, depth)
  local c = constant(src, expr)
  if c then return { c } end
  if depth > 2 or not expr:match("^[%a_][%w_]*$") then return {} end
  local fname, params = enclosing(src, pos)
  if not fname then return {} end
  local idx
  for i, p in ipairs(params) do if p == expr then idx = i end end
  if not idx then return {} end
  local out = {}
  local callpat = "%f[%w_]" .. fname .. "%s*%("
  local i = 1
  while true do
    local s, e = src:find(callpat, i)
    if not s then break end
    i = e + 1
    -- skip the definition itself
    local before = src:sub(math.max(1, s - 60), s - 1)
    if not before:match("function%s+[%w_.:]*$") then
      local args = split_args(src, e + 1)
      local a = args[idx]
      if a then
        local r = resolve(src, a, s, depth + 1)
        if #r == 0 then return {} end -- one unresolved call site: undetermined
        for _, x in ipairs(r) do out[#out + 1] = x end
      end
    end
  end
  return out
end

--- Scans Lua source text (name: the file, for the notes) for client calls.
-- Returns calls {{verb=, resource=, subresource=, why=}}, undetermined
-- {"file:line: client:verb(expr)"}, and whether it sets owner references.
function M.scan_source(src, name)
  local calls, undetermined = {}, {}
  -- comments out, strings kept (resources are string literals)
  local code = src:gsub("%-%-%[(=*)%[.-%]%1%]", function(s) return (s:gsub("[^\n]", " ")) end)
  code = code:gsub("%-%-[^\n]*", function(s) return (" "):rep(#s) end)
  local verbs = {}
  for _, v in ipairs(CLIENT_VERBS) do verbs[v] = true end
  for s, verb, e in code:gmatch("()client%s*:%s*([%a_][%w_]*)%s*%(()") do
    if verbs[verb] then
      local args = split_args(code, e)
      local where = string.format("%s:%d", name, line_of(code, s))
      local first = args[1] or ""
      local sub
      local last = args[#args] or ""
      if (verb == "patch" or verb == "apply") and last:match("subresource%s*=%s*['\"]status['\"]") then
        sub = "status"
      end
      local rs = resolve(code, first, s, 0)
      if #rs == 0 or not M.split_resource(rs[1]) then
        undetermined[#undetermined + 1] = string.format("%s: client:%s(%s, ...)", where, verb, first)
      else
        for _, r in ipairs(rs) do
          calls[#calls + 1] = { verb = verb, resource = r, subresource = sub, why = where }
        end
      end
    end
  end
  local owner_refs = code:find("set_controller_reference%s*%(") or code:find("set_owner_reference%s*%(")
  return calls, undetermined, owner_refs ~= nil
end

-- ---- rules ----------------------------------------------------------------

local VERB_ORDER = { "get", "list", "watch", "create", "update", "patch", "delete" }

--- Builds the rules from a plan and the scanned files ({name, src} with
-- .controller set for a controller's reconciler). Returns rules
-- {{group=, resource=, verbs = {...}, why = {...}}} sorted by group and
-- resource, and the notes (undetermined calls).
function M.rules(plan, files)
  local by, order = {}, {}
  local function grant(res, verb, why)
    local g, r = M.split_resource(res)
    if not g then
      plan.undetermined[#plan.undetermined + 1] = why .. ": resource " .. tostring(res) .. " not understood"
      return
    end
    local k = g .. "\0" .. r
    local e = by[k]
    if not e then
      e = { group = g, resource = r, verbs = {}, why = {}, whyset = {} }
      by[k] = e
      order[#order + 1] = e
    end
    e.verbs[verb] = true
    local w = e.whyset[why]
    if not w then
      w = { why = why, verbs = {} }
      e.whyset[why] = w
      e.why[#e.why + 1] = w
    end
    w.verbs[verb] = true
  end
  for _, inf in ipairs(plan.informers) do
    for _, v in ipairs({ "get", "list", "watch" }) do grant(inf.resource, v, "plan: informer of " .. inf.why) end
  end
  local function add_calls(calls, source)
    for _, c in ipairs(calls) do
      local res = c.resource
      local verb = c.verb
      if verb == "update_status" then res, verb = res .. "/status", "update"
      elseif verb == "apply" then verb = "patch" end
      if c.subresource then res = res .. "/" .. c.subresource end
      grant(res, verb, source .. " client:" .. c.verb .. " at " .. c.why)
    end
  end
  add_calls(plan.calls, "plan:")
  local undetermined = {}
  for _, u in ipairs(plan.undetermined) do undetermined[#undetermined + 1] = "plan: " .. u end
  for _, f in ipairs(files) do
    local calls, und, owner_refs = M.scan_source(f.src, f.name)
    add_calls(calls, "source:")
    for _, u in ipairs(und) do undetermined[#undetermined + 1] = "source: " .. u end
    if owner_refs then
      for _, c in ipairs(plan.controllers) do
        if c["for"] and (f.controllers or {})[c.name] then
          grant(c["for"] .. "/finalizers", "update", "source: reconciler of controller " .. c.name
            .. " sets owner references (blockOwnerDeletion) in " .. f.name)
        end
      end
    end
  end
  table.sort(order, function(a, b)
    if a.group ~= b.group then return a.group < b.group end
    return a.resource < b.resource
  end)
  local rules = {}
  for _, e in ipairs(order) do
    local verbs = {}
    for _, v in ipairs(VERB_ORDER) do if e.verbs[v] then verbs[#verbs + 1] = v end end
    local why = {}
    for _, w in ipairs(e.why) do
      local vs = {}
      for _, v in ipairs(VERB_ORDER) do if w.verbs[v] then vs[#vs + 1] = v end end
      why[#why + 1] = table.concat(vs, ", ") .. ": " .. w.why
    end
    rules[#rules + 1] = { group = e.group, resource = e.resource, verbs = verbs, why = why }
  end
  return rules, undetermined
end

-- ---- YAML -----------------------------------------------------------------

--- An ordered map: om("k1", v1, "k2", v2, ...) (nil values skipped).
local function om(...)
  local t = { __keys = {} }
  local n = select("#", ...)
  for i = 1, n, 2 do
    local k, v = select(i, ...)
    if v ~= nil then t.__keys[#t.__keys + 1] = k; t[k] = v end
  end
  return t
end
M.om = om

local function scalar(v)
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  v = tostring(v)
  if v:match("^[%w/._-][%w/._:-]*$") and not v:match(":$") and not v:match("^%d")
     and not ({ ["true"] = 1, ["false"] = 1, ["null"] = 1, yes = 1, no = 1, on = 1, off = 1,
               y = 1, n = 1, ["~"] = 1 })[v:lower()] then
    return v
  end
  return '"' .. v:gsub('[\\"]', "\\%0"):gsub("\n", "\\n"):gsub("\t", "\\t") .. '"'
end

-- A multi-line string as a literal block, or nil when it cannot be one.
local function block(v, indent)
  if type(v) ~= "string" or not v:find("\n") or v:find("[\r%z]") then return nil end
  local chomp = v:match("\n\n$") and "+" or (v:match("\n$") and "" or "-")
  local ind = v:match("^[ \n]") and "2" or ""
  local pad = (" "):rep(indent)
  local lines = {}
  local body = v:gsub("\n$", "")
  for l in (body .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = l == "" and "" or pad .. l end
  return "|" .. ind .. chomp, table.concat(lines, "\n")
end

local function is_array(t) return t.__keys == nil end

local function empty(t)
  if is_array(t) then return #t == 0 end
  return #t.__keys == 0
end

local emit_seq

-- Appends the lines of map t to out: keys at indent, the first key line
-- starting with first (a prefix as long as indent, e.g. "  - ").
local function emit_map(out, t, indent, first)
  local pad = (" "):rep(indent)
  for i, k in ipairs(t.__keys) do
    local v = t[k]
    local head = (i == 1 and first or pad) .. scalar(k) .. ":"
    local style, text = block(v, indent + 2)
    if style then
      out[#out + 1] = head .. " " .. style
      out[#out + 1] = text
    elseif type(v) ~= "table" then
      out[#out + 1] = head .. " " .. scalar(v)
    elseif empty(v) then
      out[#out + 1] = head .. (is_array(v) and " []" or " {}")
    elseif is_array(v) then
      out[#out + 1] = head
      emit_seq(out, v, indent)
    else
      out[#out + 1] = head
      emit_map(out, v, indent + 2, (" "):rep(indent + 2))
    end
  end
end

-- Appends the lines of array t to out, its "- " at indent; an item's
-- __comment lines go above it.
emit_seq = function(out, t, indent)
  local pad = (" "):rep(indent)
  for _, item in ipairs(t) do
    if type(item) == "table" then
      for _, c in ipairs(item.__comment or {}) do out[#out + 1] = pad .. "# " .. c end
      if is_array(item) then error("manifests: nested sequences are not emitted") end
      emit_map(out, item, indent + 2, pad .. "- ")
    else
      out[#out + 1] = pad .. "- " .. scalar(item)
    end
  end
end

--- YAML text of the documents (ordered maps) with their header comments
-- (doc.__header, an array of lines), separated by "---".
function M.yaml(docs)
  local out = {}
  for i, d in ipairs(docs) do
    if i > 1 then out[#out + 1] = "---" end
    for _, c in ipairs(d.__header or {}) do out[#out + 1] = "# " .. c end
    emit_map(out, d, 0, "")
  end
  return table.concat(out, "\n") .. "\n"
end

-- ---- the documents --------------------------------------------------------

local function readfile(p)
  local f = io.open(p, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- FNV-1a (32 bit) of s as hex: a content hash for the pod template, so a
-- changed script rolls the Deployment.
local function fnv(s)
  local h = 0x811c9dc5
  for i = 1, #s do h = ((h ~ s:byte(i)) * 0x01000193) & 0xffffffff end
  return string.format("%08x", h)
end

local function dns_name(s)
  s = s:lower():gsub("[^a-z0-9-]", "-"):gsub("^-+", ""):gsub("-+$", "")
  if s == "" then s = "operator" end
  return s:sub(1, 50)
end

--- The default name for a script: its folder's name for operator.lua /
-- main.lua / init.lua, else the file name without .lua.
function M.default_name(script)
  local dir, base = script:match("^(.-)/?([^/]*)$")
  local stem = base:gsub("%.lua$", "")
  if (stem == "operator" or stem == "main" or stem == "init") and dir ~= "" then
    local d = dir:match("([^/]+)/*$")
    if d and d ~= "." and d ~= ".." then stem = d end
  end
  return dns_name(stem)
end

local function rule_doc(r)
  local o = om("apiGroups", { r.group }, "resources", { r.resource }, "verbs", r.verbs)
  o.__comment = r.why
  return o
end

--- Builds everything for script. opts: namespace (as --namespace: a
-- namespaced operator, a Role), image, name, args. Returns the YAML text,
-- or nil, message.
function M.generate(script, opts)
  opts = opts or {}
  local plan, err = M.plan_script(script, opts)
  if not plan then return nil, err end
  local dir = script:match("^(.*)/[^/]*$") or "."
  -- the files to scan and ship: the script, and the modules it required or
  -- named that live in its folder (found through its package.path)
  local files, shipped = {}, {}
  local src = readfile(script)
  files[#files + 1] = { name = script:match("([^/]*)$"), src = src, path = script, controllers = {} }
  shipped[#shipped + 1] = { rel = script:match("([^/]*)$"), src = src }
  local recon_of = {}
  for _, c in ipairs(plan.controllers) do
    if c.reconciler then recon_of[c.reconciler] = recon_of[c.reconciler] or {}; recon_of[c.reconciler][c.name] = true end
  end
  -- a function reconciler lives in the script: its controllers read it
  for _, c in ipairs(plan.controllers) do if not c.reconciler then files[1].controllers[c.name] = true end end
  -- modules a file requires (also those not loaded while planning: inside
  -- functions, or in a reconciler module only its worker states load)
  local function requires_of(text, from)
    for m in text:gmatch("require%s*%(?%s*[\"']([%w_.%-]+)[\"']") do
      if not plan.module_set[m] then
        plan.module_set[m] = "required by " .. from
        plan.modules[#plan.modules + 1] = m
      end
    end
  end
  requires_of(src, files[1].name)
  local external = {}
  local i = 1
  while i <= #plan.modules do
    local m = plan.modules[i]
    i = i + 1
    if not m:match("^kinformer") then
      local p = package.searchpath(m, plan.path)
      local prefix = dir .. "/"
      if p and p:sub(1, #prefix) == prefix then
        local s = readfile(p)
        local rel = p:sub(#prefix + 1)
        files[#files + 1] = { name = rel, src = s, path = p, controllers = recon_of[m] or {} }
        shipped[#shipped + 1] = { rel = rel, src = s }
        requires_of(s, rel)
      elseif not plan.module_set[m]:match("^required by") then
        external[#external + 1] = m .. " (" .. plan.module_set[m] .. (p and (", " .. p) or ", not found") .. ")"
      end
    end
  end
  local rules, undetermined = M.rules(plan, files)
  for _, e in ipairs(external) do
    undetermined[#undetermined + 1] = "module " .. e .. " is outside the script's folder: not scanned"
  end
  local mopts = plan.manager_opts or {}
  local name = opts.name and dns_name(opts.name) or (type(mopts.name) == "string" and dns_name(mopts.name))
    or M.default_name(script)
  local ns = opts.namespace or mopts.namespace or "default"
  local namespaced = (opts.namespace or mopts.namespace) ~= nil
  local le_opts = type(mopts.leader_election) == "table" and mopts.leader_election or {}
  local le_ns = le_opts.namespace or ns
  local image = opts.image or "kinformer-operator:latest"
  local labels = om("app.kubernetes.io/name", name, "app.kubernetes.io/managed-by", "kinformer")
  local function meta(n, namespace)
    return om("name", n, "namespace", namespace, "labels", labels)
  end

  local role_rules = {}
  for _, r in ipairs(rules) do role_rules[#role_rules + 1] = rule_doc(r) end
  local ev = om("apiGroups", { "" }, "resources", { "events" }, "verbs", { "create", "patch" })
  ev.__comment = { "events: ctx:event and recorders (core/v1 Events, where the server has no events.k8s.io)" }
  role_rules[#role_rules + 1] = ev
  local ev2 = om("apiGroups", { "events.k8s.io" }, "resources", { "events" }, "verbs", { "create", "patch" })
  ev2.__comment = { "events: events.k8s.io/v1 Events" }
  role_rules[#role_rules + 1] = ev2

  local docs = {}
  local sa = om("apiVersion", "v1", "kind", "ServiceAccount", "metadata", meta(name, ns))
  sa.__header = {
    string.format("Generated by `kinformer manifests %s%s`.", script,
      opts.namespace and (" --namespace " .. opts.namespace) or ""),
    "Rules come from the script run in planning mode (plan:, informers and",
    "controllers it registered) and from its source and modules' source (source:).",
  }
  if #undetermined == 0 then
    sa.__header[#sa.__header + 1] = "Every client call's resource was determined."
  else
    sa.__header[#sa.__header + 1] = "NOT DETERMINED (no rule granted; add what they need by hand):"
    for _, u in ipairs(undetermined) do sa.__header[#sa.__header + 1] = "  " .. u end
  end
  docs[#docs + 1] = sa
  local kind = namespaced and "Role" or "ClusterRole"
  local role = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", kind,
    "metadata", meta(name, namespaced and ns or nil), "rules", role_rules)
  role.__header = { namespaced and ("A Role: the manager is namespaced (namespace " .. ns .. ").")
    or "A ClusterRole: the manager watches every namespace (no --namespace)." }
  docs[#docs + 1] = role
  local subj = { om("kind", "ServiceAccount", "name", name, "namespace", ns) }
  docs[#docs + 1] = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", kind .. "Binding",
    "metadata", meta(name, namespaced and ns or nil),
    "roleRef", om("apiGroup", "rbac.authorization.k8s.io", "kind", kind, "name", name), "subjects", subj)
  local le_name = name .. "-leader-election"
  local le = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", meta(le_name, le_ns),
    "rules", { om("apiGroups", { "coordination.k8s.io" }, "resources", { "leases" },
                  "verbs", { "get", "create", "update" }) })
  le.__header = { "Leader election (--leader-elect): the Lease in namespace " .. le_ns
    .. (le_opts.name and (" (" .. tostring(le_opts.name) .. ", the script's leader_election.name)") or "") .. "." }
  docs[#docs + 1] = le
  docs[#docs + 1] = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", "RoleBinding",
    "metadata", meta(le_name, le_ns),
    "roleRef", om("apiGroup", "rbac.authorization.k8s.io", "kind", "Role", "name", le_name), "subjects", subj)

  -- the script and its modules, in a ConfigMap mounted at /operator
  local data, items, all = om(), {}, {}
  for _, f in ipairs(shipped) do
    local key = f.rel:gsub("/", "__")
    data.__keys[#data.__keys + 1] = key
    data[key] = f.src
    items[#items + 1] = om("key", key, "path", f.rel)
    all[#all + 1] = f.rel .. "\0" .. f.src
  end
  local cm = om("apiVersion", "v1", "kind", "ConfigMap", "metadata", meta(name .. "-script", ns), "data", data)
  cm.__header = { "The script and the modules of its folder it uses, mounted at /operator." }
  docs[#docs + 1] = cm
  local script_base = script:match("([^/]*)$")
  -- the operator's name and its Lease, always explicit: two operators
  -- deployed in one namespace never share a Lease
  local lease = le_opts.name or name
  local cmd = { "kinformer", "run", "--name", name, "--leader-elect", "--leader-election-id", lease,
                "--metrics-bind-address", ":8080", "--health-probe-bind-address", ":8081" }
  if opts.namespace then cmd[#cmd + 1] = "--namespace"; cmd[#cmd + 1] = ns end
  cmd[#cmd + 1] = "/operator/" .. script_base
  local function probe(path)
    return om("httpGet", om("path", path, "port", "health"), "initialDelaySeconds", 5, "periodSeconds", 10)
  end
  local selector = om("app.kubernetes.io/name", name)
  local container = om(
    "name", "operator", "image", image, "command", cmd,
    "env", { om("name", "POD_NAMESPACE", "valueFrom", om("fieldRef", om("fieldPath", "metadata.namespace"))),
             om("name", "POD_NAME", "valueFrom", om("fieldRef", om("fieldPath", "metadata.name"))) },
    "ports", { om("name", "metrics", "containerPort", 8080, "protocol", "TCP"),
               om("name", "health", "containerPort", 8081, "protocol", "TCP") },
    "readinessProbe", probe("/readyz"), "livenessProbe", probe("/healthz"),
    "resources", om("requests", om("cpu", "50m", "memory", "64Mi"), "limits", om("memory", "256Mi")),
    "securityContext", om("allowPrivilegeEscalation", false, "readOnlyRootFilesystem", true,
                          "runAsNonRoot", true, "capabilities", om("drop", { "ALL" })),
    "volumeMounts", { om("name", "script", "mountPath", "/operator", "readOnly", true) })
  local dep = om("apiVersion", "apps/v1", "kind", "Deployment", "metadata", meta(name, ns),
    "spec", om("replicas", 2, "selector", om("matchLabels", selector),
      "template", om(
        "metadata", om("labels", labels, "annotations", om(
          "kinformer.io/script-hash", fnv(table.concat(all, "\0")),
          "prometheus.io/scrape", "true", "prometheus.io/port", "8080")),
        "spec", om("serviceAccountName", name, "containers", { container },
          "volumes", { om("name", "script", "configMap", om("name", name .. "-script", "items", items)) }))))
  dep.__header = { "Two replicas: one leads (a Lease in " .. ns .. "), the other keeps its caches warm.",
    "Metrics on :8080/metrics, probes on :8081 (/readyz, /healthz)." }
  docs[#docs + 1] = dep
  return M.yaml(docs)
end

M.usage = [[
usage: kinformer manifests SCRIPT [--namespace NS] [--image IMAGE] [--name NAME] [-- ARGS...]

Prints the YAML to deploy SCRIPT: a ServiceAccount, a ClusterRole (a Role
with --namespace) with the verbs and resources the script's informers,
controllers and client calls need plus events, a leader-election Role for
Leases, their bindings, a ConfigMap with the script and its modules, and a
Deployment (2 replicas, --leader-elect, metrics :8080, probes :8081).
No server is contacted: the script runs in a planning mode.
]]

--- `kinformer manifests` (o: the parsed command line). Returns the exit
-- status.
function M.main(o)
  local f = io.open(o.script or "", "r")
  if not f then
    io.stderr:write("kinformer: cannot open script ", tostring(o.script), "\n")
    return 1
  end
  f:close()
  local text, err = M.generate(o.script, { namespace = o.namespace, image = o.image, name = o.name,
                                           args = o.args })
  if not text then
    io.stderr:write("kinformer: ", tostring(err), "\n")
    return 1
  end
  io.stdout:write(text)
  io.stdout:flush()
  return 0
end

return M
