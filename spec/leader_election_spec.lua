-- Leader election with warm standby (kinformer.leader_election): three
-- `kinformer run --leader-elect` replicas of spec/fixtures/leader_operator.lua
-- against one server (a kinformer.sim here; the real kube-apiserver when the
-- e2e tier sets KINFORMER_E2E_KUBECONFIG, see spec/examples/helper.lua).
-- Exactly one reconciles at any time (reconcile times against the Lease
-- holder); kill -9 of the leader hands over once its lease expired; SIGTERM
-- with release hands over within about a retry period; a lost lease ends
-- the process with status 1 (at once when a Lease read names another
-- holder), or with exit_on_loss = false stops the controllers until the
-- replica leads again, the leadership fence closed meanwhile and opened in
-- a new epoch. Takeover times are printed. (The SIGSTOP/SIGCONT test of a
-- deposed leader is spec/leader_fencing_spec.lua.)
local core = require "kinformer.core"
local h = require "examples.helper"
local proc = require "support.proc"

local LEASE, RETRY = 4, 0.5
local ARGS = { "--leader-elect", "--leader-election-id", "le-spec",
               "--leader-elect-lease-duration", tostring(LEASE),
               "--leader-elect-renew-deadline", "3",
               "--leader-elect-retry-period", tostring(RETRY) }

