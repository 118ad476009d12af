-- The LuaCATS definitions in types/ (editor support, issue 22) against the
-- real modules and objects: every public function of a module or an object
-- (a manager, controller, ctx, client, informer, sim... made against a
-- kinformer.sim) has an annotation and every annotated function exists,
-- with the parameter names of the Lua ones (debug.getlocal); the option
-- classes list exactly the keys the code accepts (the Lua modules' OPTIONS
-- lists, the C binding's known[] arrays); every kinformer.* type an
-- annotation names is defined. `make typecheck` runs a type checker over
-- the same files; this spec needs none.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local proc = require "spec.support.proc"


-- ---- reading types/ ------------------------------------------------------------

-- Parses one definition file into {module =, returns =} and adds its
-- classes to defs: defs.classes[name] = {fields = {name = {optional =,
-- type =}}, funcs = {name = {sep = "." | ":", params = {...}, docparams =
-- {...}, line =}}, overload = bool, file =, line =}; defs.aliases[name] =
-- true. Raises on a line it cannot read.
local function parse_file(path, defs)
  local info = { path = path }
  local var_class = {} -- local variable -> class
  local cur, pending, pending_overload = nil, {}, false
  local n = 0
  local in_alias = false
  for line in io.lines(path) do
    n = n + 1
    local where = path .. ":" .. n
    local tag, rest = line:match("^%-%-%-@(%S+)%s*(.*)$")
    if not line:match("^%-%-%-|") then in_alias = false end
    if tag == "meta" then
      info.module = rest:match("^(%S+)")
    elseif tag == "class" then
      local name = assert(rest:match("^([%w_%.]+)"), where .. ": class name")
      assert(not defs.classes[name], where .. ": class " .. name .. " defined twice")
      cur = { name = name, fields = {}, funcs = {}, file = path, line = n }
      defs.classes[name] = cur
    elseif tag == "alias" then
      defs.aliases[assert(rest:match("^([%w_%.]+)"), where)] = true
      defs.types[#defs.types + 1] = { text = rest:match("^[%w_%.]+%s*(.*)$"), where = where }
      in_alias = true
    elseif tag == "field" then
      assert(cur, where .. ": @field outside a class")
      local name, opt, ty = rest:match("^([%w_]+)(%??)%s+(.*)$")
      if not name then
        name, opt, ty = rest:match("^%[\"([%w_]+)\"%](%??)%s+(.*)$") -- ["for"]
      end
      if not name then
        local key
        key, opt, ty = rest:match("^%[([%w_]+)%](%??)%s+(.*)$") -- [1], [string]
        assert(key, where .. ": cannot read the field")
        name = "[" .. key .. "]"
      end
      assert(not cur.fields[name], where .. ": field " .. name .. " twice")
      cur.fields[name] = { optional = opt == "?", type = ty, line = n }
      defs.types[#defs.types + 1] = { text = ty, where = where }
    elseif tag == "param" then
      local name, ty = rest:match("^([%w_%.]+)%??%s+(.*)$")
      assert(name, where .. ": cannot read the param")
      pending[#pending + 1] = name
      defs.types[#defs.types + 1] = { text = ty, where = where }
    elseif tag == "return" or tag == "return_overload" or tag == "type" then
      defs.types[#defs.types + 1] = { text = rest, where = where }
    elseif tag == "overload" then
      if cur and not next(pending) then cur.overload = true end
      pending_overload = true
      defs.types[#defs.types + 1] = { text = rest, where = where }
    elseif tag == "generic" or tag == "cast" or tag == "diagnostic" then
      defs.generics = defs.generics or {}
      for g in rest:gmatch("[%w_]+") do defs.generics[g] = true end
    elseif tag then
      error(where .. ": unknown tag @" .. tag)
    elseif in_alias then
      defs.types[#defs.types + 1] = { text = line:match("^%-%-%-|%s*(.*)$"), where = where }
    else
      local v = line:match("^local%s+([%w_]+)%s*=%s*{}%s*$")
      local obj, sep, fname, params = line:match("^function%s+([%w_]+)([%.:])([%w_]+)%((.-)%)%s*end%s*$")
      local avar, aname, bvar, bname = line:match("^([%w_]+)%.([%w_]+)%s*=%s*([%w_]+)%.([%w_]+)%s*$")
      local ret = line:match("^return%s+([%w_]+)%s*$")
      if v then
        assert(cur, where .. ": a table without a class above")
        var_class[v] = cur
      elseif obj then
        local c = assert(var_class[obj], where .. ": function of an unknown table " .. obj)
        local ps = {}
        for p in params:gmatch("[^,%s]+") do ps[#ps + 1] = p end
        assert(not c.funcs[fname], where .. ": " .. fname .. " declared twice")
        c.funcs[fname] = { sep = sep, params = ps, docparams = pending, overload = pending_overload,
                           where = where }
        pending, pending_overload = {}, false
      elseif avar then -- M.f = Other.f: the same function under another table
        local to, from = assert(var_class[avar], where), assert(var_class[bvar], where)
        to.funcs[aname] = assert(from.funcs[bname], where .. ": " .. bvar .. "." .. bname .. " undeclared")
      elseif ret then
        info.returns = assert(var_class[ret], where .. ": returns an unknown table").name
      end
    end
  end
  return info
end

local function parse_all()
  local defs = { classes = {}, aliases = {}, types = {}, files = {} }
  local list = proc.run("find types -name '*.lua' | sort")
  for path in list:gmatch("%S+") do defs.files[#defs.files + 1] = parse_file(path, defs) end
  return defs
end

-- ---- reading the real things -----------------------------------------------------

-- Whether a member name is public: not _private nor a metamethod.
local function public(name)
  return type(name) == "string" and (name == "_VERSION" or not name:match("^_"))
end

-- The members of v: its own (raw) keys, and its methods: the __index
-- table of its metatable, or the metatable's own keys when __index is a
-- function (a Lua class whose __index makes lazy fields).
local function members(v)
  local out = {}
  if type(v) == "table" then
    for k, x in pairs(v) do if public(k) then out[k] = x end end
  end
  local mt = getmetatable(v)
  if type(mt) == "table" then
    local idx = rawget(mt, "__index")
    local from = type(idx) == "table" and idx or (type(idx) == "function" and mt) or {}
    for k, x in pairs(from) do
      if public(k) and out[k] == nil then out[k] = x end
    end
  end
  return out
end

-- Parameter names of a Lua function (nil for a C one) and whether it
-- takes `...`.
local function lua_params(f)
  local info = debug.getinfo(f, "Su")
  if info.what == "C" then return nil end
  local ps = {}
  for i = 1, info.nparams do ps[i] = debug.getlocal(f, i) end
  return ps, info.isvararg
end

-- The strings of the C array that follows the comment `marker` in file.
local function c_known(file, marker)
  local src = assert(io.open(file)):read("a")
  local at = assert(src:find(marker, 1, true), file .. ": no '" .. marker .. "'")
  local body = assert(src:match("%[%]%s*=%s*(%b{})", at), file .. ": no array after '" .. marker .. "'")
  local keys = {}
  for s in body:gmatch('"([^"]*)"') do keys[#keys + 1] = s end
  return keys
end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks)
  return ks
end

-- ---- the checks ------------------------------------------------------------------

local defs = parse_all()

-- the problems found (each a failure)
local function checker()
  return { problems = {} }
end

local function missing(r, class, name, what)
  r.problems[#r.problems + 1] = ("%s.%s: %s is annotated but the real %s has none"):format(class, name, what, class)
end

-- Compares the annotated class `cname` with the real value v. opts:
-- methods (the members to compare, default members(v)), delegate(name, f)
-- (the function whose parameters to read, default f), fields (also check
-- annotated non-function fields exist, and real public non-function
-- members are annotated), skip (real names not part of the API).
local function compare(r, cname, v, opts)
  opts = opts or {}
  local c = defs.classes[cname]
  if not c then
    r.problems[#r.problems + 1] = cname .. ": no such class in types/"
    return
  end
  local real = opts.methods or members(v)
  local skip = opts.skip or {}
  -- every real public function is annotated, and the other way round
  for name, f in pairs(real) do
    if not skip[name] and type(f) == "function" and not c.funcs[name] then
      local fld = c.fields[name]
      if not (fld and fld.type:match("^fun%(")) then
        r.problems[#r.problems + 1] = ("%s.%s: a function of the real %s without an annotation"):format(cname, name, cname)
      end
    end
  end
  for name, fn in pairs(c.funcs) do
    local f = real[name]
    if type(f) ~= "function" then
      missing(r, cname, name, "the function")
    else
      local pf = f
      if opts.delegate then pf = opts.delegate(name, f) end
      local ps, vararg
      if pf then ps, vararg = lua_params(pf) end
      if ps then
        if fn.sep == ":" then
          if ps[1] ~= "self" then
            r.problems[#r.problems + 1] = ("%s: annotated as a method (:) but its first parameter is %s")
              :format(fn.where, tostring(ps[1]))
          end
          table.remove(ps, 1)
        end
        local want = {}
        for i, p in ipairs(fn.params) do want[i] = p end
        local want_vararg = want[#want] == "..."
        if want_vararg then want[#want] = nil end
        local got = {}
        for i, p in ipairs(ps) do got[i] = (p:gsub("^_+", "")) end
        if table.concat(got, ",") ~= table.concat(want, ",") or (vararg and true) ~= want_vararg then
          r.problems[#r.problems + 1] = ("%s: parameters (%s%s) but the real %s.%s takes (%s%s)"):format(
            fn.where, table.concat(want, ", "), want_vararg and ", ..." or "", cname, name,
            table.concat(got, ", "), vararg and ", ..." or "")
        end
      end
    end
  end
  if opts.fields then
    for name, fld in pairs(c.fields) do
      if not name:match("^%[") and not fld.optional and v[name] == nil then
        missing(r, cname, name, "the field")
      end
    end
    for name, x in pairs(real) do
      if not skip[name] and type(x) ~= "function" and not c.fields[name] and not c.funcs[name] then
        r.problems[#r.problems + 1] = ("%s.%s: a field of the real %s without an annotation"):format(cname, name, cname)
      end
    end
  end
  if opts.callable ~= nil and (c.overload or false) ~= opts.callable then
    r.problems[#r.problems + 1] = ("%s: the real one is %scallable but the class has %s @overload")
      :format(cname, opts.callable and "" or "not ", c.overload and "an" or "no")
  end
end

-- Compares an option class's fields with the keys the code accepts.
local function compare_options(r, cname, keys, extra)
  local c = defs.classes[cname]
  if not c then
    r.problems[#r.problems + 1] = cname .. ": no such class in types/"
    return
  end
  local accepted = {}
  for _, k in ipairs(keys) do accepted[k] = true end
  for _, k in ipairs(extra or {}) do accepted[k] = true end
  for _, k in ipairs(keys) do
    if not c.fields[k] then
      r.problems[#r.problems + 1] = ("%s: the code accepts option %q, the class has no field for it"):format(cname, k)
    end
  end
  for name in pairs(c.fields) do
    if not accepted[name] then missing(r, cname, name, "the option") end
  end
end

local function report(r)
  table.sort(r.problems)
  assert(#r.problems == 0, "types/ disagrees with the code:\n  " .. table.concat(r.problems, "\n  "))
end

describe("types/ (LuaCATS definitions)", function()
  it("reads every file, and each module's file returns the class of its name", function()
    assert.is_true(#defs.files >= 18, "found " .. #defs.files .. " files")
    for _, f in ipairs(defs.files) do
      local want = f.path:match("^types/(.*)%.lua$"):gsub("/", ".")
      if f.module then
        assert.equals(want, f.module, f.path .. ": ---@meta names another module")
        assert.equals(f.module, f.returns, f.path .. ": returns another class than its module's")
        assert.is_true(pcall(require, f.module), f.path .. ": no module " .. f.module)
      else
        assert.is_nil(f.returns, f.path .. ": a file of types only returns nothing")
        assert.is_false(pcall(require, want), f.path .. ": names a module; use ---@meta " .. want)
      end
    end
  end)

  it("gives each declared function its parameters, in order, and nothing else", function()
    local bad = {}
    for cname, c in pairs(defs.classes) do
      for name, fn in pairs(c.funcs) do
        local ps = {}
        for i, p in ipairs(fn.params) do ps[i] = p end
        if table.concat(ps, ",") ~= table.concat(fn.docparams, ",") then
          bad[#bad + 1] = ("%s (%s.%s): @param %s for (%s)"):format(fn.where, cname, name,
            table.concat(fn.docparams, ", "), table.concat(ps, ", "))
        end
      end
    end
    table.sort(bad)
    assert.are.same({}, bad)
  end)

  it("names only types it defines", function()
    local known = {}
    for k in pairs(defs.classes) do known[k] = true end
    for k in pairs(defs.aliases) do known[k] = true end
    local bad = {}
    for _, t in ipairs(defs.types) do
      for name in t.text:gmatch("kinformer[%w_%.]*[%w_]") do
        if not known[name] then bad[#bad + 1] = t.where .. ": " .. name end
      end
    end
    table.sort(bad)
    assert.are.same({}, bad)
    assert.is_true(#defs.types > 300, "read " .. #defs.types .. " type expressions")
  end)

  it("catches a wrong annotation (the checks themselves)", function()
    -- a class whose declared parameters differ from the real function's,
    -- a function the real table lacks, and one it has without annotation
    local r = checker()
    defs.classes["spec.Probe"] = { fields = {}, funcs = {
      f = { sep = ".", params = { "a", "c" }, docparams = {}, where = "probe:1" },
      gone = { sep = ".", params = {}, docparams = {}, where = "probe:2" },
    } }
    compare(r, "spec.Probe", { f = function(a, b) return a, b end, extra = function() end })
    defs.classes["spec.Probe"] = nil
    table.sort(r.problems)
    assert.are.same({
      "probe:1: parameters (a, c) but the real spec.Probe.f takes (a, b)",
      "spec.Probe.extra: a function of the real spec.Probe without an annotation",
      "spec.Probe.gone: the function is annotated but the real spec.Probe has none",
    }, r.problems)
    r = checker()
    compare_options(r, "kinformer.StartOptions", { "timeout", "on_progress", "new_one" })
    assert.are.same({ 'kinformer.StartOptions: the code accepts option "new_one", the class has no field for it' },
      r.problems)
  end)

  describe("against the modules", function()
    local modules = {
      "kinformer", "kinformer.manager", "kinformer.controller", "kinformer.ctx", "kinformer.sim",
      "kinformer.metrics", "kinformer.log", "kinformer.errors", "kinformer.leader_election",
      "kinformer.util.finalizer", "kinformer.util.owner", "kinformer.util.condition",
      "kinformer.replay", "kinformer.replay_compare", "kinformer.testing.replay", "kinformer.core",
      "kinformer.advise",
    }
    -- the command part of kinformer.replay (`kinformer replay`), not API
    local skip = { ["kinformer.replay"] = { main = true, usage = true } }
    for _, name in ipairs(modules) do
      it(name, function()
        local m = require(name)
        local r = checker()
        local mt = getmetatable(m)
        compare(r, name, m, { fields = true, skip = skip[name] or {},
          callable = type(mt) == "table" and rawget(mt, "__call") ~= nil })
        report(r)
      end)
    end

    it("has a definition file for each of them, and no other", function()
      local with_file = {}
      for _, f in ipairs(defs.files) do if f.module then with_file[f.module] = true end end
      for _, name in ipairs(modules) do
        if with_file[name] then with_file[name] = nil else with_file[name] = "missing" end
      end
      assert.are.same({}, with_file)
    end)
  end)

  describe("against the option lists of the code", function()
    local function lists()
      local manager = require "kinformer.manager"
      local controller = require "kinformer.controller"
      local replay_src = assert(io.open("lua/kinformer/replay.lua")):read("a")
      local replay_keys = {}
      for k in replay_src:match("local known = (%b{})"):gmatch("([%w_]+) = true") do replay_keys[#replay_keys + 1] = k end
      return {
        { "kinformer.ManagerOptions", manager.OPTIONS },
        { "kinformer.StartOptions", manager.START_OPTIONS },
        { "kinformer.ControllerConfig", controller.OPTIONS },
        { "kinformer.OwnsEntry", controller.ENTRY_OPTIONS.owns, { "[1]" } },
        { "kinformer.WatchesEntry", controller.ENTRY_OPTIONS.watches, { "[1]" } },
        { "kinformer.LeaderElectionOptions", require("kinformer.leader_election").OPTIONS },
        { "kinformer.ShardingOptions", require("kinformer.sharding").OPTIONS },
        { "kinformer.ConditionInput", require("kinformer.util.condition").CONDITION_OPTIONS },
        { "kinformer.ReplayOptions", replay_keys },
        { "kinformer.InformerOptions", c_known("csrc/lua/lenv.c", "mgr:informer's options") },
        { "kinformer.HandlerFuncs", c_known("csrc/lua/lhandler.c", "the handler table's callbacks") },
        { "kinformer.HandlerOptions", c_known("csrc/lua/lhandler.c", "add_handler's options") },
        { "kinformer.EventsOptions", c_known("csrc/lua/levent.c", "the events table's keys") },
        { "kinformer.RateLimiter", c_known("csrc/lua/lcontroller_spec.c", "rate_limiter = {...}}'s keys") },
        { "kinformer.ListOptions", c_known("csrc/lua/lclient.c", "client:list's options") },
        { "kinformer.CreateOptions", c_known("csrc/lua/lclient.c", "client:create's options") },
        { "kinformer.UpdateOptions", c_known("csrc/lua/lclient.c", "client:update's and update_status's options") },
        { "kinformer.PatchOptions", c_known("csrc/lua/lclient.c", "client:patch's options") },
        { "kinformer.ApplyOptions", c_known("csrc/lua/lclient.c", "client:apply's options") },
        { "kinformer.DeleteOptions", c_known("csrc/lua/lclient.c", "client:delete's options") },
        { "kinformer.SimOptions", c_known("csrc/lua/lsim.c", "kinformer.sim.start's options") },
        { "kinformer.SimFault", c_known("csrc/lua/lsim.c", "sim:fault's options") },
      }
    end
    for _, l in ipairs(lists()) do
      it(l[1], function()
        assert.is_true(#l[2] > 0, l[1] .. ": no keys read")
        local r = checker()
        compare_options(r, l[1], l[2], l[3])
        report(r)
      end)
    end
  end)

  describe("against the objects", function()
    local sim, mgr, inf, handler, ctl, ctx, rec, le, server, worker, watch, webhook
    local ctxmod = require "kinformer.ctx"

    setup(function()
      sim = assert(require("kinformer.sim").start { seed = "examples/website/seed.json" })
      mgr = assert(kinformer.manager { sim = sim })
      inf = assert(mgr:informer("v1/configmaps"))
      handler = inf:add_handler({ on_add = function() end }, { main = true })
      ctl = assert(mgr:controller { name = "types-spec", ["for"] = "v1/configmaps",
        reconciler = function() end })
      ctx = ctxmod.new(mgr.env, { controller = "types-spec", worker = 0,
        request = { namespace = "default", name = "x" } })
      rec = mgr:event_recorder("types-spec")
      le = require("kinformer.leader_election").new(mgr, { name = "types-spec" })
      server = assert(core.metrics_server { metrics_bind = "127.0.0.1:0", health_bind = "0", admin_bind = "0" })
      worker = assert(core.worker(function() end))
      watch = assert(core.fs_watch(mgr.env, { "spec" }, function() end))
      webhook = assert(mgr:webhook { name = "types-spec", resources = { "v1/configmaps" },
        validate = function() return true end })
    end)

    teardown(function()
      if watch then watch:close() end
      if worker then worker:close() end
      if server then server:close() end
      if le then le:close() end
      if mgr then mgr:stop() end
      if sim then sim:stop() end
    end)

    -- what each class is made from (a function: made in setup)
    local objects = {
      { "kinformer.Manager", function() return mgr end, { fields = true } },
      { "kinformer.Env", function() return mgr.env end },
      { "kinformer.Client", function() return mgr.client end },
      { "kinformer.Informer", function() return inf end },
      { "kinformer.Handler", function() return handler end },
      { "kinformer.Controller", function() return ctl end },
      { "kinformer.core.Controller", function() return rawget(ctl, "_ud") end },
      { "kinformer.EventRecorder", function() return rec end },
      { "kinformer.Object", function()
        return kinformer.object('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}')
      end },
      { "kinformer.Metric", function()
        return require("kinformer.metrics").counter { name = "types_spec_total", help = "types_spec" }
      end },
      { "kinformer.Logger", function() return require("kinformer.log").logger("c", "k") end, { fields = true } },
      { "kinformer.LeaderElection", function() return le end, { fields = true } },
      -- the elector is made by le:start (under the Lease name resolved then)
      { "kinformer.core.LeaderElector", function() return rawget(le, "_ud") or le:_make() end },
      { "kinformer.core.LabelSelector", function() return core.label_selector("team") end },
      { "kinformer.core.MetricsServer", function() return server end },
      { "kinformer.core.Worker", function() return worker end },
      { "kinformer.core.FsWatch", function() return watch end },
      { "kinformer.Webhook", function() return webhook end },
      { "kinformer.WebhookCtx", function()
        return require("kinformer.webhook_run").new_ctx(mgr.env, { name = "types-spec", deadline = 0 })
      end, { fields = true } },
      { "kinformer.core.WebhookServer", function() return require("kinformer.webhook").server(mgr) end },
    }
    for _, o in ipairs(objects) do
      it(o[1], function()
        local r = checker()
        compare(r, o[1], o[2](), o[3])
        report(r)
      end)
    end

    it("kinformer.Ctx (helpers checked against the functions they lend)", function()
      local r = checker()
      local real = members(ctx)
      for _, k in ipairs { "client", "log", "listers", "lister" } do real[k] = ctx[k] end -- lazy
      -- the helpers are wrappers (a, ...) of the module's functions; event
      -- forwards its arguments to the recorder's (C) event
      compare(r, "kinformer.Ctx", ctx, { methods = real, fields = true,
        delegate = function(name, f)
          if name == "event" then return nil end
          return ctxmod[name] or f
        end })
      report(r)
    end)

    it("kinformer.Sim (its own methods and the server's it forwards)", function()
      local r = checker()
      local real = members(sim)
      for k, f in pairs(members(rawget(sim, "_h"))) do
        if rawget(sim, k) == nil and real[k] == nil then real[k] = f end -- url, port, kubeconfig are fields
      end
      compare(r, "kinformer.Sim", sim, { methods = real, fields = true })
      report(r)
    end)

    it("covers every class with methods", function()
      local covered = { ["kinformer.Ctx"] = true, ["kinformer.Sim"] = true }
      for _, o in ipairs(objects) do covered[o[1]] = true end
      local uncovered = {}
      for _, name in ipairs(sorted_keys(defs.classes)) do
        local c = defs.classes[name]
        local is_module = false
        for _, f in ipairs(defs.files) do if f.module == name then is_module = true end end
        if next(c.funcs) and not covered[name] and not is_module then uncovered[#uncovered + 1] = name end
      end
      assert.are.same({}, uncovered)
    end)
  end)
end)
