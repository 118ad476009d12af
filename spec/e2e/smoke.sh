#!/usr/bin/env bash
# Smoke checks of the real control plane, with the built kubectl and curl.
# Runs against the cluster named by $KINFORMER_E2E_DIR (cluster.sh run sets
# it); without one it starts its own through cluster.sh run.
# Each check asserts on what came back; the last line is `N passed, M failed`
# and the exit status is non-zero when a check failed.
#
# Usage: spec/e2e/smoke.sh [CHECK...]      (default: all checks, in order)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

if [ -z "${KINFORMER_E2E_DIR:-}" ]; then
  exec "$E2E_HERE/cluster.sh" run "$E2E_HERE/smoke.sh" "$@"
fi
e2e_need jq:jq curl:curl

S=$KINFORMER_E2E_SERVER
NS=kinformer-e2e
PAGE_NS=kinformer-e2e-page
REF_NS=kinformer-e2e-ref
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinformer-smoke.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# admin (client certificate) and token user, via curl
api() { curl -sS --fail-with-body --max-time 30 --cacert "$KINFORMER_E2E_CA" \
  --cert "$KINFORMER_E2E_ADMIN_CERT" --key "$KINFORMER_E2E_ADMIN_KEY" "$@"; }
tapi() { curl -sS --fail-with-body --max-time 30 --cacert "$KINFORMER_E2E_CA" \
  -H "Authorization: Bearer $KINFORMER_E2E_TOKEN" "$@"; }
post() { api -X POST -H 'Content-Type: application/json' "$1" -d "$2"; }
kc() { "$KINFORMER_E2E_KUBECTL" --kubeconfig "$KINFORMER_E2E_ADMIN_KUBECONFIG" "$@"; }

# assertions: they print what was wrong; a check stops at the first failure
eq() { [ "$1" = "$2" ] || { echo "$3: expected '$2', got '$1'"; return 1; }; }
ge() { [ "$1" -ge "$2" ] 2>/dev/null || { echo "$3: expected >= $2, got '$1'"; return 1; }; }
has() { grep -qF -- "$2" <<<"$1" || { echo "$3: '$2' not in: $(head -c 600 <<<"$1")"; return 1; }; }
note() { echo "    $*" >>"$TMP/notes"; }

# --- checks ----------------------------------------------------------------

c_version() {
  local v kv
  v=$(api "$S/version")
  eq "$(jq -r .gitVersion <<<"$v")" "$KINFORMER_E2E_K8S_VERSION" "/version gitVersion"
  eq "$(jq -r .major <<<"$v")" 1 "/version major"
  eq "$(jq -r .minor <<<"$v")" "$(cut -d. -f2 <<<"$KINFORMER_E2E_K8S_VERSION")" "/version minor"
  kv=$(kc version -o json)
  eq "$(jq -r .clientVersion.gitVersion <<<"$kv")" "$KINFORMER_E2E_K8S_VERSION" "kubectl client version"
  eq "$(jq -r .serverVersion.gitVersion <<<"$kv")" "$KINFORMER_E2E_K8S_VERSION" "kubectl server version"
  has "$("$KINFORMER_E2E_BIN/etcd" --version)" "etcd Version: ${KINFORMER_E2E_ETCD_VERSION#v}" "etcd --version"
  note "server $(jq -r .gitVersion <<<"$v") ($(jq -r .goVersion <<<"$v")), etcd $KINFORMER_E2E_ETCD_VERSION"
}

