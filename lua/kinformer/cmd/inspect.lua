--- kinformer.cmd.inspect: `kinformer inspect`, a look into a running operator
-- through its admin endpoint (`kinformer run --admin-bind-address
-- 127.0.0.1:PORT`, manager option admin_bind; see include/kinformer/admin.h
-- for the JSON it serves).
--
--   kinformer inspect [--address HOST:PORT] [caches|queues|inflight|advise|why KEY
--                     [--controller NAME]] [--json]
--
-- With no subcommand it prints caches, queues and in-flight reconciles.
-- --address defaults to $KINFORMER_ADMIN_ADDRESS, else 127.0.0.1:9443. A
-- loopback address (127.x, localhost, [::1]) without a token is read over
-- plain HTTP with no credentials; any other address, or any address with a
-- bearer token (--token, or --token-file, or $KINFORMER_ADMIN_TOKEN: e.g.
-- `kubectl create token SA` for a ServiceAccount allowed get on the admin
-- paths), over HTTPS (an endpoint bound to a non-loopback address serves
-- HTTPS even to a loopback client), verified with
-- --certificate-authority F, or not with --insecure-skip-tls-verify (the
-- endpoint's certificate is self-signed unless --metrics-cert-path).
-- Exit status: 0, 1 when the endpoint cannot be read (or `why` knows
-- nothing of KEY), 2 on a usage error.
local core = require "kinformer.core"

local M = {}

local argv_lib = require "kinformer.cmd.argv"
local argv_walk, positive = argv_lib.walk, argv_lib.positive

M.usage = [=[
usage: kinformer inspect [--address HOST:PORT] [caches|queues|inflight|advise|why KEY [--controller NAME]] [--json]

Reads a running operator's admin endpoint (kinformer run --admin-bind-address
HOST:PORT) and prints:
  caches              each informer: objects held, synced or not
  queues              each controller's queue: keys ready, being processed or
                      waiting (due in how long), and their retries
  inflight            the reconciles running now (key, worker, seconds)
  advise              each informer: the fields = {...} projection keeping
                      what handlers and reconcilers have read of its
                      objects, and the bytes per object now and with it
  shards              sharding (--shards): this replica's member Lease,
                      the live members, the buckets it owns and hands over,
                      and per sharded informer its ranges, objects, and
                      whether the server filtered (shardSelector) or the
                      client does
  why KEY             KEY's history (ns/name): what enqueued it, the
                      predicates' verdicts, each reconcile with its result
                      and writes; --controller NAME limits it to one controller
  (nothing)           caches, queues and inflight
options:
  --address HOST:PORT the admin endpoint (default $KINFORMER_ADMIN_ADDRESS or 127.0.0.1:9443)
  --token T, --token-file F  a bearer token for an endpoint bound to a
                      non-loopback address (default $KINFORMER_ADMIN_TOKEN);
                      with one, the endpoint is read over HTTPS
  --certificate-authority F  verify the endpoint's certificate with CA file F
  --insecure-skip-tls-verify  do not verify it (self-signed endpoints)
  --json              print the endpoint's JSON as is
  --timeout S         seconds to wait for the answer (default 10)
]=]

local function stderr(fmt, ...)
  io.stderr:write(string.format(fmt, ...))
  io.stderr:flush()
end

