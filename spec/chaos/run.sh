#!/bin/sh
# make chaos: spec/chaos/chaos.lua with random seeds until CHAOS_SECONDS
# (default 600) have passed, CHAOS_RUN seconds of writes each (default
# 20), against a kinformer.sim the driver starts (or the server of
# CHAOS_KUBECONFIG). Each seed is printed before it runs, so a failure is
# replayable: CHAOS_SEED=N runs that seed once. A run's stderr (the
# warnings the faults provoke) is kept only when it fails:
# build/chaos/seed-N.log. Exits 1 at the first divergence.
#
# Needs LUA_PATH/LUA_CPATH naming lua/, spec/ and build/<mode>/ (the make
# target sets them) and build/<mode>/kin-fault-proxy.
set -u
total=${CHAOS_SECONDS:-600}
per=${CHAOS_RUN:-20}
kc=${CHAOS_KUBECONFIG:-}
mkdir -p build/chaos
rlog=build/chaos/reconcile.log

one() {
  echo "chaos: seed $1" >&2
  KINFORMER_CHAOS_RLOG=$rlog timeout $((per + 150)) lua5.4 spec/chaos/chaos.lua "$1" "$per" "$kc" \
    2>build/chaos/seed-$1.log
  rc=$?
  if [ $rc -ne 0 ]; then
    sed 's/^/  /' build/chaos/seed-$1.log
    echo "chaos: seed $1 FAILED (rc $rc); log build/chaos/seed-$1.log; replay: make chaos CHAOS_SEED=$1" >&2
    exit 1
  fi
  rm -f build/chaos/seed-$1.log
}

if [ -n "${CHAOS_SEED:-}" ]; then
  one "$CHAOS_SEED"
  exit 0
fi
start=$(date +%s)
runs=0
while [ $(( $(date +%s) - start + per )) -le "$total" ] || [ $runs -eq 0 ]; do
  seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  one "$seed"
  runs=$((runs + 1))
done
echo "chaos: $runs seeds, $(( $(date +%s) - start )) s, no divergence" >&2
