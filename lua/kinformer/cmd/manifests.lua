--- kinformer.cmd.manifests: `kinformer manifests script.lua` -- the Kubernetes
-- objects that deploy an operator script: a ServiceAccount, the RBAC its
-- informers, controllers and client calls need, a ConfigMap holding the
-- script and its modules, and a Deployment running it (see docs/deploy.md).
--
-- The RBAC is never silently wrong: what the script needs is learnt three
-- ways, every rule says where it came from (YAML comments), and a call
-- whose resource could not be learnt and that no declared rule covers
-- stops the command (exit 1, each such call on stderr with file:line, no
-- YAML) unless --allow-undetermined:
--   * plan: the script runs once against a planning manager
--     (kinformer.cmd.manifests_plan) that records mgr:informer,
--     mgr:controller (for / owns / watches / children / finalizer / rbac,
--     where its reconciler is) and mgr:rbac, and the client calls the
--     script itself makes while it loads, instead of connecting (no
--     server, no kubeconfig);
--   * source: reconcilers, handlers and map functions run later, in other
--     Lua states, so their client calls, ctx:ensure calls and owner
--     references are read from the source of the script and of its modules
--     (kinformer.cmd.rbac_scan says what it resolves);
--   * declared: rbac = {{resources =, verbs =, api_groups =,
--     resource_names =, non_resource_urls =}, ...} on mgr:controller{...},
--     on kinformer.manager{...} or given to mgr:rbac(rules). A declared rule
--     granting a verb (on any resource) covers an undetermined call of
--     that verb; a module outside the script's folder (not scanned) is
--     covered by any declared rule.
-- The files read are the script and the modules of its folder that it
-- requires (while planning, or in the text of a read file) or names as a
-- reconciler, handler, map or finalize module; they are what the ConfigMap
-- ships. A script that makes its own manager (kinformer.manager{...}) gets
-- the planning one, and its namespace, leader_election and rbac are
-- honoured.
--
-- M.rules_for(script, opts) returns the merged rules as data (group,
-- resource, verbs, why), apart from the YAML, so that another source of
-- rules can be compared with them.
--
-- The script travels in a ConfigMap rather than in the image: one image
-- (examples/deploy/Containerfile) serves every operator, and a changed
-- script is a `kubectl apply` (a hash of it in the pod template rolls the
-- pods) instead of an image build.
--
-- RBAC verbs: an informer (For, Owns, Watches, children or mgr:informer)
-- needs get, list, watch; client get/list/create/update/patch/delete need
-- their verb; update_status update on <resource>/status (patch or apply
-- with subresource = "status": patch on it); server-side apply (client:apply,
-- patch with type = "apply") patch and create (an apply that creates is
-- authorized as a create); ctx:ensure get, create and patch; a
-- controller's children get, list, watch, create, patch, delete; its
-- finalizer patch on the For resource and update on <for>/finalizers; an
-- owner reference with blockOwnerDeletion (set_controller_reference, and
-- ctx:ensure unless owner = false) update on <owner's resource>/finalizers
-- (the OwnerReferencesPermissionEnforcement admission plugin asks for it).
-- Always added: events (create, patch; groups "" and events.k8s.io) and, in
-- a Role of the operator's own namespace, coordination.k8s.io leases (get,
-- create, update) for leader election.
local scan = require "kinformer.cmd.rbac_scan"

local M = {}

local planning = require "kinformer.cmd.manifests_plan"
local metrics_auth = require "kinformer.cmd.manifests_metrics"
local webhooks = require "kinformer.cmd.manifests_webhook"
local norm_path = planning.norm_path

--- "apps/v1/deployments" -> "apps", "deployments" (kinformer.cmd.manifests_plan).
M.split_resource = planning.split_resource

--- The planning run (kinformer.cmd.manifests_plan).
M.plan_script = planning.plan_script

-- ---- the files ------------------------------------------------------------