c_users() {
  local r body='{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
  r=$(post "$S/apis/authentication.k8s.io/v1/selfsubjectreviews" "$body")
  eq "$(jq -r .status.userInfo.username <<<"$r")" kinformer-admin "client-cert user"
  has "$(jq -r '.status.userInfo.groups[]' <<<"$r")" system:masters "client-cert user groups"
  r=$(tapi -X POST -H 'Content-Type: application/json' "$S/apis/authentication.k8s.io/v1/selfsubjectreviews" -d "$body")
  eq "$(jq -r .status.userInfo.username <<<"$r")" kinformer-token "token user"
  has "$(jq -r '.status.userInfo.groups[]' <<<"$r")" kinformer:e2e "token user groups"
  eq "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$KINFORMER_E2E_CA" \
    -H "Authorization: Bearer $KINFORMER_E2E_NOBODY_TOKEN" "$S/api/v1/namespaces")" 403 "nobody lists namespaces (RBAC)"
  eq "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$KINFORMER_E2E_CA" \
    -H "Authorization: Bearer wrong" "$S/api/v1/namespaces")" 401 "bad token"
  eq "$("$KINFORMER_E2E_KUBECTL" --kubeconfig "$KINFORMER_E2E_TOKEN_KUBECONFIG" auth whoami -o jsonpath='{.status.userInfo.username}')" \
    kinformer-token "kubectl auth whoami with token.yaml"
}

c_namespace() {
  local out r
  out=$(kc create namespace "$NS")
  eq "$out" "namespace/$NS created" "kubectl create namespace"
  r=$(tapi "$S/api/v1/namespaces/$NS")
  eq "$(jq -r .metadata.name <<<"$r")" "$NS" "namespace name"
  eq "$(jq -r .status.phase <<<"$r")" Active "namespace phase"
}

c_configmap() {
  local r
  kc -n "$NS" create configmap cm1 --from-literal=greeting=hello >/dev/null
  r=$(tapi "$S/api/v1/namespaces/$NS/configmaps/cm1")
  eq "$(jq -r .data.greeting <<<"$r")" hello "configmap data (curl)"
  eq "$(jq -r .kind <<<"$r")" ConfigMap "configmap kind"
  eq "$(kc -n "$NS" get configmap cm1 -o jsonpath='{.data.greeting}')" hello "configmap data (kubectl)"
}

# kube-controller-manager: healthy, its version, and three of its
# controllers at work (garbage collector, deployment + replicaset,
# namespace); each waited for up to 30 s.
c_controllers() {
  local uid ns=kinformer-e2e-kcm n
  [ "$KINFORMER_E2E_CONTROLLERS" != none ] || { note "no kube-controller-manager (KINFORMER_E2E_CONTROLLERS=none)"; return 0; }
  eq "$(curl -sSk --max-time 5 "https://127.0.0.1:$KINFORMER_E2E_KCM_PORT/healthz")" ok "kube-controller-manager /healthz"
  has "$("$KINFORMER_E2E_BIN/kube-controller-manager" --version)" "Kubernetes $KINFORMER_E2E_K8S_VERSION" "kube-controller-manager --version"
  uid=$(post "$S/api/v1/namespaces/$NS/configmaps" '{"metadata":{"name":"owner"}}' | jq -r .metadata.uid)
  post "$S/api/v1/namespaces/$NS/configmaps" "{\"metadata\":{\"name\":\"dependent\",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"owner\",\"uid\":\"$uid\"}]}}" >/dev/null
  kc -n "$NS" delete configmap owner >/dev/null
  kc -n "$NS" wait --for=delete configmap/dependent --timeout=30s >/dev/null
  kc create namespace "$ns" >/dev/null
  kc -n "$ns" create deployment web --image=registry.k8s.io/pause:3.10 --replicas=2 >/dev/null
  for _ in $(seq 300); do
    n=$(kc -n "$ns" get pods -l app=web -o name | wc -l)
    [ "$n" = 2 ] && break
    sleep 0.1
  done
  eq "$n" 2 "Pods of the Deployment's ReplicaSet"
  eq "$(kc -n "$ns" get replicasets -l app=web -o jsonpath='{.items[0].status.replicas}')" 2 "ReplicaSet status.replicas"
  eq "$(kc -n "$ns" get pods -l app=web -o jsonpath='{.items[0].status.phase}')" Pending "Pod phase (no scheduler, no kubelet)"
  kc delete namespace "$ns" --wait=false >/dev/null
  kc wait --for=delete "namespace/$ns" --timeout=30s >/dev/null
  note "controllers: $KINFORMER_E2E_CONTROLLERS (ready in $KINFORMER_E2E_KCM_READY_MS ms)"
}

