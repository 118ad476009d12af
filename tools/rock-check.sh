#!/usr/bin/env bash
# Proves the rockspec: builds and installs the rock with luarocks into a
# throw-away tree, then requires kinformer from that tree (and only there).
# luarocks compiles next to the sources, so it builds a copy of them (made
# in the throw-away directory): the checkout gets no object file, and runs
# by several people at once do not collide. No build/ directory is used.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/update-rockspec.sh --check
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir "$tree/src"
cp -r rockspec csrc include lua bin "$tree/src/"
find "$tree/src" \( -name '*.o' -o -name '*.so' -o -name '*.a' \) -delete
(cd "$tree/src" && luarocks --lua-version 5.4 make --deps-mode=none --tree "$tree" \
  rockspec/kinformer-scm-1.rockspec CURL_INCDIR=/usr/include/x86_64-linux-gnu) >"$tree/build.log" 2>&1 || {
  echo "rock-check: luarocks make failed:" >&2
  tail -30 "$tree/build.log" >&2
  exit 1
}
out=$(cd / && TREE="$tree" LUA_PATH="$tree/share/lua/5.4/?.lua;$tree/share/lua/5.4/?/init.lua;;" \
  LUA_CPATH="$tree/lib/lua/5.4/?.so;;" lua5.4 -e '
  local k = require "kinformer"
  for _, m in ipairs{ "kinformer.core", "kinformer.simcore" } do
    assert((package.searchpath(m, package.cpath) or ""):find(os.getenv("TREE"), 1, true),
           m .. " not installed in the rock tree")
  end
  local o = assert(k.object([[{"metadata":{"name":"a","namespace":"b"}}]]))
  assert(o:key() == "b/a")
  local sim = assert(require("kinformer.sim").start())
  assert(sim.url:find("^http://127%.0%.0%.1:%d+$"), sim.url)
  sim:stop()
  print(k._VERSION)' 2>&1) || { echo "rock-check: require failed: $out" >&2; exit 1; }
echo "rock-check: luarocks make + require ok ($out)"

# kinformer.core, the module operators load in production, links no part
# of the test server (kinformer.simcore does).
core_so="$tree/lib/lua/5.4/kinformer/core.so"
if readelf -d "$core_so" | grep -E 'NEEDED.*(microhttpd|gnutls|jansson)' >&2; then
  echo "rock-check: $core_so links the sim's libraries" >&2
  exit 1
fi
readelf -d "$tree/lib/lua/5.4/kinformer/simcore.so" | grep -q 'NEEDED.*microhttpd' || {
  echo "rock-check: kinformer/simcore.so was not built with libmicrohttpd" >&2; exit 1; }
echo "rock-check: kinformer.core needs no libmicrohttpd, GnuTLS or Jansson; kinformer.simcore does"

# The installed command runs an example operator from the rock tree: the
# Website operator against an in-process kinformer.sim, stopped by SIGINT.
[ -x "$tree/bin/kinformer" ] || { echo "rock-check: bin/kinformer was not installed" >&2; exit 1; }
log="$tree/run.log"
# (a tree other than the default one is put on the paths as
# `eval "$(luarocks --tree T path)"` would)
(cd examples/website && exec env LUA_PATH="$tree/share/lua/5.4/?.lua;$tree/share/lua/5.4/?/init.lua;;" \
  LUA_CPATH="$tree/lib/lua/5.4/?.so;;" "$tree/bin/kinformer" run operator.lua \
  --sim --seed seed.json -v) >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q 'Ready=True' "$log" && break
  sleep 0.1
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
if [ "$rc" -ne 0 ] || ! grep -q 'created Deployment default/hello' "$log"; then
  echo "rock-check: the installed kinformer did not run the Website operator (exit $rc):" >&2
  cat "$log" >&2
  exit 1
fi
echo "rock-check: installed bin/kinformer ran the Website operator and stopped on SIGINT (exit 0)"
