--- kinformer.metrics: Prometheus metrics of your own, exposed with the
-- manager's (controller-runtime's and client-go's) at /metrics.
--
--   local metrics = require "kinformer.metrics"
--   local synced = metrics.counter{ name = "website_syncs_total",
--     help = "Websites synced", labels = { "result" } }
--   synced:inc{ result = "ok" }                  -- or synced:inc({ "ok" }, 2)
--   local pages = metrics.gauge{ name = "website_pages", help = "Pages served" }
--   pages:set(12); pages:inc(); pages:dec(3)
--   local t = metrics.histogram{ name = "website_render_seconds",
--     help = "Render time", labels = { "site" }, buckets = { 0.01, 0.1, 1 } }
--   t:observe(0.05, { site = "a" })
--
-- The registry lives in C and is shared by every Lua state of the process:
-- a reconciler (running in a worker state) registers or looks up the same
-- metric by calling the same constructor; registering a name again with the
-- same type, help, labels and buckets returns that metric, a different
-- shape raises. Updates lock the one metric and allocate nothing once a
-- label set exists. Label values are given as a table keyed by label name
-- or as a list in label order; a metric without labels takes nil.
local core = require "kinformer.core"
local options = require "kinformer.util.options"

local M = {}

--- Prometheus' default buckets (client_golang's DefBuckets).
M.default_buckets = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 }

-- While > 0 (M.dropped), constructors in this state return stand-ins that
-- take every update and keep none: a plan (kinformer.plan) runs the
-- reconciler for real but must not count into the operator's metrics.
local dropping = 0

-- A stand-in metric: every method of a real one, recording nothing.
local Dropped = {}
Dropped.__index = Dropped
Dropped.__name = "kinformer.metric (dropped)"
for _, m in ipairs { "inc", "add", "set", "dec", "observe" } do Dropped[m] = function() end end
function Dropped.get() return 0 end

--- Calls fn(...) with every metric constructed meanwhile in this Lua state
-- a stand-in that records nothing (also when fn raises). Returns what fn
-- returns.
function M.dropped(fn, ...)
  dropping = dropping + 1
  local r = table.pack(pcall(fn, ...))
  dropping = dropping - 1
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

local function make(kind, opts)
  if type(opts) ~= "table" then
    options.raise(string.format("bad argument #1 to '%s' (table expected, got %s)", kind, type(opts)))
  end
  if dropping > 0 then return setmetatable({ name = opts.name, type = kind }, Dropped) end
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  o.type = kind
  local m, msg = options.call(core.metric, o)
  if not m then options.raise(msg) end
  return m
end

--- A counter: m:inc([labels], [n = 1]), m:inc(n), m:add(n, [labels]),
-- m:get([labels]). opts: name, help, labels (list of label names).
function M.counter(opts) return make("counter", opts) end

--- A gauge: m:set(v, [labels]), m:inc([labels], [n]), m:dec([labels], [n]),
-- m:add(v, [labels]), m:get([labels]).
function M.gauge(opts) return make("gauge", opts) end

--- A histogram: m:observe(v, [labels]), m:get([labels]) (the count).
-- opts.buckets: increasing upper bounds (+Inf implied; default
-- M.default_buckets).
function M.histogram(opts) return make("histogram", opts) end

--- count bounds start, start*factor, ... (client_golang's ExponentialBuckets).
function M.exponential_buckets(start, factor, count)
  local b, v = {}, start
  for i = 1, count do b[i] = v; v = v * factor end
  return b
end

--- count bounds start, start+width, ... (client_golang's LinearBuckets).
function M.linear_buckets(start, width, count)
  local b = {}
  for i = 1, count do b[i] = start + (i - 1) * width end
  return b
end

--- client-go's leader election gauge: sets
-- leader_election_master_status{name = lease_name} to 1 when is_leader,
-- else 0 (the same family as the C side's
-- kin_metrics_leader_election_status).
local LEADER_HELP = "Gauge of if the reporting system is master of the relevant lease, 0 "
  .. "indicates backup, 1 indicates master. 'name' is the string used to identify the lease. "
  .. "Please make sure to group by name."
function M.leader_election_status(lease_name, is_leader)
  M.gauge{ name = "leader_election_master_status", help = LEADER_HELP, labels = { "name" } }
    :set(is_leader and 1 or 0, { name = lease_name })
end

--- The whole registry in the Prometheus text format 0.0.4 (what /metrics
-- serves), or nil, message, code.
function M.render() return core.metrics_render() end

return M
