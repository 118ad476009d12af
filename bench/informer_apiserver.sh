#!/usr/bin/env bash
# bench-informer's kube-apiserver rows (make bench-informer runs it after
# the sim rows): kinformer's shared informer (build/release/bench-informer)
# against client-go's (kinformer-ref-informer) on a real kube-apiserver
# v1.36.3 from the e2e tier (spec/e2e/cluster.sh; etcd on tmpfs, no
# controller-manager), where the server's encoding is what it costs.
#
# Per workload the objects are created through the API
# (bench/apiserver_seed.py, from the same seed files as the sim rows), then
# each client runs alone, REPEAT times in alternating order, and exits once
# synced. Per run: the client's time to synced, its CPU to synced, its RSS,
# and kube-apiserver's CPU over the run (its /proc stat before the client
# starts and after it exits). Clients:
#   kin        kinformer's defaults: LIST, protobuf (built-in type)
#   kin-wl     kinformer WatchList, protobuf
#   kin-json   kinformer LIST asking for JSON (-content-type json)
#   cg         client-go's typed informer, LIST (KUBE_FEATURE_WatchListClient=false)
#   cg-wl      client-go's typed informer, WatchList (its default)
#   cg-dyn     client-go's dynamic informer (JSON), LIST
# For Pods client-go drops managedFields as kinformer does by default.
#
# Usage: bench/informer_apiserver.sh [--quick]   (--quick: 2k ConfigMaps, 1 run)
#   BENCH_REPEAT   runs per client (median), default 3 (--quick: 1)
#   BENCH_APISERVER_WORKLOADS "name kind count;..." replaces the workloads
set -euo pipefail
BENCH_NAME=bench-informer
. "$(dirname "$0")/lib.sh"
bench_args "$@"
e2e_need jq:jq python3:python3

KIN=${KINFORMER_BENCH:-$ROOT/build/release/bench-informer}
SEEDGEN=${KINFORMER_SEED:-$ROOT/build/release/bench-informer-seed}
REF=${KINFORMER_REF:-$E2E_BIN/kinformer-ref-informer}
DIR=${BENCH_DIR:-$ROOT/build/bench-informer}
for b in "$KIN" "$SEEDGEN" "$REF"; do
  [ -x "$b" ] || { echo "bench-informer: $b is missing (make bench-informer builds it)" >&2; exit 1; }
done
mkdir -p "$DIR/seeds" "$DIR/logs"

if [ -z "${KINFORMER_E2E_SERVER:-}" ]; then
  # a control plane of our own, stopped when this script ends
  [ -x "$E2E_BIN/kube-apiserver" ] || spec/e2e/build.sh core >/dev/null
  KINFORMER_E2E_CONTROLLERS=none exec "$ROOT/spec/e2e/cluster.sh" run "$0" "$@"
fi

if [ $quick = 1 ]; then
  REPEAT=${BENCH_REPEAT:-1}
  WORKLOADS=("cm-2k configmaps 2000")
else
  REPEAT=${BENCH_REPEAT:-3}
  WORKLOADS=("cm-20k configmaps 20000" "cm-100k configmaps 100000" "pods-10k pods 10000")
fi
[ -n "${BENCH_APISERVER_WORKLOADS:-}" ] && IFS=';' read -r -a WORKLOADS <<<"$BENCH_APISERVER_WORKLOADS"
RESULTS=$DIR/apiserver.jsonl
: >"$RESULTS"
KC=$KINFORMER_E2E_ADMIN_KUBECONFIG
APISERVER_PID=$(cat "$KINFORMER_E2E_DIR/kube-apiserver.pid")
TICK=$(getconf CLK_TCK)
bench_traps

# cpu_of PID: user+system CPU seconds of a process so far.
cpu_of() { awk -v t="$TICK" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$1/stat"; }

client_cmd() {
  CENV=()
  case $1 in
    kin) CMD=("$KIN") ;;
    kin-wl) CMD=("$KIN" -watch-list) ;;
    kin-json) CMD=("$KIN" -content-type json) ;;
    cg) CMD=("$REF"); CENV=(KUBE_FEATURE_WatchListClient=false) ;;
    cg-wl) CMD=("$REF"); CENV=(KUBE_FEATURE_WatchListClient=true) ;;
    cg-dyn) CMD=("$REF" -client dynamic); CENV=(KUBE_FEATURE_WatchListClient=false) ;;
  esac
  case $1 in cg*) [ "$2" = pods ] && CMD+=(-drop-managed-fields) ;; esac
  return 0
}

run_client() {
  local wl=$1 label=$2 kind=$3 n=$4 out=$DIR/apiserver-client.out err=$DIR/logs/apiserver-$1-$2.err s0 s1 line
  client_cmd "$label" "$kind"
  s0=$(cpu_of "$APISERVER_PID")
  env "${CENV[@]}" "${CMD[@]}" -kubeconfig "$KC" -resource "v1/$kind" -timeout 300s >"$out" 2>"$err" || true
  s1=$(cpu_of "$APISERVER_PID")
  line=$(tail -n 1 "$out")
  jq -e . >/dev/null 2>&1 <<<"$line" || line="{\"error\":\"no JSON line (see $err)\"}"
  jq -c --arg w "$wl" --arg l "$label" --argjson n "$n" --argjson s "$(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.3f", b - a }')" \
    '. + {workload: $w, label: $l, expected_objects: $n, server_cpu_s: $s}
     | if (.error == null and .objects != $n) then .error = "objects \(.objects), expected \($n)" else . end' \
    <<<"$line" >>"$RESULTS"
  jq -r '"    \(.label): " + (if .error then "ERROR \(.error)" else
         "synced \(.synced_ms) ms, cpu \(.cpu_sync_s) s, kube-apiserver cpu \(.server_cpu_s) s, rss \(.rss_kib) KiB" +
         (if .encoding then ", \(.encoding)" else "" end) end)' <<<"$(tail -n 1 "$RESULTS")"
}

