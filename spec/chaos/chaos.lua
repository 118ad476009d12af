-- The chaos run (issue 17, "Chaos in CI"): seeded random writers over a few
-- hundred ConfigMaps in a few namespaces, against a manager that has an
-- informer (with main-state handlers) and a controller (3 workers) on them,
-- while faults are injected at random points: the sim's (drop, cut,
-- malformed line, stall, 410 by compaction + drop, 429/500/503, restart)
-- and the fault proxy's (pause then resume, cut), the proxy sitting
-- between the manager and the server. Once the writers stop and the faults
-- clear it checks, until they hold or M.CONVERGE_TIMEOUT (90 s) passes:
--   * the informer's cache equals a fresh LIST (keys and resourceVersions),
--   * so does the state the handlers built from on_add/on_update/on_delete,
--     and every object deleted on the server (and not re-created) whose
--     add a handler saw reached on_delete,
--   * no key was reconciled by two workers at once (each reconcile appends
--     "S key" and "E key" to a shared log file, O_APPEND, one write(2) per
--     line; M.overlaps reads it back),
-- and the controller's queue drained.
--
-- All of the choices (which write, which object, which fault, how long)
-- come from one xorshift32 generator seeded by the seed: a seed replays
-- the same schedule (the timing of the server and of the faults' effects
-- still varies).
--
-- Against kube-apiserver (target = a kubeconfig, `make e2e`) only the
-- proxy's faults apply; its cut is the watch drop (over HTTP/2 every watch
-- shares the one connection).
--
-- As a module (LUA_PATH with spec/?.lua): require("chaos.chaos").run{seed =,
-- seconds =, kubeconfig = (nil: a sim started here), proxy = path of
-- kin-fault-proxy} returns the summary table or raises with what diverged.
-- As a script:
--   lua5.4 spec/chaos/chaos.lua SEED SECONDS [KUBECONFIG]
-- prints one summary line, and exits 1 with the divergence on stderr.
local kinformer = require "kinformer"
local core = kinformer.core

local M = {}

M.NAMES = 300         -- objects per run, over the namespaces
M.NAMESPACES = 3
-- After a burst of failures the reflector waits as client-go's does
-- (800 ms doubling to a 30 s cap, jitter up to 100 %, reset after 2 min
-- without a failure): up to 60 s before its next round. So a correct
-- informer may take that long to catch up once the faults clear.
M.CONVERGE_TIMEOUT = 90
M.FAULT_EVERY = 120   -- one fault per this many writes on average

--- A xorshift32 generator: r(n) is in 0..n-1.
function M.rng(seed)
  local x = math.tointeger(seed) & 0xffffffff
  if x == 0 then x = 0x9e3779b9 end
  return function(n)
    x = x ~ ((x << 13) & 0xffffffff)
    x = x ~ (x >> 17)
    x = x ~ ((x << 5) & 0xffffffff)
    return x % n
  end
end

