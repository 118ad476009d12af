--- kinformer.cmd.record: `kinformer record -o trace.jsonl RESOURCE...`, which
-- saves what informers of a live cluster see, with its timing, for
-- kinformer.replay.
--
-- The trace is JSON Lines:
--   {"kind":"KinformerTrace","version":1,"start":"<RFC 3339>","resources":[...],
--    "server":<the server's /version: gitVersion, ...>,
--    "namespace":"ns"|null,"crds":[<CRD objects serving the resources>]}
--   {"type":"LIST","resource":"v1/configmaps","offsetMs":N,
--    "resourceVersion":"<highest of the items>","items":[...]}        (one per resource)
--   {"type":"ADDED"|"MODIFIED"|"DELETED","resource":...,"offsetMs":N,"object":{...}}
-- offsetMs counts from the start. Objects are the server's JSON as the
-- informer cached it, managedFields included (keep_managed_fields). The
-- LIST line holds the cache at sync time; its resourceVersion is the
-- highest of its items' (the informers do not expose the list's own).
-- The watch events come through the real reflector and informer, so a
-- relist after a dropped watch shows as the events it implies.
local M = {}

local argv_lib = require "kinformer.cmd.argv"
local argv_walk, positive = argv_lib.walk, argv_lib.positive

M.usage = [[
usage: kinformer record -o TRACE [--duration S] [--kubeconfig FILE] [--context NAME]
                        [--namespace NS] [-q|-v] RESOURCE...

Records the LIST and watch events of each RESOURCE ("v1/configmaps",
"apps/v1/deployments", "example.kinformer.io/v1/websites") with their
offsets in ms into TRACE (JSON Lines), until SIGINT/SIGTERM or --duration
seconds. Replay it with `kinformer replay TRACE SCRIPT`.
]]

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

