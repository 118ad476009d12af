#!/usr/bin/env bash
# sim_rss.sh -- the RSS a kinformer-sim holds per stored object, beside the
# object's JSON size: seeds N ConfigMaps of about 1 KB (data of one 900-byte
# value) through a seed file, waits for the server (and its controllers) to
# settle, and prints
#   sim-rss: objects=N json_bytes_per_object=J rss_per_object=R ratio=R/J
# where R = (VmRSS with the objects - VmRSS of an empty server) / N.
#
#   bench/sim_rss.sh [SIM] [N]     (SIM: build/release/kinformer-sim, N: 100000)
#
# Used by make bench-sim-rss; SIM can be another build of kinformer-sim
# (an older one, to compare).
set -euo pipefail
sim=${1:-build/release/kinformer-sim}
n=${2:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$n" > "$tmp/seed.jsonl" <<'PY'
import json, sys
n = int(sys.argv[1])
val = "x" * 900
for i in range(n):
    print(json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "cm-%07d" % i, "namespace": "default",
                                   "labels": {"app": "bench", "shard": str(i % 16)}},
                      "data": {"value": val}}, separators=(",", ":")))
PY
echo '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","namespace":"default"},"data":{}}' > "$tmp/empty.jsonl"

# rss_of SEED: starts the sim on SEED, waits until it serves and its RSS
# stops growing, prints VmRSS in KiB and the JSON size of one served object.
rss_of() {
  # shellcheck disable=SC2086
  "$sim" --port 0 --seed "$1" ${SIM_ARGS:-} > "$tmp/url" &
  sim_pid=$!
  # rss_of runs in a subshell (< <(...)): its own trap stops its sim
  trap 'kill "$sim_pid" 2>/dev/null || true' EXIT
  local url=""
  for _ in $(seq 600); do
    url=$(head -n1 "$tmp/url" 2>/dev/null || true)
    [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || { echo "sim_rss.sh: $sim did not start" >&2; exit 1; }
  local last=0 cur
  for _ in $(seq 50); do
    cur=$(awk '/^VmRSS/{print $2}' "/proc/$sim_pid/status")
    [[ $cur == "$last" ]] && break
    last=$cur
    sleep 0.2
  done
  local size
  size=$(curl -sf "$url/api/v1/namespaces/default/configmaps/$2" | tr -d '\n' | wc -c)
  echo "$cur $size"
  kill "$sim_pid"
  wait "$sim_pid" 2>/dev/null || true
}

read -r base _ < <(rss_of "$tmp/empty.jsonl" one)
read -r full size < <(rss_of "$tmp/seed.jsonl" cm-0000001)
awk -v n="$n" -v b="$base" -v f="$full" -v s="$size" 'BEGIN {
  r = (f - b) * 1024 / n
  printf "sim-rss: objects=%d json_bytes_per_object=%d rss_per_object=%.0f ratio=%.2f\n", n, s, r, r / s
}'
