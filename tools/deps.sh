#!/usr/bin/env bash
# Installs the Debian packages kinformer needs, only those missing.
# Usage: tools/deps.sh [extra-package ...]
set -euo pipefail
pkgs=(
  build-essential pkg-config curl zip unzip
  lua5.4 liblua5.4-dev lua-cjson lua-busted luarocks lua-yaml
  libcurl4-openssl-dev libuv1-dev libjsmn-dev libyaml-dev
  libcmocka-dev prometheus libedit-dev tmux
  libmicrohttpd-dev libjansson-dev libgnutls28-dev zlib1g-dev
  python3-kubernetes
  clang libclang-rt-14-dev llvm-14
  "$@"
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
# apt-install.sh waits for the package manager's lock instead of failing.
"$(dirname "$0")/apt-install.sh" "${missing[@]}" >/dev/null
echo "deps: done"