local function readfile(p)
  local f = io.open(p, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- The files to scan and ship: the script, and the modules it required or
-- named that live in its folder (found through its package.path), each
-- {name = (relative to the folder), path =, src =, module =}; and the
-- modules outside the folder that may make calls (not scanned): {name =,
-- why =, path =}.
local function collect_files(script, plan)
  local dir = script:match("^(.*)/[^/]*$") or "."
  local files = {}
  local src = readfile(script)
  files[1] = scan.new_file(script:match("([^/]*)$"), script, src)
  files[1].npath = norm_path(script)
  local function requires_of(f)
    for _, m in ipairs(scan.requires(f)) do
      if not plan.module_set[m] then
        plan.module_set[m] = "required by " .. f.name
        plan.modules[#plan.modules + 1] = m
      end
    end
  end
  requires_of(files[1])
  local external, by_module = {}, {}
  local i = 1
  while i <= #plan.modules do
    local m = plan.modules[i]
    i = i + 1
    if not m:match("^kinformer$") and not m:match("^kinformer%.") then
      local p = package.searchpath(m, plan.path)
      local prefix = dir .. "/"
      local why = plan.module_set[m]
      if p and p:sub(1, #prefix) == prefix then
        local f = scan.new_file(p:sub(#prefix + 1), p, readfile(p) or "")
        f.npath, f.module = norm_path(p), m
        files[#files + 1] = f
        by_module[m] = f
        requires_of(f)
      elseif not why:match("^required by") then
        -- a reconciler, handler, map or finalize module: it makes calls
        external[#external + 1] = { name = m, why = why, path = p }
      elseif p and p:match("%.lua$") then
        local text = readfile(p)
        if text and scan.makes_calls(text) then external[#external + 1] = { name = m, why = why, path = p } end
      end
    end
  end
  return files, external, by_module
end

-- ---- rules ----------------------------------------------------------------

local VERB_ORDER = { "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection" }
local VERB_RANK = {}
for i, v in ipairs(VERB_ORDER) do VERB_RANK[v] = i end

local function sort_verbs(set)
  local vs = {}
  for v in pairs(set) do vs[#vs + 1] = v end
  table.sort(vs, function(a, b)
    local ra, rb = VERB_RANK[a] or 100, VERB_RANK[b] or 100
    if ra ~= rb then return ra < rb end
    return a < b
  end)
  return vs
end

-- A set of rules keyed by group, resource (and resource names): each
-- {group =, resource =, resource_names =, verbs = set, why = {{why =,
-- verbs = set}}}.
local function rule_set()
  local set = { by = {}, order = {} }
  function set.add(key, proto, verbs, why)
    local e = set.by[key]
    if not e then
      e = proto
      e.verbs, e.why, e.whyset = {}, {}, {}
      set.by[key] = e
      set.order[#set.order + 1] = e
    end
    local w = e.whyset[why]
    if not w then
      w = { why = why, verbs = {} }
      e.whyset[why] = w
      e.why[#e.why + 1] = w
    end
    for _, v in ipairs(verbs) do
      e.verbs[v] = true
      w.verbs[v] = true
    end
  end
  return set
end

-- The hint of an undetermined item: the rule that would cover it.
local function hint(item)
  local vs = {}
  for i, v in ipairs(item.verbs or {}) do vs[i] = string.format("%q", v) end
  local rule = string.format("{{resources = {%s}, verbs = {%s}}}", item.hint_resources or "...",
    item.external and "..." or table.concat(vs, ", "))
  if item.external then
    return "declare what it needs with rbac = " .. rule .. " on the controller (or mgr:rbac)"
  end
  if item.in_controller then return "declare it with rbac = " .. rule .. " on the controller" end
  return "declare it with mgr:rbac" .. rule .. " (or rbac = ... on the controller)"
end

--- The one-line description of an undetermined item (without the
-- "kinformer: manifests: " of stderr).
function M.describe(item)
  if item.external then
    return string.format("module %s (%s%s) is outside the script's folder: not scanned; %s", item.module,
      item.why, item.path and (", " .. item.path) or "", hint(item))
  end
  return string.format("%s%s: %s; %s", item.where and (item.where .. ": ") or "", item.text,
    item.reason or "resource not determined", hint(item))
end

--- The rules every operator gets beside its own: Events (ctx:event and
-- recorders, in both groups) in its Role or ClusterRole, and its Lease (a
-- Role of its own namespace, for --leader-elect).
M.EVENT_RULES = {
  { group = "", resource = "events", verbs = { "create", "patch" },
    why = "events: ctx:event and recorders (core/v1 Events, where the server has no events.k8s.io)" },
  { group = "events.k8s.io", resource = "events", verbs = { "create", "patch" }, why = "events: events.k8s.io/v1 Events" },
}
M.LEASE_RULE = { group = "coordination.k8s.io", resource = "leases", verbs = { "get", "create", "update" },
                 why = "leader election" }

--- The rules script needs, as data. opts: namespace, args (as
-- plan_script's). Returns {rules = {{group =, resource =, verbs = {...},
-- why = {"verb, verb: origin", ...}, resource_names = {...} or nil}, ...}
-- (sorted by group and resource; events and leases not included: the
-- documents add them), non_resource_rules = {{non_resource_urls =, verbs
-- =, why =}}, undetermined = {item} (what no rule covers: {where =
-- "file:line", name = (the same, relative to the script's folder), text
-- =, verbs =, reason =} or {external = true, module =, why =, path =}),
-- covered = {item} (undetermined, but covered by a declared rule), plan =,
-- files =, external =}; or nil, message (the script failed to load, or a
-- resource name is not one).
function M.rules_for(script, opts)
  opts = opts or {}
  local plan, err = M.plan_script(script, opts)
  if not plan then return nil, err end
  local files, external, by_module = collect_files(script, plan)

  -- which controllers' code is where: whole files (reconciler, finalize
  -- and map modules, and what they require) and line ranges (functions)
  local whole, ranges = {}, {}
  local function add_whole(npath, c)
    whole[npath] = whole[npath] or {}
    for _, x in ipairs(whole[npath]) do if x == c then return false end end
    table.insert(whole[npath], c)
    return true
  end
  for m, ctls in pairs(plan.module_of) do
    local f = by_module[m]
    if f then for _, c in ipairs(ctls) do add_whole(f.npath, c) end end
  end
  for _, c in ipairs(plan.controllers) do
    for _, w in pairs(c.code) do
      ranges[w.path] = ranges[w.path] or {}
      table.insert(ranges[w.path], { ctl = c, first = w.first, last = w.last })
    end
  end
  local changed = true
  while changed do -- a module a controller's file requires runs in its workers too
    changed = false
    for _, f in ipairs(files) do
      local mine = {}
      for _, c in ipairs(whole[f.npath] or {}) do mine[#mine + 1] = c end
      for _, r in ipairs(ranges[f.npath] or {}) do mine[#mine + 1] = r.ctl end
      for _, m in ipairs(scan.requires(f)) do
        local g = by_module[m]
        if g and g ~= f then
          for _, c in ipairs(mine) do if add_whole(g.npath, c) then changed = true end end
        end
      end
    end
  end
  local function controllers_at(f, line)
    local best
    for _, r in ipairs(ranges[f.npath] or {}) do
      if line >= r.first and line <= r.last and (not best or r.last - r.first < best.last - best.first) then
        best = r
      end
    end
    local out = {}
    if best then
      for _, r in ipairs(ranges[f.npath]) do
        if r.first == best.first and r.last == best.last then out[#out + 1] = r.ctl end
      end
    else
      for _, c in ipairs(whole[f.npath] or {}) do out[#out + 1] = c end
    end
    return out
  end
  local function attribute(f, line)
    local out = {}
    for _, c in ipairs(controllers_at(f, line)) do
      local children = {}
      for _, ch in ipairs(c.children) do children[#children + 1] = ch end
      out[#out + 1] = { name = c.name, ["for"] = c["for"], children = children }
    end
    return out
  end

  local set, nonres = rule_set(), {}
  local undetermined = {}
  local function grant(res, verbs, why, item)
    local g, r = M.split_resource(res)
    if not g then
      local u = item or {}
      undetermined[#undetermined + 1] = { where = u.where, name = u.name, text = u.text or tostring(res),
        verbs = verbs, in_controller = u.in_controller,
        reason = string.format("%q is not a resource name (group/version/resource, e.g. apps/v1/deployments)",
          tostring(res)) }
      return
    end
    set.add(g .. "\0" .. r, { group = g, resource = r }, verbs, why)
  end
  for _, inf in ipairs(plan.informers) do
    grant(inf.resource, { "get", "list", "watch" }, "plan: informer of " .. inf.why)
  end
  for _, c in ipairs(plan.controllers) do
    for _, ch in ipairs(c.children) do
      grant(ch, { "get", "create", "patch", "delete" }, "plan: children of controller " .. c.name
        .. " (ctx:ensure applies them, pruning deletes them)")
    end
    if c.finalizer and c["for"] then
      grant(c["for"], { "patch" }, "plan: finalizer " .. tostring(c.finalizer) .. " of controller " .. c.name
        .. " (added and removed with merge patches)")
      grant(c["for"] .. "/finalizers", { "update" }, "plan: finalizer " .. tostring(c.finalizer)
        .. " of controller " .. c.name)
    end
  end
  for _, call in ipairs(plan.calls) do
    grant(call.resource, call.verbs, "plan: client:" .. call.verb .. " at " .. call.why
      .. (call.guessed and " (resource from the object's kind)" or ""))
  end
  for _, u in ipairs(plan.undetermined) do
    u.name = u.where and u.where:match("([^/]*)$")
    undetermined[#undetermined + 1] = u
  end

  local sc = scan.new(files, attribute)
  for _, fd in ipairs(sc:run()) do
    local f = fd.file
    local item = { where = f.path .. ":" .. fd.line, name = f.name .. ":" .. fd.line, text = fd.text,
                   verbs = fd.verbs, in_controller = #controllers_at(f, fd.line) > 0 }
    if fd.resources then
      local notes = {}
      if fd.owner then notes[#notes + 1] = "owner reference with blockOwnerDeletion"
      elseif fd.why == "ctx:ensure" then notes[#notes + 1] = "server-side apply" end
      notes[#notes + 1] = fd.note
      if fd.guessed and not fd.owner then notes[#notes + 1] = "resource from the object's kind" end
      local why = "source: " .. fd.why .. " at " .. f.name .. ":" .. fd.line
        .. (#notes > 0 and (" (" .. table.concat(notes, "; ") .. ")") or "")
      for _, r in ipairs(fd.resources) do grant(r, fd.verbs, why, item) end
    else
      item.reason = fd.reason
        or (fd.owner and "the owner's resource not determined (blockOwnerDeletion needs update on <owner>/finalizers)")
        or "resource not determined"
      if fd.owner then item.hint_resources = '"<group/version/resource>/finalizers"' end
      undetermined[#undetermined + 1] = item
    end
  end
  for _, e in ipairs(external) do
    undetermined[#undetermined + 1] = { external = true, module = e.name, why = e.why, path = e.path }
  end

  -- declared rules
  local declared_verbs, declared_any = {}, false
  for _, d in ipairs(plan.rbac) do
    for i, r in ipairs(d.rules) do
      declared_any = true
      local why = "declared: " .. d.why .. (#d.rules > 1 and (" #" .. i) or "")
      for _, v in ipairs(r.verbs) do declared_verbs[v] = true end
      if r.non_resource_urls then
        nonres[#nonres + 1] = { non_resource_urls = r.non_resource_urls, verbs = r.verbs, why = { why } }
      end
      for _, res in ipairs(r.resources or {}) do
        local targets = {}
        local g, rr = M.split_resource(res)
        if g then
          targets[1] = { g, rr }
        else
          for _, ag in ipairs(r.api_groups or {}) do targets[#targets + 1] = { ag, res } end
        end
        for _, t in ipairs(targets) do
          if r.resource_names then
            local names = {}
            for k, n in ipairs(r.resource_names) do names[k] = n end
            table.sort(names)
            set.add(t[1] .. "\0" .. t[2] .. "\0" .. table.concat(names, "\0"),
              { group = t[1], resource = t[2], resource_names = names }, r.verbs, why)
          else
            set.add(t[1] .. "\0" .. t[2], { group = t[1], resource = t[2] }, r.verbs, why)
          end
        end
      end
    end
  end
  local covered, left = {}, {}
  for _, u in ipairs(undetermined) do
    local ok = false
    if u.external then
      ok = declared_any
    elseif next(declared_verbs) then
      ok = true
      for _, v in ipairs(u.verbs or {}) do
        if not (declared_verbs[v] or declared_verbs["*"]) then ok = false end
      end
    end
    if ok then covered[#covered + 1] = u else left[#left + 1] = u end
  end

  table.sort(set.order, function(a, b)
    if a.group ~= b.group then return a.group < b.group end
    if a.resource ~= b.resource then return a.resource < b.resource end
    return table.concat(a.resource_names or {}, ",") < table.concat(b.resource_names or {}, ",")
  end)
  local rules = {}
  for _, e in ipairs(set.order) do
    local why = {}
    for _, w in ipairs(e.why) do why[#why + 1] = table.concat(sort_verbs(w.verbs), ", ") .. ": " .. w.why end
    rules[#rules + 1] = { group = e.group, resource = e.resource, resource_names = e.resource_names,
                          verbs = sort_verbs(e.verbs), why = why }
  end
  return { rules = rules, non_resource_rules = nonres, undetermined = left, covered = covered, plan = plan,
           files = files, external = external }
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
  local o
  if r.non_resource_urls then
    o = om("nonResourceURLs", r.non_resource_urls, "verbs", r.verbs)
  else
    o = om("apiGroups", { r.group }, "resources", { r.resource }, "resourceNames", r.resource_names,
      "verbs", r.verbs)
  end
  o.__comment = r.why
  return o
end

--- Builds everything for script. opts: namespace (as --namespace: a
-- namespaced operator, a Role), image, name, args, cert_manager (as
-- --cert-manager: webhooks' certificates from cert-manager). Returns the YAML text
-- and the rules (M.rules_for's answer: its undetermined are listed in the
-- text's header, granted nothing), or nil, message.
function M.generate(script, opts)
  opts = opts or {}
  local result, err = M.rules_for(script, opts)
  if not result then return nil, err end
  local plan = result.plan
  local shipped = {}
  for _, f in ipairs(result.files) do shipped[#shipped + 1] = { rel = f.name, src = f.src } end
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
  for _, r in ipairs(result.rules) do role_rules[#role_rules + 1] = rule_doc(r) end
  if not namespaced then
    for _, r in ipairs(result.non_resource_rules) do role_rules[#role_rules + 1] = rule_doc(r) end
  end
  for _, r in ipairs(M.EVENT_RULES) do
    local ev = om("apiGroups", { r.group }, "resources", { r.resource }, "verbs", r.verbs)
    ev.__comment = { r.why }
    role_rules[#role_rules + 1] = ev
  end

  local docs = {}
  local sa = om("apiVersion", "v1", "kind", "ServiceAccount", "metadata", meta(name, ns))
  sa.__header = {
    string.format("Generated by `kinformer manifests %s%s`.", script,
      opts.namespace and (" --namespace " .. opts.namespace) or ""),
    "Rules come from the script run in planning mode (plan:, informers and",
    "controllers it registered), from its source and modules' source (source:)",
    "and from the rbac rules it declares (declared:).",
  }
  local function note(u)
    if u.external then
      return "module " .. u.module .. " (" .. u.why .. ") is outside the script's folder: not scanned"
    end
    return (u.name and (u.name .. ": ") or "") .. u.text .. ": " .. (u.reason or "resource not determined")
  end
  if #result.undetermined == 0 and #result.covered == 0 then
    sa.__header[#sa.__header + 1] = "Every client call's resource was determined."
  end
  if #result.covered > 0 then
    sa.__header[#sa.__header + 1] = "Not determined from the source, covered by the declared rules (declared:):"
    for _, u in ipairs(result.covered) do sa.__header[#sa.__header + 1] = "  " .. note(u) end
  end
  if #result.undetermined > 0 then
    sa.__header[#sa.__header + 1] = "NOT DETERMINED (no rule granted; add what they need by hand):"
    for _, u in ipairs(result.undetermined) do sa.__header[#sa.__header + 1] = "  source: " .. note(u) end
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
  if namespaced and #result.non_resource_rules > 0 then
    -- a Role cannot grant non-resource URLs: a ClusterRole of their own
    local nr = {}
    for _, r in ipairs(result.non_resource_rules) do nr[#nr + 1] = rule_doc(r) end
    local nrname = name .. "-non-resource"
    local cr = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", "ClusterRole", "metadata", meta(nrname),
      "rules", nr)
    cr.__header = { "The declared non-resource URLs: a Role cannot grant them." }
    docs[#docs + 1] = cr
    docs[#docs + 1] = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding",
      "metadata", meta(nrname),
      "roleRef", om("apiGroup", "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", nrname),
      "subjects", subj)
  end
  local shards = opts.shards -- --shards N: N replicas sharing the keys (kinformer.sharding)
  local le_name = name .. (shards and "-sharding" or "-leader-election")
  local le = om("apiVersion", "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", meta(le_name, le_ns),
    "rules", { om("apiGroups", { M.LEASE_RULE.group }, "resources", { M.LEASE_RULE.resource },
                  "verbs", shards and { "get", "list", "watch", "create", "update", "delete" }
                    or M.LEASE_RULE.verbs) })
  le.__header = { shards and ("Sharding (--shards auto): each replica's member Lease and the bucket table "
    .. "(Lease " .. name .. "-shards) in namespace " .. le_ns .. ", watched by every replica; a live "
    .. "replica deletes a dead one's member Lease.")
    or ("Leader election (--leader-elect): the Lease in namespace " .. le_ns
    .. (le_opts.name and (" (" .. tostring(le_opts.name) .. ", the script's leader_election.name)") or "") .. ".") }
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
                "--metrics-bind-address", ":" .. metrics_auth.PORT, "--metrics-secure",
                "--health-probe-bind-address", ":8081" }
  if shards then cmd[5], cmd[6] = "--shards", "auto"; table.remove(cmd, 7) end
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
    "ports", { om("name", "metrics", "containerPort", metrics_auth.PORT, "protocol", "TCP"),
               om("name", "health", "containerPort", 8081, "protocol", "TCP") },
    "readinessProbe", probe("/readyz"), "livenessProbe", probe("/healthz"),
    "resources", om("requests", om("cpu", "50m", "memory", "64Mi"), "limits", om("memory", "256Mi")),
    "securityContext", om("allowPrivilegeEscalation", false, "readOnlyRootFilesystem", true,
                          "runAsNonRoot", true, "capabilities", om("drop", { "ALL" })),
    "volumeMounts", { om("name", "script", "mountPath", "/operator", "readOnly", true) })
  local dep = om("apiVersion", "apps/v1", "kind", "Deployment", "metadata", meta(name, ns),
    "spec", om("replicas", shards or 2, "selector", om("matchLabels", selector),
      "template", om(
        "metadata", om("labels", labels, "annotations", om(
          "kinformer.io/script-hash", fnv(table.concat(all, "\0")),
          "prometheus.io/scrape", "true", "prometheus.io/port", tostring(metrics_auth.PORT),
          "prometheus.io/scheme", "https")),
        "spec", om("serviceAccountName", name, "containers", { container },
          "volumes", { om("name", "script", "configMap", om("name", name .. "-script", "items", items)) }))))
  dep.__header = { shards and (shards .. " replicas share the keys and the caches of the controllers' For "
    .. "resources (--shards auto: member Leases in " .. le_ns .. "; see README \"Running sharded\").")
    or ("Two replicas: one leads (a Lease in " .. ns .. "), the other keeps its caches warm."),
    "Metrics on :8443/metrics (HTTPS, TokenReview + SubjectAccessReview), probes on :8081",
    "(/readyz, /healthz, plain HTTP). See docs/security.md." }
  docs[#docs + 1] = dep
  metrics_auth.append(docs, om, meta, name, ns, subj, selector)
  if #(plan.webhooks or {}) > 0 then
    -- the operator installs its configurations at start unless its certificate comes from files
    local configure = mopts.webhook_configure
    if configure == nil then configure = not opts.cert_manager and mopts.webhook_cert_path == nil end
    webhooks.patch_deployment(dep, om, name, opts.cert_manager)
    webhooks.append(docs, om, meta, name, ns, subj, selector, plan.webhooks,
      { cert_manager = opts.cert_manager, service = mopts.webhook_service, configure = configure })
  end
  return M.yaml(docs), result
end

M.usage = [[
usage: kinformer manifests SCRIPT [--namespace NS] [--image IMAGE] [--name NAME]
                          [--allow-undetermined] [--cert-manager] [-- ARGS...]

Prints the YAML to deploy SCRIPT: a ServiceAccount, a ClusterRole (a Role
with --namespace) with the verbs and resources the script's informers,
controllers and client calls need plus events, a leader-election Role for
Leases, their bindings, a ConfigMap with the script and its modules, and a
Deployment (2 replicas, --leader-elect, metrics :8443 over HTTPS behind
TokenReview and SubjectAccessReview, probes :8081), the ClusterRole for
those reviews, a metrics-reader ClusterRole and the metrics Service.
For a script with webhooks (mgr:webhook): the Validating/Mutating
WebhookConfigurations (no caBundle: the operator patches in the CA it makes
at start), the webhook Service (443 -> the pods' 9443), each conversion
CRD's spec.conversion (a comment) and a ClusterRole to patch them;
--cert-manager: cert-manager's Issuer and Certificate instead, its CA
injected (cert-manager.io/inject-ca-from), the Secret mounted for
--webhook-cert-path.
No server is contacted: the script runs in a planning mode.
A client call whose resource cannot be determined and that no declared
rbac rule covers is listed on stderr and fails the command (exit 1, no
YAML); --allow-undetermined prints the YAML anyway (exit 0), without rules
for them.
]]

--- `kinformer manifests` (o: the parsed command line). Returns the exit
-- status: 1 when the script cannot be planned, or when a call's resource is
-- undetermined and not covered by a declared rule (each on stderr, no YAML
-- on stdout) unless o.allow_undetermined (then the YAML, still listing them
-- on stderr, and 0).
function M.main(o)
  local f = io.open(o.script or "", "r")
  if not f then
    io.stderr:write("kinformer: cannot open script ", tostring(o.script), "\n")
    return 1
  end
  f:close()
  local text, result = M.generate(o.script, { namespace = o.namespace, image = o.image, name = o.name,
    args = o.args, cert_manager = o.cert_manager, shards = o.shards and math.tointeger(tonumber(o.shards)) })
  if not text then
    io.stderr:write("kinformer: ", tostring(result), "\n")
    return 1
  end
  local und = result.undetermined
  for _, u in ipairs(und) do io.stderr:write("kinformer: manifests: ", M.describe(u), "\n") end
  if #und > 0 and not o.allow_undetermined then
    local calls, mods = 0, 0
    for _, u in ipairs(und) do if u.external then mods = mods + 1 else calls = calls + 1 end end
    local what = {}
    if calls > 0 then what[#what + 1] = calls .. (calls == 1 and " call" or " calls") end
    if mods > 0 then what[#what + 1] = mods .. (mods == 1 and " module" or " modules") end
    io.stderr:write(string.format("kinformer: manifests: %s not determined: no YAML printed "
      .. "(declare what %s with rbac rules, or pass --allow-undetermined to print the YAML without %s)\n",
      table.concat(what, " and "), #und == 1 and "it needs" or "they need", #und == 1 and "it" or "them"))
    io.stderr:flush()
    return 1
  end
  io.stderr:flush()
  io.stdout:write(text)
  io.stdout:flush()
  return 0
end

return M
