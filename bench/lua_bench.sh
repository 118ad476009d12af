#!/usr/bin/env bash
# make bench-lua: the Lua layer of kinformer against client-go, both against
# the same kinformer-sim.
#
# 1. Handler dispatch. One sim seeded with OBJECTS ConfigMaps
#    (bench/informer_seed.c). BENCH_REPEAT times, each client alone, in
#    alternating order:
#      kinformer: bench/lua/handler_bench.lua, an informer from Lua
#        (kinformer.manager) with an on_update handler - a
#        function, run in its own worker state on the listener thread - that
#        reads new.metadata.resourceVersion;
#      client-go: kinformer-ref-informer -read-field, a typed informer whose
#        UpdateFunc reads the new object's ResourceVersion.
#    Once the client's handler has had the initial list it creates its ready
#    file; the script stamps the wall clock ($EPOCHREALTIME) and asks the sim
#    for a burst of BURST updates (POST /kinformer-sim/burst: committed in
#    one go under the store lock, then streamed to the watch back to back).
#    The client stamps the wall clock when its handler has returned from the
#    BURST-th update (client-go: inside the handler; kinformer: the Lua main
#    state polls h:stats().delivered every 1 ms, so it may be up to 1 ms
#    late). events/s = BURST / (end - burst start). A second row times from
#    the moment the sim's burst call returned (the commit done), which takes
#    the sim's commit time, the same for both, out of the interval.
# 2. Reconcile rate, 1 and 2 workers, no object involved:
#      kinformer: bench/lua/reconcile_bench.lua, mgr:controller For v1/secrets
#        (none in the sim, so only the benchmark enqueues) with a trivial
#        trivial reconciler (returns nothing); one ctl:enqueue_many (a C loop) of KEYS
#        distinct requests, timed until ctl:stats().reconcile_success
#        reaches KEYS (polled every 1 ms);
#      kinformer-metrics: the same with --metrics 1 (the /metrics endpoint
#        served and scraped every second, a user counter per reconcile),
#        compared with kinformer in a table of its own;
#      client-go: kinformer-ref-informer -reconcile-keys (reconcile.go): the
#        controller-runtime worker loop (Get, reconcile with a context and
#        a tagged logger, Forget, Done) over client-go's rate-limited
#        workqueue, timed from the first Add until the KEYS-th reconcile;
#      kinformer-c: build/release/bench_core --reconcile-keys KEYS, the same
#        with no Lua on either end (a C thread calls kin_controller_enqueue,
#        a C reconciler returns done): like against like with client-go's
#        native loop, in a table of its own.
#
# Usage: bench/lua_bench.sh [--quick]
#   --quick        2k ConfigMaps, bursts of 5000, 50k keys (CI, < 2 min)
#   BENCH_REPEAT   repeats per measurement (median), default 3
#   BENCH_BURST    updates per burst, default 20000 (--quick: 5000)
#   BENCH_KEYS     reconcile requests per run, default 200000 (--quick: 50000)
#   BENCH_DIR      seeds, logs and results.jsonl, default build/bench-lua
# Each client process is killed if it outlives its own time limit by 30 s
# (a hang at shutdown shows as a failed run).
# Binaries: KINFORMER_SIM, KINFORMER_SEED (default build/release/...),
# KINFORMER_REF (default the e2e cache's), KINFORMER_LUA_CPATH (where
# kinformer/core.so is; default build/release), LUA (default lua5.4).
set -euo pipefail
BENCH_NAME=bench-lua
. "$(dirname "$0")/lib.sh" # sets ROOT, sources spec/e2e/lib.sh
e2e_need jq:jq curl:curl
bench_args "$@"

