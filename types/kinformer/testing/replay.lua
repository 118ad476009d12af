---@meta kinformer.testing.replay
-- kinformer.testing.replay (lua/kinformer/testing/replay.lua): golden-file
-- tests of replays.

---assert_writes_match's options: kinformer.replay.run's (faults,
---namespace, settle, timeout, tail, args) and set.
---@class kinformer.GoldenOptions
---@field set? boolean compare the distinct writes (the set function of kinformer.replay)
---@field faults? kinformer.ReplayFault[]
---@field namespace? string
---@field settle? number
---@field timeout? number
---@field tail? number
---@field args? string[]

---@class kinformer.testing.replay
---@field UPDATE_ENV string "KINFORMER_UPDATE_GOLDEN": set, the golden file is written instead of compared
local M = {}

---A unified diff of two texts, labelled la and lb.
---@param a string
---@param b string
---@param la? string default "golden"
---@param lb? string default "replay"
---@return string
function M.diff(a, b, la, lb) end

---Replays trace through script and compares the writes with golden_path;
---raises with a unified diff when they differ. Returns the writes.
---@param trace string
---@param script string
---@param golden_path string
---@param opts? kinformer.GoldenOptions
---@return kinformer.ReplayWrite[]
function M.assert_writes_match(trace, script, golden_path, opts) end

return M
