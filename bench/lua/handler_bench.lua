--- make bench-lua, handler dispatch: one kinformer informer from Lua with an
-- on_update handler (a function, so it runs in its own
-- worker state on the listener thread) that reads the new object's
-- metadata.resourceVersion.
--
--   lua5.4 bench/lua/handler_bench.lua --kubeconfig K --resource v1/configmaps
--          --events N --ready-file F [--timeout S]
--
-- Lists and watches; once the handler has had the whole initial list it
-- creates the ready file, and the driver (bench/lua_bench.sh) starts a
-- burst of N updates on the sim. The main state then polls the handler's
-- delivered count (h:stats(): counted after the Lua function returned)
-- every 10 ms; once it has grown by N, the end is when the handler
-- finished its last batch (h:stats().last_delivered), as client-go's
-- handler stamps its own last event: the poll's own wake-ups are kept
-- rare, since on 2 cores they would take turns with the pipeline being
-- timed. Prints one JSON line.
local common = require "bench.lua.common"
local kinformer = require "kinformer"

local a = common.args(arg, { resource = "v1/configmaps", timeout = "300", poll = "0.01" })
local events = assert(tonumber(a.events), "--events N required")
local timeout = tonumber(a.timeout)
local r = { client = "kinformer-lua", version = kinformer._VERSION, resource = a.resource, events = events }

local function fail(msg)
  r.error = tostring(msg)
  common.emit(r)
  os.exit(1)
end

local mgr, err = kinformer.manager { kubeconfig = a.kubeconfig, log_level = "warn" }
if not mgr then fail(err) end
local inf, ierr = mgr:informer(a.resource)
if not inf then fail(ierr) end
local h, herr = inf:add_handler {
  on_update = function(_, new)
    -- the read the benchmark asks for; the sum keeps it observable
    FIELD_BYTES = (FIELD_BYTES or 0) + #new.metadata.resourceVersion
  end,
}
if not h then fail(herr) end

local t0 = common.monotime()
local ok, serr = mgr:start { timeout = timeout }
if not ok then fail(serr) end
-- The handler has synced when it was given every object of the initial list.
if not common.poll(function() return h:has_synced() end, 0.001, timeout) then
  fail("handler not synced within " .. timeout .. " s")
end
r.synced_ms = (common.monotime() - t0) * 1000
r.objects = inf:len()
r.rss_kib = common.rss_kib()
local base = h:stats().delivered
r.delivered_at_sync = base
common.ready(a.ready_file)

local every = tonumber(a.poll)
local target = base + events
local st
local done = common.poll(function()
  st = h:stats()
  return st.delivered >= target
end, every, timeout)
-- the wall clock of the last batch's end: now, less how long ago it was
local t_end = common.walltime() - (st.last_delivered and common.monotime() - st.last_delivered or 0)
r.delivered = st.delivered
r.handler_errors = st.errors
if not done then
  mgr:stop()
  fail(("%d of %d updates handled within %s s"):format(st.delivered - base, events, timeout))
end
r.end_unix_ms = t_end * 1000
r.poll_ms = every * 1000
r.rss_end_kib = common.rss_kib()
mgr:stop()
if st.errors > 0 then r.error = st.errors .. " handler error(s)" end
common.emit(r)
