#!/usr/bin/env bash
# `kubectl api-resources` and `kubectl api-resources -o wide` (the e2e
# tier's kubectl v1.36.3) against kube-apiserver and against a fresh
# kinformer-sim, compared line by line (sorted; columns as kubectl prints
# them: name, short names, apiVersion, namespaced, kind, and with -o wide
# verbs and categories). Prints
#   api-resources: kube-apiserver 67, kinformer-sim 67, same
# for each form, the differing lines when they differ, and a last line
# `N passed, M failed`; exit 1 when a list differs.
#
# Runs inside `spec/e2e/cluster.sh run` (KINFORMER_E2E_ADMIN_KUBECONFIG
# names the real server; make e2e-differential does this).
#   KINFORMER_E2E_KUBECTL  kubectl (default: the e2e cache's)
#   KINFORMER_SIM          the sim binary (default build/release/kinformer-sim)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/spec/e2e/lib.sh"
KUBECTL=${KINFORMER_E2E_KUBECTL:-$E2E_BIN/kubectl}
SIM_BIN=${KINFORMER_SIM:-$ROOT/build/release/kinformer-sim}
REAL_KC=${KINFORMER_E2E_ADMIN_KUBECONFIG:-}
[ -x "$KUBECTL" ] || { echo "api_resources: $KUBECTL missing (make e2e-deps)"; exit 2; }
[ -x "$SIM_BIN" ] || { echo "api_resources: $SIM_BIN missing (make sim)"; exit 2; }
[ -n "$REAL_KC" ] || { echo "api_resources: no KINFORMER_E2E_ADMIN_KUBECONFIG (run inside spec/e2e/cluster.sh run)"; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinformer-api-resources.XXXXXX")
SIM_PID=
cleanup() { [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

"$SIM_BIN" --port 0 --kubeconfig "$TMP/kc.yaml" >"$TMP/sim.log" 2>&1 &
SIM_PID=$!
for _ in $(seq 1 50); do grep -q http "$TMP/sim.log" && [ -s "$TMP/kc.yaml" ] && break; sleep 0.1; done

PASS=0 FAIL=0
# compare LABEL ARGS...: one form of api-resources on both servers.
compare() {
  local label=$1; shift
  # a fresh discovery cache each time: kubectl would otherwise reuse one
  # server's answers for the other when they share a host:port
  timeout 60 "$KUBECTL" --kubeconfig "$REAL_KC" --cache-dir "$TMP/cache-real" api-resources "$@" \
    --no-headers 2>"$TMP/real.err" | sed 's/  */ /g' | sort >"$TMP/real.txt"
  timeout 60 "$KUBECTL" --kubeconfig "$TMP/kc.yaml" --cache-dir "$TMP/cache-sim" api-resources "$@" \
    --no-headers 2>"$TMP/sim.err" | sed 's/  */ /g' | sort >"$TMP/sim.txt"
  local nr ns
  nr=$(wc -l <"$TMP/real.txt"); ns=$(wc -l <"$TMP/sim.txt")
  if [ "$nr" -gt 0 ] && cmp -s "$TMP/real.txt" "$TMP/sim.txt"; then
    PASS=$((PASS + 1)); echo "$label: kube-apiserver $nr, kinformer-sim $ns, same"
  else
    FAIL=$((FAIL + 1)); echo "$label: kube-apiserver $nr, kinformer-sim $ns, DIFFERENT"
    diff "$TMP/real.txt" "$TMP/sim.txt" | sed -n 's/^</  kube-apiserver only:/p; s/^>/  kinformer-sim only:/p'
    cat "$TMP/real.err" "$TMP/sim.err" | head -5
  fi
}
compare "api-resources"
compare "api-resources -o wide" -o wide
echo "api-resources: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
