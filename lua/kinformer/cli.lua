--- kinformer.cli: the `kinformer` command (bin/kinformer).
--
--   kinformer run script.lua [--kubeconfig F] [--context C] [--namespace N]
--                            [--sim [--seed FILE]] [--sync-timeout S]
--                            [--shutdown-timeout S] [--leader-elect
--                            [--leader-election-id NAME]
--                            [--leader-election-namespace NS]
--                            [--leader-elect-lease-duration S]
--                            [--leader-elect-renew-deadline S]
--                            [--leader-elect-retry-period S]]
--                            [--metrics-bind-address ADDR]
--                            [--health-probe-bind-address ADDR]
--                            [--admin-bind-address ADDR] [-v] [-- ARGS...]
--   kinformer inspect [--address HOST:PORT] [caches|queues|inflight|why KEY
--                     [--controller NAME]]   (kinformer.inspect)
--   kinformer manifests script.lua [--namespace N] [--image I] [--name N]
--   kinformer plan script.lua [--key ns/name]... [--kubeconfig F] [--context C]
--                             [--namespace N] [--sim [--seed FILE]]
--                             [--sync-timeout S] [-v|-q] [-- ARGS...]
--   kinformer repl [script.lua] [run's connection options]  (kinformer.repl)
--   kinformer --help | --version
--
-- `plan` (kinformer.plan) shows what the script's controllers would change,
-- sending every write as a server-side dry run: exit 0 nothing would
-- change, 2 something would, 1 an error.
--
-- `manifests` prints the YAML that deploys the script (kinformer.manifests).
-- `run` creates a manager, loads the script with loadfile and calls it with
-- the manager and a table of options (`local mgr, opts = ...`; opts.args
-- holds what followed `--`, opts.verbose, opts.sim the in-process server
-- when --sim was given). The script registers informers, handlers and
-- controllers; it may return a function, or a table {on_start=, on_stop=}:
-- on_start is called once the caches synced and the controllers started,
-- on_stop (or the function) once the manager has stopped (a final report). Then the
-- command starts the manager, printing a progress line to stderr while the
-- caches sync ("synced 41,000 / 100,000 pods"), and runs until SIGINT or
-- SIGTERM; it exits 0 after a graceful stop, 1 when the script, the
-- kubeconfig or the sync fails, 2 on a usage error. The stop is bounded:
-- reconciles still running --shutdown-timeout seconds (default 30) after
-- the signal are interrupted; a second signal exits at once with status
-- 128 + its number, naming on stderr the reconciles it abandoned.
--
-- -v: debug logging, plus one line per reconcile (controller, key, outcome,
-- duration), made by wrapping each controller's reconciler (see
-- verbose_reconciler below).
local M = {}

