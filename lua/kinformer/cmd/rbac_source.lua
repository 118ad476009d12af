--- kinformer.cmd.rbac_source: the Lua source as kinformer.cmd.rbac_scan
-- reads it: comments and string contents blanked (lex), the block
-- structure from the keywords (function/if/do/repeat ... end/until, with
-- each function's parameters and name), argument lists, table
-- constructors' fields, and assignments and declarations (single and
-- multiple, `local x <const>`, `for` variables) with their right-hand
-- sides. A careful heuristic over text, not a parser: what it does not
-- recognise it reports as nothing, and the scanner then says
-- "undetermined".
local M = {}

M.CLIENT_VERBS = { get = true, list = true, create = true, update = true, update_status = true,
                   patch = true, apply = true, delete = true }

-- ---- lexing ------------------------------------------------------------------

-- Two copies of src of the same length: code (comments blanked, strings
-- kept) and bare (string contents blanked too, their quotes kept), so that
-- positions agree and structure is read where no string can fool it.
local function lex(src)
  local code, bare = {}, {}
  local i, n = 1, #src
  local start = 1
  local function flush(to)
    if to >= start then
      local s = src:sub(start, to)
      code[#code + 1] = s
      bare[#bare + 1] = s
    end
  end
  while i <= n do
    local c = src:byte(i)
    if c == 45 and src:byte(i + 1) == 45 then -- "--"
      flush(i - 1)
      local eq = src:match("^%[(=*)%[", i + 2)
      local j
      if eq then
        local close = src:find("]" .. eq .. "]", i + 2, true)
        j = close and close + #eq + 1 or n
      else
        j = (src:find("\n", i, true) or n + 1) - 1
      end
      local blank = src:sub(i, j):gsub("[^\n]", " ")
      code[#code + 1] = blank
      bare[#bare + 1] = blank
      i = j + 1
      start = i
    elseif c == 34 or c == 39 then -- a short string
      flush(i - 1)
      local j = i + 1
      while j <= n do
        local d = src:byte(j)
        if d == 92 then j = j + 2
        elseif d == c or d == 10 then break
        else j = j + 1 end
      end
      if j > n then j = n end
      local s = src:sub(i, j)
      code[#code + 1] = s
      bare[#bare + 1] = s:sub(1, 1) .. s:sub(2, -2):gsub("[^\n]", " ") .. (#s > 1 and s:sub(-1) or "")
      i = j + 1
      start = i
    elseif c == 91 and src:match("^%[=*%[", i) then -- a long string
      flush(i - 1)
      local eq = src:match("^%[(=*)%[", i)
      local close = src:find("]" .. eq .. "]", i, true)
      local j = close and close + #eq + 1 or n
      local s = src:sub(i, j)
      code[#code + 1] = s
      bare[#bare + 1] = s:sub(1, #eq + 2) .. s:sub(#eq + 3, -#eq - 3):gsub("[^\n]", " ") .. s:sub(-#eq - 2)
      i = j + 1
      start = i
    else
      i = i + 1
    end
  end
  flush(n)
  return table.concat(code), table.concat(bare)
end
M.lex = lex

-- ---- files -------------------------------------------------------------------

local File = {}
File.__index = File

local BLOCK_OPEN = { ["function"] = true, ["if"] = true, ["do"] = true, ["repeat"] = true }

-- The block structure: blocks {kind =, start =, stop =, params =, name =,
-- header_stop =, method =} (functions with their parameters and name).
local function structure(f)
  local bare = f.bare
  local blocks, stack = {}, {}
  for pos, word in bare:gmatch("()%f[%w_]([%a_][%w_]*)") do
    -- a keyword only where it is not a field (t.end is not Lua, but
    -- a.do_x is matched whole by the pattern above)
    if BLOCK_OPEN[word] then
      local b = { kind = word, start = pos }
      if word == "function" then
        local name, ps, pe = bare:match("^function%s*([%w_.:]*)%s*()%b()()", pos)
        if ps then
          local params = {}
          for p in bare:sub(ps + 1, pe - 2):gmatch("[%a_][%w_]*") do params[#params + 1] = p end
          b.params, b.params_start, b.header_stop = params, ps, pe - 1
          if name ~= "" then
            b.method = name:find(":", 1, true) ~= nil
            b.name = name:match("([%w_]+)$")
            b.field = name:find("[.:]") ~= nil
          else
            -- an anonymous function assigned to a name: f = function, M.f = function
            local pre = bare:sub(math.max(1, pos - 80), pos - 1)
            local assigned = pre:match("([%a_][%w_.]*)%s*=%s*$")
            if assigned then
              b.name = assigned:match("([%w_]+)$")
              b.field = assigned:find(".", 1, true) ~= nil
            end
          end
        end
      end
      blocks[#blocks + 1] = b
      stack[#stack + 1] = b
    elseif word == "end" or word == "until" then
      local b = table.remove(stack)
      if b then b.stop = pos + #word - 1 end
    end
  end
  for _, b in ipairs(stack) do b.stop = #bare end -- unbalanced: to the end
  f.blocks = blocks
  -- depth of ( [ { at each position, for the statement-level test
  local depth, d = {}, 0
  for i = 1, #bare do
    local c = bare:byte(i)
    if c == 40 or c == 91 or c == 123 then d = d + 1 depth[i] = d
    elseif c == 41 or c == 93 or c == 125 then depth[i] = d d = d - 1
    else depth[i] = d end
  end
  f.depth = depth
  -- line starts, for line_of
  local lines = { 1 }
  for p in bare:gmatch("()\n") do lines[#lines + 1] = p + 1 end
  f.lines = lines
end

--- A scanned file: name (for the notes, relative to the script's folder),
-- path, src.
local function new_file(name, path, src)
  local f = setmetatable({ name = name, path = path, src = src }, File)
  f.code, f.bare = lex(src)
  structure(f)
  return f
end
M.new_file = new_file

function File:line_of(pos)
  local lo, hi = 1, #self.lines
  while lo < hi do
    local mid = (lo + hi + 1) // 2
    if self.lines[mid] <= pos then lo = mid else hi = mid - 1 end
  end
  return lo
end

-- The innermost function block around pos (its body or header), or nil.
function File:function_at(pos)
  local best
  for _, b in ipairs(self.blocks) do
    if b.kind == "function" and b.start < pos and b.stop >= pos then
      if not best or b.start > best.start then best = b end
    end
  end
  return best
end

-- The innermost block of any kind that contains pos.
function File:block_at(pos)
  local best
  for _, b in ipairs(self.blocks) do
    if b.start < pos and b.stop >= pos and (not best or b.start > best.start) then best = b end
  end
  return best
end

-- Nesting of ( [ { at pos relative to the innermost function body around
-- it: 0 where a statement can start.
function File:stmt_depth(pos)
  local fn = self:function_at(pos)
  local base = 0
  if fn and fn.header_stop and pos > fn.header_stop then base = self.depth[fn.header_stop] - 1 end
  return (self.depth[pos] or 0) - base
end

local function trim(f, s, e)
  local bare = f.bare
  while s <= e and bare:sub(s, s):match("%s") do s = s + 1 end
  while e >= s and bare:sub(e, e):match("%s") do e = e - 1 end
  return s, e
end

-- Spans of bare[s..e] split at depth 0 where sep (a plain string) starts.
local function split_top(f, s, e, sep)
  local out, depth, start = {}, 0, s
  local bare = f.bare
  local i = s
  local n = #sep
  while i <= e do
    local c = bare:byte(i)
    if c == 40 or c == 91 or c == 123 then depth = depth + 1
    elseif c == 41 or c == 93 or c == 125 then depth = depth - 1
    elseif depth == 0 and bare:sub(i, i + n - 1) == sep
        and not (sep == ".." and (bare:sub(i + 2, i + 2) == "." or bare:sub(i - 1, i - 1) == ".")) then
      out[#out + 1] = { start, i - 1 }
      start = i + n
      i = i + n - 1
    end
    i = i + 1
  end
  out[#out + 1] = { start, e }
  for k, sp in ipairs(out) do out[k] = { trim(f, sp[1], sp[2]) } end
  return out
end

-- The arguments of the call whose "(" (or "{", or a string) is at open:
-- an array of spans {s, e}, and the position of the call's end.
function File:args_at(open)
  local bare = self.bare
  local c = bare:sub(open, open)
  if c == "{" then
    local e = bare:match("^%b{}()", open)
    e = e and e - 1 or #bare
    return { { open, e } }, e
  elseif c == '"' or c == "'" then
    local e = bare:find(c, open + 1, true) or #bare
    return { { open, e } }, e
  elseif c == "[" then
    local eq = bare:match("^%[(=*)%[", open) or ""
    local close = bare:find("]" .. eq .. "]", open, true)
    local e = close and close + #eq + 1 or #bare
    return { { open, e } }, e
  end
  local e = bare:match("^%b()()", open)
  e = e and e - 1 or #bare
  if e - 1 < open + 1 then return {}, e end
  local s2, e2 = trim(self, open + 1, e - 1)
  if e2 < s2 then return {}, e end
  return split_top(self, open + 1, e - 1, ","), e
end

function File:text(s, e) return self.code:sub(s, e) end

-- The top-level entries of the table constructor at span {s, e}: an
-- array {key =, s =, e =} (key nil for positional entries).
function File:fields(s, e)
  local out = {}
  if self.bare:sub(s, s) ~= "{" or self.bare:sub(e, e) ~= "}" then return out end
  if e - 1 < s + 1 then return out end
  local parts = split_top(self, s + 1, e - 1, ",")
  local more = {}
  for _, p in ipairs(parts) do
    for _, q in ipairs(split_top(self, p[1], p[2], ";")) do more[#more + 1] = q end
  end
  for _, p in ipairs(more) do
    local ps, pe = p[1], p[2]
    if pe >= ps then
      local text = self.code:sub(ps, pe)
      local key, vs = text:match("^([%a_][%w_]*)%s*=%s*()")
      if not key or text:sub(vs, vs) == "=" then
        local q
        q, key, vs = text:match("^%[%s*(['\"])(.-)%1%s*%]%s*=%s*()")
        if not q then key, vs = nil, 1 end
      end
      out[#out + 1] = { key = key, s = ps + vs - 1, e = pe }
    end
  end
  return out
end

-- ---- assignments -------------------------------------------------------------

-- The statement-level part of a line before pos: what follows the last
-- ";", then, do, else, repeat or function header on it.
local function stmt_prefix(f, pos)
  local ls = f.lines[f:line_of(pos)]
  local pre = f.bare:sub(ls, pos - 1)
  local cut = 0
  for _, pat in ipairs { "^.*();", "^.*%f[%w_]then%f[^%w_]()", "^.*%f[%w_]do%f[^%w_]()",
                         "^.*%f[%w_]else%f[^%w_]()", "^.*%f[%w_]repeat%f[^%w_]()",
                         "^.*%f[%w_]function%s*[%w_.:]*%s*%b()()" } do
    local at = pre:match(pat)
    if at and at - 1 > cut then cut = at - 1 end
  end
  return pre:sub(cut + 1)
end

-- The right-hand side starting at s: its expressions as spans, up to the
-- end of the statement (a newline at depth 0 after a complete expression
-- that the next line does not continue, a ";", or a keyword).
local STMT_WORDS = { ["local"] = true, ["return"] = true, ["end"] = true, ["if"] = true, ["for"] = true,
                     ["while"] = true, ["else"] = true, ["elseif"] = true, ["until"] = true,
                     ["do"] = true, ["then"] = true, ["repeat"] = true, ["goto"] = true, ["break"] = true }
function File:rhs_at(s)
  local bare = self.bare
  local n = #bare
  local depth, i = 0, s
  local stop = n
  while i <= n do
    local c = bare:sub(i, i)
    if c == "(" or c == "[" or c == "{" then depth = depth + 1
    elseif c == ")" or c == "]" or c == "}" then
      depth = depth - 1
      if depth < 0 then stop = i - 1 break end
    elseif depth == 0 then
      if c == ";" then stop = i - 1 break end
      if c == "\n" then
        local before = bare:sub(s, i - 1):match("^%s*(.-)%s*$")
        local after = bare:match("^%s*(%S*)", i + 1) or ""
        local open = before == "" or before:match("[,=%.%+%-%*/%%^<>~]$") or before:match("%f[%w_]and$")
          or before:match("%f[%w_]or$") or before:match("%f[%w_]not$")
        local cont = after:match("^%.%.") or after:match("^and%f[^%w_]") or after:match("^or%f[^%w_]")
          or after:match("^[%+%*/%%^<>=~]")
        if not open and not cont then stop = i - 1 break end
      elseif c:match("[%a_]") and (i == s or not bare:sub(i - 1, i - 1):match("[%w_.:]")) then
        local w = bare:match("^[%a_][%w_]*", i)
        if STMT_WORDS[w] and i > s then stop = i - 1 break end
        -- a name right after a complete expression starts the next
        -- statement (`local c = x.client c:get(...)` on one line)
        local prev, pw = bare:sub(s, i - 1):match("([%w_%)%]}\"'])(%s+)$")
        if prev and pw and w ~= "and" and w ~= "or" then
          local word = bare:sub(s, i - 1):match("([%a_][%w_]*)%s+$")
          if not (word == "and" or word == "or" or word == "not") then stop = i - 1 break end
        end
        if w == "function" then -- skip an inline function to its end
          local fb
          for _, b in ipairs(self.blocks) do if b.start == i then fb = b end end
          if fb and fb.stop then i = fb.stop end
        else
          i = i + #w - 1
        end
      end
    end
    i = i + 1
  end
  local e = stop
  local ts, te = trim(self, s, e)
  if te < ts then return {} end
  return split_top(self, ts, te, ",")
end

-- Whether the name path at [s, e] is on the left of an assignment or a
-- declaration. Returns nil, or a table {kind = "local" | "assign" |
-- "localfn" | "for", index = its place in the list, rhs = spans,
-- stmt = the statement's start}.
function File:assignment_at(s, e)
  if self:stmt_depth(s) ~= 0 then return nil end
  local pre = stmt_prefix(self, s)
  local bare = self.bare
  if pre:match("^%s*local%s+function%s+$") then return { kind = "localfn", stmt = s } end
  if pre:match("%f[%w_]for%s+[%w_,%s]*$") then return { kind = "for", stmt = s } end
  local lhs_before = pre:match("^%s*local%s+([%w_,%s<>]*)$")
  local kind = "local"
  if not lhs_before then
    lhs_before = pre:match("^%s*([%w_.,%s]*)$")
    kind = "assign"
  end
  if not lhs_before then return nil end
  if lhs_before:match("%S") and not lhs_before:match(",%s*$") then return nil end
  local after, eqpos = bare:match("^([%w_.,%s<>]*)=()", e + 1)
  if not after or (after:match("%S") and not after:match("^%s*<%a+>") and not after:match("^%s*,")) then
    -- local x (no value): a declaration whose value is not known
    if kind == "local" and bare:match("^[%w_,\t <>]*\n", e + 1) then
      return { kind = "local", index = 1, rhs = {}, stmt = s - #pre }
    end
    return nil
  end
  if bare:sub(eqpos, eqpos) == "=" then return nil end -- ==
  local _, commas = lhs_before:gsub(",", "")
  return { kind = kind, index = commas + 1, rhs = self:rhs_at(eqpos), stmt = s - #pre }
end

-- "M.A" / 'R["cm"]' / "x" at span -> the path {"M", "A"}, or nil.
function M.name_path(text)
  local first, rest = text:match("^([%a_][%w_]*)(.*)$")
  if not first then return nil end
  local path = { first }
  while rest ~= "" do
    local k, r = rest:match("^%s*%.%s*([%a_][%w_]*)(.*)$")
    if not k then
      local q
      q, k, r = rest:match("^%s*%[%s*(['\"])([^'\"]*)%1%s*%](.*)$")
      if not q then return nil end
    end
    path[#path + 1] = k
    rest = r
  end
  return path
end

-- Every occurrence of name path (as a whole) in f: positions {s, e}.
function M.occurrences(f, path)
  local pat = "%f[%w_.]" .. table.concat((function()
    local t = {}
    for i, p in ipairs(path) do t[i] = p:gsub("%p", "%%%0") end
    return t
  end)(), "%s*%.%s*") .. "()%f[^%w_]"
  local out = {}
  local init = 1
  while true do
    local s, _, e = f.bare:find(pat, init)
    if not s then break end
    -- not a field of something else ("x.M.A"), nor a method name (":A")
    local before = f.bare:sub(math.max(1, s - 20), s - 1):match("[%.:]%s*$")
    if not before then out[#out + 1] = { s, e - 1 } end
    init = e
  end
  return out
end

--- Names of the modules f requires with a literal name.
function M.requires(f)
  local out = {}
  for m in f.code:gmatch("%f[%w_]require%s*%(?%s*[\"']([%w_.%-]+)[\"']") do out[#out + 1] = m end
  return out
end

--- Whether f's text calls an API method at all (a client verb or ensure):
-- for modules outside the script's folder, which are not scanned.
function M.makes_calls(src)
  local _, bare = lex(src)
  for verb in bare:gmatch("[cC]lient%s*:%s*([%a_][%w_]*)%s*[%({\"']") do
    if M.CLIENT_VERBS[verb] then return true end
  end
  return bare:find(":%s*ensure%s*[%({]") ~= nil
end

M.trim, M.split_top = trim, split_top

return M
