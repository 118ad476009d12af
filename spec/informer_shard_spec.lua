-- The informer option shard_selector and inf:set_shard_selector (KEP-5866,
-- csrc/core/cache/reflector_shard.c): ?shardSelector= is sent, and the
-- reflector filters on the client too, so the cache holds exactly the
-- objects whose FNV-1a uid hash is in the ranges whatever the server does.
-- kinformer.sim without its ShardedListAndWatch gate ignores the parameter,
-- as kube-apiserver does with the gate off: the warning and the status say
-- the memory is not split.
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

local Q = {
  "shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
  "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
  "shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
  "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
}

-- The quarter (1..4) of a uid: its hash's top two bits.
local function quarter(uid) return ((core.shard_hash(uid) >> 62) & 3) + 1 end

local function create_cms(sim, n)
  local uids = {}
  for i = 1, n do
    local body = { apiVersion = "v1", kind = "ConfigMap",
                   metadata = { name = "cm" .. i, namespace = "default" }, data = { i = tostring(i) } }
    local obj, code = http(sim, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert(code == 201, "create: " .. tostring(code))
    uids["default/cm" .. i] = obj.metadata.uid
  end
  return uids
end

local function keyset(inf)
  local s = {}
  for _, k in ipairs(inf:keys()) do s[k] = true end
  return s
end

describe("informer shard_selector", function()
  local sim, mgr

  before_each(function()
    sim = assert(simmod.start{})
    mgr = assert(kinformer.manager{ sim = sim })
  end)

  after_each(function()
    mgr:stop()
    sim:stop()
  end)

  quiet.it(it, "four quarters partition the cache exactly; the client filters what the server sent", {
    { "the server ignored shardSelector %(no metadata%.shardInfo.*still sent and decoded", times = 4 },
  }, function()
    local uids = create_cms(sim, 60)
    local infs = {}
    for q = 1, 4 do infs[q] = assert(mgr:informer("v1/configmaps", { shard_selector = Q[q] })) end
    local full = assert(mgr:informer("v1/configmaps"))
    assert(mgr:start{ timeout = 10 })
    local seen = {}
    for q = 1, 4 do
      for k in pairs(keyset(infs[q])) do
        assert.is_nil(seen[k], k .. " in two shards")
        seen[k] = q
        assert.are.equal(quarter(uids[k]), q, k)
      end
      local st = infs[q]:shard_status()
      assert.are.equal(Q[q], st.selector)
      assert.is_false(st.server_sharded)
      assert.is_true(st.client_dropped > 0)
    end
    for k in pairs(uids) do assert.is_not_nil(seen[k], k .. " in no shard") end
    assert.are.equal(60, full:len())
    assert.is_nil(full:shard_status().selector)
    assert.is_nil(full:shard_status().server_sharded)
    -- watch events are filtered too: a new object lands in its quarter only
    local obj = http(sim, "POST", "/api/v1/namespaces/default/configmaps",
      { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "late", namespace = "default" } })
    local q = quarter(obj.metadata.uid)
    assert.is_true(eventually(function() return infs[q]:get("default/late") ~= nil end))
    assert.is_true(eventually(function() return full:get("default/late") ~= nil end))
    for o = 1, 4 do if o ~= q then assert.is_nil(infs[o]:get("default/late")) end end
  end)

  quiet.it(it, "set_shard_selector re-lists: handlers see what left deleted and what came added", {
    { "the server ignored shardSelector", times = 3 },
  }, function()
    local uids = create_cms(sim, 40)
    local inf = assert(mgr:informer("v1/configmaps", { shard_selector = Q[1] }))
    local added, deleted, updated = {}, {}, 0
    inf:add_handler({
      on_update = function() updated = updated + 1 end,
      on_add = function(o) added[o.metadata.namespace .. "/" .. o.metadata.name] = true end,
      -- a relist's delete is a tombstone (DeletedFinalStateUnknown): its key
      on_delete = function(o) deleted[o.key or (o.metadata.namespace .. "/" .. o.metadata.name)] = true end,
    }, { main = true })
    assert(mgr:start{ timeout = 10 })
    local want1, want2 = {}, {}
    for k, u in pairs(uids) do
      if quarter(u) == 1 then want1[k] = true end
      if quarter(u) == 2 then want2[k] = true end
    end
    assert.is_true(eventually(function() mgr:step(0) return next(added) ~= nil or not next(want1) end))
    assert.are.same(want1, keyset(inf))
    assert.is_true(inf:set_shard_selector(Q[2]))
    assert.is_true(eventually(function()
      mgr:step(0)
      for k in pairs(want2) do if not inf:get(k) then return false end end
      for k in pairs(want1) do if inf:get(k) then return false end end
      return true
    end))
    assert.are.same(want2, keyset(inf))
    assert.is_true(eventually(function()
      mgr:step(0)
      for k in pairs(want1) do if not deleted[k] then return false end end
      for k in pairs(want2) do if not added[k] then return false end end
      return true
    end))
    local st = inf:shard_status()
    assert.are.equal(Q[2], st.selector)
    assert.are.equal(1, st.relists)
    -- widening: what stayed is not redelivered (no update), what came is added
    local want3 = {}
    for k, u in pairs(uids) do if quarter(u) == 3 then want3[k] = true end end
    assert.is_true(inf:set_shard_selector(Q[2] .. " || " .. Q[3]))
    assert.is_true(eventually(function()
      mgr:step(0)
      for k in pairs(want3) do if not added[k] then return false end end
      return inf:shard_status().relists == 2
    end))
    mgr:step(0.2)
    assert.are.equal(0, updated)
    for k in pairs(want2) do assert.is_not_nil(inf:get(k)) end
    -- a bad one is refused and changes nothing
    local ok, msg, code = inf:set_shard_selector("shardRange(object.metadata.uid, '0x0', '0x1')")
    assert.is_nil(ok)
    assert.are.equal("EINVAL", code)
    assert.matches("16%-digit hex value", msg)
    assert.are.equal(Q[2] .. " || " .. Q[3], inf:shard_status().selector)
  end)

  it("kinformer.sim's feature_gates: an unknown gate or a bad value is refused, naming it", function()
    local ok, err = pcall(simmod.start, { feature_gates = { Foo = true } })
    assert.is_false(ok)
    assert.matches("unrecognized feature gate: Foo", tostring(err), 1, true)
    ok, err = pcall(simmod.start, { feature_gates = "ShardedListAndWatch=maybe" })
    assert.is_false(ok)
    assert.matches("invalid value of ShardedListAndWatch=maybe", tostring(err), 1, true)
  end)

  it("a malformed shard_selector fails the informer with the parser's message", function()
    local inf, msg, code = mgr:informer("v1/configmaps", { shard_selector = "shardRange(object.metadata.name, '0x00', '0x80')" })
    assert.is_nil(inf)
    assert.are.equal("EINVAL", code)
    assert.matches("shard_selector: unsupported field path \"object.metadata.name\"", msg, 1, true)
  end)
end)
