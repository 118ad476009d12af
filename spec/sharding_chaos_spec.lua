-- Sharded replicas under network faults (issue 27's chaos runs): three
-- replicas of spec/fixtures/shard_operator.lua (`--shards auto`, lease 3 s,
-- renew deadline 2 s, retry 0.5 s), each behind its own kin-fault-proxy,
-- so a fault hits one replica's traffic to the server: its member Lease
-- renewals, its compare-and-swap updates of the bucket table, its watches
-- and its writes. A seeded schedule (SHARD_CHAOS_SEEDS: a list, default
-- one fixed seed, or "random:N"; SHARD_CHAOS_SECONDS, default 20; make
-- chaos-shards runs random ones) picks, one fault at a time per replica:
--   partition  no byte moves on its connections, old or new (connects
--              succeed), for 0.3-1.2 s (under the renew deadline) or
--              4-6 s (past the lease: its buckets move, then come back);
--   pause      its open connections carry nothing for 1-3 s (new ones do);
--   slow       3 kB/s each way for 1-3 s;
--   cut        every open connection closed;
-- and, on kinformer.sim, the server's own fault: the next 1-4 requests of
-- anyone fail with 429, 500 or 503 (Lease updates among them). A writer
-- meanwhile patches random ConfigMaps' data.gen straight to the server.
--
-- After the faults clear: every bucket is owned by one of the three, and
-- every ConfigMap's last gen was seen by a reconcile (nothing missed). Over
-- the whole run: no two replicas' reconciles of one key overlap in time
-- (spec/support/shard_log.lua), and a write that reached the server after
-- a later owner's write of the same key is allowed only when the network
-- held it: its replica was partitioned, paused or slowed between its issue
-- and its answer, and the answer came after the later write was issued (a
-- write that passed the fence before the partition lands when it heals;
-- client-go's leader election has the same limit, see README "Running
-- sharded"). The replicas' stderr holds only the warnings the faults
-- explain.
--
-- In make e2e the server is kube-apiserver (KINFORMER_E2E_ADMIN_KUBECONFIG,
-- the ShardedListAndWatch gate on), with the proxies' faults only.
local core = require "kinformer.core"
local h = require "examples.helper"
local chaos = require "chaos.chaos"
local slog = require "support.shard_log"
local proc = require "support.proc"

local LEASE, RENEW, RETRY = 3, 2, 0.5
local N = tonumber(os.getenv("SHARD_CHAOS_OBJECTS") or "") or 1500
local SECONDS = tonumber(os.getenv("SHARD_CHAOS_SECONDS") or "") or 20
local SEEDS = {}
local want_seeds = os.getenv("SHARD_CHAOS_SEEDS") or "2711"
if want_seeds:match("^random:%d+$") then -- make chaos-shards: fresh seeds, printed with each run
  math.randomseed(os.time(), math.floor(core.monotime() * 1e6))
  for i = 1, tonumber(want_seeds:match("%d+")) do SEEDS[i] = math.random(1, 2 ^ 31 - 1) end
else
  for s in want_seeds:gmatch("%d+") do SEEDS[#SEEDS + 1] = tonumber(s) end
end
local NAMES = { "a", "b", "c" }

-- What a replica may log while its network breaks: its own start-up
-- lines, requests that failed or timed out, watches and lists broken, the
-- Leases' and the sharding module's notes; and, only in a replica whose
-- network was partitioned, paused or slowed, the loss of its member Lease.
-- Anything else (a reconcile error, a Lua traceback, a lost Lease without a
-- fault) fails the run.
local ALLOWED = {
  "^kinformer: serving metrics on port ",
  "^kinformer: caches synced, running ",
  "^kinformer: stopped$",
  "^synced %d+ / %d+ ",
  "^kinformer warn %[reflector%] ",
  "^kinformer warn %[io_engine%] ",
  "^kinformer warn %[leaderelection%] ",
  "^kinformer warn %[sharding%] ",
  "^kinformer info ",
  "^shard status: ",
}
local ALLOWED_IMPAIRED = {
  "^kinformer error %[leaderelection%] lease %S+: %S+ failed to renew it within the renew deadline: leadership lost$",
  "^kinformer error %[manager%] leader election lost: ",
}

local function unexpected(stderr, impaired)
  return proc.unexpected_lines(stderr, ALLOWED, impaired and ALLOWED_IMPAIRED or {})
end

-- The schedule of a seed: a list of {at, who, kind, secs, code, count},
-- one fault per 1-2.5 s, never two at once on one replica, and at least
-- one long partition.
local function schedule(seed, on_sim)
  local r = chaos.rng(seed)
  local function u(a, b) return a + (b - a) * r(1001) / 1000 end
  local out, busy, long = {}, {}, false
  local at = 1
  while at < SECONDS - 2 do
    local who = NAMES[r(3) + 1]
    if (busy[who] or 0) <= at then
      local k = r(on_sim and 6 or 5)
      local f = { at = at, who = who }
      if k == 0 then f.kind, f.secs = "partition", u(4, 6)
      elseif k == 1 then f.kind, f.secs = "partition", u(0.3, 1.2)
      elseif k == 2 then f.kind, f.secs = "pause", u(1, 3)
      elseif k == 3 then f.kind, f.secs = "slow", u(1, 3)
      elseif k == 4 then f.kind, f.secs = "cut", 0
      else f.kind, f.who, f.secs, f.code, f.count = "fail", "server", 0, ({ 429, 500, 503 })[r(3) + 1], 1 + r(4) end
      if f.kind == "partition" and f.secs > 3 then long = true end
      out[#out + 1] = f
      if f.who ~= "server" then busy[who] = at + f.secs + 0.5 end
    end
    at = at + u(1, 2.5)
  end
  if not long then -- the first fault on a replica becomes a long partition
    for _, f in ipairs(out) do
      if f.who ~= "server" then
        local free = true
        for _, g in ipairs(out) do
          if g ~= f and g.who == f.who and g.at > f.at and g.at < f.at + 6.5 then free = false end
        end
        if free then
          f.kind, f.secs = "partition", 5
          long = true
          break
        end
      end
    end
  end
  assert(long, "seed " .. seed .. " has no room for a long partition: try another")
  return out
end

for _, seed in ipairs(SEEDS) do
  describe("sharded replicas under network faults, seed " .. seed, function()
    local t, ns, logf, ops, proxies

    before_each(function()
      t = h.target{ feature_gates = { ShardedListAndWatch = true } }
      ns = h.namespace(t, "shchaos")
      logf = os.tmpname()
      ops, proxies = {}, {}
    end)

    after_each(function()
      -- the operators first: they inherited the proxies' command pipes, and
      -- a proxy ends only once its pipe is closed everywhere
      for _, op in pairs(ops) do op:cleanup() end
      for _, p in pairs(proxies) do p.stop() end
      os.remove(logf)
      if t.real then t.client:delete("v1/namespaces", nil, ns) end
      t.stop()
    end)

    it("never reconciles one key in two places, and misses nothing", function()
      local proxy_bin = chaos.build_dir() .. "kin-fault-proxy"
      assert.is_true(io.open(proxy_bin) ~= nil, proxy_bin .. " is missing: make fault-proxy")
      local member = {}
      for _, n in ipairs(NAMES) do
        proxies[n] = chaos.start_proxy(proxy_bin, t.kubeconfig)
        ops[n] = h.operator("spec/fixtures/shard_operator.lua", { kubeconfig = proxies[n].kubeconfig },
          slog.replica_args(ns, LEASE, RENEW, RETRY),
          { "SHARD_SPEC_LOG=" .. logf, "SHARD_SPEC_NAME=" .. n })
      end
      for _, n in ipairs(NAMES) do member[n] = ops[n]:wait_output("member (%S+)", nil, 60) end
      local function counts() return slog.table_counts(t.client, ns) end
      local function shared()
        local c = counts()
        local total = 0
        for _, n in ipairs(NAMES) do
          if (c[member[n]] or 0) < 10 then return false end
          total = total + c[member[n]]
        end
        return total == 64
      end
      h.eventually(shared, "three replicas to share the buckets", 30)

      -- the objects, each reconciled once before the faults
      local fast = assert(core.env{ kubeconfig = t.kubeconfig, qps = 100000, burst = 100000 })
      local fc = fast:client()
      local gen, last = 0, {}
      for i = 1, N do
        assert(fc:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
          metadata = { name = "cm" .. i, namespace = ns }, data = { gen = "0" } }))
        last[ns .. "/cm" .. i] = 0
      end
      h.eventually(function()
        local n = 0
        for _ in pairs(slog.by_key((slog.read(logf)))) do n = n + 1 end
        return n == N, n
      end, "every object reconciled", 60)

      -- the faults, with a writer patching data.gen meanwhile
      local r = chaos.rng(seed * 7 + 1)
      local plan = schedule(seed, t.sim ~= nil)
      local windows = { a = {}, b = {}, c = {} } -- impaired spans per replica
      local heals, lost, kinds = {}, {}, {}
      local t0 = core.monotime()
      local nexti, next_poll, patches = 1, 0, 0
      while true do
        local now = core.monotime() - t0
        local f = plan[nexti]
        if f and f.at <= now then
          nexti = nexti + 1
          kinds[#kinds + 1] = string.format("%.1f %s %s%s", f.at, f.who, f.kind,
            f.secs > 0 and string.format(" %.1fs", f.secs) or (f.code and " " .. f.code .. "x" .. f.count or ""))
          local p = proxies[f.who]
          if f.kind == "fail" then
            t.sim:fault{ kind = "fail", code = f.code, count = f.count }
          elseif f.kind == "cut" then
            p.cmd("cut all")
          else
            p.cmd(f.kind == "partition" and "partition on" or f.kind == "pause" and "pause all" or "slow 3000 all")
            local w = { from = core.monotime(), to = core.monotime() + f.secs, kind = f.kind }
            table.insert(windows[f.who], w)
            heals[#heals + 1] = { at = now + f.secs, who = f.who, kind = f.kind, w = w }
            if f.kind == "partition" and f.secs > 3 then
              lost[#lost + 1] = { who = f.who, from = core.monotime(), heal = w }
            end
          end
        end
        for i = #heals, 1, -1 do
          local hl = heals[i]
          if hl.at <= now then
            proxies[hl.who].cmd(hl.kind == "partition" and "partition off" or "resume all")
            hl.w.to = core.monotime()
            table.remove(heals, i)
          end
        end
        if not plan[nexti] and #heals == 0 and now >= SECONDS then break end
        -- the writer: two patches per turn
        for _ = 1, 2 do
          local key = "cm" .. (r(N) + 1)
          gen = gen + 1
          if fc:patch("v1/configmaps", ns, key, { data = { gen = tostring(gen) } }) then
            last[ns .. "/" .. key] = gen
            patches = patches + 1
          end
        end
        -- when a long partition's replica leaves the table, and returns
        if now >= next_poll then
          next_poll = now + 0.2
          local c = counts()
          for _, l in ipairs(lost) do
            if not l.moved and (c[member[l.who]] or 0) == 0 then l.moved = core.monotime() - l.from end
          end
        end
        core.sleep(0.02)
      end
      fast:shutdown()

      -- the faults cleared: the table settles and every last gen is seen
      local t_heal = core.monotime()
      local ok, err = pcall(h.eventually, shared, "the three replicas to share the buckets again", 40)
      local settled = core.monotime() - t_heal
      local missing
      if ok then
        ok, err = pcall(h.eventually, function()
          local seen = {}
          for _, rec in ipairs((slog.read(logf))) do
            if rec.gen and (seen[rec.key] or -1) < rec.gen then seen[rec.key] = rec.gen end
          end
          missing = {}
          for key, g in pairs(last) do
            if (seen[key] or -1) < g then
              missing[#missing + 1] = string.format("%s gen %d (seen %s)", key, g, tostring(seen[key]))
            end
          end
          return #missing == 0
        end, "every ConfigMap's last change to be reconciled", 60)
      end
      if not ok then
        for _, n in ipairs(NAMES) do
          ops[n]:stop("TERM")
          io.stderr:write("== " .. n .. " " .. member[n] .. "\n" .. ops[n]:stderr())
        end
        io.stderr:write("faults: " .. table.concat(kinds, "; ") .. "\n")
        if missing then io.stderr:write("missing: " .. table.concat(missing, ", ", 1, math.min(#missing, 10)) .. "\n") end
        error(err)
      end
      h.sleep(1) -- reconciles in flight finish

      local recs, refused = slog.read(logf)
      local n_over, example = slog.overlaps(recs)
      local n_inv, _, inv = slog.inversions(recs)
      local unexplained = {}
      for _, pr in ipairs(inv) do
        local a, b = pr[1], pr[2]
        local held = false
        for _, w in ipairs(windows[a.who]) do
          if w.from < a.ta and w.to > a.t1 then held = true end
        end
        if not (held and a.ta >= b.t1) then
          unexplained[#unexplained + 1] = string.format("%s: %s wrote at %.3f (answer %.3f, rv %d), %s at %.3f (rv %d)",
            a.key, a.who, a.t1, a.ta, a.rv, b.who, b.t1, b.rv)
        end
      end
      -- a replica cut off past its lease loses its buckets within the lease,
      -- a retry, a renewal of the taker's (its cache must show one made past
      -- the lease) and the polling (0.2 s here and in the replicas), unless
      -- another replica was impaired too while the buckets were due to move:
      -- a bucket moves only to the member the assignment names, and one
      -- cut off itself takes nothing (then only the safety checks hold)
      local due = LEASE + 2 * RETRY + 1.5
      local moved = {}
      for _, l in ipairs(lost) do
        for _, n in ipairs(NAMES) do
          for _, w in ipairs(n ~= l.who and windows[n] or {}) do
            if w.from < l.from + due and w.to > l.from + LEASE - 0.5 then l.also = n end
          end
        end
        moved[#moved + 1] = (l.moved and string.format("%s %.2fs", l.who, l.moved) or l.who .. " kept")
          .. (l.also and " (" .. l.also .. " impaired meanwhile)" or "")
      end
      local bad = {}
      for _, n in ipairs(NAMES) do
        for _, line in ipairs(unexpected(ops[n]:stderr(), #windows[n] > 0)) do bad[#bad + 1] = n .. ": " .. line end
      end
      print(string.format("\n  seed %d on %s: %d objects, %d patches in %.0f s; faults: %s; "
        .. "long partitions, buckets moved after: %s (lease %g s); settled %.2f s after the faults; "
        .. "reconciles %d, fenced writes refused %s; overlapping reconciles %d; writes landed late "
        .. "(held by the network) %d, unexplained %d",
        seed, t.sim and "kinformer.sim" or "kube-apiserver", N, patches, SECONDS, table.concat(kinds, "; "),
        #moved > 0 and table.concat(moved, ", ") or "-", LEASE, settled, #recs,
        next(refused) and core.json_encode(refused) or "0", n_over, n_inv, #unexplained))
      assert.are.equal(0, n_over, example)
      assert.are.equal(0, #unexplained, table.concat(unexplained, "\n"))
      assert.are.equal(0, #bad, "unexpected log lines:\n" .. table.concat(bad, "\n", 1, math.min(#bad, 20)))
      for _, l in ipairs(lost) do
        if not l.also then
          assert.is_not_nil(l.moved, l.who .. " kept its buckets through a partition past its lease")
          assert.is_true(l.moved < due, l.who .. ": buckets moved after " .. l.moved)
        end
      end
      for _, n in ipairs(NAMES) do assert.equal(0, ops[n]:stop("TERM")) end
    end)
  end)
end
