-- Hot reload (issue 15) against kinformer.sim: ctl:reload() swaps the
-- workers' code between reconciles and keeps the queue and each key's
-- backoff; code that fails to load is reported with file:line and the old
-- code keeps running; ctl:stop() and the reuse of a name; a name
-- registered twice; mgr:controllers(); `kinformer run --watch` in a child
-- process.
--
-- The reconciler is a module in a temporary directory on package.path
-- (worker states inherit it) that stamps the ConfigMap it reconciles with
-- the annotation reload-spec/version = its VERSION; the spec rewrites the
-- module's file.
local kinformer = require "kinformer"
local support_mgr = require "support.mgr"
local proc = require "support.proc"
local quiet = require "support.quiet"

local sim, tmpdir
local nmod = 0

local function sh(cmd) assert(os.execute(cmd)) end

-- Source of a reconciler that stamps the ConfigMap with version (and,
-- with fail, then fails: the key retries with backoff).
local function source(version, fail)
  return ([[
local VERSION = %q
return function(req, ctx)
  local obj = ctx.client:get("v1/configmaps", req.namespace, req.name)
  if not obj then return end
  obj.metadata.annotations = obj.metadata.annotations or {}
  if obj.metadata.annotations["reload-spec/version"] ~= VERSION then
    obj.metadata.annotations["reload-spec/version"] = VERSION
    local _, err = ctx.client:update(obj)
    if err then return nil, err end
  end
  %s
end
]]):format(version, fail and 'return nil, "failing on purpose"' or "")
end

-- A function loaded from source (VERSION a local of its own) that stamps
-- version.
local function fn(version)
  local src = source(version):gsub("^local VERSION = (%b\"\")\nreturn function%(req, ctx%)\n",
    "return function(req, ctx)\n  local VERSION = %1\n")
  return assert(load(src, "=" .. version))()
end

-- A new module with that source; returns its name and file.
local function module(version, fail)
  nmod = nmod + 1
  local name = ("kin_reload_spec_m%d"):format(nmod)
  local file = ("%s/%s.lua"):format(tmpdir, name)
  proc.write(file, source(version, fail))
  return name, file
end

local function new_namespace(mgr) return support_mgr.new_namespace(mgr, "reload") end

local function cm(ns, name)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { namespace = ns, name = name }, data = { x = "1" } }
end

local function version_of(mgr, ns, name)
  local o = mgr.client:get("v1/configmaps", ns, name)
  return o and o.metadata.annotations and o.metadata.annotations["reload-spec/version"]
end

