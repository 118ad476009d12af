#!/usr/bin/env bash
# Differential run: replays spec/differential/scenarios/*.json against the
# real kube-apiserver of $KINFORMER_E2E_DIR (client certificate) and against
# a fresh kinformer-sim (bearer token), then compares the normalised answers
# (run.lua compare). Without a cluster it runs itself inside cluster.sh run.
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
"$SIM_BIN" --port 0 --token "$TOKEN" --kubeconfig "$OUT/sim.kubeconfig" >"$OUT/sim.log" 2>&1 &
SIM_PID=$!
SIM_URL=
for _ in $(seq 1 50); do
  SIM_URL=$(grep -o 'http://[0-9.:]*' "$OUT/sim.log" | head -1)
  [ -n "$SIM_URL" ] && break
  sleep 0.1
done
[ -n "$SIM_URL" ] || { echo "differential: the sim did not start:"; cat "$OUT/sim.log"; exit 2; }
if [ -n "$REF" ]; then
  echo "differential: recorded real server in $REF, sim $SIM_URL"
else
  echo "differential: real $KINFORMER_E2E_SERVER, sim $SIM_URL"
  lua5.4 "$HERE/run.lua" record --server "$KINFORMER_E2E_SERVER" --cacert "$KINFORMER_E2E_CA" \
    --cert "$KINFORMER_E2E_ADMIN_CERT" --key "$KINFORMER_E2E_ADMIN_KEY" --out "$OUT/real" "$@" >/dev/null || exit 2
  REF="$OUT/real"
fi
lua5.4 "$HERE/run.lua" record --server "$SIM_URL" --token "$TOKEN" --out "$OUT/sim" "$@" >/dev/null || exit 2
lua5.4 "$HERE/run.lua" compare ${DIFF_VERBOSE:+--verbose} "$REF" "$OUT/sim"
