-- Greets every ConfigMap labelled hello=true, with leader election, metrics and an Event:
--   kinformer run --leader-elect --metrics-bind-address :8080 \
--     --health-probe-bind-address :8081 examples/hello/operator.lua
local mgr = ...
assert(mgr:controller{
  name = "hello",
  ["for"] = "v1/configmaps",
  predicates = { { label_selector = "hello=true" } },
  reconciler = function(req, ctx)                   -- runs only on the leader
    local cm = ctx.listers["v1/configmaps"]:get(req.key)
    if not cm or (cm.data or {}).greeting then return end  -- gone, or greeted
    cm.data = cm.data or {}
    cm.data.greeting = "hello, " .. req.name
    local _, err = ctx.client:update(cm)
    if err then return nil, err end                 -- retried with backoff
    require("kinformer.metrics").counter{ name = "hello_greetings_total",
      help = "ConfigMaps greeted." }:inc()           -- served at /metrics
    ctx:event(cm, "Normal", "Greeted", "set data.greeting")  -- kubectl describe
  end,
})
