--- kinformer.cmd.rbac_scan: the source scanner of `kinformer manifests`
-- (kinformer.cmd.manifests). Reconcilers, handlers and map functions run
-- later, in other Lua states, so the API calls they make are read from
-- the source of the script and of its modules: a careful heuristic over
-- Lua text, not a parser. What it cannot resolve it says so; it never
-- guesses a resource it did not read.
--
-- What is found, in every scanned file:
--   * `<x>client:<verb>(...)` (also `:<verb>{...}`), <verb> one of get,
--     list, create, update, update_status, patch, apply, delete; the
--     receiver is any name ending in "client" (ctx.client, mgr.client,
--     self._client), a local assigned one (local c = ctx.client), or a
--     parameter every caller of its function passes one;
--   * `<x>:ensure(obj [, opts])` (ctx:ensure: server-side apply);
--   * `set_controller_reference(owner, obj)` and `set_owner_reference`
--     (blockOwnerDeletion: update on <owner's resource>/finalizers).
-- A call's resource comes from its first argument, as a string or as an
-- object:
--   * strings: a literal; a name (local or global) or a field (M.RES,
--     R.cm, R["cm"]) whose every assignment in the file is itself
--     resolvable: single and multiple assignment (local A, B = "x", "y";
--     M.A, M.B = ...), Lua 5.4 attributes (local A <const> = ...), fields
--     of a table constructor (local R = { cm = "v1/configmaps" }),
--     concatenation of such (G .. "/v1/" .. R); a parameter of the
--     enclosing function, from the arguments of every call of that
--     function (in the same file, or any scanned file for a module field
--     M.f), undetermined when the function is also used otherwise than
--     called (passed as a value: its callers cannot all be seen);
--   * objects: a table constructor with apiVersion and kind (the resource
--     guessed from the kind as kube's meta.UnsafeGuessKindToResource
--     does, see M.kind_to_resource); a name assigned one, or assigned
--     `<x>.listers[RES]:get(...)`, `<x>.lister(RES):get(...)`, a client
--     call's answer (client:get(RES, ...), create, update, ...),
--     `ctx:object()` (the controller's For resource) or ctx:ensure's;
--     a call of a function of the scanned files whose every return is such
--     an object (M.desired_deployment(site) returning { apiVersion = ...,
--     kind = ... }).
-- Names follow Lua's scoping closely enough: the innermost `local`,
-- `for` variable or parameter visible at the call (block structure read
-- from the keywords: function/if/do/repeat ... end/until), then globals.
-- (The reading of the text: kinformer.cmd.rbac_source.)
local source = require "kinformer.cmd.rbac_source"
local trim, split_top, name_path, occurrences = source.trim, source.split_top, source.name_path, source.occurrences

local M = {}

M.new_file, M.lex, M.requires, M.makes_calls = source.new_file, source.lex, source.requires, source.makes_calls
local CLIENT_VERBS = source.CLIENT_VERBS
M.CLIENT_VERBS = CLIENT_VERBS

-- ---- kinds -------------------------------------------------------------------

--- The resource a kind names, as Kubernetes guesses it: lower case;
-- Endpoints (and SecurityContextConstraints) unchanged; a y after a
-- consonant -> ies; s, x, z, ch, sh -> es; else + s. ("Policy" ->
-- "policies", "Ingress" -> "ingresses", "Gateway" -> "gateways".)
-- upstream meta.UnsafeGuessKindToResource turns every final y into ies
-- and only s into es; this is the same where the two agree and closer to
-- the resources kube-apiserver serves where they do not.
function M.kind_to_resource(kind)
  local s = kind:lower()
  if s:match("endpoints$") or s:match("securitycontextconstraints$") then return s end
  if s:match("[^aeiou]y$") then return s:sub(1, -2) .. "ies" end
  if s:match("[sxz]$") or s:match("[cs]h$") then return s .. "es" end
  return s .. "s"
end

--- "apps/v1" + "Deployment" -> "apps/v1/deployments".
function M.object_resource(api_version, kind)
  return api_version .. "/" .. M.kind_to_resource(kind)
end

-- ---- the scanner -------------------------------------------------------------

local Scan = {}
Scan.__index = Scan

--- A scanner over files (from M.new_file). attribute(file, line) ->
-- {controllers} (each {name =, ["for"] =, children = {...}}): the
-- controllers whose code runs there (manifests knows which reconciler is
-- where).
function M.new(files, attribute)
  return setmetatable({ files = files, attribute = attribute or function() return {} end }, Scan)
end

local MAXDEPTH = 8

-- Adds the values of list to set-array out (no duplicates).
local function add_all(out, list)
  out.seen = out.seen or {}
  if list.guessed then out.guessed = true end
  for _, v in ipairs(list) do
    if not out.seen[v] then
      out.seen[v] = true
      out[#out + 1] = v
    end
  end
end

local function finish(out)
  out.seen = nil
  return out
end

-- The declaration of simple name visible at pos in f: {kind = "param",
-- fn = block, index = i} | {kind = "local"|"localfn"|"for", s =, a =
-- assignment info, scope = block or nil} | nil (a global).
function Scan.declaration(_, f, name, pos)
  local best, best_at
  -- parameters of the enclosing functions
  for _, b in ipairs(f.blocks) do
    if b.kind == "function" and b.params and b.start < pos and b.stop >= pos and b.header_stop < pos then
      for i, p in ipairs(b.params) do
        if p == name and (not best_at or b.start > best_at) then
          best, best_at = { kind = "param", fn = b, index = i }, b.start
        end
      end
    end
  end
  for _, o in ipairs(occurrences(f, { name })) do
    local s = o[1]
    if s < pos and (not best_at or s > best_at) then
      local a = f:assignment_at(o[1], o[2])
      if a and (a.kind == "local" or a.kind == "localfn" or a.kind == "for") then
        local scope
        if a.kind == "for" then
          for _, b in ipairs(f.blocks) do
            if b.kind == "do" and b.start > s and (not scope or b.start < scope.start) then scope = b end
          end
        else
          scope = f:block_at(s)
        end
        if not scope or (scope.start < pos and scope.stop >= pos) then
          best, best_at = { kind = a.kind, s = s, a = a, scope = scope }, s
        end
      end
    end
  end
  return best
end

-- The call sites of function block fn: an array of {file =, args =
-- spans, pos =} (args shifted for a method called with "." or the
-- reverse), or nil when the function is used otherwise than called (its
-- callers cannot all be seen) or has no name.
function Scan:call_sites(f, fn)
  if not fn.name then return nil end
  local files = fn.field and self.files or { f }
  local out = {}
  local pat = "()%f[%w_]" .. fn.name:gsub("%p", "%%%0") .. "%f[^%w_]()"
  for _, g in ipairs(files) do
    for s, e in g.bare:gmatch(pat) do
      local pre = g.bare:sub(math.max(1, s - 40), s - 1)
      local is_def = (g == f and s >= fn.start and s <= fn.header_stop)
        or pre:match("function%s+[%w_.:]*$") ~= nil
        or (g == f and g.bare:match("^%s*=%s*function%f[^%w_]", e) ~= nil)
      local sep = pre:match("([%.:]?)%s*$")
      -- a local function is never reached as t.name: another table's field
      local ours = fn.field or sep == ""
      if not is_def and ours then
        local open = g.bare:match("^%s*()[%({\"']", e)
        if not open then return nil end -- used as a value: its callers cannot all be seen
        local args = g:args_at(open)
        if fn.method and sep ~= ":" then table.remove(args, 1)
        elseif not fn.method and sep == ":" then table.insert(args, 1, false) end
        out[#out + 1] = { file = g, args = args, pos = s }
      end
    end
  end
  return out
end

-- Adds to out what every assignment to path in f denotes (those at the
-- occurrences keep(o) accepts, all without keep), through how. Returns
-- whether one was found, or nil when one cannot be resolved.
local function assigned(self, f, path, depth, how, out, keep)
  local found = false
  for _, o in ipairs(occurrences(f, path)) do
    if not keep or keep(o) then
      local a = f:assignment_at(o[1], o[2])
      if a and a.kind == "assign" then
        local rhs = a.rhs[a.index]
        if not rhs then return nil end
        local v = how(self, f, rhs[1], rhs[2], a.stmt, depth + 1)
        if not v then return nil end
        add_all(out, v)
        found = true
      end
    end
  end
  return found
end

-- Resolves the name path at pos through fn (the value of an expression
-- span: self.strings or self.objects). Returns an array or nil.
function Scan:resolve_path(f, path, pos, depth, how)
  if depth > MAXDEPTH then return nil end
  local out = {}
  if #path == 1 then
    local d = self:declaration(f, path[1], pos)
    if d and d.kind == "param" then
      local sites = self:call_sites(f, d.fn)
      if not sites or #sites == 0 then return nil end
      for _, site in ipairs(sites) do
        local a = site.args[d.index]
        if not a then return nil end
        local v = how(self, site.file, a[1], a[2], site.pos, depth + 1)
        if not v then return nil end
        add_all(out, v)
      end
      return finish(out)
    end
    if d and (d.kind == "localfn" or d.kind == "for") then return nil end
    local found = false
    if d then -- a local: its value, and every later assignment in its scope
      local rhs = d.a.rhs[d.a.index]
      if not rhs then return nil end
      local v = how(self, f, rhs[1], rhs[2], d.a.stmt, depth + 1)
      if not v then return nil end
      add_all(out, v)
      found = true
    end
    -- later assignments in its scope (a global: every assignment in the file)
    local later = assigned(self, f, path, depth, how, out, function(o)
      return o[1] ~= (d and d.s) and (not d or (o[1] > d.s and (not d.scope or o[1] <= d.scope.stop)))
    end)
    if later == nil then return nil end
    if not (found or later) then return nil end
    return finish(out)
  end
  -- a field: its assignments (M.A = ..., M.A, M.B = ...) and the table
  -- constructors of its parent
  local found = assigned(self, f, path, depth, how, out)
  if found == nil then return nil end
  local parent = { table.unpack(path, 1, #path - 1) }
  local tables = self:resolve_path(f, parent, pos, depth + 1, Scan.constructors)
  for _, t in ipairs(tables or {}) do
    for _, fld in ipairs(t.file:fields(t.s, t.e)) do
      if fld.key == path[#path] then
        local v = how(self, t.file, fld.s, fld.e, t.s, depth + 1)
        if not v then return nil end
        add_all(out, v)
        found = true
      end
    end
  end
  if not found then return nil end
  return finish(out)
end

-- Memoises how(self, f, s, e, pos, depth) by its span and position; a
-- cycle (x = x .. "a") is undetermined.
local function memo(name, how)
  return function(self, f, s, e, pos, depth)
    self.memo = self.memo or {}
    local key = name .. "\0" .. f.name .. "\0" .. s .. "\0" .. e .. "\0" .. pos
    local m = self.memo[key]
    if m == "busy" then return nil end
    if m ~= nil then return m or nil end
    self.memo[key] = "busy"
    local r = how(self, f, s, e, pos, depth)
    self.memo[key] = r or false
    return r
  end
end

-- The table constructors an expression denotes: {{file =, s =, e =}} or nil.
function Scan:constructors(f, s, e, pos, depth)
  s, e = trim(f, s, e)
  if e < s then return nil end
  if f.bare:sub(s, s) == "{" and f.bare:match("^%b{}()", s) == e + 1 then
    return { { file = f, s = s, e = e } }
  end
  local path = name_path(f:text(s, e))
  if path then
    local r = self:resolve_path(f, path, pos, depth, Scan.constructors)
    return r
  end
  return nil
end
Scan.constructors = memo("constructors", Scan.constructors)

-- The strings an expression span denotes (an array), or nil.
function Scan:strings(f, s, e, pos, depth)
  if depth > MAXDEPTH then return nil end
  s, e = trim(f, s, e)
  if e < s then return nil end
  while f.bare:sub(s, s) == "(" and f.bare:match("^%b()()", s) == e + 1 do s, e = trim(f, s + 1, e - 1) end
  local text = f:text(s, e)
  local q = text:sub(1, 1)
  if (q == '"' or q == "'") and f.bare:find(q, s + 1, true) == e then
    local body = text:sub(2, -2)
    if body:find("\\", 1, true) then return nil end
    return { body }
  end
  local eq = text:match("^%[(=*)%[")
  if eq and text:sub(-#eq - 2) == "]" .. eq .. "]" then
    return { (text:sub(#eq + 3, -#eq - 3):gsub("^\n", "")) }
  end
  local parts = split_top(f, s, e, "..")
  if #parts > 1 then
    local acc = { "" }
    for _, p in ipairs(parts) do
      local v = self:strings(f, p[1], p[2], pos, depth + 1)
      if not v then return nil end
      local nxt = {}
      for _, a in ipairs(acc) do for _, b in ipairs(v) do nxt[#nxt + 1] = a .. b end end
      if #nxt > 32 then return nil end
      acc = nxt
    end
    return acc
  end
  local path = name_path(text)
  if path then return self:resolve_path(f, path, pos, depth, Scan.strings) end
  return nil
end
Scan.strings = memo("strings", Scan.strings)


-- The For resources of the controllers running the code at pos of f.
function Scan:for_resources(f, pos)
  local out = {}
  local ctls = self.attribute(f, f:line_of(pos))
  if #ctls == 0 then return nil end
  for _, c in ipairs(ctls) do
    if not c["for"] then return nil end
    add_all(out, { c["for"] })
  end
  return finish(out)
end

-- The resources of the objects an expression span denotes, or nil.
function Scan:objects(f, s, e, pos, depth)
  if depth > MAXDEPTH then return nil end
  s, e = trim(f, s, e)
  if e < s then return nil end
  while f.bare:sub(s, s) == "(" and f.bare:match("^%b()()", s) == e + 1 do s, e = trim(f, s + 1, e - 1) end
  local bare = f.bare
  local text = f:text(s, e)
  -- a table constructor with apiVersion and kind
  if bare:sub(s, s) == "{" and bare:match("^%b{}()", s) == e + 1 then
    local av, kind
    for _, fld in ipairs(f:fields(s, e)) do
      if fld.key == "apiVersion" then av = self:strings(f, fld.s, fld.e, pos, depth + 1)
      elseif fld.key == "kind" then kind = self:strings(f, fld.s, fld.e, pos, depth + 1) end
    end
    if not av or not kind then return nil end
    local out = {}
    for _, a in ipairs(av) do
      for _, k in ipairs(kind) do
        if k ~= "" and a ~= "" then add_all(out, { M.object_resource(a, k) }) end
      end
    end
    if #out == 0 then return nil end
    out.guessed = true
    return finish(out)
  end
  -- listers[RES]:get(...) / lister(RES):get(...)
  -- (the whole expression: a field of the object is not an object)
  local function get_call_ends_at(close)
    local gp = close and bare:match("^%s*:%s*get%s*()%(", close)
    if not gp then return false end
    local _, stop = f:args_at(gp)
    return stop == e
  end
  local idx_s = text:match("^[%w_.]*listers%s*%[()")
  if idx_s then
    local close = bare:match("^%b[]()", s + idx_s - 2)
    if get_call_ends_at(close) then
      return self:strings(f, s + idx_s - 1, close - 2, pos, depth + 1)
    end
  end
  local lp = text:match("^[%w_.]*lister%s*()%(")
  if lp then
    local close = bare:match("^%b()()", s + lp - 1)
    if get_call_ends_at(close) then
      local args = f:args_at(s + lp - 1)
      if args[1] then return self:strings(f, args[1][1], args[1][2], pos, depth + 1) end
    end
  end
  -- ctx:object()
  if text:match("^[%w_.]*:%s*object%s*%(%s*%)$") then return self:for_resources(f, pos) end
  -- a client call, or ctx:ensure: the resource it is about
  local call = self:call_at(f, s)
  if call and call.base and call.stop == e and call.verb ~= "list" and call.verb ~= "delete" then
    return call.base
  end
  -- a call of a function of the scanned files: its returns
  local callee, open = text:match("^([%a_][%w_.:]*)%s*()[%({]")
  if callee and not callee:find(":", 1, true) then
    local _, stop = f:args_at(s + open - 1)
    if stop == e then
      return self:returns_of(f, callee:match("([%w_]+)$"), callee:find(".", 1, true) ~= nil, depth)
    end
  end
  local path = name_path(text)
  if path then return self:resolve_path(f, path, pos, depth, Scan.objects) end
  return nil
end
Scan.objects = memo("objects", Scan.objects)

-- The object resources every return of the function name returns (a
-- local function of f, or a module field of any file), or nil.
function Scan:returns_of(f, name, field, depth)
  local defs = {}
  for _, g in ipairs(field and self.files or { f }) do
    for _, b in ipairs(g.blocks) do
      if b.kind == "function" and b.name == name and (b.field or false) == field then
        defs[#defs + 1] = { file = g, fn = b }
      end
    end
  end
  if #defs ~= 1 then return nil end
  local g, fn = defs[1].file, defs[1].fn
  local out, n = {}, 0
  for rs in g.bare:gmatch("()%f[%w_]return%f[^%w_]", fn.header_stop) do
    if rs > fn.stop then break end
    if g:function_at(rs) == fn then
      local rhs = g:rhs_at(rs + 6)
      if not rhs[1] then return nil end
      local v = self:objects(g, rhs[1][1], rhs[1][2], rs, depth + 1)
      if not v then return nil end
      add_all(out, v)
      n = n + 1
    end
  end
  if n == 0 then return nil end
  return finish(out)
end

-- Whether the receiver name ending at pos (a simple name) is a client:
-- ends in "client", is a local assigned one, or a parameter every caller
-- passes one.
function Scan:is_client(f, name, pos, depth)
  if name:match("[cC]lient$") then return true end
  if depth > 3 then return false end
  local d = self:declaration(f, name, pos)
  if not d then return false end
  local function client_expr(g, s, e)
    local t = g:text(trim(g, s, e))
    return t:match("[cC]lient$") or t:match("[cC]lient%s*%(%s*%)$")
  end
  if d.kind == "local" then
    local rhs = d.a.rhs[d.a.index]
    return rhs ~= nil and client_expr(f, rhs[1], rhs[2]) ~= nil
  elseif d.kind == "param" then
    local sites = self:call_sites(f, d.fn)
    if not sites or #sites == 0 then return false end
    for _, site in ipairs(sites) do
      local a = site.args[d.index]
      if not a then return false end
      local t = site.file:text(trim(site.file, a[1], a[2]))
      if not (client_expr(site.file, a[1], a[2]) or (t:match("^[%a_][%w_]*$")
          and self:is_client(site.file, t, site.pos, depth + 1))) then
        return false
      end
    end
    return true
  end
  return false
end

-- The option table of a call (the span), as {key = strings or false
-- (present, unresolved)}; nil when the span is not a constructor it can
-- read (a name it cannot follow).
function Scan:options(f, span, pos)
  if not span then return {} end
  local cons = self:constructors(f, span[1], span[2], pos, 0)
  if not cons or #cons ~= 1 then return nil end
  local t = cons[1]
  local out = { __spans = {} }
  for _, fld in ipairs(t.file:fields(t.s, t.e)) do
    if fld.key then
      out.__spans[fld.key] = { file = t.file, s = fld.s, e = fld.e, pos = t.s }
      local text = t.file:text(trim(t.file, fld.s, fld.e))
      if text == "false" or text == "true" or text == "nil" then
        out[fld.key] = text
      else
        out[fld.key] = self:strings(t.file, fld.s, fld.e, t.s, 1) or false
      end
    end
  end
  return out
end

-- The call starting at s in f (the receiver's first character), or nil:
-- {kind = "client" | "ensure", verb =, args =, stop =, resources =,
-- text =}. Memoised per position.
function Scan:call_at(f, s)
  f.calls = f.calls or {}
  if f.calls[s] ~= nil then return f.calls[s] or nil end
  f.calls[s] = false
  local bare = f.bare
  -- env:client():get(...): a client made on the spot
  local recv, verb, open = bare:match("^([%a_][%w_.]*%s*:%s*client%s*%(%s*%))%s*:%s*([%a_][%w_]*)%s*()[%({\"'%[]", s)
  local made = recv ~= nil
  if not recv then
    recv, verb, open = bare:match("^([%a_][%w_.]*)%s*:%s*([%a_][%w_]*)%s*()[%({\"'%[]", s)
  end
  if not recv then return nil end
  local last = recv:match("([%w_]+)$")
  local c
  if made and CLIENT_VERBS[verb] then
    c = { kind = "client", verb = verb }
  elseif made then
    return nil
  elseif verb == "ensure" then
    c = { kind = "ensure", verb = "ensure" }
  elseif CLIENT_VERBS[verb] and self:is_client(f, last, s, 0) then
    c = { kind = "client", verb = verb }
  else
    return nil
  end
  c.args, c.stop = f:args_at(open)
  c.recv = recv
  c.pos = s
  self:resolve_call(f, c)
  f.calls[s] = c
  return c
end

local function first_text(f, c)
  local a = c.args[1]
  if not a then return "" end
  local t = f:text(a[1], a[2]):gsub("%s+", " ")
  if #t > 40 then t = t:sub(1, 37) .. "..." end
  return t
end

-- Fills c.resources (nil when undetermined), c.verbs (RBAC verbs), c.sub
-- (subresource), c.note, c.reason.
function Scan:resolve_call(f, c)
  local args, pos = c.args, c.pos
  local a1 = args[1]
  local function strs(a) return a and self:strings(f, a[1], a[2], pos, 0) end
  local function objs(a) return a and self:objects(f, a[1], a[2], pos, 0) end
  if c.kind == "ensure" then
    c.verbs = { "get", "create", "patch" }
    c.text = "ctx:ensure(" .. first_text(f, c) .. ")"
    local o = self:options(f, args[2], pos)
    local res
    if o and o.resource ~= nil then
      res = o.resource or nil
    elseif o then
      res = objs(a1)
    end
    if not res and o and o.resource == nil then
      -- the controller's children
      local ctls = self.attribute(f, f:line_of(pos))
      local out = {}
      for _, ctl in ipairs(ctls) do
        if not ctl.children or #ctl.children == 0 then out = nil break end
        add_all(out, ctl.children)
      end
      if out and #ctls > 0 then
        res = finish(out)
        c.note = "one of the controller's children"
      end
    end
    if res then
      local norm = {}
      for _, r in ipairs(res) do
        -- "apps/v1/Deployment" (opts.resource may name a kind)
        local head, last = r:match("^(.*/)([^/]+)$")
        if last and last:match("^%u") then r = head .. M.kind_to_resource(last) end
        norm[#norm + 1] = r
      end
      norm.guessed = res.guessed
      res = norm
    end
    c.resources, c.base = res, res
    c.options = o
    if not o then c.reason = "options not read" end
    return
  end
  local verb = c.verb
  c.text = "client:" .. verb .. "(" .. first_text(f, c) .. ", ...)"
  local res, optspan
  if verb == "get" or verb == "list" then
    res = strs(a1)
  elseif verb == "patch" then
    res = strs(a1)
    optspan = args[5]
  elseif verb == "delete" then
    res = strs(a1)
    if not res and #args <= 2 then res = objs(a1) end
  else -- create, update, update_status, apply: ([res,] obj [, opts])
    if #args >= 2 then res = strs(a1) end
    if res then
      optspan = args[3]
    else
      res = objs(a1)
      optspan = args[2]
    end
  end
  local verbs = ({ get = { "get" }, list = { "list" }, create = { "create" }, update = { "update" },
                   update_status = { "update" }, patch = { "patch" }, apply = { "patch", "create" },
                   delete = { "delete" } })[verb]
  local sub = verb == "update_status" and "status" or nil
  if verb == "patch" or verb == "apply" then
    local o = self:options(f, optspan, pos)
    if not o then
      c.reason = "options not read (type, subresource)"
      res = nil
    else
      if o.subresource ~= nil then
        if not o.subresource or #o.subresource ~= 1 then
          c.reason, res = "subresource not determined", nil
        else
          sub = o.subresource[1]
        end
      end
      if verb == "patch" and o.type ~= nil then
        if o.type == false then
          c.reason, res = "patch type not determined", nil
        elseif o.type[1] == "apply" then
          verbs = { "patch", "create" }
        end
      end
      if sub then verbs = { "patch" } end -- an apply to a subresource never creates
    end
  end
  c.verbs, c.sub = verbs, sub
  c.base = res
  if res then
    local norm = {}
    for _, r in ipairs(res) do
      local head, last = r:match("^(.*/)([^/]+)$")
      if last and last:match("^%u") then r = head .. M.kind_to_resource(last) end
      norm[#norm + 1] = sub and (r .. "/" .. sub) or r
    end
    norm.guessed = res.guessed
    res = norm
  end
  c.resources = res
end

--- Scans every file. Returns the findings: an array of {file =, line =,
-- text = (the call, shortened), why = ("client:update", "ctx:ensure",
-- "set_controller_reference"), verbs = {RBAC verbs}, resources = {...}
-- or nil (undetermined), reason = (why not, when undetermined), note =,
-- guessed = (the resource comes from a kind)}.
function Scan:run()
  local findings = {}
  for _, f in ipairs(self.files) do
    local bare = f.bare
    for s in bare:gmatch("()%f[%w_][%a_][%w_.]*%s*:%s*[%a_][%w_]*%s*[%({\"'%[]") do
      local c = self:call_at(f, s)
      if c then
        findings[#findings + 1] = { file = f, line = f:line_of(s), text = c.text,
          why = c.kind == "ensure" and "ctx:ensure" or ("client:" .. c.verb), verbs = c.verbs,
          resources = c.resources, reason = c.reason, note = c.note, guessed = c.resources and c.resources.guessed }
        if c.kind == "ensure" then
          -- the controller reference ctx:ensure sets (unless owner = false)
          local o = c.options
          local owner = o and o.owner
          local fr = { file = f, line = f:line_of(s), verbs = { "update" }, why = "ctx:ensure",
                       text = c.text, owner = true }
          if not o then
            fr.reason = "options not read (owner)"
          elseif owner == "false" then
            fr = nil
          elseif owner ~= nil then
            local sp = o.__spans.owner
            local r = self:objects(sp.file, sp.s, sp.e, sp.pos, 0)
            if r then fr.resources = r else fr.reason = "the owner's resource not determined" end
          else
            local r = self:for_resources(f, s)
            if r then fr.resources = r; fr.note = "the reconciled object"
            else fr.reason = "the owner (the reconciled object) not determined" end
          end
          if fr then
            if fr.resources then
              local fin = {}
              for i, r in ipairs(fr.resources) do fin[i] = r .. "/finalizers" end
              fr.resources = fin
            end
            findings[#findings + 1] = fr
          end
        end
      end
    end
    for s, fname, open in bare:gmatch("()%f[%w_](set_[a-z]+_reference)%s*()%(") do
      if fname == "set_controller_reference" or fname == "set_owner_reference" then
        local args = f:args_at(open)
        local fr = { file = f, line = f:line_of(s), verbs = { "update" }, why = fname, owner = true,
                     text = fname .. "(" .. (args[1] and f:text(args[1][1], args[1][2]) or "") .. ", ...)" }
        local r = args[1] and self:objects(f, args[1][1], args[1][2], s, 0)
        if not r then
          r = self:for_resources(f, s)
          if r then fr.note = "owner taken to be the reconciled object" end
        end
        if r then
          local fin = {}
          for i, x in ipairs(r) do fin[i] = x .. "/finalizers" end
          fr.resources = fin
        else
          fr.reason = "the owner's resource not determined"
        end
        findings[#findings + 1] = fr
      end
    end
  end
  local index = {}
  for i, f in ipairs(self.files) do index[f] = i end
  table.sort(findings, function(a, b)
    if a.file ~= b.file then return index[a.file] < index[b.file] end
    if a.line ~= b.line then return a.line < b.line end
    return (a.owner and 1 or 0) < (b.owner and 1 or 0)
  end)
  return findings
end

return M
