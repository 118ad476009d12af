# bench/lib.sh -- what the client-go comparison benchmarks
# (bench/informer_bench.sh, bench/lua_bench.sh) share; sourced, not run.
#
# Before sourcing, the script sets BENCH_NAME (its name in messages); before
# calling the functions, DIR (seeds, logs, results), SIM, SEEDGEN and BURST.
# It sets ROOT (the repository), sources spec/e2e/lib.sh (e2e_need, E2E_BIN,
# K8S_VERSION) and provides:
#   bench_args "$@"     --quick or nothing; sets quick=0|1, exits 2 on others
#   bench_traps         kills CLIENT_PID and SIM_PID on exit
#   seed KIND COUNT     path of a seed file, generated when missing or stale
#   start_sim SEED      a sim on a free port; sets SIM_PID, URL, KC
#   stop_sim            stops it
#   alternate R ITEMS   ITEMS one a line, reversed on even repeats R
#   bench_header        the lines naming client-go and the load
#   BENCH_JQ            jq definitions for the tables: median, fixed($v; $d),
#                       ratio($a; $b), pad($n), lpad($n), target(...)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$ROOT/spec/e2e/lib.sh"

bench_args() {
  quick=0
  local a
  for a in "$@"; do
    case $a in
      --quick) quick=1 ;;
      *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
    esac
  done
}

SIM_PID=""
CLIENT_PID=""
bench_cleanup() {
  [ -n "$CLIENT_PID" ] && kill "$CLIENT_PID" 2>/dev/null || true
  [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null || true
}
bench_traps() {
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

# seed KIND COUNT: path of the seed file, generated when missing or older
# than the generator.
seed() {
  local f=$DIR/seeds/$1-$2.jsonl
  if [ ! -s "$f" ] || [ "$SEEDGEN" -nt "$f" ]; then
    "$SEEDGEN" "$1" "$2" >"$f.tmp" && mv "$f.tmp" "$f"
  fi
  echo "$f"
}

# start_sim SEED: starts a sim on a free port; sets SIM_PID, URL, KC.
start_sim() {
  local seedf=$1 out=$DIR/sim.url
  KC=$DIR/kubeconfig.yaml
  rm -f "$out"
  # The history holds one burst beyond the client's list (a burst is
  # refused when larger than the history).
  # --watch-cache-lists: a resourceVersion=0 list comes back whole, as from
  # kube-apiserver's watch cache (the sim pages it by default).
  # --controllers=none: an API server alone, as the clients are measured
  # against (no scheduler or kubelet writing the seeded pods meanwhile).
  # --pre-encode: each object's protobuf bytes made once at its commit, so a
  # protobuf client is not timing the sim's encoder (BENCH_PRE_ENCODE=0:
  # encoded per request, as before issue 26).
  local pre=()
  [ "${BENCH_PRE_ENCODE:-1}" = 1 ] && pre=(--pre-encode)
  # BENCH_SIM_FLAGS: more flags (space-separated), e.g. a feature gate
  local more=()
  read -r -a more <<<"${BENCH_SIM_FLAGS:-}"
  "$SIM" --port 0 --seed "$seedf" --kubeconfig "$KC" --history "$((BURST > 10000 ? BURST : 10000))" \
    --watch-cache-lists --controllers=none "${pre[@]}" "${more[@]}" \
    >"$out" 2>"$DIR/logs/sim.err" &
  SIM_PID=$!
  until [ -s "$out" ]; do
    kill -0 "$SIM_PID" 2>/dev/null || { echo "$BENCH_NAME: the sim died:" >&2; cat "$DIR/logs/sim.err" >&2; exit 1; }
    sleep 0.05
  done
  URL=$(head -1 "$out")
}

stop_sim() {
  kill "$SIM_PID" 2>/dev/null || true
  wait "$SIM_PID" 2>/dev/null || true
  SIM_PID=""
}

# alternate R ITEMS...: ITEMS one a line, reversed on even repeats, so that
# no client always runs on a fresher sim.
alternate() {
  local r=$1 i
  shift
  local items=("$@")
  if ((r % 2 == 0)); then
    for ((i = ${#items[@]} - 1; i >= 0; i--)); do echo "${items[i]}"; done
  else
    printf '%s\n' "${items[@]}"
  fi
}

# bench_header: client-go's version and the load before the runs.
bench_header() {
  echo "  client-go: $REF (k8s.io/client-go v0.${K8S_VERSION#v1.})"
  echo "  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# jq definitions shared by the tables (jq has no printf).
BENCH_JQ='
  def median: sort | length as $n | if $n == 0 then null
    elif $n % 2 == 1 then .[($n - 1) / 2] else (.[$n / 2 - 1] + .[$n / 2]) / 2 end;
  # fixed $d decimals
  def fixed($v; $d): ($v * pow(10; $d) | round) as $i | pow(10; $d) as $p
    | if $d == 0 then "\($i)" else "\($i / $p | floor).\(($i % $p) + $p | tostring | .[1:])" end;
  def ratio($a; $b): if $a == null or $b == null or $b == 0 then "n/a" else fixed($a / $b; 2) + "x" end;
  def pad($n): tostring | if length >= $n then . else . + (" " * ($n - length)) end;
  def lpad($n): tostring | if length >= $n then . else (" " * ($n - length)) + . end;
  # target($name; $now; $goal; "<=" or ">="; $unit): the line
  # "target: NAME now=VALUE goal=VALUE met=yes|no" (met=no when not measured)
  def target($name; $now; $goal; $op; $unit):
    "target: \($name) now=" + (if $now == null then "n/a" else fixed($now; 2) + $unit end) +
    " goal=\($op)\($goal)\($unit) met=" +
    (if $now == null then "no" elif $op == "<=" then (if $now <= $goal then "yes" else "no" end)
     else (if $now >= $goal then "yes" else "no" end) end);
'
