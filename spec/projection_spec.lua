-- The informer option fields = { ... } (csrc/core/cache/projection.c via
-- lenv.c): the cache keeps only the listed paths plus apiVersion, kind
-- and metadata, decided before an object is cached; bad paths raise.
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"
local core = require "kinformer.core"
local http = require "support.sim_http"
local quiet = require "support.quiet"

local function eventually(fn)
  local deadline = core.monotime() + 10
  while core.monotime() < deadline do
    if fn() then return true end
    os.execute("sleep 0.02")
  end
  return fn()
end

local function create_cm(sim, name, data, extra)
  local body = { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, namespace = "default",
    labels = { app = "x" } }, data = data }
  for k, v in pairs(extra or {}) do body[k] = v end
  local _, code = http(sim, "POST", "/api/v1/namespaces/default/configmaps", body)
  assert(code == 201, "create " .. name .. ": " .. tostring(code))
end

describe("informer fields (projection)", function()
  local sim, mgr

  before_each(function()
    sim = assert(simmod.start{})
    mgr = assert(kinformer.manager{ sim = sim })
  end)

  after_each(function()
    mgr:stop()
    sim:stop()
  end)

  -- reading what the projection dropped is told, once per path
  -- (projection_warn.c); the unprojected informer's reads are not
  quiet.it(it, "keeps only the listed paths, metadata, apiVersion and kind", {
    { "informer v1/configmaps %(fields data%.keep,immutable%): code read data%.drop, "
      .. "which its fields projection dropped", times = 1 },
    { "informer v1/configmaps %(fields data%.keep,immutable%): code read binaryData, which", times = 1 },
    { 'add "data%.drop" to the informer\'s fields', times = 1 },
    -- walking a member kept in part, or the whole object
    { "informer v1/configmaps %(fields [^)]*%): code read all of data %(pairs, encoding%), of which its fields "
      .. "projection keeps only part; add \"data\" to the informer's fields", times = 1 },
    { "informer v1/configmaps %(fields [^)]*%): code read whole objects", times = 1 },
    { "projection.*code read", times = 4 },
  }, function()
    create_cm(sim, "a", { keep = "1", drop = "2" }, { binaryData = { b = "eA==" }, immutable = false })
    local full = assert(mgr:informer("v1/configmaps"))
    local proj = assert(mgr:informer("v1/configmaps", { fields = { "data.keep", "immutable" } }))
    assert.are_not.equal(full, proj) -- part of the identity: two caches
    assert(mgr:start{ timeout = 10 })
    local o = proj:get("default/a")
    assert.are.equal("v1", o.apiVersion)
    assert.are.equal("ConfigMap", o.kind)
    assert.are.equal("a", o.metadata.name)
    assert.are.equal("x", o.metadata.labels.app)
    assert.are.equal("1", o.data.keep)
    assert.is_nil(o.data.drop)
    assert.is_false(o.immutable)
    assert.is_nil(o.binaryData)
    for _ in pairs(o.data) do end -- told: data is kept in part
    for _ in pairs(proj:get("default/a").data) do end -- not told again
    kinformer.plain(proj:get("default/a")) -- the whole object: told
    local f = full:get("default/a")
    assert.are.equal("2", f.data.drop)
    assert.are.equal("eA==", f.binaryData.b)
    -- updates arrive projected too
    local cur = http(sim, "GET", "/api/v1/namespaces/default/configmaps/a")
    cur.data = { keep = "3", drop = "4" }
    local _, code = http(sim, "PUT", "/api/v1/namespaces/default/configmaps/a", cur)
    assert.are.equal(200, code)
    assert.is_true(eventually(function() return proj:get("default/a").data.keep == "3" end))
    o = proj:get("default/a")
    assert.are.equal("3", o.data.keep)
    assert.is_nil(o.data.drop)
  end)

  it("shares one informer for the same list in any order", function()
    local a = assert(mgr:informer("v1/configmaps", { fields = { "data", "immutable" } }))
    local b = assert(mgr:informer("v1/configmaps", { fields = { "immutable", "data" } }))
    assert(mgr:start{ timeout = 10 })
    create_cm(sim, "z", { k = "v" })
    assert.is_true(eventually(function() return b:get("default/z") ~= nil end))
    assert.are.equal("v", a:get("default/z").data.k)
  end)

  it("measures the cache's bytes per object now and with a projection", function()
    for i = 1, 5 do create_cm(sim, "m" .. i, { small = "s", big = string.rep("x", 2000) }) end
    local inf = assert(mgr:informer("v1/configmaps"))
    assert(mgr:start{ timeout = 10 })
    local sz = inf:projected_size { "data.small" }
    assert.are.equal(5, sz.objects)
    assert.is_true(sz.bytes_per_object > 2000)
    assert.is_true(sz.projected_bytes_per_object < 500)
    -- the cache is unchanged
    assert.are.equal(2000, #inf:get("default/m1").data.big)
    -- the figure equals what a projected informer holds
    local proj = assert(mgr:informer("v1/configmaps", { fields = { "data.small" } }))
    assert.is_true(eventually(function() return proj:len() == 5 end))
    local same = proj:projected_size { "data.small" }
    assert.are.equal(sz.projected_bytes_per_object, same.bytes_per_object)
    assert.has_error(function() inf:projected_size { "a..b" } end)
  end)

  it("raises on bad paths with the path named", function()
    for _, bad in ipairs { {}, { "" }, { "spec..x" }, { ".spec" }, { "spec." }, { 3 }, "spec" } do
      local ok, err = pcall(mgr.informer, mgr, "v1/configmaps", { fields = bad })
      assert.is_false(ok)
      assert.matches("fields", tostring(err))
    end
    local ok, err = pcall(mgr.informer, mgr, "v1/configmaps", { fields = { "spec..x" } })
    assert.is_false(ok)
    assert.matches('"spec..x" is not a dotted path', err, 1, true)
    local inf, msg = mgr:informer("v1/configmaps", { fields = { "data", "data" } })
    assert.is_nil(inf)
    assert.matches('"data" is listed twice', msg, 1, true)
  end)
end)