M.usage = [[
usage: kinformer run SCRIPT [options] [-- ARGS...]
       kinformer manifests SCRIPT [--namespace NS] [--image IMAGE] [--name NAME]
       kinformer plan SCRIPT [--key NS/NAME]... [connection options] [-- ARGS...]
       kinformer record -o TRACE [--duration S] [connection options] RESOURCE...
       kinformer replay TRACE SCRIPT [--fault N:KIND]...
       kinformer inspect [--address HOST:PORT] [caches | queues | inflight | why KEY] [--controller NAME]
       kinformer repl [SCRIPT] [options]
       kinformer --help | --version

Runs SCRIPT (a Lua file) as an operator. SCRIPT is called with the manager
and an options table (local mgr, opts = ...), registers informers, handlers
and controllers, and may return a function called after shutdown, or a table
{on_start = fn, on_stop = fn} (on_start runs once the caches synced). kinformer then starts the manager, waits for the caches to
sync and runs until SIGINT or SIGTERM.

options:
  --kubeconfig FILE   kubeconfig to use (default: $KUBECONFIG, ~/.kube/config)
  --context NAME      kubeconfig context (default: its current-context)
  --namespace NS      default namespace of namespaced informers (mgr.namespace)
  --sim               run an in-process kinformer.sim and use it (no cluster needed)
  --seed FILE         with --sim: objects to load first (JSON array, List, or one per line)
  --sync-timeout S    seconds to wait for the caches to sync (default 120)
  --shutdown-timeout S  on SIGINT/SIGTERM, seconds in-flight reconciles get
                      before they are interrupted (default 30); a second
                      signal exits at once
  --metrics-bind-address ADDR  serve Prometheus metrics at ADDR/metrics
                      ("host:port" or ":port"; default 0: off)
  --health-probe-bind-address ADDR  serve /healthz and /readyz at ADDR
                      (default 0: off)
  --admin-bind-address ADDR  serve the admin endpoint `kinformer inspect`
                      reads (caches, queues, in-flight reconciles, why) at
                      ADDR, e.g. 127.0.0.1:9443 (default 0: off; no auth,
                      keep it local)
  --leader-elect      run controllers only while this replica holds the
                      Lease (others stay warm: informers synced); losing
                      it exits with status 1
  --leader-election-id NAME  the Lease's name (default: kinformer-SCRIPT,
                      SCRIPT's file name without .lua)
  --leader-election-namespace NS  the Lease's namespace (default: the
                      manager's namespace)
  --leader-elect-lease-duration S, --leader-elect-renew-deadline S,
  --leader-elect-retry-period S  the election's timing in seconds
                      (defaults 15, 10, 2; as kube-controller-manager)
  --watch             reload the controllers whose code changed when SCRIPT,
                      their reconciler modules or another Lua file in
                      their folders changes (a file that fails to load is
                      logged with file:line and the old code keeps running)
  -v, --verbose       debug logging and one line per reconcile
  -q, --quiet         warnings and errors only
  -h, --help          this text
  --version           the version

repl: runs SCRIPT (optional) as run does, starts the manager in the
background and reads Lua at a prompt: values pretty-print, help() and
help(x) list what things offer, Tab completes, Ctrl-C interrupts the
running statement, Ctrl-D leaves. Takes run's connection options.

manifests: prints the ServiceAccount, RBAC (ClusterRole, or Role with
--namespace), ConfigMap and Deployment that run SCRIPT in a cluster (see
docs/deploy.md); the script runs in a planning mode, no server is used.
  --image IMAGE       the Deployment's image (default kinformer-operator:latest)
  --name NAME         the objects' name (default: the script's folder or file name)

plan: loads SCRIPT as run does, syncs the caches without starting the
controllers, runs each controller's reconciler once per key with every write
sent as a server-side dry run (dryRun=All: nothing is stored) and prints, per
key, a unified diff of each object it would create, update or delete. Takes
--kubeconfig, --context, --namespace, --sim, --seed, --sync-timeout, -v, -q.
  --key NS/NAME       plan this key (repeatable; "NAME" when cluster-scoped;
                      default: every key of each controller's For informer)
  exit status: 0 nothing would change, 2 something would, 1 an error (the
  script, the connection or the sync failed, or a reconcile failed)
]]

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

