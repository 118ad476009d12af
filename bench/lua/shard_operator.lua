-- bench/lua/shard_operator.lua -- the operator of bench/shard_bench.sh (make
-- bench-shards), run by 1, 2 or 4 replicas as `kinformer run --shards
-- auto`: one controller on ConfigMaps whose reconciler stands in for an
-- I/O-bound call to a slow external system (core.sleep of
-- SHARD_BENCH_CALL seconds, default 10 ms) and writes nothing, with
-- SHARD_BENCH_WORKERS workers (default 4). The bench reads its
-- reconciles from /metrics.
local mgr = ...
local core = require "kinformer.core"
local call = tonumber(os.getenv("SHARD_BENCH_CALL") or "0.01")
assert(mgr:controller{
  ["for"] = "v1/configmaps",
  workers = tonumber(os.getenv("SHARD_BENCH_WORKERS") or "4"),
  reconciler = function() core.sleep(call) end,
})
