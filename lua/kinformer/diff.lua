--- kinformer.diff: a unified diff of two arrays of lines (Myers' O(ND)
-- algorithm), pure Lua, for kinformer.plan.
--
--   local d = require "kinformer.diff"
--   local text = d.unified(a_lines, b_lines, { from = "a", to = "b", context = 3 })
--   -- "" when equal, else "--- a\n+++ b\n@@ -1,3 +1,3 @@\n ..."
--
-- d.edits(a, b) returns the edit script: an array of {op, line} with op
-- " " (kept), "-" (only in a) or "+" (only in b), in order; a shortest one
-- (fewest inserted + deleted lines), deletions before insertions where
-- both are possible. Past M.MAX_D differing lines (the search costs
-- O(D^2) memory) the middle that differs is shown as all deleted then all
-- inserted instead: correct, not shortest.
local M = {}

M.MAX_D = 2000

--- The shortest edit script from a to b (arrays of strings).
function M.edits(a, b)
  local n, m = #a, #b
  -- common prefix and suffix first: most object diffs are small
  local pre = 0
  while pre < n and pre < m and a[pre + 1] == b[pre + 1] do pre = pre + 1 end
  local suf = 0
  while suf < n - pre and suf < m - pre and a[n - suf] == b[m - suf] do suf = suf + 1 end
  local out = {}
  for i = 1, pre do out[#out + 1] = { " ", a[i] } end
  local a0, b0 = pre, pre -- the middle: a[a0+1 .. n-suf], b[b0+1 .. m-suf]
  local N, Mm = n - pre - suf, m - pre - suf
  local mid = {}
  if N == 0 then
    for j = 1, Mm do mid[#mid + 1] = { "+", b[b0 + j] } end
  elseif Mm == 0 then
    for i = 1, N do mid[#mid + 1] = { "-", a[a0 + i] } end
  else
    -- Myers: V[k] = furthest x on diagonal k (x - y = k); one copy per d
    local max = math.min(N + Mm, M.MAX_D)
    local V = { [1] = 0 }
    local trace = {}
    local found
    for d = 0, max do
      local snap = {}
      for k, x in pairs(V) do snap[k] = x end
      trace[d] = snap
      for k = -d, d, 2 do
        local x
        if k == -d or (k ~= d and (V[k - 1] or -1) < (V[k + 1] or -1)) then
          x = V[k + 1] or 0 -- down: an insertion
        else
          x = (V[k - 1] or 0) + 1 -- right: a deletion
        end
        local y = x - k
        while x < N and y < Mm and a[a0 + x + 1] == b[b0 + y + 1] do x, y = x + 1, y + 1 end
        V[k] = x
        if x >= N and y >= Mm then found = d break end
      end
      if found then break end
    end
    if not found then
      for i = 1, N do mid[#mid + 1] = { "-", a[a0 + i] } end
      for j = 1, Mm do mid[#mid + 1] = { "+", b[b0 + j] } end
    end
    -- walk back from (N, Mm) through the saved V's
    local x, y = N, Mm
    if not found then x, y = 0, 0 end
    local rev = {}
    for d = found or 0, 1, -1 do
      local v = trace[d]
      local k = x - y
      local pk
      if k == -d or (k ~= d and (v[k - 1] or -1) < (v[k + 1] or -1)) then pk = k + 1 else pk = k - 1 end
      local px = v[pk] or 0
      local py = px - pk
      -- the snake back to the end of the step from (px, py)
      local sx, sy = (pk == k + 1) and px or px + 1, (pk == k + 1) and py + 1 or py
      while x > sx and y > sy do
        rev[#rev + 1] = { " ", a[a0 + x] }
        x, y = x - 1, y - 1
      end
      if pk == k + 1 then rev[#rev + 1] = { "+", b[b0 + y] } else rev[#rev + 1] = { "-", a[a0 + x] } end
      x, y = px, py
    end
    while found and x > 0 and y > 0 do
      rev[#rev + 1] = { " ", a[a0 + x] }
      x, y = x - 1, y - 1
    end
    for i = #rev, 1, -1 do mid[#mid + 1] = rev[i] end
  end
  for _, e in ipairs(mid) do out[#out + 1] = e end
  for i = n - suf + 1, n do out[#out + 1] = { " ", a[i] } end
  return out
end

--- The unified diff of a and b (arrays of lines) as text, "" when they are
-- equal. opts: from, to (the header names, default "a" and "b"), context
-- (lines around each change, default 3). A side that is nil or empty is
-- shown as /dev/null when opts.from / opts.to is not given.
function M.unified(a, b, opts)
  opts = opts or {}
  a, b = a or {}, b or {}
  local ctx = opts.context or 3
  local es = M.edits(a, b)
  local changed = false
  for _, e in ipairs(es) do
    if e[1] ~= " " then changed = true break end
  end
  if not changed then return "" end
  local out = {
    "--- " .. (opts.from or (#a == 0 and "/dev/null" or "a")),
    "+++ " .. (opts.to or (#b == 0 and "/dev/null" or "b")),
  }
  -- positions: each edit's line number in a and in b
  local ai, bi = {}, {}
  local x, y = 1, 1
  for i, e in ipairs(es) do
    ai[i], bi[i] = x, y
    if e[1] ~= "+" then x = x + 1 end
    if e[1] ~= "-" then y = y + 1 end
  end
  local i, total = 1, #es
  while i <= total do
    if es[i][1] == " " then
      i = i + 1
    else
      -- a hunk: from ctx lines before this change to ctx lines after the
      -- last change that is within 2*ctx kept lines of the previous one
      local s = math.max(1, i - ctx)
      local e = i
      while true do
        local j = e + 1
        while j <= total and es[j][1] == " " do j = j + 1 end
        if j <= total and j - e - 1 <= 2 * ctx then e = j else break end
      end
      local stop = math.min(total, e + ctx)
      local na, nb = 0, 0
      for j = s, stop do
        if es[j][1] ~= "+" then na = na + 1 end
        if es[j][1] ~= "-" then nb = nb + 1 end
      end
      local sa = na == 0 and ai[s] - 1 or ai[s]
      local sb = nb == 0 and bi[s] - 1 or bi[s]
      out[#out + 1] = string.format("@@ -%d,%d +%d,%d @@", sa, na, sb, nb)
      for j = s, stop do out[#out + 1] = es[j][1] .. es[j][2] end
      i = stop + 1
    end
  end
  return table.concat(out, "\n") .. "\n"
end

return M
