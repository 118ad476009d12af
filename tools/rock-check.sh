#!/usr/bin/env bash
# Proves the rock as users install it (make rock-check; CI runs it):
#  1. the rockspecs lint and the scm one is in sync with the release one;
#  2. `make rock` builds the release tarball, the source rock and a rocks
#     server (build/rock/server, with its manifest);
#  3. `luarocks install kinformer`, by name, from that server only, into an
#     empty tree, from / (no checkout on any path): it builds in luarocks'
#     own temporary copy, so the checkout's `git status` must not change;
#  4. the tree holds the kinformer command, kinformer-sim, both C modules
#     (kinformer.core linking none of the sim's libraries), the examples and
#     the LuaCATS definitions (types/);
#  5. the installed kinformer-sim serves the Website example's seed and the
#     installed kinformer runs the installed Website example against it,
#     with no LUA_PATH/LUA_CPATH (the luarocks wrapper of bin/kinformer
#     finds the tree), until it reconciled; SIGINT stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
LUAROCKS=(luarocks --lua-version 5.4)
tools/update-rockspec.sh --check
for s in rockspec/*.rockspec; do "${LUAROCKS[@]}" lint "$s"; done
status_before=$(git status --porcelain --untracked-files=all)
make --no-print-directory rock >/dev/null
ver=$(ls build/rock/server/*.src.rock | sed 's,.*/kinformer-\(.*\)\.src\.rock,\1,')
grep -q "\"$ver\"" build/rock/server/manifest || { echo "rock-check: $ver not in the server's manifest" >&2; exit 1; }

tree=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tree"
}
trap cleanup EXIT
(cd / && env -u LUA_PATH -u LUA_CPATH "${LUAROCKS[@]}" --tree "$tree/t" install \
  --only-server="file://$root/build/rock/server" kinformer) >"$tree/install.log" 2>&1 || {
  echo "rock-check: luarocks install kinformer failed:" >&2
  tail -30 "$tree/install.log" >&2
  exit 1
}
grep -q "^Installing file://$root/build/rock/server/kinformer-$ver.src.rock\|^Installing $root/build/rock/server/kinformer-$ver.src.rock" "$tree/install.log" || {
  echo "rock-check: luarocks did not install the source rock:" >&2; head -3 "$tree/install.log" >&2; exit 1; }
status_after=$(git status --porcelain --untracked-files=all)
if [ "$status_before" != "$status_after" ]; then
  echo "rock-check: installing the rock changed the source tree:" >&2
  diff <(echo "$status_before") <(echo "$status_after") >&2 || true
  exit 1
fi
echo "rock-check: luarocks install kinformer ($ver) from build/rock/server into an empty tree ok; source tree unchanged"

t=$tree/t
rockdir=$("${LUAROCKS[@]}" --tree "$t" show --rock-dir kinformer)
for f in "$t/bin/kinformer" "$t/bin/kinformer-sim" "$t/lib/lua/5.4/kinformer/core.so" \
         "$t/lib/lua/5.4/kinformer/simcore.so" "$t/share/lua/5.4/kinformer/init.lua" \
         "$t/share/lua/5.4/kinformer/cmd/cli.lua" "$rockdir/examples/website/operator.lua" \
         "$rockdir/types/kinformer.lua" "$rockdir/types/kinformer/manager.lua"; do
  [ -e "$f" ] || { echo "rock-check: the rock did not install $f" >&2; exit 1; }
done
# kinformer.core, the module operators load in production, links no part
# of the test server (Jansson: kinformer.simcore does) but libmicrohttpd
# and GnuTLS, which serve its metrics, admin and health endpoints (HTTPS).
core_so="$t/lib/lua/5.4/kinformer/core.so"
if readelf -d "$core_so" | grep -E 'NEEDED.*jansson' >&2; then
  echo "rock-check: kinformer/core.so links the sim's libraries" >&2
  exit 1
fi
readelf -d "$core_so" | grep -q 'NEEDED.*microhttpd' || {
  echo "rock-check: kinformer/core.so was not built with libmicrohttpd (metrics server)" >&2; exit 1; }
