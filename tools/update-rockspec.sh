#!/usr/bin/env bash
# Rewrites the C source list of the rockspec from csrc/core and csrc/lua.
# With --check, only reports (exit 1) when the list is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
spec=rockspec/kinformer-scm-1.rockspec
list=$(ls csrc/core/*.c csrc/sim/*.c csrc/lua/*.c | sort | sed 's/.*/        "&",/')
new=$(awk -v list="$list" '
  /-- BEGIN SOURCES/ { print; print "      sources = {"; print list; print "      },"; skip=1; next }
  /-- END SOURCES/ { skip=0 }
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