SIM=${KINFORMER_SIM:-$ROOT/build/release/kinformer-sim}
CORE=${KINFORMER_BENCH_CORE:-$ROOT/build/release/bench_core}
SEEDGEN=${KINFORMER_SEED:-$ROOT/build/release/bench-informer-seed}
REF=${KINFORMER_REF:-$E2E_BIN/kinformer-ref-informer}
CPATH_DIR=${KINFORMER_LUA_CPATH:-$ROOT/build/release}
LUA=${LUA:-lua5.4}
DIR=${BENCH_DIR:-$ROOT/build/bench-lua}
for b in "$SIM" "$SEEDGEN" "$REF" "$CPATH_DIR/kinformer/core.so"; do
  [ -e "$b" ] || { echo "bench-lua: $b is missing (make bench-lua builds it)" >&2; exit 1; }
done
command -v "$LUA" >/dev/null || { echo "bench-lua: $LUA is missing (make deps)" >&2; exit 1; }
"$LUA" -e 'require "system"' 2>/dev/null ||
  { echo "bench-lua: the Lua module 'system' (Debian lua-system, a busted dependency) is missing" >&2; exit 1; }

if [ $quick = 1 ]; then
  REPEAT=${BENCH_REPEAT:-3}
  PODS=${BENCH_PODS:-10000}
  OBJECTS=2000
  BURST=${BENCH_BURST:-5000}
  KEYS=${BENCH_KEYS:-50000}
  TIMEOUT=60
else
  REPEAT=${BENCH_REPEAT:-3}
  PODS=${BENCH_PODS:-100000}
  OBJECTS=10000
  BURST=${BENCH_BURST:-20000}
  KEYS=${BENCH_KEYS:-200000}
  TIMEOUT=300
fi
mkdir -p "$DIR/seeds" "$DIR/logs"
RESULTS=$DIR/results.jsonl
: >"$RESULTS"
export LUA_PATH="$ROOT/lua/?.lua;$ROOT/lua/?/init.lua;$ROOT/?.lua;;"
export LUA_CPATH="$CPATH_DIR/?.so;;"

bench_traps

# record WORKLOAD LABEL OUT ERR EXTRA_JSON: appends the client's last JSON
# line (or an error) with the workload, label and EXTRA_JSON to results.jsonl.
record() {
  local line
  line=$(tail -n 1 "$3" 2>/dev/null || true)
  jq -e . >/dev/null 2>&1 <<<"$line" || line="{\"error\":\"no JSON line (see $4)\"}"
  jq -c --arg w "$1" --arg l "$2" --argjson x "$5" '. + {workload: $w, label: $l} + $x' <<<"$line" >>"$RESULTS"
}

