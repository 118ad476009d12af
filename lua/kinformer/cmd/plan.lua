--- kinformer.cmd.plan: `kinformer plan SCRIPT [--key NS/NAME]...` (the
-- connection options of run, --sim and --seed included): what the script's
-- controllers would change, with every write sent as a server-side dry run
-- (kinformer.plan does the planning).
local core = require "kinformer.core"
local plan = require "kinformer.plan"

local M = {}

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

local function fail(fmt, ...)
  stderr("kinformer: " .. fmt .. "\n", ...)
  return plan.EXIT_ERROR
end

--- `kinformer plan` (o: kinformer.cmd.cli.parse's table with command "plan",
-- keys = {"ns/name", ...}). Loads the script as `run` does (the manager
-- and opts; what it returns is ignored), syncs the caches without starting
-- the controllers, plans every controller of the script for the chosen
-- keys (default: all keys of each controller's For informer; a key given
-- with --key is planned for every controller) and prints the report on
-- stdout. Returns 0 (nothing would change), 2 (something would change) or
-- 1 (an error: script, connection or sync failure, or a reconcile that
-- failed; what was planned is printed still).
function M.main(o)
  if o.verbose then core.set_log_level("debug")
  elseif o.quiet then core.set_log_level("error")
  else core.set_log_level("warn") end -- the reconciler's info lines describe writes not made

  local s, err = require("kinformer.bootstrap").load{
    script = o.script, sim = o.sim, seed = o.seed, kubeconfig = o.kubeconfig, context = o.context,
    namespace = o.namespace, args = o.args, verbose = o.verbose, flags = { plan = true },
    manager = { name = o.name, sync_timeout = o.sync_timeout },
  }
  if not s then return fail("%s", err) end
  local mgr = s.mgr
  local ctls = {}
  for _, c in ipairs(mgr:controllers()) do ctls[#ctls + 1] = c end
  if #ctls == 0 then
    s:close()
    return fail("script %s registered no controller: nothing to plan", o.script)
  end
  local keys = o.keys and #o.keys > 0 and o.keys or nil
  local changed, failed = false, false
  for _, ctl in ipairs(ctls) do
    local pok, report, rmsg = pcall(plan.plan, ctl, keys, { timeout = o.sync_timeout })
    if not pok or not report then
      s:close()
      return fail("plan %s: %s", tostring(ctl:name()), tostring(pok and rmsg or report))
    end
    io.stdout:write(report.text)
    changed = changed or report.changed
    failed = failed or report.failed
  end
  io.stdout:flush()
  s:close()
  if failed then return plan.EXIT_ERROR end
  return changed and plan.EXIT_CHANGES or plan.EXIT_NO_CHANGES
end

return M
