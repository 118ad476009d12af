--- kinformer.cmd.run: `kinformer run SCRIPT` (see kinformer.cmd.cli for the
-- options): loads the script (kinformer.bootstrap), starts the manager
-- with a progress line on stderr while the caches sync ("synced 41,000 /
-- 100,000 pods"), runs until SIGINT or SIGTERM and stops gracefully;
-- exit 0 after a graceful stop, 1 when the script, the kubeconfig or the
-- sync fails. The stop is bounded: reconciles still running
-- --shutdown-timeout seconds (default 30) after the signal are
-- interrupted; a second signal exits at once with status 128 + its number,
-- naming on stderr the reconciles it abandoned.
--
-- -v: debug logging, plus one line per reconcile (controller, key,
-- outcome, duration): the manager's log_reconciles (kinformer.reconcile_log).
local M = {}

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
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

-- ---- run ------------------------------------------------------------------

local function fail(fmt, ...)
  stderr("kinformer: " .. fmt .. "\n", ...)
  return 1
end

--- The leader_election table of run's options (nil without
-- --leader-elect): the Lease is --leader-election-id, else the manager's
-- name, resolved when the manager starts (kinformer.leader_election).
function M.leader_election(o)
  if not o.leader_elect then return nil end
  return {
    name = o.leader_election_id,
    namespace = o.leader_election_namespace,
    lease_duration = o.lease_duration, renew_deadline = o.renew_deadline,
    retry_period = o.retry_period,
  }
end

--- The sharding table of run's options (nil without --shards): auto on
-- Leases (in --leader-election-namespace, with the --leader-elect-*
-- timing), or shard I of N.
function M.sharding(o)
  if not o.shards then return nil end
  if o.shards == "auto" then
    return { replicas = "auto", namespace = o.leader_election_namespace,
             lease_duration = o.lease_duration, renew_deadline = o.renew_deadline,
             retry_period = o.retry_period }
  end
  local i, n = o.shards:match("^(%d+)/(%d+)$")
  return { shard = math.tointeger(tonumber(i)), of = math.tointeger(tonumber(n)) }
end

--- Runs the command (o: kinformer.cmd.cli.parse's table). Returns the
-- exit status.
function M.run(o)
  local core = require "kinformer.core"
  if o.verbose then
    core.set_log_level("debug")
  elseif o.quiet then
    core.set_log_level("warn")
  else
    core.set_log_level("info")
  end
  -- SIGINT and SIGTERM blocked before any thread exists (the in-process
  -- sim's server threads inherit the mask), so that only mgr:run's
  -- sigtimedwait takes them
  core.block_signals()
  local s, err = require("kinformer.bootstrap").load{
    script = o.script, sim = o.sim, seed = o.seed, kubeconfig = o.kubeconfig, context = o.context,
    namespace = o.namespace, args = o.args, verbose = o.verbose,
    manager = {
      name = o.name, sync_timeout = o.sync_timeout, shutdown_timeout = o.shutdown_timeout,
      qps = o.qps, burst = o.burst,
      max_response_bytes = o.max_response_bytes, content_type = o.content_type,
      disable_compression = o.disable_compression,
      log_reconciles = o.verbose or nil,
      metrics_bind = o.metrics_bind, health_bind = o.health_bind, admin_bind = o.admin_bind,
      metrics_secure = o.metrics_secure, metrics_cert_path = o.metrics_cert_path,
      metrics_cert_name = o.metrics_cert_name, metrics_cert_key = o.metrics_cert_key,
      webhook_bind_address = o.webhook_bind_address, webhook_cert_path = o.webhook_cert_path,
      webhook_cert_name = o.webhook_cert_name, webhook_cert_key = o.webhook_cert_key,
      leader_election = M.leader_election(o), sharding = M.sharding(o),
    },
    on_sim = function(sim) stderr("kinformer: kinformer.sim serving %s (kubeconfig %s)\n", sim.url, sim.kubeconfig) end,
  }
  if not s then return fail("%s", err) end
  local mgr = s.mgr
  -- where the endpoints are (a port of 0 picks a free one: say which)
  if mgr:metrics_port() then
    stderr("kinformer: serving metrics on port %d (/metrics%s)\n", mgr:metrics_port(),
      o.metrics_secure and ", HTTPS behind TokenReview and SubjectAccessReview" or "")
  end
  if mgr:metrics_port("health") then
    stderr("kinformer: serving health probes on port %d (/healthz, /readyz)\n", mgr:metrics_port("health"))
  end
  if mgr:metrics_port("admin") then
    stderr("kinformer: serving the admin endpoint on port %d (kinformer inspect)\n", mgr:metrics_port("admin"))
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
    s:close()
    if interrupted then
      stderr("\nkinformer: %s\n", serr)
      return 0
    end
    return fail("%s", tostring(serr))
  end
  printer.done(mgr.env:sync_progress())
  stderr("kinformer: caches synced, running (SIGINT or SIGTERM stops)\n")
  if s.on_start then -- under on_start_timeout and main_memory_limit (kinformer.manager)
    local hok, herr = mgr:_call_on_start(s.on_start)
    if not hok then
      s:close()
      return fail("on_start failed: %s", tostring(herr))
    end
  end

  local watcher
  if o.watch then -- hot reload (kinformer.cmd.reload_watch)
    local werr
    watcher, werr = require("kinformer.cmd.reload_watch").start(mgr, o.script)
    if not watcher then
      s:close()
      return fail("--watch: %s", tostring(werr))
    end
  end
  local rok, rerr = mgr:run()
  if watcher then watcher:close() end
  s:close()
  if not rok and rerr then return fail("%s", tostring(rerr)) end
  stderr("kinformer: stopped\n")
  if s.on_stop then
    local hok, herr = xpcall(s.on_stop, debug.traceback)
    if not hok then return fail("on_stop failed: %s", tostring(herr)) end
  end
  io.stdout:flush()
  return mgr.exit_code or 0 -- os.exit(code) in a worker state: a graceful stop, then code
end

return M
