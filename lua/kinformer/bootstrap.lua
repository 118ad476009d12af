--- kinformer.bootstrap: loads an operator script the way every `kinformer`
-- command does (run, repl, plan, replay, manifests, reload on --watch),
-- so that they cannot drift apart:
--
--   local s, err = require("kinformer.bootstrap").load{
--     script = "examples/website/operator.lua", sim = true, seed = "examples/website/seed.json",
--   }
--   if not s then error(err) end
--   assert(s.mgr:start()) ... s:close()
--
-- In order: the script is read and compiled (a syntax error stops here,
-- before anything starts); its folder goes first on package.path, so its
-- modules are found from any working directory and every worker state
-- (which copies package.path when its code is captured) finds them too;
-- kinformer.sim starts (sim = true) or the kubeconfig is checked; the
-- manager is made; the script is called with the manager and its options
-- table (`local mgr, opts = ...`); what it returns is read (nothing, a
-- function called after shutdown, or {on_start =, on_stop =}).
--
-- o.make_manager replaces kinformer.manager for this load: the script
-- gets what it returns, and so does a script that makes its own manager
-- (kinformer.manager{...}) while it loads (kinformer.manifests plans with
-- it; see kinformer.manager.with_factory).
local M = {}

local function file_exists(p)
  local f = io.open(p, "r")
  if f then
    f:close()
    return true
  end
  return false
end
M.file_exists = file_exists

--- The folder of a script path ("." for a bare file name).
function M.dir_of(script)
  return script:match("^(.*)/[^/]*$") or "."
end