describe("hot reload", function()
  local mgr, ns

  setup(function()
    sim = assert(require("kinformer.sim").start {})
    tmpdir = os.tmpname()
    os.remove(tmpdir)
    sh("mkdir -p " .. tmpdir)
    package.path = tmpdir .. "/?.lua;" .. package.path
  end)

  teardown(function()
    if sim then sim:stop() end
    if tmpdir then sh("rm -rf " .. tmpdir) end
  end)

  before_each(function()
    mgr = assert(kinformer.manager { kubeconfig = sim.kubeconfig })
    ns = new_namespace(mgr)
  end)

  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
  end)

  it("ctl:reload() runs the module's new code in every worker and in reconcile_once", function()
    local mod, file = module("v1")
    local ctl = mgr:controller { name = "reload-a", ["for"] = "v1/configmaps", reconciler = mod,
                                 workers = 2, informer_opts = { namespace = ns } }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "v1" end))
    -- reconcile_once on an object the controller does not watch
    local other = new_namespace(mgr)
    assert(mgr.client:create("v1/configmaps", cm(other, "x")))
    assert.is_true(ctl:reconcile_once { namespace = other, name = "x" })
    assert.equal("v1", version_of(mgr, other, "x"))

    proc.write(file, source("v2"))
    -- the file changed and package.loaded was cleared, nothing reloaded:
    -- the workers and reconcile_once both keep v1
    package.loaded[mod] = nil
    assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "b") == "v1" end))
    assert(mgr.client:create("v1/configmaps", cm(other, "y")))
    assert.is_true(ctl:reconcile_once { namespace = other, name = "y" })
    assert.equal("v1", version_of(mgr, other, "y"))

    assert.is_true(ctl:reload())
    -- both workers run v2 (four keys over two workers)
    assert(ctl:enqueue(ns, "a"))
    assert(ctl:enqueue(ns, "b"))
    assert(mgr.client:create("v1/configmaps", cm(ns, "c")))
    assert(mgr.client:create("v1/configmaps", cm(ns, "d")))
    for _, n in ipairs { "a", "b", "c", "d" } do
      assert(mgr:wait_for(function() return version_of(mgr, ns, n) == "v2" end), n)
    end
    assert.is_true(ctl:reconcile_once { namespace = other, name = "x" })
    assert.equal("v2", version_of(mgr, other, "x"))
    assert.equal(0, ctl:stats().reconcile_errors)
  end)

  it("ctl:reload(fn) replaces a function reconciler; reconcile_once follows", function()
    local ctl = mgr:controller { name = "reload-fn", ["for"] = "v1/configmaps",
                                 informer_opts = { namespace = ns },
                                 reconciler = fn("f1") }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "f1" end))
    -- f1's own write of "a" enqueues it once more: that reconcile must be
    -- f1's too, or f2 would stamp "a" before the reconcile_once below
    assert(mgr:wait_for(function()
      return ctl:stats().reconcile_success >= 2 and ctl:queue_len() == 0 and #ctl:busy() == 0
    end))
    assert.is_true(ctl:reload(fn("f2")))
    assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "b") == "f2" end))
    -- misuse raises at the caller's line: an upvalue that cannot be sent
    local co = coroutine.create(function() end)
    local ok, err = pcall(function()
      local r = ctl:reload(function() return co end)
      return r
    end)
    assert.is_false(ok)
    assert.matches("^spec/reload_spec%.lua:%d+: ctl:reload: reconciler: cannot send to worker threads: " ..
                   "upvalue 'co' %(a coroutine%); a reconciler runs in its own Lua state", err)
    -- reconcile_once runs f2 in this state
    local o = assert(mgr.client:get("v1/configmaps", ns, "a"))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "f1" end))
    assert.is_true(ctl:reconcile_once { namespace = ns, name = "a" })
    assert.equal("f2", version_of(mgr, ns, "a"))
    assert.truthy(o)
  end)

  it("ctl:reload(closure) sends the closure's upvalues as they are at the reload", function()
    local version = "c1"
    local ANNOTATION = "reload-spec/version"
    local function stamp(obj)
      obj.metadata.annotations = obj.metadata.annotations or {}
      if obj.metadata.annotations[ANNOTATION] == version then return false end
      obj.metadata.annotations[ANNOTATION] = version
      return true
    end
    local function reconcile(req, ctx)
      local obj = ctx.client:get("v1/configmaps", req.namespace, req.name)
      if obj and stamp(obj) then
        local _, err = ctx.client:update(obj)
        if err then return nil, err end
      end
    end
    local ctl = mgr:controller { name = "reload-closure", ["for"] = "v1/configmaps",
                                 informer_opts = { namespace = ns }, reconciler = reconcile }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "c1" end))
    -- the workers run on their copy: a change here is not seen there
    version = "c2"
    assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "b") == "c1" end))
    -- until the reload copies the upvalues again
    assert.is_true(ctl:reload(reconcile))
    assert(mgr.client:create("v1/configmaps", cm(ns, "c")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "c") == "c2" end))
    ctl:enqueue(ns, "a")
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "c2" end))
    assert.equal(0, ctl:stats().reconcile_errors)
  end)

  quiet.it(it, "keeps the queue and each key's backoff across a reload",
    { "reload%-backoff: Reconciler error for reload%-%d+/a: failing on purpose" }, function()
    local mod, file = module("b1", true)
    local ctl = mgr:controller { name = "reload-backoff", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns },
                                 rate_limiter = { base_delay = 0.02, max_delay = 0.05 } }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    local key = ns .. "/a"
    assert(mgr:wait_for(function() return ctl:num_requeues(key) >= 3 end))
    proc.write(file, source("b2", true))
    assert.is_true(ctl:reload())
    local before = ctl:num_requeues(key)
    -- the new code runs (still failing): the count goes on from where it
    -- was, it does not start over at 1
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "b2" end))
    assert(mgr:wait_for(function() return ctl:num_requeues(key) > before end))
    assert.is_true(ctl:num_requeues(key) > before)
    -- fixed: the key succeeds and its backoff is forgotten
    proc.write(file, source("b3"))
    assert.is_true(ctl:reload())
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "b3" end))
    assert(mgr:wait_for(function() return ctl:num_requeues(key) == 0 end))
    assert.is_true(ctl:stats().reconcile_errors >= 4)
  end)

  it("code that fails to load is reported with file:line and the old code keeps running", function()
    local mod, file = module("k1")
    local ctl = mgr:controller { name = "reload-broken", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "k1" end))

    -- a syntax error on line 3
    proc.write(file, "local VERSION = 'k2'\nreturn function(req, ctx)\n  if then end\nend\n")
    local ok, msg, code = ctl:reload()
    assert.is_nil(ok)
    assert.equal("EINVAL", code)
    assert.matches(mod .. "%.lua:3:", msg)
    assert.matches('controller "reload%-broken"', msg)
    assert.is_nil(msg:find("stack traceback", 1, true))
    -- an error raised by the module's body, line 2
    proc.write(file, "local x = 1\nerror('no config here')\n")
    ok, msg = ctl:reload()
    assert.is_nil(ok)
    assert.matches(mod .. "%.lua:2: no config here", msg)
    -- a module that returns no reconciler
    proc.write(file, "return 42\n")
    ok, msg = ctl:reload()
    assert.is_nil(ok)
    assert.matches("returned a number", msg)
    proc.write(file, "return { other = function() end }\n")
    ok, msg = ctl:reload()
    assert.is_nil(ok)
    assert.matches("no function 'reconcile'", msg)

    -- the old code still runs
    assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "b") == "k1" end))
    assert.equal(0, ctl:stats().reconcile_errors)
  end)

  it("ctl:stop() stops one controller; its name can be registered again", function()
    local mod = module("s1")
    local ctl = mgr:controller { name = "reload-stop", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    proc.write(tmpdir .. "/kin_reload_spec_noop.lua", "return function() end\n")
    local other = mgr:controller { name = "reload-other", ["for"] = "v1/configmaps",
                                   reconciler = "kin_reload_spec_noop", informer_opts = { namespace = ns } }
    assert(mgr:start { timeout = 30 })
    local list = mgr:controllers()
    assert.equal(2, #list)
    assert.equal(ctl, list[1])
    assert.equal(other, list[2])
    assert.equal(ctl, list["reload-stop"])
    assert.equal(other, list["reload-other"])

    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "s1" end))
    ctl:stop()
    assert.equal(1, #mgr:controllers())
    assert.is_nil(mgr:controllers()["reload-stop"])
    -- stopped: a new object is not reconciled by it (the other controller
    -- still runs and sees it)
    assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    assert(mgr:wait_for(function() return other:stats().reconcile_success >= 2 end))
    assert.is_nil(version_of(mgr, ns, "b"))

    -- the name again, new code: it runs at once (the manager runs)
    local mod2 = module("s2")
    local ctl2 = mgr:controller { name = "reload-stop", ["for"] = "v1/configmaps", reconciler = mod2,
                                  informer_opts = { namespace = ns } }
    assert.are_not.equal(ctl, ctl2)
    assert(mgr:wait_for(function() return version_of(mgr, ns, "b") == "s2" end))
    assert.equal(ctl2, mgr:controllers()["reload-stop"])
    assert.equal(2, #mgr:controllers())
    -- one set of series under the name: the stopped controller's went
    local n = 0
    for line in require("kinformer.metrics").render():gmatch("[^\n]+") do
      if line:find('^controller_runtime_max_concurrent_reconciles{controller="reload%-stop"}') then n = n + 1 end
    end
    assert.equal(1, n)
  end)

  it("ctl:reload() reloads a watch's module map function too", function()
    -- map: a Secret enqueues the ConfigMap named in the module's TARGET
    local function map_source(target)
      return ("return function(obj) return { { namespace = obj.metadata.namespace, name = %q } } end\n")
        :format(target)
    end
    nmod = nmod + 1
    local map = ("kin_reload_spec_map%d"):format(nmod)
    local mapf = ("%s/%s.lua"):format(tmpdir, map)
    proc.write(mapf, map_source("a"))
    local mod = module("m1")
    local ctl = mgr:controller { name = "reload-map", reconciler = mod, informer_opts = { namespace = ns },
                                 watches = { { "v1/secrets", map = map } } }
    assert(mgr:start { timeout = 30 })
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr.client:create("v1/configmaps", cm(ns, "b")))
    local secret = { apiVersion = "v1", kind = "Secret", metadata = { namespace = ns, name = "s1" } }
    assert(mgr.client:create("v1/secrets", secret))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "m1" end))
    assert.is_nil(version_of(mgr, ns, "b"))

    proc.write(mapf, map_source("b"))
    assert.is_true(ctl:reload())
    secret.metadata.name = "s2"
    assert(mgr.client:create("v1/secrets", secret))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "b") == "m1" end))

    -- a broken map module: reported, nothing swapped (the reconciler neither)
    proc.write(mapf, "return function(obj)\n  return {{ name = }}\nend\n")
    local ok, msg = ctl:reload()
    assert.is_nil(ok)
    assert.matches("map v1/secrets failed", msg, 1, true)
    assert.matches(map .. "%.lua:2:", msg)
  end)

  it("a name registered twice raises; replace = true stops the old one", function()
    local mod = module("d1")
    local ctl = mgr:controller { name = "reload-dup", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
    local ok, err = pcall(function()
      local c = mgr:controller { name = "reload-dup", ["for"] = "v1/configmaps", reconciler = mod,
                                 informer_opts = { namespace = ns } }
      return c
    end)
    assert.is_false(ok)
    assert.matches("^spec/reload_spec%.lua:%d+: ", err) -- the user's line
    assert.matches('controller "reload%-dup" is already registered %(ctl:stop%(%) it, or pass replace = true%)',
                   err, 1, false)
    assert.equal(1, #mgr:controllers())
    -- the default name (the For kind, lower case) counts too
    local ns2 = new_namespace(mgr)
    mgr:controller { ["for"] = "v1/configmaps", reconciler = mod, informer_opts = { namespace = ns2 } }
    ok, err = pcall(mgr.controller, mgr, { ["for"] = "v1/configmaps", reconciler = mod,
                                           informer_opts = { namespace = ns2 } })
    assert.is_false(ok)
    assert.matches('controller "configmap" is already registered', err, 1, false)

    assert(mgr:start { timeout = 30 })
    local mod2 = module("d2")
    local ctl2 = mgr:controller { name = "reload-dup", ["for"] = "v1/configmaps", reconciler = mod2,
                                  informer_opts = { namespace = ns }, replace = true }
    assert.equal(ctl2, mgr:controllers()["reload-dup"])
    assert.equal(2, #mgr:controllers())
    -- the old one was stopped (and, replaced, freed)
    assert.has_error(function() ctl:stats() end)
    assert(mgr.client:create("v1/configmaps", cm(ns, "a")))
    assert(mgr:wait_for(function() return version_of(mgr, ns, "a") == "d2" end))
  end)
end)

describe("kinformer run --watch", function()
  local sim2, dir, mgr

  setup(function()
    sim2 = assert(require("kinformer.sim").start {})
    dir = os.tmpname()
    os.remove(dir)
    sh("mkdir -p " .. dir)
    mgr = assert(kinformer.manager { kubeconfig = sim2.kubeconfig })
    for _, n in ipairs { "watch-a", "watch-b" } do
      assert(mgr.client:create("v1/namespaces", { apiVersion = "v1", kind = "Namespace", metadata = { name = n } }))
    end
  end)

  teardown(function()
    if mgr then mgr:stop() end
    if sim2 then sim2:stop() end
    if dir then sh("rm -rf " .. dir) end
  end)

  -- The script: a module controller in watch-a, an inline one in watch-b
  -- stamping `inline`: a closure whose upvalues (a constant, a config
  -- table, a helper) are all that changes from one version to the next;
  -- tail is appended (a comment changes the file, not the code).
  local function script(inline, tail)
    return ([[
local mgr = ...
package.path = %q .. "/?.lua;" .. package.path
mgr:controller { name = "watched", ["for"] = "v1/configmaps", reconciler = "kin_watch_mod",
                 informer_opts = { namespace = "watch-a" } }
local INLINE = %q
local config = { annotation = "reload-spec/version" }
local function stamped(obj) return obj.metadata.annotations[config.annotation] == INLINE end
mgr:controller { name = "inline", ["for"] = "v1/configmaps", informer_opts = { namespace = "watch-b" },
  reconciler = function(req, ctx)
    local obj = ctx.client:get("v1/configmaps", req.namespace, req.name)
    if not obj then return end
    obj.metadata.annotations = obj.metadata.annotations or {}
    if not stamped(obj) then
      obj.metadata.annotations[config.annotation] = INLINE
      local _, err = ctx.client:update(obj)
      if err then return nil, err end
    end
  end }
]]):format(dir, inline) .. (tail or "")
  end

  it("--watch is an option of run", function()
    local cli = require "kinformer.cmd.cli"
    assert.is_true(assert(cli.parse { "run", "x.lua", "--watch" }).watch)
    assert.is_nil(cli.parse { "run", "x.lua" }.watch)
    local o, err = cli.parse { "manifests", "x.lua", "--watch" }
    assert.is_nil(o)
    assert.equal("--watch is an option of run", err)
    assert.matches("--watch", cli.usage, 1, true)
  end)

  it("reloads on a change of the module or the script, keeps the old code on a broken file", function()
    local modf, scriptf = dir .. "/kin_watch_mod.lua", dir .. "/watch_op.lua"
    proc.write(modf, source("w1"))
    proc.write(scriptf, script("s1"))
    local log = os.tmpname()
    local p = assert(io.popen(string.format(
      "%s bin/kinformer run %s --watch --kubeconfig %s >%s 2>&1 & echo $!",
      proc.paths_env(), scriptf, sim2.kubeconfig, log)))
    local pid = assert(tonumber(p:read("a"):match("%d+")))
    p:close()
    local function logged(pat)
      return function() return proc.read(log):find(pat) ~= nil end
    end
    local ok, err = pcall(function()
      assert(mgr:wait_for(logged("watching .* for changes"), 30), "watching")
      assert(mgr.client:create("v1/configmaps", cm("watch-a", "a")))
      assert(mgr.client:create("v1/configmaps", cm("watch-b", "a")))
      assert(mgr:wait_for(function() return version_of(mgr, "watch-a", "a") == "w1" end, 20))
      assert(mgr:wait_for(function() return version_of(mgr, "watch-b", "a") == "s1" end, 20))

      -- the module file rewritten
      proc.write(modf, source("w2"))
      assert(mgr:wait_for(logged('reloaded controller "watched" %(' .. dir:gsub("%p", "%%%0")
        .. "/kin_watch_mod%.lua%)"), 20), "reload logged")
      assert(mgr.client:create("v1/configmaps", cm("watch-a", "b")))
      assert(mgr:wait_for(function() return version_of(mgr, "watch-a", "b") == "w2" end, 20))

      -- broken: a syntax error on line 3; the old code (w2) keeps running
      proc.write(modf, "local VERSION = 'w3'\nreturn function(req, ctx)\n  if then end\nend\n")
      assert(mgr:wait_for(logged('controller "watched": reload of the reconciler failed, the old code keeps '
        .. "running: [^\n]*kin_watch_mod%.lua:3:"), 20), "error logged")
      assert(mgr.client:create("v1/configmaps", cm("watch-a", "c")))
      assert(mgr:wait_for(function() return version_of(mgr, "watch-a", "c") == "w2" end, 20))

      -- the script rewritten with the same code: nothing reloads
      proc.write(scriptf, script("s1", "-- a comment\n"))
      os.execute("sleep 0.5")
      -- the script's inline reconciler changed: only the value of its upvalue
      proc.write(scriptf, script("s2", "-- a comment\n"))
      assert(mgr:wait_for(logged('reloaded controller "inline"'), 20), "inline reload logged")
      local _, reloads = proc.read(log):gsub('reloaded controller "inline"', "")
      assert.equal(1, reloads)
      assert(mgr.client:create("v1/configmaps", cm("watch-b", "b")))
      assert(mgr:wait_for(function() return version_of(mgr, "watch-b", "b") == "s2" end, 20))
      -- a script that does not load: logged with its line, nothing changes
      proc.write(scriptf, "local mgr = ...\nmgr:controller {\n")
      assert(mgr:wait_for(logged("watch_op%.lua:%d+: [^\n]*expected"), 20), "script error logged")
      assert.is_nil(proc.read(log):find('reloaded controller "watched" %([^\n]-watch_op'))
    end)
    os.execute("kill -TERM " .. pid)
    assert(mgr:wait_for(function() return not os.execute("kill -0 " .. pid .. " 2>/dev/null") end, 30), "exit")
    local out = proc.read(log, true)
    assert(ok, tostring(err) .. "\n" .. out)
    assert.matches("kinformer: stopped", out)
  end)
end)
