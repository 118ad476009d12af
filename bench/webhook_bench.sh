#!/usr/bin/env bash
# make bench-webhook: admission requests per second of kinformer's webhook
# server against controller-runtime's, and through kinformer.sim's
# in-process admission chain.
#
# 1. HTTPS, like against like. Two servers run side by side with the same
#    key pair (an ECDSA P-256 serving certificate for 127.0.0.1 signed by a
#    CA made here with openssl) and the same work:
#      kinformer: bench/lua/webhook_bench.lua --mode serve, the Website
#        example's validating webhook (examples/website/operator.lua: deny a
#        Website without spec.image or with negative spec.replicas) served
#        by a manager (webhook_bind_address, webhook_cert_path);
#      controller-runtime: kinformer-ref-webhook
#        (bench/reference/controller-runtime-webhook, controller-runtime
#        v0.25.2's webhook.Server and webhook.Admission), a handler that
#        decodes the object and checks the same two fields.
#    One load program drives both (kinformer-webhook-load, ./load in the
#    same Go module): CONC keep-alive HTTP/1.1 connections over TLS, opened
#    before the clock, each posting bench/webhook_review.json (an
#    AdmissionReview v1 of a Website CREATE, a 1.1 KB object) back to back
#    for DURATION s after a 1 s warm-up, every answer checked (HTTP 200,
#    the request's uid, allowed). BENCH_REPEAT runs per server and
#    concurrency in alternating order; the table gives the median.
# 2. In process: bench/lua/webhook_bench.lua --mode sim: CREATES Websites
#    created through a kinformer.sim by one client, first with no webhook,
#    then with the example's webhooks registered on the sim by a manager
#    on it (mgr:webhook with sim=): each create runs the validating hook in
#    a worker state, called by the sim's admission chain.
#
# Usage: bench/webhook_bench.sh [--quick]
#   --quick        2 s per run, concurrency 8 only, 1000 creates (CI, < 1 min)
#   BENCH_REPEAT   runs per measurement (median), default 3
#   BENCH_CONC     concurrencies, default "1 8" (--quick: "8")
#   BENCH_DIR      certificates, logs and results.jsonl, default build/bench-webhook
# Binaries: KINFORMER_REF_WEBHOOK, KINFORMER_WEBHOOK_LOAD (default the e2e
# cache's), KINFORMER_LUA_CPATH (where kinformer/core.so is; default
# build/release), LUA (default lua5.4).
set -euo pipefail
BENCH_NAME=bench-webhook
. "$(dirname "$0")/lib.sh" # sets ROOT, sources spec/e2e/lib.sh
e2e_need jq:jq openssl:openssl
bench_args "$@"

REF=${KINFORMER_REF_WEBHOOK:-$E2E_BIN/kinformer-ref-webhook}
LOAD=${KINFORMER_WEBHOOK_LOAD:-$E2E_BIN/kinformer-webhook-load}
CPATH_DIR=${KINFORMER_LUA_CPATH:-$ROOT/build/release}
LUA=${LUA:-lua5.4}
DIR=${BENCH_DIR:-$ROOT/build/bench-webhook}
BODY=$ROOT/bench/webhook_review.json
for b in "$REF" "$LOAD" "$CPATH_DIR/kinformer/core.so"; do
  [ -e "$b" ] || { echo "bench-webhook: $b is missing (make bench-webhook builds it)" >&2; exit 1; }
done
"$LUA" -e 'require "system"' 2>/dev/null ||
  { echo "bench-webhook: the Lua module 'system' (Debian lua-system, a busted dependency) is missing" >&2; exit 1; }

REPEAT=${BENCH_REPEAT:-3}
if [ $quick = 1 ]; then
  DURATION=2s CONC=${BENCH_CONC:-8} CREATES=1000
else
  DURATION=8s CONC=${BENCH_CONC:-1 8} CREATES=5000
fi

rm -rf "$DIR/logs" "$DIR/certs"
mkdir -p "$DIR/logs" "$DIR/certs"
RESULTS=$DIR/results.jsonl
: >"$RESULTS"
export LUA_PATH="$ROOT/lua/?.lua;$ROOT/lua/?/init.lua;$ROOT/?.lua;;"
export LUA_CPATH="$CPATH_DIR/?.so;;"
cd "$ROOT"

# The key pair both servers serve: a CA, and a certificate for 127.0.0.1
# signed by it (ECDSA P-256, as kinformer's self-made ones).
C=$DIR/certs
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=bench-webhook-ca -keyout "$C/ca.key" -out "$C/ca.crt" 2>"$DIR/logs/openssl.err"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
  -keyout "$C/tls.key" -out "$C/tls.csr" 2>>"$DIR/logs/openssl.err"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$C/ext.cnf"
openssl x509 -req -in "$C/tls.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial -days 2 \
  -extfile "$C/ext.cnf" -out "$C/tls.crt" 2>>"$DIR/logs/openssl.err"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