--- Parses argv (the words after `inspect`). Returns {address=, what=,
-- key=, controller=, json=, timeout=} or nil, message.
function M.parse(argv)
  local o = { address = os.getenv("KINFORMER_ADMIN_ADDRESS") or "127.0.0.1:9443", timeout = 10 }
  local ok, err = argv_walk(argv, 1, function(a, value, usage)
    if a == "--address" then
      o.address = value()
    elseif a == "--controller" then
      o.controller = value()
    elseif a == "--timeout" then
      o.timeout = positive(a, value, usage)
    elseif a == "--json" then
      o.json = true
    elseif a == "--token" then
      o.token = value()
    elseif a == "--token-file" then
      local f = value()
      local h = io.open(f, "r")
      if not h then usage("cannot read --token-file " .. f) end
      o.token = h:read("a"):gsub("%s+$", "")
      h:close()
    elseif a == "--certificate-authority" then
      o.ca = value()
    elseif a == "--insecure-skip-tls-verify" then
      o.insecure = true
    elseif a == "-h" or a == "--help" then
      o.what = "help"
    elseif a:sub(1, 1) == "-" then
      usage("unknown option " .. a)
    elseif o.what == nil and (a == "caches" or a == "queues" or a == "inflight" or a == "advise" or a == "shards"
        or a == "why") then
      o.what = a
    elseif o.what == "why" and o.key == nil then
      o.key = a
    else
      usage("unexpected argument " .. a)
    end
  end)
  if not ok then return nil, err end
  if o.what == "why" and not o.key then return nil, "why needs a key (namespace/name)" end
  if o.controller and o.what ~= "why" then return nil, "--controller is an option of why" end
  if not o.address:match("^[%w.%-%[%]:]+:%d+$") then
    return nil, "--address wants HOST:PORT, not " .. o.address
  end
  o.what = o.what or "all"
  o.token = o.token or os.getenv("KINFORMER_ADMIN_TOKEN")
  if o.token == "" then o.token = nil end
  return o
end

--- 1 when address (HOST:PORT) names a loopback host: read over plain HTTP.
function M.is_loopback(address)
  local host = address:match("^(.*):%d+$") or ""
  return host == "localhost" or host == "[::1]" or host:match("^127%.%d+%.%d+%.%d+$") ~= nil
end

local function urlencode(s)
  return (s:gsub("[^%w%-%._~/]", function(c) return string.format("%%%02X", c:byte()) end))
end

--- GETs path of the endpoint (tls: {token=, ca=, insecure=}: over HTTPS
-- for a non-loopback address or with a token); returns the decoded JSON and the raw
-- text, or nil, message.
function M.fetch(address, path, timeout, tls)
  local plain = M.is_loopback(address) and not (tls and tls.token)
  local url = (plain and "http://" or "https://") .. address .. path
  local body, status, code = core.http_get(url, timeout, not plain and tls or nil)
  if not body then
    return nil, string.format("%s (is `kinformer run --admin-bind-address %s` running?%s)", status, address,
      plain and " an endpoint bound to a non-loopback address serves HTTPS: pass --token" or ""), code
  end
  if status ~= 200 then return nil, string.format("GET %s: HTTP %d: %s", url, status, body) end
  local ok, v = pcall(core.json_decode, body)
  if not ok then return nil, "GET " .. url .. ": not JSON: " .. tostring(v) end
  return v, body
end

-- ---- printing -------------------------------------------------------------

local function secs(s)
  if s >= 1 then return string.format("%.1fs", s) end
  return string.format("%.0fms", s * 1000)
end

