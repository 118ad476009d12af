--- kinformer.sharding: one operator on N replicas, the reconciles and the
-- caches of its controllers' For resources split N ways (issue 27).
--
--   kinformer.manager{ name = "web", sharding = { replicas = "auto" } }
--   kinformer.manager{ name = "web", sharding = { shard = 0, of = 3 } }
--
-- Keys are placed by the API server's shard hash (KEP-5866: FNV-1a 64 of
-- the For object's metadata.uid, or of its namespace with key =
-- "namespace"). A controller's For informer lists and watches only this
-- replica's ranges (?shardSelector=, re-listed when they change; a server
-- without the ShardedListAndWatch gate sends everything and the reflector
-- filters on the client: the log and kinformer_shard_server_filtered say
-- so), and its handlers enqueue only requests for this replica's objects
-- (an owned object's events map to its owner's shard through the owner
-- reference's uid).
--
-- Static ({shard = i, of = n}, 0 <= i < n): fixed contiguous ranges, no
-- Leases, as kube-state-metrics' --shard/--total-shards on a StatefulSet.
--
-- Auto ({replicas = "auto"}, `kinformer run --shards auto`): on Leases in
-- the manager's namespace (or sharding.namespace), nothing home-made:
--   * each replica holds a member Lease "<name>-member-<id>" with the
--     leader elector (renewed, fenced and released like the leader's: its
--     controllers run, and its writes go out, only while it holds it);
--   * the Lease "<name>-shards" carries the table of bucket owners
--     (annotation kinformer.io/shard-owners), changed only by
--     compare-and-swap updates (its resourceVersion), so two replicas
--     never both take a bucket;
--   * every replica computes the same wanted assignment from the live
--     members (kinformer.shard_assign); a replica gives a bucket away only
--     after its controllers stopped taking its keys and every reconcile
--     started before that finished (the hand-over), and takes a bucket
--     only from the table: when its owner gave it to it, when it has no
--     owner, or when the owner's member Lease expired (a dead or paused
--     replica: its fence ended at its renew deadline, before the lease
--     duration others wait) as a Lease cache known to have caught up shows
--     it (one holding this replica's own renewal made past that lease: a
--     stalled watch shows every member unrenewed);
--   * when its gate admits more (a bucket taken back while being handed
--     over, a new term), its controllers enqueue the cached objects it
--     gained: their events were dropped while they were not its own;
--   * a replica that lost its member Lease owns nothing until it holds it
--     again and has written its new term into the table (a paused replica
--     resumed never reconciles what was taken from it);
--   * a member Lease nobody renewed for forget_members_after seconds
--     (default 10 lease durations) and that the table no
--     longer names is deleted by a live member, with its resourceVersion
--     as precondition (a restarted replica holds a new one, so the dead
--     would pile up).
local core = require "kinformer.core"
local options = require "kinformer.util.options"
local assign = require "kinformer.shard_assign"

local M = {}

M.OPTIONS = { "replicas", "shard", "of", "key", "namespace", "identity", "lease_duration",
              "renew_deadline", "retry_period", "forget_members_after" }

local OWNERS_ANNOTATION = "kinformer.io/shard-owners"
local TICK = 0.2 -- seconds between two looks at the Leases

local S = {}
S.__index = S

local function raise(msg) options.raise("sharding: " .. msg) end

local function check(opts)
  if type(opts) ~= "table" then raise("options table expected") end
  options.check(opts, M.OPTIONS, "sharding")
  if opts.key ~= nil and opts.key ~= "uid" and opts.key ~= "namespace" then
    raise("key must be \"uid\" (the default) or \"namespace\"")
  end
  if opts.replicas ~= nil then
    if opts.replicas ~= "auto" then raise("replicas must be \"auto\" (or give shard = i, of = n)") end
    if opts.shard ~= nil or opts.of ~= nil then raise("give replicas = \"auto\" or shard and of, not both") end
    local f = opts.forget_members_after
    if f ~= nil and (type(f) ~= "number" or f <= 0) then raise("forget_members_after must be seconds > 0") end
    return "auto"
  end
  local i, n = opts.shard, opts.of
  if math.type(n) ~= "integer" or n < 1 or n > 4096 then
    raise("of must be the number of shards (an integer 1..4096), or use replicas = \"auto\"")
  end
  if math.type(i) ~= "integer" or i < 0 or i >= n then
    raise(("shard must be an integer 0..%d (this replica's ordinal)"):format(n - 1))
  end
  for _, k in ipairs { "namespace", "identity", "lease_duration", "renew_deadline", "retry_period",
                       "forget_members_after" } do
    if opts[k] ~= nil then raise(k .. " is for replicas = \"auto\" (static shards use no Lease)") end
  end
  return "static"
