-- A deposed leader writes nothing (issue 24): two `kinformer run
-- --leader-elect` replicas of spec/fixtures/fencing_operator.lua (a
-- reconciler that patches one ConfigMap continuously) against one server
-- (a kinformer.sim here; the real kube-apiserver when the e2e tier sets
-- KINFORMER_E2E_KUBECONFIG, see spec/examples/helper.lua), lease 4 s,
-- renew deadline 3 s, retry 1 s. The leader is stopped (SIGSTOP) past its
-- lease; once the other replica took the Lease over and writes, the old
-- leader is resumed (SIGCONT). Its leadership fence expired while it was
-- stopped, so not one of its writes may reach the server after the
-- takeover; it then notices the loss and exits with status 1.
--
-- "After the takeover" is told by resourceVersions (one counter over all
-- objects on the sim and on kube-apiserver, whose resourceVersion is etcd's
-- revision): the Lease's first record naming the new holder, as a watch of
-- the Lease in this process saw it, against each write's answer and
-- against every change of the ConfigMap a watch saw (a write the server
-- applied though its writer never read the answer counts too). On the sim
-- the write log (every write that reached the server, in the server's
-- order, refused ones included) is checked as well.
local core = require "kinformer.core"
local kinformer = require "kinformer"
local h = require "examples.helper"

local LEASE, RENEW, RETRY = 4, 3, 1
local LEASE_NAME = "fence-spec"

local function args(ns)
  return { "--namespace", ns, "--leader-elect", "--leader-election-id", LEASE_NAME,
           "--leader-elect-lease-duration", tostring(LEASE),
           "--leader-elect-renew-deadline", tostring(RENEW),
           "--leader-elect-retry-period", tostring(RETRY) }
end

-- The writes logged so far: {who =, ok = bool, rv = number|nil, code =}.
local function writes(path)
  local out = {}
  for line in h.read(path):gmatch("[^\n]+") do
    local who, what, rest = line:match("^(%S+) (%S+) (.*)$")
    if who then
      out[#out + 1] = { who = who, ok = what == "ok", rv = what == "ok" and tonumber(rest) or nil,
                        code = what ~= "ok" and rest or nil }
    end
  end
  return out
end

local function count(ws, pred)
  local n = 0
  for _, w in ipairs(ws) do if pred(w) then n = n + 1 end end
  return n
end

local function kill(sig, pid) assert(os.execute(string.format("kill -%s %d", sig, pid))) end

