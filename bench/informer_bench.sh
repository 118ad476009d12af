#!/usr/bin/env bash
# make bench-informer: kinformer's shared informer (build/release/bench-informer,
# bench/informer_bench.c) against client-go's (kinformer-ref-informer,
# bench/reference/client-go), both against the same kinformer-sim.
#
# Per workload one sim is started on a free port with a generated seed
# (bench/informer_seed.c); then, BENCH_REPEAT times, each client runs alone
# as its own process (so RSS is per process), in alternating order:
#   1. it lists and watches; once its handler has had the whole initial list
#      it records synced_ms and RSS and creates its ready file;
#   2. the script then asks the sim for a burst of BURST updates
#      (POST /kinformer-sim/burst: committed in-process under the store lock,
#      so the watch sends them back to back at replay speed and the client,
#      not a writer, is the bottleneck);
#   3. the client's handler stamps the first update and the one reaching
#      objects + BURST events: watch events/s = BURST / that time.
# Clients take turns on one sim rather than sharing a burst: on 2 cores two
# clients decoding at once would measure each other.
#
# Usage: bench/informer_bench.sh [--quick]
#   --quick        2k ConfigMaps, 1k Pods, bursts of 1000, 1 repeat (CI)
#   BENCH_REPEAT   repeats per measurement (median), default 3 (--quick: 1)
#   BENCH_BURST    updates per burst, default 10000 (--quick: 1000)
#   BENCH_KIN_ARGS extra flags for bench-informer (e.g. -watch-list)
#   BENCH_DIR      seeds, logs and results.jsonl, default build/bench-informer
# Binaries: KINFORMER_SIM, KINFORMER_BENCH, KINFORMER_SEED (default
# build/release/...), KINFORMER_REF (default the e2e cache's).
set -euo pipefail
BENCH_NAME=bench-informer
. "$(dirname "$0")/lib.sh" # sets ROOT, sources spec/e2e/lib.sh
e2e_need jq:jq
bench_args "$@"

SIM=${KINFORMER_SIM:-$ROOT/build/release/kinformer-sim}
KIN=${KINFORMER_BENCH:-$ROOT/build/release/bench-informer}
SEEDGEN=${KINFORMER_SEED:-$ROOT/build/release/bench-informer-seed}
REF=${KINFORMER_REF:-$E2E_BIN/kinformer-ref-informer}
DIR=${BENCH_DIR:-$ROOT/build/bench-informer}
for b in "$SIM" "$KIN" "$SEEDGEN" "$REF"; do
  [ -x "$b" ] || { echo "bench-informer: $b is missing (make bench-informer builds it)" >&2; exit 1; }
done

if [ $quick = 1 ]; then
  REPEAT=${BENCH_REPEAT:-1}
  BURST=${BENCH_BURST:-1000}
  TIMEOUT=120s
  # name kind count
  WORKLOADS=("cm-2k configmaps 2000" "pods-1k pods 1000")
else
  REPEAT=${BENCH_REPEAT:-3}
  BURST=${BENCH_BURST:-10000}
  TIMEOUT=300s
  WORKLOADS=("cm-10k configmaps 10000" "cm-100k configmaps 100000" "pods-10k pods 10000")
fi
KIN_EXTRA=()
[ -n "${BENCH_KIN_ARGS:-}" ] && read -r -a KIN_EXTRA <<<"$BENCH_KIN_ARGS"
mkdir -p "$DIR/seeds" "$DIR/logs"
RESULTS=$DIR/results.jsonl
: >"$RESULTS"

bench_traps

now_s() { date +%s.%N; }
# since T0: seconds elapsed, two decimals
since() { awk -v a="$(now_s)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }

# start_timed SEED: start_sim (bench/lib.sh), saying how long seeding took.
start_timed() {
  local t0
  t0=$(now_s)
  start_sim "$1"
  echo "  sim $URL seeded in $(since "$t0") s"
}

# obj_sizes RESOURCE: {"obj_bytes","mf_bytes"} of the first object served.
obj_sizes() {
  curl -sf "$URL/api/${1}?limit=1" |
    jq -c '.items[0] | {obj_bytes: (tojson | length), mf_bytes: (.metadata.managedFields // [] | if length > 0 then tojson | length else 0 end)}'
}

# run_client WORKLOAD LABEL RESOURCE OBJECTS CMD...: one run; appends
# {"workload","label",...client JSON} to results.jsonl.
run_client() {
  local wl=$1 label=$2 resource=$3 objects=$4
  shift 4
  local ready=$DIR/ready out=$DIR/client.out err=$DIR/logs/$wl-$label.err line t0 burst_s=0
  rm -f "$ready"
  "$@" -kubeconfig "$KC" -resource "$resource" -ready-file "$ready" \
    -min-events "$((objects + BURST))" -timeout "$TIMEOUT" >"$out" 2>"$err" &
  CLIENT_PID=$!
  while [ ! -e "$ready" ] && kill -0 "$CLIENT_PID" 2>/dev/null; do sleep 0.01; done
  if [ -e "$ready" ]; then
    t0=$(now_s)
    curl -sf -XPOST "$URL/kinformer-sim/burst" \
      -d "{\"resource\":\"$resource\",\"count\":$BURST}" >"$DIR/burst.out" ||
      echo "bench-informer: burst failed: $(cat "$DIR/burst.out")" >&2
    burst_s=$(since "$t0")
  fi
  wait "$CLIENT_PID" || true
  CLIENT_PID=""
  line=$(tail -n 1 "$out")
  if ! jq -e . >/dev/null 2>&1 <<<"$line"; then
    line="{\"error\":\"no JSON line (see $err)\"}"
  fi
  jq -c --arg w "$wl" --arg l "$label" --argjson n "$objects" --argjson sz "$SIZES" \
    '. + {workload: $w, label: $l, expected_objects: $n} + $sz
       | if (.error == null and .objects != $n) then .error = "objects \(.objects), expected \($n)" else . end' \
    <<<"$line" >>"$RESULTS"
  jq -r --arg b "$burst_s" '"    \(.label): " + (if .error then "ERROR \(.error)" else
           "synced \(.synced_ms) ms, rss \(.rss_kib) KiB, watch \(.watch_events) in \(.watch_ms) ms (sim burst \($b) s)" end)' \
    <<<"$(tail -n 1 "$RESULTS")"
}

