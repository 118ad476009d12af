#!/usr/bin/env bash
# make bench-shards: sharding across replicas (issue 27), reconciles per
# second of an I/O-bound reconciler with 1, 2 and 4 replicas on one machine,
# and memory per replica.
#
# One kinformer-sim with its ShardedListAndWatch gate on (each replica lists
# and watches only its ranges) seeded with OBJECTS ConfigMaps. For R in 1 2
# 4, BENCH_REPEAT times: R replicas of bench/lua/shard_operator.lua (`bin/
# kinformer run --shards auto`, lease 3 s / renew 2 s / retry 0.5 s; 4
# workers each, a reconciler that sleeps 10 ms: the fixed call) start and
# sync; once the bucket table on the Lease <name>-shards gives all 64
# buckets to the R members and every replica's reconcile count
# (controller_runtime_reconcile_total, from its /metrics) has stood still
# for a second (the initial list and the hand-overs done), the script asks
# the sim for a burst of OBJECTS updates (POST /kinformer-sim/burst) and
# times until the replicas' counts together grew by OBJECTS.
# reconciles/s = OBJECTS / that time; the speedup is against 1 replica
# (targets: >= 1.8x at 2, >= 3.2x at 4). Memory per replica: VmRSS of each
# replica after the burst, and the objects in its cache
# (kinformer_informer_objects), whose sum is OBJECTS when the server splits.
# There is no client-go row: client-go and controller-runtime have no
# sharding (controller-runtime #2576).
#
# Usage: bench/shard_bench.sh [--quick]
#   --quick        2000 ConfigMaps (CI, < 2 min)
#   BENCH_REPEAT   repeats per replica count (median), default 3 (--quick: 1)
#   BENCH_DIR      seeds, logs and results.jsonl, default build/bench-shards
set -euo pipefail
BENCH_NAME=bench-shards
. "$(dirname "$0")/lib.sh"
e2e_need jq:jq curl:curl
bench_args "$@"

SIM=${KINFORMER_SIM:-$ROOT/build/release/kinformer-sim}
SEEDGEN=${KINFORMER_SEED:-$ROOT/build/release/bench-informer-seed}
DIR=${BENCH_DIR:-$ROOT/build/bench-shards}
for b in "$SIM" "$SEEDGEN" "$ROOT/build/release/kinformer/core.so"; do
  [ -e "$b" ] || { echo "bench-shards: $b is missing (make bench-shards builds it)" >&2; exit 1; }
done
if [ $quick = 1 ]; then
  OBJECTS=2000 REPEAT=${BENCH_REPEAT:-1}
else
  OBJECTS=8000 REPEAT=${BENCH_REPEAT:-3}
fi
BURST=$OBJECTS
mkdir -p "$DIR/seeds" "$DIR/logs"
RESULTS=$DIR/results.jsonl
: >"$RESULTS"
SEEDF=$(seed configmaps "$OBJECTS")
bench_traps
PIDS=()
stop_replicas() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
trap 'stop_replicas; bench_cleanup' EXIT

# metric PORT NAME: the value of the first sample of NAME on PORT's /metrics.
metric() {
  # awk reads to the end: an early exit would fail curl's write (pipefail)
  { curl -sf "http://127.0.0.1:$1/metrics" || true; } |
    awk -v n="$2" 'index($0, n) == 1 && !done { print $NF; done = 1 }'
}

