-- Sharded replicas never reconcile one key in two places (issue 27):
-- replicas of spec/fixtures/shard_operator.lua (`kinformer run --shards
-- auto`: member Leases, the bucket table on a Lease, kinformer.sharding)
-- against one server -- a kinformer.sim here; the real kube-apiserver when
-- the e2e tier sets KINFORMER_E2E_KUBECONFIG (spec/examples/helper.lua) --
-- with lease 3 s, renew deadline 2 s, retry 0.5 s, and SHARD_SPEC_OBJECTS
-- ConfigMaps (default 10,000). The sim runs with its ShardedListAndWatch
-- gate on, so each replica lists and watches only its ranges; on
-- kube-apiserver SHARD_SPEC_SERVER_SHARDS=1 or 0 says whether the tier
-- started it with the gate (make e2e-lua runs both). Every reconcile that made its (fenced)
-- write is logged with its start, the moment it issued its write (the end
-- of its own work: a replica stopped after that point resumes only to
-- send a write its fence refuses, or one the server had applied before
-- the stop) on the machine's monotonic clock, and the write's
-- resourceVersion; the spec then checks, per key, that no two replicas'
-- reconciles overlap in time and that their writes reached the server in
-- the order the reconciles started, through:
--   1. three replicas: every key reconciled by exactly one of them, about
--      a third each, each cache about a third of the objects;
--   2. kill -9 of one: its keys move once its member Lease expired, and
--      are reconciled once each by the new owners;
--   3. SIGSTOP of another past its lease: its keys move; SIGCONT: it
--      rejoins, and nothing it reconciles overlaps;
--   4. a new replica: keys move to it.
local core = require "kinformer.core"
local h = require "examples.helper"
local slog = require "support.shard_log"

local LEASE, RENEW, RETRY = 3, 2, 0.5
local N = tonumber(os.getenv("SHARD_SPEC_OBJECTS") or "") or 10000

local function args(ns) return slog.replica_args(ns, LEASE, RENEW, RETRY) end

local read_log, by_key, owners_of = slog.read, slog.by_key, slog.owners_of
local function table_counts(t, ns) return slog.table_counts(t.client, ns) end

-- Reconciles of one key by two replicas that overlap in time, or whose
-- writes reached the server out of the order they started in.
local function overlaps(recs)
  local n, example = slog.overlaps(recs)
  local m, example2 = slog.inversions(recs)
  return n + m, example or example2
end

-- The objects in a replica's ConfigMap cache, and whether the server
-- filtered its list (kinformer_shard_server_filtered), from its /metrics.
local function cached(op)
  local port = op:wait_output("serving metrics on port (%d+)", "err")
  local f = io.popen("curl -s http://127.0.0.1:" .. port .. "/metrics")
  local text = f:read("a")
  f:close()
  return tonumber(text:match('kinformer_informer_objects{informer="v1/configmaps[^"]*"} (%d+)')),
    tonumber(text:match('kinformer_shard_server_filtered{informer="v1/configmaps[^"]*"} (%d+)'))
end