readelf -d "$t/lib/lua/5.4/kinformer/simcore.so" | grep -q 'NEEDED.*microhttpd' || {
  echo "rock-check: kinformer/simcore.so was not built with libmicrohttpd" >&2; exit 1; }
echo "rock-check: the tree has bin/kinformer, bin/kinformer-sim, kinformer.core (libmicrohttpd and GnuTLS for /metrics; no Jansson), kinformer.simcore, examples/, types/"

# The installed programs, run from / with no Lua paths set.
ex=$rockdir/examples/website
(cd / && exec env -u LUA_PATH -u LUA_CPATH "$t/bin/kinformer-sim" --port 0 --seed "$ex/seed.json" \
  --kubeconfig "$tree/kubeconfig") >"$tree/sim.out" 2>"$tree/sim.err" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$tree/sim.out" ] && break; sleep 0.1; done
grep -q '^http' "$tree/sim.out" || { echo "rock-check: kinformer-sim did not start:" >&2; cat "$tree/sim.err" >&2; exit 1; }
# run_installed LOG PATTERN ARGS...: the installed `kinformer run ARGS`
# from / with no Lua paths, until LOG shows PATTERN (30 s), then SIGINT;
# sets rc to its exit status.
run_installed() {
  local log=$1 pattern=$2 pid
  shift 2
  (cd / && exec env -u LUA_PATH -u LUA_CPATH "$t/bin/kinformer" run "$@") >"$log" 2>&1 &
  pid=$!
  pids+=($pid)
  for _ in $(seq 1 300); do
    grep -q -- "$pattern" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -INT "$pid" 2>/dev/null || true
  rc=0
  wait "$pid" || rc=$?
}

log=$tree/run.log
run_installed "$log" 'Ready=True' "$ex/operator.lua" --kubeconfig "$tree/kubeconfig" -v
if [ "$rc" -ne 0 ] || ! grep -q 'created Deployment default/hello' "$log" || ! grep -q 'Ready=True' "$log"; then
  echo "rock-check: the installed kinformer did not run the installed Website example (exit $rc):" >&2
  cat "$log" >&2
  exit 1
fi
echo "rock-check: installed bin/kinformer ran examples/website/operator.lua from the rock against the installed kinformer-sim:"
grep -E 'created (Deployment|Service)|Ready=True' "$log" | sed 's/^/  /' | head -4

# The README's 20-line operator from the rock, with leader election and
# metrics, against an in-process kinformer.sim: it takes the Lease, greets
# the labelled ConfigMap and releases the Lease on SIGINT.
hello=$rockdir/examples/hello
log=$tree/hello.log
run_installed "$log" 'hello default/greet-me: done' "$hello/operator.lua" \
  --sim --seed "$hello/seed.json" --leader-elect --metrics-bind-address 127.0.0.1:0 -v
if [ "$rc" -ne 0 ] || ! grep -q 'acquired by' "$log" || ! grep -q 'serving metrics on port' "$log" \
   || ! grep -q 'hello default/greet-me: done' "$log" || ! grep -q 'released by' "$log"; then
  echo "rock-check: the installed kinformer did not run examples/hello/operator.lua (exit $rc):" >&2
  cat "$log" >&2
  exit 1
fi
echo "rock-check: installed bin/kinformer ran examples/hello/operator.lua (--leader-elect, metrics) from the rock:"
grep -E 'acquired by|serving metrics|greet-me: done|released by' "$log" | sed 's/^/  /' | head -4

# and prints the example's manifests (no server needed)
(cd / && env -u LUA_PATH -u LUA_CPATH "$t/bin/kinformer" manifests "$ex/operator.lua" --image example/op:1) \
  >"$tree/manifests.yaml" 2>&1 || { echo "rock-check: kinformer manifests failed:" >&2; cat "$tree/manifests.yaml" >&2; exit 1; }
grep -q '^kind: ClusterRole$' "$tree/manifests.yaml" && grep -q '^kind: Deployment$' "$tree/manifests.yaml" || {
  echo "rock-check: kinformer manifests printed no ClusterRole and Deployment:" >&2; cat "$tree/manifests.yaml" >&2; exit 1; }
echo "rock-check: installed bin/kinformer manifests printed $(grep -c '^kind:' "$tree/manifests.yaml") documents for the Website example"