echo
echo "bench-informer on kube-apiserver $KINFORMER_E2E_K8S_VERSION ($KINFORMER_E2E_SERVER): $REPEAT run(s) per client"
for w in "${WORKLOADS[@]}"; do
  read -r wl kind count <<<"$w"
  seedf=$DIR/seeds/$kind-$count.jsonl
  [ -s "$seedf" ] && [ "$seedf" -nt "$SEEDGEN" ] || "$SEEDGEN" "$kind" "$count" >"$seedf"
  # the server's own objects of the kind (kube-system's ConfigMaps) are listed too
  base=$("$KINFORMER_E2E_KUBECTL" --kubeconfig "$KC" get "$kind" -A --no-headers 2>/dev/null | grep -vc '^bench-' || true)
  echo "workload $wl: $count $kind ($(python3 "$ROOT/bench/apiserver_seed.py" "$seedf" "$kind"), $base of the server's own)"
  count=$((count + base))
  labels=(kin kin-wl kin-json cg cg-wl cg-dyn)
  for ((r = 1; r <= REPEAT; r++)); do
    for l in $(alternate "$r" "${labels[@]}"); do run_client "$wl" "$l" "$kind" "$count"; done
  done
done
echo "  load after: $(cut -d' ' -f1-3 /proc/loadavg)"

jq -rs --argjson repeat "$REPEAT" "$BENCH_JQ"'
  def st($rs): {synced: ($rs | map(.synced_ms) | median), cpu: ($rs | map(.cpu_sync_s) | median),
                server: ($rs | map(.server_cpu_s) | median),
                rss: ($rs | map(if .client == "kinformer" then .rss_kib else .rss_gc_kib end / 1024) | median),
                n: ($rs | length)};
  def q($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
  def fmt($v; $d): if $v == null then "n/a" else fixed($v; $d) end;
  (group_by(.workload) | map({w: .[0].workload, n: .[0].expected_objects, kind: .[0].resource,
     by: (group_by(.label) | map({key: .[0].label, value: st(map(select(.error == null)))}) | from_entries)})) as $ws
  | (map(select(.error != null)) | length) as $errors
  | ["",
     "kube-apiserver rows: median of \($repeat) run(s); each client alone; kube-apiserver CPU over the client'"'"'s run.",
     "kinformer: protobuf (its default for built-in types) unless the row says JSON; RSS as the library leaves it",
     "(no trim); client-go: typed (protobuf) or dynamic (JSON), RSS after GC.",
     (if $errors > 0 then "WARNING: \($errors) run(s) failed and are left out; see the raw results." else empty end),
     "| workload | client | synced, ms | client CPU, s | kube-apiserver CPU, s | RSS, MiB |",
     "|---|---|---|---|---|---|",
     ($ws | sort_by(.kind, .n)[] as $w | ["kin", "kin-wl", "kin-json", "cg", "cg-wl", "cg-dyn"][] as $l
      | ($w.by[$l] // {}) as $s
      | "| \($w.w) | \($l) | \(fmt($s.synced; 1)) | \(fmt($s.cpu; 2)) | \(fmt($s.server; 2)) | \(fmt($s.rss; 1)) |"),
     "",
     (($ws | map(select(.kind == "v1/configmaps")) | sort_by(.n)) as $cms
      | ($cms | map(select(.n >= 20000 and .n < 21000)) | .[0] // ($cms | .[0])) as $s20
      | ($cms | map(select(.n >= 100000 and .n < 101000)) | .[0]) as $s100
      | def sync($w): if $w == null then null else q($w.by.kin.synced; $w.by.cg.synced) end;
        def tot($w; $k): if $w == null or $w.by[$k].cpu == null then null else $w.by[$k].cpu + $w.by[$k].server end;
        "targets (kube-apiserver; kinformer LIST protobuf vs client-go typed LIST):",
        (if $s20 == null then "target: sync_vs_client_go_kube_apiserver_20k now=not-run goal=<=0.8x met=no (no ConfigMap workload)"
         elif $s20.n < 20000 or $s20.n >= 21000 then "target: sync_vs_client_go_kube_apiserver_20k now=not-run goal=<=0.8x met=no (quick: \($s20.n) ConfigMaps gave \(fmt(sync($s20); 2))x)"
         else target("sync_vs_client_go_kube_apiserver_20k"; sync($s20); 0.8; "<="; "x") end),
        (if $s100 == null then "target: sync_vs_client_go_kube_apiserver_100k now=not-run goal=<=0.8x met=no (full run only)"
         else target("sync_vs_client_go_kube_apiserver_100k"; sync($s100); 0.8; "<="; "x") end),
        (($s100 // $s20) as $b | if $b == null then "target: cpu_client_server_vs_client_go_kube_apiserver now=not-run goal=<=0.7x met=no"
         else target("cpu_client_server_vs_client_go_kube_apiserver"; q(tot($b; "kin"); tot($b; "cg")); 0.7; "<="; "x") end))
    ] | .[]
' "$RESULTS"
