-- spec/support/shard_log.lua -- reading the reconcile log that
-- spec/fixtures/shard_operator.lua's replicas write, for
-- spec/sharding_spec.lua and spec/sharding_chaos_spec.lua, and the table of
-- bucket owners on the server.
--
-- A log line is "<replica> <key> <start> <write> <answer> <rv> <gen>" for a
-- reconcile whose (fenced) write was made: CLOCK_MONOTONIC seconds, one
-- clock for every process on the machine; <write> is when the write was
-- issued (the end of the reconcile's own work), <answer> when its answer
-- came, <rv> the written Event's resourceVersion and <gen> the ConfigMap's
-- data.gen as the reconcile saw it ("-" without one). A refused write is
-- "<replica> <key> refused <code> <message>".
local core = require "kinformer.core"
local proc = require "support.proc"

local M = {}

local function slurp(path)
  local f = io.open(path, "r") -- not yet written: no records
  if not f then return "" end
  f:close()
  return proc.read(path)
end

--- The command-line arguments of a replica of the fixture in namespace ns
-- (`--shards auto`, the Lease timing given, metrics on a free port, no
-- client-side rate limit to speak of).
function M.replica_args(ns, lease, renew, retry)
  return { "--namespace", ns, "--shards", "auto", "--name", "shard-spec",
           "--leader-elect-lease-duration", tostring(lease),
           "--leader-elect-renew-deadline", tostring(renew),
           "--leader-elect-retry-period", tostring(retry),
           "--metrics-bind-address", "127.0.0.1:0", "--kube-api-qps", "5000", "--kube-api-burst", "5000" }
end

--- The records {who, key, t0, t1 (write issued), ta (answer), rv, gen}
-- and the refused writes counted per replica.
function M.read(path)
  local recs, refused = {}, {}
  for line in slurp(path):gmatch("[^\n]+") do
    local who, key, t0, tw, ta, rv, gen = line:match("^(%S+) (%S+) ([%d.]+) ([%d.]+) ([%d.]+) (%d+) (%S+)$")
    if who then
      recs[#recs + 1] = { who = who, key = key, t0 = tonumber(t0), t1 = tonumber(tw), ta = tonumber(ta),
                          rv = tonumber(rv), gen = tonumber(gen) }
    else
      local rw = line:match("^(%S+) %S+ refused")
      if rw then refused[rw] = (refused[rw] or 0) + 1 end
    end
  end
  return recs, refused
end

--- Per key, its records sorted by start.
function M.by_key(recs)
  local k = {}
  for _, r in ipairs(recs) do
    local l = k[r.key] or {}
    k[r.key] = l
    l[#l + 1] = r
  end
  for _, l in pairs(k) do table.sort(l, function(a, b) return a.t0 < b.t0 end) end
  return k
end

--- The reconciles of one key by two replicas that overlap in time (one
-- started before the other's work ended): a count, an example, and the
-- list of pairs {earlier, later}.
function M.overlaps(recs)
  local n, example, pairs_ = 0, nil, {}
  for key, l in pairs(M.by_key(recs)) do
    local last = {} -- replica -> its record that ended latest so far
    for _, r in ipairs(l) do
      for who, e in pairs(last) do
        if who ~= r.who and e.t1 > r.t0 then
          n = n + 1
          pairs_[#pairs_ + 1] = { e, r }
          example = example or string.format("%s: %s until %.3f, %s from %.3f", key, who, e.t1, r.who, r.t0)
        end
      end
      if not last[r.who] or r.t1 > last[r.who].t1 then last[r.who] = r end
    end
  end
  return n, example, pairs_
end

--- Consecutive reconciles of one key by two replicas whose writes reached
-- the server out of the order the reconciles started in (the earlier
-- one's resourceVersion is the greater): a count, an example, the pairs.
function M.inversions(recs)
  local n, example, pairs_ = 0, nil, {}
  for key, l in pairs(M.by_key(recs)) do
    for i = 2, #l do
      local a, b = l[i - 1], l[i]
      if a.who ~= b.who and a.rv > b.rv then
        n = n + 1
        pairs_[#pairs_ + 1] = { a, b }
        example = example or string.format("%s: %s's write (rv %d) after %s's (rv %d)", key, a.who, a.rv,
          b.who, b.rv)
      end
    end
  end
  return n, example, pairs_
end

--- The replica that last reconciled each key (before time `before`, if given).
function M.owners_of(recs, before)
  local o = {}
  for key, l in pairs(M.by_key(recs)) do
    for _, r in ipairs(l) do
      if not before or r.t0 < before then o[key] = r.who end
    end
  end
  return o
end

--- The table of bucket owners on the Lease `<name>-shards` in namespace
-- ns, read with client: member Lease name -> bucket count.
function M.table_counts(client, ns, name)
  local l = client:get("coordination.k8s.io/v1/leases", ns, (name or "shard-spec") .. "-shards")
  local raw = l and l.metadata.annotations and l.metadata.annotations["kinformer.io/shard-owners"]
  local counts = {}
  if not raw then return counts end
  for _, m in ipairs(core.json_decode(raw).owners) do
    if m ~= "" then counts[m] = (counts[m] or 0) + 1 end
  end
  return counts
end

return M
