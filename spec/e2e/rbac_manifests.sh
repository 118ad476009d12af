#!/usr/bin/env bash
# The RBAC that `kinformer manifests` prints is enough, against a real
# kube-apiserver (RBAC authorization on, and the
# OwnerReferencesPermissionEnforcement admission plugin, so that an owner
# reference with blockOwnerDeletion needs update on <owner>/finalizers):
# for every example operator (hello, website, configmap-mirror,
# pod-label-auditor, team-namespace; hello also with --shards 2)
# `kinformer manifests` must succeed
# (exit 0: nothing undetermined), its documents are applied, a token of the
# printed ServiceAccount is made with `kubectl create token`, and
# bin/kinformer runs the operator with only that token while the test
# drives it through its reconcile (greet a ConfigMap; create, scale and
# delete a Website, whose children the garbage collector removes; mirror and unmirror a ConfigMap
# as a namespaced manager with a Role; audit a Pod; give a team's Namespace
# its ConfigMap and ServiceAccount, relabel it, recreate a deleted child).
# Each log must show the work done and hold 0 "forbidden": the count is
# printed per operator. A request the rules do not grant is refused (the
# ServiceAccount is not an admin in disguise).
#
# Run by make e2e-rbac: spec/e2e/cluster.sh run spec/e2e/rbac_manifests.sh
# (needs build/release's modules: make build).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
OWNER_PLUGIN=--enable-admission-plugins=OwnerReferencesPermissionEnforcement
if [ -z "${KINFORMER_E2E_DIR:-}" ]; then
  export KINFORMER_E2E_APISERVER_FLAGS="${KINFORMER_E2E_APISERVER_FLAGS:-} $OWNER_PLUGIN"
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
SUMMARY=()

