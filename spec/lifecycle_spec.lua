-- A controller's lifecycle (kinformer.lifecycle): children ensured and
-- pruned, a finalizer added before the first reconcile and removed after
-- finalize, a selector that lets objects go; run by the controller's
-- workers (closures copied to their states) against kinformer.sim.
local kinformer = require "kinformer"
local quiet = require "support.quiet"

local function cm(name, labels, data)
  return { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = "default", labels = labels },
           data = data }
end

local FIN = "spec.kinformer.io/cleanup"

describe("controller lifecycle", function()
  local sim, mgr, client, secrets

  before_each(function()
    sim = assert(require("kinformer.sim").start{})
    mgr = assert(kinformer.manager{ sim = sim })
    client = mgr.client
    secrets = mgr:informer("v1/secrets")
  end)

  after_each(function()
    mgr:stop()
    sim:stop()
  end)

  local function secret_names()
    local out = {}
    for _, s in ipairs(secrets:list()) do out[#out + 1] = s.metadata.name end
    table.sort(out)
    return table.concat(out, " ")
  end

  -- For each key of a parent's data a Secret "<parent>-<key>"; the helper
  -- and the prefix are upvalues the workers get copies of.
  local PREFIX = "parent"
  local function child_for(parent, key)
    return { apiVersion = "v1", kind = "Secret",
             metadata = { name = parent.metadata.name .. "-" .. key, namespace = parent.metadata.namespace,
                          labels = { [PREFIX] = parent.metadata.name } },
             stringData = nil, data = { k = "dg==" } }
  end

  local function register(extra)
    local cfg = {
      name = "parents", ["for"] = "v1/configmaps", workers = 2, selector = "role=parent",
      children = { "v1/secrets" }, finalizer = FIN,
      rate_limiter = { base_delay = 0.01, max_delay = 0.05 },
      finalize = function(_, ctx, obj)
        -- leaves a trace the test can read: a ConfigMap of its own
        local _, err = ctx.client:create(cm("finalized-" .. obj.metadata.name, nil, { by = "finalize" }))
        if err then return nil, err end
      end,
      reconciler = function(_, ctx)
        local parent = ctx:object()
        if not parent then return end
        for key in pairs(parent.data or {}) do
          local obj, state = ctx:ensure(child_for(parent, key))
          if not obj then return nil, state end
        end
      end,
    }
    for k, v in pairs(extra or {}) do
      if v == false then v = nil end
      cfg[k] = v
    end
    return assert(mgr:controller(cfg))
  end

  it("ensures children, prunes the ones no longer described, and finalizes on delete", function()
    local ctl = register()
    assert(client:create(cm("p1", { role = "parent" }, { a = "1", b = "2" })))
    assert(client:create(cm("bystander", nil, { x = "1" })))
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return secret_names() == "p1-a p1-b" end, 10), secret_names())
    local p1 = assert(client:get("v1/configmaps", "default", "p1"))
    assert.same({ FIN }, p1.metadata.finalizers)
    -- a ConfigMap the selector does not select is let alone: no finalizer
    assert.is_nil(assert(client:get("v1/configmaps", "default", "bystander")).metadata.finalizers)
    -- drop a key: its Secret is pruned, the other stays
    p1.data.b = nil
    assert(client:update(p1))
    assert(mgr:wait_for(function() return secret_names() == "p1-a" end, 10), secret_names())
    -- delete: finalize runs, then the finalizer goes and the object with it
    assert(client:delete("v1/configmaps", "default", "p1"))
    assert(mgr:wait_for(function() return client:get("v1/configmaps", "default", "finalized-p1") end, 10))
    assert(mgr:wait_for(function()
      local _, _, code = client:get("v1/configmaps", "default", "p1")
      return code == "NotFound"
    end, 10))
    assert(mgr:wait_for(function() return secret_names() == "" end, 10), secret_names()) -- before finalize
    assert.equal(0, ctl:stats().reconcile_errors)
  end)

  quiet.it(it, "keeps the finalizer while finalize fails, and retries it", {
    "Reconciler error for default/p2: not yet %(1%)", "Reconciler error for default/p2: not yet %(2%)",
  }, function()
    -- a counter in an upvalue table: each worker state has its own copy
    local tries = { n = 0 }
    register{ workers = 1, finalize = function(_, ctx, obj)
      tries.n = tries.n + 1
      if tries.n < 3 then return nil, "not yet (" .. tries.n .. ")" end
      ctx.client:create(cm("finalized-" .. obj.metadata.name, nil, { tries = tostring(tries.n) }))
    end }
    assert(client:create(cm("p2", { role = "parent" }, { a = "1" })))
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return secret_names() == "p2-a" end, 10))
    assert(client:delete("v1/configmaps", "default", "p2"))
    local done = assert(mgr:wait_for(function() return client:get("v1/configmaps", "default", "finalized-p2") end, 10))
    assert.equal("3", done.data.tries)
    assert.equal(0, tries.n) -- the main state's table is not the workers'
    assert(mgr:wait_for(function() return select(3, client:get("v1/configmaps", "default", "p2")) == "NotFound" end, 10))
  end)

  it("lets go of an object that stops matching the selector: children pruned, finalizer removed", function()
    register()
    assert(client:create(cm("p3", { role = "parent" }, { a = "1" })))
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return secret_names() == "p3-a" end, 10))
    local p3 = assert(client:get("v1/configmaps", "default", "p3"))
    p3.metadata.labels.role = "retired"
    assert(client:update(p3))
    assert(mgr:wait_for(function() return secret_names() == "" end, 10), secret_names())
    assert(mgr:wait_for(function()
      return assert(client:get("v1/configmaps", "default", "p3")).metadata.finalizers == nil
    end, 10))
  end)

  it("with children and no finalize, deletes the children itself on delete", function()
    register{ finalize = false }
    assert(client:create(cm("p4", { role = "parent" }, { a = "1", b = "2" })))
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return secret_names() == "p4-a p4-b" end, 10))
    assert(client:delete("v1/configmaps", "default", "p4"))
    assert(mgr:wait_for(function() return secret_names() == "" end, 10), secret_names())
    assert(mgr:wait_for(function() return select(3, client:get("v1/configmaps", "default", "p4")) == "NotFound" end, 10))
  end)

  it("plans the finalizer, the applies and the prunes as a dry run", function()
    assert(client:create(cm("p5", { role = "parent" }, { a = "1" })))
    -- an orphan Secret the parent controls but no longer describes
    local p5 = assert(client:get("v1/configmaps", "default", "p5"))
    local stale = { apiVersion = "v1", kind = "Secret", metadata = { name = "p5-gone", namespace = "default" } }
    assert(require("kinformer.util.owner").set_controller_reference(p5, stale))
    assert(client:create(stale))
    -- the workers never get p5 (the predicate): only the plan runs it
    local ctl = register{ predicates = { { label_selector = "never=true" } } }
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return secrets:get("default/p5-gone") end, 10))
    local report = assert(ctl:plan("default/p5", { timeout = 10 }))
    local text = tostring(report)
    -- the finalizer's JSON patch, the ensure's apply (a create here) and the prune
    assert.matches("\nupdate ConfigMap default/p5\n", text, 1, true)
    assert.matches("\n+  - " .. FIN .. "\n", text, 1, true)
    assert.matches("\ncreate Secret default/p5-a\n", text, 1, true)
    assert.matches("\ndelete Secret default/p5-gone\n", text, 1, true)
    assert.matches("3 objects would change", text, 1, true)
    -- nothing was written
    assert.is_nil(assert(client:get("v1/configmaps", "default", "p5")).metadata.finalizers)
    assert(client:get("v1/secrets", "default", "p5-gone"))
    assert.is_nil(client:get("v1/secrets", "default", "p5-a"))
  end)

  it("refuses lifecycle options that cannot work, at the user's line", function()
    local function fails(cfg, pat)
      cfg.name, cfg["for"] = cfg.name or "bad", cfg["for"] or "v1/configmaps"
      cfg.reconciler = cfg.reconciler or function() end
      local ok, err = pcall(mgr.controller, mgr, cfg)
      assert.is_false(ok)
      assert.matches("^spec/lifecycle_spec.lua:%d+: .*" .. pat, err)
    end
    fails({ finalizer = FIN }, "finalizer needs finalize")
    fails({ finalize = function() end }, "finalize needs finalizer")
    fails({ children = "v1/secrets" }, "children must be a list of resources")
    fails({ selector = "a in (" }, "selector: bad label selector")
    fails({ finalizer = 3 }, "finalizer must be a non%-empty string")
  end)

  it("retries a finalizer patch that met a Conflict on a fresh read, keeping what others added", function()
    local core = require "kinformer.core"
    local lifecycle = require "kinformer.lifecycle"
    local stale = { apiVersion = "v1", kind = "ConfigMap",
                    metadata = { name = "c", namespace = "default", resourceVersion = "1" } }
    local fresh = { apiVersion = "v1", kind = "ConfigMap",
                    metadata = { name = "c", namespace = "default", resourceVersion = "2", finalizers = { "other/f" } } }
    local patches, gets = {}, 0
    local fake = {
      patch = function(_, res, ns, name, body, opts)
        patches[#patches + 1] = { res = res, ns = ns, name = name, body = body, type = opts.type }
        if #patches == 1 then return nil, "Operation cannot be fulfilled: the object has been modified", "Conflict", 409 end
        return { metadata = { name = name, namespace = ns, resourceVersion = "3", finalizers = body.metadata.finalizers } }
      end,
      get = function() gets = gets + 1; return fresh end,
    }
    local ctx = { client = fake, object = function(self) return rawget(self, "_object") or stale end,
                  log = { info = function() end } }
    local ran
    local cfg = { reconcile = function(_, c) ran = c:object() end, finalizer = FIN, for_resource = "v1/configmaps",
                  label = "ConfigMap" }
    assert.is_nil((lifecycle.run(cfg, { namespace = "default", name = "c", key = "default/c" }, ctx)))
    assert.equal(2, #patches)
    assert.equal(1, gets)
    assert.same({ "1", { FIN } }, { patches[1].body.metadata.resourceVersion, patches[1].body.metadata.finalizers })
    -- the second from the fresh copy: its resourceVersion, the other finalizer kept
    assert.same({ "2", { "other/f", FIN } }, { patches[2].body.metadata.resourceVersion, patches[2].body.metadata.finalizers })
    assert.equal(core.array_mt, getmetatable(patches[2].body.metadata.finalizers))
    assert.equal("3", ran.metadata.resourceVersion) -- the reconciler saw the patched object
  end)
end)
