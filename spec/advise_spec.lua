-- mgr:advise(), inf:advise() and `kinformer inspect advise`: the lazy
-- views record the first read of each member (read_paths.h) per
-- apiVersion/kind, and the advice is the fields = {...} projection that
-- keeps exactly what was read, with the cache's bytes now and with it.
-- The records are process-wide, so this spec reads a kind no other spec
-- reads in the same process (v1 ResourceQuota).
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"
local http = require "support.sim_http"
local advise = require "kinformer.advise"
local quiet = require "support.quiet"

local function quota(sim, name)
  local _, code = http(sim, "POST", "/api/v1/namespaces/default/resourcequotas", {
    apiVersion = "v1", kind = "ResourceQuota", metadata = { name = name, labels = { team = "a" } },
    spec = { hard = { pods = "10", ["requests.cpu"] = "4", secrets = "20" }, scopes = { "NotTerminating" },
             scopeSelector = { matchExpressions = { { scopeName = "PriorityClass", operator = "Exists" } } } } })
  assert(code == 201, "create " .. name .. ": " .. tostring(code))
end

local function advice_of(mgr, name)
  for _, a in ipairs(mgr:advise()) do
    if a.informer == name then return a end
  end
end

describe("advise", function()
  local sim, mgr
  before_each(function() sim = assert(simmod.start{ controllers = "none" }) end)
  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
    sim:stop()
  end)

  -- the projected informer's reads of what it dropped are told, once per
  -- path and informer (projection_warn.c)
  quiet.it(it, "advises the paths handlers read, and what the cache would weigh with them", {
    { "informer v1/resourcequotas %(fields spec%.hard%.pods,spec%.scopes,status%): code read spec%.hard%.secrets, "
      .. "which its fields projection dropped %(it reads as absent%); add \"spec%.hard%.secrets\" to the informer's fields",
      times = 1 },
    { "informer v1/resourcequotas %(fields [^)]*%): code read spec%.scopeSelector, which", times = 1 },
    -- a path absent in every object is told too: the projection would drop it
    { "informer v1/resourcequotas %(fields [^)]*%): code read spec%.nothing, which", times = 1 },
    { "%[projection%]", times = 3 },
  }, function()
    for i = 1, 3 do quota(sim, "q" .. i) end
    mgr = assert(kinformer.manager{ sim = sim })
    local inf = assert(mgr:informer("v1/resourcequotas"))
    local a0 = inf:advise()
    assert.is_nil(a0.fields) -- nothing cached, nothing read
    local seen = 0
    inf:add_handler({ on_add = function(q)
      -- metadata is always kept: not advised
      assert(q.metadata.name and q.metadata.labels.team == "a")
      local _, _, _ = q.spec.hard.pods, q.status, q.spec.scopes[1]
      seen = seen + 1
    end }, { main = true })
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return seen == 3 end, 10))
    local a = advice_of(mgr, "v1/resourcequotas")
    assert.truthy(a)
    assert.equal("v1", a.api_version)
    assert.equal("ResourceQuota", a.kind)
    assert.equal(3, a.objects)
    -- an absent member read (status) is kept should it come; an array
    -- (scopes) whole; nothing of what was not read (spec.scopeSelector,
    -- the other spec.hard entries)
    assert.same({ "spec.hard.pods", "spec.scopes", "status" }, a.fields)
    assert.is_false(a.reads_all)
    assert.is_true(a.advised_bytes_per_object < a.bytes_per_object)
    -- the advice is what a projection with those fields weighs
    local ps = inf:projected_size(a.fields)
    assert.near(ps.projected_bytes_per_object, a.advised_bytes_per_object, 0.01)
    -- printed
    local text = advise.format(mgr:advise())
    assert.truthy(text:find('v1/resourcequotas %(v1 ResourceQuota%): 3 objects, %d+ bytes each'), text)
    assert.truthy(text:find('with fields = { "spec.hard.pods", "spec.scopes", "status" }: %d+ bytes each %(0%.%d%dx%)'),
      text)
    -- and that projection keeps what the handler read
    local proj = assert(mgr:informer("v1/resourcequotas", { fields = a.fields }))
    assert(mgr:wait_for(function() return proj:has_synced() and proj:len() == 3 end, 10))
    local q = proj:get("default/q1")
    assert.equal("10", q.spec.hard.pods)
    assert.equal("NotTerminating", q.spec.scopes[1])
    assert.is_nil(q.spec.hard.secrets) -- dropped: told once
    assert.is_nil(q.spec.scopeSelector)
    assert.is_nil(proj:get("default/q2").spec.hard.secrets) -- not told again
    assert.is_nil(q.spec.nothing) -- not kept: told, present or not
  end)

  it("says when whole objects are read", function()
    local _, code = http(sim, "POST", "/api/v1/namespaces/default/limitranges", {
      apiVersion = "v1", kind = "LimitRange", metadata = { name = "l" },
      spec = { limits = { { type = "Container", max = { cpu = "1" } } } } })
    assert.equal(201, code)
    mgr = assert(kinformer.manager{ sim = sim })
    local inf = assert(mgr:informer("v1/limitranges"))
    local seen = false
    inf:add_handler({ on_add = function(l)
      for _ in pairs(l) do end -- every member: nothing can be dropped
      seen = true
    end }, { main = true })
    assert(mgr:start{ timeout = 10 })
    assert(mgr:wait_for(function() return seen end, 10))
    local a = inf:advise()
    assert.is_nil(a.fields)
    assert.is_true(a.reads_all)
    assert.truthy(advise.format({ (function() a.informer = "v1/limitranges"; return a end)() })
      :find("whole objects are read"))
  end)
  it("advises what a reconciler reads in its worker threads", function()
    -- a module the worker states load (v1 PodTemplate: no other spec reads one)
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local saved = package.path
    package.path = dir .. "/?.lua;" .. package.path
    local f = assert(io.open(dir .. "/kin_advise_spec_rec.lua", "w"))
    f:write([[
return function(req, ctx)
  local o = ctx:object()
  if not o then return end
  local _ = o.metadata.labels, o.template.metadata.labels.tier, o.template.spec.containers
end
]])
    f:close()
    for i = 1, 4 do
      local _, code = http(sim, "POST", "/api/v1/namespaces/default/podtemplates", {
        apiVersion = "v1", kind = "PodTemplate", metadata = { name = "t" .. i },
        template = { metadata = { labels = { tier = "web", extra = "x" } },
                     spec = { restartPolicy = "Always", dnsPolicy = "ClusterFirst",
                              containers = { { name = "c", image = "nginx" } } } } })
      assert.equal(201, code)
    end
    mgr = assert(kinformer.manager{ sim = sim })
    local ctl = assert(mgr:controller { name = "advise-rec", ["for"] = "v1/podtemplates",
                                        reconciler = "kin_advise_spec_rec", workers = 2 })
    assert(mgr:start{ timeout = 10 })
    local a
    local ok = mgr:wait_for(function()
      a = advice_of(mgr, "v1/podtemplates")
      return a and a.fields and #a.fields == 2
    end, 10)
    package.path = saved
    os.execute("rm -rf " .. dir)
    assert.is_true(ok, "advice: " .. require("kinformer.yamlish").render(a or {}))
    assert.equal("advise-rec", ctl:name())
    assert.equal("PodTemplate", a.kind)
    -- exactly what was read: a label by name, an array whole; not the
    -- other label, restartPolicy, dnsPolicy; metadata never listed
    assert.same({ "template.metadata.labels.tier", "template.spec.containers" }, a.fields)
    assert.is_true(a.advised_bytes_per_object < a.bytes_per_object)
  end)
end)
