#!/usr/bin/env bash
# Rewrites the C source lists and include folders of the rockspec's two C
# modules:
#   kinformer.core     csrc/core/<layer>/*.c and csrc/lua/*.c but lsim.c;
#                      include/kinformer and every layer folder holding an
#                      internal header
#   kinformer.simcore  csrc/lua/lsim.c, csrc/sim/*.c and SIM_CORE below;
#                      include/kinformer, the layer folders of SIM_CORE
#                      that hold an internal header, csrc/sim
# With --check, only reports (exit 1) when a list is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
spec=rockspec/kinformer-scm-1.rockspec
# The parts of csrc/core that csrc/sim and lsim.c call (the members of
# libkincore.a that the Makefile's simcore.so link pulls in; check with
# `nm -u build/<mode>/libkinsim.a`). One missing shows as an undefined
# symbol when tools/rock-check.sh loads kinformer.simcore.
SIM_CORE="util/buf util/hmap util/kin cache/label_selector util/util"
fmt() { sort | sed 's/.*/        "&",/'; }
core_list=$(ls csrc/core/*/*.c csrc/lua/*.c | grep -vx 'csrc/lua/lsim.c' | fmt)
sim_list=$({ echo csrc/lua/lsim.c; ls csrc/sim/*.c; for f in $SIM_CORE; do echo "csrc/core/$f.c"; done; } | fmt)
for f in $SIM_CORE; do
  [ -f "csrc/core/$f.c" ] || { echo "update-rockspec: csrc/core/$f.c (SIM_CORE) does not exist" >&2; exit 1; }
done
# Include folders: the public headers, then the layer folders that hold
# internal headers (all of them for kinformer.core, those of SIM_CORE for
# kinformer.simcore), as the Makefile's CORE_INT_INC and SIM_INC.
hdr_dirs() { for d in "$@"; do d=${d%/}; ls "$d"/*.h >/dev/null 2>&1 && echo "$d"; done; }
incfmt() { sed 's/.*/"&",/' | paste -sd' ' | sed 's/^/        /'; }
core_inc=$(hdr_dirs include/kinformer csrc/core/*/ | incfmt)
sim_inc=$(hdr_dirs include/kinformer $(for f in $SIM_CORE; do echo "csrc/core/${f%%/*}"; done | sort -u) csrc/sim | incfmt)
new=$(awk -v core="$core_list" -v sim="$sim_list" -v core_inc="$core_inc" -v sim_inc="$sim_inc" '
  /-- BEGIN SOURCES/ || /-- BEGIN SIM SOURCES/ {
    print; print "      sources = {"; print (/SIM/ ? sim : core); print "      },"; skip=1; next }
  /-- BEGIN INCDIRS/ || /-- BEGIN SIM INCDIRS/ {
    print; print (/SIM/ ? sim_inc : core_inc); skip=1; next }
  /-- END SOURCES/ || /-- END SIM SOURCES/ || /-- END INCDIRS/ || /-- END SIM INCDIRS/ { skip=0 }
  !skip { print }' "$spec")
if [ "${1:-}" = "--check" ]; then
  if [ "$new" != "$(cat "$spec")" ]; then
    echo "rockspec source list is out of date: run tools/update-rockspec.sh" >&2
    diff <(cat "$spec") <(echo "$new") >&2 || true
    exit 1
  fi
  exit 0
fi
printf '%s\n' "$new" > "$spec"
