#!/usr/bin/env bash
# A throw-away control plane on loopback: etcd (data on tmpfs),
# kube-apiserver and kube-controller-manager, built by spec/e2e/build.sh.
#
#   cluster.sh start [--owner PID]   start, wait for /readyz, print the env
#   cluster.sh stop [DIR]            stop and remove everything (default: $KINFORMER_E2E_DIR)
#   cluster.sh env [DIR]             print the env of a running cluster again
#   cluster.sh run CMD [ARG...]      start, run CMD with the env exported, stop;
#                                    exits with CMD's status
#   cluster.sh kcm stop|start [DIR]  stop kube-controller-manager / start it
#                                    again, the cluster staying up
#
# start prints lines `export KINFORMER_E2E_...='...'` (eval them in a shell;
# spec/e2e/cluster.lua parses them for busted). A watchdog stops the cluster
# when the owner process exits (default: the caller of cluster.sh), so a
# crashed or interrupted test run leaves no processes or directories behind.
#
# Users: kinformer-admin (client certificate, group system:masters),
# kinformer-token (bearer token, bound to cluster-admin by a
# ClusterRoleBinding, i.e. through RBAC), kinformer-nobody (bearer token, no
# permissions: for 403 paths). One kubeconfig each.
# kube-controller-manager runs the controllers kinformer.sim mirrors
# (KINFORMER_E2E_CONTROLLERS, default below: garbage collector, namespace,
# serviceaccount, deployment, replicaset, statefulset, daemonset, job,
# cronjob; "none" starts no controller-manager). There is no scheduler and
# no kubelet: Pods stay Pending, without a node. The ServiceAccount
# admission plugin is off so pods can be created without a token.
# podtemplates are not watch-cached, so their lists and watches go to etcd
# (a watch from a compacted resourceVersion gets 410 Gone).
# Extra server flags: KINFORMER_E2E_APISERVER_FLAGS, KINFORMER_E2E_ETCD_FLAGS,
# KINFORMER_E2E_KCM_FLAGS (space-separated), e.g. --feature-gates=... for a
# test that needs them.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
SELF=$E2E_HERE/cluster.sh
# The controllers of kube-controller-manager (lib.sh), by the names
# (aliases) that kinformer-sim --controllers takes too.
CONTROLLERS=${KINFORMER_E2E_CONTROLLERS:-$E2E_CONTROLLERS}
K8S_MINOR=${K8S_VERSION#v1.}; K8S_MINOR=${K8S_MINOR%%.*}

now_ms() { date +%s%3N; }

# A TCP port nobody on this machine uses, chosen at random below the
# kernel's ephemeral range (so no outgoing connection takes it meanwhile)
# among those /proc/net/tcp* do not show in any state.
free_port() {
  local used p lo=32768 hi=60999 base span
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  if [ "$lo" -gt 12000 ]; then base=10000 span=$((lo - 10000)); else base=$((hi + 1)) span=$((65535 - hi)); fi
  used=$(awk 'FNR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u |
    while read -r h; do echo $((16#$h)); done)
  for _ in $(seq 200); do
    p=$((base + (RANDOM * 32768 + RANDOM) % span))
    grep -qx "$p" <<<"$used" || { echo "$p"; return 0; }
  done
  return 1
}

# --- stop ------------------------------------------------------------------

# stop_dir DIR: kills the processes recorded in DIR (only when they still are
# ours: their command line names DIR) and removes DIR.
stop_dir() {
  local dir=$1 name pid
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  [ -f "$dir/.kinformer-e2e" ] || { echo "cluster: $dir is not a cluster dir" >&2; return 1; }
  # The controller-manager, then kube-apiserver: without etcd its graceful
  # shutdown hangs on reconnects until killed.
  for name in kube-controller-manager kube-apiserver etcd; do stop_one "$dir" "$name"; done
  pid=$(cat "$dir/watchdog.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$pid" != "$$" ] && ours "$pid" "$dir"; then kill -TERM "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}

# stop_one DIR NAME: SIGTERM (SIGKILL after 5 s) to the process NAME of DIR,
# when it still is ours.
stop_one() {
  local dir=$1 name=$2 pid
  pid=$(cat "$dir/$name.pid" 2>/dev/null || true)
  [ -n "$pid" ] && ours "$pid" "$dir" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do ours "$pid" "$dir" || break; sleep 0.05; done
  if ours "$pid" "$dir"; then
    echo "cluster: $name ($pid) still running 5s after SIGTERM: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
}

ours() { { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF -- "$2"; }

# --- start -----------------------------------------------------------------

DIR=""
CUR_STEP=""
CUR_LOG=""

# fail MSG: says which step failed, shows the end of that step's log, stops
# what was started and exits.
# (Under `kcm start` only the controller-manager is stopped: the cluster
# stays.)
fail() {
  trap - EXIT INT TERM
  if [ -n "${KCM_ONLY:-}" ]; then
    echo "cluster: FAILED at step '$CUR_STEP': $* (the cluster in $DIR stays, without kube-controller-manager)" >&2
  else
    echo "cluster: FAILED at step '$CUR_STEP': $* (state dir ${DIR:-none}, removed)" >&2
  fi
  if [ -n "$CUR_LOG" ] && [ -f "$CUR_LOG" ]; then
    echo "cluster: last 30 lines of $CUR_LOG:" >&2
    tail -n 30 "$CUR_LOG" | sed 's/^/  | /' >&2
  fi
  if [ -n "${KCM_ONLY:-}" ]; then stop_one "$DIR" kube-controller-manager; exit 1; fi
  stop_dir "$DIR" || true
  exit 1
}

at() { CUR_STEP=$1; CUR_LOG=${2:-}; }

# launch NAME CMD...: runs CMD in its own session (so a terminal's Ctrl-C
# reaches the test, not the server, and stop decides), output to its log.
launch() {
  local name=$1
  shift
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$DIR/$name.pid" "$@" \
    </dev/null >"$DIR/logs/$name.log" 2>&1 &
  for _ in $(seq 50); do [ -s "$DIR/$name.pid" ] && return 0; sleep 0.02; done
  fail "$name did not start"
}

alive() { local pid; pid=$(cat "$DIR/$1.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

make_pki() {
  local p=$DIR/pki
  mkdir -p "$p"
  cd "$p"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout ca.key -out ca.crt \
    -subj "/CN=kinformer-e2e-ca" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
  # serving certificate: every name a client may use for this server
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout apiserver.key -out apiserver.crt \
    -CA ca.crt -CAkey ca.key -subj "/CN=kube-apiserver" \
    -addext "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" \
    -addext "basicConstraints=critical,CA:FALSE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment" -addext "extendedKeyUsage=serverAuth"
  # client certificate: user kinformer-admin in group system:masters
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -keyout admin.key -out admin.crt \
    -CA ca.crt -CAkey ca.key -subj "/O=system:masters/CN=kinformer-admin" \
    -addext "basicConstraints=critical,CA:FALSE" \
    -addext "keyUsage=critical,digitalSignature,keyEncipherment" -addext "extendedKeyUsage=clientAuth"
  # service-account token signing key pair
  openssl genrsa -out sa.key 2048
  openssl rsa -in sa.key -pubout -out sa.pub
  TOKEN=$(openssl rand -hex 24)
  NOBODY_TOKEN=$(openssl rand -hex 24)
  printf '%s,kinformer-token,kinformer-token-uid,"kinformer:e2e"\n%s,kinformer-nobody,kinformer-nobody-uid\n' \
    "$TOKEN" "$NOBODY_TOKEN" >tokens.csv
  chmod 600 ./*.key tokens.csv
  cd - >/dev/null
}

b64() { base64 -w0 <"$1"; }

# kubeconfig FILE USER AUTH-LINES: admin.kubeconfig embeds its data
# (*-data, like kubeadm), the token ones reference the CA file by path, so
# both forms are exercised.
write_kubeconfigs() {
  local k=$DIR/kubeconfig
  mkdir -p "$k"
  cat >"$k/admin.yaml" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kinformer-e2e
  cluster:
    server: $SERVER
    certificate-authority-data: $(b64 "$DIR/pki/ca.crt")
users:
- name: kinformer-admin
  user:
    client-certificate-data: $(b64 "$DIR/pki/admin.crt")
    client-key-data: $(b64 "$DIR/pki/admin.key")
contexts:
- name: kinformer-admin@kinformer-e2e
  context: {cluster: kinformer-e2e, user: kinformer-admin}
current-context: kinformer-admin@kinformer-e2e
EOF
  local u t
  for u in token nobody; do
    if [ $u = token ]; then t=$TOKEN; else t=$NOBODY_TOKEN; fi
    cat >"$k/$u.yaml" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kinformer-e2e
  cluster:
    server: $SERVER
    certificate-authority: $DIR/pki/ca.crt
users:
- name: kinformer-$u
  user:
    token: $t
contexts:
- name: kinformer-$u@kinformer-e2e
  context: {cluster: kinformer-e2e, user: kinformer-$u}
current-context: kinformer-$u@kinformer-e2e
EOF
  done
  chmod 600 "$k"/*.yaml
}

write_env() {
  cat >"$DIR/env" <<EOF
export KINFORMER_E2E_DIR='$DIR'
export KINFORMER_E2E_SERVER='$SERVER'
export KINFORMER_E2E_CA='$DIR/pki/ca.crt'
export KINFORMER_E2E_ADMIN_CERT='$DIR/pki/admin.crt'
export KINFORMER_E2E_ADMIN_KEY='$DIR/pki/admin.key'
export KINFORMER_E2E_ADMIN_KUBECONFIG='$DIR/kubeconfig/admin.yaml'
export KINFORMER_E2E_TOKEN='$TOKEN'
export KINFORMER_E2E_TOKEN_KUBECONFIG='$DIR/kubeconfig/token.yaml'
export KINFORMER_E2E_NOBODY_TOKEN='$NOBODY_TOKEN'
export KINFORMER_E2E_NOBODY_KUBECONFIG='$DIR/kubeconfig/nobody.yaml'
export KINFORMER_E2E_ETCD='http://127.0.0.1:$ETCD_PORT'
export KINFORMER_E2E_BIN='$E2E_BIN'
export KINFORMER_E2E_KUBECTL='$E2E_BIN/kubectl'
export KINFORMER_E2E_K8S_VERSION='$K8S_VERSION'
export KINFORMER_E2E_ETCD_VERSION='$ETCD_VERSION'
export KINFORMER_E2E_READY_MS='$READY_MS'
export KINFORMER_E2E_APISERVER_READY_MS='$APISERVER_READY_MS'
export KINFORMER_E2E_CONTROLLERS='$CONTROLLERS'
export KINFORMER_E2E_KCM_READY_MS='$KCM_READY_MS'
export KINFORMER_E2E_KCM_PORT='${KCM_PORT:-}'
export KUBECONFIG='$DIR/kubeconfig/admin.yaml'
EOF
}

# start_servers: etcd, then kube-apiserver, each waited for; returns 2 when
# a server could not bind its port (the caller retries), fails otherwise.
start_servers() {
  at "pick ports"
  ETCD_PORT=$(free_port) && PEER_PORT=$(free_port) && API_PORT=$(free_port) || fail "no free port"
  [ "$ETCD_PORT" != "$PEER_PORT" ] && [ "$PEER_PORT" != "$API_PORT" ] && [ "$ETCD_PORT" != "$API_PORT" ] || return 2
  SERVER=https://127.0.0.1:$API_PORT

  at "start etcd" "$DIR/logs/etcd.log"
  launch etcd "$E2E_BIN/etcd" --name kinformer-e2e --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
    --initial-cluster "kinformer-e2e=http://127.0.0.1:$PEER_PORT" \
    --unsafe-no-fsync --log-level warn ${KINFORMER_E2E_ETCD_FLAGS:-}
  local ok=""
  for _ in $(seq 200); do
    alive etcd || { bind_failed etcd && return 2; fail "etcd exited"; }
    if curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; then ok=1; break; fi
    sleep 0.1
  done
  [ -n "$ok" ] || fail "etcd not healthy within 20s"

  at "start kube-apiserver" "$DIR/logs/kube-apiserver.log"
  local ta
  ta=$(now_ms)
  launch kube-apiserver "$E2E_BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --cert-dir="$DIR/pki" \
    --tls-cert-file="$DIR/pki/apiserver.crt" --tls-private-key-file="$DIR/pki/apiserver.key" \
    --client-ca-file="$DIR/pki/ca.crt" \
    --token-auth-file="$DIR/pki/tokens.csv" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$DIR/pki/sa.pub" \
    --service-account-signing-key-file="$DIR/pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --disable-admission-plugins=ServiceAccount \
    --watch-cache-sizes=podtemplates#0 \
    --profiling=false ${KINFORMER_E2E_APISERVER_FLAGS:-}
  ok=""
  for _ in $(seq 600); do
    alive kube-apiserver || { bind_failed kube-apiserver && return 2; fail "kube-apiserver exited"; }
    if [ "$(curl -sS --max-time 2 --cacert "$DIR/pki/ca.crt" "$SERVER/readyz" 2>/dev/null)" = ok ]; then ok=1; break; fi
    sleep 0.1
  done
  [ -n "$ok" ] || fail "kube-apiserver not ready (/readyz) within 60s"
  APISERVER_READY_MS=$(($(now_ms) - ta))
}

# start_kcm: kube-controller-manager with the admin kubeconfig (every
# controller as kinformer-admin: --use-service-account-credentials=false),
# no leader election, its secure port on a free loopback port for /healthz;
# waits until /healthz is ok and every controller asked for has logged that
# it started. Nothing with CONTROLLERS=none.
start_kcm() {
  KCM_READY_MS=0
  [ "$CONTROLLERS" != none ] || return 0
  local port tk ok="" try
  for try in 1 2 3; do
    at "start kube-controller-manager" "$DIR/logs/kube-controller-manager.log"
    port=$(free_port) || fail "no free port"
    tk=$(now_ms)
    launch kube-controller-manager "$E2E_BIN/kube-controller-manager" \
      --kubeconfig="$DIR/kubeconfig/admin.yaml" \
      --bind-address=127.0.0.1 --secure-port="$port" --cert-dir="$DIR/kcm" \
      --leader-elect=false --use-service-account-credentials=false \
      --controllers="$CONTROLLERS" \
      --kube-api-qps=200 --kube-api-burst=400 \
      --concurrent-deployment-syncs=10 --concurrent-replicaset-syncs=10 \
      --concurrent-namespace-syncs=10 --concurrent-gc-syncs=20 \
      --profiling=false ${KINFORMER_E2E_KCM_FLAGS:-}
    for _ in $(seq 600); do
      if ! alive kube-controller-manager; then
        bind_failed kube-controller-manager && continue 2
        fail "kube-controller-manager exited"
      fi
      if [ "$(curl -sSk --max-time 2 "https://127.0.0.1:$port/healthz" 2>/dev/null)" = ok ] && kcm_started; then
        ok=1
        break 2
      fi
      sleep 0.1
    done
    fail "kube-controller-manager not ready (/healthz and its controllers started) within 60s"
  done
  [ -n "$ok" ] || fail "ports taken three times"
  KCM_PORT=$port
  KCM_READY_MS=$(($(now_ms) - tk))
}

# kcm_started: true once the garbage collector (when asked for) has synced
# its monitors and proceeds to collect, i.e. a delete from now on is
# collected; the other controllers start before it.
kcm_started() {
  case ",$CONTROLLERS," in
    *,garbagecollector,*|*,garbage-collector-controller,*|*,\*,*)
      grep -q 'Proceeding to collect garbage' "$DIR/logs/kube-controller-manager.log" 2>/dev/null ;;
    *) return 0 ;;
  esac
}

bind_failed() { grep -q 'address already in use' "$DIR/logs/$1.log" 2>/dev/null; }

stop_servers() {
  local name pid
  for name in kube-apiserver etcd; do
    pid=$(cat "$DIR/$name.pid" 2>/dev/null || true)
    [ -n "$pid" ] && ours "$pid" "$DIR" && kill -KILL "$pid" 2>/dev/null
    for _ in $(seq 100); do [ -n "$pid" ] && ours "$pid" "$DIR" || break; sleep 0.05; done
    rm -f "$DIR/$name.pid"
  done
}

cmd_start() {
  local owner=$PPID
  while [ $# -gt 0 ]; do
    case $1 in
      --owner) owner=$2; shift 2 ;;
      *) echo "cluster start: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  local t0
  t0=$(now_ms)
  trap 'fail "interrupted"' INT TERM
  trap 'fail "exited unexpectedly (status $?)"' EXIT

  at "check binaries"
  e2e_wait_build
  local b
  for b in etcd kube-apiserver kubectl kube-controller-manager; do
    [ -x "$E2E_BIN/$b" ] || fail "$E2E_BIN/$b is missing: run 'make e2e-deps'"
  done
  e2e_need openssl:openssl curl:curl >&2
  ETCD_VERSION=$("$E2E_BIN/etcd" --version | sed -n 's/^etcd Version: /v/p')

  at "make state dir"
  local base=/dev/shm
  [ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
  DIR=$(mktemp -d "$base/kinformer-e2e.XXXXXX")
  touch "$DIR/.kinformer-e2e"
  mkdir -p "$DIR/logs"

  at "generate certificates and keys" "$DIR/logs/pki.log"
  make_pki >"$DIR/logs/pki.log" 2>&1 || fail "openssl failed"

  # A port picked free can be taken before the server binds it: on
  # "address already in use" start over with other ports (3 tries).
  local try rc
  for try in 1 2 3; do
    rc=0
    start_servers || rc=$?
    [ $rc -eq 0 ] && break
    [ $try -lt 3 ] || fail "ports taken three times"
    echo "cluster: port taken, retrying with other ports" >&2
    stop_servers
    rm -rf "$DIR/etcd"
  done

  at "write kubeconfigs"
  write_kubeconfigs

  at "bind kinformer-token to cluster-admin" "$DIR/logs/rbac.log"
  "$E2E_BIN/kubectl" --kubeconfig "$DIR/kubeconfig/admin.yaml" create clusterrolebinding kinformer-e2e-token \
    --clusterrole=cluster-admin --user=kinformer-token >"$DIR/logs/rbac.log" 2>&1 || fail "kubectl failed"
  # RBAC answers from an informer cache: wait until the binding is in force.
  ok=""
  for _ in $(seq 100); do
    if curl -fsS --max-time 2 -o /dev/null --cacert "$DIR/pki/ca.crt" -H "Authorization: Bearer $TOKEN" \
      "$SERVER/api/v1/namespaces/default" 2>>"$DIR/logs/rbac.log"; then ok=1; break; fi
    sleep 0.1
  done
  [ -n "$ok" ] || fail "kinformer-token still not authorized after 10s"

  start_kcm

  READY_MS=$(($(now_ms) - t0))
  write_env

  at "start watchdog"
  if [ "$owner" != 0 ]; then
    # Stops the cluster once the owner is gone; names DIR on its command
    # line so that stop can tell it is ours.
    setsid bash -c 'echo $$ >"$1/watchdog.pid"; while kill -0 "$2" 2>/dev/null && [ -d "$1" ]; do sleep 1; done; exec "$0" stop "$1"' \
      "$SELF" "$DIR" "$owner" </dev/null >/dev/null 2>&1 &
  fi
  trap - EXIT INT TERM
  echo "cluster: ready in ${READY_MS} ms (kube-apiserver ${APISERVER_READY_MS} ms, kube-controller-manager ${KCM_READY_MS} ms: $CONTROLLERS), $SERVER, etcd $ETCD_VERSION, dir $DIR" >&2
  cat "$DIR/env"
}

cmd_run() {
  [ $# -gt 0 ] || { echo "usage: cluster.sh run CMD [ARG...]" >&2; exit 2; }
  local env rc=0
  env=$("$SELF" start --owner $$) || exit 1
  eval "$env"
  trap '"$SELF" stop "$KINFORMER_E2E_DIR"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  "$@" || rc=$?
  exit $rc
}

# cmd_kcm start|stop [DIR]: starts kube-controller-manager in a running
# cluster without one (after `kcm stop`), or stops it, leaving the cluster.
# spec/differential/run.sh records its API-server scenarios without it.
cmd_kcm() {
  local what=${1:-}
  DIR=${2:-${KINFORMER_E2E_DIR:-}}
  [ -n "$DIR" ] && [ -f "$DIR/.kinformer-e2e" ] && [ -f "$DIR/env" ] || { echo "cluster kcm: no running cluster (give its dir)" >&2; exit 1; }
  case $what in
    stop) stop_one "$DIR" kube-controller-manager; rm -f "$DIR/kube-controller-manager.pid" ;;
    start)
      local pid
      pid=$(cat "$DIR/kube-controller-manager.pid" 2>/dev/null || true)
      if [ -n "$pid" ] && ours "$pid" "$DIR"; then return 0; fi
      KCM_ONLY=1
      CONTROLLERS=$(sed -n "s/^export KINFORMER_E2E_CONTROLLERS='\(.*\)'$/\1/p" "$DIR/env")
      CONTROLLERS=${CONTROLLERS:-$E2E_CONTROLLERS}
      start_kcm
      sed -i "s/^export KINFORMER_E2E_KCM_PORT=.*/export KINFORMER_E2E_KCM_PORT='${KCM_PORT:-}'/" "$DIR/env"
      if [ "$CONTROLLERS" = none ]; then
        echo "cluster: no kube-controller-manager (controllers: none)" >&2
      else
        echo "cluster: kube-controller-manager ready in ${KCM_READY_MS} ms ($CONTROLLERS)" >&2
      fi ;;
    *) echo "usage: cluster.sh kcm start|stop [DIR]" >&2; exit 2 ;;
  esac
}

case ${1:-} in
  start) shift; cmd_start "$@" ;;
  stop) stop_dir "${2:-${KINFORMER_E2E_DIR:-}}" ;;
  env)
    d=${2:-${KINFORMER_E2E_DIR:-}}
    [ -n "$d" ] && [ -f "$d/env" ] || { echo "cluster env: no running cluster (give its dir)" >&2; exit 1; }
    cat "$d/env" ;;
  run) shift; cmd_run "$@" ;;
  kcm) shift; cmd_kcm "$@" ;;
  *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
