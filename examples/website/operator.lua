-- The Website operator: `kinformer run examples/website/operator.lua --sim
-- --seed examples/website/seed.json` (or --kubeconfig F against a cluster
-- where examples/website/crd.json is applied). The reconciler is the module
-- website_reconciler next to this file, found through package.path, which
-- the worker states copy when they are made.
---@type kinformer.Manager
local mgr = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path

require("website_reconciler").register(mgr)
