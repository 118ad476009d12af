---@meta kinformer.metrics
-- kinformer.metrics (lua/kinformer/metrics.lua, csrc/lua/lmetrics.c):
-- Prometheus metrics of your own, served with the manager's at /metrics.
-- The registry is shared by every Lua state: registering a name again
-- with the same shape returns that metric, another shape raises.

---Label values: a table keyed by label name ({code = "200"}) or a list in
---label order; nil for a metric without labels.
---@alias kinformer.MetricLabels table<string, string>|string[]

---@class kinformer.MetricOptions
---@field name string
---@field help? string
---@field labels? string[] label names
---@field buckets? number[] histogram: increasing upper bounds (+Inf implied; default default_buckets)

---A counter, gauge or histogram.
---@class kinformer.Metric
local Metric = {}

---Adds n (default 1).
---@param labels? kinformer.MetricLabels
---@param n? number
---@overload fun(self: kinformer.Metric, n: number)
function Metric:inc(labels, n) end

---Gauge: subtracts n (default 1).
---@param labels? kinformer.MetricLabels
---@param n? number
---@overload fun(self: kinformer.Metric, n: number)
function Metric:dec(labels, n) end

---Adds v.
---@param v number
---@param labels? kinformer.MetricLabels
function Metric:add(v, labels) end

---Gauge: sets v.
---@param v number
---@param labels? kinformer.MetricLabels
function Metric:set(v, labels) end

---Histogram: records v.
---@param v number
---@param labels? kinformer.MetricLabels
function Metric:observe(v, labels) end

---The value (a histogram's count), nil when that label set was never updated.
---@param labels? kinformer.MetricLabels
---@return number?
function Metric:get(labels) end

---The metric's name.
---@return string
function Metric:name() end

---The module: require "kinformer.metrics".
---@class kinformer.metrics
---@field default_buckets number[] client_golang's DefBuckets
local M = {}

---@param opts kinformer.MetricOptions
---@return kinformer.Metric
function M.counter(opts) end

---@param opts kinformer.MetricOptions
---@return kinformer.Metric
function M.gauge(opts) end

---@param opts kinformer.MetricOptions
---@return kinformer.Metric
function M.histogram(opts) end

---count bounds start, start*factor, ...
---@param start number
---@param factor number
---@param count integer
---@return number[]
function M.exponential_buckets(start, factor, count) end

---count bounds start, start+width, ...
---@param start number
---@param width number
---@param count integer
---@return number[]
function M.linear_buckets(start, width, count) end

---Sets leader_election_master_status{name = lease_name} to 1 or 0.
---@param lease_name string
---@param is_leader boolean
function M.leader_election_status(lease_name, is_leader) end

---The whole registry in the Prometheus text format (what /metrics serves),
---or nil, message, code.
---@return string? text
---@return string? msg
---@return kinformer.ErrorCode? code
function M.render() end

---Calls fn(...) with every metric constructed meanwhile in this Lua state a
---stand-in that records nothing (a plan runs reconcilers for real but must
---not count into the operator's metrics). Returns what fn returns.
---@param fn function
---@param ... any
---@return any ...
function M.dropped(fn, ...) end

return M
