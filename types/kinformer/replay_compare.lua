---@meta kinformer.replay_compare
-- kinformer.replay_compare (lua/kinformer/replay_compare.lua): shadow
-- reconcile before an upgrade: one trace replayed through two versions of
-- an operator (kinformer.replay.run each, its own sim, the same fake
-- clock) and the difference of their writes per object.

---kinformer.replay_compare.compare's options: kinformer.replay.run's but
---script, with the two versions.
---@class kinformer.ReplayCompareOptions
---@field trace string the trace file
---@field old string the current version's script
---@field new string the next version's script
---@field faults? kinformer.ReplayFault[]
---@field namespace? string
---@field settle? number
---@field timeout? number
---@field tail? number
---@field args? string[]

---One object whose writes differ.
---@class kinformer.ReplayObjectDiff
---@field key string "<resource> <namespace>/<name>"
---@field diff string its unified diff (old -> new)

---What compare returns.
---@class kinformer.ReplayComparison
---@field diff string every object's diff, "" when the writes are the same
---@field objects kinformer.ReplayObjectDiff[] the differing objects, sorted
---@field old? kinformer.ReplayWrite[] the old version's writes
---@field new? kinformer.ReplayWrite[] the new version's writes

---The module: require "kinformer.replay_compare".
---@class kinformer.replay_compare
local M = {}

---The lines showing one write: its verb (and subresource), then its body
---indented by two spaces (kinformer.yamlish).
---@param w kinformer.ReplayWrite
---@return string[]
function M.write_lines(w) end

---The writes by object: object key -> the lines of its distinct writes, in
---the order first made.
---@param writes kinformer.ReplayWrite[]
---@return table<string, string[]>
function M.by_object(writes) end

---The per-object unified diff of two lists of writes.
---@param old_writes kinformer.ReplayWrite[]
---@param new_writes kinformer.ReplayWrite[]
---@param labels? { old?: string, new?: string }
---@return kinformer.ReplayComparison
function M.diff(old_writes, new_writes, labels) end

---Replays opts.trace through opts.old, then opts.new, and diffs their writes.
---@param opts kinformer.ReplayCompareOptions
---@return kinformer.ReplayComparison
function M.compare(opts) end

return M