# wait_log PATTERN [COUNT]: until the operator's log has PATTERN (COUNT
# times, default 1; 60 s)
wait_log() {
  local want=${2:-1}
  for _ in $(seq 1 600); do
    [ "$(grep -c -- "$1" "$TMP/run.log" || true)" -ge "$want" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "the operator exited before logging '$1'"
    sleep 0.1
  done
  fail "no '$1' (x$want) in the operator's log after 60 s"
}

# wait_for WHAT CMD...: until CMD succeeds (60 s)
wait_for() {
  local what=$1
  shift
  for _ in $(seq 1 600); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  fail "no $what after 60 s"
}

# manifests NAME SCRIPT [ARGS...]: kinformer manifests, which must succeed
# (every call determined) and print nothing on stderr, into $TMP/NAME.yaml
manifests() {
  local name=$1
  shift
  bin/kinformer manifests "$@" >"$TMP/$name.yaml" 2>"$TMP/$name.err" \
    || fail "kinformer manifests $* failed: $(cat "$TMP/$name.err")"
  [ -s "$TMP/$name.err" ] && fail "kinformer manifests $* wrote on stderr: $(cat "$TMP/$name.err")"
  return 0
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

# stop_operator NAME: SIGINT, exit 0, and no "forbidden" in its log (the
# count is printed)
stop_operator() {
  local name=$1 rc=0 n
  kill -INT "$pid"
  wait "$pid" || rc=$?
  pid=
  [ "$rc" -eq 0 ] || fail "$name: the operator exited $rc"
  n=$(grep -ci 'forbidden' "$TMP/run.log" || true)
  echo "rbac-manifests: $name: $n forbidden in the operator's log"
  SUMMARY+=("$name $n")
  [ "$n" -eq 0 ] || fail "$name: the operator was refused something ($n forbidden)"
}

# --- hello: the README's operator, a ClusterRole ------------------------------
manifests hello examples/hello/operator.lua
kc apply -f "$TMP/hello.yaml" >/dev/null
sa_kubeconfig default hello "$TMP/hello.kubeconfig"
run_operator examples/hello/operator.lua "$TMP/hello.kubeconfig" --leader-elect
wait_log 'acquired by'
kc create configmap greet-rbac -n default --from-literal=a=1 >/dev/null
kc label configmap greet-rbac -n default hello=true >/dev/null
greeted() { [ "$(kc get configmap greet-rbac -n default -o jsonpath='{.data.greeting}')" = "hello, greet-rbac" ]; }
wait_for "greeting on ConfigMap greet-rbac" greeted
wait_log 'hello default/greet-rbac: done'
stop_operator hello
wait_for "Greeted Event" sh -c "'$KINFORMER_E2E_KUBECTL' --kubeconfig '$KINFORMER_E2E_ADMIN_KUBECONFIG' get events.events.k8s.io \
  -n default --field-selector regarding.name=greet-rbac -o jsonpath='{.items[*].reason}' | grep -q Greeted"
echo "rbac-manifests: hello greeted its ConfigMap (update) under its printed ClusterRole, its Event written"

# --- hello, sharded: the Leases of manifests --shards N -----------------------
# its member Lease and the bucket table (get, list, watch, create, update)
# and a dead member's Lease, which a live replica deletes (delete); lease 2
# s, so that Lease is forgotten 20 s after it was last seen to change
manifests hello-sharded examples/hello/operator.lua --shards 2
kc apply -f "$TMP/hello-sharded.yaml" >/dev/null
kc apply -f - >/dev/null <<'LEASE'
{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
 "metadata": {"name": "hello-member-dead0001", "namespace": "default"},
 "spec": {"holderIdentity": "hello/gone_1", "leaseDurationSeconds": 2,
          "renewTime": "2026-01-01T00:00:00.000000Z"}}
LEASE
sa_kubeconfig default hello "$TMP/hello.kubeconfig"
run_operator examples/hello/operator.lua "$TMP/hello.kubeconfig" --name hello --shards auto \
  --leader-elect-lease-duration 2 --leader-elect-renew-deadline 1.5 --leader-elect-retry-period 0.5
wait_log 'took buckets'
kc create configmap greet-shard -n default --from-literal=a=1 >/dev/null
kc label configmap greet-shard -n default hello=true >/dev/null
wait_log 'hello default/greet-shard: done'
wait_log 'deleted member Lease default/hello-member-dead0001'
kc get lease hello-member-dead0001 -n default >/dev/null 2>&1 && fail "the dead member's Lease is still there"
stop_operator hello-sharded
echo "rbac-manifests: hello ran sharded under its printed Lease Role (member Lease, bucket table, a dead member's Lease deleted)"

# --- Website: a ClusterRole --------------------------------------------------
kc apply -f examples/website/crd.json >/dev/null
kc wait --for condition=established --timeout=60s crd/websites.example.kinformer.io >/dev/null
manifests website examples/website/operator.lua --image example/kinformer-op:e2e
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
wait_log 'updated Deployment default/rbac (replicas 3, image nginx:1.27)'
kc delete website rbac -n default --wait=false >/dev/null
# no finalizer: kube-controller-manager's garbage collector deletes the
# Deployment and Service the operator owns (it finds a new CRD's kind
# within its 30 s discovery period)
children_gone() { ! kc get deployment rbac -n default && ! kc get service rbac -n default; }
wait_for "garbage collection of the Website's Deployment and Service" children_gone
stop_operator website
grep -q 'released by' "$TMP/run.log" || fail "the Lease was not released"
# its Events, written under the printed rules (stop_operator flushed them)
reasons=$(kc get events.events.k8s.io -n default \
  --field-selector regarding.name=rbac -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}' | sort -u | tr '\n' ' ')
case "$reasons" in *Created*Updated*|*Updated*Created*) ;; *) fail "Events about Website rbac: '$reasons' (want Created and Updated)";; esac
echo "rbac-manifests: website ran under its printed ClusterRole (create, scale, delete) and leases Role (--leader-elect: acquired, released), its Events written"

# --- configmap-mirror: a namespaced manager, a Role ---------------------------
kc create namespace shop >/dev/null
manifests mirror examples/configmap-mirror/operator.lua --namespace shop
# a namespaced manager: no ClusterRole for its resources; the only cluster
# roles are those of --metrics-secure (TokenReview and SubjectAccessReview
# are cluster-scoped; metrics-reader is for scrapers)
cluster_roles=$(awk '/^kind: ClusterRole(Binding)?$/ {k=1; next} k && /^  name: / {print $2; k=0}' "$TMP/mirror.yaml" \
  | sort -u | tr '\n' ' ')
[ "$cluster_roles" = "configmap-mirror-metrics-auth configmap-mirror-metrics-reader " ] \
  || fail "a namespaced manager got cluster roles beyond the metrics ones: $cluster_roles"
kc apply -f "$TMP/mirror.yaml" >/dev/null
sa_kubeconfig shop configmap-mirror "$TMP/mirror.kubeconfig"
if out=$("$KINFORMER_E2E_KUBECTL" --kubeconfig "$TMP/mirror.kubeconfig" get configmaps -n default 2>&1); then
  fail "the configmap-mirror ServiceAccount may list configmaps outside its namespace: $out"
fi
# the admission plugin is on: it may create Secrets, but not block the
# deletion of an object whose finalizers it may not update
if out=$("$KINFORMER_E2E_KUBECTL" --kubeconfig "$TMP/mirror.kubeconfig" create -f - 2>&1 <<'S'
{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "blocker", "namespace": "shop",
 "ownerReferences": [{"apiVersion": "example.kinformer.io/v1", "kind": "Website", "name": "w",
  "uid": "00000000-0000-0000-0000-000000000001", "blockOwnerDeletion": true}]}}