c_crd() {
  local r code
  kc apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.e2e.kinformer.io
spec:
  group: e2e.kinformer.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
EOF
  kc wait --for=condition=Established crd/widgets.e2e.kinformer.io --timeout=30s >/dev/null
  # The resource is served a moment after Established: retry the create.
  for _ in $(seq 50); do
    code=$(api -o "$TMP/cr.json" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
      "$S/apis/e2e.kinformer.io/v1/namespaces/$NS/widgets" \
      -d '{"apiVersion":"e2e.kinformer.io/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3,"color":"blue"}}' 2>/dev/null)
    [ "$code" = 201 ] && break
    sleep 0.2
  done
  eq "$code" 201 "create custom resource"
  eq "$(jq -r .spec.size "$TMP/cr.json")" 3 "custom resource spec.size"
  r=$(tapi "$S/apis/e2e.kinformer.io/v1/namespaces/$NS/widgets")
  eq "$(jq -r .kind <<<"$r")" WidgetList "list kind"
  eq "$(jq -r '[.items[].metadata.name] | join(",")' <<<"$r")" w1 "listed custom resources"
  eq "$(kc -n "$NS" get widgets.e2e.kinformer.io w1 -o jsonpath='{.spec.color}')" blue "kubectl get widget"
}

c_list_paging() {
  local i r cont="" page=0 names="" sizes="" remaining=""
  post "$S/api/v1/namespaces" "{\"metadata\":{\"name\":\"$PAGE_NS\"}}" >/dev/null
  for i in 0 1 2 3 4; do
    post "$S/api/v1/namespaces/$PAGE_NS/configmaps" "{\"metadata\":{\"name\":\"page-$i\"},\"data\":{\"i\":\"$i\"}}" >/dev/null
  done
  while :; do
    r=$(tapi -G "$S/api/v1/namespaces/$PAGE_NS/configmaps" --data-urlencode limit=2 ${cont:+--data-urlencode "continue=$cont"})
    sizes+="$(jq '.items | length' <<<"$r") "
    remaining+="$(jq -r '.metadata.remainingItemCount // "-"' <<<"$r") "
    names+="$(jq -r '.items[].metadata.name' <<<"$r") "
    cont=$(jq -r '.metadata.continue // ""' <<<"$r")
    page=$((page + 1))
    [ -n "$cont" ] && [ $page -lt 10 ] || break
  done
  eq "$sizes" "2 2 1 " "page sizes"
  eq "$remaining" "3 1 - " "remainingItemCount per page"
  eq "$(tr ' \n' '\n\n' <<<"$names" | grep . | sort | tr '\n' ' ')" "page-0 page-1 page-2 page-3 page-4 " "names over all pages"
}

c_watch() {
  local rv pid out types bm del_rv
  rv=$(api "$S/api/v1/namespaces/$NS/configmaps?limit=1" | jq -r .metadata.resourceVersion)
  # timeoutSeconds=6: the watch cache sends a BOOKMARK 2s before a watch's
  # deadline (else only about once a minute), so it arrives after ~4s.
  api -N --max-time 20 "$S/api/v1/namespaces/$NS/configmaps?watch=1&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=6" \
    >"$TMP/watch.json" &
  pid=$!
  post "$S/api/v1/namespaces/$NS/configmaps" '{"metadata":{"name":"watched"},"data":{"v":"1"}}' >/dev/null
  api -X PATCH -H 'Content-Type: application/merge-patch+json' "$S/api/v1/namespaces/$NS/configmaps/watched" \
    -d '{"data":{"v":"2"}}' >/dev/null
  api -X DELETE "$S/api/v1/namespaces/$NS/configmaps/watched" >/dev/null
  wait $pid
  out=$(cat "$TMP/watch.json")
  types=$(jq -r 'select(.object.metadata.name == "watched") | .type' <<<"$out" | tr '\n' ' ')
  eq "$types" "ADDED MODIFIED DELETED " "event types for 'watched'"
  eq "$(jq -r 'select(.type == "MODIFIED") | .object.data.v' <<<"$out")" 2 "MODIFIED carries the new data"
  bm=$(jq -c 'select(.type == "BOOKMARK")' <<<"$out" | head -n 1)
  [ -n "$bm" ] || { echo "no BOOKMARK in: $out"; return 1; }
  eq "$(jq -r .object.kind <<<"$bm")" ConfigMap "bookmark object kind"
  del_rv=$(jq -r 'select(.type == "DELETED") | .object.metadata.resourceVersion' <<<"$out")
  ge "$(jq -r .object.metadata.resourceVersion <<<"$bm")" "$del_rv" "bookmark resourceVersion vs last event"
}