# run_handler LABEL CMD...: one handler-dispatch run.
run_handler() {
  local label=$1 ready=$DIR/ready out=$DIR/client.out err=$DIR/logs/handler-$1.err t0=0 t1=0
  shift
  rm -f "$ready"
  timeout -k 5 "$((TIMEOUT + 30))" "$@" >"$out" 2>"$err" &
  CLIENT_PID=$!
  while [ ! -e "$ready" ] && kill -0 "$CLIENT_PID" 2>/dev/null; do sleep 0.01; done
  if [ -e "$ready" ]; then
    t0=$EPOCHREALTIME
    curl -sf -XPOST "$URL/kinformer-sim/burst" \
      -d "{\"resource\":\"v1/configmaps\",\"count\":$BURST}" >"$DIR/burst.out" ||
      echo "bench-lua: burst failed: $(cat "$DIR/burst.out")" >&2
    t1=$EPOCHREALTIME
  fi
  wait "$CLIENT_PID" || true
  CLIENT_PID=""
  record handler "$label" "$out" "$err" "{\"burst\": $BURST, \"burst_start_unix_ms\": $(awk -v t="$t0" 'BEGIN { printf "%.3f", t * 1000 }'),
    \"burst_done_unix_ms\": $(awk -v t="$t1" 'BEGIN { printf "%.3f", t * 1000 }')}"
  # one normalised end stamp, then a line of progress
  local last
  last=$(tail -n 1 "$RESULTS" | jq -c '. + {end_ms: (.end_unix_ms // .watch_end_unix_ms)}
    | if .error == null and .end_ms == null then .error = "no end stamp" else . end
    | if .error == null and .label == "client-go" and (.field_bytes // 0) == 0 then .error = "the handler read no field" else . end
    | if .error == null then . + {eps_start: (.burst / (.end_ms - .burst_start_unix_ms) * 1000),
                                  eps_committed: (.burst / (.end_ms - .burst_done_unix_ms) * 1000)} else . end')
  sed -i '$d' "$RESULTS"
  echo "$last" >>"$RESULTS"
  jq -r '"    \(.label): " + (if .error then "ERROR \(.error)" else
      "synced \(.synced_ms | floor) ms; \(.burst) updates: \(.end_ms - .burst_start_unix_ms | floor) ms from burst start (\(.eps_start | floor)/s), sim commit \(.burst_done_unix_ms - .burst_start_unix_ms | floor) ms" end)' <<<"$last"
}

# run_reconcile_c WORKERS: one run of the C controller (bench_core), its
# row turned into the {"keys","ms"} line the other clients print.
run_reconcile_c() {
  local w=$1 out=$DIR/client.out err=$DIR/logs/reconcile-c-$1.err
  timeout -k 5 "$((TIMEOUT + 30))" "$CORE" --reconcile-keys "$KEYS" 2>"$err" |
    awk -F'|' -v w="$w" '$2 ~ ("trivial reconcile, " w " worker") {
      gsub(/ /, "", $3); gsub(/ /, "", $4); printf "{\"client\":\"kinformer-c\",\"keys\":%d,\"ms\":%.3f}\n", $3, $4 * 1000 }' \
      >"$out" || true
  record "reconcile-$w" kinformer-c "$out" "$err" "{\"workers\": $w}"
  tail -n 1 "$RESULTS" | jq -r '"    \(.label): " + (if .error then "ERROR \(.error)" else
      "\(.keys) reconciles in \(.ms | floor) ms (\(.keys / .ms * 1000 | floor)/s)" end)'
}

# run_reconcile LABEL WORKERS CMD...: one reconcile run.
run_reconcile() {
  local label=$1 workers=$2 out=$DIR/client.out err=$DIR/logs/reconcile-$1-$2.err
  shift 2
  timeout -k 5 "$((TIMEOUT + 30))" "$@" >"$out" 2>"$err" || true
  record "reconcile-$workers" "$label" "$out" "$err" "{\"workers\": $workers}"
  tail -n 1 "$RESULTS" | jq -r '"    \(.label): " + (if .error then "ERROR \(.error)" else
      "\(.keys) reconciles in \(.ms | floor) ms (\(.keys / .ms * 1000 | floor)/s)" end)'
}

echo "bench-lua: $( [ $quick = 1 ] && echo quick || echo full ) run, $REPEAT repeat(s); $OBJECTS ConfigMaps, bursts of $BURST updates, $KEYS reconciles"
echo "  kinformer: $LUA, $CPATH_DIR/kinformer/core.so"
bench_header

start_sim "$(seed configmaps "$OBJECTS")"
echo "  sim $URL"
echo "workload handler: on_update reads metadata.resourceVersion"
for ((r = 1; r <= REPEAT; r++)); do
  for l in $(alternate "$r" kinformer client-go); do
    case $l in
      kinformer)
        run_handler kinformer "$LUA" "$ROOT/bench/lua/handler_bench.lua" --kubeconfig "$KC" \
          --resource v1/configmaps --events "$BURST" --ready-file "$DIR/ready" --timeout "$TIMEOUT" ;;
      client-go)
        run_handler client-go "$REF" -read-field -kubeconfig "$KC" -resource v1/configmaps \
          -ready-file "$DIR/ready" -min-events "$((OBJECTS + BURST))" -timeout "${TIMEOUT}s" ;;
    esac
  done
