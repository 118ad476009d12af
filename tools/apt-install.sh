#!/usr/bin/env bash
# Installs Debian packages, waiting for the package manager instead of
# failing when another apt-get or dpkg (unattended-upgrades, a second make)
# holds its locks. Used by tools/deps.sh and the e2e scripts.
# Usage: tools/apt-install.sh package ...
# Waits up to KIN_APT_LOCK_WAIT seconds (default 900) for the locks.
set -euo pipefail
[ $# -gt 0 ] || exit 0
wait_s=${KIN_APT_LOCK_WAIT:-900}
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive

# apt-get's own wait covers the dpkg frontend lock; the lists lock taken by
# `apt-get update` is not covered on every apt version, so a failure that
# names a lock is retried until the deadline.
apt_retry() {
  local deadline=$((SECONDS + wait_s)) out rc said=0
  while :; do
    rc=0
    out=$($SUDO apt-get -o DPkg::Lock::Timeout="$wait_s" "$@" 2>&1) || rc=$?
    if [ $rc -eq 0 ]; then return 0; fi
    if grep -qiE 'could not get lock|unable to (acquire|lock)|is another process using it' <<<"$out" &&
       [ $SECONDS -lt $deadline ]; then
      [ $said -eq 1 ] || echo "apt-install: the package manager is busy (another apt-get or dpkg); waiting up to ${wait_s}s" >&2
      said=1
      sleep 3
      continue
    fi
    printf '%s\n' "$out" | tail -n 20 >&2
    echo "apt-install: apt-get $* failed with exit code $rc" >&2
    return $rc
  done
}

apt_retry update -qq
apt_retry install -y -qq --no-install-recommends "$@"