echo "bench-informer: $( [ $quick = 1 ] && echo quick || echo full ) run, $REPEAT repeat(s), bursts of $BURST updates"
echo "  kinformer: $KIN ${BENCH_KIN_ARGS:-}"
bench_header
for w in "${WORKLOADS[@]}"; do
  read -r wl kind count <<<"$w"
  echo "workload $wl: $count $kind"
  start_timed "$(seed "$kind" "$count")"
  SIZES=$(obj_sizes "v1/$kind")
  labels=(kinformer client-go)
  [ "$kind" = pods ] && labels+=(client-go-drop-mf)
  for ((r = 1; r <= REPEAT; r++)); do
    for l in $(alternate "$r" "${labels[@]}"); do
      case $l in
        kinformer) cmd=("$KIN" "${KIN_EXTRA[@]}") ;;
        client-go) cmd=("$REF") ;;
        client-go-drop-mf) cmd=("$REF" -drop-managed-fields) ;;
      esac
      run_client "$wl" "$l" "v1/$kind" "$count" "${cmd[@]}"
    done
  done
  stop_sim
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  raw results: $RESULTS"

# The table: medians per (workload, client) of the runs without error.
echo
jq -rs --argjson repeat "$REPEAT" --argjson burst "$BURST" "$BENCH_JQ"'
  def stats($rs): {
    synced: ($rs | map(.synced_ms) | median),
    rss: ($rs | map(.rss_kib / 1024) | median),
    eps: ($rs | map(select(.watch_ms > 0) | .watch_events / .watch_ms * 1000) | median),
    n: ($rs | length)
  };
  def fmt($v; $d): if $v == null then "n/a" else fixed($v; $d) end;
  def kb($b): fixed($b / 1024; 1) + " KB";
  def row($c): "| " + ($c[0] | pad(48)) + " | " + ($c[1] | pad(19)) + " | " + ($c[2] | lpad(9)) +
               " | " + ($c[3] | lpad(9)) + " | " + ($c[4] | lpad(6)) + " |";
  (map(select(.error != null)) | length) as $errors
  | (group_by(.workload) | map({w: .[0].workload, n: .[0].expected_objects, kind: .[0].resource,
       size: .[0].obj_bytes, mf: .[0].mf_bytes,
       by: (group_by(.label) | map({key: .[0].label, value: stats(map(select(.error == null)))}) | from_entries)})) as $ws
  | ["",
     "informer benchmark: median of \($repeat) run(s) per client; watch = a burst of \($burst) updates; client-go \(map(select(.client == "client-go"))[0].client_go_version // "?")",
     "ratio: synced = client-go/kinformer time and watch = kinformer/client-go events/s (above 1: kinformer faster);",
     "       RSS = kinformer/client-go (below 1: kinformer smaller). Sizes: one object as served, and its",
     "       metadata.managedFields (mF), which kinformer drops by default; client-go keeps it unless told (SetTransform).",
     (if $errors > 0 then "WARNING: \($errors) run(s) failed and are left out; see the raw results." else empty end),
     row(["workload", "measure", "kinformer", "client-go", "ratio"]),
     "|" + ("-" * 50) + "|" + ("-" * 21) + "|" + ("-" * 11) + "|" + ("-" * 11) + "|" + ("-" * 8) + "|",
     ($ws | sort_by(.kind, .n)[] as $w
      | ($w.kind | sub("v1/"; "") | if . == "configmaps" then "ConfigMaps" else "Pods" end) as $k
      | ($w.n | if . >= 1000 then "\(. / 1000 | floor)k" else tostring end) as $count
      | (" (" + kb($w.size) + (if $w.mf > 0 then ", " + kb($w.mf) + " mF" else "" end) + ")") as $sz
      | (if $k == "Pods" then [{cg: "client-go-drop-mf", note: "\($sz), client-go drops mF"},
                               {cg: "client-go", note: "\($sz), client-go keeps mF"}]
         else [{cg: "client-go", note: $sz}] end)[] as $v
      | $w.by.kinformer as $kin | ($w.by[$v.cg] // {}) as $cg
      | (row(["\($k) \($count)\($v.note)", "synced, ms", fmt($kin.synced; 1), fmt($cg.synced; 1), ratio($cg.synced; $kin.synced)]),
         row(["\($k) \($count)\($v.note)", "RSS after sync, MiB", fmt($kin.rss; 1), fmt($cg.rss; 1), ratio($kin.rss; $cg.rss)]),
         row(["\($k) \($count)\($v.note)", "watch, events/s", fmt($kin.eps; 0), fmt($cg.eps; 0), ratio($kin.eps; $cg.eps)])))
    ] | .[]
' "$RESULTS"
