--- kinformer.testing.replay: golden-file tests of replays (kinformer.replay),
-- for busted or any test runner, so that a bug seen in a cluster becomes a
-- test in minutes:
--
--   kinformer record -o spec/fixtures/bug.jsonl --duration 60 example.kinformer.io/v1/websites
--   -- spec/bug_spec.lua:
--   local golden = require "kinformer.testing.replay"
--   it("replays the bug", function()
--     golden.assert_writes_match("spec/fixtures/bug.jsonl", "operator.lua",
--                                "spec/fixtures/bug.writes.json")
--   end)
--
-- Run once with KINFORMER_UPDATE_GOLDEN=1 to write the golden file (then
-- read it and commit it); later runs compare and fail with a unified diff.
local replay = require "kinformer.replay"

local M = {}

--- The environment variable that makes assert_writes_match (re)write the
-- golden file instead of comparing.
M.UPDATE_ENV = "KINFORMER_UPDATE_GOLDEN"

local function read(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

local function write(path, s)
  local f = assert(io.open(path, "w"))
  f:write(s)
  f:close()
end

--- A unified diff of two texts (diff -u), labelled a and b.
function M.diff(a, b, la, lb)
  local pa, pb = os.tmpname(), os.tmpname()
  write(pa, a)
  write(pb, b)
  local p = io.popen(string.format("diff -u --label %q --label %q %q %q", la or "golden", lb or "replay", pa, pb))
  local out = p:read("a")
  p:close()
  os.remove(pa)
  os.remove(pb)
  return out
end

--- Replays trace through script (kinformer.replay.run, opts adds faults,
-- namespace, settle, args) and compares the writes, as kinformer.replay.format
-- prints them, with the file golden_path. With $KINFORMER_UPDATE_GOLDEN set
-- to anything but "" or "0" the file is written instead; a missing golden
-- file fails, naming the variable.
-- opts.set = true compares the distinct writes (kinformer.replay.set)
-- instead of the list. Returns the writes; raises on a mismatch with a
-- unified diff (golden -> replay).
function M.assert_writes_match(trace, script, golden_path, opts)
  opts = opts or {}
  local ropts = { trace = trace, script = script }
  for k, v in pairs(opts) do if k ~= "set" then ropts[k] = v end end
  local writes = replay.run(ropts)
  local text = replay.format(opts.set and replay.set(writes) or writes)
  local upd = os.getenv(M.UPDATE_ENV)
  if upd and upd ~= "" and upd ~= "0" then
    write(golden_path, text)
    return writes
  end
  local want = read(golden_path)
  if not want then
    error(string.format("golden file %s is missing: run with %s=1 to write it", golden_path, M.UPDATE_ENV), 2)
  end
  if want ~= text then
    error(string.format("the writes of replaying %s through %s differ from %s (%s=1 rewrites it):\n%s",
      trace, script, golden_path, M.UPDATE_ENV, M.diff(want, text, golden_path, "replay")), 2)
  end
  return writes
end

return M