# run R REPEAT: one measurement with R replicas.
run() {
  local r=$1 rep=$2 i
  BENCH_SIM_FLAGS="--feature-gates=ShardedListAndWatch=true" start_sim "$SEEDF"
  local ports=()
  for ((i = 0; i < r; i++)); do
    local err=$DIR/logs/replica-$r-$rep-$i.err
    "$ROOT/bin/kinformer" run "$ROOT/bench/lua/shard_operator.lua" --kubeconfig "$KC" --name shard-bench \
      --shards auto --leader-elect-lease-duration 3 --leader-elect-renew-deadline 2 \
      --leader-elect-retry-period 0.5 --metrics-bind-address 127.0.0.1:0 -q >/dev/null 2>"$err" &
    PIDS+=($!)
  done
  for ((i = 0; i < r; i++)); do
    local err=$DIR/logs/replica-$r-$rep-$i.err p=""
    for _ in $(seq 600); do
      p=$(sed -n 's/.*serving metrics on port \([0-9]*\).*/\1/p' "$err" | head -1)
      [ -n "$p" ] && break
      sleep 0.05
    done
    [ -n "$p" ] || { echo "bench-shards: replica $i did not serve metrics:" >&2; cat "$err" >&2; exit 1; }
    ports+=("$p")
  done
  # the table settles: R members own the 64 buckets
  local owners=""
  for _ in $(seq 600); do
    owners=$(curl -sf "$URL/apis/coordination.k8s.io/v1/namespaces/default/leases/shard-bench-shards" |
      jq -r '.metadata.annotations["kinformer.io/shard-owners"] | fromjson | .owners | map(select(. != "")) |
             if length == 64 then (unique | length) else 0 end' 2>/dev/null || echo 0)
    [ "$owners" = "$r" ] && break
    sleep 0.1
  done
  [ "$owners" = "$r" ] || { echo "bench-shards: the $r replicas did not share the buckets" >&2; exit 1; }
  total() {
    local s=0 p v
    for p in "${ports[@]}"; do
      v=$(metric "$p" 'controller_runtime_reconcile_total{controller="configmap",result="success"}')
      s=$((s + ${v:-0}))
    done
    echo "$s"
  }
  # quiet: the counts stand still for a second
  local before last now
  last=$(total)
  for _ in $(seq 120); do
    sleep 1
    now=$(total)
    [ "$now" = "$last" ] && break
    last=$now
  done
  before=$last
  local t0 t1
  t0=$EPOCHREALTIME
  curl -sf -XPOST "$URL/kinformer-sim/burst" -d "{\"resource\":\"v1/configmaps\",\"count\":$BURST}" >/dev/null
  local want=$((before + OBJECTS)) deadline=$((SECONDS + 300))
  while (( $(total) < want )); do
    ((SECONDS < deadline)) || { echo "bench-shards: the burst was not reconciled in 300 s" >&2; exit 1; }
    sleep 0.02
  done
  t1=$EPOCHREALTIME
  local rss=() objs=() pid
  for pid in "${PIDS[@]}"; do rss+=("$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")"); done
  local objm='kinformer_informer_objects{informer="v1/configmaps'
  for p in "${ports[@]}"; do objs+=("$(metric "$p" "$objm")"); done
  jq -nc --argjson r "$r" --argjson n "$OBJECTS" --arg t0 "$t0" --arg t1 "$t1" \
    --arg rss "${rss[*]}" --arg objs "${objs[*]}" \
    '{replicas: $r, objects: $n, seconds: (($t1 | tonumber) - ($t0 | tonumber)),
      rss_kib: ($rss | split(" ") | map(tonumber)), cached: ($objs | split(" ") | map(tonumber))}
     | . + {rate: (.objects / .seconds)}' >>"$RESULTS"
  tail -1 "$RESULTS" | jq -r '"    \(.replicas) replica(s): \(.rate | floor) reconciles/s, RSS \(.rss_kib | map(. / 1024 | floor) | join("/")) MiB, cached \(.cached | join("/"))"'
  stop_replicas
  stop_sim
}

echo "bench-shards: $OBJECTS ConfigMaps, a 10 ms reconciler, 4 workers per replica"
echo "  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((rep = 1; rep <= REPEAT; rep++)); do
  for r in 1 2 4; do run "$r" "$rep"; done
done

jq -rs "$BENCH_JQ"'
  . as $all
  | def med($r; f): [$all[] | select(.replicas == $r) | f] | median;
  med(1; .rate) as $one
  | "", "| replicas | reconciles/s | speedup | target | RSS per replica (MiB) | cached per replica |",
    "|---|---|---|---|---|---|",
    (1, 2, 4 | . as $r
     | med($r; .rate) as $rate
     | "| \($r) | \($rate | floor) | \(fixed($rate / $one; 2))x | "
       + (if $r == 2 then "≥ 1.8x" elif $r == 4 then "≥ 3.2x" else "" end) + " | "
       + (med($r; (.rss_kib | add / length / 1024)) | fixed(.; 1) | tostring) + " | "
       + (med($r; (.cached | add / length)) | floor | tostring) + " |")' "$RESULTS"
