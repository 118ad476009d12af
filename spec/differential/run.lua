-- Differential runner: replays request scenarios against an API server and
-- compares the normalised answers of two servers field by field.
--
--   lua5.4 spec/differential/run.lua record --server URL --out DIR
--       [--token T] [--cacert F] [--cert F --key F] [--controllers LIST]
--       [SCENARIO.json ...]
--   lua5.4 spec/differential/run.lua compare --divergences FILE --docs FILE
--       REFERENCE_DIR CANDIDATE_DIR
--   lua5.4 spec/differential/run.lua sim-flags --ref DIR SCENARIO.json
--
-- record writes DIR/<scenario>.json: each step's status, content type and raw
-- body (the default scenario set is spec/differential/scenarios/*.json).
-- A step is a request (method, path, query, body, accept, content_type,
-- expect_status, save) and may also have:
--   token          a bearer token (e.g. "${satoken}") sent instead of the
--                  run's credentials (no client certificate either)
--   retry_seconds  repeat until the status is expect_status, up to N s
--   until          a condition (or a list of them, all to hold) on the
--                  answer's body: {"path": P, "equals": V}, {"path": P,
--                  "exists": true|false}, {"path": P, "length": N},
--                  {"path": P, "contains": {field: value, ...}} (an array
--                  with an element having those fields); P is a dotted path
--                  as in save ("status.conditions", "items.1.metadata.name",
--                  1-based). The request is repeated (every 0.25 s) until
--                  the status is expect_status and the condition holds, up
--                  to timeout_seconds (default 30); the last answer is
--                  recorded with whether the condition held, which compare
--                  compares too: for what controllers do asynchronously
--   mask           dotted paths whose values can never match (a minted
--                  token): replaced by "<masked>" on both sides
-- A scenario's "sim_flags" (["--authorization-mode", "RBAC"]) are the
-- kinformer-sim flags run.sh starts its sim with for that scenario; one
-- marked "controllers": true is recorded against the real server with
-- kube-controller-manager running (run.sh; the others without). A
-- recording names the controllers that ran beside the server (--controllers:
-- kube-controller-manager's, absent for none), and run.sh starts the sim
-- with the reference recording's list (sim-flags).
-- compare normalises both recordings (see normalise()), prints every
-- difference as `scenario/step path: reference | candidate`, tags those
-- matched by the divergence file "known", and ends with `N passed, M failed`
-- (steps). Exit status 1 when a step failed.
local cjson = require("cjson")
-- lua-cjson 2.1.0 (Debian) has no array metatable: a table with keys 1..n
-- is an array, and an empty [] and {} compare equal (a documented blind spot).
local ARRAY_MT = {}

local HERE = (arg[0]:match("^(.*)/[^/]*$") or ".")

local function die(msg) io.stderr:write("run.lua: ", msg, "\n"); os.exit(2) end

local function read_file(p)
  local f, err = io.open(p, "rb"); if not f then die(err) end
  local s = f:read("a"); f:close(); return s
end

local function write_file(p, s)
  local f, err = io.open(p, "wb"); if not f then die(err) end
  f:write(s); f:close()
end

local function sh_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local function is_array(t)
  if getmetatable(t) == ARRAY_MT then return true end
  local n = #t
  if n == 0 then return false end
  local c = 0
  for _ in pairs(t) do c = c + 1 end
  return c == n
end

-- Looks up a dotted path ("metadata.resourceVersion", "items.1.metadata.name"
-- with 1-based indexes) in a decoded value; nil when absent.
local function dig(v, path)
  for part in path:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    local n = tonumber(part)
    if n and is_array(v) then v = v[n] else v = v[part] end
  end
  return v
end

-- Sets the value at a dotted path (as dig) when its parent exists.
local function dig_set(v, path, x)
  local parent, last = path:match("^(.*)%.([^.]+)$")
  if parent then v = dig(v, parent) else last = path end
  if type(v) ~= "table" then return end
  local n = tonumber(last)
  if n and is_array(v) then
    if v[n] ~= nil then v[n] = x end
  elseif v[last] ~= nil then
    v[last] = x
  end
end

local function urlencode(s)
  return (tostring(s):gsub("[^%w%-%._~]", function(c) return string.format("%%%02X", c:byte()) end))
end

-- ---------------------------------------------------------------- record

local function subst(s, vars)
  return (s:gsub("%${([%w_]+)}", function(k)
    if vars[k] == nil then die("undefined variable ${" .. k .. "}") end
    return tostring(vars[k])
  end))
end

local function build_url(server, step, vars)
  local url = server .. subst(step.path, vars)
  if type(step.query) == "table" then
    local keys = {}
    for k in pairs(step.query) do keys[#keys + 1] = k end
    table.sort(keys)
    local parts = {}
    for _, k in ipairs(keys) do
      parts[#parts + 1] = urlencode(k) .. "=" .. urlencode(subst(tostring(step.query[k]), vars))
    end
    if #parts > 0 then url = url .. (url:find("?", 1, true) and "&" or "?") .. table.concat(parts, "&") end
  end
  return url
end

local function decode_body(body)
  local ok, v = pcall(cjson.decode, body)
  if ok then return v end
  -- a watch stream: one JSON object per line
  local events = setmetatable({}, ARRAY_MT)
  for line in body:gmatch("[^\n]+") do
    local ok2, e = pcall(cjson.decode, line)
    if not ok2 then return nil end
    events[#events + 1] = e
  end
  if #events > 0 then return events end
  return nil
end

-- The bytes of standard base64 s (padding optional).
local function unbase64(s)
  local A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  local bits, nbits, out = 0, 0, {}
  for c in s:gsub("=", ""):gmatch(".") do
    local v = A:find(c, 1, true)
    if not v then die("bad base64 character " .. c) end
    bits = (bits << 6) | (v - 1); nbits = nbits + 6
    if nbits >= 8 then
      nbits = nbits - 8
      out[#out + 1] = string.char((bits >> nbits) & 0xff)
    end
  end
  return table.concat(out)
end

-- kubectl get's Accept header (a step's "accept": "table")
local TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,"
  .. "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

local function do_request(opts, step, vars, tmp)
  local url = build_url(opts.server, step, vars)
  local args = { "curl", "-sS", "-X", step.method or "GET", "-o", tmp .. ".resp",
    "-w", "%{http_code} %{content_type}", "--max-time", tostring(step.max_time or 15),
    "-H", "Accept: " .. (step.accept == "table" and TABLE_ACCEPT or step.accept or "application/json") }
  -- a step's own token replaces the run's credentials
  local token = step.token and subst(step.token, vars) or opts.token
  if token then args[#args + 1] = "-H"; args[#args + 1] = "Authorization: Bearer " .. token end
  if opts.cacert then args[#args + 1] = "--cacert"; args[#args + 1] = opts.cacert end
  if opts.cert and not step.token then
    args[#args + 1] = "--cert"; args[#args + 1] = opts.cert
    args[#args + 1] = "--key"; args[#args + 1] = opts.key
  end
  if step.body ~= nil or step.body_base64 ~= nil then
    -- body_base64: binary bytes (protobuf), sent as they are
    local body = step.body_base64 and unbase64(step.body_base64)
      or subst(type(step.body) == "string" and step.body or cjson.encode(step.body), vars)
    write_file(tmp .. ".req", body)
    args[#args + 1] = "-H"; args[#args + 1] = "Content-Type: " .. (step.content_type or "application/json")
    args[#args + 1] = "--data-binary"; args[#args + 1] = "@" .. tmp .. ".req"
  end
  args[#args + 1] = url
  local q = {}
  for i, a in ipairs(args) do q[i] = sh_quote(a) end
  local p = io.popen(table.concat(q, " ") .. " 2>&1")
  local out = p:read("a"); p:close()
  local code, ctype = out:match("(%d%d%d) ?(.*)$")
  local f = io.open(tmp .. ".resp", "rb")
  local body = f and f:read("a") or ""
  if f then f:close() end
  os.remove(tmp .. ".resp")
  return { url = url, status = tonumber(code) or 0, content_type = (ctype or ""):gsub("%s+$", ""),
    body = body, curl = code and nil or out }
end

-- True when the subset table want matches the table got field by field
-- (nested tables recursively).
local function subset(want, got)
  if type(want) ~= "table" then return want == got end
  if type(got) ~= "table" then return false end
  for k, w in pairs(want) do
    if not subset(w, got[k]) then return false end
  end
  return true
end

-- Whether the decoded body v satisfies one "until" condition c.
local function holds1(v, c)
  local x = v ~= nil and dig(v, c.path) or nil
  if c.exists ~= nil then return (x ~= nil) == c.exists end
  if c.length ~= nil then
    if type(x) ~= "table" then return c.length == 0 and x == nil end
    return #x == c.length
  end
  if c.contains ~= nil then
    if type(x) ~= "table" then return false end
    for _, e in ipairs(x) do
      if subset(c.contains, e) then return true end
    end
    return false
  end
  if type(c.equals) == "table" then return subset(c.equals, x) and subset(x, c.equals) end
  return x == c.equals
end

-- Whether v satisfies the step's condition: one table or a list of them.
local function holds(v, cond)
  if cond.path then return holds1(v, cond) end
  for _, c in ipairs(cond) do
    if not holds1(v, c) then return false end
  end
  return true
end

local function record(opts, files)
  os.execute("mkdir -p " .. sh_quote(opts.out))
  local tmp = os.tmpname()
  for _, file in ipairs(files) do
    local sc = cjson.decode(read_file(file))
    local vars, results = {}, setmetatable({}, ARRAY_MT)
    for i, step in ipairs(sc.steps) do
      local r, v
      local wait = step["until"] and (step.timeout_seconds or 30) or step.retry_seconds or 0
      local deadline = os.time() + wait
      repeat
        r = do_request(opts, step, vars, tmp)
        v = decode_body(r.body)
        local status_ok = step.expect_status == nil or r.status == step.expect_status
        r.held = step["until"] and status_ok and holds(v, step["until"]) or nil
        if step["until"] and r.held == nil then r.held = false end
        if (status_ok and (not step["until"] or r.held)) or os.time() >= deadline then break end
        os.execute(step["until"] and "sleep 0.25" or "sleep 0.3")
      until false
      r.name = step.name or tostring(i)
      r.expect_status = step.expect_status
      r.method = step.method or "GET"
      r.keep = step.keep
      r["until"] = step["until"]
      r.mask = step.mask
      for var, path in pairs(step.save or {}) do
        vars[var] = v ~= nil and dig(v, path) or nil
        if vars[var] == nil then vars[var] = "MISSING-" .. var end
      end
      results[#results + 1] = r
    end
    local name = sc.name or file:match("([^/]+)%.json$")
    -- controllers: what ran beside the server (--controllers; the sim is
    -- started with the same list for this recording)
    write_file(opts.out .. "/" .. name .. ".json", cjson.encode({ name = name, file = file, steps = results,
      managed_fields = sc.managed_fields, sim_flags = sc.sim_flags,
      controllers = opts.controllers ~= "none" and opts.controllers or nil }))
    io.write(string.format("recorded %-28s %d steps\n", name, #results))
  end
  os.remove(tmp)
end

-- ---------------------------------------------------------------- normalise

local TIME_KEYS = { creationTimestamp = true, deletionTimestamp = true, lastTransitionTime = true,
  lastUpdateTime = true, lastHeartbeatTime = true, eventTime = true, firstTimestamp = true,
  lastTimestamp = true, renewTime = true, acquireTime = true, expirationTimestamp = true }
local DROP_KEYS = { managedFields = true, selfLink = true }
-- /version fields that name the build, not the API
local VERSION_DROP = { gitVersion = true, gitCommit = true, gitTreeState = true, buildDate = true,
  goVersion = true, compiler = true, platform = true }

local function map_uid(st, x)
  if not st.uid[x] then st.nuid = st.nuid + 1; st.uid[x] = "<uid#" .. st.nuid .. ">" end
  return st.uid[x]
end

-- An object's resourceVersion becomes "<uid#U>@K": its K-th distinct
-- version, so writes the other server makes elsewhere (controllers, leases)
-- do not shift the numbering; a resourceVersion without a uid beside it
-- gets the order of first appearance among those.
local function map_rv(st, x, uid)
  if uid then
    local label = map_uid(st, uid)
    st.byobj[label] = st.byobj[label] or { n = 0 }
    local o = st.byobj[label]
    if not o[x] then o.n = o.n + 1; o[x] = label .. "@" .. o.n end
    st.rvlabel[x] = o[x]
    return o[x]
  end
  if st.rvlabel[x] then return st.rvlabel[x] end
  if not st.rv[x] then st.nrv = st.nrv + 1; st.rv[x] = "<rv#" .. st.nrv .. ">" end
  return st.rv[x]
end

-- Messages quote uids and resourceVersions (precondition failures).
local function normalise_message(s, st)
  s = s:gsub("%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x",
    function(u) return map_uid(st, u) end)
  return (s:gsub("in record %((%d+)%)", function(n) return "in record (" .. (st.rvlabel[n] or "<rv>") .. ")" end))
end

-- Rewrites server-specific values in place; st holds the per-scenario maps
-- (uid and resourceVersion -> order of first appearance).
-- Table columns whose cells are times: ages ("4s", "2y330d") and the
-- default convertor's Created At.
local TIME_COLUMNS = { Age = true, ["Last Seen"] = true, ["First Seen"] = true, ["Created At"] = true }

-- A Table's time cells become "<age>"; a watch's later Tables carry no
-- columnDefinitions (null), so the last ones seen in the scenario apply.
local function normalise_table(v, st)
  if type(v.columnDefinitions) == "table" then st.table_cols = v.columnDefinitions end
  local cols = st.table_cols or {}
  for _, row in ipairs(type(v.rows) == "table" and v.rows or {}) do
    for i, c in ipairs(cols) do
      if type(c) == "table" and (TIME_COLUMNS[c.name] or c.type == "date") and type(row.cells) == "table"
          and type(row.cells[i]) == "string" then
        row.cells[i] = "<age>"
      end
    end
  end
  -- a list's Table has the list's resourceVersion ("now"); one object's
  -- Table has the object's, already labelled by its uid
  local md = v.metadata
  local rows = type(v.rows) == "table" and v.rows or {}
  local one = #rows == 1 and type(rows[1].object) == "table" and type(rows[1].object.metadata) == "table"
    and rows[1].object.metadata.resourceVersion
  if type(md) == "table" and type(md.resourceVersion) == "string" and not st.rvlabel[md.resourceVersion]
      and md.resourceVersion ~= one then
    md.resourceVersion = "<list-rv>"
  end
end

-- A scenario with "managed_fields": true compares metadata.managedFields:
-- each entry's time becomes "<time>" and the entries are sorted by manager,
-- operation, subresource and apiVersion (the servers sort by time first,
-- which a second's tick can reorder).
local function normalise_managed(list)
  if type(list) ~= "table" then return list end
  for _, e in ipairs(list) do
    if type(e) == "table" and type(e.time) == "string" then e.time = "<time>" end
  end
  local function key(e)
    if type(e) ~= "table" then return "" end
    return table.concat({ tostring(e.manager), tostring(e.operation), tostring(e.subresource),
      tostring(e.apiVersion) }, "\0")
  end
  table.sort(list, function(a, b) return key(a) < key(b) end)
  return list
end

-- Label values the workload controllers compute by hashing a pod template
-- (pod-template-hash: "7887448d46"; controller-revision-hash:
-- "web-5b6c7d8f9"): no other server computes the same bytes, so each
-- becomes "<pod-template-hash#N>" (N: order of first appearance in the
-- scenario) wherever it occurs, in names (web-7887448d46-x2x4z),
-- generateNames, selectors and labels alike.
local HASH_LABELS = { ["pod-template-hash"] = true, ["controller-revision-hash"] = true }

local function collect_hashes(v, st)
  if type(v) ~= "table" then return end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local x = v[k]
    if HASH_LABELS[k] and type(x) == "string" and x ~= "" and not st.hash[x] then
      st.nhash = st.nhash + 1
      st.hash[x] = "<" .. k .. "#" .. st.nhash .. ">"
      st.hashes[#st.hashes + 1] = x
      -- longest first, so a revision hash (name-hash) goes before its parts
      table.sort(st.hashes, function(a, b) return #a > #b end)
    else
      collect_hashes(x, st)
    end
  end
end

local function unhash(s, st)
  if not st.hashes or #st.hashes == 0 then return s end
  for _, h in ipairs(st.hashes) do
    local i = s:find(h, 1, true)
    while i do
      s = s:sub(1, i - 1) .. st.hash[h] .. s:sub(i + #h)
      i = s:find(h, i + #st.hash[h], true)
    end
  end
  return s
end

local function normalise(v, st)
  if type(v) == "string" then return unhash(v, st) end
  if type(v) ~= "table" then return v end
  if v.kind == "Table" then normalise_table(v, st) end
  if type(v.resourceVersion) == "string" and v.resourceVersion ~= "" and v.resourceVersion ~= "0"
      and type(v.uid) == "string" and v.uid ~= "" then
    v.resourceVersion = map_rv(st, v.resourceVersion, v.uid)
  end
  if is_array(v) then
    for i = 1, #v do v[i] = normalise(v[i], st) end
    return v
  end
  if v.major ~= nil and v.minor ~= nil and v.kind == nil then
    for k in pairs(VERSION_DROP) do v[k] = nil end
  end
  local list = type(v.kind) == "string" and v.kind:match("List$") and type(v.metadata) == "table"
  for k, x in pairs(v) do
    if k == "managedFields" and st.keep_managed then
      v[k] = normalise_managed(x)
    elseif DROP_KEYS[k] then
      v[k] = nil
    elseif TIME_KEYS[k] and type(x) == "string" then
      v[k] = "<time>"
    elseif k == "uid" and type(x) == "string" and x ~= "" then
      v[k] = map_uid(st, x)
    elseif k == "resourceVersion" and type(x) == "string" and x ~= "" and x ~= "0"
        and not x:match("^<") then
      v[k] = map_rv(st, x)
    elseif k == "message" and type(x) == "string" then
      v[k] = unhash(normalise_message(x, st), st)
    elseif k == "verbs" and type(x) == "table" then
      table.sort(x) -- a set
    elseif k == "continue" and type(x) == "string" and x ~= "" then
      v[k] = "<continue>"
    elseif k == "serverAddress" then
      v[k] = "<address>"
    else
      v[k] = normalise(x, st)
    end
  end
  -- a list's resourceVersion is "now": the real server's moves with writes of
  -- its own controllers (leases), so only its presence is compared
  if list and v.metadata.resourceVersion then v.metadata.resourceVersion = "<list-rv>" end
  local md = v.metadata
  if type(md) == "table" and type(md.generateName) == "string" and type(md.name) == "string"
      and md.name:sub(1, #md.generateName) == md.generateName then
    md.name = md.generateName .. "<suffix>"
  end
  return v
end

-- ---------------------------------------------------------------- compare

local function show(x)
  if x == nil then return "(absent)" end
  if type(x) == "table" then
    local s = cjson.encode(x)
    if #s > 160 then s = s:sub(1, 157) .. "..." end
    return s
  end
  return cjson.encode(x)
end

local function diff(a, b, path, out)
  if type(a) == "table" and type(b) == "table" and is_array(a) == is_array(b) then
    local keys, seen = {}, {}
    if is_array(a) then
      for i = 1, math.max(#a, #b) do keys[#keys + 1] = i end
    else
      for k in pairs(a) do keys[#keys + 1] = k; seen[k] = true end
      for k in pairs(b) do if not seen[k] then keys[#keys + 1] = k end end
      table.sort(keys)
    end
    for _, k in ipairs(keys) do
      diff(a[k], b[k], path .. (type(k) == "number" and ("[" .. (k - 1) .. "]") or ("." .. k)), out)
    end
  elseif a ~= b and not (type(a) == "number" and type(b) == "number" and a == b) then
    out[#out + 1] = { path = path == "" and "." or path, a = a, b = b }
  end
end

-- Keeps, in a discovery list, the entries the sim serves (step.keep:
-- {"field": "resources", "key": "name", "values": [...]}).
local function keep(v, k)
  if type(v) ~= "table" or not k or type(v[k.field]) ~= "table" then return v end
  local want, out = {}, setmetatable({}, ARRAY_MT)
  for _, x in ipairs(k.values) do want[x] = true end
  for _, e in ipairs(v[k.field]) do
    if type(e) == "table" and want[e[k.key]] then out[#out + 1] = e end
  end
  -- the order of discovery entries is not part of the contract
  table.sort(out, function(x, y) return tostring(x[k.key]) < tostring(y[k.key]) end)
  v[k.field] = out
  return v
end

local function glob_match(pat, s)
  local lp = "^" .. pat:gsub("[%^%$%(%)%%%.%[%]%+%-%?]", "%%%0"):gsub("%*", ".*") .. "$"
  return s:match(lp) ~= nil
end

local function find_known(divs, scenario, step, path)
  for _, d in ipairs(divs) do
    if glob_match(d.scenario or "*", scenario) and glob_match(d.step or "*", step)
        and (d.path and glob_match(d.path, path)) then
      return d
    end
    for _, pp in ipairs(d.paths or {}) do
      if glob_match(d.scenario or "*", scenario) and glob_match(d.step or "*", step)
          and glob_match(pp, path) then
        return d
      end
    end
  end
end

local function compare(opts, refdir, candir)
  local divs = cjson.decode(read_file(opts.divergences))
  local docs = read_file(opts.docs)
  local passed, failed, known_n = 0, 0, 0
  -- every divergence must be in the docs' divergence table
  for _, d in ipairs(divs) do
    if not docs:find("| " .. d.doc .. " |", 1, true) then
      print(string.format("FAIL divergences.json entry %q: no row '| %s |' in %s", d.path or d.paths[1], d.doc, opts.docs))
      failed = failed + 1
    end
  end
  local p = io.popen("ls " .. sh_quote(refdir) .. "/*.json")
  local files = {}
  for f in p:lines() do files[#files + 1] = f end
  p:close()
  table.sort(files)
  for _, rf in ipairs(files) do
    local ra = cjson.decode(read_file(rf))
    local cf = candir .. "/" .. rf:match("([^/]+)$")
    local fc = io.open(cf, "rb")
    local okc, rb = false, nil
    if fc then
      okc, rb = pcall(cjson.decode, fc:read("a")); fc:close()
    end
    if not okc then
      print("FAIL " .. ra.name .. ": no recording from the candidate"); failed = failed + 1
      goto next_scenario
    end
    do
      local keep_managed = ra.managed_fields or nil
      local sta = { uid = {}, rv = {}, nuid = 0, nrv = 0, byobj = {}, rvlabel = {}, keep_managed = keep_managed,
        hash = {}, hashes = {}, nhash = 0 }
      local stb = { uid = {}, rv = {}, nuid = 0, nrv = 0, byobj = {}, rvlabel = {}, keep_managed = keep_managed,
        hash = {}, hashes = {}, nhash = 0 }
      for i, sa in ipairs(ra.steps) do
        local sb = rb.steps[i] or { status = 0, body = "" }
        local stepname = sa.name
        local out = {}
        if sa.expect_status and sa.status ~= sa.expect_status then
          out[#out + 1] = { path = "status(expected " .. sa.expect_status .. ", reference)", a = sa.status, b = sb.status }
        end
        if sa.status ~= sb.status then out[#out + 1] = { path = "status", a = sa.status, b = sb.status } end
        if sa["until"] ~= nil and sa.held ~= sb.held then
          out[#out + 1] = { path = "until(held)", a = sa.held, b = sb.held }
        end
        local va, vb = keep(decode_body(sa.body), sa.keep), keep(decode_body(sb.body), sa.keep)
        for _, m in ipairs(sa.mask or {}) do
          if va ~= nil then dig_set(va, m, "<masked>") end
          if vb ~= nil then dig_set(vb, m, "<masked>") end
        end
        collect_hashes(va, sta); collect_hashes(vb, stb)
        if va == nil and vb == nil then
          if sa.body ~= sb.body then out[#out + 1] = { path = "body(text)", a = sa.body, b = sb.body } end
        elseif va == nil or vb == nil then
          out[#out + 1] = { path = "body(json?)", a = va and "json" or sa.body, b = vb and "json" or sb.body }
        else
          diff(normalise(va, sta), normalise(vb, stb), "", out)
        end
        local bad = 0
        for _, d in ipairs(out) do
          local k = find_known(divs, ra.name, stepname, d.path)
          local where = string.format("%s/%s %s %s", ra.name, stepname, sa.method or "", d.path)
          if k then
            known_n = known_n + 1
            if opts.verbose then print(string.format("  known %s: %s | %s  (%s)", where, show(d.a), show(d.b), k.reason)) end
          else
            bad = bad + 1
            print(string.format("  DIFF  %s: real %s | sim %s", where, show(d.a), show(d.b)))
          end
        end
        if bad == 0 then passed = passed + 1 else failed = failed + 1 end
      end
    end
    ::next_scenario::
  end
  print(string.format("%d known divergences matched (see spec/differential/divergences.json)", known_n))
  print(string.format("%d passed, %d failed", passed, failed))
  return failed == 0
end

-- ---------------------------------------------------------------- main

local mode = arg[1]
local opts, rest = {}, {}
local i = 2
while i <= #arg do
  local a = arg[i]
  local flag = a:match("^%-%-([%w-]+)$")
  if flag == "verbose" then
    opts.verbose = true; i = i + 1
  elseif flag then
    opts[flag] = arg[i + 1]; i = i + 2
  else
    rest[#rest + 1] = a; i = i + 1
  end
end

if mode == "record" then
  if not opts.server or not opts.out then die("record needs --server and --out") end
  if #rest == 0 then
    local p = io.popen("ls " .. sh_quote(HERE .. "/scenarios") .. "/*.json")
    for f in p:lines() do rest[#rest + 1] = f end
    p:close()
  end
  record(opts, rest)
elseif mode == "sim-flags" then
  -- The kinformer-sim flags for a scenario, tab-separated (run.sh starts one
  -- sim per distinct set): --controllers with the list the reference
  -- recording was made under ("none" when it names none: recorded against
  -- a bare kube-apiserver), then the scenario's sim_flags.
  if #rest ~= 1 or not opts.ref then die("sim-flags needs --ref DIR SCENARIO.json") end
  local sc = cjson.decode(read_file(rest[1]))
  local name = sc.name or rest[1]:match("([^/]+)%.json$")
  local controllers = "none"
  local f = io.open(opts.ref .. "/" .. name .. ".json", "rb")
  if f then
    local rec = cjson.decode(f:read("a")); f:close()
    if type(rec.controllers) == "string" and rec.controllers ~= "" then controllers = rec.controllers end
  end
  local flags = { "--controllers", controllers }
  for _, x in ipairs(type(sc.sim_flags) == "table" and sc.sim_flags or {}) do flags[#flags + 1] = x end
  io.write(table.concat(flags, "\t"))
elseif mode == "compare" then
  opts.divergences = opts.divergences or (HERE .. "/divergences.json")
  opts.docs = opts.docs or (HERE .. "/../../docs/sim.md")
  if #rest ~= 2 then die("compare needs REFERENCE_DIR CANDIDATE_DIR") end
  os.exit(compare(opts, rest[1], rest[2]) and 0 or 1)
else
  die("usage: run.lua record|compare ...")
end
