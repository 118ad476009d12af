-- `kinformer inspect` against a `kinformer run --sim --admin-bind-address
-- 127.0.0.1:0` child: the admin endpoint's caches, queues (a key waiting
-- for its requeue_after), in-flight reconciles (one held open by a file
-- the spec removes) and a key's history, printed and as JSON.
local h = require "examples.helper"
local inspect = require "kinformer.cmd.inspect"
local proc = require "support.proc"
local core = require "kinformer.core"

local function run(args)
  local out, rc = proc.run("bin/kinformer inspect " .. args .. " 2>&1")
  return rc, out
end

describe("kinformer inspect", function()
  local op, dir, port, hold

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    hold = dir .. "/hold"
    proc.write(hold, "")
    proc.write(dir .. "/op.lua", ([[
local mgr = ...
mgr:controller { name = "inspected", ["for"] = "v1/configmaps", workers = 2,
  informer_opts = { namespace = "default" },
  reconciler = function(req, ctx)
    if req.name == "slow" then
      -- held in flight while the spec looks
      while io.open(%q) do os.execute("sleep 0.05") end
      return
    end
    if req.name == "web" then
      local cm = ctx.client:get("v1/configmaps", req.namespace, req.name)
      cm.data = { seen = "yes" }
      assert(ctx.client:update("v1/configmaps", cm))
      return { requeue_after = 300 }
    end
  end }
-- a handler reading one member of the cached ConfigMaps: what advise advises
mgr:informer("v1/configmaps", { namespace = "default" }):add_handler { on_add = function(cm)
  local _ = cm.data
end }
return { on_start = function()
  for _, n in ipairs { "web", "slow" } do
    assert(mgr.client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
      metadata = { namespace = "default", name = n }, data = {} }))
  end
end }
]]):format(hold))
    op = h.operator(dir .. "/op.lua", nil, { "--sim", "--admin-bind-address", "127.0.0.1:0" })
    port = tonumber(op:wait_output("serving the admin endpoint on port (%d+)", "err"))
    op:wait_output("caches synced", "err")
  end)

  teardown(function()
    os.remove(hold)
    if op then op:cleanup() end
    if dir then os.execute("rm -rf " .. dir) end
  end)

  local function addr() return "--address 127.0.0.1:" .. port end

  it("prints caches, queues and in-flight reconciles", function()
    local out = h.eventually(function()
      local rc, o = run(addr())
      return rc == 0 and o:find("default/web%s+waiting, due in") and o:find("default/slow %(worker %d") and o
    end, "web waiting and slow in flight")
    assert.truthy(out:find("CACHES\n  v1/configmaps%?namespace=default%s+%d+ objects  synced")
      or out:find("CACHES\n  v1/configmaps%s+%d+ objects  synced"), out)
    assert.truthy(out:find("controller inspected: %d+ ready, %d+ items"), out)
    assert.truthy(out:find("IN FLIGHT\n  controller inspected: default/slow %(worker %d, [%d.]+m?s%)"), out)
    -- each part alone, and the JSON
    local rc, q = run(addr() .. " queues --json")
    assert.equal(0, rc, q)
    local v = core.json_decode(q)
    local web
    for _, it in ipairs(v.queues[1].items) do if it.key == "default/web" then web = it end end
    assert.truthy(web, q)
    assert.equal("waiting", web.state)
    assert.is_true(web.due_in > 200 and web.due_in <= 300, q)
    rc, q = run(addr() .. " caches --json")
    assert.equal(0, rc, q)
    assert.is_true(core.json_decode(q).caches[1].synced)
  end)

  it("prints a key's history", function()
    local rc, out = run(addr() .. " why default/web")
    assert.equal(0, rc, out)
    assert.truthy(out:find("^controller inspected, default/web:\n"), out)
    assert.truthy(out:find("\n  %d%d:%d%d:%d%d%.%d%d%d enqueued: add %(resourceVersion %d+%)"), out)
    assert.truthy(out:find("reconcile #%d+ done in [^\n]*: requeue_after 300s; "
      .. "writes: PUT /api/v1/namespaces/default/configmaps/web 200"), out)
    -- its own update comes back as an event
    assert.truthy(out:find("enqueued: update %(resourceVersion %d+ %-> %d+%)"), out)
    rc, out = run(addr() .. " why default/web --controller inspected --json")
    assert.equal(0, rc, out)
    local v = core.json_decode(out)
    assert.equal("inspected", v.why[1].controller)
    local kinds = {}
    for _, e in ipairs(v.why[1].entries) do kinds[e.type] = (kinds[e.type] or 0) + 1 end
    assert.is_true(kinds.event >= 2 and kinds.reconcile >= 1 and kinds.write >= 1, out)
    -- unknown key / controller: status 1
    rc, out = run(addr() .. " why default/none")
    assert.equal(1, rc, out)
    assert.truthy(out:find("no history for default/none"), out)
    rc, out = run(addr() .. " why default/web --controller other")
    assert.equal(1, rc, out)
  end)

  it("advises the projection keeping what the handlers read", function()
    local out = h.eventually(function()
      local rc, o = run(addr() .. " advise")
      return rc == 0 and o:find("with fields = ") and o
    end, "advice")
    assert.truthy(out:find('^ADVISE'), out)
    assert.truthy(out:find('\n  v1/configmaps[^\n]*%(v1 ConfigMap%): %d+ objects, %d+ bytes each\n'
      .. '    with fields = { "data" }: %d+ bytes each %([%d.]+x%)'), out)
    local rc, q = run(addr() .. " advise --json")
    assert.equal(0, rc, q)
    local v = core.json_decode(q)
    assert.same({ "data" }, v.advise[1].fields)
    assert.equal("ConfigMap", v.advise[1].kind)
  end)

  it("shows the held reconcile leave the in-flight list", function()
    os.remove(hold)
    h.eventually(function()
      local rc, o = run(addr() .. " inflight")
      return rc == 0 and o:find("IN FLIGHT\n  %(none%)")
    end, "no reconcile in flight")
  end)

  it("reports usage errors and an endpoint it cannot reach", function()
    local rc, out = run("why")
    assert.equal(2, rc, out)
    assert.truthy(out:find("why needs a key"), out)
    rc, out = run("bogus")
    assert.equal(2, rc, out)
    rc, out = run("--address 127.0.0.1:1 caches")
    assert.equal(1, rc, out)
    assert.truthy(out:find("admin%-bind%-address"), out)
    assert.same({ address = "h:1", what = "why", key = "ns/a", controller = "c", timeout = 10 },
      inspect.parse { "--address=h:1", "why", "ns/a", "--controller", "c" })
  end)
end)
