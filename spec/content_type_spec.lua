-- The encoding informers ask for (kinformer.manager{content_type=},
-- mgr:informer's content_type, `kinformer run --content-type`): protobuf
-- for built-in types by default, as client-go's typed clients, JSON when
-- told, and the same cache, views and events whichever came. Against
-- kinformer.sim, which answers the Accept header as kube-apiserver does.
local kinformer = require "kinformer"
local simmod = require "kinformer.sim"
local http = require "support.sim_http"
local eventually = require("support.mgr").eventually

local function cm(sim, name, data)
  local _, code = http(sim, "POST", "/api/v1/namespaces/default/configmaps",
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = name, labels = { app = "x" } }, data = data })
  assert(code == 201, "create " .. name .. ": " .. tostring(code))
end

-- what AUTO means in this process (make test-json sets KIN_CONTENT_TYPE=json)
local default = os.getenv("KIN_CONTENT_TYPE") == "json" and "json" or "protobuf"

local function progress_of(mgr, name)
  for _, p in ipairs(mgr.env:sync_progress()) do
    if p.name == name then return p end
  end
end

describe("content_type", function()
  local sim, mgr
  before_each(function() sim = assert(simmod.start{}) end)
  after_each(function()
    if mgr then mgr:stop() end
    mgr = nil
    sim:stop()
  end)

  it("asks for protobuf for a built-in type, and the cache reads the same", function()
    cm(sim, "a", { v = "1", text = "caf\u{e9} \"quoted\" \\ back" })
    mgr = assert(kinformer.manager{ sim = sim })
    local inf = assert(mgr:informer("v1/configmaps"))
    local js = assert(mgr:informer("v1/configmaps", { content_type = "json" }))
    assert(mgr:start{ timeout = 10 })
    assert.equal(default, progress_of(mgr, "v1/configmaps").content_type)
    assert.equal("json", progress_of(mgr, "v1/configmaps?content_type=json").content_type)
    local a, b = inf:get("default/a"), js:get("default/a")
    assert.same(b.data, a.data)
    assert.equal("caf\u{e9} \"quoted\" \\ back", a.data.text)
    assert.equal("ConfigMap", a.kind)
    assert.equal("v1", a.apiVersion)
    assert.same(b.metadata.labels, a.metadata.labels)
    assert.equal(b.metadata.creationTimestamp, a.metadata.creationTimestamp)
    assert.equal(b.metadata.resourceVersion, a.metadata.resourceVersion)
  end)

  it("takes the manager's default and reads watch events in it", function()
    mgr = assert(kinformer.manager{ sim = sim, content_type = "protobuf" })
    local inf = assert(mgr:informer("v1/configmaps"))
    assert(mgr:start{ timeout = 10 })
    cm(sim, "late", { v = "2" })
    local late = eventually(mgr, function() return inf:get("default/late") end, 10, "default/late")
    assert.equal("2", late.data.v)
    assert.equal("protobuf", progress_of(mgr, "v1/configmaps").content_type)
  end)

  it("reads a sim serving pre-encoded bytes (pre_encode) as any other", function()
    sim:stop()
    sim = assert(simmod.start{ pre_encode = true })
    cm(sim, "a", { v = "1", text = "caf\u{e9}" })
    mgr = assert(kinformer.manager{ sim = sim, content_type = "protobuf" })
    local inf = assert(mgr:informer("v1/configmaps"))
    local wl = assert(mgr:informer("v1/configmaps", { watch_list = true }))
    local js = assert(mgr:informer("v1/configmaps", { content_type = "json" }))
    assert(mgr:start{ timeout = 10 })
    cm(sim, "late", { v = "2" })
    for _, i in ipairs{ inf, wl } do
      local late = eventually(mgr, function() return i:get("default/late") end, 10, "default/late")
      assert.equal("2", late.data.v)
      local a, b = i:get("default/a"), js:get("default/a")
      assert.same(b.data, a.data)
      assert.equal(b.metadata.resourceVersion, a.metadata.resourceVersion)
      assert.equal(b.metadata.uid, a.metadata.uid)
    end
    assert.equal("protobuf", progress_of(mgr, "v1/configmaps").content_type)
  end)

  it("refuses a value it does not know, naming the option", function()
    local ok, err = pcall(kinformer.manager, { sim = sim, content_type = "cbor" })
    assert.is_false(ok)
    assert.matches("option 'content_type' must be \"auto\", \"json\" or \"protobuf\"", tostring(err), 1, true)
    mgr = assert(kinformer.manager{ sim = sim })
    ok, err = pcall(mgr.informer, mgr, "v1/configmaps", { content_type = "yaml" })
    assert.is_false(ok)
    assert.matches("mgr:informer: option 'content_type'", tostring(err), 1, true)
  end)

  it("is a flag of kinformer run", function()
    local cli = require "kinformer.cmd.cli"
    local o = assert(cli.parse{ "run", "x.lua", "--content-type", "json" })
    assert.equal("json", o.content_type)
    local bad, msg = cli.parse{ "run", "x.lua", "--content-type", "xml" }
    assert.is_nil(bad)
    assert.equal("--content-type wants auto, json or protobuf, not 'xml'", msg)
  end)
end)
