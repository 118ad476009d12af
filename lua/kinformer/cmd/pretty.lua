--- kinformer.cmd.pretty: how the REPL shows values (kinformer repl, see
-- kinformer.cmd.repl): Kubernetes objects as YAML-like text, other tables
-- sorted and indented (depth, size and cycles capped), kinformer's
-- userdata and Lua classes by type name and state. Also what help() and
-- completion need to know about a value: its type name and its methods,
-- found by introspecting its metatable.
local M = {}

-- lazy views (lview.h) hide their unread members from next() and rawget():
-- the renderers below decode them first (in place, as pairs() would)
local core = require "kinformer.core"

local function getmt(v)
  local ok, mt = pcall(getmetatable, v)
  return ok and type(mt) == "table" and mt or nil
end

-- The table of methods behind v's metatable: __index when a table, else a
-- table among __index's upvalues (a class table behind an __index
-- function), else nil.
local function methods_table(v)
  local mt = getmt(v)
  if not mt then return nil end
  local idx = rawget(mt, "__index")
  if type(idx) == "table" then return idx end
  if type(idx) == "function" then
    for i = 1, 20 do
      local name, up = debug.getupvalue(idx, i)
      if name == nil then break end
      if type(up) == "table" and up ~= _G then
        for _, f in pairs(up) do
          if type(f) == "function" then return up end
        end
      end
    end
  end
  return nil
end

-- The names of v's methods (functions reached through its metatable or,
-- for a table, its own function fields), sorted; metamethods and _private
-- names left out.
local function method_names(v)
  local names, seen = {}, {}
  local function add(t)
    if type(t) ~= "table" then return end
    for k, f in pairs(t) do
      if type(k) == "string" and type(f) == "function" and not seen[k]
          and not k:match("^_") then
        seen[k] = true
        names[#names + 1] = k
      end
    end
  end
  add(methods_table(v))
  table.sort(names)
  return names
end

--- The type name of v: a metatable's __name ("kinformer.informer"), a
-- kinformer Lua class recognised by its methods, or type(v).
function M.type_name(v)
  if type(v) == "table" and core.is_view(v) then return "table" end -- data, not a type
  local mt = getmt(v)
  if mt then
    local n = rawget(mt, "__name")
    -- a decoded JSON array (kinformer.array) is data, not a type
    if n == "kinformer.array" and type(v) == "table" then return "table" end
    if type(n) == "string" then return n end
    local m = methods_table(v) or {}
    if m.reconcile_once and m.stats then return "kinformer.controller" end
    if m.lister and m.controller then return "kinformer.manager" end
    local ok, s = pcall(tostring, v)
    if ok and s:match("^kinformer%.sim ") then return "kinformer.sim" end
  end
  return type(v)
end

local function kind_of(v)
  local t = M.type_name(v)
  return t ~= type(v) and t or nil
end

-- "kinformer.controller "website" (running, 2 workers, 0 active, queue 0,
-- 12 reconciles, 0 errors)" for a controller; tostring(v) otherwise.
local function describe(v, kind)
  if kind == "kinformer.controller" then
    local ok, st = pcall(function() return v:stats() end)
    local okn, name = pcall(function() return v:name() end)
    if ok and type(st) == "table" then
      local state
      local mgr = require("kinformer.controller").parts(v).mgr
      local mstate = type(mgr) == "table" and type(mgr.state) == "function" and mgr:state()
      if (st.stopping or 0) ~= 0 then state = "stopping"
      elseif (st.active_workers or 0) > 0 then state = "reconciling"
      elseif mstate == "stopped" then state = "stopped"
      elseif mstate == "created" then state = "not started"
      else state = "running" end
      local errors = (st.reconcile_errors or 0) + (st.terminal_reconcile_errors or 0)
      return string.format('%s %q (%s, %d workers, %d active, queue %d, %d reconciles, %d errors)', kind,
        okn and tostring(name) or "?", state, st.max_concurrent_reconciles or 0, st.active_workers or 0,
        st.queue_len or 0, st.reconcile_time_count or 0, errors)
    end
  end
  local ok, s = pcall(tostring, v)
  s = ok and s or (kind or type(v))
  if kind and not s:find(kind, 1, true) then s = kind .. " " .. s end
  return s
end

-- ---- pretty-printing --------------------------------------------------------

local MAX_DEPTH, MAX_ITEMS, WIDTH = 6, 100, 78

local function is_ident(k) return type(k) == "string" and k:match("^[%a_][%w_]*$") ~= nil end

local function sorted_keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = k end
  table.sort(ks, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta == "number" end
    if ta == "number" or ta == "string" then return a < b end
    return tostring(a) < tostring(b)
  end)
  return ks
end

-- Whether t is a sequence 1..n with nothing else.
local function is_array(t)
  local n = #t
  if n == 0 then return false end
  local c = 0
  for _ in pairs(t) do c = c + 1 end
  return c == n
end

--- Whether v is a Kubernetes object as a table (apiVersion, kind, metadata).
function M.is_object(v)
  if type(v) == "table" and core.is_view(v) then core.materialize(v) end
  return type(v) == "table" and type(rawget(v, "apiVersion")) == "string"
      and type(rawget(v, "kind")) == "string" and type(rawget(v, "metadata")) == "table"
end

-- YAML-like text of a decoded object: apiVersion, kind, metadata first,
-- then spec and status, then the rest; keys sorted below that.
local YAML_FIRST = { apiVersion = 1, kind = 2, metadata = 3, spec = 4, status = 5 }

