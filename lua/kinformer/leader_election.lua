--- kinformer.leader_election: the manager's leader election with warm
-- standby (controller-runtime's LeaderElection + warm replicas), over
-- core.leader_elector (csrc/lua/lleader.c: client-go's elector on a
-- coordination.k8s.io/v1 Lease, on a thread of its own).
--
--   kinformer.manager{ name = "my-operator", leader_election = {
--     name = "my-operator",           -- the Lease; default: mgr:name()
--     namespace = "ops",              -- default: the manager's namespace
--     identity = "pod-a",             -- default: "<operator>/<hostname>_<uuid>"
--     lease_duration = 15, renew_deadline = 10, retry_period = 2,  -- seconds
--     release_on_cancel = true,       -- on stop the leader frees the Lease
--     exit_on_loss = true,            -- losing the Lease ends mgr:run (exit 1)
--     on_started_leading = fn(), on_stopped_leading = fn(lost),
--     on_new_leader = fn(identity),
--   } }
--
-- The Lease's name defaults to the manager's name (mgr:name(): its name
-- option, else derived from the script's folder and the controllers'
-- names), resolved when mgr:start starts the election, after the script
-- registered its controllers: two different operators never share a
-- Lease by accident. The default identity starts with the operator's
-- name, so a replica that sees the Lease held by an identity of another
-- operator says so in the log (two operators given the same Lease name:
-- only one of them would ever reconcile).
--
-- Every replica starts its informers and syncs its caches; controllers
-- start only while this replica leads (and its caches synced), so a
-- takeover reconciles at once.
--
-- The manager's writes (reconciles, Events, its client) go out under a
-- leadership fence (core.leader_fence, made with the manager): its epoch
-- opens when this replica acquires the Lease and ends, on the elector's
-- thread, the moment leadership is lost or unknowable (a Lease read names
-- another holder; no renewal within the renew deadline; the process was
-- paused past it), and it also expires by itself at the last successful
-- renewal's start + renew deadline, so a process resumed after SIGSTOP
-- writes nothing even before its elector runs. A write under an ended
-- epoch is refused locally (EFENCED); a replica that does not lead writes
-- nothing. Then the queued on_stopped_leading stops the controllers
-- (in-flight reconciles interrupted, as controller-runtime skips the
-- graceful shutdown); with exit_on_loss, mgr:run logs the loss and exits
-- the process with status 1; without, the controllers wait to lead again
-- (they are rebuilt from their configs when leadership returns). The
-- callbacks run in the manager's main state (mgr:step / mgr:run).
local core = require "kinformer.core"
local options = require "kinformer.util.options"

local M = {}

M.OPTIONS = { -- kinformer.manager{leader_election = {...}}'s keys: add new ones here
  "name", "namespace", "identity", "lease_duration", "renew_deadline", "retry_period",
  "release_on_cancel", "exit_on_loss", "on_started_leading", "on_stopped_leading",
  "on_new_leader",
}

local LE = {}
LE.__index = LE

local function check(opts)
  if type(opts) ~= "table" then options.raise("leader_election: options table expected") end
  options.check(opts, M.OPTIONS, "leader_election")
  if opts.name ~= nil and (type(opts.name) ~= "string" or opts.name == "") then
    options.raise("leader_election: name (the Lease's name) must be a non-empty string")
  end
  -- the elector is made at mgr:start: check its timing now, with the C
  -- side's rules (leader_election.c), so a bad option raises here
  local t = {}
  for k, d in pairs { lease_duration = 15, renew_deadline = 10, retry_period = 2 } do
    local v = opts[k]
    if v ~= nil and (type(v) ~= "number" or v <= 0 or v ~= v) then
      options.raise(("leader_election: %s must be a positive number of seconds"):format(k))
    end
    t[k] = v or d
  end
  if t.lease_duration <= t.renew_deadline then
    options.raise("leader_election: lease_duration must be greater than renew_deadline")
  end
  if t.renew_deadline <= 1.2 * t.retry_period then
    options.raise("leader_election: renew_deadline must be greater than retry_period*1.2")
  end
  if t.lease_duration < 1 then
    options.raise("leader_election: lease_duration must be at least 1 second (the Lease holds whole seconds)")
  end
  for _, k in ipairs { "on_started_leading", "on_stopped_leading", "on_new_leader" } do
    if opts[k] ~= nil and type(opts[k]) ~= "function" then
      options.raise("leader_election: " .. k .. " must be a function")
    end
  end
end

-- Calls the user's callback fn(...) (on_started_leading, ...) as every
-- main-state user call: under handler_timeout and main_memory_limit,
-- interrupted by a pending SIGINT/SIGTERM; a failure is logged, never
-- raised into the main-state queue.
local function call_user(self, name, fn, ...)
  local mgr = self._mgr
  local mem = rawget(mgr, "main_memory_limit")
  local ok, msg = core.limited_call({ what = "leader election callback", name = name,
    option = "handler_timeout", timeout = rawget(mgr, "handler_timeout") or 10,
    memory_limit = mem == nil and 512 * 1024 * 1024 or mem, memory_option = "main_memory_limit",
    signals = true }, fn, ...)
  if not ok then core.log("error", "manager", "leader election: " .. tostring(msg)) end
end

--- Creates the election for mgr (not started: the elector is made by
-- start, once the Lease's name can be resolved). Raises on a bad option.
function M.new(mgr, opts)
  check(opts)
  -- the manager's writes are fenced from now on: none before it leads
  core.leader_fence(mgr.env)
  local self = setmetatable({
    _mgr = mgr,
    _user = opts,
    exit_on_loss = opts.exit_on_loss ~= false,
    _leading = false, -- as the main state saw it (the callbacks)
    _lost = false,    -- lost with exit_on_loss: mgr:run ends
    _stopping = false,
  }, LE)
  return self
end

--- The operator name an identity made by kinformer carries
-- ("<operator>/<hostname>_<uuid>"), or nil for any other identity.
function M.operator_of(identity)
  return type(identity) == "string" and identity:match("^([a-z0-9][-a-z0-9.]*)/[^/]+_[%x-]+$") or nil
end

-- The Lease's name: the option, else the manager's name.
function LE:lease_name()
  return self._user.name or self._mgr:name()
end

-- Logs, once per holder, that the Lease is held by another operator.
function LE:_check_holder(id)
  local theirs, ours = M.operator_of(id), self._mgr:name()
  if theirs and theirs ~= ours and self._warned ~= id then
    self._warned = id
    local st = self:state()
    core.log("warn", "manager", string.format(
      "leader election: lease %s/%s is held by %q, a replica of operator %q, not of this operator %q: "
      .. "two operators share one Lease and only one of them reconciles; give each its own "
      .. "(kinformer.manager{name = ...} or --leader-election-id)", st.namespace, st.name, id, theirs, ours))
  end
end

-- Makes the elector (the C one) under the resolved Lease name; raises on
-- a bad option.
function LE:_make()
  local opts, mgr = self._user, self._mgr
  local identity = opts.identity or (mgr:name() .. "/" .. core.leader_identity())
  local ok, ud = pcall(core.leader_elector, mgr.env, {
    name = self:lease_name(), namespace = opts.namespace or mgr.namespace, identity = identity,
    lease_duration = opts.lease_duration, renew_deadline = opts.renew_deadline,
    retry_period = opts.retry_period, release_on_cancel = opts.release_on_cancel ~= false,
    rejoin_after_loss = not self.exit_on_loss,
    on_started_leading = function() self:_started() end,
    on_stopped_leading = function(lost) self:_stopped(lost) end,
    on_new_leader = function(id)
      self:_check_holder(id)
      if opts.on_new_leader then call_user(self, "on_new_leader", opts.on_new_leader, id) end
    end,
  })
  if not ok then
    local why = tostring(ud):match("^bad argument #%d+ to '[^']*' %((.*)%)$") or tostring(ud)
    options.raise("leader_election: " .. why:gsub("^leader election: ", ""))
  end
  self._ud = ud
  return ud
end

--- Starts the elector's thread (mgr:start, with the informers): the
-- elector is made now, under the Lease name resolved now.
function LE:start()
  local ud = self._ud or self:_make()
  return ud:start()
end

--- True when controllers may run: the main state was told it leads.
function LE:leading() return self._leading end

--- True once the Lease was lost with exit_on_loss (mgr:run then exits).
function LE:lost() return self._lost end

-- Starts every controller of the manager; a stopped one (a previous term)
-- is rebuilt from its config first. Logs what fails.
local function start_controllers(mgr)
  for _, ctl in ipairs(mgr:controllers()) do
    local ok, msg = ctl:_lead()
    if ok == nil and msg then core.log("error", "manager", "leader election: " .. tostring(msg)) end
  end
end

--- mgr:start calls this once the caches synced: starts the controllers
-- when this replica already leads.
function LE:synced()
  if self._leading and self._ud and self._ud:is_leader() then start_controllers(self._mgr) end
end

function LE:_started()
  if self._stopping then return end
  self._leading = true
  local mgr = self._mgr
  -- the elector's live view: a loss queued right behind this event must
  -- not start the controllers even briefly
  if mgr:state() == "started" and self._ud:is_leader() then
    start_controllers(mgr)
  end
  if self._user.on_started_leading then
    call_user(self, "on_started_leading", self._user.on_started_leading)
  end
end

function LE:_stopped(lost)
  local was = self._leading
  self._leading = false
  if lost then
    local st = self._ud:state()
    -- the last record read may still name this replica: its renewals did
    -- not get through in time (a partition, a slow server), nobody took it
    local holder = st.leader == st.identity and "no renewal got through within the renew deadline"
      or string.format("holder now %q", tostring(st.leader))
    core.log("error", "manager", string.format(
      "leader election lost: %s no longer holds lease %s/%s (%s); stopping the controllers%s",
      st.identity, st.namespace, st.name, holder,
      self.exit_on_loss and " and exiting" or " until it leads again"))
    -- controller-runtime skips the graceful shutdown when the lease is lost
    local ctls = self._mgr:controllers()
    for _, ctl in ipairs(ctls) do pcall(ctl.shutdown, ctl, 0) end
    for _, ctl in ipairs(ctls) do ctl:_unlead() end
    if self.exit_on_loss then self._lost = true end
  end
  if was and self._user.on_stopped_leading then
    call_user(self, "on_stopped_leading", self._user.on_stopped_leading, lost and true or false)
  end
end

--- Stops the elector (mgr:stop, after the controllers): the leader
-- releases the Lease when release_on_cancel. Idempotent.
function LE:stop()
  self._stopping = true
  if self._ud then self._ud:stop() end
end

--- The state as the elector knows it: {identity=, name=, namespace=,
-- leader=, is_leader=, transitions=, lease_duration=, acquire_time=,
-- renew_time=, acquisitions=, losses=, running=, fence_epoch=,
-- fence_holds=} (the leadership fence: its open epoch, 0 while closed,
-- and whether the manager's writes may be sent now).
-- Before start: what is known (the name the Lease would get), not running.
function LE:state()
  if self._ud then return self._ud:state() end
  local mgr = self._mgr
  local epoch, holds = core.leader_fence(mgr.env)
  return { identity = self._user.identity or "", name = self:lease_name(),
           namespace = self._user.namespace or mgr.namespace, leader = "", is_leader = false,
           transitions = 0, acquisitions = 0, losses = 0, running = false,
           fence_epoch = epoch, fence_holds = holds }
end

function LE:close() if self._ud then self._ud:close() end end

return M
