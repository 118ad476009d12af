--- kinformer.shard_assign: the arithmetic of sharding (kinformer.sharding),
-- pure functions with no I/O.
--
-- The 64-bit FNV-1a hash space of the API server's shard selectors
-- (KEP-5866) is cut into M.BUCKETS equal buckets; bucket b holds the
-- hashes [b * 2^58, (b + 1) * 2^58). Replicas own whole buckets. The
-- assignment is rendezvous hashing with bounded loads: for each bucket in
-- order, the live member with the highest hash of "<member>#<bucket>"
-- that has fewer than ceil(BUCKETS / members) buckets takes it, so every
-- replica computes the same answer from the same member set, loads differ
-- by at most one bucket, and a member joining or leaving moves few
-- buckets. Static sharding ({shard = i, of = n}) cuts the space into n
-- contiguous ranges instead, as kube-state-metrics does.
local core = require "kinformer.core"

local M = {}

M.BUCKETS = 64
local SHIFT = 58 -- 64 - log2(BUCKETS)

local FIELD = { uid = "object.metadata.uid", namespace = "object.metadata.namespace" }

-- The rendezvous weight of member for bucket b: FNV-1a of "<member>#<b>"
-- through MurmurHash3's finalizer (FNV alone barely moves its top bits
-- for strings that differ in their last bytes).
local function weight(member, b)
  local x = core.shard_hash(member .. "#" .. b)
  x = x ~ (x >> 33)
  x = x * -49064778989728563 -- 0xff51afd7ed558ccd
  x = x ~ (x >> 33)
  x = x * -4265267296055464877 -- 0xc4ceb9fe1a85ec53
  return x ~ (x >> 33)
end

--- The bucket of a 64-bit hash (a Lua integer, read unsigned).
function M.bucket_of(hash) return (hash >> SHIFT) + 1 end

-- "0x" + 16 hex digits of an integer read unsigned; 2^64 when top.
local function hex(v, top)
  if top then return "0x10000000000000000" end
  return ("0x%016x"):format(v)
end

--- The selector string (shard_selector.h) of a set of buckets (a table
-- bucket -> true, 1-based), as the fewest ranges; nil when the set is empty.
function M.selector(buckets, key)
  local field = FIELD[key or "uid"] or error("shard key must be uid or namespace")
  local parts, b = {}, 1
  while b <= M.BUCKETS do
    if buckets[b] then
      local e = b
      while e < M.BUCKETS and buckets[e + 1] do e = e + 1 end
      parts[#parts + 1] = ("shardRange(%s, '%s', '%s')"):format(field,
        hex((b - 1) << SHIFT), hex(e << SHIFT, e == M.BUCKETS))
      b = e + 1
    else
      b = b + 1
    end
  end
  if #parts == 0 then return nil end
  return table.concat(parts, " || ")
end

--- The selector of static shard i of n (0 <= i < n): the i-th of n
-- contiguous ranges, floor(i * 2^64 / n) to floor((i + 1) * 2^64 / n).
function M.static_selector(i, n, key)
  local field = FIELD[key or "uid"] or error("shard key must be uid or namespace")
  local function bound(k)
    if k == n then return hex(0, true) end
    -- floor(k * 2^64 / n) from two 32-bit long-division steps (n < 2^16)
    local hi = (k << 32) // n
    local rem = (k << 32) - hi * n
    local lo = (rem << 32) // n
    return hex((hi << 32) + lo)
  end
  return ("shardRange(%s, '%s', '%s')"):format(field, bound(i), bound(i + 1))
end

--- The assignment of every bucket to one of members (a list of distinct
-- names): a list bucket -> member name. Deterministic in the set (the
-- order of members does not matter).
function M.assign(members)
  local sorted = {}
  for i, m in ipairs(members) do sorted[i] = m end
  table.sort(sorted)
  local n = #sorted
  local owners = {}
  if n == 0 then return owners end
  local cap = (M.BUCKETS + n - 1) // n
  local load = {}
  for _, m in ipairs(sorted) do load[m] = 0 end
  for b = 1, M.BUCKETS do
    local best, bw
    for _, m in ipairs(sorted) do
      if load[m] < cap then
        local w = weight(m, b)
        if not best or math.ult(bw, w) then best, bw = m, w end
      end
    end
    owners[b] = best
    load[best] = load[best] + 1
  end
  return owners
end

--- The buckets (a set) of member in owners (a list bucket -> name).
function M.buckets_of(owners, member)
  local set = {}
  for b = 1, M.BUCKETS do
    if owners[b] == member then set[b] = true end
  end
  return set
end

--- How many buckets a set holds.
function M.count(set)
  local n = 0
  for _ in pairs(set) do n = n + 1 end
  return n
end

--- True when two bucket sets are equal.
function M.same(a, b)
  for k in pairs(a) do if not b[k] then return false end end
  for k in pairs(b) do if not a[k] then return false end end
  return true
end

return M