--- Parses argv (argv[1] == "record"). Returns a table {output =, duration =,
-- kubeconfig =, context =, namespace =, quiet =, verbose =, resources = {}}
-- or nil, message (a usage error).
function M.parse(argv)
  local o = { resources = {} }
  local ok, err = argv_walk(argv, 2, function(a, value, usage)
    if a == "-o" or a == "--output" then o.output = value()
    elseif a == "--duration" then o.duration = positive(a, value, usage, "number of seconds")
    elseif a == "--kubeconfig" then o.kubeconfig = value()
    elseif a == "--context" then o.context = value()
    elseif a == "--namespace" or a == "-n" then o.namespace = value()
    elseif a == "-q" or a == "--quiet" then o.quiet = true
    elseif a == "-v" or a == "--verbose" then o.verbose = true
    elseif a == "-h" or a == "--help" then o.help = true
    elseif a:sub(1, 1) == "-" then usage("unknown option " .. a)
    else o.resources[#o.resources + 1] = a end
  end)
  if not ok then return nil, err end
  if o.help then return o end
  if not o.output then return nil, "record needs -o TRACE" end
  if #o.resources == 0 then return nil, "record needs at least one RESOURCE" end
  return o
end

-- The CRD serving resource ("group/version/plural"), or nil for a built-in.
local function crd_of(client, resource)
  local group, plural = resource:match("^([^/]+)/[^/]+/([^/]+)$")
  if not group or not group:find("%.") or group:find("%.k8s%.io$") then return nil end
  local crd = client:get("apiextensions.k8s.io/v1/customresourcedefinitions", nil, plural .. "." .. group)
  return crd
end

local function rv_num(obj)
  local m = type(obj) == "table" and obj.metadata
  return tonumber(m and m.resourceVersion) or 0
end

local function key_of(obj)
  local m = obj.metadata or {}
  return (m.namespace and m.namespace ~= "" and (m.namespace .. "/") or "") .. tostring(m.name)
end

--- Records per o (M.parse's table). Returns the exit status.
function M.run(o)
  local core = require "kinformer.core"
  local kinformer = require "kinformer"
  core.set_log_level(o.verbose and "debug" or o.quiet and "warn" or "info")
  local out, ferr = io.open(o.output, "w")
  if not out then stderr("kinformer: cannot write %s\n", ferr) return 1 end
  core.block_signals()
  local mgr, msg = kinformer.manager{ kubeconfig = o.kubeconfig, context = o.context, namespace = o.namespace }
  if not mgr then stderr("kinformer: cannot create the manager: %s\n", tostring(msg)) return 1 end
  local t0 = core.monotime()
  local function offset() return math.floor((core.monotime() - t0) * 1000 + 0.5) end
  local pending, informers, crds = {}, {}, {}
  for _, res in ipairs(o.resources) do
    local inf, ierr = mgr:informer(res, { keep_managed_fields = true })
    if not inf then
      mgr:stop()
      stderr("kinformer: %s: %s\n", res, tostring(ierr))
      return 1
    end
    informers[#informers + 1] = { resource = res, inf = inf }
    local function push(t, obj)
      if type(obj) == "table" and obj.object ~= nil and obj.key ~= nil and obj.metadata == nil then
        obj = obj.object -- a tombstone: its last known state
      end
      pending[#pending + 1] = { type = t, resource = res, offsetMs = offset(), object = obj }
    end
    inf:add_handler({
      on_add = function(obj) push("ADDED", obj) end,
      on_update = function(_, new) push("MODIFIED", new) end,
      on_delete = function(obj) push("DELETED", obj) end,
    }, { main = true })
    local crd = crd_of(mgr.client, res)
    if crd then crds[#crds + 1] = crd end
  end
  local ok, started, serr = pcall(mgr.start, mgr)
  if not ok or not started then
    pcall(mgr.stop, mgr)
    stderr("kinformer: %s\n", tostring(ok and serr or started))
    return 1
  end
  local function line(t) out:write(core.json_encode(t), "\n") end
  local server = mgr.client:server_version()
  line{ kind = "KinformerTrace", version = 1, start = os.date("!%Y-%m-%dT%H:%M:%SZ"),
        server = server, resources = o.resources, namespace = o.namespace, crds = crds }
  -- the LIST lines: the caches now; the initial adds already queued for
  -- these objects are not events
  local listed = {}
  for _, it in ipairs(informers) do
    local items, maxrv = it.inf:list(), 0
    local seen = {}
    for _, obj in ipairs(items) do
      seen[key_of(obj)] = rv_num(obj)
      if rv_num(obj) > maxrv then maxrv = rv_num(obj) end
    end
    listed[it.resource] = seen
    line{ type = "LIST", resource = it.resource, offsetMs = offset(),
          resourceVersion = tostring(maxrv), items = items }
  end
  local nevents = 0
  local function flush()
    for _, e in ipairs(pending) do
      local seen = listed[e.resource]
      local k = key_of(e.object)
      if e.type == "ADDED" and seen[k] and seen[k] >= rv_num(e.object) then
        seen[k] = nil -- an initial add of a listed object
      else
        seen[k] = nil
        line(e)
        nevents = nevents + 1
      end
    end
    pending = {}
    out:flush()
  end
  if not o.quiet then
    stderr("kinformer: recording %s to %s (%s)\n", table.concat(o.resources, ", "), o.output,
      o.duration and (o.duration .. " s") or "SIGINT or SIGTERM stops")
  end
  while true do
    mgr.env:step(0.05)
    flush()
    if mgr.env:wait_signal(0) then break end
    if o.duration and core.monotime() - t0 >= o.duration then break end
  end
  pcall(mgr.stop, mgr)
  flush()
  out:close()
  if not o.quiet then stderr("kinformer: recorded %d events to %s\n", nevents, o.output) end
  return 0
end

--- Entry point for `kinformer record ...` (argv as `arg`). Returns the exit status.
function M.main(argv)
  local o, err = M.parse(argv)
  if not o then
    stderr("kinformer: %s\n%s", err, M.usage)
    return 2
  end
  if o.help then io.stdout:write(M.usage) return 0 end
  return M.run(o)
end

return M
