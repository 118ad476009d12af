--- kinformer.cmd.repl: `kinformer repl [--sim [--seed F]] [script.lua]`.
--
-- Runs SCRIPT as `kinformer run` does (given the manager), starts the
-- manager and then reads Lua lines at a prompt while the manager keeps
-- running: between keystrokes the REPL pumps mgr:step, so main-state
-- handlers and health checks run. Globals: mgr, kinformer, sim (with
-- --sim), controllers (by name), help, pp.
--
-- Values a line evaluates to are printed (`1 + 1` works without `return`):
-- Kubernetes objects as YAML-like text, other tables sorted and indented,
-- kinformer's objects by their type and state (M.pretty). help() and
-- help(x) list what a value offers (M.help); Tab completes globals, fields
-- and methods (M.complete). Ctrl-C interrupts the running statement (the
-- session, the manager and the sim go on) or clears the line at the prompt;
-- Ctrl-D (or SIGTERM) leaves. Log lines (info level by default) are held while a line
-- is being typed and shown before the next prompt.
--
-- The line editor is kinformer.readline (libedit, csrc/lua/lreadline.c);
-- without it, or when stdin is not a terminal, lines are read plainly.
local M = {}

-- ---- describing values ------------------------------------------------------

-- One-line descriptions of the methods of known types, by type name. help()
-- lists every method found on the value; these add the text when known.
M.descriptions = {
  ["kinformer.manager"] = {
    informer = "mgr:informer(resource, opts) -> a shared informer (cache + handlers)",
    controller = "mgr:controller{name=, ['for']=, reconciler=, ...} -> a controller",
    controllers = "mgr:controllers() -> the registered controllers",
    state = "mgr:state() -> 'created', 'started' or 'stopped'",
    lister = "mgr:lister(resource) -> the informer's read-only cache",
    start = "mgr:start(opts) -> starts informers, waits for sync, starts controllers",
    step = "mgr:step(timeout) -> runs main-state handlers once",
    run = "mgr:run() -> runs until SIGINT/SIGTERM",
    stop = "mgr:stop() -> stops controllers and informers",
    shutdown = "mgr:shutdown(sig) -> the bounded graceful stop",
    wait_for = "mgr:wait_for(fn, timeout) -> pumps until fn() returns a value",
    event_recorder = "mgr:event_recorder(component) -> records Events",
    leader_election = "mgr:leader_election() -> the elector, when --leader-elect",
    metrics_port = "mgr:metrics_port(which) -> the port serving metrics or probes",
    add_healthz_check = "mgr:add_healthz_check(name, fn) -> a /healthz check",
    add_readyz_check = "mgr:add_readyz_check(name, fn) -> a /readyz check",
    clock_now = "mgr:clock_now() -> seconds on the controllers' clock, 'fake'|'real'",
    clock_advance = "mgr:clock_advance(s) -> moves a fake clock (manager{clock='fake'})",
    rbac = "mgr:rbac{{resources=, verbs=}, ...} -> declares RBAC rules for kinformer manifests",
  },
  ["kinformer.controller"] = {
    reconcile_once = "ctl:reconcile_once{namespace=, name=} -> runs the reconciler here, once",
    enqueue = "ctl:enqueue(ns, name) -> adds a key to the queue",
    stats = "ctl:stats() -> counters: queue_len, reconcile_success, ...",
    queue_len = "ctl:queue_len() -> keys waiting",
    queue = "ctl:queue() -> queued keys {key=, state=, due_in=, ...}, next due_in",
    name = "ctl:name() -> the controller's name",
    start = "ctl:start() -> starts the workers",
    stop = "ctl:stop(timeout) -> stops the workers",
    shutdown = "ctl:shutdown(timeout) -> drains, then stops",
    busy = "ctl:busy() -> whether a reconcile runs",
    close = "ctl:close() -> releases the controller",
    reload = "ctl:reload() -> rebuilds the workers with the new code",
    plan = "ctl:plan(key) -> what a reconcile would change (dry run)",
    why = "ctl:why(key) -> the key's recent history",
  },
  ["kinformer.informer"] = {
    get = "inf:get('ns/name') -> the cached object or nil",
    list = "inf:list(selector) -> cached objects",
    keys = "inf:keys() -> cached keys",
    len = "inf:len() -> number of cached objects",
    has_synced = "inf:has_synced() -> whether the first list is cached",
    by_index = "inf:by_index(index, value) -> objects with that index value",
    add_index = "inf:add_index(name, fn) -> adds an index",
    add_handler = "inf:add_handler{on_add=, on_update=, on_delete=} -> a handler",
    remove_handler = "inf:remove_handler(h)",
    name = "inf:name() -> the informer's name",
    resource = "inf:resource() -> its resource",
  },
  ["kinformer.client"] = {
    get = "client:get(resource, ns, name) -> object | nil, msg, code",
    list = "client:list(resource, opts) -> list | nil, msg, code",
    create = "client:create(obj) -> the created object",
    update = "client:update(obj) -> the updated object",
    update_status = "client:update_status(obj) -> the object",
    patch = "client:patch(resource, ns, name, patch, opts)",
    apply = "client:apply(obj, opts) -> server-side apply",
    delete = "client:delete(resource, ns, name)",
    resource = "client:resource(obj) -> its resource path",
    namespace = "client:namespace() -> the default namespace",
  },
  ["kinformer.sim"] = {
    stop = "sim:stop() -> stops the in-process API server",
  },
}

