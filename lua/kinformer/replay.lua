--- kinformer.replay: feeds a trace of `kinformer record` through an operator
-- script against kinformer.sim and returns the writes its reconcilers made.
--
--   local writes = require("kinformer.replay").run{
--     trace = "trace.jsonl", script = "examples/website/operator.lua",
--     faults = { { at = 3, fault = "drop_watches" } },
--   }
--   -- writes[i] = {verb=, resource=, namespace=, name=, subresource=, body=}
--
-- How: a kinformer.sim is seeded with the trace's CRDs and LIST items as
-- recorded (restored state, sim:put's rules: each keeps its uid,
-- creationTimestamp, generation, status and managedFields, and the items,
-- seeded in resourceVersion order, their resourceVersions; no
-- control-plane controllers run in it: the trace holds what the recorded
-- cluster's did); the script
-- registers its informers and controllers on a manager against that sim
-- (the real reflector -> DeltaFIFO -> informer -> controller path) and the
-- manager starts. Then each watch event of the trace is put into the sim
-- (M.apply_event, no API request): the change from the object's previous
-- recorded state onto the sim's object, with the recorded identity and
-- resourceVersion. So owner references and uid preconditions hold as in
-- the recorded cluster, the operator's own writes (which the trace
-- records too when it holds its children) are not written again, and an
-- object the replayed operator created takes the recorded identity when
-- the trace's event of that create arrives (see M.apply_event). The
-- sim's write log (sim:write_log_start) keeps every API write; the replay
-- keeps those that are not dry runs, Events or Leases (nor a client with
-- the User-Agent kinformer-replay).
--
-- The clock: the manager runs its controllers on a fake clock
-- (kinformer.manager{clock = "fake"}: their delaying queues and rate
-- limiters), set to the trace's first offset (the earliest offsetMs of its
-- lines) when the script is loaded. Before each event the replay moves
-- that clock to the event's recorded offset in steps: while a controller
-- has a waiting item (a requeue_after, a retry's backoff; ctl:queue())
-- due before the offset, the clock goes to that item's due time and the
-- replay waits until the operator is quiet; then to the offset itself.
-- After the last event it goes on the same way for `tail` seconds
-- (default 1, so that the retries a failure at the last event causes,
-- 5 ms doubling, still run). So a requeue_after of 30 s between two events recorded 60 s
-- apart runs twice, in order, and nothing waits in real time: a replay
-- takes the time its reconciles take plus `settle` per step. A requeue or
-- retry due after the last offset plus tail does not run. The informers
-- (resync, relist backoff), the per-key history and the reconcile_timeout
-- deadlines stay on the real clock.
--
-- Quiet: after each event the replay waits until an informer of the
-- operator on that resource received it (a watch event counted by
-- env:sync_progress(); at most 2 s, since after a fault it may come by a
-- relist), then until the operator is quiet: no controller has a ready or
-- due item, no reconcile runs, and none was counted for `settle` seconds
-- of real time (default 0.1).
--
-- Faults: {at = N, fault = KIND} applies KIND right after the N-th watch
-- event was written (at = 0: before the first), before waiting: KIND is
-- "drop_watches" (every watch closed abruptly: the reflectors relist),
-- "cut_watches", "compact" (history dropped: a resumed watch gets 410) or
-- "fail_next" (the operator's next `count` (1) requests get `code` (500)).
--
-- Writes come out sorted by resource, namespace and name, in the order
-- made per object; bodies lose their volatile fields (metadata
-- resourceVersion, uid, creationTimestamp, generation, managedFields,
-- deletionTimestamp,
-- selfLink, ownerReferences' uids, DeleteOptions preconditions and every
-- last*Time field).
local M = {}

local USER_AGENT = "kinformer-replay"
M.USER_AGENT = USER_AGENT

local VOLATILE_META = { "resourceVersion", "uid", "creationTimestamp", "generation",
                        "managedFields", "selfLink", "deletionTimestamp" }

local function core() return require "kinformer.core" end

--- Reads a trace file. Returns {header =, lists = {LIST lines}, events =
-- {watch events}} or raises with the file and line of a malformed one.
function M.read_trace(path)
  local f = io.open(path, "r")
  if not f then error("replay: cannot open trace " .. tostring(path), 2) end
  local t = { lists = {}, events = {} }
  local n = 0
  for l in f:lines() do
    n = n + 1
    if l:match("%S") then
      local v, err = core().json_decode(l)
      if type(v) ~= "table" then
        f:close()
        error(string.format("replay: %s:%d: not a JSON object (%s)", path, n, tostring(err)), 2)
      end
      if v.kind == "KinformerTrace" then t.header = v
      elseif v.type == "LIST" then t.lists[#t.lists + 1] = v
      elseif v.type == "ADDED" or v.type == "MODIFIED" or v.type == "DELETED" then t.events[#t.events + 1] = v
      end
    end
  end
  f:close()
  if not t.header then error("replay: " .. path .. ": no KinformerTrace header line", 2) end
  return t
end

-- Drops volatile fields of a written body, in place (see the header).
local function normalize(v, depth)
  if type(v) ~= "table" then return v end
  for k, x in pairs(v) do
    if type(k) == "string" and k:match("^last%u%w*Time$") then
      v[k] = nil
    else
      normalize(x, (depth or 0) + 1)
    end
  end
  local m = v.metadata
  if (depth or 0) == 0 and type(m) == "table" then
    for _, k in ipairs(VOLATILE_META) do m[k] = nil end
    for _, ref in ipairs(m.ownerReferences or {}) do ref.uid = nil end
  end
  if (depth or 0) == 0 then v.preconditions = nil end
  return v
end

--- Parses a write log entry ({method, uri, userAgent, body}) into a write
-- {verb, resource, namespace, name, subresource, body}, or nil for one the
-- replay does not keep (its own, a dry run, Events, Leases).
function M.write_of(e)
  if (e.userAgent or ""):sub(1, #USER_AGENT) == USER_AGENT then return nil end
  local path, query = e.uri:match("^([^?]*)%??(.*)$")
  if query:find("dryRun=", 1, true) then return nil end
  local parts = {}
  for p in path:gmatch("[^/]+") do parts[#parts + 1] = p end
  local gv, rest
  if parts[1] == "api" then gv, rest = parts[2], 3 else gv, rest = parts[2] .. "/" .. parts[3], 4 end
  local ns
  if parts[rest] == "namespaces" and parts[rest + 2] then ns, rest = parts[rest + 1], rest + 2 end
  local res, name, sub = parts[rest], parts[rest + 1], parts[rest + 2]
  if res == "events" or gv:match("^coordination%.k8s%.io/") then return nil end
  local body = (e.body and e.body ~= "") and core().json_decode(e.body) or nil
  if type(body) == "table" then normalize(body) else body = nil end
  local verb = ({ POST = "create", PUT = "update", PATCH = "patch", DELETE = "delete" })[e.method]
  if verb == "update" and sub == "status" then verb, sub = "update_status", nil end
  if not name and body and body.metadata then name = body.metadata.name or body.metadata.generateName end
  return { verb = verb, resource = gv .. "/" .. res, namespace = ns, name = name,
           subresource = sub, body = body }
end

-- Whether v is a JSON object (a table that is not an array).
local function is_map(v)
  if type(v) ~= "table" or getmetatable(v) == core().array_mt then return false end
  local n = #v
  return not (n > 0 and next(v, n) == nil)
end

-- Deep equality of decoded JSON values.
local equal = require("kinformer.util.value").equal

local function copy(v) return core().json_decode(core().json_encode(v)) end

-- The JSON merge patch (RFC 7386) that turns object a into object b:
-- members of b that differ (objects recursively, anything else whole),
-- null for members of a that b lacks.
local function merge_diff(a, b)
  local p = {}
  for k, v in pairs(b) do
    local av = a[k]
    if av == nil then p[k] = v
    elseif not equal(av, v) then
      p[k] = (is_map(av) and is_map(v)) and merge_diff(av, v) or v
    end
  end
  for k in pairs(a) do
    if b[k] == nil then p[k] = core().null end
  end
  return p
end

-- Applies merge patch p to t in place (RFC 7386) and returns t.
local function merge_apply(t, p)
  for k, v in pairs(p) do
    if v == core().null then t[k] = nil
    elseif is_map(v) and is_map(t[k]) then merge_apply(t[k], v)
    else t[k] = copy(v) end
  end
  return t
end

-- What an object says beyond its bookkeeping: a copy without the
-- resourceVersion, managedFields and generation, and without last*Time
-- fields anywhere (a condition set again at another time says the same).
local function content(obj)
  local o = copy(obj)
  local m = o.metadata or {}
  m.resourceVersion, m.managedFields, m.generation = nil, nil, nil
  local function drop_times(v)
    if type(v) ~= "table" then return end
    for k, x in pairs(v) do
      if type(k) == "string" and k:match("^last%u%w*Time$") then v[k] = nil else drop_times(x) end
    end
  end
  drop_times(o)
  return o
end

-- The key of a recorded object in the replay's memory of the trace.
local function trace_key(resource, obj)
  local m = obj.metadata or {}
  return resource .. "\0" .. tostring(m.namespace or "") .. "/" .. tostring(m.name)
end

--- Applies one recorded watch event to the sim (sim:put: the recorded
-- identity, resourceVersion and state, no API request). known maps
-- trace_key to the object's last recorded state (false once deleted), and
-- is updated. Returns true (or the resourceVersion written), or nil and a
-- message.
--
-- An object the replayed operator also writes (its children, the status
-- of what it reconciles) exists in the sim with what the operator wrote
-- when the trace's event of the same write arrives. So an event is applied
-- as a change: the difference between the object's previous recorded
-- state and this one (a merge patch) goes onto the sim's object, with the
-- recorded uid, creationTimestamp, resourceVersion and generation. What
-- the operator already wrote the same way changes nothing, and the event
-- is not applied (no watch event, no reconcile) unless the identity
-- differs: an object the replayed operator created (with a uid of the
-- sim) takes the recorded identity (matched by kind, namespace and name)
-- when the trace's event of its create arrives. What others changed (a
-- user, another controller) is applied on top of what the operator
-- wrote; a field the recorded changes never touch stays as the replayed
-- operator wrote it (so a label a new version adds is not dropped by the
-- old version's recorded writes; a field both write takes the recorded
-- value, and the new version writes it again). A MODIFIED of an object
-- the sim no longer has, after the trace had it, is not applied: the
-- replayed operator deleted it (it is not brought back). DELETED removes
-- the object when present, or, when the sim's object has finalizers and
-- is not marked yet (a trace recorded without the operator, whose
-- finalizer the replay's operator added), marks it deleted as a delete
-- request does, so that the finalizer still runs. Objects are
-- matched by resource, namespace and name: one the operator names with
-- generateName is not.
function M.apply_event(sim, ev, known)
  local obj = ev.object
  if type(obj) ~= "table" or type(obj.metadata) ~= "table" then return nil, "no object" end
  local m = obj.metadata
  local k = trace_key(ev.resource, obj)
  local prev = known[k]
  if ev.type == "DELETED" then
    known[k] = false
    return sim:put(obj, { deleted = true })
  end
  known[k] = obj
  local cur = sim:get(obj.apiVersion, obj.kind, m.namespace, m.name)
  if cur == nil then
    if ev.type == "MODIFIED" and prev then return true end
    return sim:put(obj)
  end
  local want = merge_apply(copy(cur), merge_diff(prev or {}, obj))
  want.metadata = want.metadata or {}
  for _, f in ipairs({ "uid", "creationTimestamp", "resourceVersion", "generation" }) do
    want.metadata[f] = m[f]
  end
  if equal(content(want), content(cur)) then return true end
  return sim:put(want)
end

--- Sorts the watch events of a trace (in place) into the order the server
-- committed them: by resourceVersion, when every event has a numeric one
-- (one server's: etcd revisions, the sim's counter), else they stay as
-- recorded. The recorder's watches of different resources deliver at
-- their own pace, so an object the operator created can be recorded
-- before the change of its owner that made the operator create it; in
-- commit order the cause comes first. A DELETED event may carry its
-- object's last known state (a deletion seen by a relist), older than the
-- deletion: it sorts no earlier than the events recorded before it. The
-- stable order keeps the recorded one among equals. Returns events.
function M.commit_order(events)
  local keys, at, high = {}, {}, -1
  for i, ev in ipairs(events) do
    local m = type(ev.object) == "table" and ev.object.metadata
    local rv = type(m) == "table" and type(m.resourceVersion) == "string" and m.resourceVersion:match("^%d+$")
      and tonumber(m.resourceVersion)
    if not rv then return events end
    if ev.type == "DELETED" and rv < high then rv = high end
    if rv > high then high = rv end
    keys[ev], at[ev] = rv, i
  end
  table.sort(events, function(a, b)
    if keys[a] ~= keys[b] then return keys[a] < keys[b] end
    return at[a] < at[b]
  end)
  return events
end

local FAULTS = { -- M.FAULTS
  drop_watches = function(sim) sim:fault{ kind = "drop" } end,
  cut_watches = function(sim) sim:fault{ kind = "cut" } end,
  compact = function(sim) sim:fault{ kind = "compact" } end,
  fail_next = function(sim, f) sim:fault{ kind = "fail", code = f.code or 500, count = f.count or 1 } end,
}

local function controllers(mgr)
  return mgr:controllers()
end

-- Steps the manager until its controllers are quiet for settle seconds
-- (nothing ready, nothing waiting that is due on the fake clock, nothing
-- running, no new reconcile); raises after timeout.
local function wait_quiet(mgr, settle, timeout)
  local c = core()
  local deadline = c.monotime() + timeout
  local last_sig, quiet_since = nil, nil
  while true do
    mgr.env:step(0.01)
    local sig, busy = {}, false
    for _, ctl in ipairs(controllers(mgr)) do
      local st = ctl:stats()
      sig[#sig + 1] = tostring(st.reconcile_time_count) .. "/" .. tostring(st.active_workers)
      if ctl:queue_len() > 0 or #ctl:busy() > 0 then busy = true end
      -- due but not yet handed over by the queue's waiting thread
      local _, due = ctl:queue()
      if due and due <= 0 then busy = true end
    end
    local s = table.concat(sig, ",")
    local now = c.monotime()
    if busy or s ~= last_sig then
      last_sig, quiet_since = s, now
    elseif now - quiet_since >= settle then
      return
    end
    if now > deadline then error("replay: the operator did not settle within " .. timeout .. " s", 0) end
  end
end

-- Nanoseconds as an integer, from seconds (the clock API's unit).
local function ns(seconds) return math.floor(seconds * 1e9 + 0.5) end

-- Advances the manager's fake clock to target_ns, stopping at each earlier
-- due time of a waiting item of its controllers (waiting until quiet after
-- each step, so what fired may queue the next one before the clock moves
-- on). Integer nanoseconds, so the steps land exactly.
local function advance_to(mgr, target_ns, settle, timeout)
  while true do
    local now = ns(mgr:clock_now())
    if now >= target_ns then return end
    local to = target_ns
    for _, ctl in ipairs(controllers(mgr)) do
      local _, due = ctl:queue()
      if due and now + ns(due) < to then to = now + ns(due) end
    end
    mgr:clock_advance((to - now) / 1e9)
    wait_quiet(mgr, settle, timeout)
  end
end

-- The watch events the operator's informers of resource received so far,
-- or nil when it has none (env:sync_progress()).
local function watch_events(mgr, resource)
  local n, found = 0, false
  for _, p in ipairs(mgr.env:sync_progress()) do
    if p.resource == resource then n, found = n + (p.watch_events or 0), true end
  end
  return found and n or nil
end

-- Steps the manager until an informer of resource received a watch event
-- past before, or for 2 s at most (after a fault the change may come
-- through a relist instead).
local function wait_seen(mgr, resource, before)
  local deadline = core().monotime() + 2
  while (watch_events(mgr, resource) or 0) <= before and core().monotime() < deadline do
    mgr.env:step(0.005)
  end
end

local function stable_sort(writes)
  for i, w in ipairs(writes) do w._i = i end
  table.sort(writes, function(a, b)
    local ka = a.resource .. "\0" .. (a.namespace or "") .. "\0" .. (a.name or "")
    local kb = b.resource .. "\0" .. (b.namespace or "") .. "\0" .. (b.name or "")
    if ka ~= kb then return ka < kb end
    return a._i < b._i
  end)
  for _, w in ipairs(writes) do w._i = nil end
  return writes
end

local function check_opts(opts)
  if type(opts) ~= "table" then error("replay.run: a table {trace =, script =} expected", 3) end
  local known = { trace = true, script = true, faults = true, namespace = true, settle = true,
                  timeout = true, args = true, tail = true, user = true }
  for k in pairs(opts) do
    if not known[k] then error("replay.run: unknown option " .. tostring(k), 3) end
  end
  if type(opts.trace) ~= "string" then error("replay.run: trace (a file name) expected", 3) end
  if type(opts.script) ~= "string" then error("replay.run: script (a file name) expected", 3) end
  if opts.user ~= nil and (type(opts.user) ~= "string" or opts.user == "") then
    error("replay.run: user must be a non-empty string", 3)
  end
  for _, k in ipairs({ "settle", "timeout", "tail" }) do
    if opts[k] ~= nil and (type(opts[k]) ~= "number" or opts[k] < 0 or opts[k] ~= opts[k]) then
      error("replay.run: " .. k .. " must be a number of seconds >= 0", 3)
    end
  end
  for i, f in ipairs(opts.faults or {}) do
    if type(f) ~= "table" or math.type(f.at) ~= "integer" or f.at < 0 or not FAULTS[f.fault] then
      error("replay.run: faults[" .. i .. "] must be {at = N >= 0, fault = drop_watches|cut_watches|compact|fail_next}", 3)
    end
  end
end

--- Replays opts.trace through opts.script (see the header). opts: trace,
-- script (file names), faults ({ {at =, fault =, code =, count =} }),
-- namespace (the manager's; default: the trace's --namespace), settle
-- (seconds of real time without a reconcile that count as quiet, default
-- 0.1), timeout (seconds an event or a clock step may take to settle,
-- default 30), tail (seconds the fake clock runs on after the last event,
-- default 1), args (the script's opts.args), user (the operator connects
-- as this user, with a token of the sim's, and the requests it made are
-- returned too: kinformer manifests --observe). Returns the writes (an
-- array), and with user the sim's request log entries of that user
-- (sim:request_log_take's, in order); misuse
-- raises; a failure (a script that does not load, an event the sim
-- rejects) raises with its message.
function M.run(opts)
  check_opts(opts)
  local c = core()
  local trace = M.read_trace(opts.trace)
  M.commit_order(trace.events)
  local settle, timeout = opts.settle or 0.1, opts.timeout or 30
  -- recorded offsets in ms: the fake clock starts at the first one; an
  -- event without one keeps the previous event's
  local first_ms, at_ms, last = nil, {}, nil
  for _, l in ipairs(trace.lists) do
    if math.type(l.offsetMs) and (not first_ms or l.offsetMs < first_ms) then first_ms = l.offsetMs end
  end
  for i, ev in ipairs(trace.events) do
    last = math.type(ev.offsetMs) and ev.offsetMs or last or first_ms or 0
    at_ms[i] = last
    if not first_ms or last < first_ms then first_ms = last end
  end
  first_ms = first_ms or 0
  local bootstrap = require "kinformer.bootstrap"
  if not bootstrap.file_exists(opts.script) then error("replay: cannot open script " .. opts.script, 2) end

  -- the seed (kept as recorded: uids, timestamps, resourceVersions; see
  -- sim:put): CRDs first (under the sim's next resourceVersions), then
  -- every listed object in resourceVersion order, so that each keeps its own
  local seed = os.tmpname()
  local sf = assert(io.open(seed, "w"))
  for _, crd in ipairs(trace.header.crds or {}) do
    local o = copy(crd)
    if type(o.metadata) == "table" then o.metadata.resourceVersion = nil end
    o.apiVersion, o.kind = o.apiVersion or "apiextensions.k8s.io/v1", o.kind or "CustomResourceDefinition"
    sf:write(c.json_encode(o), "\n")
  end
  local known, items = {}, {}
  for _, l in ipairs(trace.lists) do
    for _, item in ipairs(l.items or {}) do
      items[#items + 1] = item
      if type(item.metadata) == "table" then known[trace_key(l.resource, item)] = item end
    end
  end
  local function rv_of(o) return tonumber(type(o.metadata) == "table" and o.metadata.resourceVersion) or -1 end
  for i, item in ipairs(items) do item._i = i end
  table.sort(items, function(a, b)
    if rv_of(a) ~= rv_of(b) then return rv_of(a) < rv_of(b) end
    return a._i < b._i
  end)
  for _, item in ipairs(items) do
    item._i = nil
    sf:write(c.json_encode(item), "\n")
  end
  sf:close()
  -- a bare API server: the trace holds what the recorded cluster's
  -- controllers did (their deletions, statuses, the objects they made)
  local sim, serr, scode = require("kinformer.sim").start{ seed = seed, controllers = "none" }
  os.remove(seed)
  if not sim then error("replay: cannot start kinformer.sim: " .. tostring(serr) .. " (" .. tostring(scode) .. ")", 2) end
  sim:write_log_start()
  local mopts, by_sim = { clock = "fake" }, sim
  if opts.user then
    mopts.url, mopts.token, by_sim = sim.url, sim:token(opts.user), nil
    sim:request_log_start()
  end
  local mgr, session
  local ok, writes_or_err = pcall(function()
    local base_ns, at
    local lerr
    session, lerr = bootstrap.load{
      script = opts.script, sim = by_sim, namespace = opts.namespace or trace.header.namespace,
      args = opts.args, manager = mopts,
      on_manager = function(m)
        base_ns = ns(m:clock_now()) -- the clock reads the first offset from here on
        m:clock_advance(math.max(first_ms, 0) / 1000)
      end,
    }
    if not session then error("replay: " .. tostring(lerr), 0) end
    mgr = session.mgr
    function at(ms) return base_ns + math.max(ms, 0) * 1000000 end
    local started, sterr = mgr:start()
    if not started then error("replay: " .. tostring(sterr), 0) end
    local faults_at = {}
    for _, f in ipairs(opts.faults or {}) do
      faults_at[f.at] = faults_at[f.at] or {}
      table.insert(faults_at[f.at], f)
    end
    local function faults(n)
      for _, f in ipairs(faults_at[n] or {}) do FAULTS[f.fault](sim, f) end
    end
    faults(0)
    wait_quiet(mgr, settle, timeout)
    for i, ev in ipairs(trace.events) do
      advance_to(mgr, at(at_ms[i]), settle, timeout)
      local before, rv0 = watch_events(mgr, ev.resource), sim:resource_version()
      local aok, aerr = M.apply_event(sim, ev, known)
      if not aok then
        error(string.format("replay: event %d (%s %s %s): %s", i, ev.type, ev.resource,
          tostring(ev.object.metadata and ev.object.metadata.name), tostring(aerr)), 0)
      end
      faults(i)
      if before and sim:resource_version() ~= rv0 then wait_seen(mgr, ev.resource, before) end
      wait_quiet(mgr, settle, timeout)
    end
    advance_to(mgr, at(at_ms[#at_ms] or first_ms) + ns(opts.tail or 1), settle, timeout)
    local log = assert(sim:write_log_take())
    local writes = {}
    for _, e in ipairs(c.json_decode(log)) do
      local w = M.write_of(e)
      if w then writes[#writes + 1] = w end
    end
    return stable_sort(writes)
  end)
  if mgr then pcall(mgr.stop, mgr) end
  local requests
  if ok and opts.user then
    requests = {}
    for _, e in ipairs(assert(sim:request_log_take())) do
      if e.user == opts.user then requests[#requests + 1] = e end
    end
  end
  sim:stop()
  if not ok then error(writes_or_err, 0) end
  return writes_or_err, requests
end

M.wait_quiet = wait_quiet

--- The writes as text: indented JSON with sorted keys (kinformer.dump).
function M.format(writes)
  local arr = setmetatable({}, core().array_mt)
  for i, w in ipairs(writes) do arr[i] = w end
  return (require("kinformer").dump(arr)) .. "\n"
end

--- The distinct writes of a list (a set, sorted by their text): what two
-- replays that differ only in repeated writes share.
function M.set(writes)
  local seen, out = {}, {}
  for _, w in ipairs(writes) do
    local k = M.format({ w })
    if not seen[k] then seen[k] = true out[#out + 1] = w end
  end
  table.sort(out, function(a, b) return M.format({ a }) < M.format({ b }) end)
  return out
end

M.FAULTS = FAULTS

return M