c_watchlist() {
  local out types names bm
  api -N --max-time 20 "$S/api/v1/namespaces/$PAGE_NS/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3" \
    >"$TMP/watchlist.json"
  out=$(cat "$TMP/watchlist.json")
  types=$(jq -r '.type' <<<"$out" | head -n 6 | tr '\n' ' ')
  eq "$types" "ADDED ADDED ADDED ADDED ADDED BOOKMARK " "initial events then bookmark"
  names=$(jq -r 'select(.type == "ADDED") | .object.metadata.name' <<<"$out" | sort | tr '\n' ' ')
  eq "$names" "page-0 page-1 page-2 page-3 page-4 " "initial events"
  bm=$(jq -c 'select(.type == "BOOKMARK")' <<<"$out" | head -n 1)
  eq "$(jq -r '.object.metadata.annotations["k8s.io/initial-events-end"]' <<<"$bm")" true "k8s.io/initial-events-end annotation"
  ge "$(jq -r .object.metadata.resourceVersion <<<"$bm")" \
    "$(jq -r 'select(.type == "ADDED") | .object.metadata.resourceVersion' <<<"$out" | sort -n | tail -n 1)" \
    "bookmark resourceVersion vs initial events"
}

c_compacted_410() {
  # podtemplates are not watch-cached (cluster.sh), so this watch reaches
  # etcd, which has compacted the requested revision away.
  local rv0 rev r code out
  rv0=$(post "$S/api/v1/namespaces/$NS/podtemplates" \
    '{"metadata":{"name":"pt1"},"template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}' | jq -r .metadata.resourceVersion)
  api -X PATCH -H 'Content-Type: application/merge-patch+json' "$S/api/v1/namespaces/$NS/podtemplates/pt1" \
    -d '{"metadata":{"labels":{"step":"2"}}}' >/dev/null
  api -X DELETE "$S/api/v1/namespaces/$NS/podtemplates/pt1" >/dev/null
  rev=$(curl -fsS -X POST "$KINFORMER_E2E_ETCD/v3/kv/range" -d '{"key":"AA=="}' | jq -r .header.revision)
  ge "$rev" $((rv0 + 2)) "etcd revision after two more writes"
  r=$(curl -fsS -X POST "$KINFORMER_E2E_ETCD/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}")
  has "$r" '"header"' "etcd compaction reply"
  r=$(curl -sS -X POST "$KINFORMER_E2E_ETCD/v3/kv/range" -d "{\"key\":\"AA==\",\"revision\":\"$rv0\"}")
  has "$r" "compacted" "etcd read at the old revision"
  code=$(api -o "$TMP/gone.json" -w '%{http_code}' --max-time 20 \
    "$S/api/v1/namespaces/$NS/podtemplates?watch=1&resourceVersion=$rv0&timeoutSeconds=5" 2>/dev/null)
  out=$(cat "$TMP/gone.json")
  # 410 either as the HTTP status or as the stream's ERROR event
  if [ "$code" != 410 ]; then
    eq "$code" 200 "watch HTTP status"
    eq "$(jq -r 'select(.type == "ERROR") | .object.code' <<<"$out" | head -n 1)" 410 "ERROR event code ($out)"
    note "compacted watch: HTTP 200 + ERROR event 410 ($(jq -r 'select(.type == "ERROR") | .object.reason' <<<"$out" | head -n 1))"
  else
    eq "$(jq -r .code <<<"$out")" 410 "Status code"
    note "compacted watch: HTTP 410 ($(jq -r .reason <<<"$out"))"
  fi
  # control: a watch from the current revision is fine
  code=$(api -o "$TMP/ok.json" -w '%{http_code}' --max-time 20 \
    "$S/api/v1/namespaces/$NS/podtemplates?watch=1&resourceVersion=$rev&timeoutSeconds=1" 2>/dev/null)
  eq "$code" 200 "watch from the compaction revision"
  eq "$(jq -r 'select(.type == "ERROR") | .type' "$TMP/ok.json")" "" "no ERROR from the compaction revision"
}