--- Puts dir's ?.lua and ?/init.lua first on package.path (once).
-- Returns the new path.
function M.add_path(dir)
  local entries = dir .. "/?.lua;" .. dir .. "/?/init.lua;"
  if package.path:sub(1, #entries) ~= entries then
    -- drop a copy further along, so a second load does not grow the path
    local at = package.path:find(entries, 1, true)
    local rest = package.path
    if at then rest = rest:sub(1, at - 1) .. rest:sub(at + #entries) end
    package.path = entries .. rest
  end
  return package.path
end

-- The traceback of a script error, cut at the script's main chunk (the
-- loader's own frames are noise).
local function script_traceback(e)
  local tb = debug.traceback(tostring(e), 2)
  return (tb:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
end
M.script_traceback = script_traceback

--- Forgets (package.loaded) every module that package.path finds in dir,
-- so the next require reads its file again.
function M.unload_folder(dir)
  local prefix = dir .. "/"
  for name in pairs(package.loaded) do
    local p = type(name) == "string" and package.searchpath(name, package.path)
    if p and p:sub(1, #prefix) == prefix then package.loaded[name] = nil end
  end
end

local Session = {}
Session.__index = Session

--- Stops the manager and the sim it started (idempotent).
function Session:close()
  if self._closed then return end
  self._closed = true
  if self.mgr and type(self.mgr.stop) == "function" then pcall(self.mgr.stop, self.mgr) end
  if self.sim and self._own_sim then self.sim:stop() end
end
Session.__close = Session.close

M.OPTIONS = {
  "script", "sim", "seed", "kubeconfig", "context", "namespace", "manager", "make_manager",
  "args", "verbose", "flags", "on_sim", "on_manager", "fresh",
}

--- Loads o.script. o: script (path, required); sim (true: start a
-- kinformer.sim, seeded with o.seed; or a started sim to use); kubeconfig,
-- context, namespace; manager (more kinformer.manager options, e.g.
-- metrics_bind, leader_election, clock); make_manager (fn(opts) -> mgr |
-- nil, msg: used instead of kinformer.manager, called with the options and
-- "bootstrap" for the command's manager, with the script's options alone
-- when the script makes one); fresh (true: modules of the script's folder
-- loaded earlier in this process are loaded again, so that s.loaded lists
-- every module the script requires); args (the script's
-- opts.args); verbose; flags (more fields for the script's opts table, such
-- as plan = true); on_sim(sim) (called once the sim serves); on_manager(mgr)
-- (called with the manager before the script runs).
-- Returns a session {mgr =, sim =, script =, dir =, on_start =, on_stop =,
-- ret = (what the script returned), loaded = {module names it required}}
-- with :close(), or nil and a message ("cannot open script x", "cannot load
-- script: ...", "cannot start kinformer.sim: ...", "cannot create the
-- manager: ...", "script x failed: <traceback>"); on failure everything it
-- started is stopped.
function M.load(o)
  local options = require "kinformer.util.options"
  options.check(o, M.OPTIONS, "kinformer.bootstrap.load")
  local script = o.script
  if type(script) ~= "string" or script == "" then options.raise("bootstrap: script (a file name) expected") end
  if not file_exists(script) then return nil, "cannot open script " .. script end
  local chunk, lerr = loadfile(script)
  if not chunk then return nil, "cannot load script: " .. tostring(lerr) end
  local dir = M.dir_of(script)
  M.add_path(dir)

  local s = setmetatable({ script = script, dir = dir }, Session)
  if o.sim == true then
    if o.seed and not file_exists(o.seed) then return nil, "cannot open seed file " .. o.seed end
    local sim, msg, code = require("kinformer.sim").start{ seed = o.seed }
    if not sim then return nil, string.format("cannot start kinformer.sim: %s (%s)", tostring(msg), tostring(code)) end
    s.sim, s._own_sim = sim, true
    if o.on_sim then o.on_sim(sim) end
  elseif o.sim then
    s.sim = o.sim
  elseif o.kubeconfig and not file_exists(o.kubeconfig) then
    return nil, "cannot open kubeconfig " .. o.kubeconfig
  end

  local mopts = {}
  for k, v in pairs(o.manager or {}) do mopts[k] = v end
  mopts.kubeconfig, mopts.context, mopts.sim = o.kubeconfig, o.context, s.sim
  if o.namespace ~= nil then mopts.namespace = o.namespace end
  local manager = require "kinformer.manager"
  local make = o.make_manager or manager.new
  local ok, mgr, msg = pcall(make, mopts, "bootstrap")
  if not ok or not mgr then
    s:close()
    return nil, "cannot create the manager: " .. tostring(ok and msg or mgr)
  end
  s.mgr = mgr
  -- a manager (not a stand-in) learns its script: its default name comes from it
  if type(mgr) == "table" and type(mgr._set_script) == "function" then mgr:_set_script(script) end
  if o.on_manager then o.on_manager(mgr) end

  local sopts = { args = o.args or {}, verbose = o.verbose, sim = s.sim, script = script }
  for k, v in pairs(o.flags or {}) do sopts[k] = v end
  if o.fresh then M.unload_folder(dir) end
  local before = {}
  for name in pairs(package.loaded) do before[name] = true end
  local sok, ret
  if o.make_manager then
    sok, ret = manager.with_factory(o.make_manager, xpcall, chunk, script_traceback, mgr, sopts)
  else
    sok, ret = xpcall(chunk, script_traceback, mgr, sopts)
  end
  s.loaded = {}
  for name in pairs(package.loaded) do
    if not before[name] then s.loaded[#s.loaded + 1] = name end
  end
  table.sort(s.loaded)
  if not sok then
    s:close()
    return nil, string.format("script %s failed: %s", script, tostring(ret))
  end
  s.ret = ret
  local on_stop, on_start = ret, nil
  if type(ret) == "table" then on_stop, on_start = ret.on_stop, ret.on_start end
  if (on_stop ~= nil and type(on_stop) ~= "function") or (on_start ~= nil and type(on_start) ~= "function") then
    s:close()
    return nil, string.format(
      "script %s returned a %s: return nothing, a function, or a table with on_start/on_stop functions",
      script, type(ret))
  end
  s.on_start, s.on_stop = on_start, on_stop
  return s
end

return M
