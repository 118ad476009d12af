-- kinformer.ctx (lua/kinformer/ctx.lua) and kinformer.errors: the helpers a
-- reconciler gets, and terminal errors.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local ctxmod = require "kinformer.ctx"

-- A Website; without lists metadata fields to leave out.
local function owner(without)
  local o = { apiVersion = "example.com/v1", kind = "Website",
              metadata = { name = "site", namespace = "web", uid = "uid-site" } }
  for _, k in ipairs(without or {}) do o.metadata[k] = nil end
  return o
end

local function child()
  return { apiVersion = "apps/v1", kind = "Deployment", metadata = { name = "site", namespace = "web" } }
end

-- Runs Lua code in a fresh interpreter with this process's paths and the
-- given log level; returns its stderr (kin's log).
local function run_lua(code, level)
  local script, errf = os.tmpname(), os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write(string.format("package.path = %q\npackage.cpath = %q\n", package.path, package.cpath), code)
  f:close()
  local ok = os.execute("KINFORMER_LOG_LEVEL=" .. level .. " lua5.4 " .. script .. " 2>" .. errf)
  f = assert(io.open(errf))
  local log = f:read("a")
  f:close()
  os.remove(script)
  os.remove(errf)
  assert(ok, log)
  return log
end

describe("kinformer.ctx helpers", function()
  it("are the functions of the module that owns each, usable without a ctx", function()
    local fin = require "kinformer.util.finalizer"
    local own = require "kinformer.util.owner"
    local cond = require "kinformer.util.condition"
    for mod, names in pairs {
      [fin] = { "has_finalizer", "ensure_finalizer", "remove_finalizer", "is_being_deleted" },
      [own] = { "set_controller_reference", "set_owner_reference" },
      [cond] = { "get_condition", "set_condition", "is_condition_true" },
    } do
      for _, name in ipairs(names) do
        assert.is_function(mod[name], name)
        assert.are.equal(mod[name], ctxmod[name], name)
      end
    end
    assert.are.equal(require("kinformer.log").logger, ctxmod.logger)
    local o = child()
    assert.is_true(fin.ensure_finalizer(o, "example.com/f"))
    assert.is_true(own.set_controller_reference(owner(), o))
    assert.is_true(cond.set_condition(o, { type = "Ready", status = "True", reason = "Up" }))
    assert.is_true(cond.is_condition_true(o, "Ready"))
    assert.are.equal("uid-site", o.metadata.ownerReferences[1].uid)
  end)

  describe("finalizers", function()
    it("ensure_finalizer adds once and says whether it added", function()
      local o = { metadata = { name = "a" } }
      assert.is_false(ctxmod.has_finalizer(o, "example.com/f"))
      assert.is_true(ctxmod.ensure_finalizer(o, "example.com/f"))
      assert.are.same({ "example.com/f" }, o.metadata.finalizers)
      assert.is_false(ctxmod.ensure_finalizer(o, "example.com/f"))
      assert.are.same({ "example.com/f" }, o.metadata.finalizers)
      assert.is_true(ctxmod.ensure_finalizer(o, "other/g"))
      assert.are.same({ "example.com/f", "other/g" }, o.metadata.finalizers)
      assert.is_true(ctxmod.has_finalizer(o, "other/g"))
    end)

    it("ensure_finalizer makes metadata when there is none", function()
      local o = {}
      assert.is_true(ctxmod.ensure_finalizer(o, "f"))
      assert.are.same({ finalizers = { "f" } }, o.metadata)
    end)

    it("remove_finalizer removes every copy, keeps the others, and drops an emptied list", function()
      local o = { metadata = { finalizers = { "a", "f", "b", "f" } } }
      assert.is_true(ctxmod.remove_finalizer(o, "f"))
      assert.are.same({ "a", "b" }, o.metadata.finalizers)
      assert.is_false(ctxmod.remove_finalizer(o, "f"))
      assert.is_true(ctxmod.remove_finalizer(o, "a"))
      assert.is_true(ctxmod.remove_finalizer(o, "b"))
      assert.is_nil(o.metadata.finalizers)
      assert.is_false(ctxmod.remove_finalizer({}, "a"))
    end)

    it("raises on misuse", function()
      assert.has_error(function() ctxmod.ensure_finalizer(nil, "f") end)
      assert.has_error(function() ctxmod.ensure_finalizer({}, "") end)
      assert.has_error(function() ctxmod.has_finalizer({}, 3) end)
    end)
  end)

  describe("is_being_deleted", function()
    it("follows metadata.deletionTimestamp", function()
      assert.is_false(ctxmod.is_being_deleted { metadata = { name = "a" } })
      assert.is_false(ctxmod.is_being_deleted {})
      assert.is_false(ctxmod.is_being_deleted { metadata = { deletionTimestamp = core.null } })
      assert.is_true(ctxmod.is_being_deleted { metadata = { deletionTimestamp = "2024-01-01T00:00:00Z" } })
    end)
  end)

  describe("set_controller_reference", function()
    it("adds a controller reference with blockOwnerDeletion", function()
      local o = child()
      assert.is_true(ctxmod.set_controller_reference(owner(), o))
      assert.are.same({ {
        apiVersion = "example.com/v1", kind = "Website", name = "site", uid = "uid-site",
        controller = true, blockOwnerDeletion = true,
      } }, o.metadata.ownerReferences)
    end)

    it("is idempotent and refreshes the reference to the same owner (any version)", function()
      local o = child()
      assert.is_true(ctxmod.set_controller_reference(owner(), o))
      local o2 = owner()
      o2.apiVersion = "example.com/v2"
      assert.is_true(ctxmod.set_controller_reference(o2, o))
      assert.are.equal(1, #o.metadata.ownerReferences)
      assert.are.equal("example.com/v2", o.metadata.ownerReferences[1].apiVersion)
    end)

    it("keeps other owners' plain references", function()
      local o = child()
      o.metadata.ownerReferences = { { apiVersion = "v1", kind = "ConfigMap", name = "cfg", uid = "u1" } }
      assert.is_true(ctxmod.set_controller_reference(owner(), o))
      assert.are.equal(2, #o.metadata.ownerReferences)
      assert.are.equal("cfg", o.metadata.ownerReferences[1].name)
      assert.is_true(o.metadata.ownerReferences[2].controller)
    end)

    it("refuses an object that another controller owns (AlreadyOwned), leaving it unchanged", function()
      local o = child()
      o.metadata.ownerReferences = { { apiVersion = "example.com/v1", kind = "Website", name = "other",
                                       uid = "u2", controller = true } }
      local ok, msg, code = ctxmod.set_controller_reference(owner(), o)
      assert.is_nil(ok)
      assert.are.equal("AlreadyOwned", code)
      assert.matches("web/site is already owned by another Website controller other", msg, 1, true)
      assert.are.equal(1, #o.metadata.ownerReferences)
      assert.are.equal("other", o.metadata.ownerReferences[1].name)
      -- a different kind with the same name is another owner too
      o.metadata.ownerReferences[1] = { apiVersion = "v1", kind = "ConfigMap", name = "site", uid = "u3", controller = true }
      assert.are.equal("AlreadyOwned", select(3, ctxmod.set_controller_reference(owner(), o)))
    end)

    it("refuses owners in another namespace", function()
      local o = child()
      o.metadata.namespace = "elsewhere"
      local ok, msg, code = ctxmod.set_controller_reference(owner(), o)
      assert.is_nil(ok)
      assert.are.equal("Invalid", code)
      assert.matches("cross-namespace", msg, 1, true)
      assert.is_nil(o.metadata.ownerReferences)
      -- a cluster-scoped owner may own a namespaced object
      assert.is_true(ctxmod.set_controller_reference(owner { "namespace" }, o))
    end)

    it("blames the caller's line for misuse", function()
      local fin = require "kinformer.util.finalizer"
      for _, call in ipairs {
        function() ctxmod.set_controller_reference(owner { "uid" }, child()) end,
        function() ctxmod.set_owner_reference(nil, child()) end,
        function() ctxmod.set_owner_reference(owner(), 7) end,
        function() fin.remove_finalizer({}, 3) end,
        function() fin.has_finalizer(nil, "f") end,
      } do
        local ok, err = pcall(call)
        assert.is_false(ok)
        assert.matches("ctx_spec.lua:%d+: ", err)
      end
    end)

    it("raises when the owner has no identity", function()
      assert.has_error(function() ctxmod.set_controller_reference(owner { "uid" }, child()) end,
        nil)
      assert.has_error(function() ctxmod.set_controller_reference({ metadata = { name = "x", uid = "u" } }, child()) end)
      assert.has_error(function() ctxmod.set_controller_reference(owner(), nil) end)
      local ok, err = pcall(ctxmod.set_controller_reference, owner { "uid" }, child())
      assert.is_false(ok)
      assert.matches("metadata.uid", err, 1, true)
    end)
  end)

  describe("set_owner_reference", function()
    it("adds a plain reference, and keeps the controller flag of an existing one", function()
      local o = child()
      assert.is_true(ctxmod.set_owner_reference(owner(), o))
      assert.are.same({ { apiVersion = "example.com/v1", kind = "Website", name = "site", uid = "uid-site" } },
        o.metadata.ownerReferences)
      local o2 = child()
      assert.is_true(ctxmod.set_controller_reference(owner(), o2))
      assert.is_true(ctxmod.set_owner_reference(owner(), o2))
      assert.are.equal(1, #o2.metadata.ownerReferences)
      assert.is_true(o2.metadata.ownerReferences[1].controller)
      -- owned by another controller is fine for a plain reference
      local o3 = child()
      o3.metadata.ownerReferences = { { apiVersion = "v1", kind = "ConfigMap", name = "x", uid = "u", controller = true } }
      assert.is_true(ctxmod.set_owner_reference(owner(), o3))
      assert.are.equal(2, #o3.metadata.ownerReferences)
    end)
  end)

  describe("set_condition", function()
    it("adds a condition with lastTransitionTime and the object's generation", function()
      local o = { metadata = { name = "a", generation = 3.0 } }
      assert.is_true(ctxmod.set_condition(o, { type = "Ready", status = "False", reason = "Pending", message = "wait" }))
      local c = o.status.conditions[1]
      assert.are.equal("Ready", c.type)
      assert.are.equal("False", c.status)
      assert.are.equal("Pending", c.reason)
      assert.are.equal("wait", c.message)
      assert.are.equal(3, c.observedGeneration)
      assert.are.equal("integer", math.type(c.observedGeneration))
      assert.matches("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$", c.lastTransitionTime)
      assert.is_true(os.time() - os.time { year = tonumber(c.lastTransitionTime:sub(1, 4)), month = 1, day = 1 } >= 0)
    end)

    it("changes lastTransitionTime only when the status changes", function()
      local o = { metadata = { generation = 1 } }
      ctxmod.set_condition(o, { type = "Ready", status = "False", reason = "A", last_transition_time = "2020-01-01T00:00:00Z" })
      -- same status, new reason and generation: time kept, others updated
      o.metadata.generation = 2
      assert.is_true(ctxmod.set_condition(o, { type = "Ready", status = "False", reason = "B", message = "m" }))
      local c = ctxmod.get_condition(o, "Ready")
      assert.are.equal("2020-01-01T00:00:00Z", c.lastTransitionTime)
      assert.are.equal("B", c.reason)
      assert.are.equal("m", c.message)
      assert.are.equal(2, c.observedGeneration)
      -- nothing changed: false
      assert.is_false(ctxmod.set_condition(o, { type = "Ready", status = "False", reason = "B", message = "m" }))
      assert.are.equal("2020-01-01T00:00:00Z", c.lastTransitionTime)
      -- status changes: new time
      assert.is_true(ctxmod.set_condition(o, { type = "Ready", status = "True", reason = "Up" }))
      assert.are.equal("True", c.status)
      assert.are_not.equal("2020-01-01T00:00:00Z", c.lastTransitionTime)
      assert.are.equal(1, #o.status.conditions)
      assert.is_true(ctxmod.is_condition_true(o, "Ready"))
    end)

    it("keeps other conditions and takes an explicit observed_generation", function()
      local o = { status = { conditions = { { type = "Other", status = "True", lastTransitionTime = "t0" } } } }
      ctxmod.set_condition(o, { type = "Ready", status = "Unknown", observed_generation = 9 })
      assert.are.equal(2, #o.status.conditions)
      assert.are.equal("t0", ctxmod.get_condition(o, "Other").lastTransitionTime)
      assert.are.equal(9, ctxmod.get_condition(o, "Ready").observedGeneration)
      assert.is_nil(ctxmod.get_condition(o, "Missing"))
      assert.is_false(ctxmod.is_condition_true(o, "Ready"))
    end)

    it("raises on a bad condition", function()
      assert.has_error(function() ctxmod.set_condition({}, { type = "Ready", status = "yes" }) end)
      assert.has_error(function() ctxmod.set_condition({}, { status = "True" }) end)
      assert.has_error(function() ctxmod.set_condition({}, nil) end)
    end)
  end)

  describe("terminal errors", function()
    it("are tables C can recognise, with a message and tostring", function()
      local t = kinformer.terminal("spec.image is required")
      assert.are.equal("table", type(t))
      assert.are.equal(true, rawget(t, "kinformer_terminal"))
      assert.are.equal("spec.image is required", t.message)
      assert.are.equal("terminal error: spec.image is required", tostring(t))
      assert.is_true(kinformer.is_terminal(t))
      assert.are.equal(t, kinformer.terminal(t))
    end)

    it("wrap any value and are told apart from ordinary errors", function()
      assert.is_false(kinformer.is_terminal("oops"))
      assert.is_false(kinformer.is_terminal(nil))
      assert.is_false(kinformer.is_terminal({ message = "x" }))
      assert.is_true(kinformer.is_terminal({ kinformer_terminal = true, message = "copied" }))
      assert.are.equal("42", kinformer.terminal(42).message)
      assert.are.equal("inner", kinformer.terminal({ message = "inner" }).message)
      local ok, e = pcall(error, kinformer.terminal("raised"))
      assert.is_false(ok)
      assert.is_true(kinformer.is_terminal(e))
      assert.are.equal(require("kinformer.errors").terminal, kinformer.terminal)
      assert.are.equal(kinformer.terminal, ctxmod.terminal)
    end)
  end)
end)

describe("kinformer.ctx.new", function()
  local sim, env
  setup(function()
    sim = assert(require("kinformer.sim").start {})
    env = assert(core.env { kubeconfig = sim.kubeconfig })
    assert(env:informer("v1/configmaps"))
  end)
  teardown(function()
    env:close()
    sim:stop()
  end)

  it("has the request, names, a cached client and listers", function()
    local req = { namespace = "default", name = "a" }
    local ctx = ctxmod.new(env, { controller = "c1", worker = 2, request = req })
    assert.are.equal("default/a", ctx.request.key)
    assert.are.equal("c1", ctx.controller)
    assert.are.equal(2, ctx.worker)
    assert.matches("^kinformer.client", tostring(ctx.client))
    local ctx2 = ctxmod.new(env, { controller = "c1" })
    assert.are.equal(ctx.client, ctx2.client) -- one per env and state
    local l = ctx.listers["v1/configmaps"]
    assert.matches("kinformer.informer v1/configmaps", tostring(l))
    assert.are.equal(l, ctx2.listers["v1/configmaps"])
    assert.are.equal(l, ctx.lister("v1/configmaps"))
    local lok, lerr = pcall(function() return ctx:lister("v1/configmaps") end)
    assert.is_false(lok)
    assert.matches("ctx:lister(name): call it as ctx.lister(name)", lerr, 1, true)
    assert.is_nil(ctx.listers["v1/pods"])
    local none, msg, code = ctx.lister("v1/pods")
    assert.is_nil(none)
    assert.are.equal("ENOENT", code)
    assert.matches("v1/pods", msg, 1, true)
    assert.has_error(function() ctxmod.new(nil, {}) end)
  end)

  it("works in a worker state", function()
    local w <close> = assert(core.worker(function(kubeconfig)
      local e = assert(require("kinformer.core").env { kubeconfig = kubeconfig })
      local ctx = require("kinformer.ctx").new(e, { controller = "w", request = { name = "cluster-thing" } })
      local o = assert(ctx.client:create { apiVersion = "v1", kind = "ConfigMap",
                                           metadata = { name = "ctx-worker", namespace = "default" } })
      local _, _, code = ctx.lister("v1/pods")
      return table.concat({ ctx.request.key, o.metadata.uid, code }, " ")
    end))
    local out = assert(w:call(nil, sim.kubeconfig))
    local key, uid, code = out:match("^(%S+) (%S+) (%S+)$")
    assert.are.equal("cluster-thing", key)
    assert.are.equal("ENOENT", code)
    assert.are.equal(uid, assert(env:client():get("v1/configmaps", "default", "ctx-worker")).metadata.uid)
  end)

  it("exposes the helpers as ctx.f(...) only; ctx:f(...) raises saying so", function()
    local ctx = ctxmod.new(env, {})
    local o = {}
    assert.is_true(ctx.ensure_finalizer(o, "f"))
    assert.is_true(ctx.has_finalizer(o, "f"))
    assert.is_true(ctx.remove_finalizer(o, "f"))
    assert.is_true(ctx.is_terminal(ctx.terminal("x")))
    for _, name in ipairs { "has_finalizer", "ensure_finalizer", "remove_finalizer", "is_being_deleted",
                            "set_controller_reference", "set_owner_reference", "get_condition",
                            "set_condition", "is_condition_true", "terminal", "is_terminal" } do
      local fresh = {}
      local ok, err = pcall(ctx[name], ctx, fresh, "f")
      assert.is_false(ok)
      assert.matches(("ctx:%s(...): call it as ctx.%s(...)"):format(name, name), err, 1, true)
      assert.are.same({}, fresh) -- untouched
    end
    local gok, gerr = pcall(function() ctx.log.info("x") end)
    assert.is_false(gok)
    assert.matches("log.info(...): call it as log:info(fmt, ...)", gerr, 1, true)
  end)

  it("round-trips finalizers, owner references and conditions through the server", function()
    local ctx = ctxmod.new(env, { controller = "c1" })
    local own = assert(ctx.client:create { apiVersion = "v1", kind = "ConfigMap",
                                           metadata = { name = "owner", namespace = "default" } })
    local o = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "owned", namespace = "default" } }
    assert.is_true(ctx.set_controller_reference(own, o))
    assert.is_true(ctx.ensure_finalizer(o, "example.com/cleanup"))
    o = assert(ctx.client:create(o))
    assert.are.same({ "example.com/cleanup" }, o.metadata.finalizers)
    local ref = o.metadata.ownerReferences[1]
    assert.are.equal(own.metadata.uid, ref.uid)
    assert.is_true(ref.controller)
    assert.is_true(ref.blockOwnerDeletion)
    assert.is_true(ctx.remove_finalizer(o, "example.com/cleanup"))
    o = assert(ctx.client:update(o))
    assert.is_nil(o.metadata.finalizers)
    assert.is_nil(assert(ctx.client:get("v1/configmaps", "default", "owned")).metadata.finalizers)
  end)
end)

describe("ctx.log", function()
  local code = [[
    local ctx = require("kinformer.ctx").new({}, { controller = "mirror", request = { namespace = "ns", name = "a" } })
    ctx.log:info("reconciled %s in %d ms", "a", 5)
    ctx.log:debug("hidden at info")
    ctx.log:error("plain %%d text")
    local l = require("kinformer.ctx").logger("other")
    l:warn("no key")
  ]]

  it("writes kin's log lines tagged with controller and key, honouring the level", function()
    local log = run_lua(code, 2)
    assert.matches("[controller=mirror key=ns/a] reconciled a in 5 ms", log, 1, true)
    assert.matches("[controller=mirror key=ns/a] plain %%d text", log, 1, true)
    assert.matches("[controller=other] no key", log, 1, true)
    assert.is_nil(log:find("hidden at info", 1, true))
    local quiet = run_lua(code, 0)
    assert.matches("plain", quiet, 1, true)
    assert.is_nil(quiet:find("reconciled", 1, true))
    assert.is_nil(quiet:find("no key", 1, true))
    local all = run_lua(code, 3)
    assert.matches("hidden at info", all, 1, true)
  end)
end)
