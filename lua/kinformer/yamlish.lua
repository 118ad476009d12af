--- kinformer.yamlish: Lua values (decoded Kubernetes objects) as YAML-like
-- text, for people and for diffs (kinformer.plan).
--
--   local y = require "kinformer.yamlish"
--   print(y.render(obj))          -- "apiVersion: v1\nkind: ConfigMap\n..."
--   y.lines(obj)                  -- the same as an array of lines
--
-- The order of a map's keys is stable: apiVersion, kind, metadata, name,
-- namespace first (in that order, where present), then the others sorted
-- (byte order). Arrays (sequences, or tables carrying kinformer.core's
-- array metatable) are "- " items; an empty map prints as {}, an empty
-- array as []. Strings are printed bare when YAML would read them back as
-- the same string, else double-quoted with JSON escapes ("", "true",
-- "80", "a: b", leading/trailing spaces, newlines...). JSON null
-- (core.null) prints as null; values JSON cannot hold (functions,
-- userdata) print as their tostring in angle brackets. Cycles print as
-- <cycle>. Pure Lua; usable in any Lua state.
local M = {}

local ok_core, core = pcall(require, "kinformer.core")
local NULL = ok_core and core.null or nil
local ARRAY_MT = ok_core and core.array_mt or nil

local FIRST = { apiVersion = 1, kind = 2, metadata = 3, name = 4, namespace = 5 }

--- The keys of map t in the stable order described above.
function M.keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b)
    local fa, fb = FIRST[a], FIRST[b]
    if fa and fb then return fa < fb end
    if fa or fb then return fa ~= nil end
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    if ta == "string" or ta == "number" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return ks
end

-- Whether t is an array: the array metatable, or keys exactly 1..n (n > 0).
local function is_array(t)
  if ARRAY_MT and getmetatable(t) == ARRAY_MT then return true end
  local n = 0
  for k in pairs(t) do
    if math.type(k) ~= "integer" or k < 1 then return false end
    n = n + 1
  end
  return n > 0 and n == #t
end

local PLAIN_UNSAFE = {
  [""] = true, ["~"] = true, null = true, Null = true, NULL = true, ["true"] = true, ["True"] = true,
  ["TRUE"] = true, ["false"] = true, ["False"] = true, ["FALSE"] = true, yes = true, no = true,
  Yes = true, No = true, YES = true, NO = true, on = true, off = true, On = true, Off = true,
  ON = true, OFF = true, y = true, n = true, Y = true, N = true,
}

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

--- A scalar as YAML-like text (strings quoted only when needed).
function M.scalar(v)
  local t = type(v)
  if v == nil or (NULL ~= nil and v == NULL) then return "null" end
  if t == "boolean" then return tostring(v) end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    if v ~= v then return ".nan" end
    if v == math.huge then return ".inf" end
    if v == -math.huge then return "-.inf" end
    local s = string.format("%.17g", v)
    for p = 1, 17 do -- the shortest text that reads back the same
      local c = string.format("%." .. p .. "g", v)
      if tonumber(c) == v then s = c break end
    end
    if not s:find("[%.eEn]") then s = s .. ".0" end
    return s
  end
  if t == "string" then
    if PLAIN_UNSAFE[v] or tonumber(v) ~= nil or v:find("^[%s%-%?:,%[%]{}#&%*!|>'\"%%@`]")
        or v:find("%s$") or v:find(": ", 1, true) or v:find(" #", 1, true) or v:find(":$")
        or v:find("[%c\128-\255]") then
      -- bytes >= 128 stay as they are inside the quotes (UTF-8 text)
      return quote(v)
    end
    return v
  end
  return "<" .. tostring(v) .. ">"
end

local function emit(out, v, indent, seen)
  -- v is a non-empty table; writes its lines at indent
  local pad = string.rep("  ", indent)
  if is_array(v) then
    for i = 1, #v do
      local item = v[i]
      if type(item) == "table" and next(item) ~= nil and not seen[item] then
        seen[item] = true
        local sub = {}
        emit(sub, item, 0, seen)
        seen[item] = nil
        for j, line in ipairs(sub) do
          out[#out + 1] = pad .. (j == 1 and "- " or "  ") .. line
        end
      else
        out[#out + 1] = pad .. "- " .. M.inline(item, seen)
      end
    end
    return
  end
  for _, k in ipairs(M.keys(v)) do
    local item = v[k]
    local key = M.scalar(k)
    if type(item) == "table" and next(item) ~= nil and not seen[item] then
      seen[item] = true
      out[#out + 1] = pad .. key .. ":"
      if is_array(item) then emit(out, item, indent, seen) else emit(out, item, indent + 1, seen) end
      seen[item] = nil
    else
      out[#out + 1] = pad .. key .. ": " .. M.inline(item, seen)
    end
  end
end

--- A value that fits on one line: a scalar, {} or [] (or <cycle>).
function M.inline(v, seen)
  if type(v) == "table" then
    if ok_core and core.is_view(v) then core.materialize(v) end
    if seen and seen[v] then return "<cycle>" end
    if next(v) == nil then
      return (ARRAY_MT and getmetatable(v) == ARRAY_MT) and "[]" or "{}"
    end
  end
  return M.scalar(v)
end

--- The lines of v's rendering (an array of strings, no newlines).
function M.lines(v)
  -- lazy views (handlers' and listers' objects) show members only once
  -- decoded: decode all, since this walks with next()
  if ok_core and type(v) == "table" then core.materialize(v) end
  if type(v) ~= "table" or next(v) == nil then return { M.inline(v) } end
  local out = {}
  emit(out, v, 0, { [v] = true })
  return out
end

--- v as YAML-like text, one line per scalar, ending with a newline.
function M.render(v)
  return table.concat(M.lines(v), "\n") .. "\n"
end

return M