c_reference_informer() {
  local out i items=""
  post "$S/api/v1/namespaces" "{\"metadata\":{\"name\":\"$REF_NS\"}}" >/dev/null
  for i in $(seq -w 1 50); do
    items+="${items:+,}{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"ref-$i\",\"namespace\":\"$REF_NS\"},\"data\":{\"i\":\"$i\"}}"
  done
  kc apply -f - >/dev/null <<<"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[$items]}"
  out=$("$KINFORMER_E2E_BIN/kinformer-ref-informer" -kubeconfig "$KINFORMER_E2E_TOKEN_KUBECONFIG" \
    -resource v1/configmaps -namespace "$REF_NS" -timeout 60s 2>"$TMP/ref.err") || { echo "$out"; tail "$TMP/ref.err"; return 1; }
  note "$out"
  ge "$(jq -r .events <<<"$out")" 50 "events handled"
  eq "$(jq -r .objects <<<"$out")" 50 "objects in the store"
  eq "$(jq -r .mode <<<"$out")" typed "informer kind"
  eq "$(jq -r .client_go_version <<<"$out")" "v0.$(cut -d. -f2,3 <<<"$KINFORMER_E2E_K8S_VERSION")" "client-go version"
  ge "$(jq -r '.synced_ms | floor' <<<"$out")" 0 "synced_ms"
  ge "$(jq -r .rss_kib <<<"$out")" 1000 "rss_kib"
  out=$("$KINFORMER_E2E_BIN/kinformer-ref-informer" -kubeconfig "$KINFORMER_E2E_ADMIN_KUBECONFIG" \
    -resource e2e.kinformer.io/v1/widgets -namespace "$NS" -timeout 60s 2>"$TMP/ref.err") || { echo "$out"; tail "$TMP/ref.err"; return 1; }
  note "$out"
  eq "$(jq -r .mode <<<"$out")" dynamic "informer kind for a custom resource"
  eq "$(jq -r .objects <<<"$out")" 1 "widgets in the store"
}

# A start that fails says where, shows the log, and leaves nothing behind.
c_start_failure_cleanup() {
  local err dir rc=0
  err=$(KINFORMER_E2E_APISERVER_FLAGS=--no-such-flag "$E2E_HERE/cluster.sh" start --owner 0 2>&1 >/dev/null) || rc=$?
  eq "$rc" 1 "exit status of a failed start"
  has "$err" "FAILED at step 'start kube-apiserver'" "failure message"
  has "$err" "last 30 lines of" "log excerpt"
  has "$err" "no-such-flag" "log excerpt names the bad flag"
  dir=$(sed -n "s/.*(state dir \([^,]*\), removed).*/\1/p" <<<"$err")
  [ -n "$dir" ] && [ ! -e "$dir" ] || { echo "state dir '$dir' left behind"; return 1; }
}

