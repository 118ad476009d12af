--- kinformer.cmd.observe: `kinformer manifests SCRIPT --observe`, the RBAC
-- rules an operator needs read off what it did, as audit2rbac reads
-- kube-apiserver's audit log. The script runs against an in-process
-- kinformer.sim as its own user (a token of the sim's), driven by one of:
--   --seed FILE      objects loaded first (kinformer.sim's seed);
--   --drive FILE     a Lua script called, once the caches synced, with a
--                    driver (a table: client = a client of another user,
--                    sim =, mgr = the operator's manager, wait = fn(pred
--                    [, timeout]) pumping the manager until pred() is true,
--                    settle = fn() waiting until the controllers are quiet)
--                    that creates, changes and deletes what the operator
--                    should react to;
--   --trace FILE     a `kinformer record` trace replayed through it
--                    (kinformer.replay, the operator as the user);
-- and for --duration S more (default 1) until its controllers are quiet.
-- Every request the sim logged for that user (sim:request_log_take) is
-- an RBAC attribute set; the rules are their (apiGroup, resource
-- [/subresource]) with the verbs used. Non-resource requests (discovery,
-- /version, /openapi) are left out: every authenticated user may make them
-- (the system:discovery and system:public-info-viewer roles). A patch that
-- created its object (a server-side apply answered 201) counts as create
-- too, as kube-apiserver authorizes it. What admission plugins check
-- besides (OwnerReferencesPermissionEnforcement's update on the owner's
-- finalizers when blockOwnerDeletion is set) is not a request and not
-- seen here; the derived rules have it.
--
-- The result is printed beside the rules `kinformer manifests` derives
-- from the script (kinformer.cmd.manifests.rules_for), each verb marked:
--   =  derived and used
--   +  used, but the derived rules do not grant it (the printed RBAC would
--      refuse the request: a bug of the scanner or a call it cannot see)
--   -  derived, not used in this run (the run did not exercise it)
-- Exit status 0 when nothing is marked +, 1 otherwise.
local M = {}

--- The user the operator runs as.
M.USER = "system:serviceaccount:kinformer-observe:operator"

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

--- Rules from request log entries: a list of {group =, resource =,
-- verbs = {verb = true}, count = n} sorted by group and resource; the
-- entries of other users and non-resource requests are skipped.
function M.rules_of(entries, user)
  local by, out = {}, {}
  for _, e in ipairs(entries) do
    if (user == nil or e.user == user) and e.resource and e.verb and e.verb ~= "" then
      local res = e.resource .. (e.subresource and ("/" .. e.subresource) or "")
      local key = (e.apiGroup or "") .. " " .. res
      local r = by[key]
      if not r then
        r = { group = e.apiGroup or "", resource = res, verbs = {}, count = 0 }
        by[key] = r
        out[#out + 1] = r
      end
      r.verbs[e.verb] = true
      -- an apply that made the object (201) is authorized as create too
      if e.verb == "patch" and e.code == 201 then r.verbs.create = true end
      r.count = r.count + 1
    end
  end
  table.sort(out, function(a, b)
    if a.group ~= b.group then return a.group < b.group end
    return a.resource < b.resource
  end)
  return out
end

-- Whether rules (a list of {group, resource, verbs = list or set}) grant
-- verb on group/resource ("*" wildcards too).
local function grants(rules, group, resource, verb)
  for _, r in ipairs(rules) do
    local gs = r.groups or { r.group }
    local group_ok, res_ok, verb_ok = false, false, false
    for _, g in ipairs(gs) do if g == group or g == "*" or group == "*" then group_ok = true end end
    local rs = r.resources or { r.resource }
    for _, x in ipairs(rs) do if x == resource or x == "*" or resource == "*" then res_ok = true end end
    if r.verbs[verb] or r.verbs["*"] or verb == "*" then verb_ok = true end
    for _, v in ipairs(r.verbs) do if v == verb or v == "*" then verb_ok = true end end
    if group_ok and res_ok and verb_ok then return true end
  end
  return false
end
M.grants = grants

local VERB_ORDER = { "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection" }

-- The verbs of a set or list, in RBAC order (others after, sorted).
local function verb_list(v)
  local set = {}
  for k, x in pairs(v) do
    if type(k) == "number" then set[x] = true else set[k] = true end
  end
  local out, seen = {}, {}
  for _, x in ipairs(VERB_ORDER) do if set[x] then out[#out + 1] = x; seen[x] = true end end
  local rest = {}
  for x in pairs(set) do if not seen[x] then rest[#rest + 1] = x end end
  table.sort(rest)
  for _, x in ipairs(rest) do out[#out + 1] = x end
  return out
end

--- Compares observed rules (M.rules_of) with derived ones ({group,
-- resource, verbs = {...}}). Returns the report's lines and the number of
-- verbs used but not granted.
function M.compare(observed, derived)
  local lines, missing, unused = {}, 0, 0
  local keys, rows = {}, {}
  local function row(group, resource)
    local k = group .. " " .. resource
    if not rows[k] then
      rows[k] = { group = group, resource = resource, marks = {} }
      keys[#keys + 1] = k
    end
    return rows[k]
  end
  for _, o in ipairs(observed) do
    local r = row(o.group, o.resource)
    for _, v in ipairs(verb_list(o.verbs)) do
      if grants(derived, o.group, o.resource, v) then
        r.marks[#r.marks + 1] = "=" .. v
      else
        r.marks[#r.marks + 1] = "+" .. v
        missing = missing + 1
      end
    end
  end
  for _, d in ipairs(derived) do
    for _, res in ipairs(d.resources or { d.resource }) do
      for _, g in ipairs(d.groups or { d.group }) do
        for _, v in ipairs(verb_list(d.verbs)) do
          if not grants(observed, g, res, v) then
            local r = row(g, res)
            r.marks[#r.marks + 1] = "-" .. v
            unused = unused + 1
          end
        end
      end
    end
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local r = rows[k]
    local label = (r.group == "" and "core" or r.group) .. " " .. r.resource
    lines[#lines + 1] = string.format("%-44s %s", label, table.concat(r.marks, " "))
  end
  return lines, missing, unused
end

--- Runs script as M.USER against a sim (opts: seed, drive, trace,
-- duration, namespace, args, sync_timeout) and returns its rules
-- (M.rules_of) and the number of requests, or nil, message.
function M.observe(script, opts)
  opts = opts or {}
  if opts.trace then
    local ok, writes, requests = pcall(require("kinformer.replay").run, {
      trace = opts.trace, script = script, namespace = opts.namespace, args = opts.args, user = M.USER,
      tail = opts.duration })
    if not ok then return nil, tostring(writes) end
    return M.rules_of(requests, M.USER), #requests
  end
  local bootstrap = require "kinformer.bootstrap"
  if opts.seed and not bootstrap.file_exists(opts.seed) then return nil, "cannot open seed file " .. opts.seed end
  local drive
  if opts.drive then
    local err
    drive, err = loadfile(opts.drive)
    if not drive then return nil, "cannot load the drive script: " .. tostring(err) end
  end
  local sim, msg, code = require("kinformer.sim").start{ seed = opts.seed }
  if not sim then return nil, string.format("cannot start kinformer.sim: %s (%s)", tostring(msg), tostring(code)) end
  sim:request_log_start()
  local s, err = bootstrap.load{
    script = script, namespace = opts.namespace, args = opts.args,
    manager = { url = sim.url, token = sim:token(M.USER), sync_timeout = opts.sync_timeout },
  }
  if not s then
    sim:stop()
    return nil, err
  end
  local mgr = s.mgr
  local replay = require "kinformer.replay"
  local ok, rerr = pcall(function()
    local started, serr = mgr:start{ timeout = opts.sync_timeout }
    if not started then error(serr, 0) end
    if drive then
      local driver = require("kinformer").manager{ sim = sim }
      local d = {
        client = driver.client, sim = sim, mgr = mgr,
        wait = function(pred, timeout) return mgr:wait_for(pred, timeout) end,
        settle = function() replay.wait_quiet(mgr, 0.2, 30) end,
      }
      local dok, derr = xpcall(drive, debug.traceback, d)
      driver:stop()
      if not dok then error("the drive script failed: " .. tostring(derr), 0) end
    end
    local core = require "kinformer.core"
    local until_t = core.monotime() + (opts.duration or 1)
    while core.monotime() < until_t do mgr:step(0.05) end
    replay.wait_quiet(mgr, 0.2, 30)
  end)
  s:close()
  local entries = sim:request_log_take() or {}
  sim:stop()
  if not ok then return nil, tostring(rerr) end
  local mine = 0
  for _, e in ipairs(entries) do if e.user == M.USER then mine = mine + 1 end end
  return M.rules_of(entries, M.USER), mine
end

--- `kinformer manifests SCRIPT --observe ...` (o: kinformer.cmd.cli's
-- table). Prints the comparison; returns the exit status.
function M.main(o)
  require("kinformer.core").set_log_level(o.verbose and "debug" or "warn")
  local manifests = require "kinformer.cmd.manifests"
  local r, derr = manifests.rules_for(o.script, { namespace = o.namespace, args = o.args })
  if not r then
    stderr("kinformer: %s\n", tostring(derr))
    return 1
  end
  -- what the printed documents grant: the derived rules, Events and the Lease
  local derived = {}
  for _, x in ipairs(r.rules) do derived[#derived + 1] = x end
  for _, x in ipairs(manifests.EVENT_RULES) do derived[#derived + 1] = x end
  derived[#derived + 1] = manifests.LEASE_RULE
  -- the webhook ClusterRole: the install of the configurations at start
  local hooks = r.plan.webhooks or {}
  if #hooks > 0 then
    for _, x in ipairs(require("kinformer.cmd.manifests_webhook").rules(r.plan.name or "", hooks)) do
      derived[#derived + 1] = { groups = x.apiGroups, resources = x.resources, verbs = x.verbs }
    end
  end
  if #r.undetermined > 0 then
    for _, item in ipairs(r.undetermined) do stderr("kinformer: manifests: %s\n", manifests.describe(item)) end
    stderr("kinformer: --observe: %d calls not determined: the derived rules grant them nothing\n", #r.undetermined)
  end
  local observed, n = M.observe(o.script, { seed = o.seed, drive = o.drive, trace = o.trace,
    duration = o.duration, namespace = o.namespace, args = o.args, sync_timeout = o.sync_timeout })
  if not observed then
    stderr("kinformer: --observe: %s\n", tostring(n))
    return 1
  end
  local lines, missing, unused = M.compare(observed, derived)
  local out = {
    string.format("# kinformer manifests --observe %s: %d requests as %s against kinformer.sim", o.script, n,
      M.USER),
    "# = derived and used   + used but not granted by the derived rules   - derived, not used in this run",
  }
  for _, l in ipairs(lines) do out[#out + 1] = l end
  out[#out + 1] = string.format("observe: %d verb%s used and not granted, %d granted and not used", missing,
    missing == 1 and "" or "s", unused)
  io.stdout:write(table.concat(out, "\n"), "\n")
  io.stdout:flush()
  return missing == 0 and 0 or 1
end

return M