describe("a deposed leader (SIGSTOP past the lease, then SIGCONT)", function()
  local t, ns, logf, ops, watcher

  before_each(function()
    t = h.target()
    ns = h.namespace(t, "fence")
    logf = os.tmpname()
    ops = {}
  end)

  after_each(function()
    for _, op in pairs(ops) do
      if not op:status() then os.execute("kill -CONT " .. op.pid .. " 2>/dev/null") end
      op:cleanup()
    end
    if watcher then watcher:stop() end
    os.remove(logf)
    h.cleanup_namespace(t, ns, { "v1/configmaps", "coordination.k8s.io/v1/leases" })
    t.stop()
  end)

  it("writes nothing once the new leader acquired, then exits with status 1", function()
    if t.sim then t.sim:write_log_start() end
    assert(t.client:create("v1/configmaps", { apiVersion = "v1", kind = "ConfigMap",
                                              metadata = { name = "beat", namespace = ns } }))
    -- every Lease event, in order: the resourceVersion of each holder's first record
    local holders = {}
    watcher = assert(kinformer.manager{ kubeconfig = t.kubeconfig, namespace = ns })
    local leases = assert(watcher:informer("coordination.k8s.io/v1/leases"))
    local function saw(l)
      local id = l.metadata.name == LEASE_NAME and l.spec and l.spec.holderIdentity
      if id and not holders[id] then holders[id] = tonumber(l.metadata.resourceVersion) end
    end
    leases:add_handler({ on_add = saw, on_update = function(_, l) saw(l) end }, { main = true })
    -- every write the server applied to "beat", whoever wrote it and
    -- whether or not its answer reached the writer: {rv =, writer =}
    local applied = {}
    local cms = assert(watcher:informer("v1/configmaps"))
    cms:add_handler({ on_update = function(_, cm)
      if cm.metadata.name == "beat" then
        applied[#applied + 1] = { rv = tonumber(cm.metadata.resourceVersion), writer = cm.data and cm.data.writer }
      end
    end }, { main = true })
    assert(watcher:start{ timeout = 20 })
    ops.a = h.operator("spec/fixtures/fencing_operator.lua", t, args(ns),
      { "FENCE_SPEC_LOG=" .. logf, "FENCE_SPEC_NAME=a" })
    local id_a = ops.a:wait_output("identity (%S+)")
    assert(watcher:wait_for(function() return holders[id_a] end, h.TIMEOUT), "replica a did not lead")
    ops.b = h.operator("spec/fixtures/fencing_operator.lua", t, args(ns),
      { "FENCE_SPEC_LOG=" .. logf, "FENCE_SPEC_NAME=b" })
    local id_b = ops.b:wait_output("identity (%S+)")
    h.eventually(function() return count(writes(logf), function(w) return w.who == "a" and w.ok end) >= 20 end,
      "the leader's writes")

    -- a stops past its lease; b takes over
    kill("STOP", ops.a.pid)
    local t_stop = core.monotime()
    local acq_rv = watcher:wait_for(function() return holders[id_b] end, LEASE + 4 * RETRY + 10)
    assert(acq_rv, "replica b did not take the Lease over")
    local takeover = core.monotime() - t_stop
    h.eventually(function()
      return count(writes(logf), function(w) return w.who == "b" and w.ok and w.rv > acq_rv end) >= 20
    end, "the new leader's writes")

    -- a resumes: its fence expired while it was stopped
    kill("CONT", ops.a.pid)
    local rc = h.eventually(function()
      watcher:step(0)
      return ops.a:status()
    end, "the old leader to exit", RENEW + 10)
    h.sleep(0.3)
    local ws = writes(logf)
    watcher:step(0.2)
    local late = count(ws, function(w) return w.who == "a" and w.ok and w.rv > acq_rv end)
    local late_seen = count(applied, function(w) return w.writer == "a" and w.rv > acq_rv end)
    assert.is_true(count(applied, function(w) return w.writer == "b" and w.rv > acq_rv end) >= 20,
      "the watch did not see the new leader's writes")
    local refused = count(ws, function(w) return w.who == "a" and not w.ok and w.code:match("^EFENCED") end)
    local failed = count(ws, function(w) return w.who == "a" and not w.ok and not w.code:match("^EFENCED") end)
    local b_after = count(ws, function(w) return w.who == "b" and w.ok and w.rv > acq_rv end)

    -- on the sim: the server's own order of every write that reached it
    local late_log
    if t.sim then
      local log = core.json_decode(assert(t.sim:write_log_take()))
      local acquired
      late_log = 0
      for _, e in ipairs(log) do
        local body = e.body or ""
        if not acquired then
          acquired = e.uri:match("/leases/" .. h.esc(LEASE_NAME)) and body:find(id_b, 1, true) ~= nil
        elseif e.uri:match("/configmaps/beat") and body:find('"writer":"a"', 1, true) then
          late_log = late_log + 1
        end
      end
      assert.is_true(acquired, "the new leader's Lease write is not in the write log")
    end
    print(string.format("\n  takeover %.2f s after SIGSTOP (lease %g s); writes by the old leader after "
      .. "the takeover: %d answered, %d seen by a watch (sim write log: %s); refused locally (EFENCED): %d, "
      .. "failed otherwise: %d; new leader's writes meanwhile: %d", takeover, LEASE, late, late_seen,
      tostring(late_log), refused, failed, b_after))
    assert.equal(0, late, "writes by the resumed old leader after the new one acquired")
    assert.equal(0, late_seen, "old leader's writes a watch saw after the takeover")
    if late_log then assert.equal(0, late_log, "old leader's writes in the sim's write log after the takeover") end
    assert.equal(1, rc)
    assert.matches("leader election lost", ops.a:stderr(), 1, true)
    assert.equal(0, ops.b:stop("TERM"))
  end)
end)
