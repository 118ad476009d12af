-- The ConfigMap mirror: `kinformer run examples/configmap-mirror/operator.lua
-- --sim --seed examples/configmap-mirror/seed.json`. ConfigMaps labelled
-- kinformer.io/mirror=true are mirrored into Secrets (mirror_reconciler.lua).
---@type kinformer.Manager
local mgr = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path

require("mirror_reconciler").register(mgr)