local pretty = require "kinformer.cmd.pretty"
local methods_table, method_names, kind_of, describe = pretty.methods_table, pretty.method_names,
  pretty.kind_of, pretty.describe
local sorted_keys, is_ident, scalar, MAX_ITEMS = pretty.sorted_keys, pretty.is_ident, pretty.scalar,
  pretty.MAX_ITEMS

--- The pretty-printer (kinformer.cmd.pretty), for the REPL's users and specs.
M.pretty, M.yaml, M.is_object, M.type_name = pretty.pretty, pretty.yaml, pretty.is_object, pretty.type_name

-- ---- help -------------------------------------------------------------------

local GENERAL = [[
kinformer repl: Lua with the manager running in the background.
  mgr            the manager (help(mgr)); kinformer: the module; sim: the
                 in-process server (with --sim); controllers: by name
  help(x)        what x offers (methods, fields); pp(x): print x pretty
  expressions    print their value (objects as YAML); `x = 1` assigns
  Tab            completes globals, fields (a.b) and methods (a:b)
  Ctrl-C         interrupts the running statement (or clears the line)
  Ctrl-D         leaves (stops the manager and the sim)
Log lines are shown before each prompt (core.set_log_level changes the level).]]

--- The text help(v) prints: for nothing, how the REPL works; for a value
-- with methods, its type and one line per method (a description when
-- known); for a plain table, its fields and their types.
function M.help_text(v, nargs)
  if nargs == 0 then
    local out = { GENERAL, "Globals:" }
    local names = {}
    for k, x in pairs(_G) do
      if type(k) == "string" and (kind_of(x) or k == "controllers" or k == "kinformer") then names[#names + 1] = k end
    end
    table.sort(names)
    for _, k in ipairs(names) do out[#out + 1] = "  " .. k .. "  " .. (kind_of(_G[k]) or type(_G[k])) end
    return table.concat(out, "\n")
  end
  local kind = kind_of(v)
  local methods = method_names(v)
  if kind or #methods > 0 then
    local desc = M.descriptions[kind or ""] or {}
    local out = { describe(v, kind) }
    if #methods > 0 then out[#out + 1] = "methods:" end
    local w = 0
    for _, m in ipairs(methods) do w = math.max(w, #m) end
    for _, m in ipairs(methods) do
      out[#out + 1] = desc[m] and string.format("  :%-" .. w .. "s  %s", m, desc[m]) or ("  :" .. m)
    end
    if type(v) == "table" then
      local fields = {}
      for k, x in pairs(v) do
        if type(k) == "string" and not k:match("^_") then fields[#fields + 1] = k .. " (" .. (kind_of(x) or type(x)) .. ")" end
      end
      table.sort(fields)
      if #fields > 0 then out[#out + 1] = "fields: " .. table.concat(fields, ", ") end
    end
    return table.concat(out, "\n")
  end
  if type(v) == "table" then
    local out = { "table with fields:" }
    for _, k in ipairs(sorted_keys(v)) do
      local x = v[k]
      local what = kind_of(x) or type(x)
      if type(x) ~= "table" and type(x) ~= "function" then what = what .. " " .. scalar(x) end
      out[#out + 1] = "  " .. (is_ident(k) and k or "[" .. scalar(k) .. "]") .. "  " .. what
      if #out > MAX_ITEMS then out[#out + 1] = "  ..." break end
    end
    return table.concat(out, "\n")
  end
  if type(v) == "function" then
    local info = debug.getinfo(v, "Su")
    return string.format("function (%d parameters%s) defined at %s", info.nparams,
      info.isvararg and ", ..." or "", info.what == "C" and "[C]" or (info.short_src .. ":" .. info.linedefined))
  end
  return type(v) .. ": " .. M.pretty(v)
end

-- ---- completion ---------------------------------------------------------------

local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function",
  "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true",
  "until", "while" }

--- The words that may replace word (the text before the cursor back to a
-- space or operator, e.g. "mgr:con", "kinformer.ma", "x"): globals and
-- keywords, the fields of a table (a.b), the methods of a value (a:b).
-- env: where names are looked up (default _G). Sorted, unique.
function M.complete(word, env)
  env = env or _G
  local path, sep, prefix = word:match("^(.*)([.:])([%w_]*)$")
  local out, seen = {}, {}
  local function add(k, full)
    if type(k) == "string" and k:sub(1, #prefix) == prefix and is_ident(k) and not seen[k] then
      seen[k] = true
      out[#out + 1] = full .. k
    end
  end
  if not path then
    prefix = word
    for k in pairs(env) do add(k, "") end
    for _, k in ipairs(KEYWORDS) do add(k, "") end
    table.sort(out)
    return out
  end
  -- resolve path (names separated by .) without calling anything but
  -- __index; give up on anything else
  local v = env
  for name in (path .. "."):gmatch("([^.]*)%.") do
    if not is_ident(name) then return {} end
    local ok, x = pcall(function() return v[name] end)
    if not ok or x == nil then return {} end
    v = x
  end
  local base = path .. sep
  if sep == ":" then
    for _, m in ipairs(method_names(v)) do add(m, base) end
    if type(v) == "table" then
      for k, f in pairs(v) do if type(f) == "function" then add(k, base) end end
    end
  else
    if type(v) == "table" then
      for k in pairs(v) do add(k, base) end
    end
    local mt = methods_table(v)
    if type(v) == "userdata" and mt then for k in pairs(mt) do add(k, base) end end
  end
  table.sort(out)
  return out
end

-- ---- evaluating lines ---------------------------------------------------------

--- Compiles one input (a line or several): as an expression ("return " ..
-- src) first, as lua5.4 -i does, then as statements. Returns the function,
-- or nil, message, incomplete (true when more lines may complete it).
function M.compile(src, env)
  local f = load("return " .. src, "=stdin", "t", env)
  if f then return f end
  local msg
  f, msg = load(src, "=stdin", "t", env)
  if f then return f end
  return nil, msg, msg:match("<eof>$") ~= nil
end

--- Runs f and returns the text to print: the pretty values (one per line),
-- or nil, error text. with_interrupt(fn) may wrap the call (Ctrl-C).
function M.eval(f, with_interrupt)
  local function call() return table.pack(xpcall(f, function(e)
    local tb = debug.traceback(tostring(e), 2)
    return (tb:gsub("\n%s*%[C%]: in function 'xpcall'.*$", ""))
  end)) end
  local r = with_interrupt and with_interrupt(call) or call()
  if not r[1] then return nil, tostring(r[2]) end
  local parts = {}
  for i = 2, r.n do
    local ok, s = pcall(M.pretty, r[i])
    parts[#parts + 1] = ok and s or tostring(r[i])
  end
  return table.concat(parts, "\n")
end

-- ---- the session ----------------------------------------------------------------

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

-- The registered controllers by name (mgr:controllers()).
local function controllers_of(mgr)
  local list
  if type(mgr.controllers) == "function" then
    local ok, l = pcall(mgr.controllers, mgr)
    if ok and type(l) == "table" then list = l end
  end
  list = list or {}
  local byname = {}
  for k, c in pairs(list) do
    local ok, n = pcall(function() return c:name() end)
    byname[ok and n or k] = c
  end
  return byname
end

-- Starts sim (with --sim), the manager and the script, as `kinformer run`
-- does (kinformer.bootstrap; without a script: the sim and the manager).
-- Returns mgr, sim, on_start, on_stop or nil, message.
local function setup(o)
  local bootstrap = require "kinformer.bootstrap"
  local mopts = { name = o.name, sync_timeout = o.sync_timeout, shutdown_timeout = o.shutdown_timeout,
                  metrics_bind = o.metrics_bind, health_bind = o.health_bind }
  local function announce(sim) stderr("kinformer: kinformer.sim serving %s (kubeconfig %s)\n", sim.url, sim.kubeconfig) end
  if o.script then
    local s, err = bootstrap.load{
      script = o.script, sim = o.sim, seed = o.seed, kubeconfig = o.kubeconfig, context = o.context,
      namespace = o.namespace, args = o.args, verbose = o.verbose, manager = mopts, on_sim = announce,
    }
    if not s then return nil, err end
    return s.mgr, s.sim, s.on_start, s.on_stop
  end
  local sim
  if o.sim then
    if o.seed and not bootstrap.file_exists(o.seed) then return nil, "cannot open seed file " .. o.seed end
    local msg, code
    sim, msg, code = require("kinformer.sim").start{ seed = o.seed }
    if not sim then return nil, string.format("cannot start kinformer.sim: %s (%s)", tostring(msg), tostring(code)) end
    announce(sim)
  elseif o.kubeconfig and not bootstrap.file_exists(o.kubeconfig) then
    return nil, "cannot open kubeconfig " .. o.kubeconfig
  end
  mopts.kubeconfig, mopts.context, mopts.namespace, mopts.sim = o.kubeconfig, o.context, o.namespace, sim
  local ok, mgr, msg = pcall(require("kinformer").manager, mopts)
  if not ok or not mgr then
    if sim then sim:stop() end
    return nil, "cannot create the manager: " .. tostring(ok and msg or mgr)
  end
  return mgr, sim
end

--- Runs the REPL (o as kinformer.cmd.cli.parse returns it). Returns the exit
-- status.
function M.main(o)
  local core = require "kinformer.core"
  core.set_log_level(o.verbose and "debug" or o.quiet and "warn" or "info")
  -- rlmod: Ctrl-C handling; rl: line editing too (on a terminal only)
  local rok, rlmod = pcall(require, "kinformer.readline")
  if not rok then rlmod = nil end
  local rl = rlmod and rlmod.isatty(0) and rlmod.isatty(1) and rlmod or nil
  -- SIGINT and SIGTERM blocked before any thread exists; the threads
  -- kinformer starts block every signal themselves, so SIGINT, unblocked
  -- here again by catch_sigint, reaches this thread only: Ctrl-C
  -- interrupts the statement running (the script, the sync, a line)
  core.block_signals()
  if rlmod then rlmod.catch_sigint() end
  local function interruptible(fn, ...)
    if rlmod then rlmod.eval_begin() end
    local r = table.pack(pcall(fn, ...))
    if rlmod and rlmod.eval_end() and rlmod.isatty(2) then io.stderr:write("\n") end
    if not r[1] then return nil, r[2] end
    return table.unpack(r, 2, r.n)
  end
  local mgr, sim, on_start, on_stop = interruptible(setup, o)
  if not mgr then
    stderr("kinformer: %s\n", tostring(sim))
    return 1
  end
  local started, serr = interruptible(mgr.start, mgr)
  if started then
    stderr("kinformer: caches synced, manager running (help() for help, Ctrl-D leaves)\n")
    if on_start then
      local hok, herr = xpcall(on_start, debug.traceback)
      if not hok then stderr("kinformer: on_start failed: %s\n", tostring(herr)) end
    end
  else
    stderr("kinformer: the manager did not start: %s\n", tostring(serr))
  end

  -- the session's globals
  _G.mgr, _G.sim, _G.kinformer = mgr, sim, require "kinformer"
  _G.controllers = controllers_of(mgr)
  _G.help = function(...)
    io.stdout:write(M.help_text((...), select("#", ...)), "\n")
  end
  _G.pp = function(...)
    for i = 1, select("#", ...) do io.stdout:write(M.pretty((select(i, ...))), "\n") end
  end

  local function pump()
    local ok, err = pcall(mgr.step, mgr, 0)
    if not ok then stderr("kinformer: %s\n", tostring(err)) end
  end

  local pending = {}
  local function take_logs()
    local lines, dropped = core.log_take()
    for _, l in ipairs(lines) do pending[#pending + 1] = l end
    if dropped > 0 then pending[#pending + 1] = string.format("kinformer warn [log] %d log lines dropped while held", dropped) end
  end
  local function show_logs()
    take_logs()
    if #pending > 0 then
      io.stderr:write(table.concat(pending, "\n"), "\n")
      io.stderr:flush()
      pending = {}
    end
  end

  local function with_interrupt(call)
    if not rlmod then return call() end
    rlmod.eval_begin()
    local r = call()
    -- after the terminal's "^C": the message on a line of its own
    if rlmod.eval_end() and rl then io.stdout:write("\n") end
    return r
  end

  -- reads one line: nil at end of input, false when Ctrl-C dropped it
  local function read_line(prompt)
    if not rl then
      if prompt then io.stdout:write(prompt) io.stdout:flush() end
      pump()
      local l
      repeat
        l = io.stdin:read("L")
        -- a read cut short by Ctrl-C (EINTR) is read again; SIGTERM ends
      until l or not rlmod or not rlmod.interrupted() or rlmod.terminated()
      if l then l = l:gsub("\n$", "") end
      return l
    end
    show_logs()
    core.log_hold(true)
    rl.prompt(prompt)
    local line, why
    while true do
      line, why = rl.read(0.05)
      if line ~= nil or why == "interrupt" then break end
      pump()
      take_logs()
      if #pending > 0 and rl.line() == "" then
        rl.hide()
        show_logs()
        rl.show()
      end
    end
    core.log_hold(false)
    take_logs()
    if why == "interrupt" then return false end
    if line == false then io.stdout:write("\n") return nil end
    return line
  end

  if rl then
    rl.set_completer(function(word) return M.complete(word, _G) end)
  end
  local buffer
  local tty = rl ~= nil
  -- the loop runs protected: whatever happens, the terminal is restored
  -- and the manager and the sim stopped
  local lok, lerr = xpcall(function()
    while true do
      local line = read_line(tty and (buffer and ">> " or "> ") or nil)
      if line == nil then break end
      if line == false then
        buffer = nil
      else
        local src = buffer and (buffer .. "\n" .. line) or line
        if rl and src:match("%S") then rl.add_history(line) end
        if src:match("^%s*$") then
          buffer = nil
        else
          local f, msg, incomplete = M.compile(src, _G)
          if f then
            buffer = nil
            local out, err = M.eval(f, with_interrupt)
            if out then
              if out ~= "" then io.stdout:write(out, "\n") end
            else
              io.stdout:flush()
              stderr("%s\n", err)
            end
            io.stdout:flush()
            if rlmod and rlmod.terminated() then break end
            _G.controllers = controllers_of(mgr)
            pump()
          elseif incomplete then
            buffer = src
          else
            buffer = nil
            stderr("%s\n", msg)
          end
        end
      end
    end
  end, debug.traceback)
  if rl then rl.close() end
  core.log_hold(false)
  show_logs()
  if not lok then stderr("kinformer: %s\n", tostring(lerr)) end
  pcall(mgr.stop, mgr)
  if sim then sim:stop() end
  if type(on_stop) == "function" then
    local hok, herr = xpcall(on_stop, debug.traceback)
    if not hok then
      stderr("kinformer: on_stop failed: %s\n", tostring(herr))
      return 1
    end
  end
  io.stdout:flush()
  return 0
end

return M