done
for w in 1 2; do
  echo "workload reconcile: trivial, $w worker(s), $KEYS keys"
  for ((r = 1; r <= REPEAT; r++)); do
    for l in $(alternate "$r" kinformer kinformer-metrics kinformer-c client-go); do
      case $l in
        kinformer-c) run_reconcile_c "$w" ;;
        kinformer)
          run_reconcile kinformer "$w" "$LUA" "$ROOT/bench/lua/reconcile_bench.lua" --kubeconfig "$KC" \
            --keys "$KEYS" --workers "$w" --timeout "$TIMEOUT" ;;
        kinformer-metrics)
          run_reconcile kinformer-metrics "$w" "$LUA" "$ROOT/bench/lua/reconcile_bench.lua" --kubeconfig "$KC" \
            --keys "$KEYS" --workers "$w" --timeout "$TIMEOUT" --metrics 1 ;;
        client-go)
          run_reconcile client-go "$w" "$REF" -reconcile-keys "$KEYS" -reconcile-workers "$w" \
            -timeout "${TIMEOUT}s" ;;
      esac
    done
  done
done
stop_sim

# 3. The advised projection (issue 26): a cache of PODS Pods with a handler
# reading spec.nodeName, status.phase, status.conditions and a label, whole,
# then with the fields mgr:advise() gave for it. RSS after the handler saw
# every Pod, less the process's RSS before the manager, as the library
# leaves it.
start_sim "$(seed pods "$PODS")"
echo "workload advise: $PODS Pods, whole and with the advised fields (sim $URL)"
run_advise() {
  local label=$1 out=$DIR/client.out err=$DIR/logs/advise-$1.err
  shift
  timeout -k 5 "$((TIMEOUT + 30))" "$LUA" "$ROOT/bench/lua/advise_bench.lua" --kubeconfig "$KC" \
    --objects "$PODS" --timeout "$TIMEOUT" "$@" >"$out" 2>"$err" || true
  record advise "$label" "$out" "$err" '{}'
  tail -n 1 "$RESULTS" | jq -r '"    \(.label): " + (if .error or .rss_kib == null then "ERROR \(.error // "no result")" else
      "\(.objects) Pods, RSS \((.rss_kib - .base_rss_kib) / 1024 | floor) MiB over the base; fields \(.fields)" end)'
}
run_advise full
ADVISED=$(tail -n 1 "$RESULTS" | jq -r '.fields // ""')
if [ -n "$ADVISED" ]; then
  run_advise advised --fields "$ADVISED"
else
  echo "    advised: not run (no advice: the full run failed or read nothing)"
fi
stop_sim
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  raw results: $RESULTS"