local function args(ns, extra)
  local a = { "--namespace", ns }
  for _, v in ipairs(ARGS) do a[#a + 1] = v end
  for _, v in ipairs(extra or {}) do a[#a + 1] = v end
  return a
end

-- The reconciles logged so far: {t =, who =} in file order.
local function reconciles(path)
  local out = {}
  for line in h.read(path):gmatch("[^\n]+") do
    local t, who = line:match("^(%S+) (%S+) ")
    if t then out[#out + 1] = { t = tonumber(t), who = who } end
  end
  return out
end

-- First and last reconcile time of replica who (nil when none).
local function span(path, who, after)
  local first, last
  for _, r in ipairs(reconciles(path)) do
    if r.who == who and r.t > (after or 0) then
      first = first and math.min(first, r.t) or r.t
      last = last and math.max(last, r.t) or r.t
    end
  end
  return first, last
end

local function lease(t, ns)
  return t.client:get("coordination.k8s.io/v1/leases", ns, "le-spec")
end

-- The holder of the Lease, when someone holds it.
local function holder(t, ns)
  local l = lease(t, ns)
  local id = l and l.spec and l.spec.holderIdentity
  return id ~= nil and id ~= "" and id or nil
end

describe("leader election (kinformer run --leader-elect)", function()
  local t, ns, logf, ops

  before_each(function()
    t = h.target()
    ns = h.namespace(t, "le")
    logf = os.tmpname()
    ops = {}
  end)

  after_each(function()
    for _, op in pairs(ops) do op:cleanup() end
    os.remove(logf)
    h.cleanup_namespace(t, ns, { "v1/configmaps", "coordination.k8s.io/v1/leases" })
    t.stop()
  end)

  local function start(i, extra)
    ops[i] = h.operator("spec/fixtures/leader_operator.lua", t, args(ns, extra),
      { "LE_SPEC_LOG=" .. logf, "LE_SPEC_NAME=r" .. i })
  end

  it("lets one of three replicas reconcile; kill -9 and SIGTERM hand over", function()
    local idof = {}
    for i = 1, 3 do start(i) end
    for i = 1, 3 do idof[ops[i]:wait_output("identity (%S+)")] = i end -- all synced: warm
    assert(t.client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
                                              metadata = { name = "tick", namespace = ns } }))
    local a = idof[h.eventually(function() return holder(t, ns) end, "a lease holder")]
    assert.is_not_nil(a)
    h.eventually(function() return select(2, span(logf, "r" .. a)) and #reconciles(logf) >= 5 end,
      "the leader's reconciles")
    for _, r in ipairs(reconciles(logf)) do assert.equal("r" .. a, r.who) end

    -- kill -9: nothing is released; another replica waits for the lease to expire
    local t0 = core.monotime()
    assert.equal(137, ops[a]:stop("KILL"))
    local b = idof[h.eventually(function()
      local id = holder(t, ns)
      return id and idof[id] ~= a and id
    end, "a new lease holder", 60)]
    local b_first = h.eventually(function() return span(logf, "r" .. b) end, "the new leader's reconciles", 60)
    local kill_takeover = b_first - t0
    local _, a_last = span(logf, "r" .. a)
    assert.is_true(a_last < b_first, "reconciles overlapped")
    -- the follower counts the lease from the last renewal it saw, at most
    -- a retry period before the kill: never earlier than that
    assert.is_true(kill_takeover > LEASE - RETRY - 0.2, "took over before the lease expired: " .. kill_takeover)
    -- and no later than lease + retry (followers poll at 0.5-0.9 retry and try
    -- at the observed expiry), plus 0.5 s for a loaded machine's scheduling
    assert.is_true(kill_takeover < LEASE + RETRY + 0.5, "took over late: " .. kill_takeover)
    assert.equal(1, lease(t, ns).spec.leaseTransitions)

    -- SIGTERM: graceful stop, then the lease is released
    local t1 = core.monotime()
    assert.equal(0, ops[b]:stop("TERM"))
    local c = idof[h.eventually(function()
      local id = holder(t, ns)
      return id and idof[id] ~= a and idof[id] ~= b and id
    end, "the third replica to hold the lease", 60)]
    local c_first = h.eventually(function() return span(logf, "r" .. c, t1) end, "the third replica's reconciles", 60)
    local term_takeover = c_first - t1
    -- a released lease is taken at a follower's next try: within one retry
    -- period of the release (plus the same 0.5 s for scheduling)
    assert.is_true(term_takeover < RETRY + 0.5, "took over late after a release: " .. term_takeover)
    local _, b_last = span(logf, "r" .. b)
    assert.is_true(b_last < c_first, "reconciles overlapped")
    assert.equal(2, lease(t, ns).spec.leaseTransitions)

    -- over the whole run the reconciles form one run per replica, in order
    local seq = {}
    local all = reconciles(logf)
    table.sort(all, function(x, y) return x.t < y.t end)
    for _, r in ipairs(all) do
      if seq[#seq] ~= r.who then seq[#seq + 1] = r.who end
    end
    assert.same({ "r" .. a, "r" .. b, "r" .. c }, seq)
    print(string.format("\n  takeover after kill -9 of the leader: %.2f s (lease %g s + retry %g s = %g s)"
      .. "\n  takeover after SIGTERM (released): %.2f s (retry period %g s)",
      kill_takeover, LEASE, RETRY, LEASE + RETRY, term_takeover, RETRY))
    assert.matches("lease " .. h.esc(ns) .. "/le%-spec: released by", ops[b]:stderr())
    assert.equal(0, ops[c]:stop("TERM"))
  end)

  it("exits with status 1 and a clear line when the lease is lost", function()
    start(1)
    local id = ops[1]:wait_output("identity (%S+)")
    h.eventually(function() return holder(t, ns) == id end, "the replica to lead")
    -- someone else takes the Lease: the replica's next renewal gets 409,
    -- and it cannot renew within the renew deadline
    local l = lease(t, ns)
    l.spec.holderIdentity = "intruder"
    l.spec.leaseDurationSeconds = 3600
    local t0 = core.monotime()
    assert(t.client:update("coordination.k8s.io/v1/leases", l))
    -- at once: the replica's next renewal (a retry period) reads the
    -- intruder and stops; it does not retry until its renew deadline (3 s)
    h.eventually(function() return ops[1]:stderr():find("leader election lost", 1, true) end,
      "the loss to be logged", 60)
    local took = core.monotime() - t0
    assert.is_true(took < RETRY + 1, "the loss took " .. took .. " s")
    local rc = h.eventually(function() return ops[1]:status() end, "the replica to exit", 60)
    assert.equal(1, rc)
    assert.matches("leader election lost: " .. h.esc(id) .. " no longer holds lease "
      .. h.esc(ns) .. "/le%-spec %(holder now \"intruder\"%)", ops[1]:stderr())
    assert.matches("kinformer: leader election lost: exiting with status 1", ops[1]:stderr(), 1, true)
  end)
end)

describe("mgr leader_election with exit_on_loss = false", function()
  it("stops the controllers on loss and runs them again when it leads again", function()
    -- in a child: the loss is logged as an error on purpose
    local out, err, rc = proc.run_lua([[
      local kinformer = require "kinformer"
      local core = require "kinformer.core"
      local sim = assert(require("kinformer.sim").start{})
      local calls = {}
      local mgr = assert(kinformer.manager{ sim = sim, leader_election = {
        name = "le-loss", lease_duration = 2, renew_deadline = 1.5, retry_period = 0.3,
        exit_on_loss = false,
        on_started_leading = function() calls[#calls + 1] = "started" end,
        on_stopped_leading = function(lost) calls[#calls + 1] = "stopped:" .. tostring(lost) end,
      } })
      local ctl = assert(mgr:controller{ ["for"] = "v1/configmaps", reconciler = function() end })
      -- the test's own writes: a client of its own (the manager's writes are
      -- fenced: none while it does not lead)
      local env = assert(core.env{ kubeconfig = sim.kubeconfig })
      local client = env:client()
      local fence0 = mgr:leader_election()
      print("fence before start", fence0.fence_epoch, fence0.fence_holds)
      assert(client:create("v1/configmaps", { metadata = { name = "c1", namespace = "default" } }))
      assert(mgr:start{ timeout = 20 })
      local function reconciled() return ctl:stats().reconcile_success end
      assert(mgr:wait_for(function() return mgr:leader_election().is_leader and reconciled() >= 1 end, 30))
      local e1 = mgr:leader_election()
      print("fence leading", e1.fence_epoch > 0, e1.fence_holds)
      local l = assert(client:get("coordination.k8s.io/v1/leases", "default", "le-loss"))
      l.spec.holderIdentity = "intruder"
      l.spec.leaseDurationSeconds = 2
      local t0 = core.monotime()
      assert(client:update("coordination.k8s.io/v1/leases", l))
      assert(mgr:wait_for(function() return calls[#calls] == "stopped:true" end, 30))
      -- at once (a retry period, 0.3 s), not at the renew deadline (1.5 s)
      print("lost at once", core.monotime() - t0 < 1)
      local lost = mgr:leader_election()
      print("fence lost", lost.fence_epoch, lost.fence_holds)
      print("stopping", ctl:stats().stopping)
      assert(mgr:wait_for(function() return #calls >= 3 and calls[3] == "started" end, 30))
      local e2 = mgr:leader_election()
      print("fence again", e2.fence_epoch > e1.fence_epoch, e2.fence_holds)
      -- a rebuilt controller: its counters start again; reconciles run
      assert(client:create("v1/configmaps", { metadata = { name = "c2", namespace = "default" } }))
      assert(mgr:wait_for(function() return reconciled() >= 1 end, 30))
      local st = mgr:leader_election()
      print("calls", table.concat(calls, ","))
      print("state", st.is_leader, st.acquisitions, st.losses, st.transitions)
      mgr:stop()
      env:shutdown()
      sim:stop()
    ]])
    assert.equal(0, rc, out .. err)
    assert.matches("fence before start\t0\tfalse", out, 1, true)
    assert.matches("fence leading\ttrue\ttrue", out, 1, true)
    assert.matches("lost at once\ttrue", out, 1, true)
    assert.matches("fence lost\t0\tfalse", out, 1, true)
    assert.matches("fence again\ttrue\ttrue", out, 1, true)
    assert.matches("stopping\t1", out, 1, true)
    assert.matches("calls\tstarted,stopped:true,started", out, 1, true)
    -- the intruder kept leaseTransitions (0); winning it back made it 1
    assert.matches("state\ttrue\t2\t1\t1", out, 1, true)
    assert.matches("leader election lost: .* no longer holds lease default/le%-loss %(holder now \"intruder\"%); "
      .. "stopping the controllers until it leads again", err)
  end)
end)
