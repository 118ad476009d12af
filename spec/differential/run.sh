#!/usr/bin/env bash
# Differential run: replays spec/differential/scenarios/*.json against the
# real kube-apiserver of $KINFORMER_E2E_DIR (client certificate) and against
# a fresh kinformer-sim (bearer token), then compares the normalised answers
# (run.lua compare). Without a cluster it runs itself inside cluster.sh run.
# The real server's answers to a scenario marked "controllers": true are
# recorded with kube-controller-manager running, the others' with it
# stopped (spec/e2e/cluster.sh kcm stop|start). The sim runs the
# controllers that ran beside the real server when the reference was
# recorded (--controllers, when the binary takes it); a scenario's
# "sim_flags" start it with more flags (one sim per distinct set, e.g.
# --authorization-mode RBAC for the rbac scenario).
# Last line: `N passed, M failed` (steps); exit 1 when a step failed.
#
# With DIFF_REFERENCE=DIR the real server is not contacted: the sim is
# compared with the real server's recording kept in DIR (make test uses
# spec/differential/golden, refreshed by make differential-golden).
#
# Usage: spec/differential/run.sh [SCENARIO.json ...]
#   KINFORMER_SIM   the sim binary (default build/release/kinformer-sim)
#   DIFF_KEEP=DIR   keep the recordings in DIR (default: a temp dir, removed)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
REF=${DIFF_REFERENCE:-}
if [ -z "$REF" ] && [ -z "${KINFORMER_E2E_DIR:-}" ]; then
  exec "$ROOT/spec/e2e/cluster.sh" run "$HERE/run.sh" "$@"
fi
SIM_BIN=${KINFORMER_SIM:-$ROOT/build/release/kinformer-sim}
[ -x "$SIM_BIN" ] || { echo "differential: $SIM_BIN missing (make sim)"; exit 2; }
OUT=${DIFF_KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/kinformer-diff.XXXXXX")}
mkdir -p "$OUT"
SIM_PID=
cleanup() {
  [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
  [ -z "${DIFF_KEEP:-}" ] && rm -rf "$OUT"
}
trap cleanup EXIT

TOKEN=kinformer-differential
[ $# -gt 0 ] || set -- "$HERE"/scenarios/*.json
# The sim runs the controllers the reference recording was made under
# (kube-controller-manager's --controllers on the real side, spec/e2e/cluster.sh:
# KINFORMER_E2E_CONTROLLERS; a recording that names none was made against a
# bare kube-apiserver: --controllers none), plus the scenario's sim_flags.
SIM_HELP=$("$SIM_BIN" --help 2>&1)

# start_sim FLAG...: a fresh sim with FLAG..., its URL in
# SIM_URL; a flag the binary does not name in --help is left out, with a
# note (the scenario that asked for it then shows what the sim does without).
start_sim() {
  local flags=() f n=$((++SIM_N))
  while [ $# -gt 0 ]; do
    f=$1; shift
    if grep -q -- "${f%%=*}" <<<"$SIM_HELP"; then
      flags+=("$f")
      if [ "${f#*=}" = "$f" ] && [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then flags+=("$1"); shift; fi
    else
      echo "differential: $SIM_BIN takes no ${f%%=*}: started without ${f%%=*}${1:+ $1}"
      if [ "${f#*=}" = "$f" ] && [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then shift; fi
    fi
  done
  SIM_FLAGS=${flags[*]}
  "$SIM_BIN" --port 0 --token "$TOKEN" --kubeconfig "$OUT/sim$n.kubeconfig" "${flags[@]}" \
    >"$OUT/sim$n.log" 2>&1 &
  SIM_PID=$!
  SIM_URL=
  for _ in $(seq 1 50); do
    SIM_URL=$(grep -o 'http://[0-9.:]*' "$OUT/sim$n.log" | head -1)
    [ -n "$SIM_URL" ] && break
    sleep 0.1
  done
  [ -n "$SIM_URL" ] || { echo "differential: the sim did not start:"; cat "$OUT/sim$n.log"; exit 2; }
}

stop_sim() {
  [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
  SIM_PID=
}

SIM_N=0
if [ -n "$REF" ]; then
  echo "differential: recorded real server in $REF"
else
  # The API server's scenarios are recorded with kube-controller-manager
  # stopped (its writes would race with theirs), those marked
  # "controllers": true with it running again.
  plain=() withctl=()
  for f in "$@"; do
    if grep -q '"controllers": *true' "$f"; then withctl+=("$f"); else plain+=("$f"); fi
  done
  record_real() {
    lua5.4 "$HERE/run.lua" record --server "$KINFORMER_E2E_SERVER" --cacert "$KINFORMER_E2E_CA" \
      --cert "$KINFORMER_E2E_ADMIN_CERT" --key "$KINFORMER_E2E_ADMIN_KEY" --out "$OUT/real" "$@" >/dev/null || exit 2
  }
  if [ ${#plain[@]} -gt 0 ]; then
    "$ROOT/spec/e2e/cluster.sh" kcm stop "$KINFORMER_E2E_DIR" || exit 2
    echo "differential: real $KINFORMER_E2E_SERVER without controllers for ${#plain[@]} scenario(s)"
    record_real --controllers none "${plain[@]}"
  fi
  if [ ${#withctl[@]} -gt 0 ]; then
    "$ROOT/spec/e2e/cluster.sh" kcm start "$KINFORMER_E2E_DIR" || exit 2
    echo "differential: real $KINFORMER_E2E_SERVER with controllers ${KINFORMER_E2E_CONTROLLERS:-none} for ${#withctl[@]} scenario(s)"
    record_real --controllers "${KINFORMER_E2E_CONTROLLERS:-none}" "${withctl[@]}"
  fi
  REF="$OUT/real"
fi
# One sim per distinct set of flags (controllers of the reference, sim_flags).
declare -A BY_FLAGS=()
ORDER=()
for f in "$@"; do
  key=flags:$(lua5.4 "$HERE/run.lua" sim-flags --ref "$REF" "$f") || exit 2
  [ -n "${BY_FLAGS[$key]+x}" ] || ORDER+=("$key")
  BY_FLAGS[$key]+="$f"$'\n'
done
for key in "${ORDER[@]}"; do
  mapfile -t flags < <(printf '%s' "${key#flags:}" | tr '\t' '\n' | sed '/^$/d')
  mapfile -t files < <(printf '%s' "${BY_FLAGS[$key]}" | sed '/^$/d')
  start_sim "${flags[@]}"
  echo "differential: sim $SIM_URL ${SIM_FLAGS:+($SIM_FLAGS) }for ${#files[@]} scenario(s)"
  lua5.4 "$HERE/run.lua" record --server "$SIM_URL" --token "$TOKEN" --out "$OUT/sim" "${files[@]}" >/dev/null || exit 2
  stop_sim
done
lua5.4 "$HERE/run.lua" compare ${DIFF_VERBOSE:+--verbose} "$REF" "$OUT/sim"