--- Reads the reconcile log (lines "S key" / "E key" in the order they were
-- written) and returns the list of violations: a start of a key whose
-- previous reconcile has not ended ({key =, line =}), an end without a
-- start; and the number of reconciles.
function M.overlaps(lines)
  local open, bad, n = {}, {}, 0
  for i, l in ipairs(lines) do
    local what, key = l:match("^([SE]) (.+)$")
    if what == "S" then
      n = n + 1
      if open[key] then bad[#bad + 1] = { key = key, line = i, what = "reconciled by two workers at once" } end
      open[key] = (open[key] or 0) + 1
    elseif what == "E" then
      if not open[key] then
        bad[#bad + 1] = { key = key, line = i, what = "end without start" }
      else
        open[key] = open[key] > 1 and open[key] - 1 or nil
      end
    end
  end
  return bad, n
end

-- The reconciler (it runs in the workers' states, each with its own copy
-- of any upvalue); the log path in the environment of the process.
local function reconciler(req, _ctx)
  local path = os.getenv("KINFORMER_CHAOS_RLOG")
  local f = io.open(path, "a")
  f:setvbuf("no")
  f:write("S " .. req.key .. "\n")
  local x = 0
  for i = 1, 20000 + (#req.key * 997) % 30000 do x = x + i end -- a little work, so reconciles overlap
  f:write("E " .. req.key .. "\n")
  f:close()
end

local function slurp(p)
  local f = io.open(p)
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

local function sleep(s) os.execute("sleep " .. s) end

local function key_of(obj)
  if obj.metadata == nil and obj.key then -- a tombstone
    if obj.object and obj.object.metadata then obj = obj.object else return obj.key end
  end
  return obj.metadata.namespace .. "/" .. obj.metadata.name
end

-- build/<mode>/ of the kinformer.core that package.cpath names
M.build_dir = require("support.proc").build_dir

--- The fault proxy (build/<mode>/kin-fault-proxy at bin) in front of the
-- server of the kubeconfig at kc_path: returns {cmd = fn(line), stop =
-- fn(), kubeconfig = path of a kubeconfig through it}.
local function start_proxy(bin, kc_path)
  local out = os.tmpname()
  local kc = slurp(kc_path)
  local host, port = kc:match("server:%s*['\"]?https?://([%d%.]+):(%d+)")
  assert(port, "no loopback server URL in " .. kc_path)
  local p = assert(io.popen(bin .. " " .. host .. ":" .. port .. " >" .. out, "w"))
  local listen
  for _ = 1, 200 do
    listen = slurp(out):match("listening (%d+)")
    if listen then break end
    sleep(0.05)
  end
  assert(listen, "the fault proxy did not start: " .. slurp(out))
  local proxied = os.tmpname()
  local f = assert(io.open(proxied, "w"))
  f:write((kc:gsub("(server:%s*['\"]?https?://[%d%.]+:)%d+", "%1" .. listen)))
  f:close()
  return {
    kubeconfig = proxied,
    cmd = function(line) p:write(line, "\n"); p:flush() end,
    stop = function() p:close(); os.remove(out); os.remove(proxied) end,
  }
end

M.start_proxy = start_proxy

-- Sum of a metric's series in a Prometheus text.
local function metric_sum(text, name)
  local sum = 0
  for line in text:gmatch("[^\n]+") do
    local k, v = line:match("^(" .. name .. "){?[^ ]*} (%S+)$")
    if not k then k, v = line:match("^(" .. name .. ") (%S+)$") end
    if k then sum = sum + tonumber(v) end
  end
  return sum
end

local function diff(want, got, limit)
  local out = {}
  for k, rv in pairs(want) do
    if got[k] ~= rv then out[#out + 1] = string.format("%s: server %s, here %s", k, rv, tostring(got[k])) end
  end
  for k, rv in pairs(got) do
    if want[k] == nil then out[#out + 1] = string.format("%s: server absent, here %s", k, rv) end
  end
  table.sort(out)
  local n = #out
  while #out > (limit or 10) do out[#out] = nil end
  return n, out
end

--- One run; see the top of the file. Returns the summary table; raises
-- with what diverged.
function M.run(o)
  local seed = assert(math.tointeger(o.seed), "seed: an integer")
  local seconds = o.seconds or 10
  local r = M.rng(seed)
  local real = o.kubeconfig ~= nil
  local sim, upstream
  if real then
    upstream = o.kubeconfig
  else
    sim = assert(require("kinformer.sim").start{})
    upstream = sim.kubeconfig
  end
  local proxy = start_proxy(o.proxy or (M.build_dir() .. "kin-fault-proxy"), upstream)
  local rlog = os.getenv("KINFORMER_CHAOS_RLOG")
  assert(rlog and rlog ~= "", "KINFORMER_CHAOS_RLOG must name the reconcile log (the script sets it)")
  assert(io.open(rlog, "w")):close()

  local writer_env = assert(core.env{ kubeconfig = upstream, qps = -1 })
  local w = writer_env:client()
  -- namespaces, a label of this run
  local run_id = string.format("%d-%05d", seed % 100000, math.floor(core.monotime() * 1000) % 100000)
  local label = "kinformer-chaos"
  local nss = {}
  for i = 1, M.NAMESPACES do
    nss[i] = string.format("kinformer-chaos-%s-%d", run_id, i)
    assert(w:create("v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = nss[i] } }))
  end
  local watch_list = r(2) == 0
  local iopts = { label_selector = label .. "=" .. run_id, watch_list = watch_list }

  local mgr = assert(kinformer.manager{
    kubeconfig = proxy.kubeconfig, metrics_bind = "127.0.0.1:0",
    read_idle_timeout = 2, ping_timeout = 2,
    watch_idle_timeout = not real and 2 or nil,
  })
  local inf = assert(mgr:informer("v1/configmaps", iopts))
  -- the handlers' view: key -> resourceVersion
  local hview, seen_added, deletes_seen = {}, {}, {}
  inf:add_handler({
    on_add = function(obj)
      local k = key_of(obj)
      hview[k] = obj.metadata.resourceVersion
      seen_added[k] = true
    end,
    on_update = function(_, new) hview[key_of(new)] = new.metadata.resourceVersion end,
    on_delete = function(obj)
      local k = key_of(obj)
      hview[k] = nil
      deletes_seen[k] = (deletes_seen[k] or 0) + 1
    end,
  }, { main = true })
  local ctl = assert(mgr:controller{ name = "chaos", ["for"] = "v1/configmaps", workers = 3,
    reconciler = reconciler, informer_opts = iopts })
  assert(mgr:start{ timeout = 30 })

  -- the writers
  local st = { writes = 0, creates = 0, updates = 0, deletes = 0, errors = 0, faults = 0 }
  local by_kind = {}
  local server_deleted = {} -- key -> true after a successful delete, nil after a create
  local resume_at -- the proxy's pause ends then
  local kinds = real and { "proxy_pause", "proxy_cut" }
    or { "drop", "cut", "malformed", "stall", "expired", "fail", "restart", "proxy_pause", "proxy_cut" }
  local function fault()
    local kind = kinds[r(#kinds) + 1]
    st.faults = st.faults + 1
    by_kind[kind] = (by_kind[kind] or 0) + 1
    if kind == "stall" then
      sim:fault{ kind = "stall", ms = 200 + r(2500) }
    elseif kind == "expired" then -- the next watch (and list continue) gets 410
      sim:fault{ kind = "compact" }
      sim:fault{ kind = "drop" }
    elseif kind == "fail" then
      sim:fault{ kind = "fail", code = ({ 429, 500, 503 })[r(3) + 1], count = 1 + r(4) }
    elseif kind == "restart" then
      sim:fault{ kind = "restart", ms = r(800) }
    elseif kind == "proxy_pause" then
      if not resume_at then
        proxy.cmd("pause")
        resume_at = core.monotime() + (200 + r(3500)) / 1000
      end
    elseif kind == "proxy_cut" then
      proxy.cmd("cut")
    else
      sim:fault{ kind = kind }
    end
  end

  local t0 = core.monotime()
  local deadline = t0 + seconds
  while core.monotime() < deadline do
    for _ = 1, 1 + r(8) do
      local ns = nss[r(#nss) + 1]
      local name = string.format("cm-%03d", r(M.NAMES // #nss))
      local key = ns .. "/" .. name
      local op = r(10)
      st.writes = st.writes + 1
      local ok, _, code
      if op < 6 then -- create, or update when it exists
        ok, _, code = w:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
          metadata = { name = name, namespace = ns, labels = { [label] = run_id } }, data = { v = tostring(st.writes) } })
        if ok then
          st.creates = st.creates + 1
          server_deleted[key] = nil
        elseif code == "AlreadyExists" then
          ok, _, code = w:patch("v1/configmaps", ns, name, { data = { v = tostring(st.writes) } }, { type = "merge" })
          if ok then st.updates = st.updates + 1 end
        end
      else
        ok, _, code = w:delete("v1/configmaps", ns, name)
        if ok then
          st.deletes = st.deletes + 1
          server_deleted[key] = true
        elseif code == "NotFound" then
          ok = true
        end
      end
      if not ok and code ~= "NotFound" then st.errors = st.errors + 1 end
      if r(M.FAULT_EVERY) == 0 then fault() end
    end
    if resume_at and core.monotime() >= resume_at then
      proxy.cmd("resume")
      resume_at = nil
    end
    mgr:step(0.005)
  end
  -- the faults clear
  if resume_at then proxy.cmd("resume") end
  if sim then sim:fault{ kind = "fail", code = 503, count = 0 } end
  local t_clear = core.monotime()

  -- the truth: a fresh LIST of each namespace, from the server directly
  local function fresh()
    local want = {}
    for _, ns in ipairs(nss) do
      local l, err = w:list("v1/configmaps", ns, { label_selector = iopts.label_selector })
      if not l then return nil, err end
      for _, obj in ipairs(l.items) do want[key_of(obj)] = obj.metadata.resourceVersion end
    end
    return want
  end
  local function cache()
    local got = {}
    for _, obj in ipairs(inf:list()) do got[key_of(obj)] = obj.metadata.resourceVersion end
    return got
  end
  local problem, last_problem
  local next_check = 0
  local converged = mgr:wait_for(function()
    -- every 0.1 s: a LIST and a copy of the cache cost CPU the workers need
    if core.monotime() < next_check then return false end
    next_check = core.monotime() + 0.1
    local s = ctl:stats()
    if s.queue_len ~= 0 or s.active_workers ~= 0 then
      problem = string.format("the controller's queue did not drain (queue_len %d, active_workers %d, queue %s)",
        s.queue_len, s.active_workers, core.json_encode(ctl:queue(5)))
      last_problem = problem
      return false
    end
    local want, ferr = fresh()
    if not want then
      problem = "a fresh LIST failed: " .. tostring(ferr)
      last_problem = problem
      return false
    end
    local n, d = diff(want, cache())
    if n > 0 then
      problem = "cache differs from a fresh LIST in " .. n .. " keys: " .. table.concat(d, "; ")
      last_problem = problem
      return false
    end
    n, d = diff(want, hview)
    if n > 0 then
      problem = "the handlers' view differs from a fresh LIST in " .. n .. " keys: " .. table.concat(d, "; ")
      last_problem = problem
      return false
    end
    -- the queue again: the LIST's last events may have enqueued keys since
    s = ctl:stats()
    if s.queue_len ~= 0 or s.active_workers ~= 0 then return false end
    problem = nil
    return true
  end, M.CONVERGE_TIMEOUT)
  local took = core.monotime() - t_clear
  if took > 5 then
    io.stderr:write(string.format("chaos: slow convergence (%.2f s), last waiting on: %s\n", took, tostring(last_problem)))
  end

  -- deletes that did not reach on_delete
  local final = fresh() or {}
  local missed = {}
  for k in pairs(server_deleted) do
    if final[k] == nil and seen_added[k] and not deletes_seen[k] then missed[#missed + 1] = k end
  end
  table.sort(missed)
  local relists = 0
  local text = core.http_get(string.format("http://127.0.0.1:%d/metrics", mgr:metrics_port()))
  if text then relists = metric_sum(text, "kinformer_reflector_relists_total") end
  local cst = ctl:stats()
  local avg_ms = cst.reconcile_time_count > 0 and cst.reconcile_time_sum_seconds * 1000 / cst.reconcile_time_count or 0
  mgr:stop()
  proxy.stop()
  -- the reconcile log, read after the workers stopped
  local lines = {}
  for l in slurp(rlog):gmatch("[^\n]+") do lines[#lines + 1] = l end
  local bad, reconciles = M.overlaps(lines)
  if real then
    for _, ns in ipairs(nss) do
      local l = w:list("v1/configmaps", ns)
      for _, obj in ipairs(l and l.items or {}) do w:delete("v1/configmaps", ns, obj.metadata.name) end
      w:delete("v1/namespaces", "", ns)
    end
  end
  writer_env:shutdown()
  if sim then sim:stop() end

  local kinds_txt = {}
  for k, n in pairs(by_kind) do kinds_txt[#kinds_txt + 1] = k .. ":" .. n end
  table.sort(kinds_txt)
  local sum = {
    seed = seed, target = real and "kube-apiserver" or "sim", seconds = seconds, writes = st.writes,
    creates = st.creates, updates = st.updates, deletes = st.deletes, writes_refused = st.errors,
    faults = st.faults, fault_kinds = table.concat(kinds_txt, ","), relists = relists,
    converge = took, reconciles = reconciles, watch_list = watch_list,
  }
  sum.line = string.format("chaos seed=%d target=%s seconds=%g watch_list=%s writes=%d creates=%d updates=%d "
    .. "deletes=%d writes_refused=%d faults=%d [%s] relists=%d reconciles=%d (%.2f ms avg) converged_in=%.2fs",
    seed, sum.target, seconds, tostring(watch_list), st.writes, st.creates, st.updates, st.deletes, st.errors,
    st.faults, sum.fault_kinds, relists, reconciles, avg_ms, took)
  local errs = {}
  if not converged then errs[#errs + 1] = "no convergence within " .. M.CONVERGE_TIMEOUT .. " s: " .. tostring(problem) end
  if #missed > 0 then
    errs[#errs + 1] = string.format("%d deletes never reached on_delete: %s", #missed,
      table.concat(missed, " ", 1, math.min(#missed, 10)))
  end
  for i = 1, math.min(#bad, 5) do
    errs[#errs + 1] = string.format("%s: %s (reconcile log line %d)", bad[i].key, bad[i].what, bad[i].line)
  end
  if #errs > 0 then
    error(string.format("%s\nchaos seed=%d DIVERGED (replay: make chaos CHAOS_SEED=%d):\n  %s", sum.line, seed,
      seed, table.concat(errs, "\n  ")), 0)
  end
  return sum
end

-- As a script: SEED SECONDS [KUBECONFIG]
if arg and arg[0] and arg[0]:match("chaos/chaos%.lua$") and not package.loaded["chaos.chaos"] then
  local seed, seconds, kc = tonumber(arg[1]), tonumber(arg[2] or "10"), arg[3]
  if not seed then
    io.stderr:write("usage: lua5.4 spec/chaos/chaos.lua SEED SECONDS [KUBECONFIG]\n")
    os.exit(2)
  end
  if not os.getenv("KINFORMER_CHAOS_RLOG") then
    io.stderr:write("KINFORMER_CHAOS_RLOG must name a file (the reconcile log)\n")
    os.exit(2)
  end
  local ok, res = pcall(M.run, { seed = math.tointeger(seed), seconds = seconds, kubeconfig = kc ~= "" and kc or nil })
  if not ok then
    io.stderr:write(tostring(res), "\n")
    io.stdout:write((tostring(res):match("^[^\n]*")), "\n")
    os.exit(1)
  end
  print(res.line)
  os.exit(0)
end

return M