S
); then
  fail "OwnerReferencesPermissionEnforcement is not in force: $out"
fi
grep -q 'blockOwnerDeletion' <<<"$out" || fail "a blocking owner reference failed otherwise: $out"
run_operator examples/configmap-mirror/operator.lua "$TMP/mirror.kubeconfig" --namespace shop --leader-elect
wait_log 'acquired by'
kc create configmap cfg -n shop --from-literal=k=v >/dev/null
kc label configmap cfg -n shop kinformer.io/mirror=true >/dev/null
wait_log 'created Secret shop/cfg with 1 keys'
kc label configmap cfg -n shop kinformer.io/mirror- >/dev/null
wait_log 'deleted Secret shop/cfg: ConfigMap shop/cfg no longer matches kinformer.io/mirror=true'
stop_operator configmap-mirror
echo "rbac-manifests: configmap-mirror ran under its printed Role in shop (mirror, unmirror)"

# --- pod-label-auditor: an informer and handlers only ------------------------
manifests auditor examples/pod-label-auditor/operator.lua
kc apply -f "$TMP/auditor.yaml" >/dev/null
sa_kubeconfig default pod-label-auditor "$TMP/auditor.kubeconfig"
run_operator examples/pod-label-auditor/operator.lua "$TMP/auditor.kubeconfig"
kc apply -f - >/dev/null <<'P'
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rbac-pod", "namespace": "default", "labels": {"app": "web"}},
 "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
P
wait_log 'missing: default/rbac-pod has no team'
kc label pod rbac-pod -n default team=storefront >/dev/null
wait_log 'fixed: default/rbac-pod has every required label'
stop_operator pod-label-auditor
echo "rbac-manifests: pod-label-auditor watched pods under its printed ClusterRole"

# --- team-namespace: resources on one line (multiple assignment) -------------
manifests team examples/team-namespace/operator.lua
grep -q -- '- namespaces/finalizers' "$TMP/team.yaml" || fail "no namespaces/finalizers rule for the owner references"
kc apply -f "$TMP/team.yaml" >/dev/null
sa_kubeconfig default team-namespace "$TMP/team.kubeconfig"
run_operator examples/team-namespace/operator.lua "$TMP/team.kubeconfig" --leader-elect
wait_log 'acquired by'
kc create namespace rbac-team >/dev/null
kc label namespace rbac-team team=payments >/dev/null
wait_log 'created ConfigMap rbac-team/team-info for team payments'
wait_log 'created ServiceAccount rbac-team/team-bot for team payments'
kc label namespace rbac-team team=search --overwrite >/dev/null
wait_log 'updated ConfigMap rbac-team/team-info to team search'
wait_log 'updated ServiceAccount rbac-team/team-bot to team search'
kc delete configmap team-info -n rbac-team >/dev/null
wait_log 'created ConfigMap rbac-team/team-info for team search'
stop_operator team-namespace
echo "rbac-manifests: team-namespace ran under its printed ClusterRole (create, update, owner references)"

# --- namespace-guard: the README's "Writing an operator" (ensure, children, finalizer, selector)
manifests guard examples/namespace-guard/operator.lua
kc apply -f "$TMP/guard.yaml" >/dev/null
sa_kubeconfig default namespace-guard "$TMP/guard.kubeconfig"
run_operator examples/namespace-guard/operator.lua "$TMP/guard.kubeconfig" --leader-elect
wait_log 'acquired by'
kc create namespace rbac-guard >/dev/null
kc label namespace rbac-guard team=payments >/dev/null
wait_log 'added finalizer guard.kinformer.io/release to Namespace rbac-guard'
wait_log 'namespace-guard rbac-guard: done'
kc get configmap team-settings -n rbac-guard >/dev/null || fail "no team-settings ConfigMap"
kc get serviceaccount team-deployer -n rbac-guard >/dev/null || fail "no team-deployer ServiceAccount"
kc label namespace rbac-guard team- >/dev/null
wait_log 'deleted ConfigMap rbac-guard/team-settings: Namespace rbac-guard no longer matches team'
wait_log 'removed finalizer guard.kinformer.io/release of Namespace rbac-guard (no longer matches team)'
kc label namespace rbac-guard team=search >/dev/null
wait_log 'added finalizer guard.kinformer.io/release to Namespace rbac-guard' 2
kc delete namespace rbac-guard --wait=false >/dev/null
wait_log 'removed finalizer guard.kinformer.io/release of Namespace rbac-guard$'
stop_operator namespace-guard
echo "rbac-manifests: namespace-guard ran under its printed ClusterRole (ensure, prune, finalizer, finalize)"

echo "rbac-manifests: forbidden per operator: ${SUMMARY[*]}"
