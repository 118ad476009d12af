#!/usr/bin/env bash
# kubectl (the e2e tier's built v1.36.3) against a fresh kinformer-sim,
# through the sim's kubeconfig (plain HTTP, no auth: client-go sends no
# bearer token over http): api-resources, apply -f
# (create, then re-apply a change) of a ConfigMap and a Deployment,
# get -o json, get -w seeing a change, delete; then client-go's typed
# informer in protobuf only (list and watch). Each step is asserted.
# Last line: `N passed, M failed`; exit 1 when a step failed.
#
#   KINFORMER_E2E_KUBECTL  kubectl (default: the e2e cache's)
#   KINFORMER_SIM          the sim binary (default build/release/kinformer-sim)
#   KINFORMER_E2E_REF      the reference informer (default: the e2e cache's)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/spec/e2e/lib.sh"
KUBECTL=${KINFORMER_E2E_KUBECTL:-$E2E_BIN/kubectl}
SIM_BIN=${KINFORMER_SIM:-$ROOT/build/release/kinformer-sim}
[ -x "$KUBECTL" ] || { echo "kubectl_sim: $KUBECTL missing (make e2e-deps)"; exit 2; }
[ -x "$SIM_BIN" ] || { echo "kubectl_sim: $SIM_BIN missing (make sim)"; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinformer-kubectl-sim.XXXXXX")
SIM_PID=
cleanup() { [ -n "$SIM_PID" ] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

"$SIM_BIN" --port 0 --kubeconfig "$TMP/kc.yaml" >"$TMP/sim.log" 2>&1 &
SIM_PID=$!
for _ in $(seq 1 50); do grep -q http "$TMP/sim.log" && [ -s "$TMP/kc.yaml" ] && break; sleep 0.1; done
kc() { timeout 30 "$KUBECTL" --kubeconfig "$TMP/kc.yaml" "$@" 2>&1; }

PASS=0 FAIL=0
check() { # name, command output, expected substring
  if grep -qF -- "$3" <<<"$2"; then PASS=$((PASS + 1)); echo "ok   $1"
  else FAIL=$((FAIL + 1)); echo "FAIL $1: '$3' not in: $(head -c 400 <<<"$2")"; fi
}

cm() { cat <<Y
apiVersion: v1
kind: ConfigMap
metadata: {name: kc-cm, namespace: default, labels: {app: kc}}
data: {k: "$1"}
Y
}
deploy() { cat <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: kc-deploy, namespace: default}
spec:
  replicas: $1
  selector: {matchLabels: {app: kc}}
  template:
    metadata: {labels: {app: kc}}
    spec: {containers: [{name: c, image: busybox}]}
Y
}

out=$(kc api-resources); check api-resources "$out" "configmaps"
check api-resources-builtins "$out" "resourcequotas"
check api-resources-apps "$out" "deployments"
cm v1 >"$TMP/cm.yaml"; deploy 1 >"$TMP/deploy.yaml"
check apply-create-cm "$(kc apply -f "$TMP/cm.yaml")" "configmap/kc-cm created"
check apply-create-deploy "$(kc apply -f "$TMP/deploy.yaml")" "deployment.apps/kc-deploy created"
cm v2 >"$TMP/cm.yaml"; deploy 3 >"$TMP/deploy.yaml"
check apply-change-cm "$(kc apply -f "$TMP/cm.yaml")" "configmap/kc-cm configured"
check apply-change-deploy "$(kc apply -f "$TMP/deploy.yaml")" "deployment.apps/kc-deploy configured"
check apply-unchanged "$(kc apply -f "$TMP/cm.yaml")" "configmap/kc-cm unchanged"
check get-json-cm "$(kc get configmap kc-cm -o json | jq -r .data.k)" "v2"
check get-json-deploy "$(kc get deployment kc-deploy -o json | jq -r '"\(.spec.replicas) \(.metadata.generation)"')" "3 2"

# get -w: the watch prints each version's value; a change made while it runs shows up
timeout 8 "$KUBECTL" --kubeconfig "$TMP/kc.yaml" get configmap kc-cm -w -o 'jsonpath={.data.k}{"\n"}' \
  >"$TMP/watch.out" 2>&1 &
WPID=$!
for _ in $(seq 1 50); do grep -q v2 "$TMP/watch.out" && break; sleep 0.1; done
kc patch configmap kc-cm --type merge -p '{"data":{"k":"v3"}}' >/dev/null
for _ in $(seq 1 60); do grep -q v3 "$TMP/watch.out" && break; sleep 0.1; done
kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null
check get-w-initial "$(cat "$TMP/watch.out")" "v2"
check get-w-change "$(cat "$TMP/watch.out")" "v3"

check delete-cm "$(kc delete -f "$TMP/cm.yaml")" 'configmap "kc-cm" deleted'
check delete-deploy "$(kc delete deployment kc-deploy)" 'deployment.apps "kc-deploy" deleted'
check get-after-delete "$(kc get configmap kc-cm)" 'configmaps "kc-cm" not found'

# client-go's typed informer speaking protobuf only (the e2e tier's
# reference informer, -protobuf: ContentType and Accept protobuf, no JSON
# fallback): it lists three ConfigMaps kubectl created (protobuf bodies),
# then sees an add, an update and a delete through a protobuf watch.
REF=${KINFORMER_E2E_REF:-$E2E_BIN/kinformer-ref-informer}
if [ -x "$REF" ]; then
  for i in 1 2 3; do kc create configmap pb-$i --from-literal=a=$i >/dev/null; done
  "$REF" -kubeconfig "$TMP/kc.yaml" -resource v1/configmaps -namespace default -client typed \
    -protobuf -min-events 6 -timeout 20s -ready-file "$TMP/ref.ready" >"$TMP/ref.out" 2>&1 &
  RPID=$!
  for _ in $(seq 1 100); do [ -e "$TMP/ref.ready" ] && break; sleep 0.1; done
  kc create configmap pb-4 --from-literal=a=4 >/dev/null
  kc patch configmap pb-1 -p '{"data":{"a":"x"}}' >/dev/null
  kc delete configmap pb-2 >/dev/null
  wait "$RPID"
  out=$(cat "$TMP/ref.out")
  check client-go-protobuf-list "$out" '"events_at_sync":3,'
  check client-go-protobuf-watch "$out" '"adds":4,"updates":1,"deletes":1,"objects":3,'
  check client-go-protobuf-only "$out" '"protobuf":true'
  check client-go-protobuf-no-error "$(grep -c '"error"' <<<"$out")" 0
else
  FAIL=$((FAIL + 1)); echo "FAIL client-go-protobuf: $REF missing (make e2e-reference)"
fi

echo "kubectl against kinformer-sim: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