-- strings YAML would read as something else (YAML 1.1 booleans included)
local YAML_WORDS = { ["true"] = 1, ["false"] = 1, ["null"] = 1, ["~"] = 1, yes = 1, no = 1,
  on = 1, off = 1, y = 1, n = 1 }

local function yaml_scalar(v)
  if type(v) == "string" then
    if v == "" or v:match("^[%s]") or v:match("[%s]$") or v:find("[:#]%s") or v:find("[:#]$")
        or v:find("\n") or v:match("^[-?!&*{}%[%]|>'\"%%@`,]")
        or YAML_WORDS[v:lower()] or tonumber(v) then
      return string.format("%q", v):gsub("\\\n", "\\n")
    end
    return v
  end
  if v == nil then return "null" end
  if math.type(v) == "float" and v == math.floor(v) and math.abs(v) < 2^53 then
    return string.format("%d", v)
  end
  return tostring(v)
end

local function yaml(out, v, indent, top, seen)
  local pad = string.rep("  ", indent)
  local keys = sorted_keys(v)
  if top then
    table.sort(keys, function(a, b)
      local ra, rb = YAML_FIRST[a] or 99, YAML_FIRST[b] or 99
      if ra ~= rb then return ra < rb end
      return tostring(a) < tostring(b)
    end)
  end
  local function value(prefix, x, ind)
    if type(x) == "table" and next(x) ~= nil then
      if seen[x] then out[#out + 1] = prefix .. " <cycle>" return end
      seen[x] = true
      if is_array(x) then
        out[#out + 1] = prefix
        for _, e in ipairs(x) do
          if type(e) == "table" and next(e) ~= nil and not is_array(e) then
            local sub = {}
            yaml(sub, e, ind + 1, false, seen)
            sub[1] = string.rep("  ", ind) .. "- " .. sub[1]:gsub("^%s+", "")
            for _, l in ipairs(sub) do out[#out + 1] = l end
          else
            value(string.rep("  ", ind) .. "-", e, ind + 1)
          end
        end
      else
        out[#out + 1] = prefix
        yaml(out, x, ind + 1, false, seen)
      end
      seen[x] = nil
    elseif type(x) == "table" then
      out[#out + 1] = prefix .. (getmetatable(x) == nil and " {}" or " []")
    else
      out[#out + 1] = prefix .. " " .. yaml_scalar(x)
    end
  end
  for _, k in ipairs(keys) do
    value(pad .. (type(k) == "string" and yaml_scalar(k) or tostring(k)) .. ":", v[k], indent)
  end
end

--- The YAML-like text of a Kubernetes object (a table).
function M.yaml(obj)
  core.materialize(obj)
  local out = {}
  yaml(out, obj, 0, true, {})
  return table.concat(out, "\n")
end

local function scalar(v)
  if type(v) == "string" then return string.format("%q", v):gsub("\\\n", "\\n") end
  if math.type(v) == "float" and v ~= v then return "0/0" end
  return tostring(v)
end

-- A Lua-like rendering of v (a nested value): sorted, indented, one line
-- when it fits, depth, size and cycles capped.
local function render(v, indent, seen, depth)
  local tv = type(v)
  local kind = (tv == "userdata" or tv == "table") and kind_of(v)
  if kind then return describe(v, kind) end
  if tv == "userdata" then
    local m = getmt(v)
    if m and rawget(m, "__tostring") then return describe(v, nil) end
  end
  if tv ~= "table" then return scalar(v) end
  local mt = getmt(v)
  if mt and rawget(mt, "__tostring") then return describe(v, nil) end
  if seen[v] then return "<cycle " .. tostring(v) .. ">" end
  if core.is_view(v) then core.materialize(v) end
  if next(v) == nil then return "{}" end
  if depth >= MAX_DEPTH then return "{...}" end
  seen[v] = true
  local parts, arr = {}, is_array(v)
  local keys = arr and nil or sorted_keys(v)
  local n = arr and #v or #keys
  for i = 1, math.min(n, MAX_ITEMS) do
    local k = arr and i or keys[i]
    local val = render(v[k], indent + 1, seen, depth + 1)
    if arr then
      parts[#parts + 1] = val
    elseif is_ident(k) then
      parts[#parts + 1] = k .. " = " .. val
    else
      parts[#parts + 1] = "[" .. scalar(k) .. "] = " .. val
    end
  end
  if n > MAX_ITEMS then parts[#parts + 1] = string.format("... (%d more)", n - MAX_ITEMS) end
  seen[v] = nil
  local one = "{ " .. table.concat(parts, ", ") .. " }"
  if #one + indent * 2 <= WIDTH and not one:find("\n") then return one end
  local pad = string.rep("  ", indent + 1)
  return "{\n" .. pad .. table.concat(parts, ",\n" .. pad) .. ",\n" .. string.rep("  ", indent) .. "}"
end

--- The text the REPL prints for v: strings as they are, Kubernetes objects
-- (tables or kinformer.object) as YAML-like text, other tables sorted and
-- indented, kinformer's userdata and classes by type name and state.
function M.pretty(v)
  if type(v) == "string" then return v end
  if type(v) == "userdata" and M.type_name(v) == "kinformer.object" then
    local ok, t = pcall(function() return v:decode() end)
    if ok and type(t) == "table" then v = t end
  end
  if M.is_object(v) then return M.yaml(v) end
  return render(v, 0, {}, 0)
end

M.methods_table = methods_table
M.method_names = method_names
M.kind_of = kind_of
M.describe = describe
M.sorted_keys = sorted_keys
M.is_ident = is_ident
M.scalar = scalar
M.MAX_ITEMS = MAX_ITEMS

return M