end

--- Sets up sharding for mgr (kinformer.manager{sharding = opts}); raises on
-- a bad option. Auto mode makes the member Lease's election (mgr._le).
function M.new(mgr, opts)
  local mode = check(opts)
  local self = setmetatable({ _mgr = mgr, mode = mode, key = opts.key or "uid", _user = opts,
    _informers = {}, _owned = {}, _releasing = {}, _handovers = 0, _next = 0,
    _seen = {}, _missing = {}, _members = {}, _table_rv = nil }, S)
  if mode == "static" then
    self.selector = assign.static_selector(opts.shard, opts.of, self.key)
    return self
  end
  if rawget(mgr, "_le") then raise("replicas = \"auto\" elects through Leases itself: drop leader_election") end
  self.namespace = opts.namespace or mgr.namespace
  self.identity = opts.identity
  -- the member Lease: named at start (mgr:name() is known then)
  mgr._le = options.call(require("kinformer.leader_election").new, mgr, {
    name = "pending", namespace = self.namespace, identity = opts.identity,
    lease_duration = opts.lease_duration, renew_deadline = opts.renew_deadline,
    retry_period = opts.retry_period, exit_on_loss = false, release_on_cancel = true })
  self._le = mgr._le
  self.lease_duration = opts.lease_duration or 15
  -- a dead member's Lease is deleted once unchanged this long (every
  -- restart of a replica holds a new one)
  self.forget_after = opts.forget_members_after or 10 * self.lease_duration
  -- the Leases of the group, watched: members and the table
  local inf, msg = mgr:informer("coordination.k8s.io/v1/leases", { namespace = self.namespace })
  if not inf then raise("cannot watch Leases in " .. self.namespace .. ": " .. tostring(msg)) end
  self._leases = inf
  return self
end

--- The For informer options of a sharded controller: its shard selector
-- (static: the range; auto: none until buckets are taken).
function S:informer_opts(opts)
  local o = {}
  for k, v in pairs(opts or {}) do o[k] = v end
  -- auto: a range no uid falls in until the first assignment
  o.shard_selector = self.selector or assign.selector({}, self.key)
    or ("shardRange(%s, '0x0000000000000000', '0x0000000000000001')"):format(
      self.key == "uid" and "object.metadata.uid" or "object.metadata.namespace")
  return o
end