KIN_PID="" REF_PID=""
cleanup() {
  local p
  for p in $KIN_PID $REF_PID; do kill "$p" 2>/dev/null || true; done
  for p in $KIN_PID $REF_PID; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_file F PID WHAT: until F is non-empty; fails when PID died or 30 s pass.
wait_file() {
  local i
  for ((i = 0; i < 600; i++)); do
    [ -s "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || { echo "bench-webhook: $3 died:" >&2; cat "$DIR/logs/$3.err" >&2; exit 1; }
    sleep 0.05
  done
  echo "bench-webhook: $3 not ready after 30 s" >&2
  cat "$DIR/logs/$3.err" >&2
  exit 1
}

KIN_PORT=$(free_port)
"$LUA" bench/lua/webhook_bench.lua --mode serve --bind "127.0.0.1:$KIN_PORT" --cert-dir "$C" \
  --ready-file "$DIR/kinformer.ready" --timeout 1800 >"$DIR/logs/kinformer.out" 2>"$DIR/logs/kinformer.err" &
KIN_PID=$!
rm -f "$DIR/kinformer.ready"
wait_file "$DIR/kinformer.ready" "$KIN_PID" kinformer
KIN_PATH=$(head -1 "$DIR/kinformer.ready")

REF_PORT=$(free_port)
rm -f "$DIR/controller-runtime.ready"
"$REF" -host 127.0.0.1 -port "$REF_PORT" -cert-dir "$C" -path "$KIN_PATH" \
  -ready-file "$DIR/controller-runtime.ready" >"$DIR/logs/controller-runtime.out" 2>"$DIR/logs/controller-runtime.err" &
REF_PID=$!
wait_file "$DIR/controller-runtime.ready" "$REF_PID" controller-runtime

declare -A URL=([kinformer]="https://127.0.0.1:$KIN_PORT$KIN_PATH"
                [controller-runtime]="https://127.0.0.1:$REF_PORT$KIN_PATH")
echo "bench-webhook: kinformer ${URL[kinformer]} (pid $KIN_PID), controller-runtime ${URL[controller-runtime]} (pid $REF_PID)"
echo "bench-webhook: $(wc -c <"$BODY") B AdmissionReview, ${DURATION} per run, concurrency ${CONC}, ${REPEAT} runs each (median)"

# The servers' peak RSS is read at the end (VmHWM).
for c in $CONC; do
  for ((r = 1; r <= REPEAT; r++)); do
    order="kinformer controller-runtime"
    [ $((r % 2)) = 0 ] && order="controller-runtime kinformer"
    for s in $order; do
      if ! out=$("$LOAD" -url "${URL[$s]}" -body "$BODY" -ca "$C/ca.crt" -c "$c" -d "$DURATION" \
        -warmup 1s -expect allowed 2>>"$DIR/logs/load.err"); then
        echo "bench-webhook: the load against $s failed:" >&2
        tail -5 "$DIR/logs/load.err" >&2
        exit 1
      fi
      jq -c --arg s "$s" --argjson r "$r" '. + {server: $s, repeat: $r}' <<<"$out" >>"$RESULTS"
      echo "  $s c=$c run $r: $(jq -r '"\(.rps | floor) req/s, p50 \(.p50_ms) ms, p99 \(.p99_ms) ms, \(.proto), \(.tls)"' <<<"$out")"
    done
  done
done
hwm() { awk '/VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
KIN_HWM=$(hwm "$KIN_PID") REF_HWM=$(hwm "$REF_PID")
cleanup
KIN_PID="" REF_PID=""

echo "bench-webhook: in process: $CREATES Website creates through kinformer.sim, without then with the webhook"
if ! sim_out=$("$LUA" bench/lua/webhook_bench.lua --mode sim --creates "$CREATES" 2>"$DIR/logs/sim.err" | tail -1) ||
   [ "$(jq -r '.error // empty' <<<"$sim_out")" != "" ]; then
  echo "bench-webhook: the in-process run failed: $sim_out" >&2
  cat "$DIR/logs/sim.err" >&2
  exit 1
fi
jq -c '. + {server: "kinformer-sim"}' <<<"$sim_out" >>"$RESULTS"

echo
echo "admission requests/s over HTTPS (median of $REPEAT; HTTP/1.1 keep-alive, TLS 1.3, same body, same key pair)"
jq -rs --arg khwm "$KIN_HWM" --arg rhwm "$REF_HWM" '
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def f($d): . * pow(10; $d) | round / pow(10; $d) | tostring;
  def pad($n): tostring | . + (" " * ([$n - length, 0] | max));
  (["concurrency", "server", "req/s", "p50 ms", "p99 ms", "vs controller-runtime"] | map(pad(22)) | join("")),
  ( [ .[] | select(.workers) ] | group_by(.workers)[] as $g
    | ($g | map(select(.server == "controller-runtime") | .rps) | median) as $ref
    | ("kinformer", "controller-runtime") as $s
    | ($g | map(select(.server == $s))) as $x
    | ($x | map(.rps) | median) as $rps
    | [ ($g[0].workers | tostring), $s, ($rps | floor | tostring), ($x | map(.p50_ms) | median | f(2)),
        ($x | map(.p99_ms) | median | f(2)), (($rps / $ref) | f(2) + "x") ] | map(pad(22)) | join("")),
  "",
  "peak RSS (VmHWM): kinformer \($khwm) KiB (with its in-process sim), controller-runtime \($rhwm) KiB",
  "",
  ( .[] | select(.server == "kinformer-sim")
    | "through kinformer.sim in process (\(.creates) creates, one client): \(.base_per_s | floor) creates/s without a webhook, \(.webhook_per_s | floor) creates/s with the validating webhook (\(.webhook_us_per_create | f(1)) us per create of difference); the hook answered \(.hook_calls) admission reviews in \(.hook_us_per_call | f(1)) us each (its server'"'"'s latency metric)")
' "$RESULTS"