function M.format_caches(v)
  local out = { "CACHES" }
  if #v.caches == 0 then out[#out + 1] = "  (none)" end
  table.sort(v.caches, function(a, b) return a.name < b.name end)
  for _, c in ipairs(v.caches) do
    out[#out + 1] = string.format("  %-40s %8d objects  %s", c.name, c.objects, c.synced and "synced" or "NOT SYNCED")
  end
  return table.concat(out, "\n")
end

function M.format_queues(v)
  local out = { "QUEUES" }
  if #v.queues == 0 then out[#out + 1] = "  (no controllers)" end
  for _, q in ipairs(v.queues) do
    out[#out + 1] = string.format("  controller %s: %d ready, %d items", q.controller, q.depth, #q.items)
    for _, it in ipairs(q.items) do
      local what = it.state
      if it.state == "waiting" then what = "waiting, due in " .. secs(it.due_in)
      elseif it.state == "processing" then what = "processing for " .. secs(it.processing_for) end
      out[#out + 1] = string.format("    %-50s %s%s", it.key, what,
        it.requeues > 0 and string.format(" (%d retries)", it.requeues) or "")
    end
    if q.truncated then out[#out + 1] = "    ..." end
  end
  return table.concat(out, "\n")
end

function M.format_inflight(v)
  local out = { "IN FLIGHT" }
  if #v.inflight == 0 then out[#out + 1] = "  (none)" end
  for _, r in ipairs(v.inflight) do
    out[#out + 1] = string.format("  controller %s: %s (worker %d, %s)", r.controller, r.key, r.worker, secs(r.seconds))
  end
  return table.concat(out, "\n")
end

function M.format_advise(v)
  return require("kinformer.advise").format(v.advise)
end

function M.format_shards(v)
  if v.mode == nil then return "SHARDS\n  (this operator is not sharded)" end
  local out = { "SHARDS" }
  if v.mode == "static" then
    out[#out + 1] = string.format("  static: shard %d of %d, key %s", v.shard, v.of, v.key)
  else
    out[#out + 1] = string.format("  auto: member %s, key %s; %d live members", tostring(v.member), v.key,
      #(v.members or {}))
    for _, m in ipairs(v.members or {}) do
      out[#out + 1] = "    " .. m .. (m == v.member and " (this replica)" or "")
    end
    out[#out + 1] = string.format("  buckets: %d of %d owned, %d being handed over; hand-overs: %d out, %d in",
      v.buckets or 0, v.of_buckets or 64, v.releasing or 0, v.handovers or 0, v.taken or 0)
  end
  local g = v.gate or {}
  out[#out + 1] = string.format("  gate: %s; events for other replicas' objects dropped: %d; "
    .. "requests not reconciled because their range moved: %d; cached objects enqueued when their range "
    .. "came here: %d", g.open and "open" or "closed",
    g.dropped_enqueues or 0, g.skipped_reconciles or 0, g.requeued or 0)
  for _, i in ipairs(v.informers or {}) do
    out[#out + 1] = string.format("  informer %s: %d objects; %s", i.name, i.objects or 0,
      i.server_sharded == true and "the server filters (shardSelector)"
      or i.server_sharded == false
        and ("the server ignores shardSelector: the client filters (%d dropped)"):format(i.client_dropped or 0)
      or "not listed with a selector yet")
  end
  return table.concat(out, "\n")
end

function M.format_why(v)
  local out = {}
  for _, w in ipairs(v.why) do
    out[#out + 1] = string.format("controller %s, %s:", w.controller, v.key)
    for _, l in ipairs(w.lines) do out[#out + 1] = "  " .. l end
  end
  return table.concat(out, "\n")
end

--- Entry point: argv = the words after `inspect`. Returns the exit status.
function M.main(argv)
  local o, err = M.parse(argv or {})
  if not o then
    stderr("kinformer inspect: %s\n%s", err, M.usage)
    return 2
  end
  if o.what == "help" then
    io.stdout:write(M.usage)
    return 0
  end
  local parts = o.what == "all" and { "caches", "queues", "inflight" } or { o.what }
  for i, what in ipairs(parts) do
    local path = "/" .. what
    if what == "why" then
      path = "/why?key=" .. urlencode(o.key) .. (o.controller and ("&controller=" .. urlencode(o.controller)) or "")
    end
    local v, raw = M.fetch(o.address, path, o.timeout, { token = o.token, ca = o.ca, insecure = o.insecure })
    if not v then
      stderr("kinformer inspect: %s\n", raw)
      return 1
    end
    if o.json then
      io.stdout:write(raw)
    else
      if i > 1 then io.stdout:write("\n") end
      if what == "why" and #v.why == 0 then
        stderr("kinformer inspect: no history for %s%s\n", o.key,
          o.controller and (" in controller " .. o.controller) or "")
        return 1
      end
      io.stdout:write(M["format_" .. what](v), "\n")
    end
  end
  io.stdout:flush()
  return 0
end

return M
