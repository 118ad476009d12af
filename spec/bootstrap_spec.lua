-- kinformer.bootstrap (how every command loads a script) seen from the
-- command line: the script's folder on package.path in the main and the
-- worker states, whatever the working directory; and operators' names and
-- Leases: two operator.lua from different folders both lead their own
-- Lease, and a Lease two operators are told to share is logged.
local h = require "examples.helper"
local proc = require "support.proc"

local ROOT = os.getenv("PWD")

-- A folder with the files (name -> text); returns its path.
local function folder(files)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. h.quote(dir)))
  for name, text in pairs(files) do proc.write(dir .. "/" .. name, text) end
  return dir
end

-- A greeter operator: greets ConfigMaps labelled greet=<who> with data.by = who.
local function greeter(who)
  return ([[
local mgr = ...
assert(mgr:controller{
  name = "greeter", ["for"] = "v1/configmaps",
  predicates = { { label_selector = "greet=%s" } },
  reconciler = "greeter_reconciler",
})
]]):format(who), ([[
local M = {}
function M.reconcile(req, ctx)
  local cm = ctx.listers["v1/configmaps"]:get(req.key)
  if not cm or (cm.data or {}).by then return end
  cm.data = cm.data or {}
  cm.data.by = %q
  local _, err = ctx.client:update(cm)
  if err then return nil, err end
end
return M
]]):format(who)
end

describe("kinformer.bootstrap", function()
  it("puts the script's folder on package.path for the script and its workers, from any directory", function()
    local dir = folder {
      ["operator.lua"] = [[
local mgr = ...
local words = require "guard_words"       -- a module next to the script
assert(mgr:controller{ name = "guard", ["for"] = "v1/configmaps", reconciler = "guard_reconciler" })
return { on_start = function() io.stderr:write("main state: ", words.hello, "\n") end }
]],
      ["guard_words.lua"] = 'return { hello = "hello from the folder" }\n',
      ["guard_reconciler.lua"] = [[
local words = require "guard_words"        -- found by the worker state too
return { reconcile = function(req, ctx) ctx.log:info("worker: %s, %s", words.hello, req.key) end }
]],
      ["seed.json"] = '[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}]',
    }
    local out = os.tmpname()
    -- from / : neither the script's folder nor the checkout is the working directory
    local cmd = ("cd / && timeout -s INT 4 %s/bin/kinformer run %s/operator.lua --sim --seed %s/seed.json >%s 2>&1")
      :format(ROOT, dir, dir, out)
    os.execute(cmd)
    local log = h.read(out)
    os.remove(out)
    os.execute("rm -rf " .. h.quote(dir))
    assert.matches("main state: hello from the folder", log, 1, true)
    assert.matches("worker: hello from the folder, default/x", log, 1, true)
  end)

  it("runs two operator.lua from different folders with --leader-elect, each leading its own Lease", function()
    local sim <close> = assert(require("kinformer.sim").start{})
    local a_op, a_rec = greeter("a")
    local b_op, b_rec = greeter("b")
    local base = folder {}
    assert(os.execute(("mkdir -p %s/guard-a %s/guard-b"):format(base, base)))
    proc.write(base .. "/guard-a/operator.lua", a_op)
    proc.write(base .. "/guard-a/greeter_reconciler.lua", a_rec)
    proc.write(base .. "/guard-b/operator.lua", b_op)
    proc.write(base .. "/guard-b/greeter_reconciler.lua", b_rec)
    local t = { kubeconfig = sim.kubeconfig }
    local args = { "--leader-elect", "--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
                   "--leader-elect-retry-period", "0.5" }
    local a = h.operator(base .. "/guard-a/operator.lua", t, args)
    local b = h.operator(base .. "/guard-b/operator.lua", t, args)
    local mgr <close> = assert(require("kinformer").manager{ sim = sim })
    local c = mgr.client
    for _, who in ipairs { "a", "b" } do
      assert(c:create{ apiVersion = "v1", kind = "ConfigMap",
                       metadata = { name = "to-" .. who, namespace = "default", labels = { greet = who } } })
    end
    h.eventually(function() return (c:get("v1/configmaps", "default", "to-a").data or {}).by == "a" end, "a's greeting")
    h.eventually(function() return (c:get("v1/configmaps", "default", "to-b").data or {}).by == "b" end, "b's greeting")
    -- each holds a Lease named after its folder and controller, its identity naming it
    local la = assert(c:get("coordination.k8s.io/v1/leases", "default", "guard-a-greeter"))
    local lb = assert(c:get("coordination.k8s.io/v1/leases", "default", "guard-b-greeter"))
    assert.matches("^guard%-a%-greeter/", la.spec.holderIdentity)
    assert.matches("^guard%-b%-greeter/", lb.spec.holderIdentity)
    assert.equal(0, a:stop())
    assert.equal(0, b:stop())
    a:cleanup()
    b:cleanup()

    -- told to share one Lease: the one that waits says who holds it
    local shared = { "--leader-election-id", "shared" }
    for _, x in ipairs(args) do shared[#shared + 1] = x end
    a = h.operator(base .. "/guard-a/operator.lua", t, shared)
    a:wait_output("caches synced", "err")
    h.eventually(function()
      local l = c:get("coordination.k8s.io/v1/leases", "default", "shared")
      return l and l.spec.holderIdentity and l.spec.holderIdentity:match("^guard%-a")
    end, "a leads the shared Lease")
    b = h.operator(base .. "/guard-b/operator.lua", t, shared)
    b:wait_output('lease default/shared is held by "guard%-a%-greeter/[^"]+", a replica of operator '
      .. '"guard%-a%-greeter", not of this operator "guard%-b%-greeter"', "err")
    assert.equal(0, a:stop())
    assert.equal(0, b:stop())
    a:cleanup()
    b:cleanup()
    os.execute("rm -rf " .. h.quote(base))
  end)
end)
