-- The strict API (issue 15): misuse raises at the user's line, unknown
-- option keys name the closest valid one, resource names must be the
-- plural discovery lists, runtime failures keep the Status reason, and an
-- informer that cannot be made or synced fails the script in time.
local kinformer = require "kinformer"
local proc = require "support.proc"
local set_condition = require("kinformer.ctx").set_condition

-- Calls f (a function of this file, so the error is raised at a line of
-- it) and returns its error message; fails when f does not raise.
local function raised(f)
  local ok, err = pcall(f)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

-- The line of this file the error names (nil when it names another).
local function at_line(err) return tonumber(err:match("strict_spec%.lua:(%d+):")) end

-- The line of the call that follows a `local here = line()`.
local function line() return debug.getinfo(2, "l").currentline + 1 end

describe("strict API", function()
  local sim, mgr
  setup(function()
    sim = assert(require("kinformer.sim").start{})
    mgr = assert(kinformer.manager{ sim = sim })
  end)
  teardown(function()
    mgr:stop()
    sim:stop()
  end)

  describe("misuse raises at the caller's file and line", function()
    it("upvalues a reconciler cannot take name the mgr:controller line, every one of them", function()
      local up = 1 -- copied: fine
      local co = coroutine.create(function() end)
      local here = line()
      local err = raised(function() mgr:controller{ ["for"] = "v1/configmaps", name = "up",
        reconciler = function() return up, mgr, co end } end)
      assert.equals(here, at_line(err), err)
      assert.matches("controller up: reconciler: cannot send to worker threads: upvalue 'mgr' (mgr.env is a " ..
                     "kinformer.env userdata), upvalue 'co' (a coroutine); a reconciler runs in its own Lua state",
                     err, 1, true)
      assert.is_nil(err:find("'up'", 1, true), err)
      assert.is_nil(err:find("kinformer/manager.lua", 1, true), err)
    end)

    it("mgr:informer's bad arguments", function()
      local here = line()
      local err = raised(function() mgr:informer(42) end)
      assert.equals(here, at_line(err), err)
      here = line()
      err = raised(function() mgr:informer("v1/pods", { resync = "soon" }) end)
      assert.equals(here, at_line(err), err)
      assert.matches("option 'resync' must be a number", err, 1, true)
    end)

    it("a client call's misuse", function()
      local c = mgr.client
      local here = line()
      local err = raised(function() return c:get("v1/configmaps", "default", {}) end)
      assert.equals(here, at_line(err), err)
    end)
  end)

  describe("unknown option keys raise with the closest valid one", function()
    local cases = {
      { "kinformer.manager", function() return kinformer.manager{ sim = sim, sync_timout = 5 } end,
        'unknown option "sync_timout" to kinformer.manager (did you mean "sync_timeout"?)' },
      { "mgr:informer", function() return mgr:informer("v1/pods", { namespce = "default" }) end,
        'unknown option "namespce" to mgr:informer (did you mean "namespace"?)' },
      { "mgr:controller", function()
          return mgr:controller{ ["for"] = "v1/configmaps", predicate = {}, reconciler = function() end }
        end, 'unknown option "predicate" to mgr:controller (did you mean "predicates"?)' },
      { "an owns entry", function()
          return mgr:controller{ ["for"] = "v1/configmaps", owns = { { "v1/secrets", predicate = {} } },
                                 reconciler = function() end }
        end, 'unknown option "predicate" to mgr:controller\'s owns entry (did you mean "predicates"?)' },
      { "add_handler", function()
          local inf = mgr:informer("v1/configmaps")
          return inf:add_handler({ on_add = function() end }, { mian = true })
        end, 'unknown option "mian" to add_handler (did you mean "main"?)' },
      { "a controller's rate_limiter", function()
          return mgr:controller{ ["for"] = "v1/configmaps", name = "rl", reconciler = function() end,
                                 rate_limiter = { base_dealy = 0.1 } }
        end, 'unknown option "base_dealy" to the controller\'s rate_limiter (did you mean "base_delay"?)' },
      { "add_handler's handler table", function()
          local inf = mgr:informer("v1/configmaps")
          return inf:add_handler{ on_ad = function() end }
        end, 'unknown field "on_ad" in the handler (did you mean "on_add"?)' },
      { "mgr:start", function() return mgr:start{ timout = 5 } end,
        'unknown option "timout" to mgr:start (did you mean "timeout"?)' },
      { "client:list", function() return mgr.client:list("v1/configmaps", "default", { labelSelector = "a=b" }) end,
        'unknown option "labelSelector" to client:list (did you mean "label_selector"?)' },
      { "client:patch", function()
          return mgr.client:patch("v1/configmaps", "default", "x", {}, { typ = "merge" })
        end, 'unknown option "typ" to client:patch (did you mean "type"?)' },
      { "client:delete", function()
          return mgr.client:delete("v1/configmaps", "default", "x", { propagation = "Orphan" })
        end, 'unknown option "propagation" to client:delete (did you mean "propagation_policy"?)' },
      { "client:create", function()
          return mgr.client:create({ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "x" } },
            { fieldManager = "me" })
        end, 'unknown option "fieldManager" to client:create (did you mean "field_manager"?)' },
      { "kinformer.sim.start", function() return require("kinformer.sim").start{ seeds = "x.json" } end,
        'unknown option "seeds" to kinformer.sim.start (did you mean "seed"?)' },
      { "sim:fault", function() return sim:fault{ kind = "latency", msec = 5 } end,
        'unknown option "msec" to sim:fault (did you mean "ms"?)' },
      { "the manager's events", function() return kinformer.manager{ sim = sim, events = { queue = 5 } } end,
        'unknown option "queue" to the manager\'s events (did you mean "queue_size"?)' },
      { "set_condition", function()
          return set_condition({ metadata = { name = "x" } },
            { type = "Ready", status = "True", reasn = "Ok" })
        end, 'unknown option "reasn" to set_condition (did you mean "reason"?)' },
    }
    for _, c in ipairs(cases) do
      it(c[1], function()
        local err = raised(c[2])
        assert.matches(c[3], err, 1, true)
        assert.truthy(at_line(err), err) -- at this file's line, not kinformer's
      end)
    end

    it("a key far from every valid one gets no suggestion", function()
      local err = raised(function() return mgr:start{ zzzzzzzz = 1 } end)
      assert.matches('unknown option "zzzzzzzz" to mgr:start$', err)
    end)
  end)

  describe("resource names are checked against discovery", function()
    it("a singular in mgr:informer suggests the plural", function()
      local here = line()
      local err = raised(function() local _ = mgr:informer("v1/configmap") end)
      assert.equals(here, at_line(err), err)
      assert.matches('unknown resource "v1/configmap" (did you mean "v1/configmaps"?)', err, 1, true)
    end)

    it("a singular 'for' suggests the plural", function()
      local err = raised(function()
        return mgr:controller{ ["for"] = "apps/v1/deployment", reconciler = function() end }
      end)
      assert.matches('unknown resource "apps/v1/deployment" (did you mean "apps/v1/deployments"?)', err, 1, true)
      assert.truthy(at_line(err), err)
    end)

    it("client:list without the group-version suggests it", function()
      local here = line()
      local err = raised(function() local _ = mgr.client:list("configmaps") end)
      assert.equals(here, at_line(err), err)
      assert.matches('unknown resource "configmaps" (did you mean "v1/configmaps"?)', err, 1, true)
    end)

    it("a resource the server does not have is a runtime failure", function()
      local v, msg, code = mgr.client:list("v1/nothings")
      assert.is_nil(v)
      assert.equals("ENOENT", code)
      assert.matches("nothings", msg)
    end)
  end)

  describe("runtime failures keep the Status reason", function()
    it("reconcile_once returns the client's nil, msg, reason", function()
      local ctl = mgr:controller{
        ["for"] = "v1/configmaps", name = "reason-kept",
        reconciler = function(req, ctx) return ctx.client:get("v1/configmaps", req.namespace, req.name) end,
      }
      local ok, msg, code = ctl:reconcile_once{ namespace = "default", name = "missing" }
      assert.is_nil(ok)
      assert.matches("not found", msg)
      assert.equals("NotFound", code)
    end)
  end)