--- Registers a controller's For informer (it follows this replica's ranges).
function S:add_informer(inf)
  for _, i in ipairs(self._informers) do if rawequal(i, inf) then return end end
  self._informers[#self._informers + 1] = inf
end

-- Gives the gate (the keys this replica takes) and the For informers (the
-- objects it caches) their ranges (nil: nothing). The caches keep the
-- buckets being handed over until they are given away, so that a request
-- still queued for one of them finds its object and is skipped.
function S:_apply(sel, cache_sel)
  cache_sel = cache_sel or sel
  if self._applied_once and sel == self._applied and cache_sel == self._applied_cache then return end
  if not self._applied_once or sel ~= self._applied then
    local ok, msg = core.shard_gate(self._mgr.env, sel)
    if not ok then core.log("error", "sharding", "shard gate: " .. tostring(msg)) end
  end
  if not self._applied_once or cache_sel ~= self._applied_cache then
    local isel = cache_sel or self:informer_opts().shard_selector
    for _, inf in ipairs(self._informers) do
      local iok, imsg = inf:set_shard_selector(isel)
      if not iok then core.log("error", "sharding", ("informer %s: %s"):format(inf:name(), tostring(imsg))) end
    end
  end
  self._applied, self._applied_cache, self._applied_once = sel, cache_sel, true
end

--- mgr:start, before the election: names the member Lease, opens the
-- static gate.
function S:start()
  local mgr = self._mgr
  if self.mode == "static" then
    self:_apply(self.selector)
    return
  end
  self.group = mgr:name()
  local id = self.identity or (self.group .. "/" .. core.leader_identity())
  self._le._user.identity = id
  self.member = ("%s-member-%08x"):format(self.group, core.shard_hash(id) & 0xffffffff)
  self._le._user.name = self.member
  self.table_name = self.group .. "-shards"
  core.shard_gate(mgr.env, nil)
end

-- The live members: member Leases of this group with a holder whose
-- renewal this replica saw change within their lease duration.
function S:_live(now)
  local prefix = self.group .. "-member-"
  local live, seen = {}, self._seen
  for _, l in ipairs(self._leases:list()) do
    local name = l.metadata.name
    if name:sub(1, #prefix) == prefix then
      local spec = l.spec or {}
      local mark = tostring(spec.renewTime) .. "|" .. tostring(spec.holderIdentity)
      local s = seen[name]
      if not s or s.mark ~= mark then
        s = { mark = mark, at = now }
        seen[name] = s
      end
      s.rv = l.metadata.resourceVersion
      local dur = tonumber(spec.leaseDurationSeconds) or self.lease_duration
      s.dur, s.released = dur, not spec.holderIdentity or spec.holderIdentity == ""
      self._missing[name] = nil
      if not s.released and now - s.at < dur then
        live[#live + 1] = name
      end
    end
  end
  return live
end

-- Notes how far the Lease cache has caught up, on this replica's clock:
-- once it shows this replica's own latest renewal (the elector's
-- renew_time), which was made after the tick that last saw the elector
-- without it, every renewal of another member ordered before that one is
-- in the cache too (one watch, in resourceVersion order).
function S:_note_freshness(st, now)
  local rt = st.renew_time
  if rt ~= self._rt then self._rt, self._rt_after = rt, self._last_tick or now end
  self._last_tick = now
  local own = self._leases:get(self.namespace .. "/" .. self.member)
  local spec = own and own.spec or {}
  if rt and rt ~= "" and spec.renewTime == rt and spec.holderIdentity == st.identity then
    self._fresh = self._rt_after
  end
end

-- True when member (a bucket's owner that does not look live) is gone for
-- sure: its Lease released, or unchanged (or absent) since this replica
-- saw it at `since`, in a cache known fresh at least its lease duration
-- past that. A cache that stalled (a paused watch) shows every other
-- member unrenewed: without this, a replica back from a pause would take
-- the buckets of members that are reconciling them.
function S:_gone(member, now)
  local s, dur = self._seen[member], self.lease_duration
  local since
  if s then
    if s.released then return true end
    since, dur = s.at, s.dur or dur
  else
    self._missing[member] = self._missing[member] or now
    since = self._missing[member]
  end
  return self._fresh ~= nil and self._fresh >= since + dur
end

-- Deletes the member Leases of this group that nobody renewed for
-- forget_after seconds (as this replica saw them) and that the table does
-- not name, one per tick; another replica's delete first, or a renewal
-- meanwhile, makes it fail (NotFound, Conflict), which is fine.
function S:_forget(now, is_live, owners)
  local named = {}
  for _, o in ipairs(owners) do named[o] = true end
  for name, s in pairs(self._seen) do
    if name ~= self.member and not is_live[name] and not named[name] and s.rv and now - s.at >= self.forget_after then
      local ok, msg, code = self._mgr.client:delete("coordination.k8s.io/v1/leases", self.namespace, name,
        { resource_version = s.rv })
      self._seen[name] = nil
      if ok then
        self._forgotten = (self._forgotten or 0) + 1
        core.log("info", "sharding", ("deleted member Lease %s/%s: not renewed for %.0f s"):format(self.namespace,
          name, now - s.at))
      elseif code ~= "NotFound" and code ~= "Conflict" and code ~= "EFENCED" then
        -- tried again only after forget_after more seconds (its mark is gone)
        core.log("warn", "sharding", ("deleting member Lease %s/%s: %s%s"):format(self.namespace, name,
          tostring(msg), code == "Forbidden" and " (the replicas' Role needs delete on leases, as "
          .. "`kinformer manifests --shards N` grants)" or ""))
      end
      return
    end
  end
end

-- The table as the cache has it: owners (list bucket -> member or ""),
-- terms (member -> term), the Lease object (nil when absent).
function S:_table()
  local lease = self._leases:get(self.namespace .. "/" .. self.table_name)
  local t = self._written
  -- our own write is newer than the cache until the cache has moved on
  if t and (not lease or lease.metadata.resourceVersion == self._written_from) then
    return t.owners, t.terms, t.lease
  end
  self._written = nil
  local owners, terms = {}, {}
  local raw = lease and lease.metadata.annotations and lease.metadata.annotations[OWNERS_ANNOTATION]
  if raw then
    local ok, v = pcall(core.json_decode, raw)
    if ok and type(v) == "table" then
      for b = 1, assign.BUCKETS do owners[b] = type(v.owners) == "table" and v.owners[b] or "" end
      if type(v.terms) == "table" then terms = v.terms end
    end
  end
  for b = 1, assign.BUCKETS do owners[b] = owners[b] or "" end
  return owners, terms, lease
end

-- Writes the table (create or compare-and-swap update). Returns true or
-- nil, msg, code (a conflict: someone wrote first; the next tick re-reads).
function S:_write(owners, terms, lease)
  local client = self._mgr.client
  local body = core.json_encode({ owners = owners, terms = terms })
  local obj
  if lease then
    obj = core.json_decode(core.json_encode(lease))
    obj.metadata.annotations = obj.metadata.annotations or {}
    obj.metadata.annotations[OWNERS_ANNOTATION] = body
  else
    obj = { apiVersion = "coordination.k8s.io/v1", kind = "Lease",
            metadata = { name = self.table_name, namespace = self.namespace,
                         annotations = { [OWNERS_ANNOTATION] = body } }, spec = {} }
  end
  local res, msg, code
  if lease then
    res, msg, code = client:update("coordination.k8s.io/v1/leases", obj)
  else
    res, msg, code = client:create("coordination.k8s.io/v1/leases", obj)
  end
  if not res then return nil, msg, code end
  self._written = { owners = owners, terms = terms, lease = res }
  self._written_from = lease and lease.metadata.resourceVersion or false
  return true
end

local metrics -- kinformer.metrics' shard gauges, made on first use

-- Publishes the state (metrics, the admin endpoint's /shards) about once a
-- second.
function S:_publish(now)
  if now < (self._published or 0) + 1 then return end
  self._published = now
  local st = self:status()
  if not metrics then
    local m = require "kinformer.metrics"
    metrics = {
      members = m.gauge{ name = "kinformer_shard_members",
        help = "Replicas sharing the operator's keys, as this replica sees them (static: of)" },
      keys = m.gauge{ name = "kinformer_shard_keys",
        help = "Objects of the sharded controllers' For resources this replica holds" },
      buckets = m.gauge{ name = "kinformer_shard_buckets",
        help = "Buckets of the 64 of the hash space this replica owns (auto mode)" },
      handovers = m.counter{ name = "kinformer_shard_handovers_total",
        help = "Buckets moved between this replica and another, by direction (in: taken, out: given)",
        labels = { "direction" } },
    }
  end
  metrics.members:set(self.mode == "static" and self._user.of or #(st.members or {}))
  local keys = 0
  for _, i in ipairs(st.informers) do keys = keys + (i.objects or 0) end
  metrics.keys:set(keys)
  metrics.buckets:set(st.buckets or 0)
  local reported = self._reported or { ["in"] = 0, out = 0 }
  local dout, din = self._handovers - reported.out, (self._taken or 0) - reported["in"]
  if dout > 0 then metrics.handovers:inc({ direction = "out" }, dout) end
  if din > 0 then metrics.handovers:inc({ direction = "in" }, din) end
  self._reported = { ["in"] = self._taken or 0, out = self._handovers }
  core.admin_set_shards(core.json_encode(st))
end

-- One look at the Leases: hand over, take, apply (auto mode).
function S:tick()
  local now = core.monotime()
  if self.mode == "static" or not self.member then
    if self.mode == "static" and self._applied_once then self:_publish(now) end
    return
  end
  if now < self._next then return end
  self._next = now + TICK
  self:_publish(now)
  local st = self._le:state()
  self:_note_freshness(st, now)
  local term = st.is_leader and st.fence_holds and (st.identity .. "@" .. tostring(st.fence_epoch)) or nil
  if not term or not self._leases:has_synced() then
    -- not holding the member Lease (yet, or any more): nothing is ours
    self._owned, self._releasing, self._releasing_at = {}, {}, nil
    self:_apply(nil)
    return
  end
  local live = self:_live(now)
  local is_live = {}
  for _, m in ipairs(live) do is_live[m] = true end
  if not is_live[self.member] then
    live[#live + 1] = self.member -- we hold it: the cache of our own Lease may lag
    is_live[self.member] = true
  end
  self._members = live
  local want = assign.assign(live)
  local owners, terms, lease = self:_table()
  self:_forget(now, is_live, owners)
  local me = self.member
  local new, change, grew = {}, false, false
  for b = 1, assign.BUCKETS do new[b] = owners[b] end
  local confirmed = terms[me] == term
  if not confirmed then
    -- a new term: nothing is ours until the table carries it
    local t = {}
    for k, v in pairs(terms) do if is_live[k] then t[k] = v end end
    t[me] = term
    terms, change = t, true
  end
  local drained = self:_drained()
  for b = 1, assign.BUCKETS do
    local o, w = owners[b], want[b]
    if o == me and w ~= me and confirmed then
      -- hand over: the gate stops taking its keys; given once drained
      if not self._releasing[b] then
        self._releasing[b], grew = true, true
      elseif drained then
        new[b], change = w, true
      end
    elseif o ~= me and w == me and (o == "" or not is_live[o] and self:_gone(o, now)) then
      new[b], change = me, true
    end
    if o ~= me or w == me then self._releasing[b] = nil end
  end
  -- the gate: our buckets but those being handed over; the caches: all ours
  local owned, held = {}, {}
  if confirmed then
    for b = 1, assign.BUCKETS do
      if owners[b] == me then
        held[b] = true
        if not self._releasing[b] then owned[b] = true end
      end
    end
  end
  self._owned = owned
  self:_apply(assign.selector(owned, self.key), assign.selector(held, self.key))
  if grew then self._releasing_at = core.monotime() end
  if not change then return end
  local ok, msg, code = self:_write(new, terms, lease)
  if ok then
    local gave, took = {}, {}
    for b = 1, assign.BUCKETS do
      if owners[b] == me and new[b] ~= me then
        self._handovers = self._handovers + 1
        self._releasing[b] = nil
        local t = gave[new[b]] or {}
        gave[new[b]], t[#t + 1] = t, b - 1
      elseif owners[b] ~= me and new[b] == me then
        self._taken = (self._taken or 0) + 1
        local from = owners[b] == "" and "no owner" or owners[b]
        local t = took[from] or {}
        took[from], t[#t + 1] = t, b - 1
      end
    end
    for to, l in pairs(gave) do
      core.log("info", "sharding", ("handed over buckets %s to %s"):format(table.concat(l, ","), to))
    end
    for from, l in pairs(took) do
      core.log("info", "sharding", ("took buckets %s (from %s)"):format(table.concat(l, ","), from))
    end
    self._next = 0 -- look again at once: what we wrote may make more ours
  elseif code ~= "Conflict" and code ~= "AlreadyExists" and code ~= "EFENCED" then
    core.log("warn", "sharding", ("writing Lease %s/%s: %s"):format(self.namespace, self.table_name, tostring(msg)))
  end
end

-- True when every reconcile that started before the gate stopped taking
-- the released buckets' keys has finished.
function S:_drained()
  local since = self._releasing_at
  if not since then return false end
  local running = core.monotime() - since
  for _, ctl in ipairs(self._mgr:controllers()) do
    for _, b in ipairs(ctl:busy()) do
      if b.seconds >= running then return false end
    end
  end
  return true
end

--- What `kinformer inspect shards` and mgr:shards() show: {mode=, key=,
-- member=, members = {...}, buckets = n (owned), releasing = n,
-- selector=, handovers=, gate = core.shard_gate_stats, informers =
-- {{name=, shard_status...}}}.
function S:status()
  local owned = self._owned or {}
  local st = { mode = self.mode, key = self.key, member = self.member, members = self._members,
    buckets = self.mode == "static" and nil or assign.count(owned), of_buckets = assign.BUCKETS,
    releasing = assign.count(self._releasing), selector = self._applied, handovers = self._handovers,
    taken = self._taken or 0, forgotten = self._forgotten or 0,
    gate = core.shard_gate_stats(self._mgr.env), informers = {} }
  if self.mode == "static" then st.shard, st.of = self._user.shard, self._user.of end
  for _, inf in ipairs(self._informers) do
    local s = inf.shard_status and inf:shard_status() or {}
    s.name = inf:name()
    s.objects = inf:len()
    st.informers[#st.informers + 1] = s
  end
  return st
end

return M