# The watchdog stops a cluster whose owner died; Ctrl-C on `cluster.sh run`
# stops its cluster.
c_owner_exit_and_ctrl_c_cleanup() {
  local owner env dir pid kpid rc=0
  sleep 300 &
  owner=$!
  env=$("$E2E_HERE/cluster.sh" start --owner $owner 2>/dev/null)
  dir=$(sed -n "s/^export KINFORMER_E2E_DIR='\(.*\)'$/\1/p" <<<"$env")
  pid=$(cat "$dir/kube-apiserver.pid")
  kpid=$(cat "$dir/kube-controller-manager.pid" 2>/dev/null || true)
  kill $owner
  for _ in $(seq 150); do [ -e "$dir" ] || break; sleep 0.1; done
  [ ! -e "$dir" ] || { echo "dir $dir still there 15s after its owner died"; return 1; }
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "$pid" 2>/dev/null || { echo "kube-apiserver $pid still running"; return 1; }
  [ -z "$kpid" ] || ! kill -0 "$kpid" 2>/dev/null || { echo "kube-controller-manager $kpid still running"; return 1; }

  # Ctrl-C: SIGINT to the whole foreground job (job control makes it a group)
  # (env --default-signal: a shell started in the background ignores SIGINT
  # and could not trap it; a terminal's foreground job does not.)
  set -m
  env --default-signal=INT "$E2E_HERE/cluster.sh" run bash -c 'echo "$KINFORMER_E2E_DIR" >"$0"; sleep 300' "$TMP/ctrlc.dir" 2>"$TMP/ctrlc.err" &
  pid=$!
  set +m
  for _ in $(seq 600); do [ -s "$TMP/ctrlc.dir" ] || ! kill -0 "$pid" 2>/dev/null && break; sleep 0.1; done
  dir=$(cat "$TMP/ctrlc.dir" 2>/dev/null || true)
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "cluster.sh run did not start:"; cat "$TMP/ctrlc.err"; return 1; }
  kill -INT -- -"$pid"
  wait "$pid" || rc=$?
  eq "$rc" 130 "exit status after Ctrl-C"
  [ ! -e "$dir" ] || { echo "dir $dir left after Ctrl-C"; return 1; }
}

# The Lua helper, from busted: starts its own cluster, uses it, stops it.
c_lua_helper() {
  command -v busted >/dev/null && command -v lua5.4 >/dev/null || { echo "busted/lua5.4 missing (make deps)"; return 1; }
  (cd "$E2E_REPO" && KINFORMER_E2E_DIR='' KUBECONFIG='' LUA_PATH='spec/?.lua;;' \
    busted --lua=lua5.4 -o TAP --pattern=_e2e spec/e2e/cluster_e2e.lua) >"$TMP/busted.out" 2>&1 \
    || { tail -n 30 "$TMP/busted.out"; return 1; }
  has "$(cat "$TMP/busted.out")" "ok 3" "busted ran the three tests"
}

CHECKS=(version users namespace configmap controllers crd list_paging watch watchlist compacted_410
  reference_informer start_failure_cleanup owner_exit_and_ctrl_c_cleanup lua_helper)
[ $# -gt 0 ] && CHECKS=("$@")

pass=0 failed=0 n=0
echo "smoke: Kubernetes $KINFORMER_E2E_K8S_VERSION, etcd $KINFORMER_E2E_ETCD_VERSION at $S (ready in $KINFORMER_E2E_READY_MS ms)"
for c in "${CHECKS[@]}"; do
  n=$((n + 1))
  : >"$TMP/notes"
  t0=$(date +%s%3N)
  # set -e inside the subshell: a check stops at its first failing command
  ( set -e; "c_$c" ) >"$TMP/out" 2>&1
  rc=$?
  ms=$(($(date +%s%3N) - t0))
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1))
    echo "ok $n - $c (${ms} ms)"
    cat "$TMP/notes"
  else
    failed=$((failed + 1))
    echo "not ok $n - $c (${ms} ms)"
    sed 's/^/    /' "$TMP/out" | tail -n 30
  fi
done
echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