# The table: medians per (workload, client) of the runs without error.
echo
jq -rs --argjson repeat "$REPEAT" --argjson burst "$BURST" --argjson keys "$KEYS" --argjson objects "$OBJECTS" \
  --argjson pods "$PODS" \
  "$BENCH_JQ"'
  def fmt($v): if $v == null then "n/a" else fixed($v; 0) end;
  def row($c): "| " + ($c[0] | pad(54)) + " | " + ($c[1] | lpad(9)) + " | " + ($c[2] | lpad(9)) +
               " | " + ($c[3] | lpad(6)) + " |";
  def ok($w; $l): map(select(.workload == $w and .label == $l and .error == null));
  def med($w; $l; f): ok($w; $l) | map(f) | median;
  (map(select(.error != null)) | length) as $errors
  | (map(select(.client == "client-go"))[0].client_go_version // "?") as $cgv
  | ["",
     "bench-lua: median of \($repeat) run(s) per client; kinformer = Lua 5.4 handler/reconciler in worker states; client-go \($cgv)",
     "ratio: kinformer/client-go rate (above 1: kinformer faster). handler: bursts of \($burst) updates to \($objects)",
     "ConfigMaps, timed from the burst request and from its return (commit done); reconcile: \($keys) keys per run.",
     (if $errors > 0 then "WARNING: \($errors) run(s) failed and are left out; see the raw results." else empty end),
     row(["workload", "kinformer", "client-go", "ratio"]),
     "|" + ("-" * 56) + "|" + ("-" * 11) + "|" + ("-" * 11) + "|" + ("-" * 8) + "|",
     ([{f: "eps_start", t: "burst start"}, {f: "eps_committed", t: "burst committed"}][] as $m
      | med("handler"; "kinformer"; .[$m.f]) as $k | med("handler"; "client-go"; .[$m.f]) as $c
      | row(["handler dispatch, events/s, from \($m.t)", fmt($k), fmt($c), ratio($k; $c)])),
     ([1, 2][] as $w | "reconcile-\($w)" as $wl
      | med($wl; "kinformer"; .keys / .ms * 1000) as $k | med($wl; "client-go"; .keys / .ms * 1000) as $c
      | row(["reconcile, trivial, \($w) worker\(if $w > 1 then "s" else "" end), reconciles/s", fmt($k), fmt($c), ratio($k; $c)])),
     "",
     "metrics on (a user counter per reconcile, /metrics served and scraped every 1 s) against off, kinformer both:",
     row(["workload", "on", "off", "ratio"]),
     "|" + ("-" * 56) + "|" + ("-" * 11) + "|" + ("-" * 11) + "|" + ("-" * 8) + "|",
     ([1, 2][] as $w | "reconcile-\($w)" as $wl
      | med($wl; "kinformer-metrics"; .keys / .ms * 1000) as $m | med($wl; "kinformer"; .keys / .ms * 1000) as $k
      | row(["reconcile, trivial, \($w) worker\(if $w > 1 then "s" else "" end), reconciles/s", fmt($m), fmt($k), ratio($m; $k)])),
     "",
     "no Lua on either end: a C thread enqueues, a C reconciler returns done (bench_core --reconcile-keys), against client-go:",
     row(["workload", "kinformer", "client-go", "ratio"]),
     "|" + ("-" * 56) + "|" + ("-" * 11) + "|" + ("-" * 11) + "|" + ("-" * 8) + "|",
     ([1, 2][] as $w | "reconcile-\($w)" as $wl
      | med($wl; "kinformer-c"; .keys / .ms * 1000) as $k | med($wl; "client-go"; .keys / .ms * 1000) as $c
      | row(["reconcile, trivial, C, \($w) worker\(if $w > 1 then "s" else "" end), reconciles/s", fmt($k), fmt($c), ratio($k; $c)])),
     "",
     "targets (issues 16 and 26; handler rates from the burst committed, end to end):",
     (med("handler"; "kinformer"; .eps_committed) as $k | med("handler"; "client-go"; .eps_committed) as $c
      | target("lua_on_update_one_field_per_s"; (if $k == null then null else $k / 1000 end); 400; ">="; "k"),
        target("lua_on_update_vs_client_go"; (if $k == null or $c == null or $c == 0 then null else $k / $c end); 8; ">="; "x")),
     ([1, 2][] as $w | "reconcile-\($w)" as $wl
      | med($wl; "kinformer"; .keys / .ms * 1000) as $k | med($wl; "client-go"; .keys / .ms * 1000) as $c
      | target("reconcile_trivial_\($w)_worker\(if $w > 1 then "s" else "" end)_vs_client_go";
               (if $k == null or $c == null or $c == 0 then null else $k / $c end); 1.5; ">="; "x")),
     (med("advise"; "full"; .rss_kib - .base_rss_kib) as $f | med("advise"; "advised"; .rss_kib - .base_rss_kib) as $p
      | "advise: \($pods) Pods, RSS over the base: whole \(if $f then fixed($f / 1024; 1) else "n/a" end) MiB, with the advised fields \(if $p then fixed($p / 1024; 1) else "n/a" end) MiB (\(ok("advise"; "full")[0].fields // "no advice"))",
        target("projection_100k_pods_rss_vs_full"; (if $f == null or $p == null or $f == 0 then null else $p / $f end); 0.3; "<="; "x")
        + (if $pods != 100000 then " (\($pods) Pods in this run)" else "" end))
    ] | .[]
' "$RESULTS"