--- Parses argv (an array of strings, as `arg`). Returns a table
-- {command = "run"|"repl"|"manifests"|"plan"|"help"|"version", script =, keys =
-- (plan's --key values), kubeconfig =, context =,
-- namespace =, sim =, seed =, verbose =, quiet =, sync_timeout =,
-- shutdown_timeout =, metrics_bind =, health_bind =, leader_elect =,
-- leader_election_id =, leader_election_namespace =, lease_duration =,
-- renew_deadline =, retry_period =, args = {}}
-- or nil, message (a usage error).
function M.parse(argv)
  local o = { args = {} }
  local i, n = 1, #argv
  local function value(flag)
    local v = argv[i + 1]
    if v == nil then error({ usage = flag .. " needs a value" }) end
    i = i + 1
    return v
  end
  local ok, err = pcall(function()
    while i <= n do
      local a = argv[i]
      local flag, inline = a:match("^(%-%-[%w-]+)=(.*)$")
      if flag then
        a = flag
        table.insert(argv, i + 1, inline)
        n = n + 1
      end
      if a == "--" then
        for j = i + 1, n do o.args[#o.args + 1] = argv[j] end
        break
      elseif a == "-h" or a == "--help" or a == "help" then
        o.command = "help"
      elseif a == "--version" or a == "version" then
        o.command = o.command or "version"
      elseif a == "--kubeconfig" then
        o.kubeconfig = value(a)
      elseif a == "--context" then
        o.context = value(a)
      elseif a == "--namespace" or a == "-n" then
        o.namespace = value(a)
      elseif a == "--sim" then
        o.sim = true
      elseif a == "--seed" then
        o.seed = value(a)
      elseif a == "--image" then
        o.image = value(a)
      elseif a == "--name" then
        o.name = value(a)
      elseif a == "--key" then
        o.keys = o.keys or {}
        o.keys[#o.keys + 1] = value(a)
      elseif a == "--sync-timeout" then
        local v = value(a)
        o.sync_timeout = tonumber(v)
        if not o.sync_timeout or o.sync_timeout <= 0 then
          error({ usage = "--sync-timeout must be a positive number of seconds, not " .. v })
        end
      elseif a == "--shutdown-timeout" then
        local v = value(a)
        o.shutdown_timeout = tonumber(v)
        if not o.shutdown_timeout or o.shutdown_timeout < 0 then
          error({ usage = "--shutdown-timeout must be a number of seconds >= 0, not " .. v })
        end
      elseif a == "--metrics-bind-address" then
        o.metrics_bind = value(a)
      elseif a == "--health-probe-bind-address" then
        o.health_bind = value(a)
      elseif a == "--admin-bind-address" then
        o.admin_bind = value(a)
      elseif a == "--leader-elect" then
        o.leader_elect = true
      elseif a == "--leader-election-id" then
        o.leader_election_id = value(a)
      elseif a == "--leader-election-namespace" then
        o.leader_election_namespace = value(a)
      elseif a == "--leader-elect-lease-duration" or a == "--leader-elect-renew-deadline"
          or a == "--leader-elect-retry-period" then
        local v = value(a)
        local k = a:match("^%-%-leader%-elect%-(.*)$"):gsub("%-", "_")
        o[k] = tonumber(v)
        if not o[k] or o[k] <= 0 then
          error({ usage = a .. " must be a positive number of seconds, not " .. v })
        end
      elseif a == "--watch" then
        o.watch = true
      elseif a == "-v" or a == "--verbose" then
        o.verbose = true
      elseif a == "-q" or a == "--quiet" then
        o.quiet = true
      elseif a:sub(1, 1) == "-" then
        error({ usage = "unknown option " .. a })
      elseif o.command == nil and a == "run" then
        o.command = "run"
      elseif o.command == nil and a == "manifests" then
        o.command = "manifests"
      elseif o.command == nil and a == "plan" then
        o.command = "plan"
      elseif o.command == nil and a == "repl" then
        o.command = "repl"
      elseif (o.command == "run" or o.command == "manifests" or o.command == "plan" or o.command == "repl")
          and o.script == nil then
        o.script = a
      else
        error({ usage = "unexpected argument " .. a })
      end
      i = i + 1
    end
  end)
  if not ok then
    if type(err) == "table" and err.usage then return nil, err.usage end
    error(err, 0)
  end
  if o.command == nil then return nil, "no command (try: kinformer run script.lua)" end
  if o.command == "manifests" then
    if not o.script then return nil, "manifests needs a script" end
    if o.sim or o.seed then return nil, "manifests takes no --sim or --seed" end
  elseif o.image or o.name then
    return nil, "--image and --name are options of manifests"
  end
  if o.keys and o.command ~= "plan" then return nil, "--key is an option of plan" end
  if o.command == "plan" then
    if not o.script then return nil, "plan needs a script" end
    if o.leader_elect or o.metrics_bind or o.health_bind or o.shutdown_timeout then
      return nil, "plan takes no --leader-elect, --metrics-bind-address, --health-probe-bind-address "
        .. "or --shutdown-timeout"
    end
    for _, k in ipairs(o.keys or {}) do
      if k == "" or k:match("^/") or k:match("/$") or select(2, k:gsub("/", "")) > 1 then
        return nil, "--key wants NAMESPACE/NAME or NAME, not '" .. k .. "'"
      end
    end
  end
  if o.command == "run" or o.command == "plan" or o.command == "repl" then
    if not o.script and o.command ~= "repl" then return nil, "run needs a script" end
    if o.command == "repl" and o.leader_elect then return nil, "repl takes no --leader-elect" end
    if o.seed and not o.sim then return nil, "--seed needs --sim" end
    if (o.leader_election_id or o.leader_election_namespace or o.lease_duration
        or o.renew_deadline or o.retry_period) and not o.leader_elect then
      return nil, "--leader-election-* and --leader-elect-* options need --leader-elect"
    end
    if o.sim and (o.kubeconfig or o.context) then
      return nil, "--sim cannot be combined with --kubeconfig or --context"
    end
  elseif o.watch then
    return nil, "--watch is an option of run"
  end
  return o
end

--- 41000 -> "41,000".
function M.thousands(n)
  local s = tostring(math.tointeger(n) or n)
  local sign, digits = s:match("^(-?)(%d+)$")
  if not digits then return s end
  local out = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  if out:sub(1, 1) == "," then out = out:sub(2) end
  return sign .. out
end

--- The progress line for env:sync_progress()'s array: "synced 41,000 /
-- 100,000 pods, 12 / 12 services" (cached / listed so far, per informer;
-- the resource's last path element names it).
function M.progress_line(progress)
  local parts = {}
  for _, p in ipairs(progress or {}) do
    local what = (p.resource or p.name or "?"):match("([^/?]+)$") or p.name
    local ns = p.name and p.name:match("namespace=([^&]+)")
    if ns then what = what .. " in " .. ns end
    local total = math.max(p.expected or 0, p.listed or 0, p.cached or 0)
    -- while the first list is still paging nothing is cached yet: count
    -- what was listed so far against what the server announced
    local done, state = p.cached or 0, ""
    if not p.synced then
      if done == 0 and (p.listed or 0) > 0 then done, state = p.listed, " (listing)"
      else state = " (syncing)" end
    end
    parts[#parts + 1] = string.format("%s / %s %s%s", M.thousands(done), M.thousands(total), what, state)
  end
  if #parts == 0 then return "synced (no informers)" end
  return "synced " .. table.concat(parts, ", ")
end

-- Whether fd 2 is a terminal (then the progress line rewrites itself).
local function stderr_is_tty()
  local ok = os.execute("test -t 2")
  return ok == true
end

-- Returns on_progress for mgr:start: prints the line when it changes (at
-- most every 0.2 s on a terminal, every 2 s otherwise), and a last one
-- when done.
local function progress_printer(monotime)
  local tty = stderr_is_tty()
  local last_line, last_t = nil, -math.huge
  local printer = {}
  function printer.update(progress)
    local line = M.progress_line(progress)
    local now = monotime()
    if line == last_line or now - last_t < (tty and 0.2 or 2) then return end
    last_line, last_t = line, now
    if tty then stderr("\r\27[K%s", line) else stderr("%s\n", line) end
  end
  function printer.done(progress)
    local line = M.progress_line(progress)
    if tty then
      stderr("\r\27[K%s\n", line)
    elseif line ~= last_line then
      stderr("%s\n", line)
    end
  end
  return printer
end

-- ---- -v: one line per reconcile -------------------------------------------

-- "terminal: msg", or "error: " and the first line of msg, for a
-- reconcile's error.
local function errtext(e)
  if type(e) == "table" and rawget(e, "kinformer_terminal") then return "terminal: " .. tostring(e.message) end
  return "error: " .. (tostring(e):match("^[^\n]*"))
end

--- Returns a reconciler that runs r (a module name or a function) and logs
-- one line per reconcile: "reconcile <controller> <ns/name>: done|requeue|
-- requeue after Ns|error: msg|terminal: msg (1.2 ms)". Results and errors
-- pass through unchanged (an error keeps its traceback in the message).
-- It is a closure over r, so it goes to the worker states as any closure
-- does, each with its own copy (a module r is required there on the first
-- reconcile); an r whose upvalues cannot be sent is refused by the
-- controller as `upvalue 'reconciler' (reconciler, whose upvalue ...)`.
-- Anything else is returned unchanged, for the controller to report.
function M.verbose_reconciler(controller, r)
  if type(r) ~= "string" and type(r) ~= "function" then return r end
  local core = require "kinformer.core"
  controller = tostring(controller)
  local modname = type(r) == "string" and r or nil
  local reconciler = type(r) == "function" and r or nil
  return function(req, ctx)
    if not reconciler then
      local m = require(modname)
      reconciler = type(m) == "table" and m.reconcile or m
    end
    local t0 = core.monotime()
    local key = req.key or ((req.namespace and req.namespace ~= "" and (req.namespace .. "/") or "") .. tostring(req.name))
    local function line(what)
      local ms = (core.monotime() - t0) * 1000
      core.log("info", "reconcile", string.format("%s %s: %s (%.1f ms)", controller, key, what, ms))
    end
    -- a raised error is logged while it unwinds (a to-be-closed guard), so
    -- the controller's own traceback still points at where it was raised
    local finished = false
    local guard <close> = setmetatable({}, { __close = function(_, e)
      if not finished then line(errtext(e)) end
    end })
    local a, b = reconciler(req, ctx)
    finished = true
    if a == nil and b ~= nil then
      line(errtext(b))
    elseif type(a) == "table" and a.requeue_after then
      line(string.format("requeue after %gs", a.requeue_after))
    elseif type(a) == "table" and a.requeue then
      line("requeue")
    else
      line("done")
    end
    return a, b
  end
end

-- Makes mgr:controller wrap each reconciler (the manager object only).
local function wrap_controllers(mgr)
  local orig = mgr.controller
  mgr.controller = function(self, cfg)
    if type(cfg) == "table" and cfg.reconciler ~= nil then
      local c = {}
      for k, v in pairs(cfg) do c[k] = v end
      c.reconciler = M.verbose_reconciler(cfg.name or cfg["for"] or "controller", cfg.reconciler)
      cfg = c
    end
    return orig(self, cfg)
  end
end

-- ---- run ------------------------------------------------------------------

local function fail(fmt, ...)
  stderr("kinformer: " .. fmt .. "\n", ...)
  return 1
end

-- Blocks SIGINT and SIGTERM in this thread before any other thread exists
-- (the in-process sim's server threads inherit the mask), so that only
-- mgr:run's sigtimedwait takes them.
local function block_signals(core) core.block_signals() end

local function file_exists(p)
  local f = io.open(p, "r")
  if f then f:close() return true end
  return false
end

--- Runs the command. Returns the exit status.
function M.run(o)
  local core = require "kinformer.core"
  local kinformer = require "kinformer"
  if o.verbose then
    core.set_log_level("debug")
  elseif o.quiet then
    core.set_log_level("warn")
  else
    core.set_log_level("info")
  end

  if not file_exists(o.script) then return fail("cannot open script %s", o.script) end
  local chunk, lerr = loadfile(o.script)
  if not chunk then return fail("cannot load script: %s", lerr) end

  block_signals(core)
  local sim
  if o.sim then
    if o.seed and not file_exists(o.seed) then return fail("cannot open seed file %s", o.seed) end
    local msg, code
    sim, msg, code = require("kinformer.sim").start{ seed = o.seed }
    if not sim then return fail("cannot start kinformer.sim: %s (%s)", tostring(msg), tostring(code)) end
    stderr("kinformer: kinformer.sim serving %s (kubeconfig %s)\n", sim.url, sim.kubeconfig)
  elseif o.kubeconfig and not file_exists(o.kubeconfig) then
    return fail("cannot open kubeconfig %s", o.kubeconfig)
  end

  local leader_election
  if o.leader_elect then
    local base = o.script:match("([^/]+)$"):gsub("%.lua$", ""):lower():gsub("[^%w.-]", "-")
    leader_election = {
      name = o.leader_election_id or ("kinformer-" .. base),
      namespace = o.leader_election_namespace,
      lease_duration = o.lease_duration, renew_deadline = o.renew_deadline,
      retry_period = o.retry_period,
    }
  end
  local ok, mgr, msg = pcall(kinformer.manager, {
    kubeconfig = o.kubeconfig, context = o.context, namespace = o.namespace, sim = sim,
    sync_timeout = o.sync_timeout, shutdown_timeout = o.shutdown_timeout,
    metrics_bind = o.metrics_bind, health_bind = o.health_bind, admin_bind = o.admin_bind,
    leader_election = leader_election,
  })
  if not ok or not mgr then
    if sim then sim:stop() end
    return fail("cannot create the manager: %s", tostring(ok and msg or mgr))
  end
  if o.verbose then wrap_controllers(mgr) end
  -- where the endpoints are (a port of 0 picks a free one: say which)
  if mgr:metrics_port() then
    stderr("kinformer: serving metrics on port %d (/metrics)\n", mgr:metrics_port())
  end
  if mgr:metrics_port("health") then
    stderr("kinformer: serving health probes on port %d (/healthz, /readyz)\n", mgr:metrics_port("health"))
  end
  if mgr:metrics_port("admin") then
    stderr("kinformer: serving the admin endpoint on port %d (kinformer inspect)\n", mgr:metrics_port("admin"))
  end

  local function cleanup()
    pcall(mgr.stop, mgr)
    if sim then sim:stop() end
  end

  -- the traceback stops at the script's main chunk (the CLI's frames are noise)
  local function script_traceback(e)
    local tb = debug.traceback(tostring(e), 2)
    return (tb:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
  end
  local sok, ret = xpcall(chunk, script_traceback, mgr, {
    args = o.args, verbose = o.verbose, sim = sim, script = o.script,
  })
  if not sok then
    cleanup()
    return fail("script %s failed: %s", o.script, tostring(ret))
  end
  local on_stop, on_start = ret, nil
  if type(ret) == "table" then on_stop, on_start = ret.on_stop, ret.on_start end
  if (on_stop ~= nil and type(on_stop) ~= "function") or (on_start ~= nil and type(on_start) ~= "function") then
    cleanup()
    return fail("script %s returned a %s: return nothing, a function, or a table with on_start/on_stop functions",
      o.script, type(ret))
  end

  local printer = progress_printer(core.monotime)
  local interrupted
  local pok, started, serr = pcall(mgr.start, mgr, { on_progress = function(p)
    printer.update(p)
    -- SIGINT/SIGTERM are blocked: take one here so that a sync can be cut short
    local sig = mgr.env:wait_signal(0)
    if sig then
      interrupted = sig
      error("interrupted by " .. sig .. " while waiting for the caches to sync", 0)
    end
  end })
  if not pok then started, serr = nil, started end
  if not started then
    cleanup()
    if interrupted then
      stderr("\nkinformer: %s\n", serr)
      return 0
    end
    return fail("%s", tostring(serr))
  end
  printer.done(mgr.env:sync_progress())
  stderr("kinformer: caches synced, running (SIGINT or SIGTERM stops)\n")
  if on_start then
    local hok, herr = xpcall(on_start, debug.traceback)
    if not hok then
      cleanup()
      return fail("on_start failed: %s", tostring(herr))
    end
  end

  local watcher
  if o.watch then -- hot reload (kinformer.reload_watch)
    local werr
    watcher, werr = require("kinformer.reload_watch").start(mgr, o.script)
    if not watcher then
      cleanup()
      return fail("--watch: %s", tostring(werr))
    end
  end
  local rok, rerr = mgr:run()
  if watcher then watcher:close() end
  cleanup()
  if not rok and rerr then return fail("%s", tostring(rerr)) end
  stderr("kinformer: stopped\n")
  if on_stop then
    local hok, herr = xpcall(on_stop, debug.traceback)
    if not hok then return fail("on_stop failed: %s", tostring(herr)) end
  end
  io.stdout:flush()
  return 0
end

--- Entry point: argv as `arg`. Returns the exit status.
function M.main(argv)
  -- record and replay parse their own arguments (kinformer.record, kinformer.replay)
  if argv and (argv[1] == "record" or argv[1] == "replay") then
    return require("kinformer." .. argv[1]).main(argv)
  end
  if argv and argv[1] == "inspect" then
    return require("kinformer.inspect").main({ table.unpack(argv, 2) })
  end
  local o, err = M.parse(argv or {})
  if not o then
    stderr("kinformer: %s\n%s", err, M.usage)
    return 2
  end
  if o.command == "help" then
    io.stdout:write(M.usage)
    return 0
  end
  if o.command == "version" then
    local ok, kinformer = pcall(require, "kinformer")
    io.stdout:write((ok and kinformer._VERSION or "kinformer (core module not found)") .. "\n")
    return ok and 0 or 1
  end
  if o.command == "manifests" then return require("kinformer.manifests").main(o) end
  if o.command == "plan" then return require("kinformer.plan").main(o) end
  if o.command == "repl" then return require("kinformer.repl").main(o) end
  return M.run(o)
end

return M
