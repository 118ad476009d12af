-- kinformer.shard_assign (buckets, rendezvous with bounded loads, selector
-- strings), static sharding in one process, the sharding options, and the
-- command-line faces: --shards, manifests --shards N, inspect shards.
local kinformer = require "kinformer"
local core = require "kinformer.core"
local assign = require "kinformer.shard_assign"
local http = require "support.sim_http"

-- The ranges of a selector string as parsed by the server's rules.
local function ranges(sel) return assert(core.shard_selector(sel)).ranges end

-- Does sel (a string) select hash h?
local function selects(sel, h)
  for _, r in ipairs(ranges(sel)) do
    if not math.ult(h, r[1]) and not math.ult(r[2], h) then return true end
  end
  return false
end

describe("kinformer.shard_assign", function()
  it("writes bucket sets as the fewest ranges the server parses, covering exactly them", function()
    local set = { [1] = true, [2] = true, [5] = true, [64] = true }
    local sel = assign.selector(set)
    assert.are.equal(3, #ranges(sel))
    assert.is_nil(assign.selector({}))
    for b = 1, 64 do
      local lo = (b - 1) << 58
      local hi = lo + (1 << 58) - 1
      assert.are.equal(set[b] == true, selects(sel, lo), "bucket " .. b)
      assert.are.equal(set[b] == true, selects(sel, hi), "bucket " .. b)
    end
    local all = {}
    for b = 1, 64 do all[b] = true end
    assert.are.equal("shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')",
      assign.selector(all))
    assert.matches("object.metadata.namespace", assign.selector(set, "namespace"), 1, true)
  end)

  it("cuts the space into n contiguous static shards", function()
    for n = 1, 7 do
      local prev_end = 0
      for i = 0, n - 1 do
        local r = ranges(assign.static_selector(i, n))
        assert.are.equal(1, #r)
        assert.are.equal(prev_end, r[1][1], ("shard %d of %d starts where the last ended"):format(i, n))
        prev_end = r[1][2] + 1
      end
      assert.are.equal(0, prev_end, "the last shard of " .. n .. " ends at 2^64 - 1")
    end
  end)

  it("assigns every bucket, balanced, the same for any order, and moves few on a join", function()
    local m3 = { "op-member-a", "op-member-b", "op-member-c" }
    local a = assign.assign(m3)
    local b = assign.assign({ m3[3], m3[1], m3[2] })
    assert.are.same(a, b)
    local load = {}
    for i = 1, 64 do load[a[i]] = (load[a[i]] or 0) + 1 end
    -- at most ceil(64 / 3) = 22 each, in bucket order: 20 to 22
    for _, m in ipairs(m3) do assert.is_true(load[m] >= 20 and load[m] <= 22, m .. ": " .. load[m]) end
    local c = assign.assign({ m3[1], m3[2], m3[3], "op-member-d" })
    local moved = 0
    for i = 1, 64 do if a[i] ~= c[i] then moved = moved + 1 end end
    -- 16 buckets must move to the new member; bounded loads move a few more
    assert.is_true(moved >= 16 and moved <= 28, "moved " .. moved)
    for i = 1, 64 do assert.are.equal(i, assign.bucket_of(((i - 1) << 58) | 12345)) end
  end)
end)

describe("sharding options", function()
  local sim
  -- the server splits: no "ignored shardSelector" warning
  before_each(function() sim = assert(require("kinformer.sim").start{ feature_gates = { ShardedListAndWatch = true } }) end)
  after_each(function() sim:stop() end)

  it("refuses what does not make sense, naming it", function()
    local cases = {
      { { replicas = 3 }, "replicas must be \"auto\"" },
      { { replicas = "auto", shard = 0, of = 2 }, "not both" },
      { { shard = 2, of = 2 }, "shard must be an integer 0..1" },
      { { shard = 0 }, "of must be the number of shards" },
      { { shard = 0, of = 2, lease_duration = 3 }, "lease_duration is for replicas = \"auto\"" },
      { { replicas = "auto", key = "name" }, "key must be \"uid\"" },
      { { replicas = "auto", leases = 1 }, "leases" },
      { { replicas = "auto", forget_members_after = 0 }, "forget_members_after must be seconds > 0" },
      { { shard = 0, of = 2, forget_members_after = 60 }, "forget_members_after is for replicas = \"auto\"" },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(kinformer.manager, { sim = sim, sharding = c[1] })
      assert.is_false(ok)
      assert.matches(c[2], tostring(err), 1, true)
    end
    local ok, err = pcall(kinformer.manager, { sim = sim, sharding = { replicas = "auto" },
      leader_election = { name = "x" } })
    assert.is_false(ok)
    assert.matches("drop leader_election", tostring(err), 1, true)
  end)

  it("static shard i of n: the controller reconciles exactly its range", function()
    local uids = {}
    for i = 1, 60 do
      local obj = http(sim, "POST", "/api/v1/namespaces/default/configmaps",
        { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "cm" .. i, namespace = "default" } })
      uids["default/cm" .. i] = obj.metadata.uid
    end
    local logf = os.tmpname()
    local mgr = assert(kinformer.manager{ sim = sim, sharding = { shard = 1, of = 3 } })
    assert(mgr:controller{ ["for"] = "v1/configmaps", reconciler = function(req)
      local f = assert(io.open(logf, "a"))
      f:write(req.key, "\n")
      f:close()
    end })
    local sel = assign.static_selector(1, 3)
    local want = {}
    for k, u in pairs(uids) do if selects(sel, core.shard_hash(u)) then want[k] = true end end
    assert(mgr:start())
    local function got()
      local s = {}
      for line in io.lines(logf) do s[line] = true end
      return s
    end
    assert(mgr:wait_for(function()
      local s = got()
      for k in pairs(want) do if not s[k] then return false end end
      return true
    end, 10))
    mgr:step(0.3)
    assert.are.same(want, got())
    local st = mgr:shards()
    assert.are.equal("static", st.mode)
    assert.are.equal(1, st.shard)
    assert.are.equal(sel, st.selector)
    local n = 0
    for _ in pairs(want) do n = n + 1 end
    assert.are.equal(n, st.informers[1].objects)
    mgr:stop()
    os.remove(logf)
  end)

  it("a live member deletes the Leases of dead ones, not others' nor its own", function()
    local function lease(name, holder)
      return http(sim, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", {
        apiVersion = "coordination.k8s.io/v1", kind = "Lease", metadata = { name = name, namespace = "default" },
        spec = { holderIdentity = holder, leaseDurationSeconds = 1, renewTime = "2026-01-01T00:00:00.000000Z" } })
    end
    lease("gc-op-member-dead0001", "gc-op/gone_1")
    lease("gc-op-member-dead0002", "")      -- released at a clean stop
    lease("other-op-member-dead0003", "other-op/gone_3") -- another operator's
    local mgr = assert(kinformer.manager{ sim = sim, name = "gc-op", sharding = { replicas = "auto",
      lease_duration = 1, renew_deadline = 0.8, retry_period = 0.2, forget_members_after = 1 } })
    assert(mgr:controller{ ["for"] = "v1/configmaps", reconciler = function() end })
    assert(mgr:start())
    local function exists(name)
      local l = http(sim, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases/" .. name)
      return l and l.kind == "Lease"
    end
    assert(mgr:wait_for(function() return mgr:shards().forgotten == 2 end, 15), "forgotten: "
      .. tostring(mgr:shards().forgotten))
    assert.is_false(exists("gc-op-member-dead0001"))
    assert.is_false(exists("gc-op-member-dead0002"))
    assert.is_true(exists("other-op-member-dead0003"))
    assert.is_true(exists(mgr:shards().member))
    assert.are.equal(64, mgr:shards().buckets)
    mgr:stop()
  end)
end)

describe("the command line", function()
  local cli = require "kinformer.cmd.cli"
  it("parses --shards for run and manifests, and refuses the rest", function()
    local o = assert(cli.parse{ "run", "x.lua", "--shards", "auto", "--leader-elect-lease-duration", "3" })
    assert.are.same({ replicas = "auto", lease_duration = 3 }, require("kinformer.cmd.run").sharding(o))
    o = assert(cli.parse{ "run", "x.lua", "--shards", "1/3" })
    assert.are.same({ shard = 1, of = 3 }, require("kinformer.cmd.run").sharding(o))
    local _, err = cli.parse{ "run", "x.lua", "--shards", "3/3" }
    assert.matches("--shards wants auto or I/N", err, 1, true)
    _, err = cli.parse{ "run", "x.lua", "--shards", "auto", "--leader-elect" }
    assert.matches("do not mix", err, 1, true)
    _, err = cli.parse{ "plan", "x.lua", "--shards", "auto" }
    assert.matches("--shards is an option of run and manifests", err, 1, true)
    _, err = cli.parse{ "manifests", "x.lua", "--shards", "x" }
    assert.matches("number of replicas", err, 1, true)
  end)

  it("manifests --shards N: N replicas with --shards auto and the Leases' RBAC", function()
    local text = assert(require("kinformer.cmd.manifests").generate("examples/configmap-mirror/operator.lua",
      { shards = 3 }))
    assert.matches("\n  replicas: 3\n", text, 1, true)
    assert.matches("- --shards\n%s*- auto\n", text)
    assert.is_nil(text:find("--leader-elect", 1, true))
    assert.matches("Sharding %(%-%-shards auto%)", text)
    -- the member and table Leases: watched, written, and a dead member's deleted
    assert.matches("name: configmap%-mirror%-sharding\n.-resources:\n%s*%- leases\n%s*verbs:\n%s*%- get\n%s*%- list\n"
      .. "%s*%- watch\n%s*%- create\n%s*%- update\n%s*%- delete\n", text)
    local plain = assert(require("kinformer.cmd.manifests").generate("examples/configmap-mirror/operator.lua", {}))
    assert.matches("\n  replicas: 2\n", plain, 1, true)
    assert.matches("--leader-elect", plain, 1, true)
  end)

  it("inspect shards prints the state", function()
    local text = require("kinformer.cmd.inspect").format_shards({ mode = "auto", key = "uid",
      member = "op-member-1", members = { "op-member-1", "op-member-2" }, buckets = 32, of_buckets = 64,
      releasing = 0, handovers = 3, taken = 35, gate = { open = true, dropped_enqueues = 4, skipped_reconciles = 1 },
      informers = { { name = "v1/configmaps", objects = 500, server_sharded = false, client_dropped = 480 } } })
    assert.matches("member op%-member%-1, key uid; 2 live members", text)
    assert.matches("op-member-1 (this replica)", text, 1, true)
    assert.matches("buckets: 32 of 64 owned, 0 being handed over; hand-overs: 3 out, 35 in", text, 1, true)
    assert.matches("the client filters (480 dropped)", text, 1, true)
    assert.matches("not sharded", require("kinformer.cmd.inspect").format_shards({ sharding = core.json_decode("null") }))
  end)
end)
