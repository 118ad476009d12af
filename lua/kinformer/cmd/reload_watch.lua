--- kinformer.cmd.reload_watch: `kinformer run --watch` (issue 15). Watches the
-- script's folder and the folders of the controllers' module files (the
-- files package.searchpath finds for module reconcilers and module map
-- functions) through core.fs_watch (libuv, a thread of its own; changes
-- debounced 100 ms and delivered by mgr:run's loop), and reloads the
-- controllers whose code changed with ctl:reload():
--
--   * a controller's module file changed: that controller reloads;
--   * another .lua file in a watched folder changed (a helper the modules
--     require): every controller with a module reconciler reloads;
--   * the script changed: it is loaded again and run against a stand-in
--     manager that only records the mgr:controller{...} calls (everything
--     else it does is ignored: nothing is created, no handler added);
--     a registered controller whose reconciler function (its bytecode,
--     string.dump, and the values of its upvalues, which travel with it)
--     or module name differs reloads with the new one.
--     Controllers new in the script need a restart (logged).
--
-- Each reload is logged: `reloaded controller "x" (file)`, or its error
-- with file and line, the old code still running.
local core = require "kinformer.core"

local M = {}

local function dir_of(p) return p:match("^(.*)/[^/]*$") or "." end
local function base_of(p) return p:match("([^/]*)$") end
local function norm(p) return dir_of(p) .. "/" .. base_of(p) end

local function log(level, fmt, ...) core.log(level, "reload", fmt:format(...)) end

local function module_file(name)
  if type(name) ~= "string" then return nil end
  local f = package.searchpath(name, package.path)
  return f and norm(f) or nil
end

-- The module files of a controller: {path = true}.
local function files_of(ctl)
  local files = {}
  local f = module_file(rawget(ctl, "_reconciler"))
  if f then files[f] = true end
  local cfg = rawget(ctl, "_cfg")
  if type(cfg) == "table" and type(cfg.watches) == "table" then
    for _, w in ipairs(cfg.watches) do
      f = type(w) == "table" and module_file(w.map)
      if f then files[f] = true end
    end
  end
  return files
end

local function reload(ctl, code, why)
  local ok, r, msg = pcall(ctl.reload, ctl, code)
  if ok and r then
    log("info", 'reloaded controller "%s" (%s)', ctl:name(), why)
  else
    -- "controller "x": reload of the reconciler failed, the old code keeps
    -- running: file:line: ..."
    log("error", "%s", tostring(ok and msg or r))
  end
end

-- Runs the script against a stand-in manager (kinformer.bootstrap with a
-- make_manager); returns the configs given to mgr:controller, or nil,
-- message (with file:line).
local function script_controllers(mgr, script)
  local found = {}
  local absorb
  absorb = setmetatable({}, { __index = function() return absorb end,
                              __call = function() return absorb end })
  local proxy = setmetatable({}, { __index = function(_, k)
    if k == "controller" then
      return function(_, cfg)
        if type(cfg) == "table" then found[#found + 1] = cfg end
        return absorb
      end
    end
    local v = mgr[k]
    local t = type(v)
    if t == "string" or t == "number" or t == "boolean" then return v end
    return absorb
  end })
  local s, err = require("kinformer.bootstrap").load{ script = script, make_manager = function() return proxy end }
  if not s then return nil, err end
  return found
end

-- Whether a and b (a registered reconciler and the one the script now
-- registers) would run alike in a worker state: equal numbers and strings,
-- functions with the same bytecode and alike upvalues (_ENV aside), tables
-- with alike contents and metatables, and anything else the very same
-- value. A closure's upvalues go to the workers with it, so a changed
-- constant or config table is a change. seen: pairs already being compared
-- (cycles compare alike).
local function alike(a, b, seen)
  if rawequal(a, b) then return true end
  local t = type(a)
  if t ~= type(b) then return false end
  if t == "number" then return math.type(a) == math.type(b) and a == b end
  if t ~= "function" and t ~= "table" then return false end
  seen = seen or {}
  if seen[a] == b then return true end
  seen[a] = b
  if t == "function" then
    local okd, d1 = pcall(string.dump, a)
    local okn, d2 = pcall(string.dump, b)
    if not (okd and okn and d1 == d2) then return false end
    for i = 1, math.huge do
      local n1, v1 = debug.getupvalue(a, i)
      local n2, v2 = debug.getupvalue(b, i)
      if n1 == nil or n2 == nil then return n1 == n2 end
      if n1 ~= n2 or (n1 ~= "_ENV" and not alike(v1, v2, seen)) then return false end
    end
  end
  for k, v in next, a do
    if not alike(v, rawget(b, k), seen) then return false end
  end
  for k in next, b do
    if rawget(a, k) == nil then return false end
  end
  return alike(debug.getmetatable(a), debug.getmetatable(b), seen)
end

local function script_changed(mgr, script)
  local cfgs, err = script_controllers(mgr, script)
  if not cfgs then
    log("error", "script %s changed but does not load, the old code keeps running: %s", script, err)
    return
  end
  local live = mgr:controllers()
  for _, cfg in ipairs(cfgs) do
    local name = cfg.name
    if name == nil and type(cfg["for"]) == "string" then
      local r = mgr.env:resource(cfg["for"])
      name = r and r.kind:lower()
    end
    local ctl = name and live[name]
    if not ctl then
      log("warn", 'script %s: controller "%s" is new: restart to run it', script, tostring(name))
    else
      local old, new = rawget(ctl, "_reconciler"), cfg.reconciler
      local changed
      if type(new) == "function" and type(old) == "function" then
        changed = not alike(old, new)
      else
        changed = new ~= old
      end
      if changed then reload(ctl, new, script) end
    end
  end
end

--- Starts watching for mgr (its controllers registered) and script.
-- Returns an object with :close(), or nil, message, code.
function M.start(mgr, script)
  script = norm(script)
  local dirs, seen = {}, {}
  local function add(f)
    local d = dir_of(f)
    if not seen[d] then
      seen[d] = true
      dirs[#dirs + 1] = d
    end
  end
  add(script)
  for _, ctl in ipairs(mgr:controllers()) do
    for f in pairs(files_of(ctl)) do add(f) end
  end
  local function on_change(paths)
    local changed = {}
    for _, p in ipairs(paths) do changed[norm(p)] = true end
    if changed[script] then script_changed(mgr, script) end
    local helpers = {}
    for p in pairs(changed) do
      if p ~= script and p:match("%.lua$") then helpers[#helpers + 1] = p end
    end
    for _, ctl in ipairs(mgr:controllers()) do
      local files, mine = files_of(ctl), nil
      for p in pairs(changed) do
        if files[p] then mine = p end
      end
      if mine then
        reload(ctl, nil, mine)
      elseif #helpers > 0 and type(rawget(ctl, "_reconciler")) == "string" then
        local other = false
        for _, p in ipairs(helpers) do
          local owned = false
          for _, c in ipairs(mgr:controllers()) do owned = owned or files_of(c)[p] ~= nil end
          if not owned then other = p end
        end
        if other then reload(ctl, nil, other) end
      end
    end
  end
  local w, msg, code = core.fs_watch(mgr.env, dirs, on_change, 0.1)
  if not w then return nil, msg, code end
  log("info", "watching %s for changes (--watch)", table.concat(dirs, ", "))
  return w
end

return M
