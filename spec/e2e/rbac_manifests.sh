#!/usr/bin/env bash
# The RBAC that `kinformer manifests` prints is enough, against a real
# kube-apiserver (RBAC authorization on): for each example operator the
# printed documents are applied, a token of the printed ServiceAccount is
# made with `kubectl create token`, and bin/kinformer runs the operator with
# only that token while the test drives it through its whole reconcile
# (create, then delete through the finalizer, for the Website; mirror and
# unmirror for configmap-mirror, as a namespaced manager with a Role). The
# log must show the work done and no "forbidden". A request the rules do
# not grant is refused (the ServiceAccount is not an admin in disguise).
#
# Run by make e2e-rbac: spec/e2e/cluster.sh run spec/e2e/rbac_manifests.sh
# (needs build/release's modules: make build).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
if [ -z "${KINFORMER_E2E_DIR:-}" ]; then
  exec "$E2E_HERE/cluster.sh" run "$E2E_HERE/rbac_manifests.sh" "$@"
fi
cd "$E2E_HERE/../.."
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinformer-rbac.XXXXXX")
pid=
cleanup() { [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
export LUA_PATH='lua/?.lua;lua/?/init.lua;;' LUA_CPATH='build/release/?.so;;'
kc() { "$KINFORMER_E2E_KUBECTL" --kubeconfig "$KINFORMER_E2E_ADMIN_KUBECONFIG" "$@"; }
fail() { echo "rbac-manifests: $*" >&2; [ -f "$TMP/run.log" ] && sed 's/^/  | /' "$TMP/run.log" >&2; exit 1; }

# wait_log PATTERN: until the operator's log has PATTERN (60 s)
wait_log() {
  for _ in $(seq 1 600); do
    grep -q -- "$1" "$TMP/run.log" && return 0
    kill -0 "$pid" 2>/dev/null || fail "the operator exited before logging '$1'"
    sleep 0.1
  done
  fail "no '$1' in the operator's log after 60 s"
}

# sa_kubeconfig NS NAME FILE: a kubeconfig with a token of ServiceAccount NS/NAME only
sa_kubeconfig() {
  local token
  token=$(kc create token "$2" -n "$1" --duration 1h)
  cat >"$3" <<KC
apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: "$KINFORMER_E2E_SERVER", certificate-authority: "$KINFORMER_E2E_CA"}}]
users: [{name: sa, user: {token: "$token"}}]
contexts: [{name: sa, context: {cluster: e2e, user: sa, namespace: $1}}]
current-context: sa
KC
}

# run_operator SCRIPT KUBECONFIG [ARGS...]: bin/kinformer run in the background
run_operator() {
  local script=$1 kcfg=$2
  shift 2
  bin/kinformer run "$script" --kubeconfig "$kcfg" -v "$@" >"$TMP/run.log" 2>&1 &
  pid=$!
  wait_log "caches synced"
}

stop_operator() {
  kill -INT "$pid"
  local rc=0
  wait "$pid" || rc=$?
  pid=
  [ "$rc" -eq 0 ] || fail "the operator exited $rc"
  if grep -qi 'forbidden' "$TMP/run.log"; then fail "the operator was refused something"; fi
}

# --- Website: a ClusterRole --------------------------------------------------
kc apply -f examples/website/crd.json >/dev/null
kc wait --for condition=established --timeout=60s crd/websites.example.kinformer.io >/dev/null
bin/kinformer manifests examples/website/operator.lua --image example/kinformer-op:e2e >"$TMP/website.yaml"
kc apply -f "$TMP/website.yaml" >/dev/null
sa_kubeconfig default website "$TMP/website.kubeconfig"
# a verb outside the rules is refused
if out=$("$KINFORMER_E2E_KUBECTL" --kubeconfig "$TMP/website.kubeconfig" get secrets -n default 2>&1); then
  fail "the website ServiceAccount may list secrets: $out"
fi
grep -q forbidden <<<"$out" || fail "listing secrets failed otherwise than forbidden: $out"
run_operator examples/website/operator.lua "$TMP/website.kubeconfig" --leader-elect
wait_log 'acquired by' # the printed Role for leases in the operator's namespace
kc apply -f - >/dev/null <<'W'
{"apiVersion": "example.kinformer.io/v1", "kind": "Website",
 "metadata": {"name": "rbac", "namespace": "default"},
 "spec": {"image": "nginx:1.27", "replicas": 2, "port": 8080}}
W
wait_log 'set Website default/rbac Ready=True'
grep -q 'created Deployment default/rbac' "$TMP/run.log" || fail "no Deployment created"
kc patch website rbac -n default --type merge -p '{"spec": {"replicas": 3}}' >/dev/null
wait_log 'scaled Deployment default/rbac from 2 to 3 replicas'
kc delete website rbac -n default --wait=false >/dev/null
wait_log 'removed the finalizer of Website default/rbac'
grep -q 'deleted Deployment default/rbac' "$TMP/run.log" || fail "the Deployment was not deleted"
stop_operator
grep -q 'released by' "$TMP/run.log" || fail "the Lease was not released"
# its Events, written under the printed rules (stop_operator flushed them)
reasons=$(kc get events.events.k8s.io -n default \
  --field-selector regarding.name=rbac -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | sort -u | tr '\n' ' ')
case "$reasons" in *Created*Scaled*|*Scaled*Created*) ;; *) fail "Events about Website rbac: '$reasons' (want Created and Scaled)";; esac
echo "rbac-manifests: website ran under its printed ClusterRole (create, scale, delete) and leases Role (--leader-elect: acquired, released), its Events written, no forbidden"

# --- configmap-mirror: a namespaced manager, a Role ---------------------------
kc create namespace shop >/dev/null
bin/kinformer manifests examples/configmap-mirror/operator.lua --namespace shop >"$TMP/mirror.yaml"
grep -q '^kind: ClusterRole' "$TMP/mirror.yaml" && fail "a namespaced manager got a ClusterRole"
kc apply -f "$TMP/mirror.yaml" >/dev/null
sa_kubeconfig shop configmap-mirror "$TMP/mirror.kubeconfig"
if out=$("$KINFORMER_E2E_KUBECTL" --kubeconfig "$TMP/mirror.kubeconfig" get configmaps -n default 2>&1); then
  fail "the configmap-mirror ServiceAccount may list configmaps outside its namespace: $out"
fi
run_operator examples/configmap-mirror/operator.lua "$TMP/mirror.kubeconfig" --namespace shop --leader-elect
wait_log 'acquired by'
kc create configmap cfg -n shop --from-literal=k=v >/dev/null
kc label configmap cfg -n shop kinformer.io/mirror=true >/dev/null
wait_log 'created Secret shop/cfg with 1 keys'
kc label configmap cfg -n shop kinformer.io/mirror- >/dev/null
wait_log 'deleted Secret shop/cfg'
stop_operator
echo "rbac-manifests: configmap-mirror ran under its printed Role in shop (mirror, unmirror), no forbidden"
