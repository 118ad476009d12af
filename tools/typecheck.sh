#!/usr/bin/env bash
# make typecheck (mk/lint.mk): type-checks the LuaCATS definitions (types/),
# the examples, the classes `kinformer types` prints and kinformer's own
# Lua code with EmmyLua's checker, emmylua_check (crates.io), configured by
# .emmyrc.json.
#
# The checker is built once with cargo (on PATH, or rustup's
# ~/.cargo/bin/cargo) into $KIN_TOOLS_CACHE (default
# ~/.cache/kinformer-tools)/emmylua_check-<version>/ and reused: a cold
# `cargo install` takes 4.5 minutes on 2 idle cores, 9 beside a parallel
# build (measured), a warm run
# about a second.
#
# The runs:
#  1. types/, examples/ and `kinformer types` for kinformer.sim's
#     Deployment and the Website CRD (examples/website/seed.json): every
#     diagnostic fails (--warnings-as-errors). The checker skips ---@meta
#     files, so it reads a copy of types/ (build/typecheck/types) whose
#     ---@meta line is replaced by a directive that lets the stubs' empty
#     bodies return nothing.
#  2. the same types with `kinformer types --all` (every schema the sim
#     documents), strict as 1.
#  3. lua/ (the implementation, not annotated) against types/: only what
#     .emmyrc.json makes an error (syntax, undefined globals, a wrong
#     number of arguments to the annotated API, unknown types); the
#     checker's other findings on unannotated code are inferences, not
#     errors.
# Needs the release build (bin/kinformer types runs kinformer.sim).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.25.1
cache=${KIN_TOOLS_CACHE:-$HOME/.cache/kinformer-tools}
root=$cache/emmylua_check-$VERSION
bin=$root/bin/emmylua_check

if [ ! -x "$bin" ]; then
  cargo=$(command -v cargo || true)
  [ -n "$cargo" ] || cargo=$HOME/.cargo/bin/cargo
  if [ ! -x "$cargo" ]; then
    echo "typecheck: cargo not found (install Rust with rustup, https://rustup.rs): it builds emmylua_check $VERSION once" >&2
    exit 1
  fi
  mkdir -p "$cache"
  log=$cache/emmylua_check-$VERSION.log
  tmp=$cache/.emmylua_check-$VERSION.$$
  echo "typecheck: building emmylua_check $VERSION into $root (once: about 5 minutes on 2 cores; log $log)" >&2
  t0=$SECONDS
  rm -rf "$tmp"
  if ! "$cargo" install emmylua_check --version "$VERSION" --locked --root "$tmp" >"$log" 2>&1; then
    tail -20 "$log" >&2
    rm -rf "$tmp"
    echo "typecheck: cargo install emmylua_check $VERSION failed (log $log)" >&2
    exit 1
  fi
  rm -rf "$root"
  mv "$tmp" "$root"
  echo "typecheck: emmylua_check $VERSION built in $((SECONDS - t0)) s" >&2
fi

out=build/typecheck
rm -rf "$out"
mkdir -p "$out/k8s" "$out/k8s-all"
cp -r types "$out/types"
while IFS= read -r f; do
  head -1 "$f" | grep -q '^---@meta' || { echo "typecheck: $f does not start with ---@meta" >&2; exit 1; }
  sed -i '1s/^---@meta.*$/---@diagnostic disable: missing-return, missing-return-value/' "$f"
done < <(find "$out/types" -name '*.lua')

bin/kinformer types --sim --seed examples/website/seed.json apps/v1/deployments \
  example.kinformer.io/v1/websites >"$out/k8s/website.lua"
bin/kinformer types --sim --seed examples/website/seed.json --all >"$out/k8s-all/all.lua"
sed -i '1s/^---@meta$/-- (---@meta dropped: checked as code)/' "$out/k8s/website.lua" "$out/k8s-all/all.lua"

run() { # run WHAT CONFIG ARGS...: the checker, its output only when it fails
  local what=$1 config=$2 rc=0
  shift 2
  "$bin" -c "$config" "$@" >"$out/last.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    cat "$out/last.log" >&2
    echo "typecheck: $what: emmylua_check found problems (exit $rc)" >&2
    exit 1
  fi
  echo "typecheck: $what: ok"
}

run "types/, examples/, kinformer types (Deployment, Website)" .emmyrc.json --warnings-as-errors \
  "$out/types" examples/website examples/configmap-mirror examples/pod-label-auditor examples/hello \
  examples "$out/k8s"
run "kinformer types --all" .emmyrc.json --warnings-as-errors "$out/types" "$out/k8s-all"
printf '{ "workspace": { "library": ["%s/types"] } }\n' "$PWD" >"$out/library.json"
run "lua/ (errors only)" ".emmyrc.json,$out/library.json" --severity error lua
