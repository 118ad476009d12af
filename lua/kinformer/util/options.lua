--- kinformer.util.options: the strict API's checks for the Lua layer.
--
-- The rule (README "Errors"): misuse raises at the user's call, with the
-- user's file and line; runtime failures return nil, message, code.
--
--   options.check(opts, KNOWN, "mgr:controller")  -- unknown keys raise with
--                                                   -- the closest valid one
--   options.raise(msg)                            -- error at the user's line
--   options.call(f, ...)                          -- f's raised errors re-raised
--                                                   -- at the user's line
--
-- "The user's line" is the first stack frame outside kinformer's own Lua
-- modules (this directory's parent), so wrappers of any depth report the
-- script's call. Option tables read in C are checked by laux.c's
-- lkin_opt_check_keys (the same message and suggestion rule).
local M = {}

-- ".../kinformer/" of this installation: frames whose source starts with it
-- are kinformer's own.
local PREFIX = (debug.getinfo(1, "S").source:match("^@(.*[/\\])util[/\\]options%.lua$"))

-- The error level, for an error() called by M.raise, of the first frame
-- outside kinformer (C frames such as pcall are skipped too).
local function user_level()
  local level = 2 -- 1: user_level, 2: M.raise
  while true do
    local info = debug.getinfo(level, "S")
    if not info then return 1 end
    local src = info.source or ""
    local ours = info.what == "C"
      or (PREFIX and src:sub(1, 1) == "@" and src:sub(2, #PREFIX + 1) == PREFIX)
    if not ours then return level - 1 end -- error() counts from raise's caller
    level = level + 1
  end
end

--- Raises msg at the first frame outside kinformer (the user's call).
function M.raise(msg)
  error(msg, user_level())
end

-- Edit distance between a and b (short strings: option names): inserts,
-- deletes, substitutions and swaps of two neighbours count one each.
local function distance(a, b)
  local prev, prev2 = {}, {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        cur[j] = math.min(cur[j], prev2[j - 2] + 1) -- two letters swapped
      end
    end
    prev2, prev = prev, cur
  end
  return prev[#b]
end

--- The closest of the strings in list to word (nil when none is close: at
-- most a third of the longer one's letters differ, or one is a prefix of
-- the other).
function M.closest(word, list)
  local best, bestd
  for _, cand in ipairs(list) do
    local d = distance(word, cand)
    local close = d <= math.max(1, math.max(#word, #cand) // 3)
      or (#word >= 3 and (cand:sub(1, #word) == word or word:sub(1, #cand) == cand))
    if close and (not bestd or d < bestd) then best, bestd = cand, d end
  end
  return best
end

--- "unknown option "k" to fname (did you mean "x"?)" for key k, or nil when
-- k is in known (a list of names). Numeric keys are allowed when
-- allow_array is true (positional entries such as {"v1/pods", ...}).
function M.unknown(k, known, fname, allow_array)
  if allow_array and math.type(k) == "integer" then return nil end
  for _, n in ipairs(known) do
    if n == k then return nil end
  end
  local shown = type(k) == "string" and ('"' .. k .. '"') or ("[" .. tostring(k) .. "]")
  local msg = ("unknown option %s to %s"):format(shown, fname)
  local near = type(k) == "string" and M.closest(k, known)
  if near then msg = msg .. (' (did you mean "%s"?)'):format(near) end
  return msg
end

--- Checks the options table opts of fname: nil is fine (returns {}); a
-- non-table raises "bad argument to fname (options table expected, got T)";
-- an unknown key raises (M.unknown). Keys are checked in sorted order so
-- the message does not depend on hashing. known nil: only the type is
-- checked, the C function that reads opts checks its keys
-- (lkin_opt_check_keys). Returns opts.
function M.check(opts, known, fname, allow_array)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    M.raise(("bad argument to %s (options table expected, got %s)"):format(fname, type(opts)))
  end
  if not known then return opts end
  local bad = {}
  for k in pairs(opts) do
    local msg = M.unknown(k, known, fname, allow_array)
    if msg then bad[#bad + 1] = { tostring(k), msg } end
  end
  if #bad > 0 then
    table.sort(bad, function(a, b) return a[1] < b[1] end)
    M.raise(bad[1][2])
  end
  return opts
end

-- Strips the "file:line: " that error() put in front of msg.
local function strip_where(msg)
  if type(msg) ~= "string" then return msg end
  return (msg:gsub("^[^\n:]-:%d+: ", "", 1))
end

local function rethrow(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) ~= "string" then error(e, 0) end -- error objects travel as they are
  M.raise(strip_where(e))
end

--- Calls f(...) and returns what it returns; an error f raised (misuse
-- reported by the C binding at kinformer's own line) is raised again at the
-- user's call, its position replaced.
function M.call(f, ...)
  return rethrow(pcall(f, ...))
end

return M