describe("sharded replicas (kill -9, SIGSTOP past the lease, a new replica)", function()
  local t, ns, logf, ops

  before_each(function()
    t = h.target{ feature_gates = { ShardedListAndWatch = true } }
    ns = h.namespace(t, "shard")
    logf = os.tmpname()
    ops = {}
  end)

  after_each(function()
    for _, op in pairs(ops) do
      if not op:status() then os.execute("kill -CONT " .. op.pid .. " 2>/dev/null") end
      op:cleanup()
    end
    os.remove(logf)
    -- tens of thousands of objects: the sim goes with them; a real cluster
    -- (with its namespace controller) deletes the namespace
    if t.real then t.client:delete("v1/namespaces", nil, ns) end
    t.stop()
  end)

  it("reconciles every key in exactly one place at a time", function()
    local member = {}
    local function start(name)
      ops[name] = h.operator("spec/fixtures/shard_operator.lua", t, args(ns),
        { "SHARD_SPEC_LOG=" .. logf, "SHARD_SPEC_NAME=" .. name })
      member[name] = ops[name]:wait_output("member (%S+)", nil, 60)
    end
    local function owns(name) return table_counts(t, ns)[member[name]] or 0 end
    for _, n in ipairs { "a", "b", "c" } do start(n) end
    -- the table settles: three members, every bucket owned
    h.eventually(function()
      local c = table_counts(t, ns)
      local total = (c[member.a] or 0) + (c[member.b] or 0) + (c[member.c] or 0)
      return total == 64 and owns("a") >= 16 and owns("b") >= 16 and owns("c") >= 16
    end, "three replicas to share the buckets", 30)

    -- 1. N objects, each reconciled by exactly one replica
    local fast = assert(core.env{ kubeconfig = t.kubeconfig, qps = 100000, burst = 100000 })
    local fc = fast:client()
    local t_first = core.monotime()
    for i = 1, N do
      assert(fc:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
        metadata = { name = "cm" .. i, namespace = ns }, data = { i = tostring(i) } }))
    end
    local t_created = core.monotime()
    fast:shutdown()
    local ok, err = pcall(h.eventually, function()
      local n = 0
      for _ in pairs(by_key((read_log(logf)))) do n = n + 1 end
      return n == N, n
    end, "every object reconciled", 60)
    if not ok then
      for n, op in pairs(ops) do
        op:stop("TERM")
        io.stderr:write("== " .. n .. " " .. member[n] .. "\n" .. op:stderr())
      end
      local l = t.client:get("coordination.k8s.io/v1/leases", ns, "shard-spec-shards")
      io.stderr:write(l.metadata.annotations["kinformer.io/shard-owners"] .. "\n")
      local seen = by_key((read_log(logf)))
      local assign = require "kinformer.shard_assign"
      for _, cm in ipairs(t.client:list("v1/configmaps", ns).items) do
        local k = ns .. "/" .. cm.metadata.name
        if not seen[k] then
          io.stderr:write(("missing %s bucket %d\n"):format(k, assign.bucket_of(core.shard_hash(cm.metadata.uid)) - 1))
        end
      end
      error(err)
    end
    local first_pass = core.monotime() - t_first -- from the first create
    local create_time = t_created - t_first
    local recs = read_log(logf)
    local per = {}
    for key, l in pairs(by_key(recs)) do
      local who = {}
      for _, r in ipairs(l) do who[r.who] = true end
      local n = 0
      for w in pairs(who) do
        n = n + 1
        per[w] = (per[w] or 0) + 1
      end
      assert.are.equal(1, n, key .. " reconciled by more than one replica")
    end
    local caches, server = {}, {}
    local want_server = t.sim and 1 or tonumber(os.getenv("SHARD_SPEC_SERVER_SHARDS") or "")
    for _, n in ipairs { "a", "b", "c" } do
      assert.is_true(per[n] > N * 0.2 and per[n] < N * 0.45, ("replica %s took %d of %d keys"):format(n, per[n], N))
      caches[n], server[n] = h.eventually(function() return cached(ops[n]) end, "the cache size of " .. n)
      if want_server then assert.are.equal(want_server, server[n], "kinformer_shard_server_filtered of " .. n) end
      assert.is_true(caches[n] > N * 0.2 and caches[n] < N * 0.45, ("replica %s caches %d of %d"):format(n, caches[n], N))
    end

    -- 2. kill -9 a: its keys move once its Lease expired, each reconciled once
    local owned_by_a = {}
    for key, who in pairs(owners_of(recs)) do if who == "a" then owned_by_a[key] = true end end
    assert(os.execute("kill -KILL " .. ops.a.pid))
    local t_kill = core.monotime()
    h.eventually(function() return owns("a") == 0 end, "the killed replica's buckets to move", LEASE + 10)
    local table_a = core.monotime() - t_kill
    local handover_a = h.eventually(function()
      local last = 0
      local after = {}
      for _, r in ipairs((read_log(logf))) do
        if owned_by_a[r.key] and r.t0 > t_kill then
          after[r.key] = (after[r.key] or 0) + 1
          if r.t1 > last then last = r.t1 end
        end
      end
      for key in pairs(owned_by_a) do if not after[key] then return false end end
      for key, c in pairs(after) do assert.are.equal(1, c, key .. " reconciled more than once after the kill") end
      return last - t_kill
    end, "the killed replica's keys to move", LEASE + 30)

    -- 3. SIGSTOP b past its lease, then SIGCONT
    recs = read_log(logf)
    local owned_by_b = {}
    for key, who in pairs(owners_of(recs)) do if who == "b" then owned_by_b[key] = true end end
    assert(os.execute("kill -STOP " .. ops.b.pid))
    local t_stop = core.monotime()
    h.eventually(function() return owns("b") == 0 end, "the stopped replica's buckets to move", LEASE + 10)
    local table_b = core.monotime() - t_stop
    local handover_b = h.eventually(function()
      local last, moved = 0, {}
      for _, r in ipairs((read_log(logf))) do
        if owned_by_b[r.key] and r.t0 > t_stop and r.who ~= "b" then
          moved[r.key] = true
          if r.t1 > last then last = r.t1 end
        end
      end
      for key in pairs(owned_by_b) do if not moved[key] then return false end end
      return last - t_stop
    end, "the stopped replica's keys to move", LEASE + 30)
    assert(os.execute("kill -CONT " .. ops.b.pid))
    local t_cont = core.monotime()
    -- b holds its member Lease again, takes buckets back and reconciles them
    h.eventually(function() return owns("b") >= 16 end, "the resumed replica to own buckets again", 30)
    h.eventually(function()
      for _, r in ipairs((read_log(logf))) do if r.who == "b" and r.t0 > t_cont then return true end end
    end, "the resumed replica to reconcile again", 30)

    -- 4. a new replica d: keys move to it
    local t_d = core.monotime()
    start("d")
    h.eventually(function() return owns("d") >= 16 end, "the new replica to own buckets", 30)
    local handover_d = h.eventually(function()
      for _, r in ipairs((read_log(logf))) do if r.who == "d" then return r.t1 - t_d end end
    end, "the new replica to reconcile", 30)
    h.sleep(2) -- the hand-over's reconciles finish

    recs = select(1, read_log(logf))
    local _, refused = read_log(logf)
    local n_over, example = overlaps(recs)
    local final = {}
    for _, who in pairs(owners_of(recs)) do final[who] = (final[who] or 0) + 1 end
    print(string.format("\n  %s: %d objects (created in %.2f s), all reconciled %.2f s after the first create "
      .. "(a %d, b %d, c %d keys; caches %d/%d/%d, server filtered %s); "
      .. "kill -9: buckets moved in %.2f s, its keys all reconciled by their new owners in %.2f s; "
      .. "SIGSTOP: buckets moved in %.2f s, keys reconciled in %.2f s (lease %g s, retry %g s); "
      .. "new replica reconciling after %.2f s; writes refused by the fence: %s; "
      .. "overlapping reconciles: %d; last owners a/b/c/d: %d/%d/%d/%d",
      t.sim and "kinformer.sim" or "kube-apiserver", N, create_time, first_pass, per.a, per.b, per.c,
      caches.a, caches.b, caches.c, tostring(server.a), table_a, handover_a,
      table_b, handover_b,
      LEASE, RETRY, handover_d, next(refused) and core.json_encode(refused) or "0", n_over,
      final.a or 0, final.b or 0, final.c or 0, final.d or 0))
    assert.are.equal(0, n_over, example)
    -- ownership moves within the lease, a retry and one more renewal of
    -- the taker's own (its Lease cache must show one made past the lease:
    -- sharding.lua's _gone), plus a second for the replicas' 0.2 s look at
    -- the Leases and this spec's polling on a loaded machine; the keys then
    -- wait their turn in the new owners' queues (thousands of 10 ms
    -- reconciles: the time printed)
    assert.is_true(table_a < LEASE + 2 * RETRY + 1, "kill -9: buckets moved after " .. table_a .. " s")
    assert.is_true(table_b < LEASE + 2 * RETRY + 1, "SIGSTOP: buckets moved after " .. table_b .. " s")
    assert.is_true((final.d or 0) > 0)
    for _, n in ipairs { "b", "c", "d" } do assert.equal(0, ops[n]:stop("TERM")) end
  end)
end)
