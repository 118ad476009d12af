---@meta kinformer.leader_election
-- kinformer.leader_election (lua/kinformer/leader_election.lua): the
-- manager's leader election on a coordination.k8s.io/v1 Lease, with warm
-- standby. Given as kinformer.manager{leader_election = {...}}.

---@class kinformer.LeaderElectionOptions
---@field name? string the Lease's name (default the manager's name, mgr:name())
---@field namespace? string default the manager's namespace
---@field identity? string default "<operator name>/<hostname>_<uuid>"
---@field lease_duration? number seconds (default 15)
---@field renew_deadline? number seconds (default 10)
---@field retry_period? number seconds (default 2)
---@field release_on_cancel? boolean on stop the leader frees the Lease (default true)
---@field exit_on_loss? boolean losing the Lease ends mgr:run with status 1 (default true)
---@field on_started_leading? fun()
---@field on_stopped_leading? fun(lost: boolean)
---@field on_new_leader? fun(identity: string)

---mgr:leader_election().
---@class kinformer.LeaderElectionState
---@field identity string
---@field name string
---@field namespace string
---@field leader string the holder last observed ("" when none)
---@field is_leader boolean
---@field transitions integer
---@field lease_duration number
---@field acquire_time? string
---@field renew_time? string
---@field acquisitions integer
---@field losses integer
---@field running boolean
---@field fence_epoch integer the leadership fence's open epoch (0: closed)
---@field fence_holds boolean writes of this manager may be sent now

---The election of one manager (the manager drives it).
---@class kinformer.LeaderElection
---@field exit_on_loss boolean
local LeaderElection = {}

---The Lease's name: the name option, else the manager's name.
---@return string
function LeaderElection:lease_name() end

---Makes the elector (under the name resolved now) and starts its thread.
---@return true? ok
---@return string? msg
---@return kinformer.ErrorCode? code
function LeaderElection:start() end

---True when controllers may run.
---@return boolean
function LeaderElection:leading() end

---True once the Lease was lost with exit_on_loss.
---@return boolean
function LeaderElection:lost() end

---The caches synced: starts the controllers when leading.
function LeaderElection:synced() end

---Stops the elector (releases the Lease when release_on_cancel).
function LeaderElection:stop() end

---@return kinformer.LeaderElectionState
function LeaderElection:state() end

function LeaderElection:close() end

---The module: require "kinformer.leader_election".
---@class kinformer.leader_election
---@field OPTIONS string[] the leader_election table's keys
local M = {}

---Creates the election for mgr (not started); raises on a bad option.
---@param mgr kinformer.Manager
---@param opts kinformer.LeaderElectionOptions
---@return kinformer.LeaderElection
function M.new(mgr, opts) end

---The operator name in an identity kinformer made ("<operator>/<hostname>_<uuid>"), or nil.
---@param identity string
---@return string?
function M.operator_of(identity) end

return M