end)

describe("an informer that cannot be made or synced", function()
  it("makes mgr:start fail even when the script ignores mgr:informer's nil", function()
    local out, err, rc = proc.run_lua([[
      local mgr = assert(require("kinformer").manager{ url = "http://127.0.0.1:1" })
      local inf, msg, code = mgr:informer("v1/pods")
      print("informer", inf, code)
      print("controller", mgr:controller{ ["for"] = "v1/configmaps", reconciler = function() end })
      print("start", mgr:start{ timeout = 2 })
      mgr:stop()
    ]])
    assert.equals(0, rc, err)
    assert.matches("informer%s+nil%s+EIO", out)
    assert.matches("controller%s+nil%s+controller: resource v1/configmaps: [^\n]*%s+EIO", out)
    assert.matches("start%s+nil%s+informer v1/pods could not be created: [^\n]*127%.0%.0%.1", out)
  end)

  it("fails `kinformer run --sync-timeout 2` against an unreachable server", function()
    local kc = proc.write_tmp([[
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: u
  user: {token: x}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
]])
    local script = proc.write_tmp("local mgr = ...\nmgr:informer(\"v1/pods\")\n")
    -- timeout 60: a script that runs forever (the old behaviour) fails here with 124
    local out, rc = proc.run(("%s timeout 60 bin/kinformer run --kubeconfig %s --sync-timeout 2 %s")
      :format(proc.paths_env(), kc, script))
    os.remove(kc)
    os.remove(script)
    assert.is_true(rc ~= 0 and rc ~= 124, out)
    assert.matches("informer v1/pods could not be created", out, 1, true)
    assert.is_nil(out:find("caches synced, running", 1, true), out)
  end)

  it("fails mgr:start within its timeout when a cache never syncs", function()
    -- the list keeps failing (503): the reflector retries, the sync never
    -- comes; the child's stderr takes the warnings
    local out, err, rc = proc.run_lua([[
      local sim = assert(require("kinformer.sim").start{})
      local mgr = assert(require("kinformer").manager{ sim = sim })
      assert(mgr:informer("v1/pods"))
      sim:fault{ kind = "fail", code = 503, count = 1000000 }
      print("start", mgr:start{ timeout = 1 })
      mgr:stop()
      sim:stop()
    ]])
    assert.equals(0, rc, err)
    assert.matches("start%s+nil%s+timed out waiting for caches to sync: v1/pods%s+ETIMEDOUT", out)
  end)
end)
